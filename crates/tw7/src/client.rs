//! A tw7 (0.7 protocol) player session as a sans-I/O state machine: datagrams
//! and `now` in, [`Event`]s and datagrams out; no socket, no clock, no
//! thread.
//!
//! ```text
//! Client::new(cfg, now)               state Connecting
//!   poll_transmit -> token request, then connect (resent every 0.5 s)
//! handle(ACCEPT)                      Event::Connected, INFO queued, state Loading
//! handle(MAP_CHANGE)                  Event::MapChange, READY queued (we claim the
//!                                     map: the server only sends it on request)
//! handle(CON_READY)                   CL_STARTINFO queued, state StartInfo
//! handle(SV_READYTOENTER)             ENTERGAME queued, state Entering
//! handle(first valid snapshot)        Event::InGame, state InGame
//! handle(snapshot)                    Event::Snapshot (every valid one)
//! input(now, PlayerInput) -> id       the input to send from now on
//! poll_transmit(now, buf)             INPUT every 20 ms while InGame (the
//!                                     server's 50 Hz), plus whatever is queued
//! handle(snapshot echoing an input)   Event::InputReflected
//! handle_timeout(now)                 resends, keep-alive, timeouts
//! disconnect(reason) / server close   Event::Disconnected
//! ```
//!
//! Drive it like quinn-proto: after every `handle` and `handle_timeout`,
//! call `poll_event` until `None` and `poll_transmit` until `false`, and
//! wake up again at `poll_timeout`.
//!
//! ## When a snapshot reflects an input
//!
//! The server runs an input at its intended tick (or, if it came late, at
//! the first tick after it arrived: server.cpp `NETMSG_INPUT`), and the
//! local player's Character item in every later snapshot carries the
//! input's `direction` verbatim (character.cpp `Snap`) and the aim angle
//! `(int)(atan2f(target_y, target_x) * 256)`: a changed aim differs from
//! the dead-reckoned core, so the server resends the core in the very
//! snapshot of that tick (`TickDefered`). We call input *k* reflected by
//! the first snapshot, of tick T, such that T >= *k*'s intended tick and
//! the local Character's direction and angle equal *k*'s (see
//! [`PlayerInput::expected_angle`]). Pending inputs are searched newest
//! first; older pending inputs are then dropped as superseded (a snapshot
//! only every second tick cannot show every input). Consecutive inputs
//! with the same direction and aim cannot be told apart: a measuring
//! player varies its aim (e.g. turns one step per input). INPUTTIMING
//! (intended tick, ms left) is passed on as [`Event::InputTiming`]: it is
//! non-vital and may be lost, and it says when the input arrived, not that
//! the game ran it, so it is not the rule.
//!
//! Intended tick: the newest snapshot's tick plus the 20 ms ticks elapsed
//! since it arrived plus `cfg.input_lead_ticks` (default 1), and always
//! above the previous one's: the earliest tick the server can still run
//! it at; a late one runs at the next tick anyway.
//!
//! What it does not do: download or parse the map, predict, interpolate,
//! chat, vote, or decode items other than the local Character. A
//! malformed datagram is an `Err` from `handle` and changes nothing else;
//! the session goes on.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::conn::{ConnState, Connection, Incoming};
use crate::msg::{
    write_enter_game, write_info, write_input, write_ping_reply, write_ready, write_start_info,
    PlayerInput, ServerMsg, StartInfo,
};
use crate::packet::{Chunks, MAX_PACKET_SIZE};
use crate::snapshot::{obj, Character, SnapshotDecoder};
use crate::Tw7Error;

/// The server's tick.
pub const TICK: Duration = Duration::from_millis(20);
/// Sent inputs remembered for [`Event::InputReflected`] (2.5 s at 50 Hz).
pub const MAX_PENDING_INPUTS: usize = 128;
/// Checksum failures in a row before asking for a full snapshot (the
/// engine's client does the same after 10).
pub const MAX_CRC_ERRORS: u32 = 10;

/// How the player presents itself.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Name, clan, country, skin (CL_STARTINFO).
    pub start_info: StartInfo,
    /// The server password ("" for none).
    pub password: String,
    /// Our connection token; the server echoes it in every packet. Pick
    /// it at random per session (it is what keeps other hosts' packets out).
    pub token: u32,
    /// Ticks ahead of the estimated server tick an input is meant for.
    pub input_lead_ticks: i32,
}

