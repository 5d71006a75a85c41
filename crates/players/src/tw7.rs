//! One emulated tw7 (0.7 protocol) player as a state machine, measured like
//! [`crate::Player`] and [`crate::q3::Q3Player`]: no sockets, no
//! clock of its own (the caller's monotonic microseconds are mapped onto
//! the [`std::time::Instant`]s the protocol crate takes).
//!
//! The protocol (token handshake, connection, join, delta-coded snapshots,
//! the 50 Hz INPUT stream, and the rule that says which snapshot first
//! shows an input) is [`tickpack_tw7::Client`]; this file adds what a
//! player does and what it measures:
//!
//! - **Inputs on the open-loop schedule**: one new input per command
//!   interval (the server's 50 Hz tick by default), due on a grid that
//!   starts with the first snapshot and never slips; each input turns the
//!   aim one step (and now and then the running direction), so
//!   consecutive inputs always differ and the reflection rule can tell
//!   them apart.
//! - **Transaction latency**: from the time an input was *due* to the
//!   arrival of the first snapshot that reflects it
//!   ([`tickpack_tw7::Event::InputReflected`]: the local character shows
//!   its direction and aim at or after its intended tick). The server
//!   runs inputs in order, and sends a snapshot every second tick by
//!   default (`sv_high_bandwidth 0`), so a snapshot that shows input *k*
//!   also settles every older input still waiting: they are reflected by
//!   it, with their own (longer) latency from their own due time, as a
//!   Quake III usercmd covered by a snapshot's `commandTime` is.
//! - **RTT**: from the first sending of the newest input a snapshot
//!   reflects to that snapshot's arrival (like Quake III's client ping: it
//!   includes the wait for the server's next snapshot tick).
//! - **Snapshots against the schedule**: the server numbers its ticks;
//!   the snapshot step (in ticks) is learned from the first snapshots and
//!   a snapshot tick that never came is lost ([`crate::coverage`]).
//! - Inputs never reflected within the loss deadline, outages and
//!   reconnects, as for the other games.
//!
//! With a presence plan ([`crate::presence`]) a player leaves as the
//! game's client does: the connection's close control message with a
//! reason; it joins again as a new connection (a fresh token handshake).
//!
//! The players appear in the server's log and scoreboard as `tp-N`. The
//! server admits [`PER_ADDRESS_DEFAULT`] players from one address by
//! default (`sv_max_clients_per_ip`); a run with more spreads them over
//! several source addresses ([`crate::sources`]).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::Rng;
use tickpack_tw7::{Client, ClientConfig, Event, PlayerInput, SnapshotInfo};
use tickpack_wire::TickRate;

use crate::emulated::{Emulated, RunEnd};
use crate::ledger::Pending;
use crate::measured::{Measured, Numbering};
use crate::player::{PlayerSettings, Seat, RETRY_MAX_US, RETRY_MIN_US};
use crate::presence::{Attendance, Change, Presence};
use crate::recorder::Recorder;

/// The server's game tick rate (fixed in the engine: `SERVER_TICK_SPEED`).
pub const TICK_HZ: TickRate = TickRate::new(50).unwrap();
/// Inputs per second when no rate is given: one per server tick, as the
/// game's own client sends.
pub const DEFAULT_CMD_RATE_HZ: f64 = TICK_HZ.hz() as f64;
/// Snapshots per second assumed for a server that never sent one: the
/// engine's default, one every second tick (`sv_high_bandwidth 0`).
pub const DEFAULT_SNAP_HZ: TickRate = TickRate::new(TICK_HZ.hz() / 2).unwrap();
/// `sv_max_clients_per_ip`'s default in the 0.7.5 engine.
pub const PER_ADDRESS_DEFAULT: usize = 4;
/// Snapshots are numbered by the server's tick; the step (in ticks) is
/// learned, from one to a second's worth (the engine's default is
/// assumed for a server that never sent one: two).
const NUMBERING: Numbering = Numbering {
    unit_us: TICK_HZ.interval_us(),
    fallback_step: (TICK_HZ.hz() / DEFAULT_SNAP_HZ.hz()) as i32,
    max_step: TICK_HZ.hz() as i32,
};
/// Aim turned per input, in degrees (not a divisor of 360, so the aim
/// never repeats between neighbours).
const AIM_STEP_DEG: f32 = 7.0;
/// Aim distance from the tee (the game's client keeps the mouse there).
const AIM_RADIUS: f32 = 256.0;
/// What the protocol crate says when the connection failed on our side
/// (not a server's refusal): the player tries again.
const OWN_FAILURES: [&str; 3] = ["Unable to connect", "Timeout", "Too weak connection"];
/// The reason a leaving player's close message gives.
pub const LEAVING: &str = "leaving";

