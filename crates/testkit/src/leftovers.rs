//! What a host named `tp<name>` may leave behind, as an operator would see
//! it: `ip netns list`, `ip -o link show`, `ip -4 route show`, `nft list
//! tables`, the cgroup roots and the processes in /proc.
//!
//! Every item is one line that starts with its kind: `netns NAME`,
//! `link NAME`, `route LINE`, `table inet NAME`, `cgroup PATH`,
//! `process PID: COMMAND LINE`. An empty scan means nothing is left.

use std::process::Command;

/// The cgroup roots (v2, and the v1 controllers tickpack uses) whose
/// top-level directories are scanned.
const CGROUP_ROOTS: [&str; 6] = [
    "/sys/fs/cgroup",
    "/sys/fs/cgroup/memory",
    "/sys/fs/cgroup/cpuset",
    "/sys/fs/cgroup/cpu",
    "/sys/fs/cgroup/cpuacct",
    "/sys/fs/cgroup/unified",
];

/// A scan for the leftovers of everything named with one prefix.
///
/// `Leftovers::of("tpe1").scan()` lists namespaces, links, nftables tables
/// and cgroups whose name starts with `tpe1`; [`Leftovers::routes`] and
/// [`Leftovers::processes_binding`] add routes and processes of an address
/// range.
#[derive(Clone, Debug)]
pub struct Leftovers {
    prefix: String,
    routes: Vec<String>,
    binding: Option<String>,
}

impl Leftovers {
    /// Namespaces, links, nftables tables and cgroups starting with `prefix`.
    pub fn of(prefix: &str) -> Leftovers {
        Leftovers {
            prefix: prefix.to_string(),
            routes: vec![],
            binding: None,
        }
    }

    /// Also routes (main table) whose line contains any of `needles`
    /// (e.g. "198.19.132." or "198.19.8.0/24").
    pub fn routes<S: AsRef<str>>(mut self, needles: &[S]) -> Leftovers {
        self.routes = needles.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// Also live processes whose command line binds an address starting with
    /// `range_prefix` (`--bind 198.19.136.`).
    pub fn processes_binding(mut self, range_prefix: &str) -> Leftovers {
        self.binding = Some(range_prefix.to_string());
        self
    }

    /// Everything found now, one labelled line per item.
    pub fn scan(&self) -> Vec<String> {
        let p = self.prefix.as_str();
        let mut found: Vec<String> = ip(&["netns", "list"])
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with(p))
            .map(|n| format!("netns {n}"))
            .collect();
        found.extend(
            ip(&["-o", "link", "show"])
                .lines()
                .filter_map(|l| l.split(": ").nth(1))
                .filter_map(|n| n.split('@').next())
                .filter(|n| n.starts_with(p))
                .map(|n| format!("link {n}")),
        );
        if !self.routes.is_empty() {
            found.extend(
                ip(&["-4", "route", "show", "table", "main"])
                    .lines()
                    .filter(|l| self.routes.iter().any(|n| l.contains(n.as_str())))
                    .map(|l| format!("route {l}")),
            );
        }
        found.extend(
            nft_tables()
                .lines()
                .filter_map(|l| l.trim().strip_prefix("table inet "))
                .filter(|t| t.starts_with(p))
                .map(|t| format!("table inet {t}")),
        );
        for root in CGROUP_ROOTS {
            if let Ok(rd) = std::fs::read_dir(root) {
                found.extend(
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n.starts_with(p))
                        .map(|n| format!("cgroup {root}/{n}")),
                );
            }
        }
        if let Some(range) = &self.binding {
            found.extend(processes_binding(range));
        }
        found
    }
}

/// The output of `ip ARGS` (a test cannot check leftovers without `ip`).
fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().expect("running ip");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `nft list tables`, or nothing where nftables is not installed.
fn nft_tables() -> String {
    Command::new("nft")
        .args(["list", "tables"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Live (not zombie) processes whose command line has `--bind RANGE...`.
fn processes_binding(range_prefix: &str) -> Vec<String> {
    let mut found = vec![];
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return found;
    };
    let needle = format!("--bind {range_prefix}");
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&needle) && crate::procs::alive(u64::from(pid)) {
            found.push(format!("process {pid}: {cmd}"));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_link_is_found_by_its_name_and_labelled() {
        let found = Leftovers::of("lo").scan();
        assert!(found.iter().any(|l| l == "link lo"), "{found:?}");
    }

    #[test]
    fn a_prefix_nobody_uses_finds_nothing() {
        let found = Leftovers::of("tp-testkit-unused-")
            .routes(&["203.0.113.254/32"])
            .processes_binding("203.0.113.254")
            .scan();
        assert_eq!(found, Vec::<String>::new());
    }
}
