//! What a player of a game whose server numbers its snapshots in units of
//! its own (Quake III's `serverTime` in milliseconds, tw7's ticks)
//! measures, whatever the protocol: the step between snapshots, learned
//! from the first ones; every snapshot against the schedule, and the
//! jitter; sessions that begin and servers that restart; the commands'
//! [`Ledger`]; the player's own samples for the referee.
//! [`crate::q3::Q3Player`] and [`crate::tw7::TwPlayer`] each keep one
//! beside their protocol's client.

use std::net::SocketAddr;

use tickpack_report::record;
use tickpack_wire::TickRate;

use crate::coverage::smallest_step;
use crate::ledger::{interval_us, Ledger, Pending};
use crate::player::{PlayerSettings, SILENCE_US};
use crate::presence::Attendance;
use crate::recorder::Recorder;

/// Snapshots needed to learn the step (the smallest step between
/// consecutive snapshots).
const LEARN_SNAPSHOTS: usize = 4;

/// How a game's server numbers its snapshots.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Numbering {
    /// Microseconds per unit of the numbers.
    pub unit_us: u64,
    /// The step (in units) assumed when the first snapshots show none.
    pub fallback_step: i32,
    /// The largest step believed.
    pub max_step: i32,
}

/// What a new snapshot meant, for what the player does about it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fresh {
    /// The server restarted before it (a new process numbers afresh).
    pub restarted: bool,
    /// It is the first snapshot of a session.
    pub began: bool,
    /// The step, learned just now from the first snapshots.
    pub learned: Option<i32>,
}

/// The measuring half of one player (see the module's documentation).
pub(crate) struct Measured<T> {
    pub ledger: Ledger<T>,
    numbering: Numbering,
    /// Units between snapshots, once learned.
    step: Option<i32>,
    /// Snapshots seen before the step was known: (arrival, number).
    learning: Vec<(u64, i32)>,
    /// The newest snapshot's number and arrival.
    newest: Option<(i32, u64)>,
    /// A snapshot arrived in the current session.
    active: bool,
    /// Joined again since the last snapshot: a number not above the newest
    /// then means a new server process.
    rejoined: bool,
    last_snapshot_us: Option<u64>,
    /// This player's own samples in the window (µs), for the referee.
    rtt_samples: Vec<u32>,
    transaction_samples: Vec<u32>,
}

impl<T: Pending> Measured<T> {
    /// The measurements of a player that first says hello at `first_us` and
    /// sends `default_rate_hz` commands a second unless `settings` say
    /// otherwise, to a server that numbers its snapshots by `numbering`,
    /// present as `attendance` says.
    pub fn new(
        first_us: u64,
        settings: &PlayerSettings,
        default_rate_hz: f64,
        numbering: Numbering,
        attendance: Attendance,
    ) -> Self {
        let rate = settings.cmd_rate_hz.unwrap_or(default_rate_hz);
        Self {
            ledger: Ledger::new(first_us, settings, interval_us(rate), attendance),
            numbering,
            step: None,
            learning: Vec::new(),
            newest: None,
            active: false,
            rejoined: false,
            last_snapshot_us: None,
            rtt_samples: Vec::new(),
            transaction_samples: Vec::new(),
        }
    }

    /// A snapshot arrived in the current session.
    pub fn active(&self) -> bool {
        self.active
    }

    /// Whether a session began at least once.
    pub fn ever_connected(&self) -> bool {
        self.ledger.ever_connected()
    }

    /// Units between snapshots, once learned.
    pub fn step(&self) -> Option<i32> {
        self.step
    }

    /// The newest snapshot's number and arrival (µs), if one came from the
    /// current server process.
    pub fn newest(&self) -> Option<(i32, u64)> {
        self.newest
    }

    /// How long a player in a session waits for a snapshot before it
    /// presumes the session dead: ten snapshot steps, at least
    /// [`SILENCE_US`].
    pub fn silence_us(&self) -> u64 {
        let step = self.step.unwrap_or(self.numbering.fallback_step) as u64;
        SILENCE_US.max(10 * step * self.numbering.unit_us)
    }

    /// A snapshot numbered `n` arrived at `now_us` from `server` in a
    /// session: `None` if it is a duplicate or reordered; else it is
    /// counted (and, the first of a session, begins it; numbered below the
    /// newest after a rejoin, it tells of a restarted server).
    pub fn snapshot(
        &mut self,
        now_us: u64,
        n: i32,
        server: SocketAddr,
        rec: &mut Recorder,
    ) -> Option<Fresh> {
        let restarted = match self.newest {
            Some((newest, _)) if n <= newest && !self.rejoined => return None,
            Some((newest, _)) if n <= newest => {
                self.server_restarted(server, rec);
                true
            }
            _ => false,
        };
        self.rejoined = false;
        let began = !self.active;
        if began {
            self.active = true;
            self.ledger.session_began(now_us, rec);
        }
        self.ledger.joined(now_us, rec);
        self.newest = Some((n, now_us));
        let learned = self.count(now_us, n, rec);
        Some(Fresh {
            restarted,
            began,
            learned,
        })
    }