/// An input sent and not yet reflected.
#[derive(Debug, Clone, Copy)]
struct Sent {
    id: u64,
    due_us: u64,
}

impl Pending for Sent {
    fn due_us(&self) -> u64 {
        self.due_us
    }
}

/// One emulated tw7 protocol player.
pub struct TwPlayer {
    pub index: usize,
    pub target: SocketAddr,
    settings: PlayerSettings,
    /// The session, while one is being made or played; `None` between
    /// sessions (waiting until `next_try_us`).
    client: Option<Client>,
    next_try_us: u64,
    retry_us: u64,
    /// The caller's microsecond 0 as an `Instant`.
    epoch: Instant,
    rng: SmallRng,
    next_cmd_us: u64,
    last_heard_us: u64,
    /// Away by the presence plan.
    absent: bool,
    ended: Option<String>,
    /// Snapshots (numbered by tick) and inputs against the schedule.
    measured: Measured<Sent>,
    aim_deg: f32,
    direction: i32,
    /// The server's tick rate (the engine's), once a snapshot came.
    pub tick_hz: Option<TickRate>,
}

impl TwPlayer {
    /// A player present the whole run.
    pub fn new(seat: Seat, settings: PlayerSettings) -> Self {
        Self::with_presence(seat, settings, &Presence::always())
    }

    /// A player present as `presence` says.
    pub fn with_presence(seat: Seat, settings: PlayerSettings, presence: &Presence) -> Self {
        let mut rng = seat.rng();
        let first = seat.first_hello(&mut rng);
        let attendance = Attendance::new(presence, seat.start_us, first);
        let absent = attendance.planned();
        let measured = Measured::new(first, &settings, DEFAULT_CMD_RATE_HZ, NUMBERING, attendance);
        let aim_deg = rng.gen_range(0.0..360.0);
        TwPlayer {
            index: seat.index,
            target: seat.target,
            settings,
            client: None,
            next_try_us: first,
            retry_us: RETRY_MIN_US,
            epoch: Instant::now(),
            rng,
            next_cmd_us: u64::MAX,
            last_heard_us: first,
            absent,
            ended: None,
            measured,
            aim_deg,
            direction: 1,
            tick_hz: None,
        }
    }

    /// The name the server lists this player under.
    pub fn name(&self) -> String {
        format!("{}{}", crate::referee::NAME_PREFIX, self.index)
    }

    /// Ticks between two snapshots, once learned (the engine's default:
    /// 2).
    pub fn snapshot_step(&self) -> Option<i32> {
        self.measured.step()
    }

    /// Snapshots a second: the tick over the step learned (the engine's
    /// default step before). A step longer than the tick rate would be
    /// 0 Hz, which counts as 1 Hz as the protocol reads a 0.
    fn snapshot_rate(&self) -> TickRate {
        let step = self.measured.step().unwrap_or(2).max(1) as u32;
        TickRate::from_wire((TICK_HZ.hz_u32() / step) as u16)
    }

    fn at(&self, us: u64) -> Instant {
        self.epoch + Duration::from_micros(us)
    }

    fn us(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_micros() as u64
    }

    fn planned(&self) -> bool {
        self.measured.ledger.attendance.planned()
    }

    /// Follows the presence plan at `now_us`: begins a join, or leaves (its
    /// presence ended or its join failed) with the close message into
    /// `out` if a connection is open (returns whether it wrote one).
    fn follow_plan(&mut self, now_us: u64, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        while let Some(change) = self.measured.ledger.attendance.poll(now_us, rec) {
            if change == Change::Join {
                self.absent = false;
                self.client = None;
                self.next_try_us = now_us;
                self.retry_us = RETRY_MIN_US;
                continue;
            }
            self.measured.left(now_us, self.snapshot_rate(), rec);
            self.next_cmd_us = u64::MAX;
            self.absent = true;
            if let Some(mut c) = self.client.take() {
                // Dropped with its own Disconnected event: no loss to count.
                c.disconnect(LEAVING);
                if c.poll_transmit(self.at(now_us), out) {
                    return true;
                }
            }
        }
        false
    }

    /// The session is gone: join again, at once the first time, then with
    /// backoff while the server stays away.
    fn lose_session(&mut self, now_us: u64, rec: &mut Recorder) {
        let was_active = self.measured.session_lost(now_us, rec);
        self.client = None;
        self.next_cmd_us = u64::MAX;
        if was_active {
            self.retry_us = RETRY_MIN_US;
        }
        self.next_try_us = now_us + if was_active { 0 } else { self.retry_us };
        self.retry_us = (self.retry_us * 2).min(RETRY_MAX_US);
    }

