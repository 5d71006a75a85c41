//! [`Ip`]: the requests set-up, checks and cleanup make to the kernel
//! (route netlink and the /run/netns files), each named by its step and
//! written out in `ip`'s words, so a failure tells an operator what was
//! asked, what for, and the errno the kernel answered.

use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::RouteNetlinkMessage as Rtm;

use super::bounded::DEFAULT_TIMEOUT;
use super::netlink::{Mode, Netlink};
use super::rtnl::{self, NewLink, SetLink};
use super::{netns, Ipv4Net, NetError, NetKind, NETNS_DIR, PREFIX};

/// How the kernel is asked: how long one request may wait for its answer.
///
/// [`Ip::default`] waits 10 s ([`DEFAULT_TIMEOUT`]) for each answer;
/// [`Ip::with_timeout`] changes that.
#[derive(Clone, Debug)]
pub struct Ip {
    timeout: Duration,
    /// Requests whose words contain this fail ([`Ip::failing_on`]).
    fail_on: Option<String>,
}

impl Default for Ip {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            fail_on: None,
        }
    }
}

/// A link to create, by name: see [`Ip::link_add`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Link<'a> {
    Bridge,
    Dummy,
    /// A veth pair whose peer is named `peer`, in namespace `netns` if given.
    Veth {
        peer: &'a str,
        netns: Option<&'a str>,
    },
    /// A macvlan or ipvlan child of `parent`, in namespace `netns` if given.
    Child {
        kind: NetKind,
        parent: &'a str,
        netns: Option<&'a str>,
    },
}

impl Link<'_> {
    /// `ip link add` arguments after the name.
    fn words(&self) -> String {
        match *self {
            Link::Bridge => "type bridge".into(),
            Link::Dummy => "type dummy".into(),
            Link::Veth { peer, netns } => format!(
                "type veth peer name {peer}{}",
                netns.map(|n| format!(" netns {n}")).unwrap_or_default()
            ),
            Link::Child {
                kind,
                parent,
                netns,
            } => format!(
                "link {parent}{} type {}",
                netns.map(|n| format!(" netns {n}")).unwrap_or_default(),
                match kind {
                    NetKind::Ipvlan => "ipvlan mode l2",
                    _ => "macvlan mode bridge",
                }
            ),
        }
    }
}

/// `-n NS ` before a request made inside namespace `ns`.
fn in_ns(ns: Option<&str>) -> String {
    ns.map(|n| format!("-n {n} ")).unwrap_or_default()
}

/// Whether the errno says the object is already gone.
pub(crate) fn is_absent(e: &NetError) -> bool {
    matches!(
        e.errno(),
        Some(libc::ENOENT | libc::ENODEV | libc::ESRCH | libc::EADDRNOTAVAIL)
    )
}

/// Whether the errno says the kernel lacks the link type.
pub(crate) fn is_unknown_type(e: &NetError) -> bool {
    e.errno() == Some(libc::EOPNOTSUPP)
}

impl Ip {
    /// Bounds the wait for each answer of the kernel by `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// For tests of failure handling: every request whose words (as in
    /// the errors, e.g. `-n tph1-2 route add default via 198.18.0.1 dev
    /// eth0`, padded with a space on each side) contain `words` fails with
    /// "injected failure" before reaching the kernel; `""` fails them all.
    #[doc(hidden)]
    pub fn failing_on(mut self, words: &str) -> Self {
        self.fail_on = Some(words.to_string());
        self
    }

    /// Runs `f` as request `request` of `step`: a failure names both.
    fn call<T>(
        &self,
        step: &str,
        request: &str,
        f: impl FnOnce() -> io::Result<T>,
    ) -> Result<T, NetError> {
        let injected = self
            .fail_on
            .as_deref()
            .is_some_and(|w| format!(" {request} ").contains(w));
        let r = if injected {
            Err(io::Error::other("injected failure"))
        } else {
            f()
        };
        r.map_err(|source| NetError::Netlink {
            step: step.to_string(),
            request: request.to_string(),
            source,
        })
    }

    /// Like [`Ip::call`], but an object already gone counts as success.
    fn removal(
        &self,
        step: &str,
        request: &str,
        f: impl FnOnce() -> io::Result<()>,
    ) -> Result<(), NetError> {
        match self.call(step, request, f) {
            Err(e) if is_absent(&e) => Ok(()),
            r => r,
        }
    }

