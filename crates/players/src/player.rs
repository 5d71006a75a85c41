//! One emulated player as a state machine: handshake, an open-loop command
//! schedule, pings, and snapshot bookkeeping. No sockets, no clock.
//!
//! Call [`Player::poll_transmit`] until it returns `false` whenever
//! [`Player::next_deadline`] has come or after [`Player::handle`]; give every
//! datagram from the server to [`Player::handle`]; call [`Player::finish`] once
//! at the end.

use std::collections::VecDeque;
use std::net::SocketAddr;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tickpack_report::record;
use tickpack_wire::{
    buttons, delta, Command, EntityState, Input, Packet, RefuseReason, Snapshot, PROTOCOL_VERSION,
};

use crate::config::SizeDist;
use crate::recorder::Recorder;

/// Send slots per command interval (see `Player::handle`, `Accepted`).
pub const SLOTS: u64 = 16;

/// Rounds `t_us` up to the next slot boundary of a `cmd_interval_us` grid.
fn on_grid(t_us: u64, cmd_interval_us: u64) -> u64 {
    let step = (cmd_interval_us / SLOTS).max(1);
    t_us.div_ceil(step) * step
}

/// Retry interval of hello and connect.
const HANDSHAKE_RETRY_US: u64 = 250_000;
/// Snapshots kept as delta baselines (matches the server's history).
const HISTORY: usize = 32;
/// Commands still waiting for a snapshot that are older than this at the
/// end of the run count as lost; the run drains this long after the
/// measurement window so that every measured command gets the chance.
pub const LOST_AFTER_US: u64 = 500_000;

#[derive(Debug, Clone, PartialEq)]
enum State {
    Hello {
        next_try_us: u64,
    },
    Connect {
        token: tickpack_wire::Token,
        next_try_us: u64,
    },
    Connected,
    /// The server said goodbye or refused; the text says why.
    Ended(String),
}

/// Static settings shared by the players of a run.
#[derive(Debug, Clone)]
pub struct PlayerSettings {
    /// Command interval; `None` until the server told its tick rate.
    pub cmd_rate_hz: Option<f64>,
    pub cmd_size: SizeDist,
    pub ping_hz: f64,
    pub ping_size: usize,
    pub connect_deadline_us: u64,
}

/// One emulated player.
pub struct Player {
    pub index: usize,
    pub target: SocketAddr,
    settings: PlayerSettings,
    state: State,
    nonce: u64,
    rng: SmallRng,
    cmd_interval_us: u64,
    tick_interval_us: u64,
    next_cmd_us: u64,
    next_ping_us: u64,
    ping_interval_us: u64,
    seq: u32,
    /// Commands sent and not yet reflected: (seq, due time).
    outstanding: VecDeque<(u32, u64)>,
    history: VecDeque<(u32, Vec<EntityState>)>,
    ack_tick: Option<u32>,
    /// (first tick, last tick, received) inside the measurement window.
    window_ticks: Option<(u32, u32, u64)>,
    last_snapshot_us: Option<u64>,
    input: Input,
    payload: Vec<u8>,
    scratch: Vec<EntityState>,
    pub tick_hz: u32,
}

impl Player {
    pub fn new(
        index: usize,
        target: SocketAddr,
        settings: PlayerSettings,
        seed: u64,
        start_us: u64,
    ) -> Self {
        let mut rng =
            SmallRng::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let nonce = rng.gen();
        // Spread the players' first hello over 50 ms so they do not all
        // arrive in the same instant.
        let first = start_us + rng.gen_range(0..50_000);
        Self {
            index,
            target,
            settings,
            state: State::Hello { next_try_us: first },
            nonce,
            rng,
            cmd_interval_us: 10_000,
            tick_interval_us: 10_000,
            next_cmd_us: u64::MAX,
            next_ping_us: u64::MAX,
            ping_interval_us: u64::MAX,
            seq: 0,
            outstanding: VecDeque::new(),
            history: VecDeque::with_capacity(HISTORY),
            ack_tick: None,
            window_ticks: None,
            last_snapshot_us: None,
            input: Input::default(),
            payload: vec![0u8; 1400],
            scratch: Vec::new(),
            tick_hz: 0,
        }
    }

    pub fn is_connected(&self) -> bool {
        self.state == State::Connected
    }

    /// Why this player stopped, if it did.
    pub fn ended(&self) -> Option<&str> {
        match &self.state {
            State::Ended(why) => Some(why),
            _ => None,
        }
    }

    /// Marks the player as ended with `why` (e.g. the socket saw an error).
    pub fn fail(&mut self, why: String) {
        if !matches!(self.state, State::Ended(_)) {
            self.state = State::Ended(why);
        }
    }

    /// When this player next wants [`Self::poll_transmit`] called.
    pub fn next_deadline(&self) -> u64 {
        match self.state {
            State::Hello { next_try_us } | State::Connect { next_try_us, .. } => {
                next_try_us.min(self.settings.connect_deadline_us)
            }
            State::Connected => self.next_cmd_us.min(self.next_ping_us),
            State::Ended(_) => u64::MAX,
        }
    }

