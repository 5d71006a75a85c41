//! Load curves of a host's evening: which emulated players are on each
//! game server when, over one benchmark step. Sans-I/O: no sockets, no
//! clock, no threads; a curve and a seed in, a [`Timeline`] out, the same
//! one for the same seed on every machine.
//!
//! A host does not run every server at its peak at once: players join,
//! play rounds, change maps and leave, and the whole machine is busy in
//! the evening and half empty at night. A [`Curve`] says how one member
//! game's players come and go, in three layers:
//!
//! - the [`Envelope`] (`steady`, `evening` or the user's `points`): the
//!   share of the member's players wanted at each moment. It is the
//!   host's evening, the same for every server of every member: Chambers
//!   et al. (IMC 2005) found populations swinging about 0.5x to 2x their
//!   daily mean with strong 24-hour cycles, and different games peaking
//!   at the same hour, so there is little to gain across games at the
//!   peak. A day is compressed into the step ([`Compression`]).
//! - [`Rounds`] (optional): rounds after a freeze and a map change every
//!   few rounds (a Counter-Strike match: rounds of about 2 minutes after
//!   a 15 s freeze), compressed by their own factor. Players stay
//!   through rounds; the timeline says when the server must change its
//!   map ([`Timeline::map_changes`]), and each present player then goes
//!   through what its game makes it (a reconnect, a reload).
//! - [`Churn`] (optional): sessions drawn from a Weibull distribution
//!   (shape 0.5, scale 20 minutes: Chambers et al.), compressed by their
//!   own factor; a player whose session ends leaves, and its seat gets a
//!   new player after a gap.
//!
//! Rounds, map changes and sessions start at a different moment on each
//! server (a phase from the seed and the server's number); `aligned`
//! puts every server in step, the worst case for a host. The envelope
//! has no phase.
//!
//! Order: build a [`Curve`], [`Curve::check`] it, pick the step's length
//! ([`Curve::natural_len`], or the user's), then for each server
//! [`Curve::timeline`]; judge the step in [`windows`]. Print
//! [`Curve::compression`] with the result.
//!
//! Deliberately not here: the file format (crate `tickpack-tile`), who
//! connects players or changes maps (the players and the bench), and the
//! verdict (crate `tickpack-report`'s rule table, per window).

pub mod churn;
pub mod envelope;
pub mod rounds;
mod seed;
pub mod timeline;
pub mod windows;

use std::fmt;
use std::time::Duration;

pub use churn::{Churn, ChurnError};
pub use envelope::{Envelope, EnvelopeError, Point};
pub use rounds::{Round, Rounds, RoundsError};
pub use timeline::{Change, SeatEvent, Span, Timeline};
pub use windows::{windows, DEFAULT_WINDOW, MIN_WINDOW};

/// The longest step a timeline is made for (a longer one is cut here).
pub const MAX_STEP: Duration = Duration::from_secs(24 * 3600);

/// How one member's players come and go over a step.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Curve {
    pub envelope: Envelope,
    pub rounds: Option<Rounds>,
    pub churn: Option<Churn>,
    /// Every server's rounds, map changes and sessions in step (the
    /// worst case); otherwise each server has its own phase.
    pub aligned: bool,
}

