//! When each player is present: the presence plan of a run (players that
//! come and go) and, per player, where it stands against it.
//!
//! A [`PresencePlan`] gives each player (by its index in the run, the index
//! that assigns it a server round robin) the spans `[from, until)` during
//! which it is present, as durations **from the run's start** (the start
//! of the warm-up; the measured window begins `warmup` later). Without a
//! plan every player is present the whole run, as before plans existed.
//!
//! A present player plays; an absent one sends nothing. At a span's start
//! the player *joins*: a fresh handshake, from its first packet to the
//! first snapshot of the session it makes (its *join time*). A join not
//! done within the join timeout (or before its span ends) *fails*: the
//! player stays away until its next span, which it joins again. At a
//! span's end the player *leaves* the way its game expects (a goodbye, not
//! silence). What a player measures is counted only while it is present
//! and joined ([`crate::ledger`]): an absent player is no outage, and
//! neither is a join's handshake; a join that fails is counted as such.
//!
//! [`Attendance`] is one player's state against its plan: sans-I/O, it
//! says when the next change is due and what it is; the player does the
//! protocol's part (handshake, goodbye).

use std::time::Duration;

use crate::recorder::Recorder;

/// One span of a player's presence, `[from, until)`, both counted from the
/// run's start (the warm-up's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PresenceSpan {
    /// When the player joins, from the run's start.
    pub from: Duration,
    /// When it leaves, from the run's start.
    pub until: Duration,
}

/// Which players are present when (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PresencePlan {
    per_player: Vec<Vec<PresenceSpan>>,
}

impl PresencePlan {
    /// A plan from each player's spans, in player order, every span counted
    /// from the run's start. Checked by [`PresencePlan::check`].
    pub fn since_run_start(per_player: Vec<Vec<PresenceSpan>>) -> Self {
        Self { per_player }
    }

    /// How many players the plan is for.
    pub fn players(&self) -> usize {
        self.per_player.len()
    }

    /// Player `index`'s spans (none past the plan's players).
    pub fn spans(&self, index: usize) -> &[PresenceSpan] {
        self.per_player.get(index).map_or(&[], Vec::as_slice)
    }

    /// The plan fits a run of `players` players: one list per player, each
    /// span non-empty and after the one before it (a span may begin where
    /// the last ended: the player leaves and joins again at once).
    pub fn check(&self, players: usize) -> Result<(), String> {
        if self.per_player.len() != players {
            return Err(format!(
                "the presence plan is for {} players, the run has {players}",
                self.per_player.len()
            ));
        }
        for (i, spans) in self.per_player.iter().enumerate() {
            let mut last_end = Duration::ZERO;
            for s in spans {
                if s.from >= s.until {
                    return Err(format!(
                        "player {i}'s presence [{:?}, {:?}) is empty",
                        s.from, s.until
                    ));
                }
                if s.from < last_end {
                    return Err(format!(
                        "player {i}'s presence [{:?}, {:?}) begins before the one before it \
                         ends ({last_end:?}): spans must be in order and apart",
                        s.from, s.until
                    ));
                }
                last_end = s.until;
            }
        }
        Ok(())
    }
}

/// One player's presence in the run's monotonic microseconds, what its
/// constructor takes: present all the time, or planned spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presence {
    /// `[join, leave)` (µs, before the player's own phase is added);
    /// `None`: present the whole run.
    spans: Option<Vec<(u64, u64)>>,
    /// A join not done this long after its first packet failed.
    join_timeout_us: u64,
}

impl Presence {
    /// Present the whole run (no plan): the player joins once at the start
    /// and gives up at its connect deadline.
    pub fn always() -> Self {
        Self {
            spans: None,
            join_timeout_us: u64::MAX,
        }
    }

    /// Present during `spans` (from the run's start at `start_us`); a join
    /// not done within `join_timeout` fails.
    pub fn planned(spans: &[PresenceSpan], start_us: u64, join_timeout: Duration) -> Self {
        let at = |d: Duration| start_us.saturating_add(d.as_micros() as u64);
        Self {
            spans: Some(spans.iter().map(|s| (at(s.from), at(s.until))).collect()),
            join_timeout_us: (join_timeout.as_micros() as u64).max(1),
        }
    }
}

/// Where a player stands against its presence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Away (planned), until the next span.
    Absent,
    /// Handshaking since `since_us` (its first packet); the span ends at
    /// `leave_us`.
    Joining { since_us: u64, leave_us: u64 },
    /// Joined; leaves at `leave_us`.
    Present { leave_us: u64 },
}