    /// Writes the next due datagram into `out` (cleared first) and returns
    /// `true`, or returns `false` when nothing is due at `now_us`.
    pub fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        out.clear();
        match self.state {
            State::Hello { next_try_us } | State::Connect { next_try_us, .. }
                if now_us >= self.settings.connect_deadline_us =>
            {
                let _ = next_try_us;
                self.state = State::Ended(format!(
                    "no answer from {} to the handshake (is a tickpack server listening there?)",
                    self.target
                ));
                false
            }
            State::Hello { next_try_us } if now_us >= next_try_us => {
                Packet::Hello {
                    version: PROTOCOL_VERSION,
                    nonce: self.nonce,
                }
                .encode(out);
                self.state = State::Hello {
                    next_try_us: now_us + HANDSHAKE_RETRY_US,
                };
                true
            }
            State::Connect { token, next_try_us } if now_us >= next_try_us => {
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
                    next_try_us: now_us + HANDSHAKE_RETRY_US,
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
                let due = self.next_cmd_us;
                self.next_cmd_us += self.cmd_interval_us;
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
                self.outstanding.push_back((self.seq, due));
                if rec.in_window(due) {
                    rec.commands_sent += 1;
                }
                true
            }
            _ => false,
        }
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

    /// Processes one datagram from the server.
    pub fn handle(&mut self, now_us: u64, data: &[u8], rec: &mut Recorder) {
        let Ok(p) = Packet::decode(data) else {
            rec.decode_errors += 1;
            return;
        };
        match (p, &self.state) {
            (Packet::Challenge { nonce, token }, State::Hello { .. }) if nonce == self.nonce => {
                self.state = State::Connect {
                    token,
                    next_try_us: now_us,
                };
            }
            (Packet::Accepted { tick_hz, .. }, State::Connect { .. }) => {
                self.tick_hz = u32::from(tick_hz.max(1));
                self.tick_interval_us = 1_000_000 / u64::from(self.tick_hz);
                let rate = self.settings.cmd_rate_hz.unwrap_or(f64::from(self.tick_hz));
                self.cmd_interval_us = ((1e6 / rate) as u64).max(1);
                if self.settings.ping_hz > 0.0 {
                    self.ping_interval_us = ((1e6 / self.settings.ping_hz) as u64).max(1);
                    self.next_ping_us = on_grid(
                        now_us + self.rng.gen_range(0..self.ping_interval_us),
                        self.cmd_interval_us,
                    );
                }
                // A random phase against the server's tick, as real players
                // have, drawn from SLOTS slots of a grid shared by all players
                // (absolute monotonic time): the load generator then wakes at
                // most SLOTS times per interval however many players it
                // drives. Latency is measured from these due times.
                let slot = self.rng.gen_range(0..SLOTS);
                let start = (now_us / self.cmd_interval_us + 1) * self.cmd_interval_us;
                self.next_cmd_us = start + slot * (self.cmd_interval_us / SLOTS);
                self.state = State::Connected;
            }
            (Packet::Refused { reason }, State::Hello { .. } | State::Connect { .. }) => {
                self.state =
                    State::Ended(format!("{} refused the connection: {reason}", self.target));
                if reason == RefuseReason::BadToken {
                    // A stale token: start over rather than give up.
                    self.state = State::Hello {
                        next_try_us: now_us,
                    };
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
            (Packet::Disconnect { reason }, _) => {
                self.state = State::Ended(format!(
                    "{} disconnected the player: {reason:?}",
                    self.target
                ));
            }
            _ => {}
        }
    }

    fn on_snapshot(&mut self, now_us: u64, s: &Snapshot<'_>, rec: &mut Recorder) {
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

        rec.server_tick(self.target, s.tick, s.frame_us, s.lateness_us);
        if rec.in_window(now_us) {
            self.window_ticks = Some(match self.window_ticks {
                None => (s.tick, s.tick, 1),
                Some((first, _, n)) => (first, s.tick, n + 1),
            });
            if let Some(prev) = self.last_snapshot_us {
                let gap = now_us - prev;
                record(&mut rec.jitter, gap.abs_diff(self.tick_interval_us));
            }
        }
        self.last_snapshot_us = Some(now_us);

        if let Some(applied) = s.last_cmd_seq {
            while let Some(&(seq, due)) = self.outstanding.front() {
                if seq.wrapping_sub(applied) as i32 > 0 {
                    break;
                }
                self.outstanding.pop_front();
                if rec.in_window(due) {
                    record(&mut rec.transaction, now_us.saturating_sub(due));
                    rec.commands_reflected += 1;
                }
            }
        }
    }

    /// Settles the counters at the end of the run (`now_us`), and writes the
    /// goodbye datagram into `out` if connected.
    pub fn finish(&mut self, now_us: u64, out: &mut Vec<u8>, rec: &mut Recorder) -> bool {
        if let Some((first, last, n)) = self.window_ticks.take() {
            rec.snapshots_expected += u64::from(last - first) + 1;
            rec.snapshots_received += n;
        }
        rec.commands_lost += self
            .outstanding
            .iter()
            .filter(|&&(_, due)| rec.in_window(due) && due + LOST_AFTER_US <= now_us)
            .count() as u64;
        self.outstanding.clear();
        out.clear();
        if self.state == State::Connected {
            Packet::Disconnect {
                reason: tickpack_wire::DisconnectReason::ClientLeaving,
            }
            .encode(out);
            self.state = State::Ended("finished".into());
            return true;
        }
        false
    }
}