/// A refused curve: which part, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CurveError {
    #[error("{0}")]
    Envelope(#[from] EnvelopeError),
    #[error("rounds: {0}")]
    Rounds(#[from] RoundsError),
    #[error("churn: {0}")]
    Churn(#[from] ChurnError),
}

/// How much faster than real time a step runs a curve, for the report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compression {
    /// The step a day is compressed into (with an evening).
    pub step_len: Duration,
    /// A real day over the step (an evening); `None`: no day.
    pub day: Option<f64>,
    /// Rounds' factor; `None`: no rounds.
    pub rounds: Option<f64>,
    /// Sessions' and gaps' factor; `None`: no churn.
    pub sessions: Option<f64>,
}

impl fmt::Display for Compression {
    /// E.g. `a day in 90 s (960x), rounds 8x, sessions 20x`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec![];
        if let Some(d) = self.day {
            parts.push(format!(
                "a day in {} s ({d:.0}x)",
                fmt_secs(self.step_len.as_secs_f64())
            ));
        }
        if let Some(r) = self.rounds {
            parts.push(format!("rounds {}x", fmt_secs(r)));
        }
        if let Some(s) = self.sessions {
            parts.push(format!("sessions {}x", fmt_secs(s)));
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// The curve in words, in the step's (compressed) time: `evening, peak
/// 2x the mean; rounds of 15 s after a 1.9 s freeze, a map change every
/// 4; churn Weibull 0.5 x 60 s, gap 1.5 s; aligned`.
impl fmt::Display for Curve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec![match &self.envelope {
            Envelope::Steady => "steady".to_string(),
            Envelope::Evening { peak_to_mean } => {
                format!("evening, peak {}x the mean", fmt_secs(*peak_to_mean))
            }
            Envelope::Points(p) => format!("{} points", p.len()),
        }];
        if let Some(r) = &self.rounds {
            parts.push(format!(
                "rounds of {} s after a {} s freeze, a map change every {}",
                fmt_secs(r.round.as_secs_f64() / r.compress),
                fmt_secs(r.freeze.as_secs_f64() / r.compress),
                r.map_every
            ));
        }
        if let Some(c) = &self.churn {
            parts.push(format!(
                "churn Weibull {} x {} s, gap {} s",
                fmt_secs(c.shape),
                fmt_secs(c.scale_s()),
                fmt_secs(c.gap_s())
            ));
        }
        if self.aligned && (self.rounds.is_some() || self.churn.is_some()) {
            parts.push("aligned".into());
        }
        f.write_str(&parts.join("; "))
    }
}

fn fmt_secs(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

impl Curve {
    /// Every player all the time, no rounds, no churn: today's bench.
    pub fn steady() -> Curve {
        Curve::default()
    }

    /// Refuses values a curve cannot mean.
    pub fn check(&self) -> Result<(), CurveError> {
        self.envelope.check()?;
        if let Some(r) = &self.rounds {
            r.check()?;
        }
        if let Some(c) = &self.churn {
            c.check()?;
        }
        Ok(())
    }

    /// How long this curve wants a step to be: the longest of a day (an
    /// evening or points, [`envelope::DEFAULT_DAY`]) and a map cycle and a
    /// round (rounds); `None` when any length will do (steady, churn
    /// alone).
    pub fn natural_len(&self) -> Option<Duration> {
        let rounds = self.rounds.as_ref().map(Rounds::natural_len);
        match (self.envelope.natural_len(), rounds) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The time compression of a step of `step_len`, for the report.
    pub fn compression(&self, step_len: Duration) -> Compression {
        Compression {
            step_len,
            day: self.envelope.day_compression(step_len),
            rounds: self.rounds.map(|r| r.compress),
            sessions: self.churn.map(|c| c.compress),
        }
    }

    /// One server's players over a step of `step_len` (at most
    /// [`MAX_STEP`]) with `seats` players at most: `seed` the run's,
    /// `server` a number unique to this server in the step (its phases
    /// come from both unless the curve is aligned). The curve must have
    /// passed [`Curve::check`].
    pub fn timeline(&self, seed: u64, server: u64, seats: u16, step_len: Duration) -> Timeline {
        let step_len = step_len.min(MAX_STEP);
        let len = step_len.as_secs_f64();
        let who = (!self.aligned).then_some(server);
        let wanted = self.envelope.counts(seats, step_len);
        let wanted_s: Vec<(f64, u16)> = wanted.iter().map(|(t, n)| (t.as_secs_f64(), *n)).collect();
        let churn = self
            .churn
            .as_ref()
            .map(|c| (c, seed::rng(seed, who, seed::Stream::Sessions)));
        let (seats, waiting) = timeline::simulate(seats, &wanted_s, churn, len);
        let rounds = self.rounds.map_or(vec![], |r| {
            use rand::Rng;
            let phase: f64 = seed::rng(seed, who, seed::Stream::Rounds).gen();
            r.marks(phase, step_len)
        });
        Timeline {
            step_len,
            seats,
            waiting,
            wanted,
            rounds,
        }
    }
}
