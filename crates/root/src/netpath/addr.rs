//! Address arithmetic: a tiny IPv4 prefix type and the plan that gives each
//! instance its address and gateway. Pure functions, no I/O.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{NetError, NetKind};

/// An IPv4 prefix such as `198.18.0.0/16`, host bits zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Ipv4Net {
    addr: Ipv4Addr,
    prefix: u8,
}

fn mask(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

impl Ipv4Net {
    /// A prefix; fails if `prefix > 32` or `addr` has host bits set.
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Result<Self, NetError> {
        let text = format!("{addr}/{prefix}");
        if prefix > 32 {
            return Err(NetError::InvalidRange {
                text,
                reason: "the prefix length must be 0..=32".into(),
            });
        }
        let bits = u32::from(addr);
        if bits & !mask(prefix) != 0 {
            let net = Ipv4Addr::from(bits & mask(prefix));
            return Err(NetError::InvalidRange {
                text,
                reason: format!("host bits are set (did you mean {net}/{prefix}?)"),
            });
        }
        Ok(Self { addr, prefix })
    }

    /// The network address.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Number of addresses, network and broadcast included.
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// Whether `a` lies inside.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & mask(self.prefix) == u32::from(self.addr)
    }

    /// Whether the two prefixes share at least one address.
    pub fn overlaps(&self, other: &Ipv4Net) -> bool {
        self.contains(other.addr) || other.contains(self.addr)
    }

    /// The `n`th address (0 is the network address), if inside.
    pub fn nth(&self, n: u64) -> Option<Ipv4Addr> {
        (n < self.size()).then(|| Ipv4Addr::from(u32::from(self.addr) + n as u32))
    }
}

impl fmt::Display for Ipv4Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl FromStr for Ipv4Net {
    type Err = NetError;

    fn from_str(s: &str) -> Result<Self, NetError> {
        let bad = |reason: &str| NetError::InvalidRange {
            text: s.to_string(),
            reason: reason.to_string(),
        };
        let (a, p) = s
            .trim()
            .split_once('/')
            .ok_or_else(|| bad("expected ADDRESS/PREFIX, e.g. 198.18.0.0/16"))?;
        let addr: Ipv4Addr = a.parse().map_err(|_| bad("not an IPv4 address"))?;
        let prefix: u8 = p
            .parse()
            .map_err(|_| bad("the prefix length is not a number"))?;
        Ipv4Net::new(addr, prefix)
    }
}

impl TryFrom<String> for Ipv4Net {
    type Error = NetError;
    fn try_from(s: String) -> Result<Self, NetError> {
        s.parse()
    }
}

impl From<Ipv4Net> for String {
    fn from(n: Ipv4Net) -> String {
        n.to_string()
    }
}

/// Widest range accepted (a `/8`): the guard route covers the whole range,
/// so a huge one would black-hole real destinations.
pub const MIN_PREFIX: u8 = 8;
/// Narrowest range accepted: a `/30` holds one block of four addresses.
/// Whether a range holds a host's instances is [`AddrPlan::check`]'s to
/// say (with the prefix that would: [`AddrPlan::prefix_for`]).
pub const MAX_PREFIX: u8 = 30;

/// Ranges that must never be used: "this network", loopback, link-local,
/// multicast and reserved.
const FORBIDDEN: [(Ipv4Addr, u8, &str); 4] = [
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" 0.0.0.0/8"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback 127.0.0.0/8"),
    (
        Ipv4Addr::new(169, 254, 0, 0),
        16,
        "link-local 169.254.0.0/16",
    ),
    (
        Ipv4Addr::new(224, 0, 0, 0),
        3,
        "multicast/reserved 224.0.0.0/3",
    ),
];

/// Ranges set aside for local use, where instances may live by default:
/// private (RFC 1918), shared address space (RFC 6598, carrier-grade NAT)
/// and benchmarking (RFC 2544, the default). A range outside them is
/// someone's real hosts: routing it to instances would hide them from this
/// machine. Link-local is refused outright (see `FORBIDDEN`).
const LOCAL_USE: [(Ipv4Addr, u8, &str); 5] = [
    (Ipv4Addr::new(10, 0, 0, 0), 8, "10.0.0.0/8"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "172.16.0.0/12"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "192.168.0.0/16"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "100.64.0.0/10"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "198.18.0.0/15"),
];

