//! What one server is told and what it counts: [`ServerConfig`] (its
//! validated settings), [`Counters`] (monotonic totals for stats and
//! metrics) and [`HEALTH_CHECK_RATE`]. Plain data, read by
//! [`crate::server::Server`].

use tickpack_wire::HealthKey;

use crate::flood::{FloodCounters, FloodLimits, Rate};
use crate::world::CostProfile;

/// Validated settings of one server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub tick_hz: tickpack_wire::TickRate,
    pub max_players: u8,
    pub bots: u8,
    /// Bytes of each snapshot datagram (padded up to it).
    pub snapshot_len: u16,
    /// Server name shown by A2S_INFO.
    pub name: String,
    /// Map name shown by A2S_INFO.
    pub map: String,
    /// Game port shown by A2S_INFO (0 until the I/O layer sets the port it
    /// bound).
    pub port: u16,
    pub cost: CostProfile,
    /// A player not heard from for this long is dropped.
    pub timeout_us: u64,
    pub seed: u64,
    /// What unproven sources may ask, per source and in all (see [`crate::flood`]).
    pub flood: FloodLimits,
    /// The host's health-check key: a stats request whose proof it
    /// verifies, with a counter above every check before it, is answered
    /// from a budget of its own ([`HEALTH_CHECK_RATE`]), never from the one
    /// strangers share; one whose counter is not above is refused
    /// ([`tickpack_wire::CheckGate`]).
    pub health_key: Option<HealthKey>,
}

/// How many of the host's health checks a server answers (per second,
/// and back to back): the host sends about one a second.
pub const HEALTH_CHECK_RATE: Rate = Rate::new(20, 20);

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            tick_hz: tickpack_wire::TickRate::DEFAULT,
            max_players: 12,
            bots: 0,
            snapshot_len: 2000,
            name: "tickpack reference server".into(),
            map: "tp_arena".into(),
            port: 0,
            cost: CostProfile::default(),
            timeout_us: 5_000_000,
            seed: 1,
            flood: FloodLimits::default(),
            health_key: None,
        }
    }
}

impl ServerConfig {
    /// Tick interval in microseconds.
    pub fn tick_interval_us(&self) -> u64 {
        self.tick_hz.interval_us()
    }
}

/// Counters since start (monotonic), for stats and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub packets_in: u64,
    pub packets_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Datagrams that did not decode, came from strangers, or were refused.
    pub malformed: u64,
    /// Replies withheld because they would have been larger than the request
    /// of an unproven source.
    pub amplification_drops: u64,
    pub connects: u64,
    pub disconnects: u64,
    pub commands: u64,
    pub overruns: u64,
    pub ticks: u64,
    /// Requests from unproven sources dropped by the flood limits.
    pub flood: FloodCounters,
    /// The host's health checks (their proof verified, their counter new)
    /// answered, and dropped past [`HEALTH_CHECK_RATE`].
    pub health_checks: u64,
    pub health_limited: u64,
    /// Stats requests refused because their check counter was not above
    /// the last check admitted: replays of a check, or older checks. They
    /// cost no token of any budget.
    pub health_stale: u64,
}
