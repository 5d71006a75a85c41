//! The random streams of a timeline: ChaCha8 keyed by the run's seed, the
//! server (none when aligned) and what the stream is for, so that adding
//! churn to a curve does not move its rounds, and every machine draws the
//! same numbers (ChaCha's output is fixed by its key, unlike `SmallRng`'s).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What a stream draws.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    Sessions = 1,
    Rounds = 2,
}

/// The stream for `seed`, `server` (`None`: every server alike) and
/// `stream`.
pub(crate) fn rng(seed: u64, server: Option<u64>, stream: Stream) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&server.unwrap_or(0).to_le_bytes());
    key[16] = u8::from(server.is_some());
    key[17] = stream as u8;
    ChaCha8Rng::from_seed(key)
}
