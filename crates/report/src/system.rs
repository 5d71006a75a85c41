//! The context recorded with every result: which machine, which kernel, how
//! many cores, which tickpack.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SystemInfo {
    pub cpu_model: String,
    pub logical_cpus: usize,
    pub kernel: String,
    /// Unix time (seconds) when the result was made.
    pub unix_time: u64,
}

impl SystemInfo {
    /// Reads the running machine (Linux /proc; empty strings elsewhere).
    pub fn collect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default();
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        Self {
            cpu_model,
            logical_cpus: online_cpus(),
            kernel: read("/proc/sys/kernel/osrelease"),
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }
}

/// The machine's online logical CPUs, from `/sys/devices/system/cpu/online`
/// (not the process's affinity: the bench pins itself to the load
/// generator's CPUs, and the machine is not the CPUs it may run on); the
/// process's available parallelism where that file cannot be read.
fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| tickpack_sys::parse_cpu_list(&s, None).ok())
        .map(|cpus| cpus.len())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get()))
}
