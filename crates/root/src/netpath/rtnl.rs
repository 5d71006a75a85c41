//! Route netlink messages: building the requests set-up makes (links,
//! addresses, routes) and reading the answers it needs (link names, route
//! dumps, a route lookup). Pure: nothing here talks to the kernel.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::RawFd;

use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoIpVlan, InfoKind, InfoMacVlan, InfoVeth, IpVlanMode, LinkAttribute, LinkFlags,
    LinkInfo, LinkMessage, MacVlanMode,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::AddressFamily;

use super::{Ipv4Net, NetKind};

/// A link to create: `RTM_NEWLINK` with its kind and, for veth, its peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NewLink {
    Bridge,
    Dummy,
    /// A veth pair; the peer is created in the namespace `peer_netns`
    /// (an open namespace file) when given, else beside the link.
    Veth {
        peer: String,
        peer_netns: Option<RawFd>,
    },
    /// A macvlan (bridge mode) or ipvlan (L2 mode) child of link `parent`
    /// (an index), created in namespace `netns` when given.
    Child {
        kind: NetKind,
        parent: u32,
        netns: Option<RawFd>,
    },
}

/// The `RTM_NEWLINK` message creating `name` as `link`.
pub(crate) fn new_link(name: &str, link: &NewLink) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.attributes.push(LinkAttribute::IfName(name.to_string()));
    let info = match link {
        NewLink::Bridge => vec![LinkInfo::Kind(InfoKind::Bridge)],
        NewLink::Dummy => vec![LinkInfo::Kind(InfoKind::Dummy)],
        NewLink::Veth { peer, peer_netns } => {
            let mut p = LinkMessage::default();
            p.attributes.push(LinkAttribute::IfName(peer.clone()));
            if let Some(fd) = peer_netns {
                p.attributes.push(LinkAttribute::NetNsFd(*fd));
            }
            vec![
                LinkInfo::Kind(InfoKind::Veth),
                LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(p))),
            ]
        }
        NewLink::Child {
            kind,
            parent,
            netns,
        } => {
            msg.attributes.push(LinkAttribute::Link(*parent));
            if let Some(fd) = netns {
                msg.attributes.push(LinkAttribute::NetNsFd(*fd));
            }
            match kind {
                NetKind::Ipvlan => vec![
                    LinkInfo::Kind(InfoKind::IpVlan),
                    LinkInfo::Data(InfoData::IpVlan(vec![InfoIpVlan::Mode(IpVlanMode::L2)])),
                ],
                _ => vec![
                    LinkInfo::Kind(InfoKind::MacVlan),
                    LinkInfo::Data(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                        MacVlanMode::Bridge,
                    )])),
                ],
            }
        }
    };
    msg.attributes.push(LinkAttribute::LinkInfo(info));
    msg
}

/// A message naming link `name` (index 0: the kernel looks the name up),
/// for `RTM_GETLINK`, `RTM_SETLINK` and `RTM_DELLINK`.
pub(crate) fn link_by_name(name: &str) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.attributes.push(LinkAttribute::IfName(name.to_string()));
    msg
}

/// The `RTM_GETLINK` request for link `index` alone (no name: the kernel
/// looks the index up).
pub(crate) fn link_by_index(index: u32) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.header.index = index;
    msg
}

/// What `RTM_SETLINK` changes on a link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SetLink {
    pub up: bool,
    pub arp_off: bool,
    /// The index of the bridge to attach it to.
    pub master: Option<u32>,
}

/// The `RTM_SETLINK` message applying `set` to link `name`.
pub(crate) fn set_link(name: &str, set: SetLink) -> LinkMessage {
    let mut msg = link_by_name(name);
    if set.up {
        msg.header.flags |= LinkFlags::Up;
        msg.header.change_mask |= LinkFlags::Up;
    }
    if set.arp_off {
        msg.header.flags |= LinkFlags::Noarp;
        msg.header.change_mask |= LinkFlags::Noarp;
    }
    if let Some(m) = set.master {
        msg.attributes.push(LinkAttribute::Controller(m));
    }
    msg
}

/// The `RTM_NEWADDR` message giving link `index` the address `addr/prefix`.
pub(crate) fn new_addr(index: u32, addr: Ipv4Addr, prefix: u8) -> AddressMessage {
    let mut msg = AddressMessage::default();
    msg.header.family = AddressFamily::Inet;
    msg.header.prefix_len = prefix;
    msg.header.index = index;
    msg.attributes
        .push(AddressAttribute::Local(IpAddr::V4(addr)));
    msg.attributes
        .push(AddressAttribute::Address(IpAddr::V4(addr)));
    msg
}

