//! One player's account of its commands over its measured span, the same
//! for every game: the commands sent and not yet reflected, those the
//! schedule had due while the player had no session (none could be sent:
//! all are lost), and the span's snapshots ([`Coverage`]). What differs
//! between games is only how a snapshot says which commands it reflects.
//!
//! Without a presence plan the span runs from the player's first hello
//! (plus [`CONNECT_GRACE_US`]) to the window's end. With one
//! ([`crate::presence`]) each presence is a span of its own, from the
//! join's first snapshot to the planned leave (both within the window):
//! an absent player and a join's handshake count nothing, and each
//! presence's snapshots are settled when the player leaves.

use std::collections::VecDeque;

use tickpack_wire::TickRate;

use crate::config::PlayerSettings;
use crate::coverage::Coverage;
use crate::emulated::RunEnd;
use crate::presence::Attendance;
use crate::recorder::Recorder;

/// A command sent and awaiting its reflection.
pub(crate) trait Pending: Copy {
    /// When the schedule had it due (monotonic microseconds): its latency
    /// counts from then.
    fn due_us(&self) -> u64;
}

/// The step of a schedule of `rate_hz` commands (or pings) a second, at
/// least 1 µs.
pub(crate) fn interval_us(rate_hz: f64) -> u64 {
    ((1e6 / rate_hz) as u64).max(1)
}

/// One player's commands against its span.
pub(crate) struct Ledger<T> {
    /// The span's snapshots: expected against received.
    pub coverage: Coverage,
    /// The schedule's step between commands.
    pub interval_us: u64,
    /// A command not reflected this long after it was due is lost.
    loss_deadline_us: u64,
    /// Commands sent and not yet reflected, oldest first.
    outstanding: VecDeque<T>,
    /// Since when the player has had no session (`None` while it has one).
    no_session_since_us: Option<u64>,
    /// A session began at least once.
    ever_connected: bool,
    /// When the current session began (its time goes to the windows'
    /// presence when it ends).
    session_since_us: Option<u64>,
    /// Where the player stands against its presence plan.
    pub attendance: Attendance,
    /// The run's measured window.
    window: (u64, u64),
}

impl<T: Pending> Ledger<T> {
    /// The ledger of a player that first says hello at `first_us` (it has
    /// no session until its first one begins), one command every
    /// `interval_us`, present as `attendance` says (with a plan, nothing
    /// is measured until its first join is done).
    pub fn new(
        first_us: u64,
        settings: &PlayerSettings,
        interval_us: u64,
        attendance: Attendance,
    ) -> Self {
        let (_, w1) = settings.window;
        let span = if attendance.planned() {
            (w1, w1)
        } else {
            measured_span(first_us, settings.window)
        };
        Self {
            coverage: Coverage::new(span),
            interval_us,
            loss_deadline_us: settings.loss_deadline_us,
            outstanding: VecDeque::new(),
            no_session_since_us: Some(first_us),
            ever_connected: false,
            session_since_us: None,
            attendance,
            window: settings.window,
        }
    }

    /// Whether a session began at least once.
    pub fn ever_connected(&self) -> bool {
        self.ever_connected
    }

    /// Whether a command due at `t_us` is measured (due in the span).
    pub fn in_span(&self, t_us: u64) -> bool {
        self.coverage.contains(t_us)
    }

    /// `command` went out: it awaits its reflection, and counts as sent if
    /// it was due in the span.
    pub fn sent(&mut self, command: T, rec: &mut Recorder) {
        if self.in_span(command.due_us()) {
            rec.command_sent(command.due_us());
        }
        self.outstanding.push_back(command);
    }

    /// Counts the commands whose loss deadline passed by `now_us`
    /// unreflected as lost, and forgets them.
    pub fn expire(&mut self, now_us: u64, rec: &mut Recorder) {
        self.coverage.expire_each(
            &mut self.outstanding,
            T::due_us,
            self.loss_deadline_us,
            now_us,
            |due| rec.command_lost(due),
        );
    }

    /// A session began at `now_us`: the commands due in the span since the
    /// last one ended could not be sent and are lost. Returns whether the
    /// player had had a session before; that is a reconnect (counted)
    /// unless the session is a planned join's.
    pub fn session_began(&mut self, now_us: u64, rec: &mut Recorder) -> bool {
        self.unsent_until(now_us, rec);
        let again = self.ever_connected;
        if again && !(self.attendance.planned() && self.attendance.joining()) {
            rec.reconnects += 1;
        }
        self.ever_connected = true;
        self.session_since_us.get_or_insert(now_us);
        again
    }

    /// Ends the time without a session at `to_us`, if there was one: the
    /// commands due in the span meanwhile could not be sent and are lost.
    fn unsent_until(&mut self, to_us: u64, rec: &mut Recorder) {
        if let Some(since) = self.no_session_since_us.take() {
            let n = self.coverage.due_in_span(since, to_us, self.interval_us);
            if let Some((a, b)) = self.coverage.clip(since, to_us) {
                rec.commands_unsent(a, b, self.interval_us, n);
            }
        }
    }

