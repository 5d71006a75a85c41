//! Names and validation: the kinds of path, the host name rule, the names
//! a host gives its namespaces and links, and the checks made before
//! anything is created. Pure functions, no I/O.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{AddrPlan, NetError, MAX_LINK_NAME, PREFIX};

/// How the instance namespaces are connected to the root namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetKind {
    /// Routed point-to-point veth pair per instance.
    Veth,
    /// Veth pairs enslaved to one software bridge.
    Bridge,
    /// Macvlan children (bridge mode) of a parent link of ours.
    Macvlan,
    /// Ipvlan children (L2 mode) of a parent link of ours.
    Ipvlan,
}

impl NetKind {
    /// All kinds, in the order of the docs.
    pub const ALL: [NetKind; 4] = [
        NetKind::Veth,
        NetKind::Bridge,
        NetKind::Macvlan,
        NetKind::Ipvlan,
    ];

    /// Whether instances are routed (a `/30` each) rather than sharing one
    /// L2 segment with the gateway.
    pub fn is_routed(self) -> bool {
        self == NetKind::Veth
    }

    /// Whether each instance has a veth pair whose host end sits in the
    /// root namespace (`tp<host>v<id>`).
    pub(super) fn has_veth(self) -> bool {
        matches!(self, NetKind::Veth | NetKind::Bridge)
    }

    /// The word used in configs and `ip link add ... type WORD`.
    pub fn as_str(self) -> &'static str {
        match self {
            NetKind::Veth => "veth",
            NetKind::Bridge => "bridge",
            NetKind::Macvlan => "macvlan",
            NetKind::Ipvlan => "ipvlan",
        }
    }
}

impl fmt::Display for NetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NetKind {
    type Err = NetError;
    fn from_str(s: &str) -> Result<Self, NetError> {
        NetKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| NetError::UnknownKind(s.to_string()))
    }
}

/// Fails unless `host` can prefix our names: 1..=8 of `a-z0-9` (the rule
/// is [`tickpack_sys::validate_host_name`]).
pub fn validate_host_name(host: &str) -> Result<(), NetError> {
    tickpack_sys::validate_host_name(host).map_err(|e| NetError::InvalidHostName {
        name: host.to_string(),
        reason: e.to_string(),
    })
}

/// The namespace name of instance `id` on `host`: `tp<host>-<id>`.
pub fn netns_name(host: &str, id: u32) -> String {
    format!("{PREFIX}{host}-{id}")
}

pub(super) fn veth_name(host: &str, id: u32) -> String {
    format!("{PREFIX}{host}v{id}")
}

pub(super) fn shared_name(host: &str, suffix: &str) -> String {
    format!("{PREFIX}{host}{suffix}")
}

/// True if `name` is one of the names host `host` gives its namespaces and
/// links: `tp<host>-<id>` (namespace), `tp<host>v<id>` (veth), or
/// `tp<host>` + `br`, `d0`, `d1`, `gw` (shared links). Exact, not a prefix:
/// host `h`'s names never include host `h1`'s (`tph1-1` is `h1`'s
/// namespace, not a name of `h`).
pub fn is_host_name_of(host: &str, name: &str) -> bool {
    let Some(rest) = name.strip_prefix(PREFIX).and_then(|n| n.strip_prefix(host)) else {
        return false;
    };
    let id = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    match rest {
        "br" | "d0" | "d1" | "gw" => true,
        r => r.strip_prefix('-').is_some_and(id) || r.strip_prefix('v').is_some_and(id),
    }
}

/// Name and room checks for one instance, no side effects.
pub(super) fn check_instance(
    host: &str,
    kind: NetKind,
    plan: &AddrPlan,
    id: u32,
) -> Result<(), NetError> {
    plan.check(kind, id)?;
    let link = veth_name(host, id);
    if link.len() > MAX_LINK_NAME {
        return Err(NetError::NameTooLong {
            host: host.to_string(),
            id,
            link,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netpath::MAX_HOST_NAME;

    #[test]
    fn kinds_parse_and_print_as_config_words() {
        for k in NetKind::ALL {
            assert_eq!(k.to_string().parse::<NetKind>().unwrap(), k);
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
        let e = "vlan".parse::<NetKind>().unwrap_err().to_string();
        assert!(e.contains("\"vlan\"") && e.contains("macvlan"), "{e}");
    }

    #[test]
    fn host_names_are_short_lowercase_alphanumerics() {
        assert!(validate_host_name("h1").is_ok());
        assert!(validate_host_name("abcdefgh").is_ok());
        for bad in ["", "abcdefghi", "H1", "h-1", "h 1", "h/1"] {
            let e = validate_host_name(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn a_hosts_names_are_its_own_and_never_a_longer_named_hosts() {
        assert!(is_host_name_of("h", &netns_name("h", 1)));
        assert!(is_host_name_of("h", &veth_name("h", 12)));
        for s in ["br", "d0", "d1", "gw"] {
            assert!(is_host_name_of("h", &shared_name("h", s)));
        }
        // Host h1's (and hv1's, hd0's...) names are not h's.
        for other in ["h1", "hv1", "hd0", "hbr", "h10"] {
            let names = [
                netns_name(other, 1),
                veth_name(other, 3),
                shared_name(other, "br"),
                shared_name(other, "d0"),
                shared_name(other, "gw"),
            ];
            for n in names {
                assert!(!is_host_name_of("h", &n), "{n} belongs to {other}, not h");
                assert!(is_host_name_of(other, &n), "{n} belongs to {other}");
            }
        }
        for n in ["tph", "tph-", "tphv", "tph-01", "tph-1x", "eth0", "tpbr"] {
            assert!(!is_host_name_of("h", n), "{n}");
        }
    }

    #[test]
    fn names_follow_the_documented_pattern() {
        assert_eq!(netns_name("h1", 7), "tph1-7");
        assert_eq!(veth_name("h1", 7), "tph1v7");
        assert_eq!(shared_name("h1", "br"), "tph1br");
    }

    #[test]
    fn link_names_longer_than_ifnamsiz_are_refused_before_anything_runs() {
        let plan = AddrPlan::new("10.0.0.0/8".parse().unwrap()).unwrap();
        // tp + 8 + v + 5 digits = 16 bytes
        let e = check_instance("abcdefgh", NetKind::Bridge, &plan, 12345).unwrap_err();
        assert!(matches!(e, NetError::NameTooLong { .. }), "{e}");
        assert!(e.to_string().contains("tpabcdefghv12345"), "{e}");
        assert!(check_instance("abcdefgh", NetKind::Bridge, &plan, 1234).is_ok());
    }

    #[test]
    fn the_longest_host_name_fits_every_link_of_the_largest_fleet() {
        // A host runs at most 250 instances (the fleet's limit).
        let plan = AddrPlan::new("10.0.0.0/8".parse().unwrap()).unwrap();
        let host = "a".repeat(MAX_HOST_NAME);
        validate_host_name(&host).unwrap();
        for kind in NetKind::ALL {
            check_instance(&host, kind, &plan, 250).unwrap();
        }
        for suffix in ["br", "d0", "d1", "gw"] {
            assert!(shared_name(&host, suffix).len() <= MAX_LINK_NAME);
        }
    }
}
