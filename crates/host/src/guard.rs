//! Batch work as a tenant of the host, and the mechanism that holds it to
//! the CPU its policy allows. The policy itself (the QoS guard's
//! controller) is not here: it is `tickpack-guard`'s, handed to the
//! supervisor through [`policy::BatchPolicy`].
//!
//! - [`batch`]: `--batch CMD` (its own cgroup under the host's, on the
//!   server CPUs, an unprivileged user, supervised) and `--batch-cgroup`
//!   (an existing cgroup, adopted); parsing and checking the command.
//! - [`policy`]: what the supervisor and the policy say to each other
//!   (signals, allowance, decision, instance move) and the
//!   [`policy::BatchPolicy`] trait.
//! - [`cpu_time`]: the server cores' idle and the machine's steal in a
//!   period, from `/proc/stat`'s text.
//!
//! The supervisor (`supervisor/guard_loop.rs`) gathers the signals every
//! [`policy::PERIOD`], asks the policy, applies the allowance with the
//! cgroup actuators ([`crate::cgroup::Cgroup::set_cpu_quota`], `set_cpus`,
//! `set_idle`), logs every decision as a host event and shows the last
//! ones in the status.

pub mod batch;
pub mod cpu_time;
pub mod policy;

use serde::{Deserialize, Serialize};

pub use cpu_time::{CpuPeriod, CpuSampler};
pub use policy::{Action, BatchPolicy, BatchPolicyFactory, Decision};

/// How the host treats its batch work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchControl {
    /// No control: the batch competes with the servers as any process.
    #[default]
    None,
    /// SCHED_IDLE only (the kernel's own answer): the batch runs when the
    /// server CPUs would otherwise idle.
    Idle,
    /// The guard: SCHED_IDLE plus a CPU quota and CPU set its policy
    /// (`tickpack-guard`'s controller) grows while the servers have slack
    /// and cuts when they lose it.
    Guard,
}

impl BatchControl {
    pub fn as_str(self) -> &'static str {
        match self {
            BatchControl::None => "none",
            BatchControl::Idle => "idle",
            BatchControl::Guard => "guard",
        }
    }
}

impl std::fmt::Display for BatchControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for BatchControl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(BatchControl::None),
            "idle" => Ok(BatchControl::Idle),
            "guard" => Ok(BatchControl::Guard),
            _ => Err(format!(
                "unknown batch control {s:?} (expected none, idle or guard)"
            )),
        }
    }
}

/// The guard's part of `host status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardStatus {
    /// none | idle | guard.
    pub control: String,
    /// The batch tenants: command, pid, state, restarts.
    pub batch: Vec<batch::BatchStatus>,
    /// The allowance now (guard only), cores; `None`: unlimited.
    pub quota_cores: Option<f64>,
    pub cpus: Vec<usize>,
    /// The batch cgroup's CPU use over the last period, percent of a core.
    pub batch_cpu_percent: Option<f64>,
    /// System CPU pressure (`some avg10`), or why it is unavailable.
    pub psi_some_avg10: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_unavailable: Option<String>,
    /// The batch cgroup's own pressure, or why there is none (v1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_pressure: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_pressure_unavailable: Option<String>,
    /// The servers' own slack (median of the last periods with the batch
    /// at zero), once measured; below the growth band it is the line the
    /// batch is judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_slack: Option<f64>,
    /// The largest share of the last period any CPU lost to steal (the
    /// hypervisor ran other guests), 0-1; `None` before the first period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal: Option<f64>,
    pub nr_throttled: u64,
    pub throttled_ms: u64,
    /// Decisions so far by action (grow, hold, cut, zero).
    pub decisions: std::collections::BTreeMap<String, u64>,
    /// The last decisions, newest last.
    pub last: Vec<Decision>,
}
