//! Automatic core placement of N single-threaded instances.
//!
//! A game server instance is one busy thread. Where that thread runs decides
//! what it shares: a hyperthread sibling shares a core's execution units, a
//! CPU on another NUMA node does not share the last-level cache or the memory
//! controller. This module reads the machine's shape from `/sys` and turns a
//! [`Policy`] into a [`Placement`]: which CPUs (and which NUMA node, for
//! `cpuset.mems`) each instance gets.
//!
//! Order of calls:
//!
//! 1. [`Topology::read`] with the sysfs root (`/sys`, or a fake tree in tests);
//! 2. [`default_reserved`] (CPU 0 for the host and the load generator when
//!    there are at least two CPUs), or a list from the user;
//! 3. [`plan`], then record the [`Placement`] (it is serde-serializable) and
//!    hand each instance's `cpus` and `node` to [`crate::cgroup::Limits`] or to
//!    `sched_setaffinity`.
//!
//! The policies:
//!
//! - [`Policy::Spread`]: instances go round-robin across NUMA nodes first,
//!   then across physical cores, and only then onto hyperthread siblings.
//! - [`Policy::Pack`]: node 0's physical cores first, then node 1's, ...;
//!   siblings, again, only once every physical core has an instance.
//! - [`Policy::None`]: every instance may run on every non-reserved CPU and
//!   the kernel scheduler decides (the baseline to compare against).
//!
//! A core whose first thread is reserved counts as taken: its other threads
//! are handed out with the siblings, so an instance does not share a core
//! with the load generator while free cores remain.
//!
//! Oversubscription is allowed on purpose (the benchmark's ladder goes past
//! one instance per CPU to find where quality breaks): instance `i` gets slot
//! `i % slots`, and the [`Placement::warnings`] say that CPUs are shared.
//!
//! What this module does not do: it does not pin anything, does not look at
//! caches beyond the sibling lists, and does not read CPU load; it is pure
//! apart from [`Topology::read`].

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Formats CPU numbers the way Linux does (`0-3,8`); see [`tickpack_sys`].
pub use tickpack_sys::format_cpu_list;

/// Where sysfs is mounted on a real machine.
pub const DEFAULT_SYS_ROOT: &str = "/sys";

/// Everything that can go wrong while reading the topology or planning.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// A sysfs file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// A sysfs file does not hold a CPU list such as `0-3,8`.
    #[error("cannot parse the CPU list {content:?} in {path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it holds.
        content: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The online CPU list is empty.
    #[error("no online CPU is listed in {path}")]
    NoCpus {
        /// The file (`devices/system/cpu/online`).
        path: PathBuf,
    },

    /// A [`Topology`] built by hand holds no CPU.
    #[error("the CPU topology holds no CPU")]
    EmptyTopology,

    /// A reserved CPU does not exist or is offline.
    #[error("reserved CPU {cpu} is not an online CPU (online: {online})")]
    UnknownCpu {
        /// The CPU asked for.
        cpu: usize,
        /// The online CPUs, as a CPU list.
        online: String,
    },

    /// A policy name is not `spread`, `pack` or `none`.
    #[error("unknown placement policy {given:?} (expected spread, pack or none)")]
    UnknownPolicy {
        /// The name given.
        given: String,
    },
}

/// One online CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    /// The CPU number, as in `cpuN`.
    pub id: usize,
    /// Its NUMA node (0 on machines without `devices/system/node`).
    pub node: usize,
    /// The physical core it belongs to, named by the lowest online CPU of
    /// that core.
    pub core: usize,
    /// Every online CPU of that core (hyperthread siblings), itself
    /// included, ascending.
    pub siblings: Vec<usize>,
}

impl Cpu {
    /// 0 for a core's first thread, 1 for its second sibling, ...
    fn thread_rank(&self) -> usize {
        self.siblings
            .iter()
            .position(|&c| c == self.id)
            .unwrap_or(0)
    }
}

/// The online CPUs of a machine with their NUMA node and core siblings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// Online CPUs, ascending by id.
    pub cpus: Vec<Cpu>,
}

