//! One instance's liveness rule, sans-I/O on the supervisor's monotonic
//! clock: time is cut into check windows of the health check's interval
//! from the instance's start (a check is sent at the start of each), and
//! each window, once over, is judged.
//!
//! - Answered (any sign of life in it): the count of unanswered checks in
//!   a row goes back to 0.
//! - Not answered, and the supervisor itself dropped datagrams from this
//!   instance in it (its receive queue was full: `SO_RXQ_OVFL`): not
//!   judged. The answer may be among what the supervisor lost, so the
//!   count stays where it was: an instance is never blamed for the
//!   supervisor's own full buffer.
//! - Not asked (the supervisor did not get to send its check, e.g. it was
//!   stalled): not judged either.
//! - Not answered while the instance was visibly flooded (datagrams into
//!   its network namespace above [`FLOOD_FLOOR_PPS`] and above
//!   [`FLOOD_FACTOR`] times its rate in answered windows): not judged,
//!   counted as flooded. A game tickpack did not write may starve its own
//!   answers under a flood of queries (ioquake3's global query limit does);
//!   killing it then would hand the flooder what it wanted. A server that
//!   hangs during a flood is caught once the flood ends.
//! - Not answered, nothing dropped: one more unanswered check.
//!
//! The supervisor turns the count into states with the check's
//! [`HealthTiming`]: `unresponsive` at `unresponsive_after`, killed at
//! `kill_after` (never when 0). Before an instance is ready and has
//! answered once, only its start time limit applies (`health.rs`).

use std::time::Duration;

use tickpack_game::launch::HealthTiming;

/// What one check window, once over, found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Answered,
    /// Unanswered; the count of unanswered checks in a row.
    Unanswered(u32),
    /// Unanswered while the supervisor dropped datagrams of this
    /// instance, or never asked.
    NotJudged,
    /// Unanswered while the instance was flooded; the datagrams a second
    /// that came into it.
    Flooded(u64),
}

/// A window is "flooded" only above this many datagrams a second into the
/// instance (a 64-player server at 128 Hz receives about 8 000).
pub const FLOOD_FLOOR_PPS: u64 = 10_000;
/// ...and above this many times its rate in windows it answered.
pub const FLOOD_FACTOR: u64 = 4;

#[derive(Debug, Clone)]
pub struct Liveness {
    interval: Duration,
    /// Start of the current window.
    window_start: Duration,
    /// Whether the current window's check was sent.
    asked: bool,
    answered: bool,
    overflowed: bool,
    failures: u32,
    /// Windows not judged because of the supervisor's own drops.
    pub not_judged: u64,
    /// The first and the latest count of datagrams into the instance in
    /// the current window, with when they were read.
    inbound_first: Option<(Duration, u64)>,
    inbound_latest: Option<(Duration, u64)>,
    /// The highest inbound rate of a window it answered (datagrams/s).
    answered_pps: u64,
}

impl Liveness {
    /// A started instance: the first window begins at `now`.
    pub fn new(timing: HealthTiming, now: Duration) -> Liveness {
        Liveness {
            interval: timing.interval(),
            window_start: now,
            asked: false,
            answered: false,
            overflowed: false,
            failures: 0,
            not_judged: 0,
            inbound_first: None,
            inbound_latest: None,
            answered_pps: 0,
        }
    }

    /// The count of datagrams that came into the instance so far (its
    /// network namespace's interfaces), read at `now`.
    pub fn inbound(&mut self, now: Duration, datagrams: u64) {
        self.inbound_first.get_or_insert((now, datagrams));
        self.inbound_latest = Some((now, datagrams));
    }

    /// The inbound rate of the window now ending, from its samples.
    fn window_pps(&self) -> Option<u64> {
        let ((t0, a), (t1, b)) = (self.inbound_first?, self.inbound_latest?);
        let dt = t1.checked_sub(t0)?.as_secs_f64();
        (dt >= 0.2).then(|| (b.saturating_sub(a) as f64 / dt) as u64)
    }

    /// A sign of life.
    pub fn heard(&mut self) {
        self.answered = true;
    }

    /// The supervisor dropped datagrams from this instance (its own
    /// receive queue overflowed).
    pub fn overflowed(&mut self) {
        self.overflowed = true;
    }

    /// Unanswered checks in a row so far.
    #[cfg(test)]
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// True once per window: send the check now (the window counts as
    /// asked).
    pub fn check_due(&mut self) -> bool {
        !std::mem::replace(&mut self.asked, true)
    }

