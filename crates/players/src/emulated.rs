//! What the I/O loop ([`crate::run`]) needs of one emulated player,
//! whatever game it speaks: a sans-I/O state machine driven by deadlines
//! and datagrams. [`crate::Player`] speaks tickpack's protocol;
//! [`crate::q3::Q3Player`] speaks Quake III's.

use std::net::SocketAddr;

use tickpack_wire::TickRate;

use crate::recorder::Recorder;

/// How a run ends, for [`Emulated::finish`]: the same for every player of
/// the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunEnd {
    /// Now (monotonic microseconds).
    pub now_us: u64,
    /// Where the measured span ends: its planned end, or earlier where the
    /// run was interrupted.
    pub span_end_us: u64,
    /// The tick rate to assume if a player never learned its server's.
    pub hint_tick_hz: TickRate,
}

/// One emulated player of any game. The order of calls is the same for
/// every game: [`Emulated::poll_transmit`] until it returns `false` when
/// [`Emulated::next_deadline`] has come or after [`Emulated::handle`];
/// every datagram from the server to [`Emulated::handle`]; a socket that
/// says "port unreachable" to [`Emulated::unreachable`];
/// [`Emulated::finish`] once at the end.
pub trait Emulated {
    /// The server this player plays on.
    fn target(&self) -> SocketAddr;
    /// When this player next wants [`Emulated::poll_transmit`] called
    /// (monotonic microseconds; `u64::MAX`: never).
    fn next_deadline(&self) -> u64;
    /// Writes the next due datagram into `out` (cleared first) and returns
    /// `true`, or returns `false` when nothing is due at `now_us`. A player
    /// with a presence plan joins and leaves here too (its handshake, its
    /// goodbye: [`crate::presence`]).
    fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>, rec: &mut Recorder) -> bool;
    /// Processes one datagram from the server.
    fn handle(&mut self, now_us: u64, data: &[u8], rec: &mut Recorder);
    /// The socket reported "port unreachable": before the first connection
    /// the player gives up with `why`; after it, it reconnects.
    fn unreachable(&mut self, now_us: u64, why: String, rec: &mut Recorder);
    /// Settles the counters at the end of the run and writes the goodbye
    /// datagram into `out` if connected (returns whether it did).
    fn finish(&mut self, end: &RunEnd, out: &mut Vec<u8>, rec: &mut Recorder) -> bool;
    /// In a session now.
    fn is_connected(&self) -> bool;
    /// Why this player stopped, if it did.
    fn ended(&self) -> Option<&str>;
    /// The server's tick (snapshot) rate, once learned; `None` before.
    fn tick_hz(&self) -> Option<TickRate>;
    /// This player's own figures for the referee (games whose servers
    /// report a ping per player), after [`Emulated::finish`].
    fn referee_row(&self) -> Option<tickpack_report::RefereeRow> {
        None
    }
}
