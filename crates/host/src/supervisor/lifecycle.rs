//! One instance's life as a sans-I/O state machine, quinn's shape: the
//! supervisor tells it what happened ([`Lifecycle::handle`]: it started,
//! exited, showed it is ready, answered a check, a check window was
//! judged) and asks what to do now ([`Lifecycle::poll`]: start it again,
//! kill it, say something), passing `now` in. No clock, no process, no
//! socket: the tests below run starts, crashes, back-off, give-ups, start
//! limits and liveness kills on a virtual clock, without root.
//!
//! The rules it holds (the supervisor's I/O is in `supervisor.rs` and
//! `health.rs`):
//! - an exit asks the [`RestartTracker`]: restart after its back-off, or
//!   give up (failed);
//! - starting → running once it is ready (its log line, port, or first
//!   answer) and, with checks, answered once;
//! - not running within its start limit: killed (once), unless others keep
//!   it busy while its readiness already showed (it stays starting);
//! - a running instance whose checks go unanswered N windows in a row is
//!   unresponsive, and killed at the kill threshold; an answer brings it
//!   back to running;
//! - a window unanswered because others kept the server reading and
//!   running ([`Window::Contended`]) is said once per stretch and held
//!   against no one.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::liveness::Window;
use super::{RestartDecision, RestartTracker};
use crate::event::AfterExit;
use crate::fleet::RestartPolicy;
use crate::status::InstanceState;

/// What the lifecycle needs to know of its instance's game and host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// Unanswered windows in a row before it is unresponsive.
    pub unresponsive_after: u32,
    /// ... before it is killed (0: never).
    pub kill_after: u32,
    /// How long it may take to be running (`None`: no limit).
    pub start_limit: Option<Duration>,
    /// The host sends it checks (without, "answered" always holds).
    pub checked: bool,
    /// Its first answer is its readiness (no log line or port).
    pub ready_by_answer: bool,
}

/// What happened to the instance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Input {
    /// Its process was started.
    Started,
    /// It could not be started again; it is failed.
    StartFailed,
    /// Its process ended (reaped).
    Exited,
    /// Its readiness showed (its log line, its bound port, or, without
    /// checks, 200 ms alive).
    Ready,
    /// It answered a check.
    Answered,
    /// A check window was judged.
    Window(Window),
    /// The host is taking it down.
    Stopped,
}

/// Why it is to be killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// Not running within its start `limit` (`ready`: its readiness had
    /// shown, only the answer was missing).
    NeverReady { ready: bool, limit: Duration },
    /// `unanswered` checks in a row went unanswered.
    Unanswered { unanswered: u32 },
}

/// What the supervisor is to do or say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Start it (again) now.
    Spawn,
    /// Kill it; its exit is reported with [`Input::Exited`] later.
    Kill(Kill),
    /// It exited; this follows.
    Exited(AfterExit),
    /// It stopped answering (`unanswered` in a row).
    Unresponsive { unanswered: u32 },
    /// A window went unanswered while others kept it busy (said once per
    /// stretch).
    Contended { others: u64, cpu_ns: u64 },
}

/// One instance's state and what it still has to do.
#[derive(Debug)]
pub struct Lifecycle {
    rules: Rules,
    state: InstanceState,
    exits: RestartTracker,
    restart_at: Option<Instant>,
    restarts: u32,
    started: Instant,
    /// Its readiness showed since its last start.
    ready: bool,
    /// It answered a check since its last start.
    heard: bool,
    /// A kill was asked since its last start.
    killed: bool,
    /// Its last judged window was unanswered while others kept it busy.
    contended: bool,
    /// Its process runs (started, not reaped).
    alive: bool,
    actions: VecDeque<Action>,
}

impl Lifecycle {
    /// An instance about to be started for the first time at `now`.
    pub fn new(rules: Rules, restart: RestartPolicy, now: Instant) -> Self {
        Self {
            rules,
            state: InstanceState::Starting,
            exits: RestartTracker::new(restart),
            restart_at: None,
            restarts: 0,
            started: now,
            ready: false,
            heard: false,
            killed: false,
            contended: false,
            alive: false,
            actions: VecDeque::new(),
        }
    }

    pub fn state(&self) -> InstanceState {
        self.state
    }

