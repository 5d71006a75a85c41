//! The game query layer: asking a game server about itself with its own
//! query protocol, sans-I/O, once for every user (the host's health check,
//! `tickpack probe` and `bench --probe`, the Agones sidecar, the OpenArena
//! referee).
//!
//! Deliberately not here: sockets, clocks, threads, histograms, what a
//! caller concludes (liveness, QoS, Agones calls). The byte codecs are not
//! here either: `tickpack_q3::query` and `tickpack_wire::a2s` own them;
//! this layer knows what the fields mean.
//!
//! - [`protocol`]: [`Protocol`] (`q3`, `a2s`), [`Query`] (one request and
//!   the answer it expects: `getinfo`, `getstatus`, `A2S_INFO`). One
//!   closed enum, each protocol in its own file: [`q3`] (ioquake3,
//!   OpenArena, DarkPlaces) and [`a2s`].
//! - [`heard`]: [`Heard`] (a datagram read: an answer, an A2S challenge,
//!   or not ours), which every protocol's decoder returns.
//! - [`facts`]: [`Facts`], what an answer says (name, map, players, max
//!   players, bots, and `getstatus`'s roster of [`Player`]s).
//! - [`number`]: the one rule for numbers in answers ([`number::count`]:
//!   trimmed, `u32`, saturating, never a panic).
//! - [`session`]: [`Session`], one target's queries as a state machine in
//!   quinn's shape (schedule, one query in flight, timeout, the A2S
//!   challenge round trip, round trips, [`Counts`]).
//!
//! Order for a caller: [`Session::new`] per target (a [`Query`], a
//! [`Schedule`], the first due time); then at every wake-up
//! [`Session::handle`] each datagram from that target, then
//! [`Session::handle_timeout`], then [`Session::poll_transmit`] until it
//! returns false, sending each datagram; sleep until
//! [`Session::next_timeout`] or a datagram. [`Event`]s say what happened;
//! [`Event::Answered`] carries the round trip and the [`Facts`].

pub mod a2s;
pub mod facts;
pub mod heard;
pub mod number;
pub mod protocol;
pub mod q3;
pub mod session;

pub use facts::{strip_colors, Facts, Player};
pub use heard::Heard;
pub use protocol::{Protocol, Query};
pub use session::{query_id, Counts, Event, Schedule, Session, MAX_CHALLENGES};
