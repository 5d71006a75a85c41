//! One emulated player as a state machine: handshake, an open-loop command
//! schedule, pings, snapshot bookkeeping, and reconnection. No sockets, no
//! clock.
//!
//! Call [`Player::poll_transmit`] until it returns `false` whenever
//! [`Player::next_deadline`] has come or after [`Player::handle`]; give every
//! datagram from the server to [`Player::handle`]; report a socket that says
//! "port unreachable" with [`Player::unreachable`]; call [`Player::finish`]
//! once at the end.
//!
//! # What is counted (docs/methodology.md)
//!
//! Each player measures over its *span*: from the end of the warm-up (or
//! [`CONNECT_GRACE_US`] after its first hello, if later) to the end of the
//! window. Snapshots are expected for every tick of the span, whatever
//! arrived ([`crate::coverage`]). A command due in the span is reflected
//! when a snapshot covers it within the loss deadline, and lost otherwise;
//! commands due while the player had no connection are lost too.
//!
//! A connected player that goes [`silence_us`] without a snapshot, gets
//! "port unreachable", or is told it timed out, re-handshakes with backoff
//! and keeps measuring; the time without snapshots is an outage.
//!
//! With a presence plan ([`crate::presence`]) the player is away between
//! its spans: at a span's start it handshakes afresh (a new nonce), at its
//! end it says goodbye (`Disconnect { ClientLeaving }`, as at the end of
//! the run); a join that does not get in within the join timeout is
//! counted as failed and tried again at the next span.

use std::collections::VecDeque;
use std::net::SocketAddr;

use rand::rngs::SmallRng;
use rand::Rng;
use tickpack_report::record;
use tickpack_wire::{
    buttons, delta, Command, DisconnectReason, EntityState, Input, Packet, RefuseReason, Snapshot,
    TickRate, PROTOCOL_VERSION,
};

pub use crate::config::PlayerSettings;
use crate::emulated::{Emulated, RunEnd};
pub use crate::ledger::CONNECT_GRACE_US;
use crate::ledger::{interval_us, Ledger, Pending};
use crate::presence::{Attendance, Change, Presence};
use crate::recorder::Recorder;
pub use crate::seat::{silence_us, Seat, DEFAULT_TICK_HZ, SILENCE_US, SLOTS};
pub(crate) use crate::seat::{RETRY_MAX_US, RETRY_MIN_US};

/// Rounds `t_us` up to the next slot boundary of a `cmd_interval_us` grid.
fn on_grid(t_us: u64, cmd_interval_us: u64) -> u64 {
    let step = (cmd_interval_us / SLOTS).max(1);
    t_us.div_ceil(step) * step
}

/// Snapshots kept as delta baselines (the server keeps as many).
const HISTORY: usize = tickpack_wire::DELTA_HISTORY;

#[derive(Debug, Clone, PartialEq)]
enum State {
    Hello {
        next_try_us: u64,
        retry_us: u64,
    },
    Connect {
        token: tickpack_wire::Token,
        next_try_us: u64,
        retry_us: u64,
    },
    Connected,
    /// Away by the presence plan.
    Absent,
    /// The server refused for good or said it is shutting down; the text
    /// says why.
    Ended(String),
}

/// A command sent and not yet reflected.
#[derive(Debug, Clone, Copy)]
struct Sent {
    seq: u32,
    due_us: u64,
}

impl Pending for Sent {
    fn due_us(&self) -> u64 {
        self.due_us
    }
}

/// One emulated player.
pub struct Player {
    pub index: usize,
    pub target: SocketAddr,
    settings: PlayerSettings,
    state: State,
    nonce: u64,
    rng: SmallRng,
    tick_interval_us: u64,
    next_cmd_us: u64,
    next_ping_us: u64,
    ping_interval_us: u64,
    seq: u32,
    history: VecDeque<(u32, Vec<EntityState>)>,
    ack_tick: Option<u32>,
    last_snapshot_us: Option<u64>,
    /// When the player last heard from its session (accept or snapshot).
    last_heard_us: u64,
    /// Re-handshaked since the last snapshot: a snapshot numbered below what
    /// we had then means a new server process.
    rejoined: bool,
    /// First command sequence sent in the current session.
    session_first_seq: u32,
    /// Commands and snapshots against the schedule.
    ledger: Ledger<Sent>,
    input: Input,
    payload: Vec<u8>,
    scratch: Vec<EntityState>,
    /// The server's tick rate, once it accepted the player.
    pub tick_hz: Option<TickRate>,
}

