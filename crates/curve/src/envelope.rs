//! The envelope: the share of a member's players wanted at each moment of
//! the step, the same for every server of every member (it is the host's
//! evening, not one server's). Three shapes, all piecewise linear:
//!
//! - [`Envelope::Steady`]: every player all the time (today's bench, the
//!   static reservation).
//! - [`Envelope::Evening`]: a day compressed into the step, from 06:00 to
//!   06:00: a trough in the early morning, a climb through the day, the
//!   peak at 21:00, a fall through the night ([`EVENING`]). At the default
//!   [`EVENING_PEAK_TO_MEAN`] of 2 the population swings from half its
//!   mean to twice it (25 %, 50 % and 100 % of the member's players), the
//!   swing Chambers et al. measured (IMC 2005).
//! - [`Envelope::Points`]: the user's list of (time as a share of the
//!   step, share of players), linear between, flat before the first and
//!   after the last.
//!
//! [`Envelope::counts`] turns an envelope into the number of players
//! wanted over a step: `seats * share` rounded half up, as a list of the
//! moments it changes, each computed where the line crosses a half.

use std::time::Duration;

/// One point of a curve: `at` a share of the step (0 its start, 1 its
/// end), `share` of the member's players wanted then (0..=1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub at: f64,
    pub share: f64,
}

const fn p(at: f64, share: f64) -> Point {
    Point { at, share }
}

/// The evening's shape at a peak-to-mean ratio of 2: a day from 06:00
/// (`at` 0) to 06:00 the next day (`at` 1), a point every few hours.
/// Its mean is exactly 0.5 (the trapezoids add up to 0.5), its peak 1.0
/// at 21:00, its trough 0.25 at 06:00: the population swings from 0.5x
/// to 2x its daily mean, as the game populations Chambers et al. traced
/// over months (IMC 2005: strong 24-hour cycles, every game's peak in
/// the evening, at the same hour).
pub const EVENING: [Point; 7] = [
    p(0.0, 0.25),   // 06:00
    p(0.25, 0.40),  // 12:00
    p(0.5, 0.65),   // 18:00
    p(0.625, 1.0),  // 21:00, the peak
    p(0.75, 0.55),  // 00:00
    p(0.875, 0.30), // 03:00
    p(1.0, 0.25),   // 06:00
];

/// The evening's default peak-to-mean ratio: the peak is every player,
/// the mean half of them, the trough a quarter.
pub const EVENING_PEAK_TO_MEAN: f64 = 2.0;
/// The highest peak-to-mean ratio an evening takes: at 3 its trough is
/// nobody (the shape scaled until its lowest point reaches 0).
pub const MAX_PEAK_TO_MEAN: f64 = 3.0;
/// The most points a curve may list.
pub const MAX_POINTS: usize = 1000;
/// How long a day takes when nothing else sets the step: a compressed day
/// in a minute and a half (960x), so that a ladder of ten steps on a
/// small machine takes a quarter of an hour.
pub const DEFAULT_DAY: Duration = Duration::from_secs(90);
/// A day, for the compression factor.
pub const DAY: Duration = Duration::from_secs(24 * 3600);

/// The share of a member's players wanted over the step.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Envelope {
    /// Every player, all the time.
    #[default]
    Steady,
    /// A compressed day ([`EVENING`]); `peak_to_mean` 1..=3 (1 is steady,
    /// 2 the default). The peak is always every player.
    Evening { peak_to_mean: f64 },
    /// The user's points, linear between.
    Points(Vec<Point>),
}

/// What is wrong with an envelope, in words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("peak_to_mean {0}: expected 1..={MAX_PEAK_TO_MEAN} (1 is steady; at {MAX_PEAK_TO_MEAN} the trough is nobody)")]
    PeakToMean(f64),
    #[error("a curve needs 1..={MAX_POINTS} points, got {0}")]
    PointCount(usize),
    #[error("point {index}: its time {at} is not within 0..=1 (a share of the step)")]
    PointTime { index: usize, at: f64 },
    #[error("point {index}: its time {at} comes before the point before it ({before})")]
    PointOrder { index: usize, at: f64, before: f64 },
    #[error("point {index}: three points at time {at} (two make a jump)")]
    PointTriple { index: usize, at: f64 },
    #[error("point {index}: share {share} is above 1 (100 % of the member's players; give more players instead)")]
    ShareAbove { index: usize, share: f64 },
    #[error("point {index}: share {share} is not within 0..=1 (a share of the member's players)")]
    Share { index: usize, share: f64 },
}