    /// A socket in the root namespace, or in namespace `ns`.
    fn socket(&self, ns: Option<&str>) -> io::Result<Netlink> {
        match ns {
            None => Netlink::open(self.timeout),
            Some(ns) => Netlink::open_in(&Path::new(NETNS_DIR).join(ns), self.timeout),
        }
    }

    /// Creates network namespace `ns` (`ip netns add`).
    pub(crate) fn netns_add(&self, step: &str, ns: &str) -> Result<(), NetError> {
        self.call(step, &format!("netns add {ns}"), || netns::add(ns))
    }

    /// Deletes network namespace `ns`; one already gone is fine.
    pub(crate) fn netns_del(&self, step: &str, ns: &str) -> Result<(), NetError> {
        self.removal(step, &format!("netns del {ns}"), || netns::delete(ns))
    }

    /// Names of the network namespaces in /run/netns.
    pub(crate) fn netns_names(&self, step: &str) -> Result<Vec<String>, NetError> {
        self.call(step, "netns list", netns::names)
    }

    /// The links of the root namespace.
    fn links(&self, step: &str) -> Result<Vec<LinkMessage>, NetError> {
        self.call(step, "link show", || {
            let answers = self
                .socket(None)?
                .request(Rtm::GetLink(LinkMessage::default()), Mode::Dump)?;
            Ok(links_in(answers).collect())
        })
    }

    /// Names of the links in the root namespace.
    pub(crate) fn link_names(&self, step: &str) -> Result<Vec<String>, NetError> {
        Ok(self
            .links(step)?
            .iter()
            .filter_map(|l| rtnl::link_name(l).map(str::to_string))
            .collect())
    }

    /// Creates link `name` in the root namespace as `link` (its veth peer
    /// or itself, for a child, in the namespace it names). A kernel
    /// without the link type answers `EOPNOTSUPP` ([`is_unknown_type`]).
    pub(crate) fn link_add(&self, step: &str, name: &str, link: Link<'_>) -> Result<(), NetError> {
        let request = format!("link add name {name} {}", link.words());
        self.call(step, &request, || {
            use std::os::fd::AsRawFd;
            let mut nl = self.socket(None)?;
            // The namespace the new end goes to, open until the request
            // is answered.
            let netns = match link {
                Link::Veth { netns, .. } | Link::Child { netns, .. } => netns,
                Link::Bridge | Link::Dummy => None,
            };
            let netns = netns
                .map(|n| std::fs::File::open(Path::new(NETNS_DIR).join(n)))
                .transpose()?;
            let netns = netns.as_ref().map(|f| f.as_raw_fd());
            let new = match link {
                Link::Bridge => NewLink::Bridge,
                Link::Dummy => NewLink::Dummy,
                Link::Veth { peer, .. } => NewLink::Veth {
                    peer: peer.to_string(),
                    peer_netns: netns,
                },
                Link::Child { kind, parent, .. } => NewLink::Child {
                    kind,
                    parent: index(&mut nl, parent)?,
                    netns,
                },
            };
            let msg = rtnl::new_link(name, &new);
            nl.request(Rtm::NewLink(msg), Mode::Create).map(drop)
        })
    }

    /// Sets link `name` (in namespace `ns`, or the root one) up, with ARP
    /// off if `arp_off`, as a port of bridge `master` if given.
    pub(crate) fn link_up(
        &self,
        step: &str,
        ns: Option<&str>,
        name: &str,
        arp_off: bool,
        master: Option<&str>,
    ) -> Result<(), NetError> {
        let request = format!(
            "{}link set dev {name}{}{} up",
            in_ns(ns),
            if arp_off { " arp off" } else { "" },
            master.map(|m| format!(" master {m}")).unwrap_or_default()
        );
        self.call(step, &request, || {
            let mut nl = self.socket(ns)?;
            let master = master.map(|m| index(&mut nl, m)).transpose()?;
            let set = SetLink {
                up: true,
                arp_off,
                master,
            };
            nl.request(Rtm::SetLink(rtnl::set_link(name, set)), Mode::Change)
                .map(drop)
        })
    }

    /// Deletes link `name` (in namespace `ns`, or the root one); one
    /// already gone, or in a namespace already gone, is fine.
    pub(crate) fn link_del(
        &self,
        step: &str,
        ns: Option<&str>,
        name: &str,
    ) -> Result<(), NetError> {
        let request = format!("{}link del dev {name}", in_ns(ns));
        self.removal(step, &request, || {
            self.socket(ns)?
                .request(Rtm::DelLink(rtnl::link_by_name(name)), Mode::Change)
                .map(drop)
        })
    }

