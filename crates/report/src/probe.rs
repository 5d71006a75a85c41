//! The `tickpack probe` result document (`tickpack.probe/1`) and the query
//! figures a bench step records.
//!
//! `query_latency_us` is the round trip of a game's own query protocol
//! (Quake III `getinfo`, Valve `A2S_INFO`): from sending the query to its
//! reply. It is NOT transaction latency: no game state changes, no tick is
//! waited for by design. It grows when a server that answers queries from
//! its main loop is starved of CPU (docs/methodology.md).

use serde::{Deserialize, Serialize};

use crate::system::SystemInfo;
use crate::Percentiles;

/// Schema id of `tickpack probe --json`.
pub const PROBE_SCHEMA: &str = "tickpack.probe/1";

/// What happened to the queries sent to one or more targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct QueryCounts {
    /// Queries whose outcome is known: `answered + lost`. (Queries still
    /// waiting when an interrupted run ended are not counted.)
    pub sent: u64,
    /// Answered within the timeout (a round trip recorded).
    pub answered: u64,
    /// Not answered within the timeout, including `late` ones.
    pub lost: u64,
    /// Of the lost, replies that came after the timeout (not samples).
    pub late: u64,
    /// A2S: `S2C_CHALLENGE` round trips before the answer (each query that
    /// got one was sent again with it; its round trip is the re-send's).
    pub challenges: u64,
}

impl QueryCounts {
    pub fn add(&mut self, o: &QueryCounts) {
        self.sent += o.sent;
        self.answered += o.answered;
        self.lost += o.lost;
        self.late += o.late;
        self.challenges += o.challenges;
    }
}

/// What a server said about itself in its last reply.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ServerFacts {
    pub name: String,
    pub map: String,
    /// Clients, humans and bots; `null` when the protocol's answer cannot
    /// be trusted to say (gamedig's Quake 1/2/3 always say 0).
    pub players: Option<u32>,
    pub max_players: u32,
    pub bots: u32,
}

/// One target of a probe run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeTarget {
    pub address: String,
    /// From the last reply; absent if it never answered.
    pub server: Option<ServerFacts>,
    /// Query round trips (NOT transaction latency), microseconds.
    pub query_latency_us: Percentiles,
    pub queries: QueryCounts,
    /// HdrHistogram V2 compressed, base64, of `query_latency_us`.
    pub histogram: String,
}

/// The document `tickpack probe --json` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub schema: String,
    pub tickpack_version: String,
    pub system: SystemInfo,
    /// "q3" (`getinfo`) or "a2s" (`A2S_INFO`).
    pub protocol: String,
    /// Seconds between queries to one target.
    pub interval_s: f64,
    /// A reply later than this (seconds) is lost, not a sample.
    pub timeout_s: f64,
    /// Seconds probed: the planned duration, or less if interrupted.
    pub duration_s: f64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Every target's query round trips merged (NOT transaction latency),
    /// microseconds.
    pub query_latency_us: Percentiles,
    pub queries: QueryCounts,
    /// CPU time the prober itself used (user + system), seconds.
    pub prober_cpu_s: f64,
    pub targets: Vec<ProbeTarget>,
}