impl ClientConfig {
    /// A player called `name` with the 0.7.5 client's default skin,
    /// no password, lead 1 tick.
    pub fn new(name: &str, token: u32) -> ClientConfig {
        ClientConfig {
            start_info: StartInfo::new(name),
            password: String::new(),
            token,
            input_lead_ticks: 1,
        }
    }
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClientState {
    /// Token request / connect, waiting for accept.
    Connecting,
    /// INFO sent, waiting for MAP_CHANGE.
    Loading,
    /// READY sent, waiting for CON_READY.
    Ready,
    /// CL_STARTINFO sent, waiting for SV_READYTOENTER.
    StartInfo,
    /// ENTERGAME sent, waiting for a snapshot.
    Entering,
    /// Snapshots arriving; inputs going out.
    InGame,
    /// Closed (see [`Event::Disconnected`]).
    Disconnected,
}

/// What one valid snapshot said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// Its game tick.
    pub tick: i32,
    /// The tick it was a delta against (-1: from nothing).
    pub delta_tick: i32,
    /// Items in it.
    pub items: usize,
    /// Its checksum (verified, except for SNAPEMPTY which carries none).
    pub crc: i32,
    /// The local player's character, if it is alive and we know our id.
    pub character: Option<Character>,
}

/// Something that happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The server accepted the connection.
    Connected,
    /// The server named its map (we claim to have it).
    MapChange {
        /// Map name.
        name: String,
        /// Map crc.
        crc: i32,
    },
    /// The first valid snapshot after ENTERGAME.
    InGame {
        /// Our client id, if SV_CLIENTINFO said it.
        client_id: Option<i32>,
    },
    /// A valid snapshot.
    Snapshot(SnapshotInfo),
    /// INPUTTIMING: when an input arrived relative to its intended tick.
    InputTiming {
        /// The intended tick of the input.
        intended_tick: i32,
        /// Ms before that tick started (negative: late).
        time_left_ms: i32,
    },
    /// The first snapshot reflecting an input (see the module docs).
    InputReflected {
        /// The id `input` returned.
        input_id: u64,
        /// When `input` was called.
        queued_at: Instant,
        /// When it was first sent.
        sent_at: Instant,
        /// Its intended tick.
        intended_tick: i32,
        /// The snapshot's tick.
        snapshot_tick: i32,
    },
    /// The session ended.
    Disconnected {
        /// The server's or our reason.
        reason: String,
    },
}

#[derive(Debug, Clone, Copy)]
struct SentInput {
    id: u64,
    direction: i32,
    angle: i32,
    intended_tick: i32,
    queued_at: Instant,
    sent_at: Instant,
}

/// A player session (one per emulated player).
pub struct Client {
    cfg: ClientConfig,
    state: ClientState,
    conn: Connection,
    events: VecDeque<Event>,
    snaps: SnapshotDecoder,
    client_id: Option<i32>,
    /// Tick we acknowledge in INPUT (-1: send a full snapshot).
    ack_tick: i32,
    /// Newest snapshot tick and when it arrived.
    last_snap: Option<(i32, Instant)>,
    /// The input to send, its id and when it was queued.
    input: PlayerInput,
    input_id: u64,
    input_queued_at: Option<Instant>,
    /// The id of the input last sent.
    sent_id: u64,
    last_intended: i32,
    next_input_at: Option<Instant>,
    pending: VecDeque<SentInput>,
    superseded: u64,
    inputs_sent: u64,
    reported_close: bool,
    /// Reused buffers.
    payload: Vec<u8>,
    msg: Vec<u8>,
    send: [u8; MAX_PACKET_SIZE],
}

impl Client {
    /// A session that starts by asking for the server's token.
    pub fn new(cfg: ClientConfig, now: Instant) -> Client {
        Client {
            conn: Connection::new(cfg.token, now),
            cfg,
            state: ClientState::Connecting,
            events: VecDeque::with_capacity(16),
            snaps: SnapshotDecoder::new(),
            client_id: None,
            ack_tick: -1,
            last_snap: None,
            input: PlayerInput::default(),
            input_id: 0,
            input_queued_at: None,
            sent_id: 0,
            last_intended: i32::MIN,
            next_input_at: None,
            pending: VecDeque::with_capacity(MAX_PENDING_INPUTS),
            superseded: 0,
            inputs_sent: 0,
            reported_close: false,
            payload: Vec::with_capacity(MAX_PACKET_SIZE),
            msg: Vec::with_capacity(128),
            send: [0; MAX_PACKET_SIZE],
        }
    }