fn main_table_header(kind: RouteType, prefix: u8) -> RouteHeader {
    RouteHeader {
        address_family: AddressFamily::Inet,
        destination_prefix_length: prefix,
        table: RouteHeader::RT_TABLE_MAIN,
        protocol: RouteProtocol::Boot,
        scope: RouteScope::Universe,
        kind,
        ..RouteHeader::default()
    }
}

/// The main-table default route via `gateway` out of link `oif`.
pub(crate) fn default_route(gateway: Ipv4Addr, oif: u32) -> RouteMessage {
    let mut msg = RouteMessage::default();
    msg.header = main_table_header(RouteType::Unicast, 0);
    msg.attributes
        .push(RouteAttribute::Gateway(RouteAddress::Inet(gateway)));
    msg.attributes.push(RouteAttribute::Oif(oif));
    msg
}

/// The main-table route `unreachable RANGE metric METRIC`, to add or
/// (`delete`: any scope, like `ip route del`) to delete.
pub(crate) fn unreachable_route(range: Ipv4Net, metric: u32, delete: bool) -> RouteMessage {
    let mut msg = RouteMessage::default();
    msg.header = main_table_header(RouteType::Unreachable, range.prefix());
    if delete {
        msg.header.protocol = RouteProtocol::Unspec;
        msg.header.scope = RouteScope::NoWhere;
    }
    msg.attributes
        .push(RouteAttribute::Destination(RouteAddress::Inet(
            range.addr(),
        )));
    msg.attributes.push(RouteAttribute::Priority(metric));
    msg
}

/// The IPv4 route dump request (every table: filter with [`in_main`]).
pub(crate) fn route_dump() -> RouteMessage {
    let mut msg = RouteMessage::default();
    msg.header.address_family = AddressFamily::Inet;
    msg
}

/// The `RTM_GETROUTE` lookup of the route the kernel would use to `addr`.
pub(crate) fn route_get(addr: Ipv4Addr) -> RouteMessage {
    let mut msg = route_dump();
    msg.header.destination_prefix_length = 32;
    msg.attributes
        .push(RouteAttribute::Destination(RouteAddress::Inet(addr)));
    msg
}

/// The link's name, if the message carries one.
pub(crate) fn link_name(msg: &LinkMessage) -> Option<&str> {
    msg.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.as_str()),
        _ => None,
    })
}

/// Index to name of the links of a link dump.
pub(crate) fn link_names(links: &[LinkMessage]) -> HashMap<u32, String> {
    links
        .iter()
        .filter_map(|l| link_name(l).map(|n| (l.header.index, n.to_string())))
        .collect()
}

/// The route's table (the attribute wins over the header's byte).
fn table(route: &RouteMessage) -> u32 {
    route
        .attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Table(t) => Some(*t),
            _ => None,
        })
        .unwrap_or(u32::from(route.header.table))
}

/// Whether a dumped route is in the main table.
pub(crate) fn in_main(route: &RouteMessage) -> bool {
    table(route) == u32::from(RouteHeader::RT_TABLE_MAIN)
}

/// `ip route`'s word for a route type (`None` for unicast).
fn type_word(kind: RouteType) -> Option<String> {
    Some(
        match kind {
            RouteType::Unicast => return None,
            RouteType::Unspec => "unspec",
            RouteType::Local => "local",
            RouteType::Broadcast => "broadcast",
            RouteType::Anycast => "anycast",
            RouteType::Multicast => "multicast",
            RouteType::BlackHole => "blackhole",
            RouteType::Unreachable => "unreachable",
            RouteType::Prohibit => "prohibit",
            RouteType::Throw => "throw",
            RouteType::Nat => "nat",
            RouteType::ExternalResolve => "xresolve",
            other => return Some(format!("type {}", u8::from(other))),
        }
        .to_string(),
    )
}

fn v4(a: &RouteAddress) -> Option<Ipv4Addr> {
    match a {
        RouteAddress::Inet(a) => Some(*a),
        _ => None,
    }
}

fn dest(route: &RouteMessage) -> Option<Ipv4Addr> {
    route.attributes.iter().find_map(|a| match a {
        RouteAttribute::Destination(d) => v4(d),
        _ => None,
    })
}

