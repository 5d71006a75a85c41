//! `getinfo` / `getstatus` queries and their replies, as ioq3's server
//! answers them (sv_main.c `SVC_Info`, `SVC_Status`):
//!
//! - `getinfo CHALLENGE` → `infoResponse\n` + one info string;
//! - `getstatus CHALLENGE` → `statusResponse\n` + the server info string,
//!   `\n`, then one line per client: `SCORE PING "NAME"\n` (DarkPlaces in
//!   team play: `SCORE PING TEAM "NAME"\n`).
//!
//! An info string is `\key\value\key\value...`.
//!
//! The server rate-limits connectionless requests with leaky buckets
//! (`sv_main.c`, `SVC_RateLimit`: "one packet per period msec with bucket
//! size of burst"): per source address a burst of 10, then one per second
//! (`getinfo`, `getstatus` and `getchallenge` each); and one global
//! outbound bucket, a burst of 10 then one per 100 ms, shared by all
//! askers. Requests over the limit are dropped silently, so an asker that
//! wants every reply stays under one query per second per address.

use crate::oob;

/// Which query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Info,
    Status,
}

/// The request datagram, `getinfo CHALLENGE` or `getstatus CHALLENGE`.
/// The server echoes the challenge in the reply's `challenge` key, which
/// lets the asker match replies to requests.
pub fn request(kind: Kind, challenge: &str) -> Vec<u8> {
    let word = match kind {
        Kind::Info => "getinfo",
        Kind::Status => "getstatus",
    };
    oob::encode(&format!("{word} {challenge}"))
}

/// An info string's pairs, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info(pub Vec<(String, String)>);

impl Info {
    /// Parses `\k\v\k\v`; a trailing key without a value gets "".
    pub fn parse(text: &str) -> Info {
        let text = text.strip_prefix('\\').unwrap_or(text);
        let mut parts = text.split('\\');
        let mut pairs = vec![];
        while let Some(k) = parts.next() {
            if k.is_empty() && pairs.is_empty() && text.is_empty() {
                break;
            }
            let v = parts.next().unwrap_or("");
            pairs.push((k.to_string(), v.to_string()));
        }
        Info(pairs)
    }

    /// The value of `key` (case-insensitive, as the engine compares).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }
}

/// One client line of a status reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusPlayer {
    pub score: i32,
    /// The server's own ping for this client, in milliseconds (999 while
    /// connecting; 0 for bots).
    pub ping: i32,
    pub name: String,
}

/// A decoded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Info(Info),
    Status {
        info: Info,
        players: Vec<StatusPlayer>,
    },
}

impl Reply {
    /// The server info string of either reply.
    pub fn info(&self) -> &Info {
        match self {
            Reply::Info(i) | Reply::Status { info: i, .. } => i,
        }
    }
}

/// Why a datagram is not a query reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("not a connectionless datagram")]
    NotOob,
    #[error("not a query reply (command {0:?})")]
    Other(String),
}

/// Decodes an `infoResponse` or `statusResponse` datagram. Player lines
/// that do not parse are skipped.
pub fn decode(datagram: &[u8]) -> Result<Reply, QueryError> {
    let payload = oob::payload(datagram).ok_or(QueryError::NotOob)?;
    let (cmd, rest) = oob::command(payload);
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.split('\n');
    let info = Info::parse(lines.next().unwrap_or(""));
    match cmd.as_str() {
        "infoResponse" => Ok(Reply::Info(info)),
        "statusResponse" => {
            let players = lines.filter_map(parse_player).collect();
            Ok(Reply::Status { info, players })
        }
        _ => Err(QueryError::Other(cmd)),
    }
}

