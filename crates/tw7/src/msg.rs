//! The messages an emulated tw7 (0.7 protocol) player sends and reads: system
//! messages (src/engine/shared/protocol.h, client.cpp, server.cpp) and the
//! few game messages of the join (datasrc/network.py: CL_STARTINFO,
//! SV_READYTOENTER, SV_CLIENTINFO).
//!
//! Every message is one chunk: a packed int `(id << 1) | system`, then its
//! fields (packed ints, NUL-terminated strings, raw bytes).
//!
//! The join, as the 0.7.5 server runs it (server.cpp
//! `ProcessClientPacket`, gamecontext.cpp `OnMessage`; libtw2
//! doc/connection.md draws the same):
//!
//! ```text
//! -> INFO (net version "0.7 802f1be60a05665f", password, client version)
//! <- MAP_CHANGE (name, crc, size, chunks per request, chunk size, sha256)
//! -> READY                 the map is only sent on REQUEST_MAP_DATA; a
//!                          client that has it (or does not need it) says
//!                          READY at once; the server checks nothing else
//! <- CON_READY             (after the game's MOTD, settings, ...)
//! -> CL_STARTINFO          name, clan, country, six skin parts
//! <- SV_READYTOENTER       (after vote options and tuning)
//! -> ENTERGAME             the server logs "player has entered the game"
//! <- SNAP / SNAPSINGLE / SNAPEMPTY, 25 a second (50 with sv_high_bandwidth)
//! -> INPUT (acked snapshot tick, intended tick, 40, ten ints, ping correction)
//! <- INPUTTIMING (intended tick, ms left before that tick starts)
//! ```
//!
//! What it does not do: download maps, rcon, votes, chat, or decode game
//! messages other than the ones above (they are returned as
//! [`ServerMsg::Other`]).
//!
//! Order: the `write_*` functions append one message to a buffer that
//! becomes one chunk; [`ServerMsg::decode`] reads one chunk.

use crate::packer::{Packer, Unpacker};
use crate::Tw7Error;

/// `GAME_NETVERSION` of 0.7.5 (game/version.h); the server drops a client
/// announcing anything else.
pub const NET_VERSION: &str = "0.7 802f1be60a05665f";
/// `CLIENT_VERSION` of 0.7.5.
pub const CLIENT_VERSION: i32 = 0x0705;
/// Ints in a player input (`CNetObj_PlayerInput`).
pub const INPUT_INTS: usize = 10;
/// `MAX_SNAPSHOT_PACKSIZE`: bytes of one snapshot part.
pub const MAX_SNAPSHOT_PACKSIZE: usize = 900;
/// `CSnapshot::MAX_PARTS`.
pub const MAX_SNAPSHOT_PARTS: usize = 64;
/// Skin parts (body, marking, decoration, hands, feet, eyes).
pub const NUM_SKINPARTS: usize = 6;

/// System message ids (`NETMSG_*`, protocol.h).
pub mod sys {
    /// Client: version and password.
    pub const INFO: i32 = 1;
    /// Server: the map to load.
    pub const MAP_CHANGE: i32 = 2;
    /// Server: a chunk of the map file.
    pub const MAP_DATA: i32 = 3;
    /// Server: server info.
    pub const SERVERINFO: i32 = 4;
    /// Server: connection ready, send start info.
    pub const CON_READY: i32 = 5;
    /// Server: one part of a multi-part snapshot.
    pub const SNAP: i32 = 6;
    /// Server: an empty snapshot delta.
    pub const SNAPEMPTY: i32 = 7;
    /// Server: a single-part snapshot.
    pub const SNAPSINGLE: i32 = 8;
    /// Server: the timing of an input.
    pub const INPUTTIMING: i32 = 10;
    /// Client: map loaded.
    pub const READY: i32 = 18;
    /// Client: enter the game.
    pub const ENTERGAME: i32 = 19;
    /// Client: player input.
    pub const INPUT: i32 = 20;
    /// Client: ask for map data.
    pub const REQUEST_MAP_DATA: i32 = 23;
    /// Both: ping.
    pub const PING: i32 = 26;
    /// Both: ping answer.
    pub const PING_REPLY: i32 = 27;
}