    /// Adds `addr/prefix` to link `dev` (in namespace `ns`, or the root one).
    pub(crate) fn addr_add(
        &self,
        step: &str,
        ns: Option<&str>,
        dev: &str,
        addr: Ipv4Addr,
        prefix: u8,
    ) -> Result<(), NetError> {
        let request = format!("{}addr add {addr}/{prefix} dev {dev}", in_ns(ns));
        self.call(step, &request, || {
            let mut nl = self.socket(ns)?;
            let i = index(&mut nl, dev)?;
            nl.request(
                Rtm::NewAddress(rtnl::new_addr(i, addr, prefix)),
                Mode::Create,
            )
            .map(drop)
        })
    }

    /// Adds the default route via `gateway` out of `dev` in namespace `ns`.
    pub(crate) fn default_route_add(
        &self,
        step: &str,
        ns: &str,
        gateway: Ipv4Addr,
        dev: &str,
    ) -> Result<(), NetError> {
        let request = format!("-n {ns} route add default via {gateway} dev {dev}");
        self.call(step, &request, || {
            let mut nl = self.socket(Some(ns))?;
            let oif = index(&mut nl, dev)?;
            nl.request(
                Rtm::NewRoute(rtnl::default_route(gateway, oif)),
                Mode::Create,
            )
            .map(drop)
        })
    }

    /// Adds the root-namespace route `unreachable RANGE metric METRIC`.
    pub(crate) fn unreachable_add(
        &self,
        step: &str,
        range: Ipv4Net,
        metric: u32,
    ) -> Result<(), NetError> {
        let request = format!("route add unreachable {range} metric {metric}");
        self.call(step, &request, || {
            let msg = rtnl::unreachable_route(range, metric, false);
            self.socket(None)?
                .request(Rtm::NewRoute(msg), Mode::Create)
                .map(drop)
        })
    }

    /// Deletes that route; one already gone is fine.
    pub(crate) fn unreachable_del(
        &self,
        step: &str,
        range: Ipv4Net,
        metric: u32,
    ) -> Result<(), NetError> {
        let request = format!("route del unreachable {range} metric {metric}");
        self.removal(step, &request, || {
            let msg = rtnl::unreachable_route(range, metric, true);
            self.socket(None)?
                .request(Rtm::DelRoute(msg), Mode::Change)
                .map(drop)
        })
    }

    /// The IPv4 routes of every table of the root namespace.
    pub(crate) fn routes(&self, step: &str) -> Result<Vec<RouteMessage>, NetError> {
        self.call(step, "-4 route show table all", || {
            let answers = self
                .socket(None)?
                .request(Rtm::GetRoute(rtnl::route_dump()), Mode::Dump)?;
            Ok(routes_in(answers).collect())
        })
    }