fn oif(route: &RouteMessage) -> Option<u32> {
    route.attributes.iter().find_map(|a| match a {
        RouteAttribute::Oif(i) => Some(*i),
        _ => None,
    })
}

/// The route as `ip route` shows it: `[TYPE ]DEST [via GW ][dev NAME ]
/// [src ADDR ][metric N]` (`names` maps link indexes to names).
pub(crate) fn describe(route: &RouteMessage, names: &HashMap<u32, String>) -> String {
    let mut words = vec![];
    words.extend(type_word(route.header.kind));
    let prefix = route.header.destination_prefix_length;
    words.push(match dest(route) {
        None if prefix == 0 => "default".to_string(),
        None => format!("0.0.0.0/{prefix}"),
        Some(d) if prefix == 32 => d.to_string(),
        Some(d) => format!("{d}/{prefix}"),
    });
    for a in &route.attributes {
        match a {
            RouteAttribute::Gateway(g) => words.extend(v4(g).map(|g| format!("via {g}"))),
            RouteAttribute::Oif(i) => words.push(match names.get(i) {
                Some(n) => format!("dev {n}"),
                None => format!("dev #{i}"),
            }),
            RouteAttribute::PrefSource(s) => words.extend(v4(s).map(|s| format!("src {s}"))),
            RouteAttribute::Priority(m) => words.push(format!("metric {m}")),
            _ => {}
        }
    }
    words.join(" ")
}

/// The destinations of main-table IPv4 routes (default routes skipped),
/// each with the route as `ip route` would show it.
pub(crate) fn route_dests(
    routes: &[RouteMessage],
    names: &HashMap<u32, String>,
) -> Vec<(String, Ipv4Net)> {
    routes
        .iter()
        .filter(|r| in_main(r) && r.header.address_family == AddressFamily::Inet)
        .filter(|r| r.header.destination_prefix_length > 0)
        .filter_map(|r| {
            let net = Ipv4Net::new(dest(r)?, r.header.destination_prefix_length).ok()?;
            Some((describe(r, names), net))
        })
        .collect()
}

/// Whether a dumped route is the guard `unreachable RANGE metric METRIC`.
pub(crate) fn is_guard(route: &RouteMessage, range: Ipv4Net, metric: u32) -> bool {
    in_main(route)
        && route.header.kind == RouteType::Unreachable
        && route.header.destination_prefix_length == range.prefix()
        && dest(route) == Some(range.addr())
        && route.attributes.contains(&RouteAttribute::Priority(metric))
}

/// What a route lookup (`RTM_GETROUTE` for one address) answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RouteGet {
    /// `Some("local")`, `Some("broadcast")`... for non-unicast routes.
    pub kind: Option<String>,
    /// The output link's index.
    pub oif: Option<u32>,
}

