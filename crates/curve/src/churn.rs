//! Churn: players come and go on their own. Each player's session lasts a
//! time drawn from a Weibull distribution; when it ends the player leaves
//! and, after a gap, a new player takes the seat (if the envelope still
//! wants it).
//!
//! The figures are Chambers et al.'s (IMC 2005): session lengths of game
//! players fit a Weibull distribution of shape about 0.5 and scale about
//! 20 minutes ([`SHAPE`], [`SCALE`]): many short visits and a long tail
//! (median 9.6 min, mean 40 min). They run [`SESSIONS_COMPRESSION`] times
//! faster in a step (median 29 s), so that a step of a minute and a half
//! sees players leave and others take their seats; the gap is ours
//! ([`GAP`], 30 s in the game, 1.5 s in the step).
//!
//! Two floors in the step's time keep what a step measures a game, not a
//! storm of handshakes: no session shorter than [`MIN_SESSION`] and no gap
//! shorter than [`MIN_GAP`] (drawn values below are raised to them; the
//! median is far above both).

use std::time::Duration;

use rand::Rng;

/// Weibull shape of session lengths (Chambers et al.: about 0.5).
pub const SHAPE: f64 = 0.5;
/// Weibull scale of session lengths (Chambers et al.: about 20 minutes).
pub const SCALE: Duration = Duration::from_secs(20 * 60);
/// How long a seat stays empty before a new player takes it, in the game.
pub const GAP: Duration = Duration::from_secs(30);
/// How much faster than the game sessions and gaps run in a step.
pub const SESSIONS_COMPRESSION: f64 = 20.0;
/// The shortest session in the step: a join takes up to a second on a
/// real server, and a shorter visit would measure only its handshake.
pub const MIN_SESSION: Duration = Duration::from_secs(2);
/// The shortest gap in the step: a seat's leave is over (its disconnect
/// sent) before its next player joins.
pub const MIN_GAP: Duration = Duration::from_millis(500);

/// Sessions that end by themselves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Churn {
    /// Weibull shape (0.1..=10; below 1 many short sessions and a long
    /// tail).
    pub shape: f64,
    /// Weibull scale, in the game's time.
    pub scale: Duration,
    /// How long a seat stays empty after a player leaves, in the game's
    /// time.
    pub gap: Duration,
    /// How much faster than the game they run in the step (>= 1).
    pub compress: f64,
}

impl Default for Churn {
    fn default() -> Churn {
        Churn {
            shape: SHAPE,
            scale: SCALE,
            gap: GAP,
            compress: SESSIONS_COMPRESSION,
        }
    }
}

/// What is wrong with churn, in words; `key` is the field to blame.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ChurnError {
    pub key: &'static str,
    pub message: String,
}

impl Churn {
    /// Refuses sessions that cannot be drawn.
    pub fn check(&self) -> Result<(), ChurnError> {
        let err = |key, message: String| Err(ChurnError { key, message });
        if !(self.shape.is_finite() && (0.1..=10.0).contains(&self.shape)) {
            return err(
                "shape",
                format!(
                    "shape {}: expected 0.1..=10 (sessions: about 0.5)",
                    self.shape
                ),
            );
        }
        if self.scale.is_zero() || self.scale > Duration::from_secs(7 * 24 * 3600) {
            return err("scale_s", "scale: more than 0 s and at most a week".into());
        }
        if self.gap > Duration::from_secs(24 * 3600) {
            return err("gap_s", "gap: at most a day".into());
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

    /// The scale in the step, in seconds.
    pub fn scale_s(&self) -> f64 {
        self.scale.as_secs_f64() / self.compress
    }

    /// The median session in the step before the floor, in seconds:
    /// `scale * ln(2)^(1/shape)`, compressed.
    pub fn median_s(&self) -> f64 {
        self.scale_s() * std::f64::consts::LN_2.powf(1.0 / self.shape)
    }

    /// The gap in the step, in seconds (at least [`MIN_GAP`]).
    pub fn gap_s(&self) -> f64 {
        (self.gap.as_secs_f64() / self.compress).max(MIN_GAP.as_secs_f64())
    }

    /// One session's length in the step, in seconds (at least
    /// [`MIN_SESSION`]): the Weibull's inverse at a uniform draw.
    pub fn draw_s(&self, rng: &mut impl Rng) -> f64 {
        let u: f64 = rng.gen();
        let x = self.scale_s() * (-(1.0 - u).ln()).powf(1.0 / self.shape);
        x.max(MIN_SESSION.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn weibull_sessions_have_their_median_over_many_draws() {
        let c = Churn::default();
        // 20 min * ln(2)^2 / 20 = 28.8 s.
        assert!((c.median_s() - 28.827).abs() < 0.01, "{}", c.median_s());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut draws: Vec<f64> = (0..100_000).map(|_| c.draw_s(&mut rng)).collect();
        draws.sort_by(f64::total_cmp);
        let median = draws[draws.len() / 2];
        assert!(
            (median / c.median_s() - 1.0).abs() < 0.03,
            "median {median} vs {}",
            c.median_s()
        );
        // The floor: no session under 2 s; shape 0.5 puts about 17 % there.
        assert_eq!(draws[0], 2.0);
        let floored = draws.iter().filter(|&&d| d == 2.0).count() as f64 / 1e5;
        let expected = 1.0 - (-(2.0 / c.scale_s()).sqrt()).exp();
        assert!((floored - expected).abs() < 0.01, "{floored} vs {expected}");
    }

    #[test]
    fn gaps_are_compressed_but_never_below_their_floor() {
        assert_eq!(Churn::default().gap_s(), 1.5);
        let c = Churn {
            gap: Duration::from_secs(1),
            ..Churn::default()
        };
        assert_eq!(c.gap_s(), 0.5);
    }

    #[test]
    fn churn_that_cannot_be_drawn_names_its_key() {
        let bad = [
            (
                Churn {
                    shape: 0.0,
                    ..Churn::default()
                },
                "shape",
            ),
            (
                Churn {
                    scale: Duration::ZERO,
                    ..Churn::default()
                },
                "scale_s",
            ),
            (
                Churn {
                    compress: 0.0,
                    ..Churn::default()
                },
                "compress",
            ),
        ];
        for (c, key) in bad {
            assert_eq!(c.check().unwrap_err().key, key);
        }
    }
}
