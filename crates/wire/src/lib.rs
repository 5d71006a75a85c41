//! tickpack's wire protocol: every datagram the reference game server and the
//! emulated players exchange, plus the Valve server query (A2S) on the same port.
//!
//! This crate has no sockets, no clock and no threads. Callers pass bytes and
//! the current time in (`now_us`, microseconds on any monotonic clock) and get
//! values or bytes out. It is the only place that knows the byte layout.
//!
//! # Main types
//!
//! - [`Packet`]: one tickpack datagram (`Hello`, `Challenge`, `Connect`,
//!   `Accepted`, `Refused`, `Command`, `Snapshot`, `Ping`, `Pong`,
//!   `StatsRequest`, `Stats`, `Disconnect`). [`Packet::encode`] appends to a
//!   `Vec<u8>`; [`Packet::decode`] borrows from the input and never panics.
//! - [`Datagram`]: what arrived on the server port: a tickpack packet or an
//!   A2S query ([`a2s::Query`]). Use [`Datagram::decode`] on the server.
//! - [`TokenKey`]: issues and checks connect tokens bound to the sender's
//!   address and a time window; unforgeable without the server's secret.
//! - [`HealthKey`]: the host's health checks, which a server answers from a
//!   budget of their own (strangers' stats requests cannot drain it); a
//!   server's [`CheckGate`] admits each check once (a replay is refused).
//! - [`delta`]: entity lists delta-encoded against an acknowledged baseline
//!   (one of the last [`DELTA_HISTORY`] snapshots).
//! - [`TickRate`]: ticks per second and the interval that follows.
//!
//! # Connection, in order
//!
//! 1. client → `Hello` (padded to [`HELLO_MIN_LEN`] bytes);
//! 2. server → `Challenge` carrying a token (smaller than the hello);
//! 3. client → `Connect` with the token (padded to [`CONNECT_MIN_LEN`]);
//! 4. server → `Accepted`, or `Refused` with a [`RefuseReason`].
//!
//! Until step 4 succeeds, the server must never send a source more bytes
//! than it received from it: every reply to an unproven source is at most
//! the size of the request ([`Packet::max_reply_len`] documents each case),
//! so a spoofed 40-byte packet cannot buy a 2000-byte snapshot aimed at a
//! victim.
//!
//! # What it deliberately does not do
//!
//! Encryption, reliability and fragmentation: datagrams are self-contained
//! and below a typical 1500-byte MTU only when the configured snapshot size
//! is; larger snapshots rely on IP fragmentation, as many real games do.

pub mod a2s;
mod codec;
pub mod delta;
mod health;
mod packet;
mod tick;
mod token;
mod types;

pub use codec::DecodeError;
pub use health::{
    CheckGate, CheckProof, CheckVerdict, HealthKey, CHECK_PROOF_LEN, CHECK_TAG_LEN, HEALTH_KEY_ENV,
};
pub use packet::*;
pub use tick::{TickRate, DELTA_HISTORY};
pub use token::{Token, TokenKey, TOKEN_LEN};
pub use types::*;