/// Game message ids (`NETMSGTYPE_*`, datasrc/network.py order from 1).
pub mod game {
    /// Server: message of the day.
    pub const SV_MOTD: i32 = 1;
    /// Server: the client may send ENTERGAME.
    pub const SV_READYTOENTER: i32 = 8;
    /// Server: a client's info (name, team, whether it is us).
    pub const SV_CLIENTINFO: i32 = 18;
    /// Client: name, clan, country, skin.
    pub const CL_STARTINFO: i32 = 27;
}

/// One player input (`CNetObj_PlayerInput`), field order as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlayerInput {
    /// -1 left, 0 none, 1 right.
    pub direction: i32,
    /// Aim, relative to the tee.
    pub target_x: i32,
    /// Aim, relative to the tee.
    pub target_y: i32,
    /// Jump held (0/1).
    pub jump: i32,
    /// Fire presses counter (even: released).
    pub fire: i32,
    /// Hook held (0/1).
    pub hook: i32,
    /// `PLAYERFLAG_*`.
    pub player_flags: i32,
    /// Wanted weapon, 0..=5.
    pub wanted_weapon: i32,
    /// Next-weapon presses.
    pub next_weapon: i32,
    /// Previous-weapon presses.
    pub prev_weapon: i32,
}

impl PlayerInput {
    /// The ten ints.
    pub fn to_ints(&self) -> [i32; INPUT_INTS] {
        [
            self.direction,
            self.target_x,
            self.target_y,
            self.jump,
            self.fire,
            self.hook,
            self.player_flags,
            self.wanted_weapon,
            self.next_weapon,
            self.prev_weapon,
        ]
    }

    /// The ints back into an input.
    pub fn from_ints(v: [i32; INPUT_INTS]) -> PlayerInput {
        PlayerInput {
            direction: v[0],
            target_x: v[1],
            target_y: v[2],
            jump: v[3],
            fire: v[4],
            hook: v[5],
            player_flags: v[6],
            wanted_weapon: v[7],
            next_weapon: v[8],
            prev_weapon: v[9],
        }
    }

    /// The character's `m_Angle` once the server ran this input:
    /// `(int)(atan2f(y, x) * 256)` (gamecore.cpp `CCharacterCore::Tick`),
    /// with the server's rule that an aim of (0, 0) becomes (0, -1)
    /// (character.cpp `OnPredictedInput`).
    pub fn expected_angle(&self) -> i32 {
        let (x, y) = if self.target_x == 0 && self.target_y == 0 {
            (0, -1)
        } else {
            (self.target_x, self.target_y)
        };
        ((y as f32).atan2(x as f32) * 256.0) as i32
    }
}

/// What CL_STARTINFO says about the player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartInfo {
    /// Player name (the server keeps 15 bytes).
    pub name: String,
    /// Clan (11 bytes kept).
    pub clan: String,
    /// ISO 3166 numeric country, -1 none.
    pub country: i32,
    /// Skin part names (body, marking, decoration, hands, feet, eyes).
    pub skin_parts: [String; NUM_SKINPARTS],
    /// Use the custom colour of each part (0/1).
    pub use_custom_colors: [i32; NUM_SKINPARTS],
    /// Colour of each part (HSL packed as the client does).
    pub skin_colors: [i32; NUM_SKINPARTS],
}

impl StartInfo {
    /// The 0.7.5 client's defaults (game/variables.h) with `name`.
    pub fn new(name: &str) -> StartInfo {
        StartInfo {
            name: name.to_string(),
            clan: String::new(),
            country: -1,
            skin_parts: [
                "standard".into(),
                String::new(),
                String::new(),
                "standard".into(),
                "standard".into(),
                "standard".into(),
            ],
            use_custom_colors: [1; NUM_SKINPARTS],
            skin_colors: [
                0x1B6F74,
                0xFF0000FF_u32 as i32,
                0x1B6F74,
                0x1B759E,
                0x1C873E,
                0x0000FF,
            ],
        }
    }
}

/// Appends a message's id, `(id << 1) | system`, to `out`; the packer
/// then appends its fields.
pub(crate) fn header(out: &mut Vec<u8>, id: i32, system: bool) -> Packer<'_> {
    let mut p = Packer::new(out);
    p.int((id << 1) | i32::from(system));
    p
}

/// INFO: net version, password (the engine's limit: 128 bytes each), client
/// version.
pub fn write_info(out: &mut Vec<u8>, password: &str) {
    header(out, sys::INFO, true)
        .string(NET_VERSION, 128)
        .string(password, 128)
        .int(CLIENT_VERSION);
}

