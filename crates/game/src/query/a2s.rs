//! Valve's `A2S_INFO` over the byte codec of `tickpack_wire::a2s`: what to
//! send (with the challenge when the server asked for one), and the facts
//! in an answer.
//!
//! A server that wants a challenge (every Source server since December
//! 2020, and tickpack's reference server) answers a request without one
//! with `S2C_CHALLENGE`; the asker sends the request again with that
//! number (and may keep it for later requests; a server that wants a new
//! one says so again). Answers carry no id: which query an answer belongs
//! to is the session's business (one in flight at a time).
//!
//! The counts are single bytes on the wire (`players`, `max_players`,
//! `bots`), so they need no text rule; `players` counts bots too, as
//! Source reports it.

use tickpack_wire::a2s::{Query, Reply};

use super::facts::Facts;
use super::heard::Heard;

/// Appends `A2S_INFO`, with `challenge` if the server gave one.
pub(crate) fn encode(challenge: Option<u32>, out: &mut Vec<u8>) {
    Query::Info { challenge }.encode(out);
}

/// Reads a datagram: the `A2S_INFO` answer, `S2C_CHALLENGE`, or not ours
/// (split or GoldSource answers included).
pub(crate) fn decode(datagram: &[u8]) -> Heard {
    match Reply::decode(datagram) {
        Ok(Reply::Challenge(c)) => Heard::Challenge(c),
        Ok(Reply::Info(i)) => Heard::Answer {
            id: None,
            facts: Facts {
                name: i.name,
                map: i.map,
                players: u32::from(i.players),
                max_players: u32::from(i.max_players),
                bots: Some(u32::from(i.bots)),
                roster: None,
            },
        },
        Err(_) => Heard::NotOurs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_wire::a2s;

    #[test]
    fn the_request_carries_the_challenge_when_there_is_one() {
        let mut out = vec![];
        encode(None, &mut out);
        assert_eq!(out.len(), 25);
        assert_eq!(Query::decode(&out), Ok(Query::Info { challenge: None }));
        out.clear();
        encode(Some(9), &mut out);
        assert_eq!(&out[25..], &9u32.to_le_bytes());
    }

    #[test]
    fn a_challenge_and_junk_are_told_apart() {
        let mut ch = vec![];
        a2s::encode_challenge(9, &mut ch);
        assert_eq!(decode(&ch), Heard::Challenge(9));
        assert_eq!(decode(b"junk"), Heard::NotOurs);
        assert_eq!(decode(b"\xff"), Heard::NotOurs);
    }
}
