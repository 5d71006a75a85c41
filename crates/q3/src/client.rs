//! A Quake III client session as a sans-I/O state machine: datagrams in,
//! [`Event`]s and datagrams out; no sockets, no clock.
//!
//! ```text
//! Client::new(cfg)                       state Challenging
//!   handshake_packet() -> getchallenge   (resend it until the answer)
//!   handle(challengeResponse)            Event::Challenged, state Connecting
//!   handshake_packet() -> connect        (Huffman-compressed userinfo)
//!   handle(connectResponse)              Event::Connected, state AwaitingGamestate
//!   usercmd_packet(&[]) -> netchan       (the first one makes the server send the gamestate)
//!   handle(gamestate, maybe fragmented)  Event::Gamestate, state Primed
//!   usercmd_packet(&cmds)                (the first move puts the player in the world)
//!   handle(snapshot)                     Event::Snapshot, state Active on the first valid one
//! ```
//!
//! `handle` also surfaces `print` (a refused connect says why there) as
//! [`Event::Print`], server commands as [`Event::ServerCommand`], and a
//! `disconnect` (connectionless, or the server command) as
//! [`Event::Disconnected`]. [`Client::queue_command`] queues a reliable
//! client command (e.g. `disconnect`), sent with every usercmd packet
//! until the server acknowledges it. [`Client::reset`] goes back to
//! Challenging for a new handshake. Read-only views: `state`,
//! `server_challenge`, `server_id`, `client_num`, `last_snapshot`,
//! `netchan` (sequences, drops), `userinfo`, `config`.
//!
//! The facts: cl_main.c (`CL_CheckForResend`, `CL_ConnectionlessPacket`),
//! cl_parse.c (`CL_ParseServerMessage`, `CL_ParseGamestate`,
//! `CL_ParseSnapshot`, `CL_ParsePacketEntities`), cl_input.c
//! (`CL_WritePacket`), sv_client.c (`SV_DirectConnect`,
//! `SV_ExecuteClientMessage`). The usercmd key is `checksumFeed ^
//! serverMessageSequence ^ MSG_HashKey(last server command, 32)`. The
//! server must run with `sv_pure 0`: this client sends no pure checksums.
//!
//! `playerState_t.ping` is not sent to clients (it is not in the delta
//! table), so [`SnapshotInfo`] has no ping; a caller measures round trips
//! itself (e.g. `command_time` against the times it sent).

use crate::delta::{self, EntityState, PlayerState, GENTITYNUM_BITS, MAX_GENTITIES};
use crate::huffman;
use crate::msg::{Reader, Writer, MAX_MSGLEN};
use crate::netchan::{self, Netchan};
use crate::oob;
use crate::Q3Error;

pub use crate::delta::UserCmd;
pub use crate::session::{ClientConfig, ClientState, Event, SnapshotInfo};

/// Snapshots kept for delta decoding (`PACKET_BACKUP`).
pub const PACKET_BACKUP: usize = 32;
/// Reliable commands kept each way (`MAX_RELIABLE_COMMANDS`).
pub const MAX_RELIABLE_COMMANDS: usize = 64;
/// Usercmds one packet can carry (`MAX_PACKET_USERCMDS`).
pub const MAX_PACKET_USERCMDS: usize = 32;
/// `MAX_CONFIGSTRINGS`.
pub const MAX_CONFIGSTRINGS: i32 = 1024;
/// `MAX_MAP_AREA_BYTES`: the largest area mask.
pub const MAX_MAP_AREA_BYTES: usize = 32;

const SVC_NOP: u8 = 1;
const SVC_GAMESTATE: u8 = 2;
const SVC_CONFIGSTRING: u8 = 3;
const SVC_BASELINE: u8 = 4;
const SVC_SERVER_COMMAND: u8 = 5;
const SVC_SNAPSHOT: u8 = 7;
const SVC_EOF: u8 = 8;
const CLC_MOVE: u8 = 2;
const CLC_MOVE_NO_DELTA: u8 = 3;
const CLC_CLIENT_COMMAND: u8 = 4;
const CLC_EOF: u8 = 5;

