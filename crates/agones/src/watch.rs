//! What the sidecar asks a game it did not write, and what an answer says,
//! sans-I/O: [`encode_query`] and [`decode_answer`].
//!
//! - OpenArena (and other ioquake3 games): `getstatus`, whose answer lists
//!   every client by name (bots too: the reply does not tell them apart).
//!   ioq3 answers one `getstatus` a second per address, the sidecar's pace.
//! - The reference server: `A2S_INFO` (with its challenge round trip, over
//!   [`tickpack_probe::protocol`]); it gives a count, so the players are
//!   named `player-1`, `player-2`, ... (humans only: bots are left out).

use tickpack_probe::protocol::{self, Answer, Protocol};
use tickpack_q3::query as q3;

/// A game the sidecar can watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Game {
    /// An OpenArena (ioquake3) server: `getstatus`.
    OpenArena,
    /// tickpack's reference server: `A2S_INFO`.
    Reference,
}

impl Game {
    /// As typed after `--game`.
    pub fn as_str(self) -> &'static str {
        match self {
            Game::OpenArena => "openarena",
            Game::Reference => "reference",
        }
    }
}

/// What a datagram from the game says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// The game answered: it is alive, and these play.
    Alive { players: Vec<String> },
    /// A2S: ask again with this challenge.
    Challenge(u32),
    /// Not an answer to the sidecar's query.
    Other,
}

/// The query datagram (`challenge`: the A2S challenge, if the game asked).
pub fn encode_query(game: Game, seq: u64, challenge: Option<u32>, out: &mut Vec<u8>) {
    match game {
        Game::OpenArena => {
            out.extend_from_slice(&q3::request(q3::Kind::Status, &protocol::q3_id(seq)))
        }
        Game::Reference => protocol::encode_request(Protocol::A2s, seq, challenge, out),
    }
}

/// Reads a datagram from the game; never panics, whatever the bytes.
pub fn decode_answer(game: Game, datagram: &[u8]) -> Heard {
    match game {
        Game::OpenArena => match q3::decode(datagram) {
            Ok(q3::Reply::Status { players, .. }) => Heard::Alive {
                players: players.into_iter().map(|p| strip_colors(&p.name)).collect(),
            },
            _ => Heard::Other,
        },
        Game::Reference => match protocol::decode_answer(Protocol::A2s, datagram) {
            Answer::Info { facts, .. } => Heard::Alive {
                players: (1..=facts.players.saturating_sub(facts.bots))
                    .map(|i| format!("player-{i}"))
                    .collect(),
            },
            Answer::Challenge(c) => Heard::Challenge(c),
            Answer::Other => Heard::Other,
        },
    }
}

/// A Quake III name without its colour codes (`^1Red` is `Red`), as
/// ioq3's `Q_CleanStr` cleans it.
fn strip_colors(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut it = name.chars().peekable();
    while let Some(c) = it.next() {
        if c == '^' && it.peek().is_some_and(|n| *n != '^') {
            it.next();
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_wire::a2s;

    #[test]
    fn an_openarena_status_reply_gives_the_names_without_colours() {
        let mut q = vec![];
        encode_query(Game::OpenArena, 3, None, &mut q);
        assert_eq!(q, b"\xff\xff\xff\xffgetstatus tp3");
        let reply = b"\xff\xff\xff\xffstatusResponse\n\\sv_maxclients\\8\\challenge\\tp3\n5 20 \"^1Sarge\"\n0 999 \"tp-1\"\n";
        assert_eq!(
            decode_answer(Game::OpenArena, reply),
            Heard::Alive {
                players: vec!["Sarge".into(), "tp-1".into()]
            }
        );
        let empty = b"\xff\xff\xff\xffstatusResponse\n\\sv_maxclients\\8\n";
        assert_eq!(
            decode_answer(Game::OpenArena, empty),
            Heard::Alive { players: vec![] }
        );
        // An infoResponse is not what was asked.
        let info = b"\xff\xff\xff\xffinfoResponse\n\\clients\\0";
        assert_eq!(decode_answer(Game::OpenArena, info), Heard::Other);
        assert_eq!(decode_answer(Game::OpenArena, b"junk"), Heard::Other);
    }

    #[test]
    fn a_reference_info_reply_counts_humans_and_a_challenge_is_passed_on() {
        let mut ch = vec![];
        a2s::encode_challenge(77, &mut ch);
        assert_eq!(decode_answer(Game::Reference, &ch), Heard::Challenge(77));
        let mut q = vec![];
        encode_query(Game::Reference, 1, Some(77), &mut q);
        assert_eq!(&q[q.len() - 4..], &77u32.to_le_bytes());
        let mut info = vec![];
        a2s::encode_info(
            &a2s::ServerInfo {
                name: "s",
                map: "m",
                folder: "f",
                game: "g",
                app_id: 0,
                players: 5,
                max_players: 12,
                bots: 3,
                version: "1",
                port: 27015,
                keywords: "",
            },
            &mut info,
        );
        assert_eq!(
            decode_answer(Game::Reference, &info),
            Heard::Alive {
                players: vec!["player-1".into(), "player-2".into()]
            }
        );
        assert_eq!(decode_answer(Game::Reference, b"\xff"), Heard::Other);
    }

    #[test]
    fn colour_codes_are_stripped_as_ioq3_strips_them() {
        assert_eq!(strip_colors("^1R^7ed"), "Red");
        // ioq3's Q_CleanStr: a caret before a caret is kept, the second
        // caret starts a colour code.
        assert_eq!(strip_colors("a^^b"), "a^");
        assert_eq!(strip_colors("end^"), "end^");
    }
}
