//! Rounds and map changes: a server plays rounds (a freeze, then play)
//! and changes its map every few rounds. Players present stay present
//! through rounds; at a map change the real server loads its next map and
//! every present player goes through whatever its game makes it (a
//! reconnect, a level reload), which is where a real engine pays.
//!
//! The figures are a Counter-Strike match's: rounds of about 2 minutes
//! after a 15 s freeze ([`ROUND`], [`FREEZE`]), time-compressed by
//! [`ROUNDS_COMPRESSION`] (a round of 16.9 s in the step) so a step of a
//! minute and a half sees a map change ([`MAP_EVERY`] rounds).
//!
//! Each server starts at its own moment of the map cycle (a phase from
//! the seed and the server), unless the curve is aligned, when every
//! server's rounds and map changes fall at the same moments.

use std::time::Duration;

/// A round's play time in the game (a Counter-Strike round: about two
/// minutes).
pub const ROUND: Duration = Duration::from_secs(120);
/// The freeze before each round's play (Counter-Strike's 15 s).
pub const FREEZE: Duration = Duration::from_secs(15);
/// Rounds per map: a map change every 4 rounds (a real match plays 15-30,
/// but then a step would have to last a quarter of an hour to see one).
pub const MAP_EVERY: u32 = 4;
/// How much faster than the game rounds run in a step: 8x, a round and
/// its freeze in 16.9 s, a map cycle in 67.5 s.
pub const ROUNDS_COMPRESSION: f64 = 8.0;
/// The most rounds per map.
pub const MAX_MAP_EVERY: u32 = 1000;

/// A server's rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rounds {
    /// A round's play time, in the game's time.
    pub round: Duration,
    /// The freeze before it, in the game's time.
    pub freeze: Duration,
    /// A map change every this many rounds (1..=1000).
    pub map_every: u32,
    /// How much faster than the game they run in the step (>= 1).
    pub compress: f64,
}

impl Default for Rounds {
    fn default() -> Rounds {
        Rounds {
            round: ROUND,
            freeze: FREEZE,
            map_every: MAP_EVERY,
            compress: ROUNDS_COMPRESSION,
        }
    }
}

/// One round as a step sees it (times from the step's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// When its freeze starts (and, with `map_change`, when the server is
    /// told to change its map).
    pub start: Duration,
    /// When its freeze ends and play starts.
    pub play_from: Duration,
    /// Its number on the current map (0 the first).
    pub on_map: u32,
    /// A new map starts with this round.
    pub map_change: bool,
}

/// What is wrong with rounds, in words; `key` is the field to blame.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct RoundsError {
    pub key: &'static str,
    pub message: String,
}

impl Rounds {
    /// Refuses rounds that cannot run.
    pub fn check(&self) -> Result<(), RoundsError> {
        let err = |key, message: String| Err(RoundsError { key, message });
        if self.round.is_zero() || self.round > Duration::from_secs(24 * 3600) {
            return err(
                "round_s",
                "a round lasts more than 0 s and at most a day".into(),
            );
        }
        if self.freeze > Duration::from_secs(3600) {
            return err("freeze_s", "a freeze lasts at most an hour".into());
        }
        if !(1..=MAX_MAP_EVERY).contains(&self.map_every) {
            return err(
                "map_every",
                format!("map_every must be 1..={MAX_MAP_EVERY} rounds"),
            );
        }
        if !(self.compress.is_finite() && (1.0..=100_000.0).contains(&self.compress)) {
            return err(
                "compress",
                format!(
                    "compress {}: expected 1..=100000 (how much faster than the game)",
                    self.compress
                ),
            );
        }
        Ok(())
    }

    /// A round and its freeze in the step, in seconds.
    pub fn cycle_s(&self) -> f64 {
        (self.round + self.freeze).as_secs_f64() / self.compress
    }