#[derive(Clone)]
struct Snapshot {
    valid: bool,
    message_num: i32,
    server_time: i32,
    ps: PlayerState,
    entities: Vec<EntityState>,
}

/// A client session (cloneable: a copy continues independently).
#[derive(Clone)]
pub struct Client {
    cfg: ClientConfig,
    state: ClientState,
    server_challenge: i32,
    netchan: Option<Netchan>,
    server_message_sequence: i32,
    server_command_sequence: i32,
    server_commands: Vec<String>,
    reliable_sequence: i32,
    reliable_acknowledge: i32,
    reliable_commands: Vec<String>,
    server_id: i32,
    client_num: i32,
    checksum_feed: i32,
    baselines: Vec<EntityState>,
    snapshots: Vec<Option<Snapshot>>,
    /// message_num of the last valid snapshot, if any.
    last_snap: Option<i32>,
    /// The last server message's body, kept for its allocation.
    scratch: Vec<u8>,
    /// The last client message's body, kept for its allocation.
    send_scratch: Vec<u8>,
}

/// The value of `key` in an info string (`\k\v\k\v`), or "".
pub fn info_value<'a>(info: &'a str, key: &str) -> &'a str {
    let mut parts = info.strip_prefix('\\').unwrap_or(info).split('\\');
    while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
        if k.eq_ignore_ascii_case(key) {
            return v;
        }
    }
    ""
}

/// C's `atoi`: a leading optionally-signed decimal, 0 if none.
fn atoi(s: &str) -> i32 {
    let s = s.trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i32 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        v = v.wrapping_mul(10).wrapping_add(i32::from(b - b'0'));
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

fn clean_info(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '\\' | '"' | ';') && !c.is_control())
        .collect()
}

/// The reason in `disconnect "reason"` (or after a bare `disconnect`).
fn disconnect_reason(rest: &str) -> String {
    rest.trim().trim_matches('"').to_string()
}