/// READY (map loaded).
pub fn write_ready(out: &mut Vec<u8>) {
    header(out, sys::READY, true);
}

/// ENTERGAME.
pub fn write_enter_game(out: &mut Vec<u8>) {
    header(out, sys::ENTERGAME, true);
}

/// PING.
pub fn write_ping(out: &mut Vec<u8>) {
    header(out, sys::PING, true);
}

/// PING_REPLY.
pub fn write_ping_reply(out: &mut Vec<u8>) {
    header(out, sys::PING_REPLY, true);
}

/// INPUT: the last snapshot tick we have (the server deltas against it),
/// the tick the input is meant for, its size in bytes (40), the ten ints,
/// and the ping correction in ms (the server clamps it to 0..=50).
pub fn write_input(
    out: &mut Vec<u8>,
    ack_tick: i32,
    intended_tick: i32,
    input: &PlayerInput,
    ping_correction: i32,
) {
    let mut p = header(out, sys::INPUT, true);
    p.int(ack_tick)
        .int(intended_tick)
        .int((INPUT_INTS * 4) as i32);
    for v in input.to_ints() {
        p.int(v);
    }
    p.int(ping_correction);
}

/// CL_STARTINFO (a game message). Strings are cut to the engine's buffers
/// (name 16, clan 12, skin parts 24 bytes, NUL included).
pub fn write_start_info(out: &mut Vec<u8>, info: &StartInfo) {
    let mut p = header(out, game::CL_STARTINFO, false);
    p.string(&info.name, 15)
        .string(&info.clan, 11)
        .int(info.country);
    for s in &info.skin_parts {
        p.string(s, 23);
    }
    for &v in &info.use_custom_colors {
        p.int(v);
    }
    for &v in &info.skin_colors {
        p.int(v);
    }
}

/// One part of a snapshot message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapPart<'a> {
    /// The snapshot's game tick.
    pub tick: i32,
    /// The tick of the snapshot it is a delta against, -1 for none.
    pub delta_tick: i32,
    /// Parts of this snapshot (1 for SNAPSINGLE and SNAPEMPTY).
    pub num_parts: i32,
    /// This part's index.
    pub part: i32,
    /// The sum of the whole snapshot's item ints (0 for SNAPEMPTY).
    pub crc: i32,
    /// Packed delta bytes (empty for SNAPEMPTY).
    pub data: &'a [u8],
    /// SNAPEMPTY: the delta is empty (the snapshot equals its base).
    pub empty: bool,
}

/// A message from the server, as far as a player needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMsg<'a> {
    /// MAP_CHANGE.
    MapChange {
        /// Map name.
        name: &'a [u8],
        /// Map crc.
        crc: i32,
        /// Map size in bytes.
        size: i32,
    },
    /// CON_READY.
    ConReady,
    /// SNAP, SNAPSINGLE or SNAPEMPTY.
    Snap(SnapPart<'a>),
    /// INPUTTIMING.
    InputTiming {
        /// The intended tick of the input it answers.
        intended_tick: i32,
        /// Ms between its arrival and the start of that tick (negative:
        /// late; the server then runs it at the next tick).
        time_left: i32,
    },
    /// PING (answer with PING_REPLY).
    Ping,
    /// PING_REPLY.
    PingReply,
    /// SV_READYTOENTER.
    ReadyToEnter,
    /// SV_CLIENTINFO: `local` marks our own client id.
    ClientInfo {
        /// The client it describes.
        client_id: i32,
        /// Whether that is us.
        local: bool,
        /// Its team (-1 spectators).
        team: i32,
    },
    /// Anything else.
    Other {
        /// System message?
        system: bool,
        /// Its id.
        id: i32,
    },
}

