//! The two query protocols the prober speaks, sans-I/O: the request for a
//! query and what a reply means.
//!
//! - `q3`: `getinfo ID` (ioq3 `SVC_Info`); the server echoes `ID` in the
//!   reply's `challenge` key, which matches the reply to its query. ioq3
//!   rate-limits these per source address (a burst of 10, then one a
//!   second) and in all (a burst of 10, then one per 100 ms, shared with
//!   every other asker): see `tickpack_q3::query`.
//! - `a2s`: `A2S_INFO`; a server that wants a challenge answers
//!   `S2C_CHALLENGE` and the query is sent again with it
//!   (`tickpack_wire::a2s`). Replies carry no id: one query per target is
//!   in flight at a time, and a reply answers the query in flight.

use tickpack_q3::query as q3;
use tickpack_report::probe::ServerFacts;
use tickpack_wire::a2s;

/// A query protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// id Tech 3 (ioquake3, OpenArena): `getinfo`.
    Q3,
    /// Valve Source: `A2S_INFO`.
    A2s,
}

impl Protocol {
    /// As typed on the command line and stored in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Q3 => "q3",
            Protocol::A2s => "a2s",
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "q3" => Ok(Protocol::Q3),
            "a2s" => Ok(Protocol::A2s),
            other => Err(format!(
                "unknown query protocol {other:?} (expected q3 or a2s)"
            )),
        }
    }
}

/// What a datagram from a target means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The answer to a query: its id (q3; `None` for A2S, which has none)
    /// and what the server said about itself.
    Info {
        id: Option<String>,
        facts: ServerFacts,
    },
    /// A2S `S2C_CHALLENGE`: ask again with this number.
    Challenge(u32),
    /// Anything else (not a reply, or not one the prober asked for).
    Other,
}

/// The id a q3 query carries for query number `seq`.
pub fn q3_id(seq: u64) -> String {
    format!("tp{seq}")
}

/// Appends the request of query `seq` to `out` (`challenge`: A2S only).
pub fn encode_request(protocol: Protocol, seq: u64, challenge: Option<u32>, out: &mut Vec<u8>) {
    match protocol {
        Protocol::Q3 => out.extend_from_slice(&q3::request(q3::Kind::Info, &q3_id(seq))),
        Protocol::A2s => a2s::Query::Info { challenge }.encode(out),
    }
}

/// Reads a datagram from a target; never panics, whatever the bytes.
pub fn decode_answer(protocol: Protocol, datagram: &[u8]) -> Answer {
    match protocol {
        Protocol::Q3 => match q3::decode(datagram) {
            Ok(q3::Reply::Info(info)) => {
                let num = |k: &str| info.get(k).and_then(|v| v.trim().parse::<u32>().ok());
                let players = num("clients").unwrap_or(0);
                // ioq3 has counted humans since 1.36; bots are the rest.
                let bots = num("g_humanplayers").map_or(0, |h| players.saturating_sub(h));
                Answer::Info {
                    id: info.get("challenge").map(str::to_string),
                    facts: ServerFacts {
                        name: info.get("hostname").unwrap_or("").to_string(),
                        map: info.get("mapname").unwrap_or("").to_string(),
                        players,
                        max_players: num("sv_maxclients").unwrap_or(0),
                        bots,
                    },
                }
            }
            _ => Answer::Other,
        },
        Protocol::A2s => match a2s::Reply::decode(datagram) {
            Ok(a2s::Reply::Challenge(c)) => Answer::Challenge(c),
            Ok(a2s::Reply::Info(i)) => Answer::Info {
                id: None,
                facts: ServerFacts {
                    name: i.name,
                    map: i.map,
                    players: u32::from(i.players),
                    max_players: u32::from(i.max_players),
                    bots: u32::from(i.bots),
                },
            },
            Err(_) => Answer::Other,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_q3_request_carries_its_id_and_the_reply_gives_it_back() {
        let mut out = vec![];
        encode_request(Protocol::Q3, 7, None, &mut out);
        assert_eq!(out, b"\xff\xff\xff\xffgetinfo tp7");
        let reply = b"\xff\xff\xff\xffinfoResponse\n\\g_humanplayers\\1\\sv_maxclients\\8\\clients\\4\\mapname\\oa_dm1\\hostname\\arena\\challenge\\tp7";
        assert_eq!(
            decode_answer(Protocol::Q3, reply),
            Answer::Info {
                id: Some("tp7".into()),
                facts: ServerFacts {
                    name: "arena".into(),
                    map: "oa_dm1".into(),
                    players: 4,
                    max_players: 8,
                    bots: 3
                }
            }
        );
        assert_eq!(
            decode_answer(Protocol::Q3, b"\xff\xff\xff\xffprint\nno"),
            Answer::Other
        );
    }

    #[test]
    fn an_a2s_request_asks_then_answers_the_challenge() {
        let mut out = vec![];
        encode_request(Protocol::A2s, 1, None, &mut out);
        assert_eq!(out.len(), 25);
        out.clear();
        encode_request(Protocol::A2s, 1, Some(9), &mut out);
        assert_eq!(&out[25..], &9u32.to_le_bytes());
        let mut ch = vec![];
        a2s::encode_challenge(9, &mut ch);
        assert_eq!(decode_answer(Protocol::A2s, &ch), Answer::Challenge(9));
        assert_eq!(decode_answer(Protocol::A2s, b"junk"), Answer::Other);
    }

    #[test]
    fn protocols_parse_from_their_names() {
        assert_eq!("q3".parse(), Ok(Protocol::Q3));
        assert_eq!("a2s".parse(), Ok(Protocol::A2s));
        assert!("quake"
            .parse::<Protocol>()
            .unwrap_err()
            .contains("q3 or a2s"));
    }
}
