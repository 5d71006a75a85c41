//! One emulated Quake III protocol 71 (ioquake3) player as a state
//! machine, measured like [`crate::Player`]: no sockets, no clock.
//!
//! The protocol itself (challenge, Huffman-compressed connect, netchan with
//! fragments, gamestate, delta-coded snapshots, keyed usercmds, reliable
//! commands) is [`tickpack_q3::client::Client`]; this file adds what a
//! player does and what it measures:
//!
//! - **Transaction latency**: from the time a usercmd was *due* on the
//!   open-loop schedule to the arrival of the first snapshot whose player
//!   state shows it executed (`commandTime` at or past the usercmd's
//!   `serverTime`; the server runs a usercmd when its packet arrives and
//!   shows it in its next snapshot).
//! - **RTT**: the Quake III client's own ping formula (cl_parse.c): from the
//!   *sending* of the newest usercmd a snapshot shows executed to that
//!   snapshot's arrival. The protocol has no echo, so this RTT includes the
//!   wait for the server's next frame (0 to one frame); the transaction
//!   latency also includes any lateness of the load generator.
//! - **The server's ping**: `playerState.ping`, the server's own average of
//!   (acknowledged − sent) over its last 32 snapshots to this player, at
//!   the resolution of its frame clock. Recorded as `server_ping_us`.
//! - **Snapshots against the schedule**: the server numbers its frames by
//!   `serverTime` (milliseconds, advancing by exactly 1000/sv_fps per
//!   frame), learned from the first snapshots; a frame whose snapshot never
//!   came (dropped, or a frame the server skipped when late) is lost.
//! - Commands never reflected within the loss deadline, outages and
//!   reconnects, as for the reference server ([`crate::coverage`]).
//!
//! The players move: they run forward, strafe now and then and turn, so the
//! server simulates real movement for them, and they appear in the
//! server's `getstatus` with their names (`tp-N`).
//!
//! With a presence plan ([`crate::presence`]) a player leaves as an
//! ioquake3 client disconnects (`CL_Disconnect`): the reliable command
//! `disconnect`, sent in [`GOODBYE_PACKETS`] packets in case one is lost;
//! it joins again with a fresh challenge and connect (the server gives
//! the same address and qport its slot back).

use std::collections::VecDeque;
use std::net::SocketAddr;

use rand::rngs::SmallRng;
use rand::Rng;
use tickpack_q3::client::{Client, ClientConfig, ClientState, Event, SnapshotInfo, UserCmd};
use tickpack_wire::TickRate;

use crate::emulated::{Emulated, RunEnd};
use crate::ledger::Pending;
use crate::measured::{Measured, Numbering};
use crate::player::{PlayerSettings, Seat, RETRY_MAX_US, RETRY_MIN_US};
use crate::presence::{Attendance, Change, Presence};
use crate::recorder::Recorder;

/// The protocol number ioquake3 servers speak (Debian's set `com_protocol 71`).
pub const PROTOCOL: i32 = 71;
/// Frames per second assumed for a server that never sent a snapshot: the
/// engine's default `sv_fps`.
pub const DEFAULT_SV_FPS: TickRate = TickRate::new(20).unwrap();
/// Usercmds per second when no rate is given: ioquake3's default
/// `cl_maxpackets` (30), the rate a stock client sends at.
pub const DEFAULT_CMD_RATE_HZ: f64 = 30.0;
/// Snapshots are numbered by `serverTime`, in milliseconds; the frame
/// interval is learned (a server that never sent a snapshot is presumed to
/// run at the default 20 frames a second: 50 ms).
const NUMBERING: Numbering = Numbering {
    unit_us: 1000,
    fallback_step: 50,
    max_step: i32::MAX,
};
/// While connected but before the first snapshot, a packet this often
/// acknowledges the gamestate (the server sends it on our first packet).
const PRIMING_INTERVAL_US: u64 = 50_000;
/// Usercmds per packet: the new one and the previous one, like ioquake3's
/// default `cl_packetdup 1`, so one lost packet loses no input.
const CMDS_PER_PACKET: usize = 2;
/// Packets carrying the `disconnect` command when a player leaves: three,
/// as ioquake3's `CL_Disconnect` writes.
pub const GOODBYE_PACKETS: u8 = 3;

#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Challenge and connect, retried with backoff.
    Handshake {
        next_try_us: u64,
        retry_us: u64,
    },
    /// Connected; the session counts once the first snapshot arrived.
    Session,
    /// Leaving by the plan: packets carrying `disconnect` still to send.
    Leaving(u8),
    /// Away by the presence plan.
    Absent,
    Ended(String),
}