impl Player {
    /// A player present the whole run.
    pub fn new(seat: Seat, settings: PlayerSettings) -> Self {
        Self::with_presence(seat, settings, &Presence::always())
    }

    /// A player present as `presence` says.
    pub fn with_presence(seat: Seat, settings: PlayerSettings, presence: &Presence) -> Self {
        let mut rng = seat.rng();
        let nonce = rng.gen();
        let first = seat.first_hello(&mut rng);
        let attendance = Attendance::new(presence, seat.start_us, first);
        let state = if attendance.planned() {
            State::Absent
        } else {
            State::Hello {
                next_try_us: first,
                retry_us: RETRY_MIN_US,
            }
        };
        // The command interval is the server's tick until it says its rate.
        let ledger = Ledger::new(first, &settings, 10_000, attendance);
        Self {
            index: seat.index,
            target: seat.target,
            settings,
            state,
            nonce,
            rng,
            tick_interval_us: 10_000,
            next_cmd_us: u64::MAX,
            next_ping_us: u64::MAX,
            ping_interval_us: u64::MAX,
            seq: 0,
            history: VecDeque::with_capacity(HISTORY),
            ack_tick: None,
            last_snapshot_us: None,
            last_heard_us: first,
            rejoined: false,
            session_first_seq: 1,
            ledger,
            input: Input::default(),
            payload: vec![0u8; 1400],
            scratch: Vec::new(),
            tick_hz: None,
        }
    }

    /// Whether the player completed a handshake at least once.
    pub fn ever_connected(&self) -> bool {
        self.ledger.ever_connected()
    }

    /// Marks the player as ended with `why`.
    pub fn fail(&mut self, why: String) {
        if !matches!(self.state, State::Ended(_)) {
            self.state = State::Ended(why);
        }
    }

    fn planned(&self) -> bool {
        self.ledger.attendance.planned()
    }

    /// Follows the presence plan at `now_us`: begins a join, or leaves
    /// (its presence ended or its join failed) with a goodbye into `out`
    /// if it has a session (returns whether it wrote one).
    fn follow_plan(&mut self, now_us: u64, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        while let Some(change) = self.ledger.attendance.poll(now_us, rec) {
            if change == Change::Join {
                // A fresh handshake, as a new client.
                self.nonce = self.rng.gen();
                self.history.clear();
                self.ack_tick = None;
                self.last_snapshot_us = None;
                self.rejoined = false;
                self.last_heard_us = now_us;
                self.state = State::Hello {
                    next_try_us: now_us,
                    retry_us: RETRY_MIN_US,
                };
                continue;
            }
            let connected = self.state == State::Connected;
            let hz = self.tick_hz.unwrap_or(DEFAULT_TICK_HZ);
            self.ledger.left(now_us, connected, hz, rec);
            self.next_cmd_us = u64::MAX;
            self.next_ping_us = u64::MAX;
            self.state = State::Absent;
            if connected {
                Packet::Disconnect {
                    reason: DisconnectReason::ClientLeaving,
                }
                .encode(out);
                return true;
            }
        }
        false
    }

    /// The session is gone: re-handshake at once, then with backoff.
    fn lose_session(&mut self, now_us: u64, rec: &mut Recorder) {
        self.ledger.expire(now_us, rec);
        self.ledger.session_ended(now_us, rec);
        self.next_cmd_us = u64::MAX;
        self.next_ping_us = u64::MAX;
        self.state = State::Hello {
            next_try_us: now_us,
            retry_us: RETRY_MIN_US,
        };
    }

    /// A human-like input stream: run, turn now and then, fire in bursts.
    fn steer(&mut self) {
        let r = &mut self.rng;
        if r.gen_ratio(1, 50) {
            self.input.yaw = r.gen_range(-std::f32::consts::PI..std::f32::consts::PI);
            self.input.right = r.gen_range(-1.0..=1.0);
        }
        self.input.forward = 1.0;
        self.input.pitch = (self.input.pitch + r.gen_range(-0.02..0.02)).clamp(-0.5, 0.5);
        self.input.buttons = if r.gen_ratio(1, 8) { buttons::FIRE } else { 0 };
    }