impl EnvelopeError {
    /// The point a refusal names, for the caller's line number.
    pub fn point(&self) -> Option<usize> {
        match *self {
            EnvelopeError::PointTime { index, .. }
            | EnvelopeError::PointOrder { index, .. }
            | EnvelopeError::PointTriple { index, .. }
            | EnvelopeError::ShareAbove { index, .. }
            | EnvelopeError::Share { index, .. } => Some(index),
            _ => None,
        }
    }
}

impl Envelope {
    /// The default evening.
    pub fn evening() -> Envelope {
        Envelope::Evening {
            peak_to_mean: EVENING_PEAK_TO_MEAN,
        }
    }

    /// Refuses values the envelope cannot mean (a share above 1 is more
    /// players than the member has).
    pub fn check(&self) -> Result<(), EnvelopeError> {
        match self {
            Envelope::Steady => Ok(()),
            Envelope::Evening { peak_to_mean } => {
                if (1.0..=MAX_PEAK_TO_MEAN).contains(peak_to_mean) {
                    Ok(())
                } else {
                    Err(EnvelopeError::PeakToMean(*peak_to_mean))
                }
            }
            Envelope::Points(points) => check_points(points),
        }
    }

    /// The envelope as points, linear between (the evening scaled to its
    /// ratio; steady as a flat line at 1).
    pub fn points(&self) -> Vec<Point> {
        match self {
            Envelope::Steady => vec![p(0.0, 1.0), p(1.0, 1.0)],
            Envelope::Evening { peak_to_mean } => {
                // The shape's ratio to its mean (0.5..2 at the default),
                // stretched by a = ratio - 1 around 1 and scaled so the
                // peak stays 1: the mean is 1 / (1 + a), the peak 1.
                let a = peak_to_mean - 1.0;
                EVENING
                    .iter()
                    .map(|q| p(q.at, (1.0 + a * (2.0 * q.share - 1.0)) / (1.0 + a)))
                    .collect()
            }
            Envelope::Points(points) => points.clone(),
        }
    }

    /// The share wanted at `x` (a share of the step; outside 0..=1 the
    /// nearest end). At a jump (two points at one time) the later point's.
    pub fn share_at(&self, x: f64) -> f64 {
        share_at(&self.points(), x)
    }

    /// The mean share over the step (the area under the line).
    pub fn mean(&self) -> f64 {
        let pts = self.points();
        let (first, last) = (pts[0], pts[pts.len() - 1]);
        let inside: f64 = pts
            .windows(2)
            .map(|w| (w[1].at - w[0].at) * (w[0].share + w[1].share) / 2.0)
            .sum();
        first.at * first.share + inside + (1.0 - last.at) * last.share
    }

    /// The highest share wanted.
    pub fn peak(&self) -> f64 {
        self.points().iter().map(|q| q.share).fold(0.0, f64::max)
    }

    /// The lowest share wanted.
    pub fn trough(&self) -> f64 {
        self.points().iter().map(|q| q.share).fold(1.0, f64::min)
    }

    /// How long the envelope wants a step to be: a compressed day
    /// ([`DEFAULT_DAY`]) for a shape that changes, nothing for steady.
    pub fn natural_len(&self) -> Option<Duration> {
        match self {
            Envelope::Steady => None,
            _ => Some(DEFAULT_DAY),
        }
    }

    /// How much faster than a real day the envelope runs in a step of
    /// `step_len` (a day into the step): `None` for steady and for a
    /// user's points (they span the step, whatever it stands for).
    pub fn day_compression(&self, step_len: Duration) -> Option<f64> {
        match self {
            Envelope::Evening { .. } if !step_len.is_zero() => {
                Some(DAY.as_secs_f64() / step_len.as_secs_f64())
            }
            _ => None,
        }
    }

