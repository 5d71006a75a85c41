//! What a host's set-up created, in creation order, so it can be removed
//! by the process that made it or by a later one after a crash.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::filter::Nft;
use super::{is_host_name_of, rtnl, validate_host_name, Ip, Ipv4Net, NetError, PREFIX};

/// The form of every route we add: `unreachable <range> metric <max>`.
const GUARD_ROUTE: &str = "unreachable ";

/// Everything set-up created, in creation order. Persist it (JSON) in the
/// run directory; [`NetRecord::cleanup`] removes what it lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetRecord {
    /// Network namespaces (`ip netns` names, files under /run/netns).
    pub namespaces: Vec<String>,
    /// Links in the root namespace. Links inside a namespace are not listed:
    /// they go with the namespace or with their root-side peer or parent.
    pub links: Vec<String>,
    /// Routes in the root namespace, in `ip route`'s words
    /// (`unreachable 198.18.0.0/16 metric 4294967295`).
    pub routes: Vec<String>,
    /// nftables tables (`inet` family) holding the instance firewall,
    /// listed before they are created.
    #[serde(default)]
    pub tables: Vec<String>,
}

impl NetRecord {
    /// Whether it lists nothing.
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty()
            && self.links.is_empty()
            && self.routes.is_empty()
            && self.tables.is_empty()
    }

    /// Removes what it lists with the default [`Ip`]; see [`NetRecord::cleanup_with`].
    pub fn cleanup(&self) -> Result<(), NetError> {
        self.cleanup_with(&Ip::default())
    }

    /// Removes what it lists, newest first: firewall tables, links, then namespaces, then
    /// the guard routes last (so the range stays black-holed until the very
    /// end). Idempotent: what is already gone is skipped. Refuses any name
    /// without the `tp` prefix and any route that is not an `unreachable`
    /// guard, so a damaged record cannot remove someone else's objects. Goes
    /// on after a failure and reports them all.
    pub fn cleanup_with(&self, ip: &Ip) -> Result<(), NetError> {
        let mut failures = Vec::new();
        let mut note = |r: Result<(), NetError>| {
            if let Err(e) = r {
                failures.push(e.to_string());
            }
        };
        let nft = Nft::default();
        for t in self.tables.iter().rev() {
            note(nft.remove(t));
        }
        for l in self.links.iter().rev() {
            note(ours(l).and_then(|_| ip.link_del(&format!("cleanup: delete link {l}"), None, l)));
        }
        for n in self.namespaces.iter().rev() {
            note(ours(n).and_then(|_| ip.netns_del(&format!("cleanup: delete namespace {n}"), n)));
        }
        for r in self.routes.iter().rev() {
            note(guard(r).and_then(|(range, metric)| {
                ip.unreachable_del("cleanup: delete the unreachable guard route", range, metric)
            }));
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(NetError::Cleanup { failures })
        }
    }

    /// What of the record is there now, as `host down` reports it:
    /// namespaces, links, `nft table inet NAME` and `route ...` lines. A
    /// record of objects already gone (a failed start cleaned up after
    /// itself) lists nothing, so nothing is reported as removed.
    pub fn existing(&self) -> Vec<String> {
        let mut there = vec![];
        let nft = Nft::default();
        there.extend(
            self.tables
                .iter()
                .filter(|t| nft.exists(t).unwrap_or(false))
                .map(|t| format!("nft table inet {t}")),
        );
        there.extend(
            self.links
                .iter()
                .filter(|l| ours(l).is_ok() && Path::new("/sys/class/net").join(l).exists())
                .cloned(),
        );
        there.extend(
            self.namespaces
                .iter()
                .filter(|n| ours(n).is_ok() && Path::new(super::NETNS_DIR).join(n).exists())
                .cloned(),
        );
        let shown = Ip::default().routes("list routes").unwrap_or_default();
        for r in &self.routes {
            let Ok((range, metric)) = guard(r) else {
                continue;
            };
            if shown.iter().any(|s| rtnl::is_guard(s, range, metric)) {
                there.push(format!("route {r}"));
            }
        }
        there
    }

    /// Appends `other`'s entries.
    pub(crate) fn extend(&mut self, other: NetRecord) {
        self.namespaces.extend(other.namespaces);
        self.links.extend(other.links);
        self.routes.extend(other.routes);
        self.tables.extend(other.tables);
    }

    /// Drops the entries `removed` lists.
    pub(crate) fn retain_absent(&mut self, removed: &NetRecord) {
        self.namespaces.retain(|n| !removed.namespaces.contains(n));
        self.links.retain(|n| !removed.links.contains(n));
        self.routes.retain(|n| !removed.routes.contains(n));
        self.tables.retain(|n| !removed.tables.contains(n));
    }
}