    /// The session's state.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// The config it was made with.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// Our client id (from SV_CLIENTINFO), once known.
    pub fn client_id(&self) -> Option<i32> {
        self.client_id
    }

    /// The connection (tokens, acks, unacknowledged chunks).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The snapshots (history, checksum failures).
    pub fn snapshots(&self) -> &SnapshotDecoder {
        &self.snaps
    }

    /// INPUT messages sent so far.
    pub fn inputs_sent(&self) -> u64 {
        self.inputs_sent
    }

    /// Inputs dropped from the pending list without being seen in a
    /// snapshot (superseded by a newer reflected one, or too old).
    pub fn inputs_superseded(&self) -> u64 {
        self.superseded
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Make `input` the one sent from the next 50 Hz send on; returns its
    /// id for [`Event::InputReflected`].
    pub fn input(&mut self, now: Instant, input: PlayerInput) -> u64 {
        self.input = input;
        self.input_id += 1;
        self.input_queued_at = Some(now);
        self.input_id
    }

    /// Close the session from our side.
    pub fn disconnect(&mut self, reason: &str) {
        self.conn.close(reason);
        self.check_closed();
    }

    fn check_closed(&mut self) {
        if self.conn.state() == ConnState::Closed && !self.reported_close {
            self.reported_close = true;
            self.state = ClientState::Disconnected;
            self.events.push_back(Event::Disconnected {
                reason: self.conn.close_reason().to_string(),
            });
        }
    }

    fn queue(&mut self, now: Instant, vital: bool) -> Result<(), Tw7Error> {
        let r = self.conn.queue_chunk(now, vital, &self.msg);
        self.msg.clear();
        r
    }

    /// Process one datagram from the server. A malformed one is an `Err`;
    /// the other chunks of a datagram are still processed, and the first
    /// error is returned.
    pub fn handle(&mut self, now: Instant, datagram: &[u8]) -> Result<(), Tw7Error> {
        let mut payload = std::mem::take(&mut self.payload);
        let r = self.handle_inner(now, datagram, &mut payload);
        self.payload = payload;
        self.check_closed();
        r
    }

    fn handle_inner(
        &mut self,
        now: Instant,
        datagram: &[u8],
        payload: &mut Vec<u8>,
    ) -> Result<(), Tw7Error> {
        match self.conn.handle(now, datagram, payload)? {
            Incoming::Nothing | Incoming::Closed => Ok(()),
            Incoming::Accepted => {
                self.events.push_back(Event::Connected);
                self.state = ClientState::Loading;
                write_info(&mut self.msg, &self.cfg.password);
                self.queue(now, true)
            }
            Incoming::Chunks { num_chunks } => {
                let mut first_err = None;
                for c in Chunks::new(payload, num_chunks) {
                    let r = c.and_then(|(h, data)| {
                        if h.vital() && !self.conn.accept_vital(h.sequence) {
                            return Ok(());
                        }
                        self.handle_msg(now, h.vital(), data)
                    });
                    if let Err(e) = r {
                        first_err.get_or_insert(e);
                    }
                }
                first_err.map_or(Ok(()), Err)
            }
        }
    }

    fn handle_msg(&mut self, now: Instant, vital: bool, data: &[u8]) -> Result<(), Tw7Error> {
        match ServerMsg::decode(data)? {
            ServerMsg::MapChange { name, crc, .. } if vital => {
                self.events.push_back(Event::MapChange {
                    name: String::from_utf8_lossy(name).into_owned(),
                    crc,
                });
                if self.state <= ClientState::Ready {
                    self.state = ClientState::Ready;
                    write_ready(&mut self.msg);
                    self.queue(now, true)?;
                }
            }
            ServerMsg::ConReady if vital => {
                self.state = self.state.max(ClientState::StartInfo);
                write_start_info(&mut self.msg, &self.cfg.start_info);
                self.queue(now, true)?;
            }
            ServerMsg::ReadyToEnter if vital && self.state < ClientState::Entering => {
                self.state = ClientState::Entering;
                write_enter_game(&mut self.msg);
                self.queue(now, true)?;
            }
            ServerMsg::ClientInfo {
                client_id,
                local: true,
                ..
            } if vital => self.client_id = Some(client_id),
            ServerMsg::Ping => {
                write_ping_reply(&mut self.msg);
                self.queue(now, false)?;
            }
            ServerMsg::InputTiming {
                intended_tick,
                time_left,
            } => self.events.push_back(Event::InputTiming {
                intended_tick,
                time_left_ms: time_left,
            }),
            ServerMsg::Snap(part) => match self.snaps.add_part(&part) {
                Ok(Some(tick)) => self.on_snapshot(now, tick, part.delta_tick),
                Ok(None) => {}
                Err(e) => {
                    if matches!(e, Tw7Error::MissingBaseline(_))
                        || self.snaps.crc_errors() > MAX_CRC_ERRORS
                    {
                        // Ask for a snapshot from nothing, as the engine does.
                        self.ack_tick = -1;
                    }
                    return Err(e);
                }
            },
            _ => {}
        }
        Ok(())
    }

    fn on_snapshot(&mut self, now: Instant, tick: i32, delta_tick: i32) {
        self.ack_tick = tick;
        self.last_snap = Some((tick, now));
        let Some(s) = self.snaps.latest() else {
            return;
        };
        let character = self
            .client_id
            .and_then(|id| u16::try_from(id).ok())
            .and_then(|id| s.item(obj::CHARACTER, id))
            .and_then(Character::from_ints);
        let info = SnapshotInfo {
            tick,
            delta_tick,
            items: s.len(),
            crc: s.crc(),
            character,
        };
        if self.state == ClientState::Entering {
            self.state = ClientState::InGame;
            self.next_input_at = Some(now);
            self.events.push_back(Event::InGame {
                client_id: self.client_id,
            });
        }
        self.events.push_back(Event::Snapshot(info));
        if let Some(ch) = character {
            self.match_inputs(tick, &ch);
        }
    }

    fn match_inputs(&mut self, tick: i32, ch: &Character) {
        let hit = self.pending.iter().rposition(|p| {
            p.intended_tick <= tick && p.direction == ch.direction && p.angle == ch.angle
        });
        if let Some(i) = hit {
            let p = self.pending[i];
            self.superseded += i as u64;
            self.pending.drain(..=i);
            self.events.push_back(Event::InputReflected {
                input_id: p.id,
                queued_at: p.queued_at,
                sent_at: p.sent_at,
                intended_tick: p.intended_tick,
                snapshot_tick: tick,
            });
        }
    }

    /// Timers: the connection's resends, keep-alives and timeouts.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
        self.check_closed();
    }