    fn on_accepted(&mut self, now_us: u64, tick: TickRate, rec: &mut Recorder) {
        self.tick_hz = Some(tick);
        self.tick_interval_us = tick.interval_us();
        self.ledger.coverage.set_tick_hz(tick);
        self.ledger.interval_us = self.cmd_interval_us(tick);
        if self.ledger.session_began(now_us, rec) {
            self.rejoined = true;
        }
        self.last_heard_us = now_us;
        self.session_first_seq = self.seq.wrapping_add(1);
        let cmd_interval_us = self.ledger.interval_us;
        if self.settings.ping_hz > 0.0 {
            self.ping_interval_us = interval_us(self.settings.ping_hz);
            self.next_ping_us = on_grid(
                now_us + self.rng.gen_range(0..self.ping_interval_us),
                cmd_interval_us,
            );
        }
        // A random phase against the server's tick, as real players have,
        // drawn from SLOTS slots of a grid shared by all players (absolute
        // monotonic time): the load generator then wakes at most SLOTS times
        // per interval however many players it drives. Latency is measured
        // from these due times.
        let slot = self.rng.gen_range(0..SLOTS);
        let start = (now_us / cmd_interval_us + 1) * cmd_interval_us;
        self.next_cmd_us = start + slot * (cmd_interval_us / SLOTS);
        self.state = State::Connected;
    }

    /// The command interval at the server's `tick_hz`: one command a tick
    /// unless the settings give a rate.
    fn cmd_interval_us(&self, tick_hz: TickRate) -> u64 {
        interval_us(self.settings.cmd_rate_hz.unwrap_or(f64::from(tick_hz.hz())))
    }

    /// A full snapshot numbered at or below what we had, after we had to
    /// re-handshake: the server restarted and numbers its ticks afresh.
    fn server_restarted(&mut self, now_us: u64, rec: &mut Recorder) {
        // Commands sent to the old process (before this session's first)
        // will never be reflected.
        let first = self.session_first_seq;
        let old = |c: &Sent| c.seq.wrapping_sub(first) as i32 <= -1;
        self.ledger.server_restarted(old, rec);
        self.history.clear();
        self.ack_tick = None;
        rec.server_restarted(self.target);
        self.last_snapshot_us = None;
        let _ = now_us;
    }

    fn on_snapshot(&mut self, now_us: u64, s: &Snapshot<'_>, rec: &mut Recorder) {
        self.last_heard_us = now_us;
        let newest = self.history.back().map(|(t, _)| *t);
        if self.rejoined && s.baseline_tick.is_none() && newest.is_some_and(|t| s.tick <= t) {
            self.server_restarted(now_us, rec);
        }
        // Rebuild the world state this snapshot describes (real client work).
        let baseline: &[EntityState] = match s.baseline_tick {
            None => &[],
            Some(t) => match self.history.iter().find(|(ht, _)| *ht == t) {
                Some((_, e)) => e,
                None => {
                    rec.decode_errors += 1;
                    return;
                }
            },
        };
        let mut cur = std::mem::take(&mut self.scratch);
        if delta::apply(baseline, s.records, s.record_count, &mut cur).is_err() {
            rec.decode_errors += 1;
            self.scratch = cur;
            return;
        }
        let newest = self.history.back().map(|(t, _)| *t);
        if newest.is_none_or(|t| s.tick > t) {
            if self.history.len() == HISTORY {
                let (_, v) = self.history.pop_front().expect("non-empty");
                self.scratch = v;
            }
            self.history.push_back((s.tick, cur));
            self.ack_tick = Some(s.tick);
        } else {
            // Duplicate or reordered: nothing new to show the player.
            self.scratch = cur;
            return;
        }
        self.rejoined = false;
        self.ledger.joined(now_us, rec);
        self.ledger.coverage.tick(now_us, s.tick, &mut rec.windows);

        rec.server_tick(self.target, s.tick, now_us, s.frame_us, s.lateness_us);
        if rec.in_window(now_us) {
            if let Some(prev) = self.last_snapshot_us {
                let gap = now_us - prev;
                record(&mut rec.jitter, gap.abs_diff(self.tick_interval_us));
            }
        }
        self.last_snapshot_us = Some(now_us);

        if let Some(applied) = s.last_cmd_seq {
            let shown = |c: &Sent| c.seq.wrapping_sub(applied) as i32 <= 0;
            self.ledger.reflect(now_us, shown, None, rec);
        }
    }
}

impl Emulated for Player {
    fn target(&self) -> SocketAddr {
        self.target
    }

    fn tick_hz(&self) -> Option<TickRate> {
        self.tick_hz
    }

    fn is_connected(&self) -> bool {
        self.state == State::Connected
    }