/// A sent usercmd awaiting its reflection.
#[derive(Debug, Clone, Copy)]
struct Sent {
    server_time: i32,
    due_us: u64,
    sent_us: u64,
}

impl Pending for Sent {
    fn due_us(&self) -> u64 {
        self.due_us
    }
}

/// One emulated Quake III protocol player.
pub struct Q3Player {
    pub index: usize,
    pub target: SocketAddr,
    settings: PlayerSettings,
    client: Client,
    state: State,
    rng: SmallRng,
    next_cmd_us: u64,
    /// The last usercmd's serverTime (the server ignores one not newer).
    last_cmd_time: i32,
    /// The last usercmds sent, newest last (resent as duplicates).
    recent: VecDeque<UserCmd>,
    last_heard_us: u64,
    /// Before the first snapshot: when to send the next priming packet.
    next_prime_us: u64,
    /// The `sv_serverid` of the last gamestate: a new level has a new one
    /// (a gamestate sent again for the same level is no map change).
    level_id: Option<i32>,
    /// Last refusal the server printed during a handshake.
    refusal: Option<String>,
    /// Frames (numbered by serverTime) and usercmds against the schedule.
    measured: Measured<Sent>,
    events: Vec<Event>,
    yaw: i32,
    strafe: i8,
    /// The server's frame rate, once learned from its snapshots.
    pub tick_hz: Option<TickRate>,
}

/// Quake III angles are 16-bit shorts of a full turn.
fn angle_to_short(deg: f32) -> i32 {
    ((deg * 65536.0 / 360.0) as i32) & 0xFFFF
}

impl Q3Player {
    /// A player present the whole run.
    pub fn new(seat: Seat, settings: PlayerSettings) -> Self {
        Self::with_presence(seat, settings, &Presence::always())
    }

    /// A player present as `presence` says.
    pub fn with_presence(seat: Seat, settings: PlayerSettings, presence: &Presence) -> Self {
        let mut rng = seat.rng();
        let first = seat.first_hello(&mut rng);
        let attendance = Attendance::new(presence, seat.start_us, first);
        let state = if attendance.planned() {
            State::Absent
        } else {
            State::Handshake {
                next_try_us: first,
                retry_us: RETRY_MIN_US,
            }
        };
        let measured = Measured::new(first, &settings, DEFAULT_CMD_RATE_HZ, NUMBERING, attendance);
        let mut cfg = ClientConfig::new(
            &format!("{}{}", crate::referee::NAME_PREFIX, seat.index),
            rng.gen(),
            rng.gen_range(1..i32::MAX),
        );
        cfg.protocol = PROTOCOL;
        cfg.userinfo.retain(|(k, _)| k == "cl_guid");
        cfg.userinfo.extend(userinfo());
        let client = Client::new(cfg);
        Self {
            index: seat.index,
            target: seat.target,
            settings,
            client,
            state,
            rng,
            next_cmd_us: u64::MAX,
            last_cmd_time: 0,
            recent: VecDeque::with_capacity(CMDS_PER_PACKET),
            last_heard_us: first,
            next_prime_us: first,
            level_id: None,
            refusal: None,
            measured,
            events: Vec::new(),
            yaw: 0,
            strafe: 0,
            tick_hz: None,
        }
    }

    /// The name the server lists this player under.
    pub fn name(&self) -> String {
        format!("{}{}", crate::referee::NAME_PREFIX, self.index)
    }

    fn planned(&self) -> bool {
        self.measured.ledger.attendance.planned()
    }

    /// Follows the presence plan at `now_us`: begins a join, or leaves (its
    /// presence ended or its join failed), saying goodbye if the channel
    /// is open.
    fn follow_plan(&mut self, now_us: u64, rec: &mut Recorder) {
        while let Some(change) = self.measured.ledger.attendance.poll(now_us, rec) {
            if change == Change::Join {
                self.client.reset();
                self.recent.clear();
                self.refusal = None;
                self.next_cmd_us = u64::MAX;
                self.last_heard_us = now_us;
                self.next_prime_us = now_us;
                self.state = State::Handshake {
                    next_try_us: now_us,
                    retry_us: RETRY_MIN_US,
                };
                continue;
            }
            let hz = self.tick_hz.unwrap_or(DEFAULT_SV_FPS);
            self.measured.left(now_us, hz, rec);
            self.next_cmd_us = u64::MAX;
            self.recent.clear();
            if self.state == State::Session {
                self.client.queue_command("disconnect");
                self.state = State::Leaving(GOODBYE_PACKETS);
                return;
            }
            self.client.reset();
            self.state = State::Absent;
        }
    }

