//! The query-latency probe: asks game servers their own query protocol
//! (Quake III `getinfo`, Valve `A2S_INFO`, or one of gamedig's) at a polite rate and records
//! each round trip, per target, in an HdrHistogram of microseconds.
//!
//! Many engines answer queries from their main loop, so a query's round
//! trip grows when the server is starved of CPU: a view of a server nobody
//! here wrote, from outside, without players. It is NOT transaction latency
//! (no game state changes), and it says nothing about servers that answer
//! queries on another thread.
//!
//! - The queries themselves (what to send, what an answer says, one query
//!   in flight, timeouts, the A2S challenge) are the game query layer's,
//!   `tickpack_game::query`; [`Protocol`] is its.
//! - [`target`]: [`QueryTarget`], one target's query session on the
//!   prober's clock and its figures (round trips, the server's facts);
//!   sans-I/O, driven with the time passed in (tested on a virtual clock).
//! - [`result`]: the run as `tickpack.probe/1` (`tickpack probe --json`)
//!   and the merged figures of a bench step.
//! - [`run`]: the I/O loop ([`run::run`]): one connected UDP socket per
//!   target, `poll(2)` until the next deadline, on the caller's CPUs.
//! - [`protocol`]: [`ProbeProtocol`], what a run asks: one of the query
//!   layer's protocols, or a gamedig protocol (`gamedig:NAME`).
//! - [`gamedig`]: the loop for gamedig protocols: the same schedule and
//!   counts, each query a call of `tickpack-gamedig-query`'s driver (a
//!   thread per call, our own deadline).
//! - [`loop_clock`]: what both loops share about time (the drain after an
//!   interruption, the thread's CPU time).
//! - [`figures`]: [`TargetFigures`], one target's figures as a run hands
//!   them back, whoever asked.

pub mod figures;
pub mod gamedig;
pub mod loop_clock;
pub mod protocol;
pub mod result;
pub mod run;
pub mod target;

pub use figures::TargetFigures;
pub use protocol::ProbeProtocol;
pub use result::{merged, to_result};
pub use run::{run, Live, ProbeConfig, ProbeError, ProbeOutcome};
pub use target::{ProbeSettings, QueryTarget};
pub use tickpack_game::query::Protocol;