/// What a planned player must do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// A span begins: a fresh handshake.
    Join,
    /// The span ended: say goodbye and go.
    Leave,
    /// The join did not get in within its limit (or its span): counted,
    /// and the player goes (a goodbye if the handshake got far enough)
    /// until its next span.
    JoinFailed,
}

/// One player's state against its presence (see the module's
/// documentation).
#[derive(Debug)]
pub(crate) struct Attendance {
    /// `[join, leave)` µs with the player's phase; empty without a plan.
    spans: Vec<(u64, u64)>,
    /// The next span not yet begun.
    next: usize,
    stage: Stage,
    join_timeout_us: u64,
    planned: bool,
    /// Joins that failed, and why the last one did (for the run's errors).
    failed: u64,
    pub last_failure: Option<String>,
}

impl Attendance {
    /// The attendance of a player whose first hello would be at `first_us`
    /// for a run starting at `start_us`: with a plan, each join is shifted
    /// by the same phase (`first_us - start_us`, under 50 ms) so players
    /// joining at one moment do not all send in the same instant.
    pub fn new(presence: &Presence, start_us: u64, first_us: u64) -> Self {
        let phase = first_us.saturating_sub(start_us);
        match &presence.spans {
            None => Self {
                spans: vec![],
                next: 0,
                stage: Stage::Joining {
                    since_us: first_us,
                    leave_us: u64::MAX,
                },
                join_timeout_us: presence.join_timeout_us,
                planned: false,
                failed: 0,
                last_failure: None,
            },
            Some(spans) => Self {
                spans: spans
                    .iter()
                    // A span shorter than the phase is no span.
                    .filter(|(a, b)| a.saturating_add(phase) < *b)
                    .map(|&(a, b)| (a.saturating_add(phase), b))
                    .collect(),
                next: 0,
                stage: Stage::Absent,
                join_timeout_us: presence.join_timeout_us,
                planned: true,
                failed: 0,
                last_failure: None,
            },
        }
    }

    /// Whether the player follows a plan.
    pub fn planned(&self) -> bool {
        self.planned
    }

    /// Handshaking for a join (not yet at its first snapshot).
    pub fn joining(&self) -> bool {
        matches!(self.stage, Stage::Joining { .. })
    }

    /// When the next change is due (µs; `u64::MAX`: none).
    pub fn next_change_us(&self) -> u64 {
        if !self.planned {
            return u64::MAX;
        }
        match self.stage {
            Stage::Absent => self.spans.get(self.next).map_or(u64::MAX, |s| s.0),
            Stage::Joining { since_us, leave_us } => {
                since_us.saturating_add(self.join_timeout_us).min(leave_us)
            }
            Stage::Present { leave_us } => leave_us,
        }
    }

    /// The change due at `now_us`, if any, and the stage after it (a
    /// failed join is recorded in `rec`). Without a plan there is none. A
    /// span that ended before the player got round to it is skipped.
    pub fn poll(&mut self, now_us: u64, rec: &mut Recorder) -> Option<Change> {
        if !self.planned || now_us < self.next_change_us() {
            return None;
        }
        match self.stage {
            Stage::Absent => {
                while let Some(&(from, until)) = self.spans.get(self.next) {
                    if now_us < from {
                        return None;
                    }
                    self.next += 1;
                    if now_us < until {
                        self.stage = Stage::Joining {
                            since_us: now_us,
                            leave_us: until,
                        };
                        return Some(Change::Join);
                    }
                }
                None
            }
            Stage::Joining { since_us, .. } => {
                self.fail(since_us, rec);
                Some(Change::JoinFailed)
            }
            Stage::Present { .. } => {
                self.stage = Stage::Absent;
                Some(Change::Leave)
            }
        }
    }

    fn fail(&mut self, since_us: u64, rec: &mut Recorder) {
        self.stage = Stage::Absent;
        self.failed += 1;
        rec.join_failed(since_us);
        if self.planned && self.last_failure.is_none() {
            self.last_failure = Some(format!(
                "no snapshot within the join's limit ({} ms from its first packet, or its \
                 presence's end)",
                self.join_timeout_us / 1000
            ));
        }
    }

    /// A snapshot arrived at `now_us` in a session: if it ends a join, the
    /// join is recorded as done and its span's end is returned.
    pub fn joined(&mut self, now_us: u64, rec: &mut Recorder) -> Option<u64> {
        let Stage::Joining { since_us, leave_us } = self.stage else {
            return None;
        };
        rec.join_done(since_us, now_us);
        self.stage = Stage::Present { leave_us };
        Some(leave_us)
    }

    /// The game made a present player load a new level in the middle of
    /// its span (a map change): it joins again from `now_us`, until the
    /// same leave, and the load is that join's time. `false` when it was
    /// not present.
    pub fn rejoin(&mut self, now_us: u64) -> bool {
        match self.stage {
            Stage::Present { leave_us } => {
                self.stage = Stage::Joining {
                    since_us: now_us,
                    leave_us,
                };
                true
            }
            _ => false,
        }
    }