/// Which addresses instances and gateways get.
///
/// - [`NetKind::Veth`]: instance `id` owns the `/30` block number `id`:
///   `.1` is the host end (its gateway), `.2` the instance.
/// - Shared kinds (bridge, macvlan, ipvlan): one L2 segment spanning the
///   range; `.1` is the host-side gateway, instance `id` is `.(2 + id)`.
///
/// With [`AddrPlan::with_sources`], the top addresses of the range (below
/// its broadcast address) are the host's **source addresses**: extra
/// addresses on the host side of every path, for load generators whose
/// game server limits what one source address may do (ioquake3's
/// connection requests). No instance id takes them: the capacity shrinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrPlan {
    range: Ipv4Net,
    /// Source addresses at the top of the range.
    sources: u32,
}

impl Default for AddrPlan {
    /// `198.18.0.0/16`, the RFC 2544 benchmarking range.
    fn default() -> Self {
        Self {
            range: Ipv4Net {
                addr: Ipv4Addr::new(198, 18, 0, 0),
                prefix: 16,
            },
            sources: 0,
        }
    }
}

/// Most source addresses a plan sets aside (each one is an address on
/// every veth host end: a few are what load generators need).
pub const MAX_SOURCES: u32 = 256;

impl AddrPlan {
    /// A plan over `range`; the prefix must be `/8`..=`/30` and the range
    /// must not touch loopback, link-local or multicast space.
    pub fn new(range: Ipv4Net) -> Result<Self, NetError> {
        let bad = |reason: String| NetError::InvalidRange {
            text: range.to_string(),
            reason,
        };
        if !(MIN_PREFIX..=MAX_PREFIX).contains(&range.prefix) {
            return Err(bad(format!(
                "the prefix length must be /{MIN_PREFIX}..=/{MAX_PREFIX} (wider would route real networks to the instances; narrower holds no instance)"
            )));
        }
        for (addr, prefix, what) in FORBIDDEN {
            if range.overlaps(&Ipv4Net { addr, prefix }) {
                return Err(bad(format!("it overlaps {what}")));
            }
        }
        Ok(Self { range, sources: 0 })
    }

    /// The same plan with `n` source addresses set aside at the top of the
    /// range ([`AddrPlan::source_addrs`]). Fails when `n` is above
    /// [`MAX_SOURCES`] or would leave no instance id for `kind`: checked
    /// before anything is created.
    pub fn with_sources(self, kind: NetKind, n: u32) -> Result<Self, NetError> {
        let plan = Self { sources: n, ..self };
        if n > MAX_SOURCES || plan.capacity(kind) == 0 {
            return Err(NetError::InvalidRange {
                text: self.range.to_string(),
                reason: format!(
                    "it cannot hold {n} source addresses for load generators (at most {MAX_SOURCES}) beside any {kind} instance: use a wider range"
                ),
            });
        }
        Ok(plan)
    }

    /// The host-side source addresses, highest first: the range's last
    /// addresses below its broadcast address. Empty unless
    /// [`AddrPlan::with_sources`] set some aside.
    pub fn source_addrs(&self) -> Vec<Ipv4Addr> {
        let size = self.range.size();
        (0..u64::from(self.sources))
            .filter_map(|i| self.range.nth(size - 2 - i))
            .collect()
    }

    /// Fails unless the range lies inside one of the ranges set aside for
    /// local use (private, shared and benchmarking space), naming them.
    pub fn check_local_use(&self) -> Result<(), NetError> {
        let inside = LOCAL_USE.iter().any(|&(addr, prefix, _)| {
            self.range.prefix >= prefix && Ipv4Net { addr, prefix }.contains(self.range.addr)
        });
        if inside {
            return Ok(());
        }
        let names: Vec<&str> = LOCAL_USE.iter().map(|(_, _, n)| *n).collect();
        Err(NetError::InvalidRange {
            text: self.range.to_string(),
            reason: format!(
                "it is not a private, shared or benchmarking range ({}): routing it would hide real hosts",
                names.join(", ")
            ),
        })
    }