impl Topology {
    /// Reads the topology under `sys_root` (normally [`DEFAULT_SYS_ROOT`]).
    ///
    /// Uses `devices/system/cpu/online`, `devices/system/node/node*/cpulist`
    /// (no `node` directory means one node, 0) and, per CPU,
    /// `topology/core_cpus_list` or the older `topology/thread_siblings_list`
    /// (neither means the CPU is a core of its own).
    pub fn read(sys_root: &Path) -> Result<Topology, PlacementError> {
        let cpu_dir = sys_root.join("devices/system/cpu");
        let online_path = cpu_dir.join("online");
        let online = read_cpu_list(&online_path)?;
        if online.is_empty() {
            return Err(PlacementError::NoCpus { path: online_path });
        }

        let mut node_of: BTreeMap<usize, usize> = BTreeMap::new();
        let node_dir = sys_root.join("devices/system/node");
        match std::fs::read_dir(&node_dir) {
            Ok(entries) => {
                for entry in entries {
                    let entry = entry.map_err(|source| PlacementError::Read {
                        path: node_dir.clone(),
                        source,
                    })?;
                    let name = entry.file_name();
                    let Some(node) = name
                        .to_str()
                        .and_then(|n| n.strip_prefix("node"))
                        .and_then(|n| n.parse::<usize>().ok())
                    else {
                        continue;
                    };
                    for cpu in read_cpu_list(&entry.path().join("cpulist"))? {
                        node_of.insert(cpu, node);
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(PlacementError::Read {
                    path: node_dir,
                    source,
                })
            }
        }

        let mut cpus = Vec::with_capacity(online.len());
        for &id in &online {
            let topo = cpu_dir.join(format!("cpu{id}/topology"));
            let mut siblings = vec![id];
            for file in ["core_cpus_list", "thread_siblings_list"] {
                let path = topo.join(file);
                match std::fs::read_to_string(&path) {
                    Ok(text) => {
                        siblings =
                            parse_cpu_list(&text).map_err(|reason| PlacementError::Parse {
                                path: path.clone(),
                                content: text.trim().to_owned(),
                                reason,
                            })?;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(source) => return Err(PlacementError::Read { path, source }),
                }
            }
            siblings.retain(|c| online.binary_search(c).is_ok());
            if !siblings.contains(&id) {
                siblings.push(id);
                siblings.sort_unstable();
            }
            cpus.push(Cpu {
                id,
                node: node_of.get(&id).copied().unwrap_or(0),
                core: siblings[0],
                siblings,
            });
        }
        Ok(Topology { cpus })
    }

    /// The online CPU numbers, ascending.
    pub fn online(&self) -> Vec<usize> {
        self.cpus.iter().map(|c| c.id).collect()
    }

    /// The NUMA nodes that have online CPUs, ascending.
    pub fn nodes(&self) -> Vec<usize> {
        let mut nodes: Vec<usize> = self.cpus.iter().map(|c| c.node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// The number of physical cores.
    pub fn cores(&self) -> usize {
        let mut cores: Vec<usize> = self.cpus.iter().map(|c| c.core).collect();
        cores.sort_unstable();
        cores.dedup();
        cores.len()
    }

    /// The CPU with this number, if online.
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id == id)
    }
}

/// How instances are spread over the CPUs. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Across NUMA nodes, then physical cores, then siblings.
    Spread,
    /// Fill node 0's physical cores, then node 1's, ...; siblings last.
    Pack,
    /// Every instance gets every non-reserved CPU; the kernel decides.
    None,
}

impl Policy {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Spread => "spread",
            Policy::Pack => "pack",
            Policy::None => "none",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = PlacementError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "spread" => Ok(Policy::Spread),
            "pack" => Ok(Policy::Pack),
            "none" => Ok(Policy::None),
            other => Err(PlacementError::UnknownPolicy {
                given: other.to_owned(),
            }),
        }
    }
}

/// Where one instance runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstancePlacement {
    /// The instance number, 0-based.
    pub id: usize,
    /// The CPUs it may run on (one for spread and pack).
    pub cpus: Vec<usize>,
    /// The NUMA node of those CPUs, for `cpuset.mems`; `None` when they span
    /// several nodes (policy `none` on a multi-node machine).
    pub node: Option<usize>,
}

/// The outcome of [`plan`]; recorded with every run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The policy used.
    pub policy: Policy,
    /// CPUs kept for the host and the load generator, as asked.
    pub reserved: Vec<usize>,
    /// One entry per instance, in instance order.
    pub instances: Vec<InstancePlacement>,
    /// Things a person reading the results should know: the reserved CPUs
    /// had to be used after all, or instances share CPUs.
    pub warnings: Vec<String>,
}

/// The CPUs kept for the host and the load generator by default: the first
/// online CPU (CPU 0) when there are at least two CPUs, none otherwise.
pub fn default_reserved(topo: &Topology) -> Vec<usize> {
    if topo.cpus.len() >= 2 {
        vec![topo.cpus[0].id]
    } else {
        Vec::new()
    }
}

