//! The words between the supervisor and its batch policy: the signals it
//! gathers every [`PERIOD`], the allowance and decision the policy gives
//! back, an instance move, and the [`BatchPolicy`] trait a policy
//! implements. The host only gathers and applies; what to decide lives
//! outside it (the QoS guard's controller is `tickpack-guard`), and the
//! caller hands it in ([`crate::supervisor::Supervisor::start_with_policy`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How often the guard decides.
pub const PERIOD: Duration = Duration::from_secs(1);

/// One instance's figures for one period. `None` where the instance's
/// server does not report the figure (not missing: not measured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceSignal {
    pub id: u32,
    /// The server CPU it runs on (its first).
    pub cpu: usize,
    /// It answered its health check in the last period.
    pub answered: bool,
    /// p99 tick lateness over the recent window (reference server).
    pub tick_lag_us: Option<u32>,
    /// p99 frame time over the recent window (reference server).
    pub frame_us: Option<u32>,
    /// Behind the tick schedule in the period (a reference server without
    /// the recent window).
    #[serde(default)]
    pub behind_us: Option<u32>,
    /// Longest query round trip in the period (any game with a query).
    pub query_us: Option<u32>,
}

/// Everything the policy sees in one period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    pub instances: Vec<InstanceSignal>,
    /// System CPU pressure, `some avg10` percent; `Err` says why it is
    /// unavailable.
    pub psi_some_avg10: Result<f64, String>,
    /// The players' p99 transaction latency over the period, when players
    /// run beside the guard and report it (the bench's do); `None`: no
    /// players report (not a missing signal).
    #[serde(default)]
    pub players_p99_us: Option<u32>,
    /// Idle time of the server CPUs in the period, in cores (`None`: not
    /// measured). Read while the allowance is zero it is the headroom the
    /// batch may start from.
    #[serde(default)]
    pub idle_cores: Option<f64>,
    /// The largest share of the period any CPU of the machine lost to
    /// steal (the hypervisor running other guests), 0-1; `None`: not
    /// measured.
    #[serde(default)]
    pub steal: Option<f64>,
}

/// What the batch may use from now on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Allowance {
    /// CPU quota in cores; 0 means stopped.
    pub quota_cores: f64,
    /// The server CPUs it may run on (never empty: the kernel needs one;
    /// with a zero quota it does not run there).
    pub cpus: Vec<usize>,
}

/// What the policy did this period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Grow,
    Hold,
    Cut,
    /// To zero: a limit crossed, PSI emergency, or a signal missing.
    Zero,
}

/// One decision, with its reason in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Virtual time of the decision, milliseconds.
    pub at_ms: u64,
    pub action: Action,
    pub allowance: Allowance,
    /// Worst slack over the instances (None when no figure was there).
    pub slack: Option<f64>,
    pub reason: String,
}

/// An instance to move to another server core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub instance: u32,
    pub from: usize,
    pub to: usize,
}

/// What decides the batch's allowance each period (the QoS guard's
/// controller is one, in `tickpack-guard`). Sans-I/O: the supervisor
/// gathers the [`Signals`] and applies the [`Decision`].
pub trait BatchPolicy: Send {
    /// The allowance now, cores (before the first period: the one the
    /// batch starts with).
    fn quota_cores(&self) -> f64;

    /// The servers' tick rate, learnt from their first stats: the limits
    /// judged from now on are those of `tick_hz`.
    fn set_tick_hz(&mut self, tick_hz: tickpack_wire::TickRate);

    /// One period: decide from `signals` at virtual time `at` (since the
    /// guard started).
    fn decide(&mut self, at: Duration, signals: &Signals) -> Decision;

    /// The servers' own slack without the batch, once measured (shown in
    /// the status).
    fn baseline(&self) -> Option<f64>;

    /// An instance to move to another of the server CPUs (at most one per
    /// call), or `None`.
    fn plan_move(&self, signals: &Signals) -> Option<Move>;
}

/// Makes the batch policy once the supervisor knows the server CPUs the
/// batch may use.
pub type BatchPolicyFactory = Box<dyn FnOnce(Vec<usize>) -> Box<dyn BatchPolicy> + Send>;