/// `SCORE PING "NAME"`, or `SCORE PING TEAM "NAME"` (DarkPlaces in team
/// play, netconn.c `NetConn_BuildStatusResponse`; the team is not kept).
fn parse_player(line: &str) -> Option<StatusPlayer> {
    let mut it = line.splitn(3, ' ');
    let score = it.next()?.parse().ok()?;
    let ping = it.next()?.parse().ok()?;
    let mut name = it.next()?.trim();
    if !name.starts_with('"') {
        let (team, rest) = name.split_once(' ')?;
        team.parse::<i32>().ok()?;
        name = rest.trim();
    }
    let name = name.strip_prefix('"')?.strip_suffix('"')?;
    Some(StatusPlayer {
        score,
        ping,
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply captured from the Debian openarena-server (ioq3 1.36), cut.
    const INFO: &[u8] = b"\xff\xff\xff\xffinfoResponse\n\\voip\\opus\\g_needpass\\0\\pure\\0\\gametype\\0\\sv_maxclients\\8\\g_humanplayers\\0\\clients\\0\\mapname\\oa_dm1\\hostname\\noname\\protocol\\71\\gamename\\Quake3Arena\\challenge\\xyz";

    #[test]
    fn a_captured_info_reply_decodes() {
        let r = decode(INFO).unwrap();
        let Reply::Info(info) = &r else {
            panic!("{r:?}")
        };
        assert_eq!(info.get("mapname"), Some("oa_dm1"));
        assert_eq!(info.get("CHALLENGE"), Some("xyz"));
        assert_eq!(info.get("protocol"), Some("71"));
        assert_eq!(info.0.len(), 12);
    }

    #[test]
    fn a_status_reply_lists_its_players() {
        let d = oob::encode(
            "statusResponse\n\\mapname\\oa_dm1\\sv_maxclients\\16\n3 48 \"tp 1\"\n0 0 \"Angelyss\"\nbroken\n",
        );
        let r = decode(&d).unwrap();
        let Reply::Status { info, players } = r else {
            panic!()
        };
        assert_eq!(info.get("sv_maxclients"), Some("16"));
        assert_eq!(
            players,
            vec![
                StatusPlayer {
                    score: 3,
                    ping: 48,
                    name: "tp 1".into()
                },
                StatusPlayer {
                    score: 0,
                    ping: 0,
                    name: "Angelyss".into()
                },
            ]
        );
    }

    /// A DarkPlaces server in team play writes `SCORE PING TEAM "NAME"`
    /// (here as Nexuiz 2.5.2 sent it in team deathmatch); the decoder took
    /// only three fields and dropped every such line, so a team game's
    /// roster came back empty.
    #[test]
    fn darkplaces_team_field_a_team_play_status_line_is_not_dropped() {
        let d = oob::encode(
            "statusResponse\n\\clients\\2\n0 0 1 \"[BOT]Sensible\"\n-1 35 2 \"tp 1\"\n",
        );
        let Reply::Status { players, .. } = decode(&d).unwrap() else {
            panic!()
        };
        let got: Vec<(i32, i32, &str)> = players
            .iter()
            .map(|p| (p.score, p.ping, p.name.as_str()))
            .collect();
        assert_eq!(got, vec![(0, 0, "[BOT]Sensible"), (-1, 35, "tp 1")]);
        // A word that is not a team number is still not a player line.
        let d = oob::encode("statusResponse\n\\a\\b\n0 0 red \"x\"\n");
        let Reply::Status { players, .. } = decode(&d).unwrap() else {
            panic!()
        };
        assert!(players.is_empty());
    }

    #[test]
    fn the_request_carries_the_challenge() {
        assert_eq!(request(Kind::Status, "42"), b"\xff\xff\xff\xffgetstatus 42");
        assert_eq!(request(Kind::Info, "a"), b"\xff\xff\xff\xffgetinfo a");
    }

    #[test]
    fn other_datagrams_are_refused() {
        assert_eq!(decode(b"\x01\x00\x00\x00"), Err(QueryError::NotOob));
        assert!(
            matches!(decode(&oob::encode("print\nhi")), Err(QueryError::Other(c)) if c == "print")
        );
        assert_eq!(Info::parse(""), Info(vec![]));
    }

    proptest::proptest! {
        #[test]
        fn any_datagram_decodes_or_is_refused(d in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = decode(&d);
            let mut with_marker = oob::MARKER.to_vec();
            with_marker.extend_from_slice(b"statusResponse\n");
            with_marker.extend_from_slice(&d);
            let _ = decode(&with_marker);
        }
    }
}