impl<'a> ServerMsg<'a> {
    /// Decode one chunk.
    pub fn decode(chunk: &'a [u8]) -> Result<ServerMsg<'a>, Tw7Error> {
        let mut u = Unpacker::new(chunk);
        let head = u.int()?;
        let system = head & 1 == 1;
        let id = head >> 1;
        if !system {
            return Ok(match id {
                game::SV_READYTOENTER => ServerMsg::ReadyToEnter,
                game::SV_CLIENTINFO => ServerMsg::ClientInfo {
                    client_id: u.int()?,
                    local: u.int()? != 0,
                    team: u.int()?,
                },
                _ => ServerMsg::Other { system, id },
            });
        }
        Ok(match id {
            sys::MAP_CHANGE => ServerMsg::MapChange {
                name: u.string()?,
                crc: u.int()?,
                size: u.int()?,
            },
            sys::CON_READY => ServerMsg::ConReady,
            sys::SNAP | sys::SNAPSINGLE | sys::SNAPEMPTY => {
                let tick = u.int()?;
                let delta_tick = tick.wrapping_sub(u.int()?);
                let (mut num_parts, mut part, mut crc) = (1, 0, 0);
                if id == sys::SNAP {
                    num_parts = u.int()?;
                    part = u.int()?;
                }
                let mut data: &[u8] = &[];
                if id != sys::SNAPEMPTY {
                    crc = u.int()?;
                    let size = u.int()?;
                    if !(0..=MAX_SNAPSHOT_PACKSIZE as i32).contains(&size) {
                        return Err(Tw7Error::Malformed("snapshot part size"));
                    }
                    data = u.raw(size as usize)?;
                }
                if !(1..=MAX_SNAPSHOT_PARTS as i32).contains(&num_parts)
                    || !(0..num_parts).contains(&part)
                {
                    return Err(Tw7Error::Malformed("snapshot part index"));
                }
                ServerMsg::Snap(SnapPart {
                    tick,
                    delta_tick,
                    num_parts,
                    part,
                    crc,
                    data,
                    empty: id == sys::SNAPEMPTY,
                })
            }
            sys::INPUTTIMING => ServerMsg::InputTiming {
                intended_tick: u.int()?,
                time_left: u.int()?,
            },
            sys::PING => ServerMsg::Ping,
            sys::PING_REPLY => ServerMsg::PingReply,
            _ => ServerMsg::Other { system, id },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn info_bytes() {
        let mut b = Vec::new();
        write_info(&mut b, "pw");
        let mut want = vec![0x03];
        want.extend_from_slice(b"0.7 802f1be60a05665f\0pw\0");
        // 0x0705 = 1797: 6 low bits 0x05, then 1797 >> 6 = 28.
        want.extend_from_slice(&[0x85, 0x1c]);
        assert_eq!(b, want);
    }

    #[test]
    fn input_round_trip_through_the_unpacker() {
        let i = PlayerInput {
            direction: -1,
            target_x: 100,
            target_y: -37,
            wanted_weapon: 1,
            ..Default::default()
        };
        let mut b = Vec::new();
        write_input(&mut b, 1234, 1240, &i, 7);
        let mut u = Unpacker::new(&b);
        assert_eq!(u.int().unwrap(), (sys::INPUT << 1) | 1);
        assert_eq!(
            [u.int().unwrap(), u.int().unwrap(), u.int().unwrap()],
            [1234, 1240, 40]
        );
        let mut v = [0; INPUT_INTS];
        for x in &mut v {
            *x = u.int().unwrap();
        }
        assert_eq!(PlayerInput::from_ints(v), i);
        assert_eq!(u.int().unwrap(), 7);
        assert!(u.remaining().is_empty());
    }

    #[test]
    fn angles_as_the_server_computes_them() {
        let a = |x, y| {
            PlayerInput {
                target_x: x,
                target_y: y,
                ..Default::default()
            }
            .expected_angle()
        };
        assert_eq!(a(1, 0), 0);
        assert_eq!(a(0, 1), 402); // pi/2 * 256 = 402.1
        assert_eq!(a(0, 0), -402);
        assert_eq!(a(-1, 0), 804); // pi * 256 = 804.2
    }

    #[test]
    fn snap_messages() {
        let mut b = Vec::new();
        Packer::new(&mut b)
            .int((sys::SNAPSINGLE << 1) | 1)
            .int(100)
            .int(3)
            .int(-5)
            .int(2)
            .raw(&[1, 2]);
        let m = ServerMsg::decode(&b).unwrap();
        assert_eq!(
            m,
            ServerMsg::Snap(SnapPart {
                tick: 100,
                delta_tick: 97,
                num_parts: 1,
                part: 0,
                crc: -5,
                data: &[1, 2],
                empty: false
            })
        );
        b.clear();
        Packer::new(&mut b)
            .int((sys::SNAP << 1) | 1)
            .int(100)
            .int(101)
            .int(2)
            .int(2)
            .int(0)
            .int(0);
        assert!(ServerMsg::decode(&b).is_err(), "part 2 of 2");
    }

    proptest! {
        #[test]
        fn decode_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = ServerMsg::decode(&data);
        }
    }
}