/// Places `instances` single-threaded instances on `topo` with `policy`,
/// never on a `reserved` CPU unless no other CPU is left (then all CPUs are
/// used and a warning says so).
///
/// More instances than CPUs is allowed: slots are reused round-robin and a
/// warning says how many instances share CPUs.
pub fn plan(
    topo: &Topology,
    instances: usize,
    policy: Policy,
    reserved: &[usize],
) -> Result<Placement, PlacementError> {
    let online = topo.online();
    if online.is_empty() {
        return Err(PlacementError::EmptyTopology);
    }
    let mut reserved: Vec<usize> = reserved.to_vec();
    reserved.sort_unstable();
    reserved.dedup();
    for &cpu in &reserved {
        if topo.cpu(cpu).is_none() {
            return Err(PlacementError::UnknownCpu {
                cpu,
                online: format_cpu_list(&online),
            });
        }
    }

    let mut warnings = Vec::new();
    let mut available: Vec<&Cpu> = topo
        .cpus
        .iter()
        .filter(|c| !reserved.contains(&c.id))
        .collect();
    if available.is_empty() {
        warnings.push(format!(
            "no CPU is left after reserving {} for the host and the load generator; \
             instances run on all CPUs ({}) and share them with the host",
            format_cpu_list(&reserved),
            format_cpu_list(&online)
        ));
        available = topo.cpus.iter().collect();
    }

    let placed: Vec<InstancePlacement> = match policy {
        Policy::None => {
            let cpus: Vec<usize> = available.iter().map(|c| c.id).collect();
            let first = available[0].node;
            let node = available.iter().all(|c| c.node == first).then_some(first);
            (0..instances)
                .map(|id| InstancePlacement {
                    id,
                    cpus: cpus.clone(),
                    node,
                })
                .collect()
        }
        Policy::Spread | Policy::Pack => {
            let slots = order_slots(&available, policy);
            if instances > slots.len() {
                warnings.push(format!(
                    "{instances} instances on {} CPU(s) ({}): instances share CPUs (oversubscribed)",
                    slots.len(),
                    format_cpu_list(&available.iter().map(|c| c.id).collect::<Vec<_>>())
                ));
            }
            (0..instances)
                .map(|id| {
                    let cpu = slots[id % slots.len()];
                    InstancePlacement {
                        id,
                        cpus: vec![cpu.id],
                        node: Some(cpu.node),
                    }
                })
                .collect()
        }
    };

    Ok(Placement {
        policy,
        reserved,
        instances: placed,
        warnings,
    })
}

/// The order in which CPUs are handed out: first threads of every core
/// before second threads, and within one tier nodes interleaved (spread) or
/// one after the other (pack), cores ascending.
fn order_slots<'a>(available: &[&'a Cpu], policy: Policy) -> Vec<&'a Cpu> {
    let mut tiers: BTreeMap<usize, Vec<&'a Cpu>> = BTreeMap::new();
    for &cpu in available {
        tiers.entry(cpu.thread_rank()).or_default().push(cpu);
    }
    let mut slots = Vec::with_capacity(available.len());
    for (_, mut tier) in tiers {
        tier.sort_by_key(|c| (c.node, c.core, c.id));
        match policy {
            Policy::Spread => {
                let mut per_node: BTreeMap<usize, std::collections::VecDeque<&Cpu>> =
                    BTreeMap::new();
                for cpu in tier {
                    per_node.entry(cpu.node).or_default().push_back(cpu);
                }
                while per_node.values().any(|q| !q.is_empty()) {
                    for queue in per_node.values_mut() {
                        if let Some(cpu) = queue.pop_front() {
                            slots.push(cpu);
                        }
                    }
                }
            }
            Policy::Pack | Policy::None => slots.extend(tier),
        }
    }
    slots
}

/// Parses a Linux CPU list such as `"0-3,8"` (as in sysfs and `cpuset.cpus`)
/// into ascending, distinct CPU numbers. An empty or blank list is valid
/// (a memory-only NUMA node lists no CPUs); otherwise the rules are
/// [`tickpack_sys::parse_cpu_list`]'s.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    tickpack_sys::parse_cpu_list(text, None).map_err(|e| e.to_string())
}

fn read_cpu_list(path: &Path) -> Result<Vec<usize>, PlacementError> {
    let text = std::fs::read_to_string(path).map_err(|source| PlacementError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_cpu_list(&text).map_err(|reason| PlacementError::Parse {
        path: path.to_owned(),
        content: text.trim().to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip_in_linux_format() {
        assert_eq!(parse_cpu_list("0-3,8\n").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpu_list("\n").unwrap(), Vec::<usize>::new());
        assert_eq!(format_cpu_list(&[8, 0, 1, 2, 3]), "0-3,8");
        assert_eq!(format_cpu_list(&[1]), "1");
        assert_eq!(format_cpu_list(&[0, 2, 4, 5]), "0,2,4-5");
        assert!(parse_cpu_list("3-1").unwrap_err().contains("backwards"));
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn an_empty_topology_is_an_error_not_a_panic() {
        let err = plan(&Topology { cpus: Vec::new() }, 3, Policy::Spread, &[]).unwrap_err();
        assert_eq!(err.to_string(), "the CPU topology holds no CPU");
    }

    #[test]
    fn policy_names_parse_and_print() {
        for p in [Policy::Spread, Policy::Pack, Policy::None] {
            assert_eq!(p.name().parse::<Policy>().unwrap(), p);
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.name())
            );
        }
        let err = "packed".parse::<Policy>().unwrap_err().to_string();
        assert!(err.contains("packed") && err.contains("spread"), "{err}");
    }
}