fn ours(name: &str) -> Result<(), NetError> {
    if name.starts_with(PREFIX) && name.len() > PREFIX.len() {
        Ok(())
    } else {
        Err(NetError::ForeignName {
            name: name.to_string(),
        })
    }
}

/// The range and metric of a guard route as records keep it
/// (`unreachable 198.18.0.0/16 metric 4294967295`); anything else is
/// refused.
fn guard(route: &str) -> Result<(Ipv4Net, u32), NetError> {
    let args: Vec<&str> = route.split_whitespace().collect();
    if let ["unreachable", range, "metric", metric] = args[..] {
        if let (true, Ok(range), Ok(metric)) = (
            route.starts_with(GUARD_ROUTE),
            range.parse::<Ipv4Net>(),
            metric.parse::<u32>(),
        ) {
            return Ok((range, metric));
        }
    }
    Err(NetError::ForeignName {
        name: route.to_string(),
    })
}

/// Removes every network namespace and root-namespace link that host
/// `host` names (see [`is_host_name_of`]), for recovery after `kill -9` when
/// no record is at hand; other hosts' names, even ones that start with
/// the same letters, are never touched. Returns what was removed. Guard
/// routes are not found this way: remove one with [`remove_guard_route`].
pub fn cleanup_host(host: &str) -> Result<Vec<String>, NetError> {
    validate_host_name(host)?;
    Ip::default().cleanup_matching(|n| is_host_name_of(host, n))
}

/// Removes every network namespace and root-namespace link whose name
/// starts with `prefix`, for recovery after `kill -9` when no record is at
/// hand. `prefix` must itself start with `tp`; names without it are never
/// touched. Returns what was removed. Guard routes are not found this way:
/// remove one with [`remove_guard_route`].
///
/// Prefixes match textually: `tph1` also matches host `h10`'s names.
pub fn cleanup_prefix(prefix: &str) -> Result<Vec<String>, NetError> {
    Ip::default().cleanup_prefix(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let r = NetRecord {
            namespaces: vec!["tph1-1".into()],
            links: vec!["tph1br".into(), "tph1v1".into()],
            routes: vec!["unreachable 198.18.0.0/16 metric 4294967295".into()],
            tables: vec!["tph1".into()],
        };
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<NetRecord>(&j).unwrap(), r);
        // Records written before tables were recorded still load.
        let old = r#"{"namespaces":[],"links":[],"routes":[]}"#;
        assert!(serde_json::from_str::<NetRecord>(old).unwrap().is_empty());
    }

    #[test]
    fn damaged_record_never_touches_foreign_names() {
        // Every request fails: if cleanup asked the kernel anything for
        // these entries we would see that failure instead.
        let r = NetRecord {
            namespaces: vec!["default".into()],
            links: vec!["eth0".into(), "tp".into()],
            routes: vec![
                "default via 192.0.2.1".into(),
                "unreachable 198.18.0.0/16 dev eth0".into(),
            ],
            tables: vec!["filter".into()],
        };
        let Err(NetError::Cleanup { failures }) = r.cleanup_with(&Ip::default().failing_on(""))
        else {
            panic!("foreign names must be refused");
        };
        assert_eq!(failures.len(), 6, "{failures:?}");
        assert!(
            failures.iter().all(|f| f.contains("refusing")),
            "{failures:?}"
        );
    }
}
