//! tickpack packets: layout, encoding and decoding.
//!
//! Every tickpack datagram starts with [`MAGIC`] and a kind byte; all
//! integers are little-endian. A2S queries (which start with four 0xFF bytes)
//! share the port and are told apart by [`Datagram::decode`].

use crate::a2s;
use crate::codec::{truncate_utf8, DecodeError, Reader, Writer};
use crate::health::{CheckProof, CHECK_TAG_LEN};
use crate::token::{Token, TOKEN_LEN};
use crate::types::Input;
use crate::TickRate;

/// First two bytes of every tickpack datagram.
pub const MAGIC: [u8; 2] = *b"TP";
/// The protocol version this crate speaks; a server refuses other versions.
pub const PROTOCOL_VERSION: u16 = 1;
/// A hello shorter than this is dropped, so the challenge (much smaller)
/// never amplifies.
pub const HELLO_MIN_LEN: usize = 128;
/// A connect shorter than this is dropped, for the same reason.
pub const CONNECT_MIN_LEN: usize = 128;
/// A stats request shorter than this is dropped; the stats reply is smaller.
pub const STATS_REQUEST_LEN: usize = 160;
// A check's proof rides after the nonce, in what older senders pad.
const _: () = assert!(3 + 8 + crate::health::CHECK_PROOF_LEN <= STATS_REQUEST_LEN);
/// Longest player name carried in `Connect` (bytes of UTF-8).
pub const MAX_NAME_LEN: usize = 32;
/// Largest UDP payload over IPv4.
pub const MAX_DATAGRAM: usize = 65_507;
/// Bytes of a command before its payload.
pub const COMMAND_HEADER_LEN: usize = 3 + 4 + 8 + 4 + 20;
// Players send 40-200 byte commands: the smallest must fit.
const _: () = assert!(COMMAND_HEADER_LEN <= 40);
/// Bytes of a snapshot before its entity records.
pub const SNAPSHOT_HEADER_LEN: usize = 3 + 4 + 4 + 4 + 4 + 4 + 2 + 2;
/// Bytes of a ping or pong without padding.
pub const PING_LEN: usize = 3 + 8 + 8;
/// `last_cmd_seq` / `baseline_tick` value meaning "none".
const NONE_U32: u32 = u32::MAX;

mod kind {
    pub const HELLO: u8 = 1;
    pub const CHALLENGE: u8 = 2;
    pub const CONNECT: u8 = 3;
    pub const ACCEPTED: u8 = 4;
    pub const REFUSED: u8 = 5;
    pub const COMMAND: u8 = 6;
    pub const SNAPSHOT: u8 = 7;
    pub const PING: u8 = 8;
    pub const PONG: u8 = 9;
    pub const STATS_REQUEST: u8 = 10;
    pub const STATS: u8 = 11;
    pub const DISCONNECT: u8 = 12;
}

/// Why the server refused a connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefuseReason {
    /// All `max_players` slots are taken.
    Full,
    /// The client speaks another protocol version.
    Version,
    /// The token is forged, for another address, or expired.
    BadToken,
    /// The server is stopping.
    ShuttingDown,
}

impl RefuseReason {
    fn to_u8(self) -> u8 {
        match self {
            Self::Full => 1,
            Self::Version => 2,
            Self::BadToken => 3,
            Self::ShuttingDown => 4,
        }
    }
    fn from_u8(v: u8) -> Result<Self, DecodeError> {
        Ok(match v {
            1 => Self::Full,
            2 => Self::Version,
            3 => Self::BadToken,
            4 => Self::ShuttingDown,
            _ => return Err(DecodeError::Invalid("refuse reason")),
        })
    }
}

impl std::fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Full => "server full",
            Self::Version => "protocol version mismatch",
            Self::BadToken => "bad or expired connect token",
            Self::ShuttingDown => "server shutting down",
        })
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisconnectReason {
    /// The server is stopping (SIGTERM).
    ServerShutdown,
    /// The player left.
    ClientLeaving,
    /// Nothing heard for too long.
    Timeout,
}

impl DisconnectReason {
    fn to_u8(self) -> u8 {
        match self {
            Self::ServerShutdown => 1,
            Self::ClientLeaving => 2,
            Self::Timeout => 3,
        }
    }
    fn from_u8(v: u8) -> Result<Self, DecodeError> {
        Ok(match v {
            1 => Self::ServerShutdown,
            2 => Self::ClientLeaving,
            3 => Self::Timeout,
            _ => return Err(DecodeError::Invalid("disconnect reason")),
        })
    }
}

