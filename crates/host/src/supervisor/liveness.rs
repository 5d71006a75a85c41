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
}

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
        }
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
            let j = if self.answered {
                self.failures = 0;
                Window::Answered
            } else if self.overflowed || !self.asked {
                self.not_judged += 1;
                Window::NotJudged
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