    /// Parses and validates a range such as `198.18.0.0/16`.
    pub fn parse(range: &str) -> Result<Self, NetError> {
        Self::new(range.parse()?)
    }

    /// The range covered (and guarded by the `unreachable` route).
    pub fn range(&self) -> Ipv4Net {
        self.range
    }

    /// How many instance ids fit: ids `0..capacity` are valid. Source
    /// addresses take the top of the range: for veth every `/30` block
    /// that holds one, for the shared kinds one id each.
    pub fn capacity(&self, kind: NetKind) -> u32 {
        let size = self.range.size();
        let sources = u64::from(self.sources);
        let n = match (kind.is_routed(), sources) {
            (true, 0) => size / 4,
            // The blocks below the first source address, size - 1 - sources.
            (true, _) => size.saturating_sub(1 + sources) / 4,
            // network, gateway, broadcast
            (false, _) => size.saturating_sub(3 + sources),
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The longest prefix at this range's address (no wider than a `/8`)
    /// whose plan, with the same source addresses, holds instance `id` for
    /// `kind`: what to give when this range is too small. `None` when no
    /// range at this address can.
    pub fn prefix_for(&self, kind: NetKind, id: u32) -> Option<u8> {
        (MIN_PREFIX..=MAX_PREFIX).rev().find(|&p| {
            let range = Ipv4Net {
                addr: Ipv4Addr::from(u32::from(self.range.addr) & mask(p)),
                prefix: p,
            };
            Self { range, ..*self }.capacity(kind) > id
        })
    }

    /// Fails unless instance `id` fits in the range for `kind`.
    pub fn check(&self, kind: NetKind, id: u32) -> Result<(), NetError> {
        let capacity = self.capacity(kind);
        if id >= capacity {
            return Err(NetError::RangeTooSmall {
                range: self.range,
                kind,
                capacity,
                id,
            });
        }
        Ok(())
    }

    /// The address instance `id` owns (on its `eth0`).
    pub fn instance_addr(&self, kind: NetKind, id: u32) -> Result<Ipv4Addr, NetError> {
        self.check(kind, id)?;
        let n = if kind.is_routed() {
            4 * u64::from(id) + 2
        } else {
            2 + u64::from(id)
        };
        Ok(self.range.nth(n).expect("checked against capacity"))
    }

    /// The host-side address instance `id` routes through: its own veth
    /// host end for [`NetKind::Veth`], the shared gateway otherwise.
    pub fn gateway(&self, kind: NetKind, id: u32) -> Result<Ipv4Addr, NetError> {
        self.check(kind, id)?;
        let n = if kind.is_routed() {
            4 * u64::from(id) + 1
        } else {
            1
        };
        Ok(self.range.nth(n).expect("checked against capacity"))
    }

    /// Prefix length of the subnet the instance sits in: `/30` for veth,
    /// the whole range otherwise.
    pub fn subnet_prefix(&self, kind: NetKind) -> u8 {
        if kind.is_routed() {
            30
        } else {
            self.range.prefix
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `--range 8.8.8.0/24` was accepted and routed to the
    /// instances, hiding a public network from the machine.
    #[test]
    fn range_outside_private_and_benchmarking_space_is_refused() {
        for ok in [
            "198.18.0.0/16",
            "198.19.0.0/24",
            "10.20.0.0/16",
            "172.16.0.0/12",
            "192.168.5.0/24",
            "100.64.0.0/10",
        ] {
            assert!(
                AddrPlan::parse(ok).unwrap().check_local_use().is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "8.8.8.0/24",
            "198.16.0.0/14",
            "172.0.0.0/8",
            "11.0.0.0/8",
            "100.0.0.0/9",
        ] {
            let e = AddrPlan::parse(bad).unwrap().check_local_use().unwrap_err();
            assert!(e.to_string().contains("not a private"), "{bad}: {e}");
        }
    }

    fn net(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }

    #[test]
    fn parses_and_prints_prefixes() {
        assert_eq!(net("198.18.0.0/16").to_string(), "198.18.0.0/16");
        assert_eq!(net(" 10.1.0.0/24 ").prefix(), 24);
        let e = "198.18.0.1/16".parse::<Ipv4Net>().unwrap_err().to_string();
        assert!(e.contains("did you mean 198.18.0.0/16"), "{e}");
        assert!("198.18.0.0".parse::<Ipv4Net>().is_err());
        assert!("198.18.0.0/33".parse::<Ipv4Net>().is_err());
        assert!("1.2.3/8".parse::<Ipv4Net>().is_err());
    }

    #[test]
    fn overlap_and_contains() {
        let a = net("198.18.0.0/16");
        assert!(a.contains(Ipv4Addr::new(198, 18, 255, 255)));
        assert!(!a.contains(Ipv4Addr::new(198, 19, 0, 0)));
        assert!(a.overlaps(&net("198.18.4.0/24")));
        assert!(net("198.18.4.0/24").overlaps(&a));
        assert!(!a.overlaps(&net("198.19.0.0/16")));
        assert!(net("0.0.0.0/0").overlaps(&a));
    }

    #[test]
    fn rejects_ranges_that_are_too_wide_too_narrow_or_special() {
        for (r, why) in [
            ("198.18.0.0/31", "prefix length"),
            ("10.0.0.0/7", "prefix length"),
            ("127.0.0.0/8", "loopback"),
            ("169.254.0.0/16", "link-local"),
            ("239.0.0.0/8", "multicast"),
        ] {
            let e = AddrPlan::new(net(r)).unwrap_err().to_string();
            assert!(e.contains(r) && e.contains(why), "{r}: {e}");
        }
        assert!(AddrPlan::new(net("198.18.7.0/24")).is_ok());
    }

    /// Issue 41: `--range 198.18.0.0/25` was refused ("the prefix length
    /// must be /8..=/24") though it holds 31 veth instances. Any prefix
    /// that holds the instances is accepted; a range too small for them
    /// says which prefix would do.
    #[test]
    fn a_slash_25_that_holds_the_instances_was_refused() {
        let p = AddrPlan::new(net("198.18.0.0/25")).expect("a /25 is a range");
        assert_eq!(p.capacity(NetKind::Veth), 32);
        assert!(p.check(NetKind::Veth, 31).is_ok());
        assert!(p.check(NetKind::Veth, 32).is_err());
        assert_eq!(
            p.instance_addr(NetKind::Veth, 31).unwrap(),
            Ipv4Addr::new(198, 18, 0, 126)
        );
        let small = AddrPlan::new(net("198.18.0.0/29")).unwrap();
        assert!(small.check(NetKind::Veth, 4).is_err());
        // Ids 0..=4 need 5 blocks of 4: a /27 (8 blocks).
        assert_eq!(small.prefix_for(NetKind::Veth, 4), Some(27));
        assert_eq!(small.prefix_for(NetKind::Bridge, 4), Some(29));
        assert_eq!(p.prefix_for(NetKind::Veth, 1), Some(29));
    }

    #[test]
    fn default_plan_is_rfc2544_range() {
        assert_eq!(AddrPlan::default().range(), net("198.18.0.0/16"));
        assert_eq!(
            AddrPlan::new(net("198.18.0.0/16")).unwrap(),
            AddrPlan::default()
        );
    }

    #[test]
    fn veth_instances_get_their_own_slash30() {
        let p = AddrPlan::default();
        let k = NetKind::Veth;
        assert_eq!(p.subnet_prefix(k), 30);
        assert_eq!(p.gateway(k, 0).unwrap(), Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(p.instance_addr(k, 0).unwrap(), Ipv4Addr::new(198, 18, 0, 2));
        assert_eq!(p.gateway(k, 3).unwrap(), Ipv4Addr::new(198, 18, 0, 13));
        assert_eq!(
            p.instance_addr(k, 3).unwrap(),
            Ipv4Addr::new(198, 18, 0, 14)
        );
        assert_eq!(p.capacity(k), 16384);
        let last = p.instance_addr(k, 16383).unwrap();
        assert_eq!(last, Ipv4Addr::new(198, 18, 255, 254));
        assert!(p.instance_addr(k, 16384).is_err());
    }

    #[test]
    fn shared_kinds_sit_behind_one_gateway() {
        let p = AddrPlan::new(net("198.18.5.0/24")).unwrap();
        for k in [NetKind::Bridge, NetKind::Macvlan, NetKind::Ipvlan] {
            assert_eq!(p.subnet_prefix(k), 24);
            assert_eq!(p.gateway(k, 7).unwrap(), Ipv4Addr::new(198, 18, 5, 1));
            assert_eq!(p.instance_addr(k, 0).unwrap(), Ipv4Addr::new(198, 18, 5, 2));
            assert_eq!(p.capacity(k), 253);
            // never the broadcast address
            assert_eq!(
                p.instance_addr(k, 252).unwrap(),
                Ipv4Addr::new(198, 18, 5, 254)
            );
        }
    }

    #[test]
    fn too_many_instances_names_range_kind_and_id() {
        let p = AddrPlan::new(net("198.18.5.0/24")).unwrap();
        let e = p.check(NetKind::Veth, 64).unwrap_err().to_string();
        assert!(e.contains("198.18.5.0/24"), "{e}");
        assert!(e.contains("64 veth"), "{e}");
        assert!(e.contains("instance 64"), "{e}");
    }

    #[test]
    fn source_addresses_sit_at_the_top_and_no_instance_takes_them() {
        let p = AddrPlan::new(net("198.18.5.0/24")).unwrap();
        assert!(p.source_addrs().is_empty());
        for k in [NetKind::Veth, NetKind::Bridge, NetKind::Macvlan] {
            let s = p.with_sources(k, 3).unwrap();
            let sources = s.source_addrs();
            assert_eq!(
                sources,
                [254, 253, 252].map(|d| Ipv4Addr::new(198, 18, 5, d)),
                "{k}"
            );
            let last = s.capacity(k) - 1;
            for id in 0..s.capacity(k) {
                let a = s.instance_addr(k, id).unwrap();
                let g = s.gateway(k, id).unwrap();
                assert!(!sources.contains(&a) && !sources.contains(&g), "{k} {id}");
            }
            assert!(s.instance_addr(k, last + 1).is_err(), "{k}");
            let top = u32::from(s.instance_addr(k, last).unwrap());
            // veth: the last block's broadcast too stays below them.
            let block_end = if k.is_routed() { top + 1 } else { top };
            assert!(block_end < u32::from(sources[2]), "{k}");
        }
        // veth: 256 addresses, 3 sources and the broadcast: 63 blocks.
        assert_eq!(
            p.with_sources(NetKind::Veth, 3)
                .unwrap()
                .capacity(NetKind::Veth),
            63
        );
        assert_eq!(
            p.with_sources(NetKind::Bridge, 3)
                .unwrap()
                .capacity(NetKind::Bridge),
            250
        );
    }

    #[test]
    fn a_range_too_small_for_its_source_addresses_is_refused() {
        let p = AddrPlan::new(net("198.18.5.0/24")).unwrap();
        let e = p
            .with_sources(NetKind::Bridge, 253)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot hold 253 source addresses"), "{e}");
        assert!(p.with_sources(NetKind::Veth, MAX_SOURCES + 1).is_err());
        assert_eq!(
            p.with_sources(NetKind::Bridge, 252)
                .unwrap()
                .capacity(NetKind::Bridge),
            1
        );
    }

    #[test]
    fn serde_uses_the_text_form() {
        let j = serde_json::to_string(&net("198.18.0.0/16")).unwrap();
        assert_eq!(j, "\"198.18.0.0/16\"");
        assert!(serde_json::from_str::<Ipv4Net>("\"198.18.0.1/16\"").is_err());
    }
}