    /// The session is gone: re-handshake at once, then with backoff.
    fn lose_session(&mut self, now_us: u64, rec: &mut Recorder) {
        self.measured.session_lost(now_us, rec);
        self.client.reset();
        self.next_cmd_us = u64::MAX;
        self.recent.clear();
        self.state = State::Handshake {
            next_try_us: now_us,
            retry_us: RETRY_MIN_US,
        };
    }

    /// A new gamestate in the middle of a session: the server loaded a new
    /// level (a map change) and every player must load it and enter the
    /// world again, as ioquake3 makes its clients do. A planned player
    /// joins again (its span goes on; the load is that join's time, and
    /// its absence is neither loss nor outage); one without a plan loses
    /// its session until the new level's first snapshot. The new level's
    /// snapshots are numbered afresh.
    fn level_changed(&mut self, now_us: u64, rec: &mut Recorder) {
        // The old level ended with its last snapshot: the load began then.
        let last = self
            .measured
            .newest()
            .map_or(now_us, |(_, at)| at.min(now_us));
        if self.planned() && self.measured.ledger.attendance.rejoin(last) {
            let hz = self.tick_hz.unwrap_or(DEFAULT_SV_FPS);
            // The presence's account closes at the old level's last
            // snapshot; the new level's join reopens it at its first, until
            // the same leave.
            self.measured.ledger.coverage.end_at(last + 1);
            self.measured.left(now_us, hz, rec);
        } else {
            self.measured.session_lost(now_us, rec);
        }
        self.measured.new_level();
        // The new level's clock starts again: usercmds too (the server
        // ignores one not newer than the first it takes on the new level).
        self.last_cmd_time = 0;
        self.next_cmd_us = u64::MAX;
        self.recent.clear();
        self.next_prime_us = now_us;
    }

    /// The server's time now, estimated from the newest snapshot, never
    /// going backwards between usercmds (the server ignores a usercmd not
    /// newer than the last it ran).
    fn server_time_now(&mut self, now_us: u64) -> i32 {
        let est = match self.measured.newest() {
            Some((t, at)) => t.saturating_add((now_us.saturating_sub(at) / 1000) as i32),
            None => 0,
        };
        let t = est.max(self.last_cmd_time + 1);
        self.last_cmd_time = t;
        t
    }

    /// A human-like input: run forward, turn now and then, strafe, fire.
    fn steer(&mut self, server_time: i32) -> UserCmd {
        let r = &mut self.rng;
        if r.gen_ratio(1, 30) {
            self.yaw = angle_to_short(r.gen_range(0.0..360.0));
            self.strafe = [-127, 0, 0, 127][r.gen_range(0..4)];
        }
        self.yaw = (self.yaw + r.gen_range(-200..=200)) & 0xFFFF;
        UserCmd {
            server_time,
            angles: [0, self.yaw, 0],
            buttons: if r.gen_ratio(1, 8) { 1 } else { 0 },
            weapon: 0,
            forwardmove: 127,
            rightmove: self.strafe,
            upmove: 0,
        }
    }

    fn on_snapshot(&mut self, now_us: u64, s: &SnapshotInfo, rec: &mut Recorder) {
        if !s.delta_ok {
            // The delta base was gone: not a frame the player could show.
            rec.decode_errors += 1;
            return;
        }
        self.last_heard_us = now_us;
        let Some(fresh) = self
            .measured
            .snapshot(now_us, s.server_time, self.target, rec)
        else {
            return; // duplicate or reordered
        };
        if fresh.restarted {
            // A new server process: its frame times start again.
            self.last_cmd_time = 0;
        }
        if let Some(frame_ms) = fresh.learned {
            // Frames a second (a frame longer than a second: not a rate).
            self.tick_hz = u16::try_from(1000 / frame_ms).ok().and_then(TickRate::new);
        }
        if fresh.began {
            // A random phase against the server's frames, as real players
            // have, on a grid of 16 slots per interval shared by all players.
            let interval_us = self.measured.ledger.interval_us;
            let slot = self.rng.gen_range(0..crate::player::SLOTS);
            let step = interval_us / crate::player::SLOTS;
            self.next_cmd_us = (now_us / interval_us + 1) * interval_us + slot * step;
        }
        // Usercmds this snapshot shows executed.
        let executed = |c: &Sent| c.server_time <= s.command_time;
        if let Some(newest) = self.measured.reflect(now_us, executed, rec) {
            self.measured.round_trip(newest.sent_us, now_us, rec);
        }
    }
}

