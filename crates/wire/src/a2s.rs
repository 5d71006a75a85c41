//! Valve server queries (A2S) on the game port, so server browsers and query
//! libraries list a tickpack server with its map, players and bots.
//!
//! Implements `A2S_INFO` (with the challenge Valve added in December 2020),
//! `A2S_PLAYER` and `A2S_RULES` in the Source format. The challenge number
//! comes from [`crate::TokenKey::a2s_challenge`], bound to the asker's
//! address: the server answers a request without a valid challenge only with
//! `S2C_CHALLENGE` (9 bytes, never more than the request), so queries cannot
//! be used for amplification.
//!
//! Order for a server: [`Query::decode`] (or [`crate::Datagram::decode`]); if
//! the challenge is missing or wrong, reply [`encode_challenge`]; otherwise
//! reply [`encode_info`], [`encode_players`] or [`encode_rules`].
//!
//! Order for an asker (`tickpack probe`, the host's `a2s` health check):
//! send `A2S_INFO` without a challenge, [`Reply::decode`] the
//! `S2C_CHALLENGE`, send the request again with it ([`Query::Info`] with
//! `Some(challenge)`), and decode the [`Reply::Info`].

use crate::codec::{truncate_utf8, DecodeError, Reader, Writer};

/// The four 0xFF bytes that start every single-packet A2S datagram.
pub const CONNECTIONLESS: [u8; 4] = [0xFF; 4];
/// Payload of an `A2S_INFO` request.
pub const INFO_PAYLOAD: &[u8] = b"Source Engine Query";
/// Replies are kept within one packet of this size.
pub const MAX_REPLY: usize = 1400;

const A2S_INFO: u8 = 0x54;
const A2S_PLAYER: u8 = 0x55;
const A2S_RULES: u8 = 0x56;
const S2C_CHALLENGE: u8 = 0x41;
const INFO_REPLY: u8 = 0x49;
const PLAYER_REPLY: u8 = 0x44;
const RULES_REPLY: u8 = 0x45;

/// A query; `challenge` is `None` when the client asked for one (`-1`) or
/// sent none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    Info { challenge: Option<u32> },
    Players { challenge: Option<u32> },
    Rules { challenge: Option<u32> },
}

impl Query {
    pub fn challenge(&self) -> Option<u32> {
        match *self {
            Query::Info { challenge }
            | Query::Players { challenge }
            | Query::Rules { challenge } => challenge,
        }
    }

    /// Decodes a query datagram (starting with [`CONNECTIONLESS`]).
    pub fn decode(buf: &[u8]) -> Result<Query, DecodeError> {
        let mut r = Reader::new(buf);
        if r.array::<4>()? != CONNECTIONLESS {
            return Err(DecodeError::BadMagic);
        }
        let challenge = |r: &mut Reader<'_>| -> Result<Option<u32>, DecodeError> {
            if r.remaining() < 4 {
                return Ok(None);
            }
            let c = r.u32()?;
            Ok((c != u32::MAX).then_some(c))
        };
        match r.u8()? {
            A2S_INFO => {
                if r.cstr()? != INFO_PAYLOAD {
                    return Err(DecodeError::Invalid("A2S_INFO payload"));
                }
                Ok(Query::Info {
                    challenge: challenge(&mut r)?,
                })
            }
            A2S_PLAYER => Ok(Query::Players {
                challenge: challenge(&mut r)?,
            }),
            A2S_RULES => Ok(Query::Rules {
                challenge: challenge(&mut r)?,
            }),
            other => Err(DecodeError::UnknownKind(other)),
        }
    }

    /// Encodes the request (client side; used by tests and `tickpack query`).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&CONNECTIONLESS);
        match self {
            Query::Info { .. } => {
                out.push(A2S_INFO);
                out.extend_from_slice(INFO_PAYLOAD);
                out.push(0);
            }
            Query::Players { .. } => out.push(A2S_PLAYER),
            Query::Rules { .. } => out.push(A2S_RULES),
        }
        match (self, self.challenge()) {
            (_, Some(c)) => out.extend_from_slice(&c.to_le_bytes()),
            (Query::Info { .. }, None) => {}
            (_, None) => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
    }
}

/// `S2C_CHALLENGE`: 9 bytes.
pub fn encode_challenge(challenge: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&CONNECTIONLESS);
    out.push(S2C_CHALLENGE);
    out.extend_from_slice(&challenge.to_le_bytes());
}

/// What `A2S_INFO` tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo<'a> {
    pub name: &'a str,
    pub map: &'a str,
    pub folder: &'a str,
    pub game: &'a str,
    pub app_id: u16,
    /// Humans and bots, as Source reports it.
    pub players: u8,
    pub max_players: u8,
    pub bots: u8,
    pub version: &'a str,
    pub port: u16,
    pub keywords: &'a str,
}