    /// A map's rounds in the step, in seconds.
    pub fn map_period_s(&self) -> f64 {
        self.cycle_s() * f64::from(self.map_every)
    }

    /// How long a step must be to see a map change and a whole round
    /// after it, whatever the phase: a map cycle and a round.
    pub fn natural_len(&self) -> Duration {
        Duration::from_secs_f64(self.map_period_s() + self.cycle_s())
    }

    /// The rounds that start within a step of `step_len`, for a server
    /// at `phase` (0..1, a share of its map cycle already played when the
    /// step starts). No map change at 0: the server starts on its map.
    pub fn marks(&self, phase: f64, step_len: Duration) -> Vec<Round> {
        let cycle = self.cycle_s();
        let freeze = self.freeze.as_secs_f64() / self.compress;
        let len = step_len.as_secs_f64();
        let offset = phase.clamp(0.0, 1.0) * self.map_period_s();
        let mut out = vec![];
        // Round k starts at k * cycle - offset; the first at or after 0.
        let mut k = (offset / cycle).ceil() as u64;
        loop {
            let start = k as f64 * cycle - offset;
            if start >= len {
                break;
            }
            let on_map = (k % u64::from(self.map_every)) as u32;
            out.push(Round {
                start: Duration::from_secs_f64(start.max(0.0)),
                play_from: Duration::from_secs_f64((start + freeze).min(len)),
                on_map,
                map_change: on_map == 0 && start > 0.0,
            });
            k += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_changes_every_n_rounds_after_each_freeze() {
        let r = Rounds {
            round: Duration::from_secs(8),
            freeze: Duration::from_secs(2),
            map_every: 3,
            compress: 2.0,
        };
        r.check().unwrap();
        // Cycle 5 s, map period 15 s; phase 0: map changes at 15 and 30.
        let marks = r.marks(0.0, Duration::from_secs(35));
        let starts: Vec<f64> = marks.iter().map(|m| m.start.as_secs_f64()).collect();
        assert_eq!(starts, [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]);
        let changes: Vec<f64> = marks
            .iter()
            .filter(|m| m.map_change)
            .map(|m| m.start.as_secs_f64())
            .collect();
        assert_eq!(changes, [15.0, 30.0]);
        assert!(marks
            .iter()
            .all(|m| m.play_from == m.start + Duration::from_secs(1)));
        // A fifth into the map cycle (3 s): rounds at 2, 7, 12 (a new
        // map) and 17 s.
        let marks = r.marks(0.2, Duration::from_secs(20));
        let on_map: Vec<u32> = marks.iter().map(|m| m.on_map).collect();
        assert_eq!(on_map, [1, 2, 0, 1]);
        assert!((marks[2].start.as_secs_f64() - 12.0).abs() < 1e-9);
        assert!(marks[2].map_change && !marks[0].map_change);
    }

    #[test]
    fn the_default_rounds_see_a_map_change_within_their_natural_length() {
        let r = Rounds::default();
        let len = r.natural_len();
        assert!((len.as_secs_f64() - 84.375).abs() < 1e-9, "{len:?}");
        for i in 0..100 {
            let marks = r.marks(f64::from(i) / 100.0, len);
            assert!(marks.iter().any(|m| m.map_change), "phase {i}%");
        }
    }

    #[test]
    fn rounds_that_cannot_run_name_their_key() {
        let bad = [
            (
                Rounds {
                    map_every: 0,
                    ..Rounds::default()
                },
                "map_every",
            ),
            (
                Rounds {
                    round: Duration::ZERO,
                    ..Rounds::default()
                },
                "round_s",
            ),
            (
                Rounds {
                    compress: 0.5,
                    ..Rounds::default()
                },
                "compress",
            ),
            (
                Rounds {
                    compress: f64::NAN,
                    ..Rounds::default()
                },
                "compress",
            ),
        ];
        for (r, key) in bad {
            assert_eq!(r.check().unwrap_err().key, key);
        }
    }
}