/// The userinfo every emulated player sends besides its name: the highest
/// rate a client may ask (so the server never holds snapshots back for
/// bandwidth) and as many snapshots as the server makes (`snaps` is capped
/// at `sv_fps`).
fn userinfo() -> Vec<(String, String)> {
    [
        ("rate", "90000"),
        ("snaps", "1000"),
        ("model", "sarge"),
        ("headmodel", "sarge"),
        ("handicap", "100"),
        ("color1", "4"),
        ("color2", "5"),
        ("sex", "male"),
        ("cl_anonymous", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

impl Emulated for Q3Player {
    fn target(&self) -> SocketAddr {
        self.target
    }

    fn next_deadline(&self) -> u64 {
        let plan = self.measured.ledger.attendance.next_change_us();
        match self.state {
            State::Handshake { next_try_us, .. } => {
                if self.measured.ever_connected() || self.planned() {
                    next_try_us.min(plan)
                } else {
                    next_try_us.min(self.settings.connect_deadline_us)
                }
            }
            State::Session if !self.measured.active() => self
                .next_prime_us
                .min(self.last_heard_us + self.measured.silence_us())
                .min(plan),
            State::Session => self
                .next_cmd_us
                .min(self.last_heard_us + self.measured.silence_us())
                .min(plan),
            // Now: the goodbye goes out at once.
            State::Leaving(_) => 0,
            State::Absent => plan,
            State::Ended(_) => u64::MAX,
        }
    }

    fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        out.clear();
        if let State::Leaving(left) = self.state {
            // The reliable `disconnect` rides every packet until it is
            // acknowledged; the last one goes, and the player is away.
            let sent = self.client.usercmd_packet_into(&[], out);
            if left <= 1 || !sent {
                self.client.reset();
                self.state = State::Absent;
            } else {
                self.state = State::Leaving(left - 1);
            }
            return sent;
        }
        self.follow_plan(now_us, rec);
        if let State::Leaving(_) = self.state {
            return self.poll_transmit(now_us, out, rec);
        }
        if self.state == State::Session && now_us >= self.last_heard_us + self.measured.silence_us()
        {
            self.lose_session(now_us, rec);
        }
        match self.state {
            State::Handshake { .. }
                if !self.planned()
                    && !self.measured.ever_connected()
                    && now_us >= self.settings.connect_deadline_us =>
            {
                self.measured.ledger.attendance.gave_up(rec);
                let why = match &self.refusal {
                    Some(r) => format!("{} refused the connection: {r}", self.target),
                    None => format!(
                        "no answer from {} to the Quake III handshake (is a Quake III protocol \
                         server listening there?)",
                        self.target
                    ),
                };
                self.state = State::Ended(why);
                false
            }
            State::Handshake {
                next_try_us,
                retry_us,
            } if now_us >= next_try_us => {
                let Some(p) = self.client.handshake_packet() else {
                    self.state = State::Session;
                    return false;
                };
                out.extend_from_slice(&p);
                self.state = State::Handshake {
                    next_try_us: now_us + retry_us,
                    retry_us: (retry_us * 2).min(RETRY_MAX_US),
                };
                true
            }
            State::Session if !self.measured.active() => {
                if now_us < self.next_prime_us {
                    return false;
                }
                self.next_prime_us = now_us + PRIMING_INTERVAL_US;
                // Acknowledge what arrived so far (the gamestate) and ask
                // to enter the world with a standing usercmd.
                let t = self.server_time_now(now_us);
                let cmd = self.steer(t);
                self.client.usercmd_packet_into(&[cmd], out)
            }
            State::Session if now_us >= self.next_cmd_us => {
                self.measured.ledger.expire(now_us, rec);
                let due = self.next_cmd_us;
                self.next_cmd_us += self.measured.ledger.interval_us;
                let t = self.server_time_now(now_us);
                let cmd = self.steer(t);
                if self.recent.len() == CMDS_PER_PACKET {
                    self.recent.pop_front();
                }
                self.recent.push_back(cmd);
                self.client
                    .usercmd_packet_into(self.recent.make_contiguous(), out);
                let sent = Sent {
                    server_time: t,
                    due_us: due,
                    sent_us: now_us,
                };
                self.measured.ledger.sent(sent, rec);
                !out.is_empty()
            }
            _ => false,
        }
    }

    fn handle(&mut self, now_us: u64, data: &[u8], rec: &mut Recorder) {
        if matches!(
            self.state,
            State::Ended(_) | State::Absent | State::Leaving(_)
        ) {
            return;
        }
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        if self.client.handle(data, &mut events).is_err() {
            rec.decode_errors += 1;
        }
        for e in events.drain(..) {
            match e {
                Event::Challenged => {
                    // Connect at once.
                    if let State::Handshake { retry_us, .. } = self.state {
                        self.state = State::Handshake {
                            next_try_us: now_us,
                            retry_us,
                        };
                    }
                }
                Event::Connected => {
                    self.state = State::Session;
                    self.last_heard_us = now_us;
                    self.next_prime_us = now_us;
                }
                Event::Snapshot(s) => {
                    if self.state == State::Session {
                        self.on_snapshot(now_us, &s, rec);
                    }
                }
                Event::Disconnected { reason } => {
                    if self.state == State::Session {
                        // Dropped after having played (a restart, a
                        // timeout): come back. Sent away before ever
                        // playing: the reason ends the player (a planned
                        // one tries again until its join's limit).
                        if self.measured.ever_connected()
                            || self.planned()
                            || reason.contains("timed out")
                        {
                            if self.planned() {
                                self.measured.ledger.attendance.last_failure = Some(format!(
                                    "{} disconnected the player: {reason}",
                                    self.target
                                ));
                            }
                            self.lose_session(now_us, rec);
                        } else {
                            self.measured.ledger.session_ended(now_us, rec);
                            self.state = State::Ended(format!(
                                "{} disconnected the player: {reason}",
                                self.target
                            ));
                        }
                    }
                }
                Event::Print(text) => {
                    if matches!(self.state, State::Handshake { .. }) {
                        let text = text.trim().to_string();
                        if self.planned() {
                            self.measured.ledger.attendance.last_failure =
                                Some(format!("{} refused the connection: {text}", self.target));
                        }
                        self.refusal = Some(text);
                    }
                }
                Event::Gamestate { server_id, .. } => {
                    self.last_heard_us = self.last_heard_us.max(now_us);
                    let new_level = self.level_id.is_some_and(|id| id != server_id);
                    self.level_id = Some(server_id);
                    if new_level && self.state == State::Session && self.measured.active() {
                        self.level_changed(now_us, rec);
                    }
                }
                Event::ServerCommand { .. } => {
                    self.last_heard_us = self.last_heard_us.max(now_us);
                }
            }
        }
        self.events = events;
        if self.client.state() == ClientState::Challenging
            && self.state == State::Session
            && !self.measured.active()
        {
            // The client went back to the start (a refusal mid-handshake).
            self.lose_session(now_us, rec);
        }
    }

    fn unreachable(&mut self, now_us: u64, why: String, rec: &mut Recorder) {
        if self.planned() {
            // Joining: the backoff goes on until the join's limit.
            self.measured.ledger.attendance.last_failure = Some(why);
            if self.state == State::Session {
                self.lose_session(now_us, rec);
            }
        } else if !self.measured.ever_connected() {
            if !matches!(self.state, State::Ended(_)) {
                self.measured.ledger.attendance.gave_up(rec);
                self.state = State::Ended(why);
            }
        } else if self.state == State::Session {
            self.lose_session(now_us, rec);
        }
    }

    fn finish(&mut self, end: &RunEnd, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        if self.measured.step().is_none() {
            // Never learned the frame interval: the frames seen so far are
            // counted at the hinted rate (a frame of whole milliseconds).
            let frame_ms = end.hint_tick_hz.interval_us() / 1000;
            self.measured.settle(frame_ms as i32, rec);
        }
        let connected = self.is_connected();
        let hint = end.hint_tick_hz;
        let hz = self.tick_hz.map_or(hint, |hz| hz.max(hint));
        self.measured.ledger.finish(end, connected, hz, rec);
        out.clear();
        let failures = self
            .measured
            .ledger
            .attendance
            .failures()
            .filter(|_| self.planned());
        let mut goodbye = false;
        if matches!(self.state, State::Session | State::Leaving(_)) {
            if self.state == State::Session {
                self.client.queue_command("disconnect");
            }
            self.state = State::Ended("finished".into());
            goodbye = self.client.usercmd_packet_into(&[], out);
        }
        if let Some(why) = failures {
            self.state = State::Ended(why);
        }
        goodbye
    }

    fn is_connected(&self) -> bool {
        self.state == State::Session && self.measured.active()
    }

    fn ended(&self) -> Option<&str> {
        match &self.state {
            State::Ended(why) => Some(why),
            _ => None,
        }
    }

    fn tick_hz(&self) -> Option<TickRate> {
        self.tick_hz
    }

    fn referee_row(&self) -> Option<tickpack_report::RefereeRow> {
        Some(self.measured.referee_row(self.target, self.name()))
    }
}