    /// Why this player stopped, if it did.
    fn ended(&self) -> Option<&str> {
        match &self.state {
            State::Ended(why) => Some(why),
            _ => None,
        }
    }

    /// The socket reported "port unreachable" (`why` says so): before the
    /// first connection nothing listens there and the player gives up; after
    /// it, the server is presumed restarting and the player reconnects.
    fn unreachable(&mut self, now_us: u64, why: String, rec: &mut Recorder) {
        if self.planned() {
            // Joining: the backoff goes on until the join's limit.
            self.ledger.attendance.last_failure = Some(why);
            if self.state == State::Connected {
                self.lose_session(now_us, rec);
            }
        } else if !self.ledger.ever_connected() {
            self.ledger.attendance.gave_up(rec);
            self.fail(why);
        } else if self.state == State::Connected {
            self.lose_session(now_us, rec);
        }
        // Already re-handshaking: the backoff goes on.
    }

    /// When this player next wants [`Self::poll_transmit`] called.
    fn next_deadline(&self) -> u64 {
        let plan = self.ledger.attendance.next_change_us();
        match self.state {
            State::Hello { next_try_us, .. } | State::Connect { next_try_us, .. } => {
                if self.ledger.ever_connected() || self.planned() {
                    next_try_us.min(plan)
                } else {
                    next_try_us.min(self.settings.connect_deadline_us)
                }
            }
            State::Connected => self
                .next_cmd_us
                .min(self.next_ping_us)
                .min(self.last_heard_us + silence_us(self.tick_hz))
                .min(plan),
            State::Absent => plan,
            State::Ended(_) => u64::MAX,
        }
    }