/// A player's command: sent every command interval, 40-200 bytes typically.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Command<'a> {
    /// Increases by one per command, per connection.
    pub seq: u32,
    /// The client's clock when the command was due (microseconds).
    pub client_time_us: u64,
    /// The newest snapshot tick the client has received (acknowledgement
    /// used as the delta baseline); `None` before the first.
    pub ack_tick: Option<u32>,
    pub input: Input,
    /// Opaque bytes (chat, voice, extra input) up to the end of the
    /// datagram; sizes the command.
    pub payload: &'a [u8],
}

impl Command<'_> {
    /// Encoded size for a payload of `payload_len` bytes.
    pub const fn encoded_len(payload_len: usize) -> usize {
        COMMAND_HEADER_LEN + payload_len
    }
}

/// A world update for one player. The entity records are delta-encoded
/// against `baseline_tick` (see [`crate::delta`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot<'a> {
    /// Server tick this snapshot shows.
    pub tick: u32,
    /// The newest command sequence from this player applied by this tick.
    pub last_cmd_seq: Option<u32>,
    /// The server's processing time for the previous tick (microseconds).
    pub frame_us: u32,
    /// How late the previous tick started against its schedule (microseconds).
    pub lateness_us: u32,
    /// The snapshot the records are relative to; `None` means full state.
    pub baseline_tick: Option<u32>,
    /// Number of records in `records`.
    pub record_count: u16,
    /// Encoded entity records ([`crate::delta::encode`]).
    pub records: &'a [u8],
    /// Total datagram length: encode pads up to it; decode reports it.
    pub len: usize,
}

/// Server health counters, readable over the wire by anyone who pads the
/// request to [`STATS_REQUEST_LEN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ServerStats {
    pub nonce: u64,
    pub uptime_ms: u64,
    pub tick: u64,
    /// The server's tick rate (a 0 on the wire reads as 1 Hz).
    pub tick_hz: TickRate,
    pub players: u8,
    pub bots: u8,
    pub max_players: u8,
    pub frame_p50_us: u32,
    pub frame_p99_us: u32,
    pub frame_max_us: u32,
    pub lateness_p50_us: u32,
    pub lateness_p99_us: u32,
    pub lateness_max_us: u32,
    /// Ticks whose work did not fit in the tick interval.
    pub overruns: u64,
    pub packets_in: u64,
    pub packets_out: u64,
    /// Datagrams dropped because they did not decode or were not allowed.
    pub malformed: u64,
    /// CPU time used by the server process (microseconds).
    pub cpu_time_us: u64,
    /// Requests from unproven sources (hello, connect, A2S, stats, ping)
    /// dropped by the server's flood limits.
    pub rate_limited: u64,
    /// Datagrams the kernel dropped because the server's receive buffer was
    /// full (the server fell behind).
    pub socket_drops: u64,
    /// Tick lateness and frame time over the last second (the QoS guard's
    /// per-period signals); `None` from a server that predates them.
    pub recent: Option<RecentStats>,
    /// What became of the host's health checks; `None` from a server that
    /// predates them. Carried after the recent window and only with it (a
    /// server that counts checks always has a window).
    pub checks: Option<CheckCounters>,
}

/// The host's health checks a server did not answer, since start
/// ([`crate::CheckGate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct CheckCounters {
    /// Checks refused as stale: a copy of one already answered (a replay)
    /// or older than it. They took nothing from the checks' budget.
    pub stale: u64,
    /// Fresh checks dropped because the checks' budget was spent.
    pub over_budget: u64,
}

/// Encoded size of [`CheckCounters`].
pub const CHECK_COUNTERS_LEN: usize = 16;

/// Tick lateness and frame time over a recent window (the last completed
/// second and the current one), where [`ServerStats`]' percentiles are since
/// start. Carried after the flood counters, only when present: a reply
/// without them decodes as `None`, and a reader that predates them ignores
/// the trailing bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct RecentStats {
    /// How long the window spans, milliseconds (0: no tick in it yet).
    pub window_ms: u32,
    pub lateness_p99_us: u32,
    pub lateness_max_us: u32,
    pub frame_p99_us: u32,
    pub frame_max_us: u32,
}