/// The `A2S_INFO` reply (Source format, with port and keywords in the EDF).
pub fn encode_info(info: &ServerInfo<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    let mut w = Writer { out };
    w.bytes(&CONNECTIONLESS);
    w.u8(INFO_REPLY);
    w.u8(17); // network protocol version
    w.cstr(truncate_utf8(info.name, 64));
    w.cstr(truncate_utf8(info.map, 64));
    w.cstr(truncate_utf8(info.folder, 64));
    w.cstr(truncate_utf8(info.game, 64));
    w.u16(info.app_id);
    w.u8(info.players);
    w.u8(info.max_players);
    w.u8(info.bots);
    w.u8(b'd'); // dedicated
    w.u8(b'l'); // linux
    w.u8(0); // no password
    w.u8(0); // no VAC
    w.cstr(truncate_utf8(info.version, 32));
    w.u8(0x80 | 0x20); // EDF: port, keywords
    w.u16(info.port);
    w.cstr(truncate_utf8(info.keywords, 128));
    debug_assert!(w.out.len() - start <= MAX_REPLY);
}

/// What a client receives in answer to `A2S_INFO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `S2C_CHALLENGE`: send the query again with this challenge.
    Challenge(u32),
    /// The `A2S_INFO` reply.
    Info(InfoReply),
}

/// The fields of an `A2S_INFO` reply (Source format) a prober shows. Text
/// is decoded lossily (servers send any bytes); the fields after `bots`
/// (server type, OS, VAC, version, EDF) are not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoReply {
    pub protocol: u8,
    pub name: String,
    pub map: String,
    pub folder: String,
    pub game: String,
    pub app_id: u16,
    /// Humans and bots, as Source reports it.
    pub players: u8,
    pub max_players: u8,
    pub bots: u8,
}

impl Reply {
    /// Decodes a single-packet reply to `A2S_INFO`. Split replies
    /// (`0xFFFFFFFE`), the GoldSource format and any other kind are refused,
    /// never a panic.
    pub fn decode(buf: &[u8]) -> Result<Reply, DecodeError> {
        let mut r = Reader::new(buf);
        if r.array::<4>()? != CONNECTIONLESS {
            return Err(DecodeError::BadMagic);
        }
        match r.u8()? {
            S2C_CHALLENGE => Ok(Reply::Challenge(r.u32()?)),
            INFO_REPLY => {
                let text = |r: &mut Reader<'_>| -> Result<String, DecodeError> {
                    Ok(String::from_utf8_lossy(r.cstr()?).into_owned())
                };
                Ok(Reply::Info(InfoReply {
                    protocol: r.u8()?,
                    name: text(&mut r)?,
                    map: text(&mut r)?,
                    folder: text(&mut r)?,
                    game: text(&mut r)?,
                    app_id: r.u16()?,
                    players: r.u8()?,
                    max_players: r.u8()?,
                    bots: r.u8()?,
                }))
            }
            other => Err(DecodeError::UnknownKind(other)),
        }
    }
}

/// One row of the `A2S_PLAYER` reply.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayerInfo<'a> {
    pub name: &'a str,
    pub score: i32,
    pub duration_s: f32,
}

/// The `A2S_PLAYER` reply; rows that would not fit in [`MAX_REPLY`] are left out.
pub fn encode_players(players: &[PlayerInfo<'_>], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&CONNECTIONLESS);
    out.push(PLAYER_REPLY);
    let count_at = out.len();
    out.push(0);
    let mut count = 0u8;
    for (i, p) in players.iter().enumerate().take(255) {
        let name = truncate_utf8(p.name, 32);
        if out.len() - start + 1 + name.len() + 1 + 8 > MAX_REPLY {
            break;
        }
        let mut w = Writer { out };
        w.u8(i as u8);
        w.cstr(name);
        w.u32(p.score as u32);
        w.f32(p.duration_s);
        count += 1;
    }
    out[count_at] = count;
}

/// The `A2S_RULES` reply; pairs that would not fit in [`MAX_REPLY`] are left out.
pub fn encode_rules(rules: &[(&str, &str)], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&CONNECTIONLESS);
    out.push(RULES_REPLY);
    let count_at = out.len();
    out.extend_from_slice(&[0, 0]);
    let mut count = 0u16;
    for (k, v) in rules {
        let (k, v) = (truncate_utf8(k, 64), truncate_utf8(v, 64));
        if out.len() - start + k.len() + v.len() + 2 > MAX_REPLY {
            break;
        }
        let mut w = Writer { out };
        w.cstr(k);
        w.cstr(v);
        count += 1;
    }
    out[count_at..count_at + 2].copy_from_slice(&count.to_le_bytes());
}