    /// Fails unless traffic to `addr` would leave through a link of ours
    /// (a name starting with `tp`) as plain unicast. See [`super::check_route`].
    pub fn check_route(&self, addr: Ipv4Addr) -> Result<String, NetError> {
        let not_ours = |reason: String| NetError::RouteNotOurs { addr, reason };
        if addr.is_loopback() || addr.is_unspecified() || addr.is_multicast() || addr.is_broadcast()
        {
            return Err(not_ours(
                "loopback, unspecified, multicast and broadcast addresses are never ours".into(),
            ));
        }
        let request = format!("route get {addr}");
        let answer = self.call("check the route to a target", &request, || {
            let mut nl = self.socket(None)?;
            let answers = nl.request(Rtm::GetRoute(rtnl::route_get(addr)), Mode::Change)?;
            let route = routes_in(answers)
                .next()
                .ok_or_else(|| io::Error::other("the kernel answered no route message"))?;
            Ok((nl, route))
        });
        let (mut nl, route) = match answer {
            Ok(r) => r,
            Err(NetError::Netlink {
                request, source, ..
            }) if source.raw_os_error().is_some() => {
                return Err(not_ours(format!("`{request}` found no route: {source}")));
            }
            Err(e) => return Err(e),
        };
        let got = rtnl::read_route_get(&route);
        // The output link alone, asked of the same socket by its index; a
        // link gone since the lookup (`ENODEV`) has no name, as in a dump.
        let dev = match got.oif {
            Some(i) => match self.call("name the route's output link", "link show", || {
                name_of(&mut nl, i)
            }) {
                Ok(name) => Some(name),
                Err(e) if e.errno() == Some(libc::ENODEV) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        let names: HashMap<u32, String> = got.oif.zip(dev.clone()).into_iter().collect();
        let shown = rtnl::describe(&route, &names);
        match got {
            rtnl::RouteGet { kind: Some(k), .. } => Err(not_ours(format!(
                "it is a {k} route, not unicast: {shown}"
            ))),
            rtnl::RouteGet { oif: Some(i), .. } => match dev {
                Some(dev) if dev.starts_with(PREFIX) => Ok(dev),
                Some(dev) => Err(not_ours(format!(
                    "it leaves through {dev:?}, which is not a tickpack link (no `{PREFIX}` prefix): {shown}"
                ))),
                None => Err(not_ours(format!("output link #{i} has no name: {shown}"))),
            },
            rtnl::RouteGet { oif: None, .. } => {
                Err(not_ours(format!("no output device in `{shown}`")))
            }
        }
    }

    /// See [`super::cleanup_prefix`].
    pub fn cleanup_prefix(&self, prefix: &str) -> Result<Vec<String>, NetError> {
        if !prefix.starts_with(PREFIX) {
            return Err(NetError::ForeignName {
                name: prefix.to_string(),
            });
        }
        self.cleanup_matching(|n| n.starts_with(prefix))
    }

    /// Removes the links, then the namespaces, whose names `ours` accepts;
    /// only names with the `tp` prefix are ever offered to it.
    pub fn cleanup_matching(&self, ours: impl Fn(&str) -> bool) -> Result<Vec<String>, NetError> {
        let ours = |n: &String| n.starts_with(PREFIX) && ours(n);
        let mut removed = Vec::new();
        let mut failures = Vec::new();
        // Links first: deleting a veth end removes its peer inside a
        // namespace at once, and a parent link takes its macvlans along.
        let links = self.link_names("list links for cleanup")?;
        for l in links.iter().filter(|l| ours(l)) {
            match self.link_del("cleanup: delete link", None, l) {
                Ok(()) => removed.push(l.clone()),
                Err(e) => failures.push(e.to_string()),
            }
        }
        let names = self.netns_names("list namespaces for cleanup")?;
        for n in names.iter().filter(|n| ours(n)) {
            match self.netns_del("cleanup: delete namespace", n) {
                Ok(()) => removed.push(n.clone()),
                Err(e) => failures.push(e.to_string()),
            }
        }
        if failures.is_empty() {
            Ok(removed)
        } else {
            Err(NetError::Cleanup { failures })
        }
    }

    /// The first main-table route overlapping `range`, if any, as `ip
    /// route` shows it.
    pub(crate) fn route_overlapping(&self, range: Ipv4Net) -> Result<Option<String>, NetError> {
        let step = "check that the address range is unused";
        let routes = self.routes(step)?;
        let names = rtnl::link_names(&self.links(step)?);
        Ok(rtnl::route_dests(&routes, &names)
            .into_iter()
            .find(|(_, dest)| dest.overlaps(&range))
            .map(|(line, _)| line))
    }
}

/// The index of link `name` in the socket's namespace (`ENODEV` if absent).
fn index(nl: &mut Netlink, name: &str) -> io::Result<u32> {
    let answers = nl.request(Rtm::GetLink(rtnl::link_by_name(name)), Mode::Change)?;
    links_in(answers)
        .next()
        .map(|l| l.header.index)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENODEV))
}

/// The name of link `index` in the socket's namespace, asked of the kernel
/// by that index alone (`RTM_GETLINK`): `ENODEV` if no such link (or it
/// carries no name). Index 0, or any above `i32::MAX`, names no link and is
/// not asked for (the kernel would read it as "look up by name").
fn name_of(nl: &mut Netlink, index: u32) -> io::Result<String> {
    let absent = || io::Error::from_raw_os_error(libc::ENODEV);
    if !(1..=i32::MAX as u32).contains(&index) {
        return Err(absent());
    }
    let answers = nl.request(Rtm::GetLink(rtnl::link_by_index(index)), Mode::Change)?;
    links_in(answers)
        .find(|l| l.header.index == index)
        .and_then(|l| rtnl::link_name(&l).map(str::to_string))
        .ok_or_else(absent)
}

/// The links among the kernel's answers.
fn links_in(answers: Vec<Rtm>) -> impl Iterator<Item = LinkMessage> {
    answers.into_iter().filter_map(|m| match m {
        Rtm::NewLink(l) => Some(l),
        _ => None,
    })
}