    /// The players wanted over a step of `step_len` with `seats` players:
    /// `(from, count)` pairs, the first at 0, each count
    /// `round(seats * share)` (halves up) from `from` until the next
    /// pair's. Each moment is where the line crosses a half.
    pub fn counts(&self, seats: u16, step_len: Duration) -> Vec<(Duration, u16)> {
        counts(&self.points(), seats, step_len.as_secs_f64())
            .into_iter()
            .map(|(t, n)| (Duration::from_secs_f64(t), n))
            .collect()
    }
}

fn check_points(points: &[Point]) -> Result<(), EnvelopeError> {
    if points.is_empty() || points.len() > MAX_POINTS {
        return Err(EnvelopeError::PointCount(points.len()));
    }
    for (index, q) in points.iter().enumerate() {
        if !(0.0..=1.0).contains(&q.at) {
            return Err(EnvelopeError::PointTime { index, at: q.at });
        }
        if q.share > 1.0 {
            return Err(EnvelopeError::ShareAbove {
                index,
                share: q.share,
            });
        }
        if !(0.0..=1.0).contains(&q.share) {
            return Err(EnvelopeError::Share {
                index,
                share: q.share,
            });
        }
        if index > 0 && q.at < points[index - 1].at {
            return Err(EnvelopeError::PointOrder {
                index,
                at: q.at,
                before: points[index - 1].at,
            });
        }
        if index > 1 && q.at == points[index - 2].at {
            return Err(EnvelopeError::PointTriple { index, at: q.at });
        }
    }
    Ok(())
}

/// The share at `x` of checked points (right-continuous at a jump).
pub(crate) fn share_at(pts: &[Point], x: f64) -> f64 {
    let (first, last) = (pts[0], pts[pts.len() - 1]);
    if x < first.at {
        return first.share;
    }
    if x >= last.at {
        return last.share;
    }
    // The last point at or before x; the one after it is later than x.
    let i = pts.partition_point(|q| q.at <= x) - 1;
    let (a, b) = (pts[i], pts[i + 1]);
    a.share + (b.share - a.share) * (x - a.at) / (b.at - a.at)
}

/// `round(seats * share)`, halves up, within 0..=seats.
pub(crate) fn count_of(seats: u16, share: f64) -> u16 {
    let v = (f64::from(seats) * share + 0.5).floor();
    v.clamp(0.0, f64::from(seats)) as u16
}