    /// Judges every window that ended by `now`, oldest first (windows a
    /// stalled supervisor slept through were never asked: not judged).
    pub fn judge(&mut self, now: Duration) -> Vec<Window> {
        let mut out = vec![];
        if now > self.window_start + self.interval * 8 {
            // Asleep for longer than 8 windows: one window for all of it.
            self.window_start = now - self.interval;
        }
        while now >= self.window_start + self.interval {
            self.window_start += self.interval;
            let pps = self.window_pps();
            let flooded = pps.filter(|&p| {
                p > FLOOD_FLOOR_PPS && p > self.answered_pps.saturating_mul(FLOOD_FACTOR)
            });
            // The next window's rate starts from the last count read.
            self.inbound_first = self.inbound_latest;
            let j = if self.answered {
                self.failures = 0;
                self.answered_pps = self.answered_pps.max(pps.unwrap_or(0));
                Window::Answered
            } else if self.overflowed || !self.asked {
                self.not_judged += 1;
                Window::NotJudged
            } else if let Some(p) = flooded {
                self.not_judged += 1;
                Window::Flooded(p)
            } else {
                self.failures = self.failures.saturating_add(1);
                Window::Unanswered(self.failures)
            };
            self.answered = false;
            self.overflowed = false;
            self.asked = false;
            out.push(j);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    fn q3() -> HealthTiming {
        tickpack_game::Health::Q3.default_timing()
    }

    #[test]
    fn unanswered_checks_count_up_and_an_answer_resets_them() {
        let mut l = Liveness::new(q3(), secs(0.0));
        assert!(l.check_due());
        assert!(!l.check_due());
        l.heard();
        assert_eq!(l.judge(secs(1.9)), vec![]);
        assert_eq!(l.judge(secs(2.0)), vec![Window::Answered]);
        assert!(l.check_due());
        assert_eq!(l.judge(secs(4.1)), vec![Window::Unanswered(1)]);
        assert!(l.check_due());
        assert_eq!(l.judge(secs(6.0)), vec![Window::Unanswered(2)]);
        assert!(l.check_due());
        l.heard();
        assert_eq!(l.judge(secs(8.0)), vec![Window::Answered]);
        assert_eq!(l.failures(), 0);
    }

    /// The bug this rule fixes: replies lost to the supervisor's own full
    /// queue were counted against the instance.
    #[test]
    fn a_window_in_which_the_supervisor_dropped_datagrams_is_not_held_against_the_instance() {
        let mut l = Liveness::new(q3(), secs(0.0));
        assert!(l.check_due());
        assert_eq!(l.judge(secs(2.0)), vec![Window::Unanswered(1)]);
        assert!(l.check_due());
        l.overflowed();
        assert_eq!(l.judge(secs(4.0)), vec![Window::NotJudged]);
        assert_eq!(l.failures(), 1, "neither counted nor forgiven");
        assert!(l.check_due());
        assert_eq!(l.judge(secs(6.0)), vec![Window::Unanswered(2)]);
        assert_eq!(l.not_judged, 1);
    }

    /// Issue 30, finding 2, for games tickpack did not write: a flood of
    /// queries starves the game's own answers (ioquake3 limits them for
    /// all sources together), and the host killed a healthy server. An
    /// unanswered window while datagrams pour in is not held against it.
    #[test]
    fn a_window_unanswered_under_a_flood_was_held_against_the_instance() {
        let mut l = Liveness::new(q3(), secs(0.0));
        // Answered windows at 1 200 datagrams/s (12 players at 100 Hz).
        let mut n = 0u64;
        let mut t = 0.0;
        let mut feed = |l: &mut Liveness, until: f64, pps: u64| {
            while t < until {
                t += 0.5;
                n += pps / 2;
                l.inbound(secs(t), n);
            }
        };
        assert!(l.check_due());
        l.heard();
        feed(&mut l, 2.0, 1_200);
        assert_eq!(l.judge(secs(2.0)), vec![Window::Answered]);
        // A flood of 20 000/s: three windows unanswered, none judged.
        for end in [4.0, 6.0, 8.0] {
            assert!(l.check_due());
            feed(&mut l, end, 20_000);
            let w = l.judge(secs(end));
            assert!(matches!(w[..], [Window::Flooded(p)] if p > 15_000), "{w:?}");
        }
        assert_eq!(l.failures(), 0);
        // The flood over, a hung server is caught as before.
        assert!(l.check_due());
        feed(&mut l, 10.0, 1_200);
        assert_eq!(l.judge(secs(10.0)), vec![Window::Unanswered(1)]);
    }

    /// The rule is relative: a busy server's usual rate is not a flood.
    #[test]
    fn a_busy_servers_usual_traffic_is_not_a_flood() {
        let mut l = Liveness::new(q3(), secs(0.0));
        let mut n = 0u64;
        for w in 1..=3u32 {
            assert!(l.check_due());
            l.heard();
            for k in 1..=4u32 {
                n += 15_000;
                l.inbound(secs(f64::from((w - 1) * 2) + f64::from(k) * 0.5), n);
            }
            assert_eq!(l.judge(secs(f64::from(w * 2))), vec![Window::Answered]);
        }
        // Unanswered at the same 30 000/s: a hung server, not a flood.
        assert!(l.check_due());
        for k in 1..=4u32 {
            n += 15_000;
            l.inbound(secs(6.0 + f64::from(k) * 0.5), n);
        }
        assert_eq!(l.judge(secs(8.0)), vec![Window::Unanswered(1)]);
    }

    #[test]
    fn windows_a_stalled_supervisor_never_asked_in_are_not_judged() {
        let mut l = Liveness::new(q3(), secs(0.0));
        assert!(l.check_due());
        assert_eq!(l.judge(secs(2.0)), vec![Window::Unanswered(1)]);
        // Asleep for 100 s: one window for all of it, and it was not asked.
        assert_eq!(l.judge(secs(102.0)), vec![Window::NotJudged]);
        assert!(l.check_due());
        assert_eq!(l.judge(secs(103.9)), vec![]);
        assert_eq!(l.judge(secs(104.0)), vec![Window::Unanswered(2)]);
    }
}
