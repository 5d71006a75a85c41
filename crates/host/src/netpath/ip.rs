//! Running iproute2's `ip` and reading its output.
//!
//! Every call names the step it belongs to; a failure carries the exact
//! command line and its stderr, so an operator can rerun it by hand.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use super::{Ipv4Net, NetError, PREFIX};

use super::bounded::DEFAULT_TIMEOUT;

/// How `ip` is run: which program and how long one call may take.
///
/// [`Ip::default`] runs `ip` from `PATH` with a 10 s bound. Point it at
/// another binary (e.g. `/usr/sbin/ip`, or a wrapper that logs) with
/// [`Ip::new`].
#[derive(Clone, Debug)]
pub struct Ip {
    program: PathBuf,
    timeout: Duration,
}

impl Default for Ip {
    fn default() -> Self {
        Self {
            program: PathBuf::from("ip"),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl Ip {
    /// Runs `program` instead of `ip` from `PATH`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }

    /// Bounds each invocation by `timeout` (it is killed after that).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs `ip ARGS`; returns stdout, or an error naming `step`, the
    /// command line and stderr.
    pub(crate) fn run(&self, step: &str, args: &[&str]) -> Result<String, NetError> {
        super::bounded::run(
            &self.program,
            args,
            &[("LC_ALL", "C")],
            None,
            self.timeout,
            step,
        )
    }

    /// Like [`Ip::run`] but a "does not exist" failure counts as success:
    /// removing something already gone is fine.
    pub(crate) fn remove(&self, step: &str, args: &[&str]) -> Result<(), NetError> {
        match self.run(step, args) {
            Ok(_) => Ok(()),
            Err(NetError::Command { ref stderr, .. }) if is_absent(stderr) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Names of the network namespaces in /run/netns.
    pub(crate) fn netns_names(&self, step: &str) -> Result<Vec<String>, NetError> {
        Ok(parse_netns_list(&self.run(step, &["netns", "list"])?))
    }

    /// Names of the links in the root namespace.
    pub(crate) fn link_names(&self, step: &str) -> Result<Vec<String>, NetError> {
        Ok(parse_link_names(&self.run(step, &["-o", "link", "show"])?))
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
        let a = addr.to_string();
        let out = match self.run("check the route to a target", &["-o", "route", "get", &a]) {
            Ok(out) => out,
            Err(NetError::Command {
                command, stderr, ..
            }) => {
                return Err(not_ours(format!("`{command}` found no route: {stderr}")));
            }
            Err(e) => return Err(e),
        };
        match parse_route_get(&out) {
            RouteGet { kind: Some(k), .. } => Err(not_ours(format!(
                "it is a {k} route, not unicast: {}",
                out.trim()
            ))),
            RouteGet { dev: Some(dev), .. } if dev.starts_with(PREFIX) => Ok(dev),
            RouteGet { dev: Some(dev), .. } => Err(not_ours(format!(
                "it leaves through {dev:?}, which is not a tickpack link (no `{PREFIX}` prefix): {}",
                out.trim()
            ))),
            RouteGet { dev: None, .. } => Err(not_ours(format!(
                "no output device in `{}`",
                out.trim()
            ))),
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
            match self.remove("cleanup: delete link", &["link", "del", "dev", l]) {
                Ok(()) => removed.push(l.clone()),
                Err(e) => failures.push(e.to_string()),
            }
        }
        let names = self.netns_names("list namespaces for cleanup")?;
        for n in names.iter().filter(|n| ours(n)) {
            match self.remove("cleanup: delete namespace", &["netns", "del", n]) {
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

    /// The first main-table route overlapping `range`, if any.
    pub(crate) fn route_overlapping(&self, range: Ipv4Net) -> Result<Option<String>, NetError> {
        let out = self.run(
            "check that the address range is unused",
            &["-4", "route", "show", "table", "main"],
        )?;
        Ok(route_dests(&out)
            .into_iter()
            .find(|(_, dest)| dest.overlaps(&range))
            .map(|(line, _)| line))
    }
}

/// Whether `ip`'s stderr says the object is already gone.
pub(crate) fn is_absent(stderr: &str) -> bool {
    stderr.contains("Cannot find device")
        || stderr.contains("does not exist")
        || stderr.contains("No such file or directory")
        || stderr.contains("No such process")
        || stderr.contains("No such device")
}

/// Whether `ip`'s stderr says the kernel lacks the link type.
pub(crate) fn is_unknown_type(stderr: &str) -> bool {
    stderr.contains("Unknown device type") || stderr.contains("Operation not supported")
}

/// `ip netns list` prints `name` or `name (id: N)` per line.
pub(crate) fn parse_netns_list(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// `ip -o link show` prints `N: name[@peer]: <FLAGS> ...` per line.
pub(crate) fn parse_link_names(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split(": ").nth(1))
        .filter_map(|n| n.split('@').next())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

const ROUTE_TYPES: [&str; 10] = [
    "unicast",
    "local",
    "broadcast",
    "multicast",
    "anycast",
    "unreachable",
    "blackhole",
    "prohibit",
    "throw",
    "nat",
];

/// Destinations of `ip -4 route show` lines (default routes skipped).
pub(crate) fn route_dests(out: &str) -> Vec<(String, Ipv4Net)> {
    let mut v = Vec::new();
    for line in out.lines() {
        // continuation lines (multipath nexthops) start with whitespace
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let mut toks = line.split_whitespace();
        let mut dest = toks.next();
        if dest.is_some_and(|t| ROUTE_TYPES.contains(&t)) {
            dest = toks.next();
        }
        let Some(dest) = dest else { continue };
        if dest == "default" {
            continue;
        }
        let net = if dest.contains('/') {
            dest.parse::<Ipv4Net>().ok()
        } else {
            dest.parse::<Ipv4Addr>()
                .ok()
                .and_then(|a| Ipv4Net::new(a, 32).ok())
        };
        if let Some(n) = net {
            v.push((line.trim().to_string(), n));
        }
    }
    v
}

/// What `ip -o route get ADDR` says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RouteGet {
    /// `Some("local")`, `Some("broadcast")`... for non-unicast routes.
    pub kind: Option<String>,
    pub dev: Option<String>,
}

pub(crate) fn parse_route_get(out: &str) -> RouteGet {
    let toks: Vec<&str> = out.split_whitespace().collect();
    let kind = toks
        .first()
        .filter(|t| ROUTE_TYPES.contains(t) && **t != "unicast")
        .map(|t| t.to_string());
    let dev = toks
        .windows(2)
        .find(|w| w[0] == "dev")
        .map(|w| w[1].to_string());
    RouteGet { kind, dev }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn reads_netns_list_with_and_without_ids() {
        let out = "tph1-2 (id: 1)\ntph1-1\nother\n";
        assert_eq!(parse_netns_list(out), ["tph1-2", "tph1-1", "other"]);
        assert!(parse_netns_list("").is_empty());
    }

    #[test]
    fn reads_link_names_without_peer_suffix() {
        let out = "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue\\    link/loopback\n\
                   9: tph1d1@tph1d0: <BROADCAST,MULTICAST> mtu 1500\\    link/ether\n\
                   8: tph1v1@if2: <BROADCAST> mtu 1500 link-netns tph1-1\n";
        assert_eq!(parse_link_names(out), ["lo", "tph1d1", "tph1v1"]);
    }

    #[test]
    fn reads_route_destinations_of_every_type() {
        let out = "default via 192.0.2.1 dev eth0 \n\
                   192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2 \n\
                   unreachable 198.18.0.0/16 metric 4294967295 \n\
                   10.9.9.9 via 192.0.2.1 dev eth0\n\
                   \tnexthop via 1.2.3.4 dev eth1 weight 1\n";
        let d: Vec<String> = route_dests(out)
            .iter()
            .map(|(_, n)| n.to_string())
            .collect();
        assert_eq!(d, ["192.0.2.0/24", "198.18.0.0/16", "10.9.9.9/32"]);
    }

    #[test]
    fn reads_route_get_device_and_type() {
        let ours = parse_route_get("198.18.0.6 dev tph1v1 src 198.18.0.5 uid 0 \\    cache ");
        assert_eq!(
            ours,
            RouteGet {
                kind: None,
                dev: Some("tph1v1".into())
            }
        );
        let lo = parse_route_get(
            "local 127.0.0.1 dev lo table local src 127.0.0.1 uid 0 \\    cache <local> ",
        );
        assert_eq!(lo.kind.as_deref(), Some("local"));
        assert_eq!(lo.dev.as_deref(), Some("lo"));
    }

    #[test]
    fn recognises_already_gone_messages() {
        assert!(is_absent("Cannot find device \"tph1v1\""));
        assert!(is_absent(
            "Cannot remove namespace file \"/run/netns/tph1-1\": No such file or directory"
        ));
        assert!(is_absent("RTNETLINK answers: No such process"));
        assert!(!is_absent("RTNETLINK answers: Operation not permitted"));
    }

    #[test]
    fn failed_command_reports_line_status_and_stderr() {
        let ip = Ip::new("sh");
        let e = ip
            .run("probe step", &["-c", "echo boom >&2; exit 3"])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("probe step: `sh -c echo boom >&2; exit 3` failed"),
            "{e}"
        );
        assert!(e.contains("exit status: 3"), "{e}");
        assert!(e.ends_with("boom"), "{e}");
    }

    #[test]
    fn missing_program_names_the_command() {
        let e = Ip::new("/nonexistent/ip")
            .run("probe", &["link"])
            .unwrap_err();
        assert!(matches!(e, NetError::Spawn { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/ip link"), "{e}");
    }

    #[test]
    fn hung_command_is_killed_at_the_timeout() {
        let ip = Ip::new("sleep").with_timeout(Duration::from_millis(100));
        let t = Instant::now();
        let e = ip.run("probe", &["5"]).unwrap_err();
        assert!(matches!(e, NetError::Timeout { .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn cleanup_prefix_refuses_names_outside_tp() {
        // Never reaches `ip`: the program does not exist.
        let ip = Ip::new("/nonexistent/ip");
        for p in ["", "e", "eth", "t", "xtp"] {
            let e = ip.cleanup_prefix(p).unwrap_err();
            assert!(matches!(e, NetError::ForeignName { .. }), "{p:?}: {e}");
        }
    }

    #[test]
    fn route_check_refuses_loopback_without_asking_the_kernel() {
        let ip = Ip::new("/nonexistent/ip");
        let e = ip.check_route(Ipv4Addr::LOCALHOST).unwrap_err();
        assert!(matches!(e, NetError::RouteNotOurs { .. }), "{e}");
    }
}