    /// The next input: turn the aim one step, sometimes run the other way.
    fn steer(&mut self) -> PlayerInput {
        if self.rng.gen_ratio(1, 50) {
            self.direction = [-1, 0, 1][self.rng.gen_range(0..3)];
        }
        self.aim_deg = (self.aim_deg + AIM_STEP_DEG) % 360.0;
        let r = self.aim_deg.to_radians();
        PlayerInput {
            direction: self.direction,
            target_x: (r.cos() * AIM_RADIUS).round() as i32,
            target_y: (r.sin() * AIM_RADIUS).round() as i32,
            ..PlayerInput::default()
        }
    }

    /// Handles what the session said.
    fn drain_events(&mut self, now_us: u64, rec: &mut Recorder) {
        while let Some(e) = self.client.as_mut().and_then(Client::poll_event) {
            match e {
                Event::Connected | Event::MapChange { .. } => {
                    self.last_heard_us = self.last_heard_us.max(now_us);
                }
                Event::InGame { .. } | Event::InputTiming { .. } => {}
                Event::Snapshot(s) => self.on_snapshot(now_us, &s, rec),
                Event::InputReflected {
                    input_id, sent_at, ..
                } => self.on_reflected(now_us, input_id, sent_at, rec),
                Event::Disconnected { reason } => {
                    let ours = OWN_FAILURES.iter().any(|f| reason.starts_with(f));
                    if self.planned() && !ours {
                        self.measured.ledger.attendance.last_failure =
                            Some(format!("{} disconnected the player: {reason}", self.target));
                    }
                    if self.measured.ever_connected() || ours || self.planned() {
                        // Dropped after having played (a restart, a
                        // timeout), or no answer yet: try again (until
                        // the connect deadline, before the first session).
                        self.lose_session(now_us, rec);
                    } else {
                        self.client = None;
                        self.ended =
                            Some(format!("{} disconnected the player: {reason}", self.target));
                    }
                    return;
                }
            }
        }
    }

    fn on_snapshot(&mut self, now_us: u64, s: &SnapshotInfo, rec: &mut Recorder) {
        self.last_heard_us = now_us;
        let Some(fresh) = self.measured.snapshot(now_us, s.tick, self.target, rec) else {
            return; // duplicate or reordered
        };
        if fresh.learned.is_some() {
            self.tick_hz = Some(TICK_HZ);
        }
        if fresh.began {
            self.retry_us = RETRY_MIN_US;
            // The session sends an INPUT every 20 ms from this snapshot's
            // arrival on: the schedule starts on its grid.
            self.next_cmd_us = now_us;
        }
    }

    /// Input `id` and every older one still waiting are reflected by the
    /// snapshot that arrived at `now_us`.
    fn on_reflected(&mut self, now_us: u64, id: u64, sent_at: Instant, rec: &mut Recorder) {
        self.measured.reflect(now_us, |c| c.id <= id, rec);
        let sent = self.us(sent_at);
        self.measured.round_trip(sent, now_us, rec);
    }

    /// Starts a session if one is due and none is running.
    fn maybe_start(&mut self, now_us: u64) {
        if self.client.is_none()
            && self.ended.is_none()
            && !self.absent
            && now_us >= self.next_try_us
        {
            let mut cfg = ClientConfig::new(&self.name(), self.rng.gen());
            cfg.start_info.clan = "tickpack".into();
            self.client = Some(Client::new(cfg, self.at(now_us)));
            self.last_heard_us = now_us;
        }
    }
}

impl Emulated for TwPlayer {
    fn target(&self) -> SocketAddr {
        self.target
    }

    fn next_deadline(&self) -> u64 {
        if self.ended.is_some() {
            return u64::MAX;
        }
        let plan = self.measured.ledger.attendance.next_change_us();
        if self.absent {
            return plan;
        }
        let give_up = if self.measured.ever_connected() || self.planned() {
            plan
        } else {
            self.settings.connect_deadline_us
        };
        let Some(c) = &self.client else {
            return self.next_try_us.min(give_up);
        };
        let timers = c
            .poll_timeout()
            .map_or(u64::MAX, |t| deadline_us(self.epoch, t));
        let mine = if self.measured.active() {
            self.next_cmd_us
                .min(self.last_heard_us + self.measured.silence_us())
        } else {
            u64::MAX
        };
        timers.min(mine).min(give_up)
    }

    fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        out.clear();
        if self.ended.is_some() {
            return false;
        }
        if self.follow_plan(now_us, out, rec) {
            return true;
        }
        if !self.planned()
            && !self.measured.ever_connected()
            && now_us >= self.settings.connect_deadline_us
        {
            self.measured.ledger.attendance.gave_up(rec);
            self.client = None;
            self.ended = Some(format!(
                "no answer from {} to the tw7 (0.7 protocol) join (is a 0.7 protocol server \
                 listening there, with a free slot for this address?)",
                self.target
            ));
            return false;
        }
        if self.measured.active() && now_us >= self.last_heard_us + self.measured.silence_us() {
            self.lose_session(now_us, rec);
        }
        self.maybe_start(now_us);
        let now = self.at(now_us);
        if self.measured.active() && now_us >= self.next_cmd_us {
            self.measured.ledger.expire(now_us, rec);
            let due = self.next_cmd_us;
            self.next_cmd_us += self.measured.ledger.interval_us;
            let input = self.steer();
            if let Some(c) = self.client.as_mut() {
                let id = c.input(now, input);
                self.measured.ledger.sent(Sent { id, due_us: due }, rec);
            }
        }
        let Some(c) = self.client.as_mut() else {
            return false;
        };
        if c.poll_timeout().is_some_and(|t| t <= now) {
            c.handle_timeout(now);
        }
        let sent = c.poll_transmit(now, out);
        self.drain_events(now_us, rec);
        sent
    }

    fn handle(&mut self, now_us: u64, data: &[u8], rec: &mut Recorder) {
        let now = self.at(now_us);
        let Some(c) = self.client.as_mut() else {
            return;
        };
        if c.handle(now, data).is_err() {
            rec.decode_errors += 1;
        }
        self.drain_events(now_us, rec);
    }

    fn unreachable(&mut self, now_us: u64, why: String, rec: &mut Recorder) {
        if self.planned() {
            // Joining: it tries again until the join's limit.
            self.measured.ledger.attendance.last_failure = Some(why);
            if self.client.is_some() {
                self.lose_session(now_us, rec);
            }
        } else if !self.measured.ever_connected() {
            if self.ended.is_none() {
                self.measured.ledger.attendance.gave_up(rec);
                self.client = None;
                self.ended = Some(why);
            }
        } else if self.client.is_some() {
            self.lose_session(now_us, rec);
        }
    }

    fn finish(&mut self, end: &RunEnd, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        // The tick is the engine's and the snapshot step is learned: the
        // hinted tick rate is not needed.
        if self.measured.step().is_none() {
            // Never learned the step: count what came at the engine's
            // default snapshot rate.
            self.measured
                .settle((TICK_HZ.hz() / DEFAULT_SNAP_HZ.hz()) as i32, rec);
            self.tick_hz = Some(TICK_HZ);
        }
        let connected = self.is_connected();
        let snapshot_rate = self.snapshot_rate();
        self.measured
            .ledger
            .finish(end, connected, snapshot_rate, rec);
        out.clear();
        let now = self.at(end.now_us);
        let sent = match self.client.as_mut() {
            Some(c) => {
                c.disconnect("finished");
                c.poll_transmit(now, out)
            }
            None => false,
        };
        self.client = None;
        if let Some(why) = self
            .measured
            .ledger
            .attendance
            .failures()
            .filter(|_| self.planned())
        {
            self.ended = Some(why);
        }
        if self.ended.is_none() {
            self.ended = Some("finished".into());
        }
        sent
    }

    fn is_connected(&self) -> bool {
        self.measured.active() && self.client.is_some()
    }

    fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// The server's game tick (50 Hz) once a snapshot came; snapshots
    /// come every [`TwPlayer::snapshot_step`] ticks of it.
    fn tick_hz(&self) -> Option<TickRate> {
        self.tick_hz
    }

    fn referee_row(&self) -> Option<tickpack_report::RefereeRow> {
        Some(self.measured.referee_row(self.target, self.name()))
    }
}

/// A timer at `t` as a deadline in microseconds from `epoch`, rounded up:
/// the I/O loop calls the player at that microsecond, and the player
/// compares `t` with that microsecond as an `Instant`. Rounded down, a
/// timer between two microseconds was never due at the microsecond the
/// loop woke for, and the loop called the player again at once, for ever
/// (a tile step's players hung past Ctrl-C).
fn deadline_us(epoch: Instant, t: Instant) -> u64 {
    let d = t.saturating_duration_since(epoch);
    let us = d.as_micros() as u64;
    if Duration::from_micros(us) < d {
        us + 1
    } else {
        us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_between_two_microseconds_was_never_due_and_hung_the_loop() {
        let epoch = Instant::now();
        let t = epoch + Duration::from_nanos(1_000_500);
        let d = deadline_us(epoch, t);
        assert_eq!(d, 1_001);
        // At the microsecond the loop wakes for, the timer is due.
        assert!(epoch + Duration::from_micros(d) >= t);
        assert_eq!(deadline_us(epoch, epoch + Duration::from_micros(7)), 7);
        assert_eq!(deadline_us(epoch + Duration::from_secs(1), epoch), 0);
    }
}
