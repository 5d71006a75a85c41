//! The typed configuration a host runs: the [`FleetConfig`] the supervisor
//! is given (backend, network path, placement, every instance's
//! [`InstanceSpec`], the [`RestartPolicy`], batch work) and its error.
//! Mechanism inputs only: the host file (TOML, text sizes and CPU lists,
//! the rules that check them) is read and resolved into this by the
//! `tickpack-fleet` crate, and the bench builds it there from typed values.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::guard::batch::BatchSpec;
use crate::guard::BatchControl;
pub use crate::launch::Health;
use crate::launch::ServerSpec;
use crate::netpath::NetKind;
use crate::placement::Policy;

/// Where the instances run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Plain processes on the host network, distinct ports (the native baseline).
    Process,
    /// Own network, mount, PID and UTS namespaces, unprivileged user, cgroup.
    Netns,
}

impl Backend {
    /// The name a host file and the result documents use.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Process => "process",
            Backend::Netns => "netns",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "process" => Ok(Backend::Process),
            "netns" => Ok(Backend::Netns),
            _ => Err(format!("unknown backend {s:?} (expected process or netns)")),
        }
    }
}

/// Restart behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RestartPolicy {
    /// Give up after this many crashes...
    pub max_crashes: u32,
    /// ...within this many seconds.
    pub window_s: f64,
    /// First restart delay; doubles per crash in the window.
    pub backoff_ms: u64,
    pub max_backoff_ms: u64,
    /// How long an instance may take to be ready after a start (to answer
    /// its query, print its log line, bind its port; a game loads its map
    /// and bots first, slower when many start at once on few cores) before
    /// it is killed, reported with its last output and restarted: its
    /// game's `[ready]` `timeout_s` + `per_server_s` x the instances.
    #[serde(default = "default_start_timeout_s")]
    pub start_timeout_s: f64,
}

/// How long an instance may take to be ready when a record names no
/// game's limit (`start_timeout_s`).
pub const DEFAULT_START_TIMEOUT_S: f64 = 15.0;

fn default_start_timeout_s() -> f64 {
    DEFAULT_START_TIMEOUT_S
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            max_crashes: 5,
            window_s: 30.0,
            backoff_ms: 100,
            max_backoff_ms: 5_000,
            start_timeout_s: default_start_timeout_s(),
        }
    }
}

/// One instance's resolved settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceSpec {
    pub id: u32,
    /// What runs (recorded as `command` and `health`).
    #[serde(flatten)]
    pub server: ServerSpec,
    pub memory_bytes: Option<u64>,
    pub cpu_quota: Option<f64>,
    /// Working directory size limit (a tmpfs of this size).
    #[serde(default)]
    pub disk_bytes: Option<u64>,
    /// The bots its command asks for (its game's `{bots}`), shown in the
    /// status beside those its query reports; `None`: not a game's
    /// command, or a game without bots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bots: Option<u16>,
}

/// A validated host configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetConfig {
    pub name: String,
    pub run_dir: PathBuf,
    pub backend: Backend,
    pub net: NetKind,
    pub range: String,
    pub port: u16,
    pub placement: Policy,
    /// `None`: the default (CPU 0 when there are two or more).
    pub reserved_cpus: Option<Vec<usize>>,
    pub health: Health,
    pub restart: RestartPolicy,
    pub instances: Vec<InstanceSpec>,
    /// Host ports (TCP and UDP) instances may open connections to (netns).
    #[serde(default)]
    pub allow_host_ports: Vec<u16>,
    /// The game every instance's spec was built from; check it against
    /// the machine ([`tickpack_game::GameServer::check_system`]) before
    /// starting. Not recorded: the specs are.
    #[serde(skip)]
    pub game: tickpack_game::GameServer,
    /// Batch work beside the servers (`--batch`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<BatchSpec>,
    /// An adopted batch cgroup (`--batch-cgroup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_cgroup: Option<PathBuf>,
    /// How the batch is held back.
    #[serde(default)]
    pub batch_control: BatchControl,
    /// The cap of one instance log file in bytes (`log_size`); `ID.log.1`
    /// holds the one before.
    #[serde(default = "default_log_bytes")]
    pub log_bytes: u64,
    /// Source addresses set aside for load generators
    /// ([`crate::supervisor::Supervisor::source_addresses`]).
    #[serde(default)]
    pub source_addrs: u32,
    /// The pids limit (`pids.max`) of every instance's cgroup and the
    /// batch's (`pids`).
    #[serde(default)]
    pub pids_max: Option<u64>,
}

fn default_log_bytes() -> u64 {
    crate::spawn::log::DEFAULT_LOG_BYTES
}

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("bad host configuration: {0}")]
    Invalid(String),
}

impl From<tickpack_game::launch::LaunchError> for FleetError {
    fn from(e: tickpack_game::launch::LaunchError) -> FleetError {
        let tickpack_game::launch::LaunchError::Invalid(m) = e;
        FleetError::Invalid(m)
    }
}

/// Most loopback source addresses (process backend): 127.0.0.2 up.
pub const MAX_LOOPBACK_SOURCES: u32 = 250;

/// The network path when none is named: veth, for `host up` and `bench`
/// alike. One rule, so a host runs on the path its density was measured
/// on, and the strictest one: a routed point-to-point link per instance,
/// no shared L2 segment, so instances cannot reach each other's ports
/// (docs/design.md, what an instance can and cannot do).
pub const DEFAULT_NET: NetKind = NetKind::Veth;