    /// When to call `handle_timeout` / `poll_transmit` next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let c = self.conn.poll_timeout();
        match (c, self.next_input_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn queue_input(&mut self, now: Instant) {
        let Some((snap_tick, at)) = self.last_snap else {
            return;
        };
        let elapsed = (now.saturating_duration_since(at).as_millis() / TICK.as_millis()) as i32;
        let est = snap_tick
            .saturating_add(elapsed)
            .saturating_add(self.cfg.input_lead_ticks);
        let intended = if self.last_intended == i32::MIN {
            est
        } else {
            est.max(self.last_intended.saturating_add(1))
        };
        self.last_intended = intended;
        let ping_correction = now.saturating_duration_since(at).as_millis().min(1000) as i32;
        write_input(
            &mut self.msg,
            self.ack_tick,
            intended,
            &self.input,
            ping_correction,
        );
        if self.queue(now, false).is_err() {
            return;
        }
        self.inputs_sent += 1;
        if self.input_id != 0 && self.sent_id != self.input_id {
            self.sent_id = self.input_id;
            if self.pending.len() == MAX_PENDING_INPUTS {
                self.pending.pop_front();
                self.superseded += 1;
            }
            self.pending.push_back(SentInput {
                id: self.input_id,
                direction: self.input.direction,
                angle: self.input.expected_angle(),
                intended_tick: intended,
                queued_at: self.input_queued_at.unwrap_or(now),
                sent_at: now,
            });
        }
    }

    /// Write the next datagram to send into `buf` (cleared first); false
    /// if there is nothing to send now. While InGame an INPUT is queued
    /// every 20 ms.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        buf.clear();
        if self.state == ClientState::InGame && self.conn.state() == ConnState::Online {
            if let Some(due) = self.next_input_at {
                if now >= due {
                    self.queue_input(now);
                    // Keep the 50 Hz grid; after a stall, restart from now.
                    let next = due + TICK;
                    self.next_input_at = Some(if next <= now { now + TICK } else { next });
                }
            }
        }
        let n = self.conn.poll_transmit(now, &mut self.send);
        self.check_closed();
        match n {
            Some(n) => {
                buf.extend_from_slice(&self.send[..n]);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests;