/// Encoded size of [`RecentStats`].
pub const RECENT_STATS_LEN: usize = 20;

/// One tickpack datagram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Packet<'a> {
    /// Client asks to connect; padded to [`HELLO_MIN_LEN`].
    Hello {
        version: u16,
        nonce: u64,
    },
    /// Server answers a hello with a token bound to the client's address.
    Challenge {
        nonce: u64,
        token: Token,
    },
    /// Client proves it received the challenge; padded to [`CONNECT_MIN_LEN`].
    Connect {
        version: u16,
        nonce: u64,
        token: Token,
        name: &'a str,
    },
    Accepted {
        client_id: u16,
        /// The server's tick rate (a 0 on the wire reads as 1 Hz).
        tick_hz: TickRate,
        snapshot_len: u16,
        server_time_us: u64,
    },
    Refused {
        reason: RefuseReason,
    },
    Command(Command<'a>),
    Snapshot(Snapshot<'a>),
    /// Bare network round trip; `len` is the datagram length (padding).
    Ping {
        nonce: u64,
        client_time_us: u64,
        len: usize,
    },
    /// Echo of a ping, the same length as the ping.
    Pong {
        nonce: u64,
        client_time_us: u64,
        len: usize,
    },
    /// Asks for the server's stats; padded to [`STATS_REQUEST_LEN`]. The
    /// host's health checks carry a proof after the nonce
    /// ([`crate::HealthKey::check`]); without one the bytes there are zeros.
    StatsRequest {
        nonce: u64,
        proof: Option<CheckProof>,
    },
    Stats(ServerStats),
    Disconnect {
        reason: DisconnectReason,
    },
}

impl Packet<'_> {
    /// Appends the encoded datagram to `out`.
    ///
    /// Padding fields (`len` of ping, pong and snapshot) are honoured when
    /// larger than the natural size; `Hello`, `Connect` and `StatsRequest`
    /// are always padded to their minimum lengths.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let mut w = Writer { out };
        w.bytes(&MAGIC);
        match *self {
            Packet::Hello { version, nonce } => {
                w.u8(kind::HELLO);
                w.u16(version);
                w.u64(nonce);
                w.pad_to(start, HELLO_MIN_LEN);
            }
            Packet::Challenge { nonce, token } => {
                w.u8(kind::CHALLENGE);
                w.u64(nonce);
                w.bytes(&token.0);
            }
            Packet::Connect {
                version,
                nonce,
                token,
                name,
            } => {
                w.u8(kind::CONNECT);
                w.u16(version);
                w.u64(nonce);
                w.bytes(&token.0);
                let name = truncate_utf8(name, MAX_NAME_LEN);
                w.u8(name.len() as u8);
                w.bytes(name.as_bytes());
                w.pad_to(start, CONNECT_MIN_LEN);
            }
            Packet::Accepted {
                client_id,
                tick_hz,
                snapshot_len,
                server_time_us,
            } => {
                w.u8(kind::ACCEPTED);
                w.u16(client_id);
                w.u16(tick_hz.hz());
                w.u16(snapshot_len);
                w.u64(server_time_us);
            }
            Packet::Refused { reason } => {
                w.u8(kind::REFUSED);
                w.u8(reason.to_u8());
            }
            Packet::Command(ref c) => {
                w.u8(kind::COMMAND);
                w.u32(c.seq);
                w.u64(c.client_time_us);
                w.u32(c.ack_tick.unwrap_or(NONE_U32));
                w.f32(c.input.forward);
                w.f32(c.input.right);
                w.f32(c.input.yaw);
                w.f32(c.input.pitch);
                w.u32(c.input.buttons);
                // The payload is the rest of the datagram.
                let n = c.payload.len().min(MAX_DATAGRAM - COMMAND_HEADER_LEN);
                w.bytes(&c.payload[..n]);
            }
            Packet::Snapshot(ref s) => {
                w.u8(kind::SNAPSHOT);
                w.u32(s.tick);
                w.u32(s.last_cmd_seq.unwrap_or(NONE_U32));
                w.u32(s.frame_us);
                w.u32(s.lateness_us);
                w.u32(s.baseline_tick.unwrap_or(NONE_U32));
                w.u16(s.record_count);
                w.u16(s.records.len() as u16);
                w.bytes(s.records);
                w.pad_to(start, s.len.min(MAX_DATAGRAM));
            }
            Packet::Ping {
                nonce,
                client_time_us,
                len,
            } => {
                w.u8(kind::PING);
                w.u64(nonce);
                w.u64(client_time_us);
                w.pad_to(start, len.min(MAX_DATAGRAM));
            }
            Packet::Pong {
                nonce,
                client_time_us,
                len,
            } => {
                w.u8(kind::PONG);
                w.u64(nonce);
                w.u64(client_time_us);
                w.pad_to(start, len.min(MAX_DATAGRAM));
            }
            Packet::StatsRequest { nonce, proof } => {
                w.u8(kind::STATS_REQUEST);
                w.u64(nonce);
                if let Some(p) = proof {
                    w.u64(p.counter);
                    w.bytes(&p.tag);
                }
                w.pad_to(start, STATS_REQUEST_LEN);
            }
            Packet::Stats(ref s) => {
                w.u8(kind::STATS);
                w.u64(s.nonce);
                w.u64(s.uptime_ms);
                w.u64(s.tick);
                w.u16(s.tick_hz.hz());
                w.u8(s.players);
                w.u8(s.bots);
                w.u8(s.max_players);
                for v in [
                    s.frame_p50_us,
                    s.frame_p99_us,
                    s.frame_max_us,
                    s.lateness_p50_us,
                    s.lateness_p99_us,
                    s.lateness_max_us,
                ] {
                    w.u32(v);
                }
                for v in [
                    s.overruns,
                    s.packets_in,
                    s.packets_out,
                    s.malformed,
                    s.cpu_time_us,
                    s.rate_limited,
                    s.socket_drops,
                ] {
                    w.u64(v);
                }
                if let Some(r) = s.recent {
                    for v in [
                        r.window_ms,
                        r.lateness_p99_us,
                        r.lateness_max_us,
                        r.frame_p99_us,
                        r.frame_max_us,
                    ] {
                        w.u32(v);
                    }
                    if let Some(c) = s.checks {
                        w.u64(c.stale);
                        w.u64(c.over_budget);
                    }
                }
            }
            Packet::Disconnect { reason } => {
                w.u8(kind::DISCONNECT);
                w.u8(reason.to_u8());
            }
        }
    }

    /// Encodes into a fresh vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}

