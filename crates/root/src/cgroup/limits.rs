//! What an instance may use ([`Limits`], with its validation) and what it
//! has used ([`Usage`]); the same on both cgroup versions.

use serde::{Deserialize, Serialize};

use super::{CgroupError, Controller, CPU_PERIOD_US, MIN_CPU_QUOTA_US};

/// What one instance may use. `None` means "no limit" (and, for `cpus`,
/// "do not join the cpuset hierarchy").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// CPUs it may run on (`cpuset.cpus`). The memory nodes
    /// (`cpuset.mems`) are copied from the parent, unless given to
    /// [`Cgroup::create_on_nodes`](super::Cgroup::create_on_nodes).
    pub cpus: Option<Vec<usize>>,
    /// CPU time as a number of cores, e.g. 0.5 is 50 ms every 100 ms.
    pub cpu_quota: Option<f64>,
    /// Memory limit in bytes; swap is forbidden too where the kernel allows.
    pub memory_bytes: Option<u64>,
    /// Most processes and threads at once (`pids.max`): a fork beyond it
    /// fails with EAGAIN. Only with a limit is the `pids` controller needed.
    pub pids_max: Option<u64>,
}

impl Limits {
    /// The CFS quota in microseconds per [`CPU_PERIOD_US`] for
    /// [`Limits::cpu_quota`]: 0.5 cores gives 50000.
    pub fn quota_us(&self) -> Result<Option<u64>, CgroupError> {
        let Some(cores) = self.cpu_quota else {
            return Ok(None);
        };
        if !cores.is_finite() || cores <= 0.0 {
            return Err(CgroupError::InvalidLimits {
                reason: format!("a CPU quota of {cores} cores is not a positive number"),
            });
        }
        let quota = (cores * CPU_PERIOD_US as f64).round();
        if quota < MIN_CPU_QUOTA_US as f64 {
            return Err(CgroupError::InvalidLimits {
                reason: format!(
                    "a CPU quota of {cores} cores is below the kernel's minimum of {} cores",
                    MIN_CPU_QUOTA_US as f64 / CPU_PERIOD_US as f64
                ),
            });
        }
        Ok(Some(quota as u64))
    }

    pub(super) fn validate(&self, mems: Option<&[usize]>) -> Result<Option<u64>, CgroupError> {
        let bad = |reason: &str| CgroupError::InvalidLimits {
            reason: reason.to_owned(),
        };
        if self.cpus.as_ref().is_some_and(Vec::is_empty) {
            return Err(bad("the CPU set is empty"));
        }
        if mems.is_some_and(<[usize]>::is_empty) {
            return Err(bad("the memory node set is empty"));
        }
        if self.memory_bytes == Some(0) {
            return Err(bad("a memory limit of 0 bytes"));
        }
        if self.pids_max == Some(0) {
            return Err(bad("a pids limit of 0 processes"));
        }
        self.quota_us()
    }

    pub(super) fn needs(&self, quota: Option<u64>, mems: Option<&[usize]>) -> Vec<Controller> {
        let mut needed = Vec::new();
        if quota.is_some() {
            needed.push(Controller::Cpu);
        }
        needed.push(Controller::Cpuacct);
        if self.cpus.is_some() || mems.is_some() {
            needed.push(Controller::Cpuset);
        }
        needed.push(Controller::Memory);
        if self.pids_max.is_some() {
            needed.push(Controller::Pids);
        }
        needed
    }
}

/// What an instance has used so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// CPU time of all its processes, in nanoseconds.
    pub cpu_usage_ns: u64,
    /// Memory charged to it now, in bytes (page cache included).
    pub memory_bytes: u64,
    /// How many of its processes the OOM killer has killed.
    pub oom_kills: u64,
}
