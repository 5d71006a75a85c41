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
//! - Not answered while others kept it busy, on [`Evidence`] that needs no
//!   token of the game's own budget: in the window its server read more
//!   datagrams than the host sent it (others send to it, at any rate) and
//!   its CPU time grew. Not judged, counted as contended: a game tickpack
//!   did not write may starve its answers when others use up its query
//!   budget (ioquake3 answers about 10 queries a second for all sources
//!   together); killing it then would hand them what they wanted.
//! - Not answered otherwise: one more unanswered check. So a server that
//!   stopped (SIGSTOP, a deadlock: it reads nothing and its CPU time
//!   stands still) or spins without reading its socket (CPU time grows,
//!   reads do not) is killed as fast as with no traffic at all, whatever
//!   others send it. What cannot be told from outside: a server whose
//!   network loop still reads while its game is stuck looks alive as long
//!   as others send to it (the game's own query is then the only proof).
//! - No evidence (it could not be read, the process backend has no
//!   per-instance counters, the first window has no baseline): judged on
//!   the check alone, as before.
//!
//! The supervisor turns the count into states with the check's
//! [`HealthTiming`]: `unresponsive` at `unresponsive_after`, killed at
//! `kill_after` (never when 0). Before an instance is ready and has
//! answered once, only its start time limit applies (`health.rs`).
//!
//! Order per poll: [`Liveness::window_over`] (then read the evidence and
//! hand it to [`Liveness::evidence`]), [`Liveness::judge`], then
//! [`Liveness::check_due`] and [`Liveness::sent`] for what goes out, and
//! [`Liveness::heard`] for what comes back.

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
    /// Unanswered while others kept it busy: its server read `others`
    /// datagrams beyond the host's checks in the window and used `cpu_ns`
    /// of CPU time.
    Contended {
        others: u64,
        cpu_ns: u64,
    },
}