    /// Restarts since the first start.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// When it was last started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Its readiness showed since its last start.
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// A kill was asked and its exit not reaped yet.
    pub fn killed(&self) -> bool {
        self.killed
    }

    /// The next moment [`Lifecycle::poll`] may have something to do
    /// without an input (a restart, a start limit).
    pub fn deadline(&self) -> Option<Instant> {
        match self.state {
            InstanceState::Restarting => self.restart_at,
            InstanceState::Starting if self.alive && !self.killed => {
                self.rules.start_limit.map(|l| self.started + l)
            }
            _ => None,
        }
    }

    /// Takes in what happened at `now`.
    pub fn handle(&mut self, now: Instant, input: Input) {
        match input {
            Input::Started => {
                self.state = InstanceState::Starting;
                self.started = now;
                self.ready = false;
                self.heard = false;
                self.killed = false;
                self.contended = false;
                self.alive = true;
            }
            Input::StartFailed => {
                self.state = InstanceState::Failed;
                self.alive = false;
            }
            Input::Exited => {
                self.alive = false;
                self.killed = false;
                if self.state == InstanceState::Stopped {
                    return;
                }
                let after = match self.exits.exited(now) {
                    RestartDecision::GiveUp { exits_in_window } => {
                        self.state = InstanceState::Failed;
                        AfterExit::GiveUp {
                            exits: exits_in_window,
                            window_s: self.exits.window_s(),
                        }
                    }
                    RestartDecision::RestartAt { at, backoff_ms } => {
                        self.state = InstanceState::Restarting;
                        self.restart_at = Some(at);
                        AfterExit::Restart { in_ms: backoff_ms }
                    }
                };
                self.actions.push_back(Action::Exited(after));
            }
            Input::Ready => {
                self.ready = self.alive;
                self.promote();
            }
            Input::Answered => {
                if !self.alive {
                    return;
                }
                self.heard = true;
                if self.rules.ready_by_answer && self.state == InstanceState::Starting {
                    self.ready = true;
                }
                if self.ready && self.state == InstanceState::Unresponsive {
                    self.state = InstanceState::Running;
                }
                self.promote();
            }
            Input::Window(w) => self.judged(w),
            Input::Stopped => {
                self.state = InstanceState::Stopped;
                self.restart_at = None;
            }
        }
    }

    /// What to do at `now`, one action at a time (`None`: nothing now).
    pub fn poll(&mut self, now: Instant) -> Option<Action> {
        if let Some(a) = self.actions.pop_front() {
            return Some(a);
        }
        match self.state {
            InstanceState::Restarting if self.restart_at.is_some_and(|t| t <= now) => {
                self.restart_at = None;
                self.restarts += 1;
                Some(Action::Spawn)
            }
            InstanceState::Starting if self.alive && !self.killed => {
                let limit = self.rules.start_limit?;
                // Kept busy by others after its readiness showed: it has
                // started; it stays starting until answered.
                let started_busy = self.contended && (self.ready || self.rules.ready_by_answer);
                if self.running_condition() || started_busy || now <= self.started + limit {
                    return None;
                }
                self.killed = true;
                Some(Action::Kill(Kill::NeverReady {
                    ready: self.ready,
                    limit,
                }))
            }
            _ => None,
        }
    }

    fn answered(&self) -> bool {
        !self.rules.checked || self.heard
    }

    fn running_condition(&self) -> bool {
        self.ready && self.answered()
    }

    fn promote(&mut self) {
        if self.alive && self.state == InstanceState::Starting && self.running_condition() {
            self.state = InstanceState::Running;
        }
    }