    /// The player has no session from `now_us` on (or from earlier, if it
    /// already had none).
    pub fn session_ended(&mut self, now_us: u64, rec: &mut Recorder) {
        self.no_session_since_us.get_or_insert(now_us);
        if let Some(since) = self.session_since_us.take() {
            rec.windows.presence(since, now_us);
        }
    }

    /// A snapshot of the session arrived at `now_us`: if it is a planned
    /// join's first, the join is done and the presence's span begins now
    /// (call before counting the snapshot).
    pub fn joined(&mut self, now_us: u64, rec: &mut Recorder) {
        if let Some(leave_us) = self.attendance.joined(now_us, rec) {
            if self.attendance.planned() {
                let (w0, w1) = self.window;
                self.coverage
                    .reopen((now_us.clamp(w0, w1), leave_us.clamp(w0, w1)));
            }
        }
    }

    /// The player leaves at `now_us` (its presence ended, or its join
    /// failed): the presence's account is settled like a run's end (the
    /// commands due without a session are lost; outstanding ones that can
    /// no longer be reflected too, all of them if `connected` is false;
    /// the snapshots counted, at `tick_hz` if the player never learned
    /// its server's rate), and nothing counts until the next join.
    pub fn left(&mut self, now_us: u64, connected: bool, tick_hz: TickRate, rec: &mut Recorder) {
        let end_us = self.coverage.span().1;
        self.unsent_until(now_us, rec);
        self.settle_outstanding(now_us, end_us, connected, rec);
        let tally = self.coverage.finish(end_us, tick_hz, &mut rec.windows);
        rec.snapshots.merge(&tally);
        let w1 = self.window.1;
        self.coverage.reopen((w1, w1));
        self.session_ended(now_us, rec);
    }

    /// The outstanding commands that can no longer be reflected at `now_us`
    /// (due in the span before `end_us`; all of them without a session,
    /// else those past their deadline) are lost; the rest are not judged.
    fn settle_outstanding(
        &mut self,
        now_us: u64,
        end_us: u64,
        connected: bool,
        rec: &mut Recorder,
    ) {
        let deadline = self.loss_deadline_us;
        for due in self.outstanding.iter().map(T::due_us) {
            if self.coverage.contains(due)
                && due < end_us
                && (!connected || due + deadline <= now_us)
            {
                rec.command_lost(due);
            }
        }
        self.outstanding.clear();
    }

    /// A snapshot that arrived at `now_us` shows the oldest outstanding
    /// commands, those for which `shown` holds: each is reflected, with its
    /// latency from its own due time (also pushed to `samples`, if the
    /// player keeps its own). Returns the newest of them.
    pub fn reflect(
        &mut self,
        now_us: u64,
        shown: impl Fn(&T) -> bool,
        mut samples: Option<&mut Vec<u32>>,
        rec: &mut Recorder,
    ) -> Option<T> {
        let mut newest = None;
        while let Some(c) = self.outstanding.front().copied() {
            if !shown(&c) {
                break;
            }
            self.outstanding.pop_front();
            let due = c.due_us();
            rec.reflected_command(
                due,
                now_us.saturating_sub(due),
                self.loss_deadline_us,
                self.in_span(due),
                samples.as_deref_mut(),
            );
            newest = Some(c);
        }
        newest
    }

    /// The server restarted: its snapshots are numbered afresh, and the
    /// commands for which `old` holds were sent to the old process and will
    /// never be reflected (lost, if due in the span).
    pub fn server_restarted(&mut self, old: impl Fn(&T) -> bool, rec: &mut Recorder) {
        self.coverage.new_piece(&mut rec.windows);
        let coverage = &self.coverage;
        self.outstanding.retain(|c| {
            let gone = old(c);
            if gone && coverage.contains(c.due_us()) {
                rec.command_lost(c.due_us());
            }
            !gone
        });
    }

    /// Settles the account at the end of the run: the commands due in the
    /// span without a session, and the outstanding ones that can no longer
    /// be reflected (all of them without a session, else those past their
    /// deadline), are lost; the span's snapshots are counted, at `tick_hz`
    /// if the player never learned its server's rate.
    pub fn finish(&mut self, end: &RunEnd, connected: bool, tick_hz: TickRate, rec: &mut Recorder) {
        self.unsent_until(end.span_end_us, rec);
        self.settle_outstanding(end.now_us, end.span_end_us, connected, rec);
        let tally = self
            .coverage
            .finish(end.span_end_us, tick_hz, &mut rec.windows);
        rec.snapshots.merge(&tally);
        self.session_ended(end.span_end_us, rec);
    }
}

/// A player is due to be connected this long after its first hello (or at
/// the end of the warm-up, if later): its measured span starts then.
pub const CONNECT_GRACE_US: u64 = 100_000;

/// The span a player measures: from [`CONNECT_GRACE_US`] after its first
/// hello (or the window's start, if later) to the window's end.
pub(crate) fn measured_span(first_us: u64, (w0, w1): (u64, u64)) -> (u64, u64) {
    ((first_us + CONNECT_GRACE_US).max(w0).min(w1), w1)
}