/// The count's changes over a step of `len` seconds, in seconds.
fn counts(pts: &[Point], seats: u16, len: f64) -> Vec<(f64, u16)> {
    let s = f64::from(seats);
    let mut out = vec![(0.0, count_of(seats, share_at(pts, 0.0)))];
    let mut push = |t: f64, n: u16| {
        let t = t.clamp(0.0, len);
        if t >= len {
            return;
        }
        let last = out.last_mut().expect("one at least");
        if last.1 == n {
            return;
        }
        if last.0 == t {
            last.1 = n;
            // Merged into the count before it: drop a change to nothing.
            if out.len() > 1 && out[out.len() - 2].1 == n {
                out.pop();
            }
        } else {
            out.push((t, n));
        }
    };
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (t0, t1) = (a.at * len, b.at * len);
        let (c0, c1) = (count_of(seats, a.share), count_of(seats, b.share));
        if t1 <= t0 {
            // A jump: the later point's count from here on.
            push(t0, c1);
            continue;
        }
        let (v0, v1) = (s * a.share, s * b.share);
        let cross = |h: f64| t0 + (h - v0) / (v1 - v0) * (t1 - t0);
        if c1 > c0 {
            for k in c0..c1 {
                push(cross(f64::from(k) + 0.5), k + 1);
            }
        } else {
            for k in (c1..c0).rev() {
                push(cross(f64::from(k) + 0.5), k);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_evening_swings_from_half_its_mean_to_twice_it() {
        let e = Envelope::evening();
        assert!((e.mean() - 0.5).abs() < 1e-12, "{}", e.mean());
        assert_eq!(e.peak(), 1.0);
        assert_eq!(e.trough(), 0.25);
        // The peak at 21:00.
        assert_eq!(e.share_at(15.0 / 24.0), 1.0);
    }

    #[test]
    fn the_evening_keeps_its_peak_at_every_ratio() {
        for r in [1.0, 1.5, 2.0, 2.5, 3.0] {
            let e = Envelope::Evening { peak_to_mean: r };
            e.check().unwrap();
            assert!((e.peak() - 1.0).abs() < 1e-12);
            assert!((e.peak() / e.mean() - r).abs() < 1e-9, "{r}: {}", e.mean());
        }
        assert_eq!(Envelope::Evening { peak_to_mean: 3.0 }.trough(), 0.0);
        assert_eq!(Envelope::Evening { peak_to_mean: 1.0 }.trough(), 1.0);
        assert!(Envelope::Evening { peak_to_mean: 3.5 }.check().is_err());
        assert!(Envelope::Evening { peak_to_mean: 0.9 }.check().is_err());
    }

    #[test]
    fn points_are_linear_between_flat_outside_and_jump_where_two_meet() {
        let e = Envelope::Points(vec![p(0.2, 0.0), p(0.6, 1.0), p(0.6, 0.5), p(0.8, 0.5)]);
        e.check().unwrap();
        assert_eq!(e.share_at(0.0), 0.0);
        assert!((e.share_at(0.4) - 0.5).abs() < 1e-12);
        assert_eq!(e.share_at(0.6), 0.5, "the later point at a jump");
        assert!((e.share_at(0.5999) - 0.99975).abs() < 1e-9);
        assert_eq!(e.share_at(0.9), 0.5);
        // 0 before 0.2, a ramp to 1 (0.2), 0.5 to the end (0.2).
        assert!((e.mean() - 0.4).abs() < 1e-12, "{}", e.mean());
    }

    #[test]
    fn points_out_of_range_or_order_are_refused_with_their_index() {
        let bad = [
            (vec![], None),
            (vec![p(0.0, 0.5), p(0.5, 1.2)], Some(1)),
            (vec![p(0.0, -0.1)], Some(0)),
            (vec![p(0.5, 0.5), p(0.4, 0.5)], Some(1)),
            (vec![p(1.5, 0.5)], Some(0)),
            (vec![p(0.5, 0.5), p(0.5, 0.6), p(0.5, 0.7)], Some(2)),
            (vec![p(f64::NAN, 0.5)], Some(0)),
        ];
        for (pts, at) in bad {
            let e = Envelope::Points(pts.clone()).check().unwrap_err();
            assert_eq!(e.point(), at, "{pts:?}: {e}");
        }
        let e = Envelope::Points(vec![p(0.0, 1.01)]).check().unwrap_err();
        assert!(e.to_string().contains("above 1"), "{e}");
    }

    #[test]
    fn counts_change_where_the_line_crosses_a_half() {
        // 0 to 4 players over 40 s: 0.5 at 5 s, 1.5 at 15 s, ...
        let e = Envelope::Points(vec![p(0.0, 0.0), p(1.0, 1.0)]);
        let c = e.counts(4, Duration::from_secs(40));
        let secs: Vec<(f64, u16)> = c.iter().map(|(t, n)| (t.as_secs_f64(), *n)).collect();
        assert_eq!(secs, [(0.0, 0), (5.0, 1), (15.0, 2), (25.0, 3), (35.0, 4)]);
        // Down again (2 * 0.75 = 1.5 at 2.5 s), then a jump back up.
        let e = Envelope::Points(vec![p(0.0, 1.0), p(0.5, 0.5), p(0.5, 1.0)]);
        let c = e.counts(2, Duration::from_secs(10));
        let s = Duration::from_secs_f64;
        assert_eq!(c, [(s(0.0), 2), (s(2.5), 1), (s(5.0), 2)]);
        // A jump down and up at one moment is no change at all.
        let e = Envelope::Points(vec![p(0.0, 1.0), p(0.5, 1.0), p(0.5, 0.0), p(0.5, 1.0)]);
        assert!(e.check().is_err(), "three points at one time");
        assert_eq!(
            Envelope::Steady.counts(7, Duration::from_secs(3)),
            [(Duration::ZERO, 7)]
        );
    }
}