/// Reads the kernel's answer to [`route_get`].
pub(crate) fn read_route_get(answer: &RouteMessage) -> RouteGet {
    RouteGet {
        kind: type_word(answer.header.kind),
        oif: oif(answer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(
        kind: RouteType,
        dest: Option<&str>,
        prefix: u8,
        attrs: &[RouteAttribute],
    ) -> RouteMessage {
        let mut r = RouteMessage::default();
        r.header = main_table_header(kind, prefix);
        if let Some(d) = dest {
            r.attributes
                .push(RouteAttribute::Destination(RouteAddress::Inet(
                    d.parse().unwrap(),
                )));
        }
        r.attributes.extend_from_slice(attrs);
        r
    }

    #[test]
    fn reads_main_table_destinations_of_every_type() {
        let names = HashMap::from([(2, "eth0".to_string())]);
        let mut local = route(
            RouteType::Local,
            Some("192.0.2.2"),
            32,
            &[RouteAttribute::Oif(2)],
        );
        local.header.table = 255;
        let routes = [
            route(
                RouteType::Unicast,
                None,
                0,
                &[
                    RouteAttribute::Gateway(RouteAddress::Inet("192.0.2.1".parse().unwrap())),
                    RouteAttribute::Oif(2),
                ],
            ),
            route(
                RouteType::Unicast,
                Some("192.0.2.0"),
                24,
                &[RouteAttribute::Oif(2)],
            ),
            route(
                RouteType::Unreachable,
                Some("198.18.0.0"),
                16,
                &[RouteAttribute::Priority(u32::MAX)],
            ),
            route(
                RouteType::Unicast,
                Some("10.9.9.9"),
                32,
                &[RouteAttribute::Oif(7)],
            ),
            local,
        ];
        let d = route_dests(&routes, &names);
        let nets: Vec<String> = d.iter().map(|(_, n)| n.to_string()).collect();
        assert_eq!(nets, ["192.0.2.0/24", "198.18.0.0/16", "10.9.9.9/32"]);
        let lines: Vec<&str> = d.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            [
                "192.0.2.0/24 dev eth0",
                "unreachable 198.18.0.0/16 metric 4294967295",
                "10.9.9.9 dev #7"
            ]
        );
        let guard: Ipv4Net = "198.18.0.0/16".parse().unwrap();
        assert!(is_guard(&routes[2], guard, u32::MAX));
        assert!(!is_guard(&routes[2], guard, 7));
        assert!(!is_guard(&routes[1], guard, u32::MAX));
    }

    #[test]
    fn reads_route_get_device_and_type() {
        let ours = route(
            RouteType::Unicast,
            Some("198.18.0.6"),
            32,
            &[RouteAttribute::Oif(9)],
        );
        assert_eq!(
            read_route_get(&ours),
            RouteGet {
                kind: None,
                oif: Some(9)
            }
        );
        let lo = route(
            RouteType::Local,
            Some("127.0.0.1"),
            32,
            &[RouteAttribute::Oif(1)],
        );
        assert_eq!(read_route_get(&lo).kind.as_deref(), Some("local"));
    }

    #[test]
    fn a_link_lookup_by_index_carries_the_index_alone() {
        let msg = link_by_index(7);
        assert_eq!(msg.header.index, 7);
        assert!(msg.attributes.is_empty(), "{msg:?}");
        assert_eq!(link_name(&msg), None);
    }

    #[test]
    fn builds_a_veth_pair_with_its_peer_in_a_namespace() {
        let msg = new_link(
            "tph1v1",
            &NewLink::Veth {
                peer: "eth0".into(),
                peer_netns: Some(7),
            },
        );
        assert_eq!(link_name(&msg), Some("tph1v1"));
        let Some(LinkAttribute::LinkInfo(info)) = msg.attributes.last() else {
            panic!("{msg:?}")
        };
        assert_eq!(info[0], LinkInfo::Kind(InfoKind::Veth));
        let LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))) = &info[1] else {
            panic!("{info:?}")
        };
        assert_eq!(
            peer.attributes,
            [
                LinkAttribute::IfName("eth0".into()),
                LinkAttribute::NetNsFd(7)
            ]
        );
    }

    #[test]
    fn children_carry_their_mode_and_parent() {
        for (kind, want) in [
            (
                NetKind::Macvlan,
                LinkInfo::Data(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                    MacVlanMode::Bridge,
                )])),
            ),
            (
                NetKind::Ipvlan,
                LinkInfo::Data(InfoData::IpVlan(vec![InfoIpVlan::Mode(IpVlanMode::L2)])),
            ),
        ] {
            let msg = new_link(
                "eth0",
                &NewLink::Child {
                    kind,
                    parent: 4,
                    netns: None,
                },
            );
            assert!(msg.attributes.contains(&LinkAttribute::Link(4)), "{kind}");
            let Some(LinkAttribute::LinkInfo(info)) = msg.attributes.last() else {
                panic!("{msg:?}")
            };
            assert_eq!(info[1], want, "{kind}");
        }
    }

    #[test]
    fn set_link_changes_only_what_it_names() {
        let up = set_link(
            "tph1d1",
            SetLink {
                up: true,
                arp_off: true,
                master: None,
            },
        );
        assert_eq!(up.header.flags, LinkFlags::Up | LinkFlags::Noarp);
        assert_eq!(up.header.change_mask, LinkFlags::Up | LinkFlags::Noarp);
        let port = set_link(
            "tph1v1",
            SetLink {
                master: Some(3),
                ..SetLink::default()
            },
        );
        assert!(port.header.change_mask.is_empty());
        assert!(port.attributes.contains(&LinkAttribute::Controller(3)));
    }

    #[test]
    fn the_guard_route_is_deleted_in_any_scope() {
        let range: Ipv4Net = "198.18.0.0/16".parse().unwrap();
        let add = unreachable_route(range, u32::MAX, false);
        let del = unreachable_route(range, u32::MAX, true);
        assert_eq!(add.header.scope, RouteScope::Universe);
        assert_eq!(del.header.scope, RouteScope::NoWhere);
        assert_eq!(add.attributes, del.attributes);
        assert!(is_guard(&add, range, u32::MAX));
    }
}