/// What the host reads of an instance without asking it: kernel counters
/// of everything the instance did so far, read at a window's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Evidence {
    /// Its CPU time (its cgroup's), nanoseconds.
    pub cpu_ns: Option<u64>,
    /// The UDP datagrams its processes read from their sockets (its own
    /// network namespace's count: the kernel counts a datagram when a
    /// program reads it, not when it arrives).
    pub read: Option<u64>,
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
    /// Windows not judged because others kept the instance busy.
    pub contended: u64,
    /// Datagrams the host sent the instance in the current window.
    sent: u64,
    /// The evidence read at the end of the previous window, and the
    /// latest read since.
    baseline: Option<Evidence>,
    latest: Option<Evidence>,
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
            contended: 0,
            sent: 0,
            baseline: None,
            latest: None,
        }
    }

    /// Whether a window is over at `now`: read the evidence then, before
    /// [`Self::judge`].
    pub fn window_over(&self, now: Duration) -> bool {
        now >= self.window_start + self.interval
    }

    /// When the current window ends (on the query clock).
    pub fn window_end(&self) -> Duration {
        self.window_start + self.interval
    }

    /// The instance's evidence as read now (the latest read before a
    /// window is judged closes it).
    pub fn evidence(&mut self, e: Evidence) {
        self.latest = Some(e);
    }

    /// A datagram the host sent the instance (a check, or its retry).
    pub fn sent(&mut self) {
        self.sent = self.sent.saturating_add(1);
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

    /// Whether others kept the instance busy in the window now ending:
    /// its server read datagrams beyond the host's and used CPU time.
    fn busy_with_others(&self) -> Option<Window> {
        let (b, l) = (self.baseline?, self.latest?);
        let read = l.read?.checked_sub(b.read?)?;
        let cpu_ns = l.cpu_ns?.checked_sub(b.cpu_ns?)?;
        let others = read.saturating_sub(self.sent);
        (others > 0 && cpu_ns > 0).then_some(Window::Contended { others, cpu_ns })
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
            let busy = self.busy_with_others();
            // The next window's evidence starts from this one's last read
            // (none if it was not read: that window has no evidence).
            self.baseline = self.latest.take();
            let j = if self.answered {
                self.failures = 0;
                Window::Answered
            } else if self.overflowed || !self.asked {
                self.not_judged += 1;
                Window::NotJudged
            } else if let Some(w) = busy {
                self.contended += 1;
                w
            } else {
                self.failures = self.failures.saturating_add(1);
                Window::Unanswered(self.failures)
            };
            self.answered = false;
            self.overflowed = false;
            self.asked = false;
            self.sent = 0;
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

    /// One window of a driver on the virtual clock: the check sent (one
    /// datagram), answered or not, the evidence read at its end `end`
    /// (if any), judged.
    fn window(l: &mut Liveness, end: f64, answered: bool, ev: Option<Evidence>) -> Vec<Window> {
        assert!(l.check_due());
        l.sent();
        if answered {
            l.heard();
        }
        assert!(!l.window_over(secs(end) - secs(0.05)));
        assert!(l.window_over(secs(end)));
        if let Some(e) = ev {
            l.evidence(e);
        }
        l.judge(secs(end))
    }

    /// A server's counters: what it read so far and its CPU time (ms).
    fn ev(read: u64, cpu_ms: u64) -> Option<Evidence> {
        Some(Evidence {
            read: Some(read),
            cpu_ns: Some(cpu_ms * 1_000_000),
        })
    }

    /// Issue 38, item 1: 500 getinfo a second from 250 addresses used up
    /// ioquake3's query budget, far below the 10 000 a second the rule
    /// then took for a flood; the host's checks went unanswered and it
    /// killed a healthy server. Now an unanswered window in which the
    /// server read datagrams from others and ran is not held against it,
    /// for as long as that lasts (90 s here).
    #[test]
    fn a_slow_query_flood_got_a_healthy_server_killed() {
        let mut l = Liveness::new(q3(), secs(0.0));
        // Answered, with a baseline read at the first window's end.
        assert_eq!(window(&mut l, 2.0, true, ev(5, 40)), vec![Window::Answered]);
        let (mut read, mut cpu) = (5, 40);
        for w in 2..=46u32 {
            // 1 000 datagrams of others and the host's check read, 60 ms
            // of CPU in each window.
            read += 1_001;
            cpu += 60;
            let got = window(&mut l, f64::from(w) * 2.0, false, ev(read, cpu));
            assert_eq!(
                got,
                vec![Window::Contended {
                    others: 1_000,
                    cpu_ns: 60_000_000
                }],
                "window {w}"
            );
        }
        assert_eq!(l.failures(), 0);
        assert_eq!(l.contended, 45);
        // At any rate: one datagram of another in the window is enough.
        assert_eq!(
            window(&mut l, 94.0, false, ev(read + 2, cpu + 1)),
            vec![Window::Contended {
                others: 1,
                cpu_ns: 1_000_000
            }]
        );
        assert_eq!(l.failures(), 0);
    }

    /// The other side: a stopped server (SIGSTOP, a deadlock) reads
    /// nothing and uses no CPU, whatever others send it: counted as with
    /// no traffic, killed as fast.
    #[test]
    fn a_stopped_server_is_counted_as_before() {
        let mut l = Liveness::new(q3(), secs(0.0));
        assert_eq!(
            window(&mut l, 2.0, true, ev(500, 40)),
            vec![Window::Answered]
        );
        for n in 1..=4u32 {
            let got = window(&mut l, 2.0 + f64::from(n) * 2.0, false, ev(500, 40));
            assert_eq!(got, vec![Window::Unanswered(n)]);
        }
        assert_eq!(l.contended, 0);
    }

    /// A server spinning without reading its socket burns CPU: reading is
    /// what tells it from a busy one, so it is counted.
    #[test]
    fn a_server_spinning_without_reading_is_counted() {
        let mut l = Liveness::new(q3(), secs(0.0));
        assert_eq!(
            window(&mut l, 2.0, true, ev(500, 40)),
            vec![Window::Answered]
        );
        for n in 1..=4u32 {
            let cpu = 40 + u64::from(n) * 2_000;
            let got = window(&mut l, 2.0 + f64::from(n) * 2.0, false, ev(500, cpu));
            assert_eq!(got, vec![Window::Unanswered(n)]);
        }
    }

    /// Reading only the host's own checks and never answering is no
    /// evidence of others: counted.
    #[test]
    fn a_server_that_reads_only_the_hosts_checks_is_counted() {
        let mut l = Liveness::new(q3(), secs(0.0));
        assert_eq!(window(&mut l, 2.0, true, ev(1, 10)), vec![Window::Answered]);
        for n in 1..=3u32 {
            let got = window(
                &mut l,
                2.0 + f64::from(n) * 2.0,
                false,
                ev(1 + u64::from(n), 10 + u64::from(n)),
            );
            assert_eq!(got, vec![Window::Unanswered(n)]);
        }
        // An A2S check and its retry with the challenge: two sent.
        assert!(l.check_due());
        l.sent();
        l.sent();
        l.evidence(Evidence {
            read: Some(6),
            cpu_ns: Some(20_000_000),
        });
        assert_eq!(l.judge(secs(10.0)), vec![Window::Unanswered(4)]);
    }

    /// Without evidence (none read, half of it, no baseline yet, a read
    /// missed at the last window's end) a window is judged on the check
    /// alone.
    #[test]
    fn without_evidence_a_window_is_judged_on_the_check_alone() {
        let mut l = Liveness::new(q3(), secs(0.0));
        // The first window has no baseline.
        assert_eq!(
            window(&mut l, 2.0, false, ev(900, 50)),
            vec![Window::Unanswered(1)]
        );
        // Nothing read at its end: no evidence, and no baseline next.
        assert_eq!(
            window(&mut l, 4.0, false, None),
            vec![Window::Unanswered(2)]
        );
        assert_eq!(
            window(&mut l, 6.0, false, ev(2_000, 90)),
            vec![Window::Unanswered(3)]
        );
        // Half of it (the process backend has no namespace of its own).
        let half = Evidence {
            read: None,
            cpu_ns: Some(200_000_000),
        };
        assert_eq!(
            window(&mut l, 8.0, false, Some(half)),
            vec![Window::Unanswered(4)]
        );
        assert_eq!(
            window(&mut l, 10.0, false, ev(3_000, 300)),
            vec![Window::Unanswered(5)]
        );
        // Counters that went back are no evidence either.
        assert_eq!(
            window(&mut l, 12.0, false, ev(10, 1)),
            vec![Window::Unanswered(6)]
        );
        assert_eq!(l.contended, 0);
    }

    /// Issue 30, finding 2: under a flood of 20 000 queries a second the
    /// game's answers starve; the server reads the flood and runs, so the
    /// windows are not held against it (then only above 10 000 a second;
    /// now at any rate). Once the flood is over, a server that hangs is
    /// caught as before.
    #[test]
    fn a_window_unanswered_under_a_flood_was_held_against_the_instance() {
        let mut l = Liveness::new(q3(), secs(0.0));
        assert_eq!(
            window(&mut l, 2.0, true, ev(2_400, 100)),
            vec![Window::Answered]
        );
        let (mut read, mut cpu) = (2_400, 100);
        for end in [4.0, 6.0, 8.0] {
            read += 40_001;
            cpu += 900;
            let w = window(&mut l, end, false, ev(read, cpu));
            assert!(
                matches!(w[..], [Window::Contended { others: 40_000, .. }]),
                "{w:?}"
            );
        }
        assert_eq!(l.failures(), 0);
        // Hung: it reads nothing more, the flood is over or not.
        assert_eq!(
            window(&mut l, 10.0, false, ev(read, cpu)),
            vec![Window::Unanswered(1)]
        );
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
