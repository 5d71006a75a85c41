//! The Quake III family's query (ioquake3, OpenArena, and DarkPlaces
//! games such as Nexuiz, which answer the same way) over the byte codec
//! of `tickpack_q3::query`: what to send, and the facts in an answer.
//!
//! - Request: `getinfo ID` or `getstatus ID`. ioq3 and DarkPlaces echo
//!   `ID` as the answer's `challenge` key (DarkPlaces exactly, everything
//!   after the space), which matches an answer to its query.
//! - `infoResponse` (ioq3 `SVC_Info`): `hostname`, `mapname`,
//!   `sv_maxclients` (less the private slots), `clients` (humans and bots),
//!   and since ioq3 1.36 `g_humanplayers`. DarkPlaces writes `bots`
//!   instead (netconn.c, `NetConn_BuildStatusResponse`).
//! - `statusResponse` (ioq3 `SVC_Status`): the server's info string, then
//!   one `SCORE PING "NAME"` line per client (DarkPlaces in team play puts
//!   a team number before the name). ioq3's info string here names the
//!   server `sv_hostname` and has neither `clients` nor a bot count: the
//!   players are the lines, and which of them are bots is not said (both
//!   engines give bots ping 0, but an ioq3 human on loopback can have 0
//!   too).
//!
//! Every count is read with [`count`]: trimmed, `u32`, saturating.
//!
//! Rate limits (both engines drop what is over them, silently): ioq3
//! answers one source address once a second after a burst of 10;
//! DarkPlaces one `getinfo` or `getstatus` a second per source address,
//! no burst (`net_getstatusfloodblockingtimeout`).

use tickpack_q3::query::{self as codec, Info, Kind, Reply};

use super::facts::{Facts, Player};
use super::heard::Heard;
use super::number::count;

/// Appends `getinfo ID` or `getstatus ID`.
pub(crate) fn encode(kind: Kind, id: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&codec::request(kind, id));
}

/// Reads a datagram as the answer to a `kind` query: an `infoResponse`
/// answers `getinfo` only, a `statusResponse` `getstatus` only.
pub(crate) fn decode(kind: Kind, datagram: &[u8]) -> Heard {
    match (kind, codec::decode(datagram)) {
        (Kind::Info, Ok(Reply::Info(info))) => answer(&info, None),
        (Kind::Status, Ok(Reply::Status { info, players })) => {
            let roster = players
                .into_iter()
                .map(|p| Player {
                    name: p.name,
                    score: p.score,
                    ping: p.ping,
                })
                .collect();
            answer(&info, Some(roster))
        }
        _ => Heard::NotOurs,
    }
}

fn answer(info: &Info, roster: Option<Vec<Player>>) -> Heard {
    let num = |k: &str| info.get(k).and_then(count);
    let players = num("clients")
        .or_else(|| {
            roster
                .as_ref()
                .map(|r| r.len().try_into().unwrap_or(u32::MAX))
        })
        .unwrap_or(0);
    let bots = num("bots").or_else(|| num("g_humanplayers").map(|h| players.saturating_sub(h)));
    let text = |k: &str| info.get(k).map(str::to_string);
    Heard::Answer {
        id: text("challenge"),
        facts: Facts {
            name: text("hostname")
                .or_else(|| text("sv_hostname"))
                .unwrap_or_default(),
            map: text("mapname").unwrap_or_default(),
            players,
            max_players: num("sv_maxclients").unwrap_or(0),
            bots,
            roster,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_q3::oob;

    fn facts(kind: Kind, text: &str) -> (Option<String>, Facts) {
        match decode(kind, &oob::encode(text)) {
            Heard::Answer { id, facts } => (id, facts),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_request_carries_the_id() {
        let mut out = vec![];
        encode(Kind::Info, "tp7", &mut out);
        assert_eq!(out, b"\xff\xff\xff\xffgetinfo tp7");
        out.clear();
        encode(Kind::Status, "tp8", &mut out);
        assert_eq!(out, b"\xff\xff\xff\xffgetstatus tp8");
    }

    #[test]
    fn an_ioq3_info_answer_gives_its_id_and_bots_from_the_humans() {
        let (id, f) = facts(
            Kind::Info,
            "infoResponse\n\\g_humanplayers\\1\\sv_maxclients\\8\\clients\\4\\mapname\\oa_dm1\\hostname\\arena\\challenge\\tp7",
        );
        assert_eq!(id.as_deref(), Some("tp7"));
        assert_eq!(
            f,
            Facts {
                name: "arena".into(),
                map: "oa_dm1".into(),
                players: 4,
                max_players: 8,
                bots: Some(3),
                roster: None,
            }
        );
    }

    #[test]
    fn an_answer_of_the_other_kind_is_not_ours() {
        let info = oob::encode("infoResponse\n\\clients\\0");
        let status = oob::encode("statusResponse\n\\sv_maxclients\\8\n");
        assert_eq!(decode(Kind::Status, &info), Heard::NotOurs);
        assert_eq!(decode(Kind::Info, &status), Heard::NotOurs);
        assert_eq!(
            decode(Kind::Info, &oob::encode("print\nno")),
            Heard::NotOurs
        );
        assert_eq!(decode(Kind::Info, b"junk"), Heard::NotOurs);
    }

    /// The host's old health check read `clients` as a `u8` without
    /// trimming: a padded count or one above 255 made the players unknown.
    #[test]
    fn host_u8_clients_parse_a_padded_or_large_count_is_still_a_count() {
        let (_, f) = facts(
            Kind::Info,
            "infoResponse\n\\clients\\ 12\\g_humanplayers\\2 \\sv_maxclients\\300",
        );
        assert_eq!((f.players, f.bots, f.max_players), (12, Some(10), 300));
        let (_, f) = facts(Kind::Info, "infoResponse\n\\clients\\300\\bots\\299");
        assert_eq!((f.players, f.humans()), (300, Some(1)));
    }

    #[test]
    fn an_ioq3_status_answer_counts_its_lines_and_does_not_guess_the_bots() {
        let (id, f) = facts(
            Kind::Status,
            "statusResponse\n\\challenge\\tp2\\sv_hostname\\arena\\sv_maxclients\\16\\mapname\\oa_dm1\n3 48 \"^1tp 1\"\n0 0 \"Angelyss\"\n",
        );
        assert_eq!(id.as_deref(), Some("tp2"));
        assert_eq!((f.name.as_str(), f.players, f.bots), ("arena", 2, None));
        let roster = f.roster.unwrap();
        assert_eq!(roster[0].clean_name(), "tp 1");
        assert_eq!((roster[0].score, roster[0].ping), (3, 48));
        assert_eq!(roster[1].name, "Angelyss");
    }
}
