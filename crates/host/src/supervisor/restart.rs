//! The restart policy as a pure tracker: fed the times an instance exited,
//! it answers "restart at T" or "give up". No clock, no process: the
//! supervisor passes `now` in (quinn's habit), so the tests below run the
//! policy on a virtual clock in microseconds.
//!
//! The rule ([`RestartPolicy`], by default): exits older than the window
//! (30 s) are forgotten; an exit that brings the count within the window to
//! `max_crashes` (5) gives up; otherwise the restart waits `backoff_ms`
//! (100 ms) doubled per earlier exit still in the window, at most
//! `max_backoff_ms` (5 s).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::fleet::RestartPolicy;

/// What to do after an exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartDecision {
    /// Start the instance again at `at` (`backoff_ms` after the exit).
    RestartAt {
        /// When to restart.
        at: Instant,
        /// The delay, in milliseconds.
        backoff_ms: u64,
    },
    /// Too many exits within the window: leave the instance failed.
    GiveUp {
        /// How many exits the window holds, this one included.
        exits_in_window: usize,
    },
}

/// One instance's recent exits and what they mean under a [`RestartPolicy`].
#[derive(Debug, Clone)]
pub struct RestartTracker {
    policy: RestartPolicy,
    /// Exit times within the window, oldest first.
    exits: VecDeque<Instant>,
}

impl RestartTracker {
    /// A tracker that has seen no exit.
    pub fn new(policy: RestartPolicy) -> RestartTracker {
        RestartTracker {
            policy,
            exits: VecDeque::new(),
        }
    }

    /// Records an exit at `now` and decides what follows.
    pub fn exited(&mut self, now: Instant) -> RestartDecision {
        let policy = &self.policy;
        self.exits.push_back(now);
        while self
            .exits
            .front()
            .is_some_and(|t| now.duration_since(*t).as_secs_f64() > policy.window_s)
        {
            self.exits.pop_front();
        }
        if self.exits.len() as u32 >= policy.max_crashes {
            RestartDecision::GiveUp {
                exits_in_window: self.exits.len(),
            }
        } else {
            let backoff_ms = policy
                .backoff_ms
                .saturating_mul(1 << (self.exits.len() as u32 - 1).min(16))
                .min(policy.max_backoff_ms);
            RestartDecision::RestartAt {
                at: now + Duration::from_millis(backoff_ms),
                backoff_ms,
            }
        }
    }

    /// The window the exits are counted in, in seconds (for messages).
    pub fn window_s(&self) -> f64 {
        self.policy.window_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn backoff(d: RestartDecision) -> u64 {
        match d {
            RestartDecision::RestartAt { backoff_ms, .. } => backoff_ms,
            RestartDecision::GiveUp { .. } => panic!("gave up, expected a restart"),
        }
    }

    #[test]
    fn first_exit_restarts_after_the_base_backoff() {
        let t0 = Instant::now();
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        assert_eq!(
            tracker.exited(t0),
            RestartDecision::RestartAt {
                at: t0 + ms(100),
                backoff_ms: 100
            }
        );
    }

    #[test]
    fn backoff_doubles_per_exit_in_the_window() {
        let t0 = Instant::now();
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        let got: Vec<u64> = (0..4)
            .map(|k| backoff(tracker.exited(t0 + ms(1_000 * k))))
            .collect();
        assert_eq!(got, [100, 200, 400, 800]);
    }

    #[test]
    fn fifth_exit_within_the_window_gives_up() {
        let t0 = Instant::now();
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        for k in 0..4 {
            backoff(tracker.exited(t0 + ms(7_000 * k)));
        }
        // 28 s after the first: all five inside 30 s.
        assert_eq!(
            tracker.exited(t0 + ms(28_000)),
            RestartDecision::GiveUp { exits_in_window: 5 }
        );
    }

    #[test]
    fn exits_older_than_the_window_are_forgotten() {
        let t0 = Instant::now();
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        for k in 0..4 {
            backoff(tracker.exited(t0 + ms(1_000 * k)));
        }
        // At 32.5 s the exits at 0, 1 and 2 s are more than 30 s old and
        // forgotten; the one at 3 s is not: two in the window.
        assert_eq!(backoff(tracker.exited(t0 + ms(32_500))), 200);
    }

    #[test]
    fn an_exit_exactly_at_the_window_edge_still_counts() {
        let t0 = Instant::now();
        let mut tracker = RestartTracker::new(RestartPolicy::default());
        backoff(tracker.exited(t0));
        // Forgotten only when strictly older than 30 s: exactly 30 s counts.
        assert_eq!(backoff(tracker.exited(t0 + ms(30_000))), 200);
        // 60.001 s: both earlier exits are now more than 30 s old.
        assert_eq!(backoff(tracker.exited(t0 + ms(60_001))), 100);
    }

    #[test]
    fn backoff_is_capped_at_the_maximum() {
        let t0 = Instant::now();
        let policy = RestartPolicy {
            max_crashes: 100,
            ..RestartPolicy::default()
        };
        let mut tracker = RestartTracker::new(policy);
        let got: Vec<u64> = (0..9)
            .map(|k| backoff(tracker.exited(t0 + ms(k))))
            .collect();
        assert_eq!(got, [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    }

    #[test]
    fn doubling_stops_after_sixteen_steps() {
        let t0 = Instant::now();
        let policy = RestartPolicy {
            max_crashes: 100,
            backoff_ms: 1,
            max_backoff_ms: u64::MAX,
            ..RestartPolicy::default()
        };
        let mut tracker = RestartTracker::new(policy);
        let got: Vec<u64> = (0..20)
            .map(|k| backoff(tracker.exited(t0 + ms(k))))
            .collect();
        assert_eq!(got[16..], [65_536; 4]);
        assert_eq!(got[15], 32_768);
    }
}