    /// A player without a plan gave up joining (its connect deadline
    /// passed, or nothing listens there): the join failed, if one was
    /// under way.
    pub fn gave_up(&mut self, rec: &mut Recorder) {
        if let Stage::Joining { since_us, .. } = self.stage {
            self.fail(since_us, rec);
        }
    }

    /// What to say of this player's failed joins among the run's errors,
    /// if any failed.
    pub fn failures(&self) -> Option<String> {
        (self.failed > 0).then(|| match &self.last_failure {
            Some(why) => format!("{} join(s) failed; the last: {why}", self.failed),
            None => format!("{} join(s) failed", self.failed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(from_ms: u64, until_ms: u64) -> PresenceSpan {
        PresenceSpan {
            from: Duration::from_millis(from_ms),
            until: Duration::from_millis(until_ms),
        }
    }

    #[test]
    fn a_plan_must_fit_the_run_with_spans_in_order() {
        let ok =
            PresencePlan::since_run_start(vec![vec![span(0, 1_000), span(1_000, 2_000)], vec![]]);
        assert_eq!(ok.check(2), Ok(()));
        assert!(ok.check(3).unwrap_err().contains("for 2 players"));
        let empty = PresencePlan::since_run_start(vec![vec![span(5, 5)]]);
        assert!(empty.check(1).unwrap_err().contains("is empty"));
        let overlap = PresencePlan::since_run_start(vec![vec![span(0, 10), span(9, 20)]]);
        assert!(overlap.check(1).unwrap_err().contains("begins before"));
        assert_eq!(ok.spans(7), &[]);
    }

    #[test]
    fn joins_leaves_and_failures_come_at_their_times_shifted_by_the_phase() {
        let mut rec = Recorder::new((0, 10_000_000));
        let p = Presence::planned(
            &[span(0, 1_000), span(2_000, 3_000), span(4_000, 4_010)],
            1_000_000,
            Duration::from_millis(300),
        );
        // Phase 20 ms: joins at 1.02 s and 3.02 s; the last span (10 ms)
        // is shorter than the phase and is none.
        let mut a = Attendance::new(&p, 1_000_000, 1_020_000);
        assert!(a.planned());
        assert_eq!(a.next_change_us(), 1_020_000);
        assert_eq!(a.poll(1_019_999, &mut rec), None);
        assert_eq!(a.poll(1_020_000, &mut rec), Some(Change::Join));
        assert!(a.joining());
        assert_eq!(a.next_change_us(), 1_320_000, "the join's limit");
        assert_eq!(a.joined(1_070_000, &mut rec), Some(2_000_000));
        assert_eq!(rec.joins, 1);
        assert_eq!(rec.join.max(), 50_015, "50 ms at 3 digits");
        assert_eq!(a.joined(1_080_000, &mut rec), None, "once");
        assert_eq!(a.next_change_us(), 2_000_000);
        assert_eq!(a.poll(2_000_100, &mut rec), Some(Change::Leave));
        assert_eq!(a.poll(3_020_000, &mut rec), Some(Change::Join));
        // Not in before the limit: failed, and no more spans.
        assert_eq!(a.poll(3_320_000, &mut rec), Some(Change::JoinFailed));
        assert_eq!(rec.failed_joins, 1);
        assert_eq!(a.next_change_us(), u64::MAX);
        assert!(a.failures().unwrap().starts_with("1 join(s) failed"));
    }

    #[test]
    fn a_span_missed_whole_is_skipped_and_none_fails_without_a_plan() {
        let mut rec = Recorder::new((0, 10_000_000));
        let p = Presence::planned(&[span(0, 100), span(200, 300)], 0, Duration::from_secs(1));
        let mut a = Attendance::new(&p, 0, 0);
        // The player got round to it only at 250 ms: the first is gone.
        assert_eq!(a.poll(250_000, &mut rec), Some(Change::Join));
        assert_eq!(a.next_change_us(), 300_000, "its span's end comes first");
        assert_eq!(a.poll(300_000, &mut rec), Some(Change::JoinFailed));
        let mut always = Attendance::new(&Presence::always(), 0, 5);
        assert!(!always.planned());
        assert_eq!(always.poll(u64::MAX - 1, &mut rec), None);
        assert_eq!(always.next_change_us(), u64::MAX);
        always.gave_up(&mut rec);
        assert_eq!(rec.failed_joins, 2);
        assert_eq!(always.failures(), Some("1 join(s) failed".into()));
    }
}
