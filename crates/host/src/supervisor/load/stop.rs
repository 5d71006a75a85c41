//! When a load command is stopped at the end of its step, decided without
//! doing it: [`Stopping`] is told the time and whether the command has
//! ended, and answers what to do next ([`Next`]): wait and ask again,
//! SIGTERM its process group, SIGKILL it, or nothing more. No clock, no
//! process: the tests below run it on a virtual clock.
//!
//! The rule ([`super::LoadProcess::finish`]): a load command has `grace`
//! past its step to end by itself; one still running then is sent
//! SIGTERM, and SIGKILL [`KILL_AFTER`] later. One that ended after its
//! SIGTERM was stopped all the same: it did not end by itself
//! ([`super::LoadExit::ok`]).

use std::time::{Duration, Instant};

/// How long a load command has between SIGTERM and SIGKILL.
pub(super) const KILL_AFTER: Duration = Duration::from_secs(1);

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Nothing yet: ask again after a nap.
    Wait,
    /// Send its process group SIGTERM, then ask again.
    Term,
    /// Send its process group SIGKILL and reap it: it was stopped.
    Kill,
    /// It ended (`stopped`: after our SIGTERM); nothing more to do.
    Ended { stopped: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Its grace time past the step.
    Grace,
    /// SIGTERM sent.
    Termed,
    /// Done: this was the last answer.
    Over(Next),
}

/// One load command being stopped.
#[derive(Debug)]
pub(super) struct Stopping {
    phase: Phase,
    /// When the current phase's wait ends.
    until: Instant,
}

impl Stopping {
    /// Starts at `now`: the command has `grace` to end by itself.
    pub(super) fn new(now: Instant, grace: Duration) -> Self {
        Self {
            phase: Phase::Grace,
            until: now + grace,
        }
    }

    /// What to do at `now`, the command having `ended` (reaped) or not.
    pub(super) fn next(&mut self, now: Instant, ended: bool) -> Next {
        let next = match self.phase {
            Phase::Over(last) => return last,
            _ if ended => Next::Ended {
                stopped: self.phase == Phase::Termed,
            },
            _ if now < self.until => return Next::Wait,
            Phase::Grace => {
                self.phase = Phase::Termed;
                self.until = now + KILL_AFTER;
                return Next::Term;
            }
            Phase::Termed => Next::Kill,
        };
        self.phase = Phase::Over(next);
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const GRACE: Duration = Duration::from_secs(10);

    /// Asks every 20 ms from `t0` (as `finish` naps) until an answer other
    /// than [`Next::Wait`]; `ends_at`: when the command ends by itself.
    fn run_until_done(t0: Instant, grace: Duration, ends_at: Option<Duration>) -> Vec<(u64, Next)> {
        let mut s = Stopping::new(t0, grace);
        let mut said = vec![];
        let mut t = Duration::ZERO;
        loop {
            let ended = ends_at.is_some_and(|e| t >= e);
            match s.next(t0 + t, ended) {
                Next::Wait => t += 20 * MS,
                n @ Next::Term => said.push((t.as_millis() as u64, n)),
                n => {
                    said.push((t.as_millis() as u64, n));
                    return said;
                }
            }
        }
    }

    #[test]
    fn one_that_ends_within_its_grace_is_not_stopped() {
        let said = run_until_done(Instant::now(), GRACE, Some(3_000 * MS));
        assert_eq!(said, [(3_000, Next::Ended { stopped: false })]);
    }

    #[test]
    fn one_still_running_gets_sigterm_after_its_grace_and_sigkill_a_second_later() {
        let said = run_until_done(Instant::now(), GRACE, None);
        assert_eq!(said, [(10_000, Next::Term), (11_000, Next::Kill)]);
    }

    #[test]
    fn one_that_ends_after_its_sigterm_was_stopped_all_the_same() {
        let said = run_until_done(Instant::now(), GRACE, Some(10_400 * MS));
        assert_eq!(
            said,
            [
                (10_000, Next::Term),
                (10_400, Next::Ended { stopped: true })
            ]
        );
    }

    #[test]
    fn one_that_had_ended_before_is_not_signalled() {
        let t0 = Instant::now();
        let mut s = Stopping::new(t0, Duration::ZERO);
        assert_eq!(s.next(t0, true), Next::Ended { stopped: false });
    }

    #[test]
    fn without_grace_sigterm_goes_at_once() {
        let t0 = Instant::now();
        let mut s = Stopping::new(t0, Duration::ZERO);
        assert_eq!(s.next(t0, false), Next::Term);
        assert_eq!(s.next(t0 + 999 * MS, false), Next::Wait);
        assert_eq!(s.next(t0 + KILL_AFTER, false), Next::Kill);
    }

    #[test]
    fn an_end_seen_at_its_deadline_wins_over_a_signal() {
        let t0 = Instant::now();
        let mut s = Stopping::new(t0, GRACE);
        assert_eq!(s.next(t0 + GRACE, true), Next::Ended { stopped: false });
        let mut s = Stopping::new(t0, GRACE);
        assert_eq!(s.next(t0 + GRACE, false), Next::Term);
        assert_eq!(
            s.next(t0 + GRACE + KILL_AFTER, true),
            Next::Ended { stopped: true }
        );
    }

    #[test]
    fn once_done_it_answers_the_same_and_signals_nothing_more() {
        let t0 = Instant::now();
        let mut s = Stopping::new(t0, Duration::ZERO);
        assert_eq!(s.next(t0, false), Next::Term);
        assert_eq!(s.next(t0 + KILL_AFTER, false), Next::Kill);
        for later in [2, 60] {
            assert_eq!(
                s.next(t0 + Duration::from_secs(later), false),
                Next::Kill,
                "asked again: the same answer, no new signal round"
            );
        }
        let mut s = Stopping::new(t0, GRACE);
        assert_eq!(s.next(t0, true), Next::Ended { stopped: false });
        assert_eq!(s.next(t0 + GRACE, false), Next::Ended { stopped: false });
    }
}
