//! The reference game server's logic: the game world and the server state
//! machine around it. No sockets, no clock, no threads: the caller passes
//! `now` in and takes datagrams out, so everything here runs on a virtual
//! clock in tests.
//!
//! - [`world`]: the map, movement with collision, hit traces, per-player
//!   visibility, bots, and the [`world::CostProfile`] knob that sets how much
//!   CPU a tick costs.
//! - [`server`]: connections (challenge, token, accept), commands applied at
//!   the next tick, per-player delta snapshots, A2S queries, stats, and the
//!   anti-amplification rule.
//! - [`config`]: [`ServerConfig`] (a server's validated settings) and
//!   [`Counters`] (its monotonic totals).
//! - [`flood`]: token buckets per source and global budgets for what
//!   unproven sources may ask (hello, connect, A2S, stats, ping).
//! - [`recent`]: [`RecentWindow`], tick lateness and frame time over the
//!   last second or two (the stats' recent window, the guard's signals).
//! - [`tick_clock`]: [`TickClock`], when the next tick is due (schedule
//!   slots, overruns, skipped slots), on a clock the caller reads.
//!
//! Order: [`Server::new`], then per loop iteration [`Server::handle`] for
//! each datagram, [`Server::tick`] when a tick is due and
//! [`Server::record_frame`] after it, and [`Server::drain_transmits`].

pub mod config;
pub mod flood;
pub mod recent;
pub mod server;
pub mod tick_clock;
pub mod world;

pub use config::{Counters, ServerConfig};
pub use flood::{Ask, FloodCounters, FloodLimits, Rate};
pub use recent::RecentWindow;
pub use server::Server;
pub use tick_clock::{Advance, TickClock};