    /// The server began a new level (a map change), after [`Measured::left`]
    /// or [`Measured::session_lost`]: its snapshots are numbered afresh,
    /// from a clock that starts again, and nothing of the old level's
    /// numbers is kept.
    pub fn new_level(&mut self) {
        self.newest = None;
        self.learning.clear();
        self.last_snapshot_us = None;
    }

    /// A new server process: its numbers start again. Commands sent to the
    /// old one will never be reflected.
    fn server_restarted(&mut self, server: SocketAddr, rec: &mut Recorder) {
        // Snapshots seen while learning belong to the old process.
        self.learning.clear();
        self.ledger.server_restarted(|_| true, rec);
        rec.server_restarted(server);
        self.newest = None;
        self.last_snapshot_us = None;
    }

    /// Feeds snapshot `n` to the schedule's account, learning the step from
    /// the first snapshots; returns the step when it was learned just now.
    fn count(&mut self, now_us: u64, n: i32, rec: &mut Recorder) -> Option<i32> {
        if self.step.is_some() {
            self.record(now_us, n, rec);
            return None;
        }
        self.learning.push((now_us, n));
        if self.learning.len() < LEARN_SNAPSHOTS {
            return None;
        }
        let step = smallest_step(&self.learning).unwrap_or(self.numbering.fallback_step);
        Some(self.settle(step, rec))
    }

    /// The step is known (`step` units, believed from 1 to the numbering's
    /// largest): the snapshots seen while learning it are counted now.
    /// Returns the step believed.
    pub fn settle(&mut self, step: i32, rec: &mut Recorder) -> i32 {
        let step = step.clamp(1, self.numbering.max_step);
        self.step = Some(step);
        let unit_us = self.numbering.unit_us as f64;
        self.ledger
            .coverage
            .set_tick_interval_us(f64::from(step) * unit_us);
        for (at, n) in std::mem::take(&mut self.learning) {
            self.record(at, n, rec);
        }
        step
    }

    fn record(&mut self, now_us: u64, n: i32, rec: &mut Recorder) {
        let step = self.step.expect("learned");
        self.ledger
            .coverage
            .tick(now_us, (n.max(0) / step) as u32, &mut rec.windows);
        if rec.in_window(now_us) {
            if let Some(prev) = self.last_snapshot_us {
                let interval_us = step as u64 * self.numbering.unit_us;
                record(&mut rec.jitter, (now_us - prev).abs_diff(interval_us));
            }
        }
        self.last_snapshot_us = Some(now_us);
    }

    /// A snapshot that arrived at `now_us` shows the oldest outstanding
    /// commands, those for which `shown` holds (see [`Ledger::reflect`]).
    /// Returns the newest of them.
    pub fn reflect(
        &mut self,
        now_us: u64,
        shown: impl Fn(&T) -> bool,
        rec: &mut Recorder,
    ) -> Option<T> {
        let samples = Some(&mut self.transaction_samples);
        self.ledger.reflect(now_us, shown, samples, rec)
    }

    /// A round trip of a datagram sent at `sent_us`, answered at `now_us`.
    pub fn round_trip(&mut self, sent_us: u64, now_us: u64, rec: &mut Recorder) {
        rec.round_trip(sent_us, now_us, &mut self.rtt_samples);
    }

    /// The session is gone at `now_us`: commands past their deadline are
    /// lost, the time without a session begins, and a snapshot numbered
    /// below the newest will mean a restarted server. Returns whether a
    /// snapshot had come in the session.
    pub fn session_lost(&mut self, now_us: u64, rec: &mut Recorder) -> bool {
        self.ledger.expire(now_us, rec);
        self.ledger.session_ended(now_us, rec);
        self.rejoined = self.ledger.ever_connected();
        std::mem::replace(&mut self.active, false)
    }

    /// The player leaves at `now_us` (its presence ended, or its join
    /// failed; [`Ledger::left`]): `fallback_hz` is the snapshot rate to
    /// count at if it never learned its server's. Snapshots of the next
    /// presence are measured afresh (no jitter across the absence; one
    /// numbered below the newest means a restarted server).
    pub fn left(&mut self, now_us: u64, fallback_hz: TickRate, rec: &mut Recorder) {
        if self.step.is_none() && !self.learning.is_empty() {
            // Too few snapshots to learn the step: what they show.
            let step = smallest_step(&self.learning).unwrap_or(self.numbering.fallback_step);
            self.settle(step, rec);
        }
        let connected = self.active;
        self.ledger.left(now_us, connected, fallback_hz, rec);
        self.rejoined = self.ledger.ever_connected();
        self.active = false;
        self.last_snapshot_us = None;
    }

    /// The row of this player (named `player` on `server`) for the referee:
    /// the medians of its own samples.
    pub fn referee_row(&self, server: SocketAddr, player: String) -> tickpack_report::RefereeRow {
        let median = |v: &[u32]| crate::referee::median(v).map_or(0, u64::from);
        tickpack_report::RefereeRow {
            server: server.to_string(),
            player,
            rtt_us_median: median(&self.rtt_samples),
            transaction_us_median: median(&self.transaction_samples),
            server_ping_us_median: None,
        }
    }
}