/// The routes among the kernel's answers.
fn routes_in(answers: Vec<Rtm>) -> impl Iterator<Item = RouteMessage> {
    answers.into_iter().filter_map(|m| match m {
        Rtm::NewRoute(r) => Some(r),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `Ip` that fails every request before it reaches the kernel.
    fn refusing() -> Ip {
        Ip::default().failing_on("")
    }

    #[test]
    fn requests_read_like_ip_commands() {
        let veth = Link::Veth {
            peer: "eth0",
            netns: Some("tph1-1"),
        };
        assert_eq!(veth.words(), "type veth peer name eth0 netns tph1-1");
        let child = Link::Child {
            kind: NetKind::Ipvlan,
            parent: "tph1d0",
            netns: None,
        };
        assert_eq!(child.words(), "link tph1d0 type ipvlan mode l2");
        let e = refusing()
            .default_route_add("probe step", "tph1-2", Ipv4Addr::new(198, 18, 0, 1), "eth0")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "probe step: `-n tph1-2 route add default via 198.18.0.1 dev eth0` failed: injected failure"
        );
    }

    #[test]
    fn absence_and_missing_link_types_are_read_from_the_errno() {
        let err = |errno| NetError::Netlink {
            step: "s".into(),
            request: "r".into(),
            source: io::Error::from_raw_os_error(errno),
        };
        for errno in [libc::ENOENT, libc::ENODEV, libc::ESRCH, libc::EADDRNOTAVAIL] {
            assert!(is_absent(&err(errno)), "{errno}");
        }
        assert!(!is_absent(&err(libc::EPERM)));
        assert!(is_unknown_type(&err(libc::EOPNOTSUPP)));
        assert!(!is_unknown_type(&err(libc::ENODEV)));
        // An injected failure carries no errno: never taken for absence.
        let e = refusing().link_del("s", None, "tpx").unwrap_err();
        assert!(!is_absent(&e), "{e}");
    }

    #[test]
    fn a_missing_link_is_absent_by_errno() {
        // Needs no privilege: looking a link up is open to everyone.
        let mut nl = Netlink::open(DEFAULT_TIMEOUT).unwrap();
        let e = index(&mut nl, "tpnoSuchLink").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV), "{e}");
        let e = Ip::default()
            .call("s", "r", || index(&mut nl, "tpnoSuchLink"))
            .unwrap_err();
        assert!(is_absent(&e), "{e}");
    }

    #[test]
    fn a_link_is_named_by_its_index_alone() {
        // Unprivileged: looking a link up is open to everyone, and `lo`
        // is index 1 in every namespace.
        let mut nl = Netlink::open(DEFAULT_TIMEOUT).unwrap();
        let lo = index(&mut nl, "lo").unwrap();
        assert_eq!(name_of(&mut nl, lo).unwrap(), "lo");
        // No link has these indexes: the errno says so, as for a name.
        for i in [0, i32::MAX as u32, u32::MAX] {
            let e = name_of(&mut nl, i).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENODEV), "#{i}: {e}");
        }
        // The socket still answers after a refusal.
        assert_eq!(name_of(&mut nl, lo).unwrap(), "lo");
    }

    #[test]
    fn cleanup_prefix_refuses_names_outside_tp() {
        for p in ["", "e", "eth", "t", "xtp"] {
            let e = refusing().cleanup_prefix(p).unwrap_err();
            assert!(matches!(e, NetError::ForeignName { .. }), "{p:?}: {e}");
        }
    }

    #[test]
    fn route_check_refuses_loopback_without_asking_the_kernel() {
        let e = refusing().check_route(Ipv4Addr::LOCALHOST).unwrap_err();
        assert!(matches!(e, NetError::RouteNotOurs { .. }), "{e}");
    }

    #[test]
    fn a_route_lookup_answers_within_the_timeout() {
        // Unprivileged too: the kernel answers for any address.
        let e = Ip::default()
            .with_timeout(Duration::from_secs(2))
            .check_route(Ipv4Addr::new(192, 0, 2, 1));
        // Whatever this machine's routes, the answer is a verdict, not a
        // failure to ask.
        match e {
            Ok(dev) => assert!(dev.starts_with(PREFIX)),
            Err(e) => assert!(matches!(e, NetError::RouteNotOurs { .. }), "{e}"),
        }
    }
}