    /// Writes the next due datagram into `out` (cleared first) and returns
    /// `true`, or returns `false` when nothing is due at `now_us`.
    fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        out.clear();
        if self.follow_plan(now_us, out, rec) {
            return true;
        }
        if self.state == State::Connected && now_us >= self.last_heard_us + silence_us(self.tick_hz)
        {
            self.lose_session(now_us, rec);
        }
        match self.state {
            State::Hello { .. } | State::Connect { .. }
                if !self.planned()
                    && !self.ledger.ever_connected()
                    && now_us >= self.settings.connect_deadline_us =>
            {
                self.ledger.attendance.gave_up(rec);
                self.state = State::Ended(format!(
                    "no answer from {} to the handshake (is a tickpack server listening there?)",
                    self.target
                ));
                false
            }
            State::Hello {
                next_try_us,
                retry_us,
            } if now_us >= next_try_us => {
                Packet::Hello {
                    version: PROTOCOL_VERSION,
                    nonce: self.nonce,
                }
                .encode(out);
                self.state = State::Hello {
                    next_try_us: now_us + retry_us,
                    retry_us: (retry_us * 2).min(RETRY_MAX_US),
                };
                true
            }
            State::Connect {
                token,
                next_try_us,
                retry_us,
            } if now_us >= next_try_us => {
                let name = format!("player-{}", self.index);
                Packet::Connect {
                    version: PROTOCOL_VERSION,
                    nonce: self.nonce,
                    token,
                    name: &name,
                }
                .encode(out);
                self.state = State::Connect {
                    token,
                    next_try_us: now_us + retry_us,
                    retry_us: (retry_us * 2).min(RETRY_MAX_US),
                };
                true
            }
            State::Connected if now_us >= self.next_ping_us => {
                let due = self.next_ping_us;
                self.next_ping_us += self.ping_interval_us;
                Packet::Ping {
                    nonce: self.nonce,
                    client_time_us: due,
                    len: self.settings.ping_size,
                }
                .encode(out);
                true
            }
            State::Connected if now_us >= self.next_cmd_us => {
                self.ledger.expire(now_us, rec);
                let due = self.next_cmd_us;
                self.next_cmd_us += self.ledger.interval_us;
                self.seq = self.seq.wrapping_add(1);
                self.steer();
                let (min, max) = self.settings.cmd_size.bounds();
                let size = if min == max {
                    min
                } else {
                    self.rng.gen_range(min..=max)
                };
                let n = size - tickpack_wire::COMMAND_HEADER_LEN;
                Packet::Command(Command {
                    seq: self.seq,
                    client_time_us: due,
                    ack_tick: self.ack_tick,
                    input: self.input,
                    payload: &self.payload[..n],
                })
                .encode(out);
                let sent = Sent {
                    seq: self.seq,
                    due_us: due,
                };
                self.ledger.sent(sent, rec);
                true
            }
            _ => false,
        }
    }

    /// Processes one datagram from the server.
    fn handle(&mut self, now_us: u64, data: &[u8], rec: &mut Recorder) {
        let Ok(p) = Packet::decode(data) else {
            rec.decode_errors += 1;
            return;
        };
        match (p, &self.state) {
            (Packet::Challenge { nonce, token }, State::Hello { retry_us, .. })
                if nonce == self.nonce =>
            {
                self.state = State::Connect {
                    token,
                    next_try_us: now_us,
                    retry_us: *retry_us,
                };
            }
            (Packet::Accepted { tick_hz, .. }, State::Connect { .. }) => {
                self.on_accepted(now_us, tick_hz, rec)
            }
            (Packet::Refused { reason }, State::Hello { retry_us, .. })
            | (Packet::Refused { reason }, State::Connect { retry_us, .. }) => {
                let retry_us = *retry_us;
                match reason {
                    // A stale token: start over rather than give up.
                    RefuseReason::BadToken => {
                        self.state = State::Hello {
                            next_try_us: now_us,
                            retry_us,
                        }
                    }
                    // Full or stopping after having played: the server may be
                    // coming back; keep trying with backoff. A planned join
                    // keeps trying whatever the reason, until its limit.
                    RefuseReason::Full | RefuseReason::ShuttingDown
                        if self.ledger.ever_connected() =>
                    {
                        self.state = State::Hello {
                            next_try_us: now_us + retry_us,
                            retry_us: (retry_us * 2).min(RETRY_MAX_US),
                        }
                    }
                    _ if self.planned() => {
                        self.ledger.attendance.last_failure =
                            Some(format!("{} refused the connection: {reason}", self.target));
                        self.state = State::Hello {
                            next_try_us: now_us + retry_us,
                            retry_us: (retry_us * 2).min(RETRY_MAX_US),
                        }
                    }
                    _ => {
                        self.state = State::Ended(format!(
                            "{} refused the connection: {reason}",
                            self.target
                        ))
                    }
                }
            }
            (Packet::Snapshot(s), State::Connected) => self.on_snapshot(now_us, &s, rec),
            (
                Packet::Pong {
                    nonce,
                    client_time_us,
                    ..
                },
                _,
            ) if nonce == self.nonce && rec.in_window(client_time_us) => {
                record(&mut rec.rtt, now_us.saturating_sub(client_time_us));
            }
            // A goodbye, in a session or while handshaking again after one
            // (the socket said "port unreachable" first).
            (
                Packet::Disconnect { reason },
                State::Connected | State::Hello { .. } | State::Connect { .. },
            ) if self.ledger.ever_connected() => {
                let connected = self.state == State::Connected;
                match reason {
                    // The server dropped us for silence: come back.
                    DisconnectReason::Timeout if connected => self.lose_session(now_us, rec),
                    // Already coming back.
                    DisconnectReason::Timeout => {}
                    // A planned player comes back whatever the reason: the
                    // time without a session is counted.
                    _ if self.planned() => {
                        if connected {
                            self.lose_session(now_us, rec);
                        }
                    }
                    _ => {
                        // The rest of the span is without service: counted
                        // (from the session's loss, if it was lost before).
                        self.ledger.session_ended(now_us, rec);
                        self.state = State::Ended(format!(
                            "{} disconnected the player: {reason:?}",
                            self.target
                        ))
                    }
                }
            }
            _ => {}
        }
    }

    /// Settles the counters at the end of the run (see [`RunEnd`]), and
    /// writes the goodbye datagram into `out` if connected.
    fn finish(&mut self, end: &RunEnd, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        let hz = match self.tick_hz {
            Some(hz) => hz,
            None => {
                // Never told the tick rate: the schedule it would have had
                // at the hinted one.
                let hz = end.hint_tick_hz;
                self.ledger.interval_us = self.cmd_interval_us(hz);
                hz
            }
        };
        // Without a session nothing outstanding can still be reflected.
        let connected = self.state == State::Connected;
        self.ledger.finish(end, connected, hz, rec);
        out.clear();
        // A planned player's failed joins are the run's problems to show.
        let failures = self.ledger.attendance.failures().filter(|_| self.planned());
        let goodbye = self.state == State::Connected;
        if goodbye {
            Packet::Disconnect {
                reason: DisconnectReason::ClientLeaving,
            }
            .encode(out);
            self.state = State::Ended("finished".into());
        }
        if let Some(why) = failures {
            self.state = State::Ended(why);
        }
        goodbye
    }
}