/// Ready-made A2S answers for the tests of the crates that ask A2S (the
/// query layer, the prober, the gamedig driver): one copy of the servers
/// they pretend to ask. Not part of the protocol's API.
#[doc(hidden)]
pub mod fixtures {
    use super::{encode_challenge, encode_info, ServerInfo};

    /// The `S2C_CHALLENGE` datagram carrying `challenge`.
    pub fn challenge(challenge: u32) -> Vec<u8> {
        let mut out = vec![];
        encode_challenge(challenge, &mut out);
        out
    }

    /// The `A2S_INFO` reply datagram telling `info`.
    pub fn info(info: &ServerInfo<'_>) -> Vec<u8> {
        let mut out = vec![];
        encode_info(info, &mut out);
        out
    }

    /// A small LAN server: "tp" on "lan", `players` of 12 (one of them a
    /// bot), version "0", port 1.
    pub fn lan_server(players: u8) -> ServerInfo<'static> {
        ServerInfo {
            name: "tp",
            map: "lan",
            folder: "tickpack",
            game: "tickpack",
            app_id: 0,
            players,
            max_players: 12,
            bots: 1,
            version: "0",
            port: 1,
            keywords: "",
        }
    }

    /// A server as `tickpack server` describes itself: "tickpack" on
    /// "arena", 7 of 32 players of which 5 are bots, version "0.1.0",
    /// port 1.
    pub const TICKPACK_ARENA: ServerInfo<'static> = ServerInfo {
        name: "tickpack",
        map: "arena",
        folder: "tickpack",
        game: "tickpack",
        app_id: 0,
        players: 7,
        max_players: 32,
        bots: 5,
        version: "0.1.0",
        port: 1,
        keywords: "",
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_request_with_and_without_challenge() {
        // Bytes as a 2020+ client sends them (developer.valvesoftware.com, "Server queries").
        let mut req = vec![0xFF, 0xFF, 0xFF, 0xFF, 0x54];
        req.extend_from_slice(b"Source Engine Query\0");
        assert_eq!(Query::decode(&req), Ok(Query::Info { challenge: None }));
        req.extend_from_slice(&0x4A_3B_2C_1Du32.to_le_bytes());
        assert_eq!(
            Query::decode(&req),
            Ok(Query::Info {
                challenge: Some(0x4A3B2C1D)
            })
        );
        let mut again = Vec::new();
        Query::decode(&req).unwrap().encode(&mut again);
        assert_eq!(again, req);
    }

    #[test]
    fn player_request_minus_one_asks_for_challenge() {
        let req = [0xFF, 0xFF, 0xFF, 0xFF, 0x55, 0xFF, 0xFF, 0xFF, 0xFF];
        assert_eq!(Query::decode(&req), Ok(Query::Players { challenge: None }));
        let mut out = Vec::new();
        encode_challenge(7, &mut out);
        assert_eq!(out, [0xFF, 0xFF, 0xFF, 0xFF, 0x41, 7, 0, 0, 0]);
        assert!(out.len() <= req.len(), "challenge never amplifies");
    }

    /// A server "tp" on de_dust2 with 5 of 12 players (4 bots), port 27015,
    /// keywords "k".
    fn five_players_on_de_dust2() -> ServerInfo<'static> {
        ServerInfo {
            name: "tp",
            map: "de_dust2",
            folder: "tickpack",
            game: "tickpack",
            app_id: 0,
            players: 5,
            max_players: 12,
            bots: 4,
            version: "0.1.0",
            port: 27015,
            keywords: "k",
        }
    }

    #[test]
    fn info_reply_layout() {
        let mut out = Vec::new();
        encode_info(&five_players_on_de_dust2(), &mut out);
        assert_eq!(&out[..6], &[0xFF, 0xFF, 0xFF, 0xFF, 0x49, 17]);
        assert_eq!(&out[6..9], b"tp\0");
        assert!(out.windows(9).any(|w| w == b"de_dust2\0"));
        // ... EDF (port | keywords), port, "k\0"
        let n = out.len();
        assert_eq!(out[n - 5], 0x80 | 0x20);
        assert_eq!(u16::from_le_bytes([out[n - 4], out[n - 3]]), 27015);
        assert_eq!(&out[n - 2..], b"k\0");
    }

    #[test]
    fn players_reply_fits_one_packet() {
        let names: Vec<String> = (0..255)
            .map(|i| format!("player-with-a-long-name-{i:03}"))
            .collect();
        let rows: Vec<_> = names
            .iter()
            .map(|n| PlayerInfo {
                name: n,
                score: 1,
                duration_s: 2.0,
            })
            .collect();
        let mut out = Vec::new();
        encode_players(&rows, &mut out);
        assert!(out.len() <= MAX_REPLY);
        assert!(out[5] > 10);
    }

    #[test]
    fn a_client_decodes_the_challenge_and_asks_again_with_it() {
        let mut out = Vec::new();
        encode_challenge(0x4A3B_2C1D, &mut out);
        assert_eq!(Reply::decode(&out), Ok(Reply::Challenge(0x4A3B_2C1D)));
        let mut again = Vec::new();
        Query::Info {
            challenge: Some(0x4A3B_2C1D),
        }
        .encode(&mut again);
        let mut want = vec![0xFF, 0xFF, 0xFF, 0xFF, 0x54];
        want.extend_from_slice(b"Source Engine Query\0");
        want.extend_from_slice(&[0x1D, 0x2C, 0x3B, 0x4A]);
        assert_eq!(again, want);
    }

    #[test]
    fn a_client_decodes_the_info_reply_the_server_encodes() {
        let mut out = Vec::new();
        encode_info(
            &ServerInfo {
                name: "arena 1",
                game: "tickpack game",
                app_id: 7,
                ..five_players_on_de_dust2()
            },
            &mut out,
        );
        let Ok(Reply::Info(i)) = Reply::decode(&out) else {
            panic!("{out:?}")
        };
        assert_eq!(
            i,
            InfoReply {
                protocol: 17,
                name: "arena 1".into(),
                map: "de_dust2".into(),
                folder: "tickpack".into(),
                game: "tickpack game".into(),
                app_id: 7,
                players: 5,
                max_players: 12,
                bots: 4,
            }
        );
        // Every cut before `bots` (the type, OS, VAC, version "0.1.0",
        // EDF, port and keywords "k" follow: 15 bytes) is refused.
        for n in 0..out.len() - 15 {
            assert!(Reply::decode(&out[..n]).is_err(), "{n}");
        }
    }

    #[test]
    fn a_client_refuses_what_is_not_an_info_reply() {
        assert_eq!(
            Reply::decode(&[0xFE, 0xFF, 0xFF, 0xFF, 0x49]),
            Err(DecodeError::BadMagic)
        );
        assert_eq!(
            Reply::decode(&[0xFF, 0xFF, 0xFF, 0xFF, 0x6D]),
            Err(DecodeError::UnknownKind(0x6D))
        );
        assert!(Reply::decode(&[0xFF, 0xFF, 0xFF, 0xFF, 0x41, 1, 2]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_decode_as_a_reply_or_are_refused(
            d in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            kind in proptest::sample::select(vec![0x41u8, 0x49, 0x6D]),
        ) {
            let _ = Reply::decode(&d);
            let mut framed = vec![0xFF, 0xFF, 0xFF, 0xFF, kind];
            framed.extend_from_slice(&d);
            let _ = Reply::decode(&framed);
            let _ = Query::decode(&framed);
        }
    }

    #[test]
    fn garbage_never_panics() {
        for len in 0..40 {
            let buf = vec![0xFF; len];
            let _ = Query::decode(&buf);
            let _ = Reply::decode(&buf);
        }
        assert!(Query::decode(&[0xFF, 0xFF, 0xFF, 0xFF, 0x54, b'x']).is_err());
    }

    #[test]
    fn an_asker_decodes_the_challenge_and_the_info_reply() {
        let mut out = Vec::new();
        encode_challenge(0xDEAD_BEEF, &mut out);
        assert_eq!(Reply::decode(&out), Ok(Reply::Challenge(0xDEAD_BEEF)));
        out.clear();
        encode_info(
            &ServerInfo {
                name: "tp-3",
                map: "arena",
                folder: "tickpack",
                game: "tickpack",
                app_id: 0,
                players: 7,
                max_players: 12,
                bots: 4,
                version: "0.1.0",
                port: 27015,
                keywords: "",
            },
            &mut out,
        );
        let Ok(Reply::Info(i)) = Reply::decode(&out) else {
            panic!("{out:?}")
        };
        assert_eq!((i.name.as_str(), i.map.as_str()), ("tp-3", "arena"));
        assert_eq!((i.players, i.max_players, i.bots), (7, 12, 4));
        // Cut anywhere before the bots byte (the last field read): refused.
        let bots_at = 6 + "tp-3 arena tickpack tickpack ".len() + 2 + 2;
        assert_eq!(out[bots_at], 4);
        for cut in 0..=bots_at {
            assert!(Reply::decode(&out[..cut]).is_err(), "cut at {cut}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_reply_datagram_decodes_or_is_refused(
            kind in proptest::sample::select(vec![S2C_CHALLENGE, INFO_REPLY, 0x44, 0x00]),
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        ) {
            let mut d = CONNECTIONLESS.to_vec();
            d.push(kind);
            d.extend_from_slice(&body);
            let _ = Reply::decode(&d);
            let _ = Reply::decode(&body);
        }
    }
}