    fn judged(&mut self, w: Window) {
        if !self.alive || self.killed {
            return;
        }
        match w {
            Window::Contended { others, cpu_ns } => {
                if !self.contended {
                    self.actions.push_back(Action::Contended { others, cpu_ns });
                }
                self.contended = true;
            }
            Window::NotJudged => {}
            Window::Answered => self.contended = false,
            Window::Unanswered(n) => {
                self.contended = false;
                // A start is judged by its start limit, not its windows.
                if !self.running_condition() || !self.rules.checked {
                    return;
                }
                if n >= self.rules.unresponsive_after && self.state == InstanceState::Running {
                    self.state = InstanceState::Unresponsive;
                    self.actions
                        .push_back(Action::Unresponsive { unanswered: n });
                }
                if self.rules.kill_after > 0 && n >= self.rules.kill_after {
                    self.killed = true;
                    self.actions
                        .push_back(Action::Kill(Kill::Unanswered { unanswered: n }));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn rules() -> Rules {
        Rules {
            unresponsive_after: 3,
            kill_after: 5,
            start_limit: Some(Duration::from_secs(15)),
            checked: true,
            ready_by_answer: true,
        }
    }

    fn policy() -> RestartPolicy {
        RestartPolicy {
            max_crashes: 5,
            window_s: 30.0,
            backoff_ms: 100,
            max_backoff_ms: 5000,
            ..RestartPolicy::default()
        }
    }

    /// Every action due at `now`.
    fn drain(l: &mut Lifecycle, now: Instant) -> Vec<Action> {
        std::iter::from_fn(|| l.poll(now)).collect()
    }

    /// A started, answered, running instance at `t0`.
    fn running(t0: Instant) -> Lifecycle {
        let mut l = Lifecycle::new(rules(), policy(), t0);
        l.handle(t0, Input::Started);
        l.handle(t0 + MS, Input::Answered);
        assert_eq!(l.state(), InstanceState::Running);
        l
    }

    #[test]
    fn a_crashing_instance_is_restarted_with_a_doubling_back_off_then_given_up() {
        let t0 = Instant::now();
        let mut l = running(t0);
        let mut t = t0 + Duration::from_secs(1);
        let mut waits = vec![];
        loop {
            l.handle(t, Input::Exited);
            match drain(&mut l, t).as_slice() {
                [Action::Exited(AfterExit::Restart { in_ms })] => {
                    waits.push(*in_ms);
                    // Not a moment early.
                    assert_eq!(l.poll(t + Duration::from_millis(*in_ms) - MS), None);
                    t += Duration::from_millis(*in_ms);
                    assert_eq!(l.poll(t), Some(Action::Spawn));
                    l.handle(t, Input::Started);
                    assert_eq!(l.state(), InstanceState::Starting);
                    t += 10 * MS;
                }
                [Action::Exited(AfterExit::GiveUp { exits, .. })] => {
                    assert_eq!(*exits, 5);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(waits, [100, 200, 400, 800]);
        assert_eq!(l.state(), InstanceState::Failed);
        assert_eq!(l.restarts(), 4);
        assert_eq!(l.deadline(), None, "a failed instance waits for nothing");
        assert_eq!(l.poll(t + Duration::from_secs(60)), None);
    }

    #[test]
    fn exits_older_than_the_window_are_forgotten() {
        let t0 = Instant::now();
        let mut l = running(t0);
        let mut t = t0;
        for _ in 0..10 {
            t += Duration::from_secs(31);
            l.handle(t, Input::Exited);
            assert_eq!(
                drain(&mut l, t),
                [Action::Exited(AfterExit::Restart { in_ms: 100 })]
            );
            t += 100 * MS;
            assert_eq!(l.poll(t), Some(Action::Spawn));
            l.handle(t, Input::Started);
        }
        assert_eq!(l.restarts(), 10);
    }

    #[test]
    fn a_restart_that_cannot_start_leaves_it_failed() {
        let t0 = Instant::now();
        let mut l = running(t0);
        l.handle(t0 + Duration::from_secs(1), Input::Exited);
        let t = t0 + Duration::from_secs(2);
        drain(&mut l, t);
        l.handle(t, Input::StartFailed);
        assert_eq!(l.state(), InstanceState::Failed);
        assert_eq!(drain(&mut l, t + Duration::from_secs(60)), []);
    }

    #[test]
    fn an_instance_not_running_within_its_start_limit_is_killed_once() {
        let t0 = Instant::now();
        let mut l = Lifecycle::new(rules(), policy(), t0);
        l.handle(t0, Input::Started);
        assert_eq!(l.deadline(), Some(t0 + Duration::from_secs(15)));
        assert_eq!(l.poll(t0 + Duration::from_secs(15)), None, "at the limit");
        let late = t0 + Duration::from_secs(15) + MS;
        assert_eq!(
            l.poll(late),
            Some(Action::Kill(Kill::NeverReady {
                ready: false,
                limit: Duration::from_secs(15)
            }))
        );
        assert_eq!(l.poll(late + Duration::from_secs(1)), None, "asked once");
        // Its windows are not held against a start.
        l.handle(late, Input::Window(Window::Unanswered(9)));
        assert_eq!(drain(&mut l, late), []);
        l.handle(late + MS, Input::Exited);
        assert!(matches!(
            drain(&mut l, late + MS)[..],
            [Action::Exited(AfterExit::Restart { .. })]
        ));
    }

    #[test]
    fn a_ready_log_without_an_answer_is_still_a_start() {
        let t0 = Instant::now();
        let r = Rules {
            ready_by_answer: false,
            ..rules()
        };
        let mut l = Lifecycle::new(r, policy(), t0);
        l.handle(t0, Input::Started);
        l.handle(t0 + MS, Input::Ready);
        assert_eq!(l.state(), InstanceState::Starting, "not answered yet");
        assert_eq!(
            l.poll(t0 + Duration::from_secs(16)),
            Some(Action::Kill(Kill::NeverReady {
                ready: true,
                limit: Duration::from_secs(15)
            }))
        );
        // Without checks, its readiness is enough.
        let mut l = Lifecycle::new(
            Rules {
                checked: false,
                ..r
            },
            policy(),
            t0,
        );
        l.handle(t0, Input::Started);
        l.handle(t0 + MS, Input::Ready);
        assert_eq!(l.state(), InstanceState::Running);
    }

    #[test]
    fn a_start_kept_busy_by_a_flood_is_not_killed_at_its_limit() {
        let t0 = Instant::now();
        let mut l = Lifecycle::new(rules(), policy(), t0);
        l.handle(t0, Input::Started);
        let t = t0 + Duration::from_secs(10);
        l.handle(
            t,
            Input::Window(Window::Contended {
                others: 900,
                cpu_ns: 50_000_000,
            }),
        );
        assert_eq!(
            drain(&mut l, t),
            [Action::Contended {
                others: 900,
                cpu_ns: 50_000_000
            }]
        );
        // Said once per stretch.
        l.handle(
            t,
            Input::Window(Window::Contended {
                others: 5,
                cpu_ns: 1,
            }),
        );
        assert_eq!(drain(&mut l, t + Duration::from_secs(30)), []);
        assert_eq!(l.state(), InstanceState::Starting);
        // The flood over and still no answer: the limit applies again.
        l.handle(t, Input::Window(Window::Unanswered(1)));
        assert!(matches!(
            l.poll(t + Duration::from_secs(30)),
            Some(Action::Kill(Kill::NeverReady { .. }))
        ));
    }

    #[test]
    fn unanswered_windows_make_it_unresponsive_then_killed_and_an_answer_brings_it_back() {
        let t0 = Instant::now();
        let mut l = running(t0);
        let t = t0 + Duration::from_secs(5);
        for n in 1..3 {
            l.handle(t, Input::Window(Window::Unanswered(n)));
        }
        assert_eq!(drain(&mut l, t), []);
        l.handle(t, Input::Window(Window::Unanswered(3)));
        assert_eq!(drain(&mut l, t), [Action::Unresponsive { unanswered: 3 }]);
        assert_eq!(l.state(), InstanceState::Unresponsive);
        l.handle(t, Input::Answered);
        assert_eq!(l.state(), InstanceState::Running);
        for n in 1..=5 {
            l.handle(t, Input::Window(Window::Unanswered(n)));
        }
        assert_eq!(
            drain(&mut l, t),
            [
                Action::Unresponsive { unanswered: 3 },
                Action::Kill(Kill::Unanswered { unanswered: 5 })
            ]
        );
        // Killed: nothing more is judged until it is reaped and restarted.
        l.handle(t, Input::Window(Window::Unanswered(6)));
        assert_eq!(drain(&mut l, t), []);
        l.handle(t + MS, Input::Exited);
        assert!(matches!(
            drain(&mut l, t + MS)[..],
            [Action::Exited(AfterExit::Restart { in_ms: 100 })]
        ));
    }

    #[test]
    fn a_stopped_instance_is_not_restarted() {
        let t0 = Instant::now();
        let mut l = running(t0);
        l.handle(t0, Input::Stopped);
        l.handle(t0 + MS, Input::Exited);
        assert_eq!(drain(&mut l, t0 + Duration::from_secs(60)), []);
        assert_eq!(l.state(), InstanceState::Stopped);
    }
}
