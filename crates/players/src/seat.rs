//! What every game's emulated player is made from and shares: its seat in
//! the run ([`Seat`]: number, server, seed, start; its random stream and
//! first hello follow from it) and the timing of handshakes and silences.
//! Re-exported from [`crate::player`], where they were first written.

use std::net::SocketAddr;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tickpack_wire::TickRate;

/// Send slots per command interval (see `Player::handle`, `Accepted`).
pub const SLOTS: u64 = 16;

/// First retry interval of an unanswered hello or connect; it doubles per
/// try up to [`RETRY_MAX_US`].
pub(crate) const RETRY_MIN_US: u64 = 50_000;
pub(crate) const RETRY_MAX_US: u64 = 1_000_000;
/// A connected player that hears no snapshot for this long (or ten ticks,
/// if longer) presumes its session dead and re-handshakes.
pub const SILENCE_US: u64 = 500_000;
/// Tick rate assumed for a player that never learned the server's (no
/// player connected): the reference server's default.
pub const DEFAULT_TICK_HZ: TickRate = TickRate::DEFAULT;

/// Where one player sits in a run: its number and server, and the run's
/// seed and start, what every game's player is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seat {
    /// The player's number in the run (its name and random stream follow
    /// from it).
    pub index: usize,
    /// The server it plays on.
    pub target: SocketAddr,
    /// The run's seed.
    pub seed: u64,
    /// When the run starts (monotonic microseconds).
    pub start_us: u64,
}

impl Seat {
    /// The player's own reproducible random stream (inputs, phases, sizes).
    pub(crate) fn rng(&self) -> SmallRng {
        SmallRng::seed_from_u64(self.seed ^ (self.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// When the player first says hello, drawn from its stream `rng`: the
    /// players' first hellos are spread over 50 ms from the start so they
    /// do not all arrive in the same instant.
    pub(crate) fn first_hello(&self, rng: &mut SmallRng) -> u64 {
        self.start_us + rng.gen_range(0..50_000)
    }
}

/// How long a connected player waits for a snapshot before re-handshaking,
/// at its server's tick rate `tick` (`None`: not announced yet).
pub fn silence_us(tick: Option<TickRate>) -> u64 {
    // No rate announced yet counts as 1 Hz, as the protocol reads a 0.
    let tick = tick.unwrap_or(TickRate::from_wire(0));
    SILENCE_US.max(10 * tick.interval_us())
}