impl<'a> Packet<'a> {
    /// Decodes one tickpack datagram. Never panics; trusts no length.
    pub fn decode(buf: &'a [u8]) -> Result<Packet<'a>, DecodeError> {
        let mut r = Reader::new(buf);
        if r.array::<2>()? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let k = r.u8()?;
        let p = match k {
            kind::HELLO => {
                min_len(buf, HELLO_MIN_LEN)?;
                Packet::Hello {
                    version: r.u16()?,
                    nonce: r.u64()?,
                }
            }
            kind::CHALLENGE => Packet::Challenge {
                nonce: r.u64()?,
                token: Token(r.array::<TOKEN_LEN>()?),
            },
            kind::CONNECT => {
                min_len(buf, CONNECT_MIN_LEN)?;
                let version = r.u16()?;
                let nonce = r.u64()?;
                let token = Token(r.array::<TOKEN_LEN>()?);
                let n = r.u8()? as usize;
                if n > MAX_NAME_LEN {
                    return Err(DecodeError::Invalid("name length"));
                }
                let name =
                    std::str::from_utf8(r.bytes(n)?).map_err(|_| DecodeError::Invalid("name"))?;
                Packet::Connect {
                    version,
                    nonce,
                    token,
                    name,
                }
            }
            kind::ACCEPTED => Packet::Accepted {
                client_id: r.u16()?,
                tick_hz: TickRate::from_wire(r.u16()?),
                snapshot_len: r.u16()?,
                server_time_us: r.u64()?,
            },
            kind::REFUSED => Packet::Refused {
                reason: RefuseReason::from_u8(r.u8()?)?,
            },
            kind::COMMAND => {
                let seq = r.u32()?;
                let client_time_us = r.u64()?;
                let ack_tick = opt(r.u32()?);
                let input = Input {
                    forward: r.f32()?,
                    right: r.f32()?,
                    yaw: r.f32()?,
                    pitch: r.f32()?,
                    buttons: r.u32()?,
                };
                let payload = r.bytes(r.remaining())?;
                Packet::Command(Command {
                    seq,
                    client_time_us,
                    ack_tick,
                    input,
                    payload,
                })
            }
            kind::SNAPSHOT => {
                let tick = r.u32()?;
                let last_cmd_seq = opt(r.u32()?);
                let frame_us = r.u32()?;
                let lateness_us = r.u32()?;
                let baseline_tick = opt(r.u32()?);
                let record_count = r.u16()?;
                let n = r.u16()? as usize;
                let records = r.bytes(n)?;
                Packet::Snapshot(Snapshot {
                    tick,
                    last_cmd_seq,
                    frame_us,
                    lateness_us,
                    baseline_tick,
                    record_count,
                    records,
                    len: buf.len(),
                })
            }
            kind::PING | kind::PONG => {
                let nonce = r.u64()?;
                let client_time_us = r.u64()?;
                let len = buf.len();
                if k == kind::PING {
                    Packet::Ping {
                        nonce,
                        client_time_us,
                        len,
                    }
                } else {
                    Packet::Pong {
                        nonce,
                        client_time_us,
                        len,
                    }
                }
            }
            kind::STATS_REQUEST => {
                min_len(buf, STATS_REQUEST_LEN)?;
                let nonce = r.u64()?;
                let counter = r.u64()?;
                let tag = r.array::<CHECK_TAG_LEN>()?;
                Packet::StatsRequest {
                    nonce,
                    // Zeros (an older sender's padding): no proof.
                    proof: (counter != 0).then_some(CheckProof { counter, tag }),
                }
            }
            kind::STATS => {
                let mut s = ServerStats {
                    nonce: r.u64()?,
                    uptime_ms: r.u64()?,
                    tick: r.u64()?,
                    tick_hz: TickRate::from_wire(r.u16()?),
                    players: r.u8()?,
                    bots: r.u8()?,
                    max_players: r.u8()?,
                    ..Default::default()
                };
                for f in [
                    &mut s.frame_p50_us,
                    &mut s.frame_p99_us,
                    &mut s.frame_max_us,
                    &mut s.lateness_p50_us,
                    &mut s.lateness_p99_us,
                    &mut s.lateness_max_us,
                ] {
                    *f = r.u32()?;
                }
                for f in [
                    &mut s.overruns,
                    &mut s.packets_in,
                    &mut s.packets_out,
                    &mut s.malformed,
                    &mut s.cpu_time_us,
                ] {
                    *f = r.u64()?;
                }
                // Flood counters came later: a reply without them reads as 0.
                if r.remaining() >= 16 {
                    s.rate_limited = r.u64()?;
                    s.socket_drops = r.u64()?;
                    // The recent window came later still: absent is None.
                    if r.remaining() >= RECENT_STATS_LEN {
                        s.recent = Some(RecentStats {
                            window_ms: r.u32()?,
                            lateness_p99_us: r.u32()?,
                            lateness_max_us: r.u32()?,
                            frame_p99_us: r.u32()?,
                            frame_max_us: r.u32()?,
                        });
                        // The check counters came after it.
                        if r.remaining() >= CHECK_COUNTERS_LEN {
                            s.checks = Some(CheckCounters {
                                stale: r.u64()?,
                                over_budget: r.u64()?,
                            });
                        }
                    }
                }
                Packet::Stats(s)
            }
            kind::DISCONNECT => Packet::Disconnect {
                reason: DisconnectReason::from_u8(r.u8()?)?,
            },
            other => return Err(DecodeError::UnknownKind(other)),
        };
        Ok(p)
    }
}

fn opt(v: u32) -> Option<u32> {
    (v != NONE_U32).then_some(v)
}

fn min_len(buf: &[u8], min: usize) -> Result<(), DecodeError> {
    if buf.len() < min {
        Err(DecodeError::TooShort { min })
    } else {
        Ok(())
    }
}

/// Anything that can arrive on the server's port.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Datagram<'a> {
    Game(Packet<'a>),
    Query(a2s::Query),
}

impl<'a> Datagram<'a> {
    /// Tells an A2S query (four 0xFF bytes) from a tickpack packet and
    /// decodes it. Never panics.
    pub fn decode(buf: &'a [u8]) -> Result<Datagram<'a>, DecodeError> {
        if buf.starts_with(&a2s::CONNECTIONLESS) {
            a2s::Query::decode(buf).map(Datagram::Query)
        } else {
            Packet::decode(buf).map(Datagram::Game)
        }
    }
}