impl Client {
    /// A session ready to send `getchallenge`.
    pub fn new(cfg: ClientConfig) -> Client {
        Client {
            cfg,
            state: ClientState::Challenging,
            server_challenge: 0,
            netchan: None,
            server_message_sequence: 0,
            server_command_sequence: 0,
            server_commands: vec![String::new(); MAX_RELIABLE_COMMANDS],
            reliable_sequence: 0,
            reliable_acknowledge: 0,
            reliable_commands: vec![String::new(); MAX_RELIABLE_COMMANDS],
            server_id: 0,
            client_num: -1,
            checksum_feed: 0,
            baselines: Vec::new(),
            snapshots: (0..PACKET_BACKUP).map(|_| None).collect(),
            last_snap: None,
            scratch: Vec::new(),
            send_scratch: Vec::new(),
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

    /// The server's challenge (0 before `challengeResponse`).
    pub fn server_challenge(&self) -> i32 {
        self.server_challenge
    }

    /// The serverId usercmd packets carry (from the systeminfo
    /// configstring; 0 before the gamestate).
    pub fn server_id(&self) -> i32 {
        self.server_id
    }

    /// Our client slot from the gamestate (-1 before it).
    pub fn client_num(&self) -> i32 {
        self.client_num
    }

    /// The last valid snapshot's message number, server time and player
    /// state, if any: a caller derives its usercmds' server times from it.
    pub fn last_snapshot(&self) -> Option<(i32, i32, &PlayerState)> {
        let n = self.last_snap?;
        let s = self.snapshots[n as usize & (PACKET_BACKUP - 1)].as_ref()?;
        Some((s.message_num, s.server_time, &s.ps))
    }

    /// The open channel, if any (sequences and drop counts).
    pub fn netchan(&self) -> Option<&Netchan> {
        self.netchan.as_ref()
    }

    /// Back to Challenging for a new handshake, keeping the config.
    pub fn reset(&mut self) {
        let cfg = self.cfg.clone();
        *self = Client::new(cfg);
    }

    /// The userinfo string `connect` carries.
    pub fn userinfo(&self) -> String {
        let mut s = format!("\\name\\{}", clean_info(&self.cfg.name));
        for (k, v) in &self.cfg.userinfo {
            if ["name", "protocol", "qport", "challenge"]
                .iter()
                .any(|r| k.eq_ignore_ascii_case(r))
            {
                continue;
            }
            s.push_str(&format!("\\{}\\{}", clean_info(k), clean_info(v)));
        }
        s.push_str(&format!(
            "\\protocol\\{}\\qport\\{}\\challenge\\{}",
            self.cfg.protocol, self.cfg.qport, self.server_challenge
        ));
        s
    }

    /// The handshake datagram to (re)send in this state: `getchallenge`
    /// while Challenging, `connect` while Connecting, `None` once the
    /// channel is open.
    pub fn handshake_packet(&mut self) -> Option<Vec<u8>> {
        match self.state {
            ClientState::Challenging => Some(oob::encode(&format!(
                "getchallenge {} {}",
                self.cfg.client_challenge, self.cfg.gamename
            ))),
            ClientState::Connecting => {
                let plain = oob::encode(&format!("connect \"{}\"", self.userinfo()));
                Some(huffman::compress(&plain, 12))
            }
            _ => None,
        }
    }

    /// Queue a reliable client command (e.g. `disconnect`); it rides every
    /// usercmd packet until the server acknowledges it. The oldest
    /// unacknowledged one is overwritten past 64.
    pub fn queue_command(&mut self, text: &str) {
        self.reliable_sequence = self.reliable_sequence.wrapping_add(1);
        let i = self.reliable_sequence as usize & (MAX_RELIABLE_COMMANDS - 1);
        self.reliable_commands[i] = text.to_string();
        if self.reliable_sequence - self.reliable_acknowledge > MAX_RELIABLE_COMMANDS as i32 {
            self.reliable_acknowledge = self.reliable_sequence - MAX_RELIABLE_COMMANDS as i32;
        }
    }

    /// The netchan datagram carrying serverId, the acknowledgements, the
    /// unacknowledged reliable commands and (once Primed) `cmds` (the last
    /// [`MAX_PACKET_USERCMDS`] of them) as keyed deltas: `clc_move` if the
    /// last snapshot was the last message received and valid, else
    /// `clc_moveNoDelta`. `None` before the channel is open.
    /// [`Client::usercmd_packet_into`] writes it into a reused buffer.
    pub fn usercmd_packet(&mut self, cmds: &[UserCmd]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.usercmd_packet_into(cmds, &mut out).then_some(out)
    }

    /// [`Client::usercmd_packet`] into `out` (cleared first; its allocation
    /// is kept): false, and `out` empty, before the channel is open. With
    /// one `out` reused, a packet allocates nothing once the buffers have
    /// grown to size.
    pub fn usercmd_packet_into(&mut self, cmds: &[UserCmd], out: &mut Vec<u8>) -> bool {
        out.clear();
        if self.netchan.is_none() {
            return false;
        }
        let mut w = Writer::reuse(std::mem::take(&mut self.send_scratch));
        w.write_long(self.server_id);
        w.write_long(self.server_message_sequence);
        w.write_long(self.server_command_sequence);
        let mut i = self.reliable_acknowledge.wrapping_add(1);
        while i <= self.reliable_sequence {
            w.write_byte(CLC_CLIENT_COMMAND);
            w.write_long(i);
            w.write_string(&self.reliable_commands[i as usize & (MAX_RELIABLE_COMMANDS - 1)]);
            i += 1;
        }
        let last_command = self.server_commands
            [self.server_command_sequence as usize & (MAX_RELIABLE_COMMANDS - 1)]
            .as_bytes();
        let cmds = &cmds[cmds.len().saturating_sub(MAX_PACKET_USERCMDS)..];
        if self.state >= ClientState::Primed && !cmds.is_empty() {
            let delta = self.last_snap == Some(self.server_message_sequence);
            w.write_byte(if delta { CLC_MOVE } else { CLC_MOVE_NO_DELTA });
            w.write_byte(cmds.len() as u8);
            let key = self.checksum_feed
                ^ self.server_message_sequence
                ^ delta::hash_key(last_command, 32);
            let mut from = UserCmd::default();
            for c in cmds {
                delta::write_delta_usercmd(&mut w, key, &from, c);
                from = *c;
            }
        }
        w.write_byte(CLC_EOF);
        let mut body = w.into_bytes();
        if self.cfg.legacy {
            netchan::legacy_encode(
                &mut body,
                self.server_challenge,
                self.server_id,
                self.server_message_sequence,
                last_command,
            );
        }
        let sent = self
            .netchan
            .as_mut()
            .is_some_and(|chan| chan.transmit_into(&body, out).is_ok());
        self.send_scratch = body;
        if !sent {
            out.clear();
        }
        sent
    }

    /// Take one datagram from the server, appending what it said to
    /// `events`. Datagrams the engine would ignore (wrong state, stale
    /// sequence, bad checksum) are `Ok` with no event; undecodable ones
    /// are an error (the session stays usable).
    pub fn handle(&mut self, datagram: &[u8], events: &mut Vec<Event>) -> Result<(), Q3Error> {
        if let Some(payload) = oob::payload(datagram) {
            self.handle_oob(payload, events);
            return Ok(());
        }
        if self.state < ClientState::AwaitingGamestate {
            return Ok(());
        }
        let mut body = std::mem::take(&mut self.scratch);
        let result = self.handle_netchan(datagram, &mut body, events);
        self.scratch = body;
        result
    }

    fn handle_oob(&mut self, payload: &[u8], events: &mut Vec<Event>) {
        let (cmd, rest) = oob::command(payload);
        let rest_text = String::from_utf8_lossy(rest);
        let mut args = rest_text.split_whitespace();
        match cmd.to_ascii_lowercase().as_str() {
            "challengeresponse" if self.state == ClientState::Challenging => {
                let server = args.next().map(atoi);
                let client = args.next().map(atoi);
                if let (Some(server), Some(client)) = (server, client) {
                    if client == self.cfg.client_challenge {
                        self.server_challenge = server;
                        self.state = ClientState::Connecting;
                        events.push(Event::Challenged);
                    }
                }
            }
            "connectresponse" if self.state == ClientState::Connecting => {
                if !self.cfg.legacy && args.next().map(atoi) != Some(self.server_challenge) {
                    return;
                }
                self.netchan = Some(Netchan::new(
                    self.cfg.qport,
                    self.server_challenge,
                    self.cfg.legacy,
                ));
                self.state = ClientState::AwaitingGamestate;
                events.push(Event::Connected);
            }
            "print" => events.push(Event::Print(rest_text.into_owned())),
            "disconnect" => events.push(Event::Disconnected {
                reason: disconnect_reason(&rest_text),
            }),
            _ => {}
        }
    }

    fn handle_netchan(
        &mut self,
        datagram: &[u8],
        body: &mut Vec<u8>,
        events: &mut Vec<Event>,
    ) -> Result<(), Q3Error> {
        let Some(chan) = self.netchan.as_mut() else {
            return Ok(());
        };
        let Some(sequence) = chan.process(datagram, body)? else {
            return Ok(());
        };
        self.server_message_sequence = sequence;
        let mut r = Reader::new(body);
        let ack = r.read_long()?;
        if self.cfg.legacy {
            let acked = &self.reliable_commands[ack as usize & (MAX_RELIABLE_COMMANDS - 1)];
            netchan::legacy_decode(body, self.server_challenge, sequence, acked.as_bytes());
        }
        let mut r = Reader::new(body);
        let ack = r.read_long()?;
        self.reliable_acknowledge = ack;
        if self.reliable_acknowledge < self.reliable_sequence - MAX_RELIABLE_COMMANDS as i32
            || self.reliable_acknowledge > self.reliable_sequence
        {
            self.reliable_acknowledge = self.reliable_sequence;
        }
        loop {
            match r.read_byte()? {
                SVC_EOF => return Ok(()),
                SVC_NOP => {}
                SVC_SERVER_COMMAND => self.parse_command(&mut r, events)?,
                SVC_GAMESTATE => self.parse_gamestate(&mut r, events)?,
                SVC_SNAPSHOT => self.parse_snapshot(&mut r, events)?,
                _ => return Err(Q3Error::Malformed("illegible server message")),
            }
        }
    }

    fn parse_command(&mut self, r: &mut Reader, events: &mut Vec<Event>) -> Result<(), Q3Error> {
        let seq = r.read_long()?;
        let text = r.read_string()?;
        if self.server_command_sequence >= seq {
            return Ok(());
        }
        self.server_command_sequence = seq;
        self.server_commands[seq as usize & (MAX_RELIABLE_COMMANDS - 1)] = text.clone();
        if let Some(rest) = text.strip_prefix("cs 1 ") {
            let info = rest.trim().trim_matches('"');
            self.server_id = atoi(info_value(info, "sv_serverid"));
        }
        if text == "disconnect" || text.starts_with("disconnect ") {
            events.push(Event::Disconnected {
                reason: disconnect_reason(&text["disconnect".len()..]),
            });
        }
        events.push(Event::ServerCommand {
            sequence: seq,
            text,
        });
        Ok(())
    }

    fn parse_gamestate(&mut self, r: &mut Reader, events: &mut Vec<Event>) -> Result<(), Q3Error> {
        self.server_command_sequence = r.read_long()?;
        self.baselines.clear();
        for s in self.snapshots.iter_mut() {
            *s = None;
        }
        self.last_snap = None;
        let (mut serverinfo, mut systeminfo) = (String::new(), String::new());
        let mut configstrings = 0usize;
        loop {
            match r.read_byte()? {
                SVC_EOF => break,
                SVC_CONFIGSTRING => {
                    let i = r.read_short()?;
                    if !(0..MAX_CONFIGSTRINGS).contains(&i) {
                        return Err(Q3Error::Malformed("configstring > MAX_CONFIGSTRINGS"));
                    }
                    let s = r.read_big_string()?;
                    configstrings += 1;
                    match i {
                        0 => serverinfo = s,
                        1 => systeminfo = s,
                        _ => {}
                    }
                }
                SVC_BASELINE => {
                    let n = r.read_bits(GENTITYNUM_BITS)? as i32;
                    // A removed baseline is all zeros (the engine keeps it).
                    let mut e = delta::read_delta_entity(r, &EntityState::default(), n)?
                        .unwrap_or_default();
                    e.number = n;
                    match self.baselines.binary_search_by_key(&n, |b| b.number) {
                        Ok(k) => self.baselines[k] = e,
                        Err(k) => self.baselines.insert(k, e),
                    }
                }
                _ => return Err(Q3Error::Malformed("bad command byte in gamestate")),
            }
        }
        self.client_num = r.read_long()?;
        self.checksum_feed = r.read_long()?;
        self.server_id = atoi(info_value(&systeminfo, "sv_serverid"));
        self.state = ClientState::Primed;
        events.push(Event::Gamestate {
            server_id: self.server_id,
            client_num: self.client_num,
            checksum_feed: self.checksum_feed,
            configstrings,
            mapname: info_value(&serverinfo, "mapname").to_string(),
        });
        Ok(())
    }

    fn baseline(&self, n: i32) -> EntityState {
        match self.baselines.binary_search_by_key(&n, |b| b.number) {
            Ok(k) => self.baselines[k],
            Err(_) => EntityState::default(),
        }
    }

    fn parse_snapshot(&mut self, r: &mut Reader, events: &mut Vec<Event>) -> Result<(), Q3Error> {
        let server_time = r.read_long()?;
        let message_num = self.server_message_sequence;
        let delta = r.read_byte()?;
        let delta_num = if delta == 0 {
            -1
        } else {
            message_num - i32::from(delta)
        };
        let snap_flags = r.read_byte()?;
        let slot = |n: i32| n as usize & (PACKET_BACKUP - 1);
        // The frame to delta from, and whether it is the right one.
        let (old, valid) = if delta_num <= 0 {
            (None, true)
        } else {
            match self.snapshots[slot(delta_num)].take() {
                Some(s) => {
                    let ok = s.valid && s.message_num == delta_num;
                    (Some(s), ok)
                }
                None => (None, false),
            }
        };
        // Reuse the entity buffer of the frame this one replaces (32
        // messages old: too old for the server to delta from; if it is
        // the base frame, it was taken above).
        let mut entities = self.snapshots[slot(message_num)]
            .take()
            .map_or_else(Vec::new, |s| s.entities);
        entities.clear();
        let result = self
            .parse_snapshot_body(r, old.as_ref(), &mut entities)
            .map(|ps| (ps, entities));
        // Put the base frame back before anything else.
        if let Some(o) = old {
            let k = slot(o.message_num);
            if self.snapshots[k].is_none() {
                self.snapshots[k] = Some(o);
            }
        }
        let (ps, entities) = result?;
        let info = SnapshotInfo {
            message_num,
            server_time,
            delta_num,
            delta_ok: valid,
            snap_flags,
            command_time: ps.command_time(),
            client_num: ps.client_num(),
            entities: entities.len(),
            origin: ps.origin(),
        };
        if valid {
            // Invalidate the frames between the last valid one and this.
            let mut n = self.last_snap.map_or(message_num, |m| m + 1);
            if message_num - n >= PACKET_BACKUP as i32 {
                n = message_num - (PACKET_BACKUP as i32 - 1);
            }
            while n < message_num {
                if let Some(s) = self.snapshots[slot(n)].as_mut() {
                    s.valid = false;
                }
                n += 1;
            }
            self.snapshots[slot(message_num)] = Some(Snapshot {
                valid: true,
                message_num,
                server_time,
                ps,
                entities,
            });
            self.last_snap = Some(message_num);
            if self.state == ClientState::Primed {
                self.state = ClientState::Active;
            }
        }
        events.push(Event::Snapshot(info));
        Ok(())
    }

    fn parse_snapshot_body(
        &self,
        r: &mut Reader,
        old: Option<&Snapshot>,
        entities: &mut Vec<EntityState>,
    ) -> Result<PlayerState, Q3Error> {
        let len = usize::from(r.read_byte()?);
        if len > MAX_MAP_AREA_BYTES {
            return Err(Q3Error::Malformed("invalid areamask size"));
        }
        for _ in 0..len {
            r.read_byte()?;
        }
        let ps = delta::read_delta_playerstate(r, old.map(|o| &o.ps))?;
        let old_entities: &[EntityState] = old.map_or(&[], |o| &o.entities);
        let mut oi = 0;
        let oldnum = |oi: usize| old_entities.get(oi).map_or(99999, |e| e.number);
        loop {
            let newnum = r.read_bits(GENTITYNUM_BITS)? as i32;
            if newnum == MAX_GENTITIES - 1 {
                break;
            }
            if entities.len() >= MAX_GENTITIES as usize || r.bit() > MAX_MSGLEN * 8 {
                return Err(Q3Error::Malformed("too many entities"));
            }
            while oldnum(oi) < newnum {
                entities.push(old_entities[oi]);
                oi += 1;
            }
            let base = if oldnum(oi) == newnum {
                oi += 1;
                old_entities[oi - 1]
            } else {
                self.baseline(newnum)
            };
            if let Some(e) = delta::read_delta_entity(r, &base, newnum)? {
                entities.push(e);
            }
        }
        entities.extend_from_slice(&old_entities[oi.min(old_entities.len())..]);
        if entities.len() > MAX_GENTITIES as usize {
            return Err(Q3Error::Malformed("too many entities"));
        }
        Ok(ps)
    }
}

#[cfg(test)]
mod tests;
