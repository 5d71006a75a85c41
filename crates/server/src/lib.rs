//! The reference game server's driver and the metrics endpoint.
//!
//! [`tickpack_sim::Server`] is the sans-I/O state machine and
//! [`tickpack_sim::TickClock`] the pure schedule; this crate drives them
//! with real sockets and a real clock, as `quinn` drives `quinn-proto`:
//!
//! - [`driver`]: [`run`] binds, pins, and loops (wait for the tick or a
//!   datagram, drain, tick, send) until told to stop.
//! - [`drain`]: the bounded receive drain (socket empty, budget or the
//!   tick's deadline), pure and tested without sockets.
//! - `paths`: the receive paths: the listening socket and a connected
//!   socket per player, read first, so a flood queues only behind itself.
//! - [`live`]: [`Live`], what the running server shows another thread
//!   (ticks, players, recent tick p99; the Agones reporter reads it).
//! - [`metrics`]: Prometheus families of the server and of a host, encoded
//!   by the `prometheus` crate, served over HTTP by `tiny_http` from a copy
//!   the owner refreshes, so serving never delays a tick.
//!
//! It prints nothing and handles no signals: the caller passes a stop flag
//! and prints what [`run`] returns.

pub mod drain;
pub mod driver;
pub mod error;
pub mod live;
pub mod metrics;
mod paths;

pub use driver::{run, Options, Stopped};

pub use error::ServerError;
pub use live::Live;
