//! The query layer against answers recorded from real servers
//! (tests/fixtures/README.md says which), and A2S with its challenge.

use std::time::Duration;

use tickpack_game::query::{Event, Facts, Heard, Player, Query, Schedule, Session};
use tickpack_wire::a2s::{self, fixtures};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn answer(query: Query, name: &str) -> (Option<String>, Facts) {
    match query.decode(&fixture(name)) {
        Heard::Answer { id, facts } => (id, facts),
        other => panic!("{name}: {other:?}"),
    }
}

fn names(f: &Facts) -> Vec<String> {
    f.roster.iter().flatten().map(Player::clean_name).collect()
}

const SCHEDULE: Schedule = Schedule {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

#[test]
fn openarena_getinfo_gives_counts_and_bots_from_the_humans() {
    let (id, f) = answer(Query::Q3Info, "openarena/getinfo.bin");
    assert_eq!(id.as_deref(), Some("tp1"));
    assert_eq!(
        f,
        Facts {
            name: "tickpack-test".into(),
            map: "oa_dm1".into(),
            players: 3,
            max_players: 16,
            bots: Some(3),
            roster: None,
        }
    );
    assert_eq!(f.humans(), Some(0));
}

#[test]
fn openarena_getstatus_lists_the_players_and_names_the_server_sv_hostname() {
    let (id, f) = answer(Query::Q3Status, "openarena/getstatus.bin");
    assert_eq!(id.as_deref(), Some("tp2"));
    assert_eq!(
        (f.name.as_str(), f.map.as_str(), f.players, f.max_players),
        ("tickpack-test", "oa_dm1", 3, 16)
    );
    assert_eq!(f.bots, None, "ioq3's getstatus does not say");
    assert_eq!(names(&f), ["Sorceress", "Sergei", "Jenna"]);
    assert!(f.roster.unwrap().iter().all(|p| p.ping == 0), "bots");
}

/// The prober read bots only from ioq3's `g_humanplayers` and reported 0
/// for a DarkPlaces server with 8 bots (the host reported none at all):
/// DarkPlaces says `bots` itself, and its `clients` counts them too.
#[test]
fn probe_darkplaces_bots_read_as_zero_nexuiz_getinfo_counts_its_8_bots() {
    let (id, f) = answer(Query::Q3Info, "darkplaces/getinfo.bin");
    assert_eq!(id.as_deref(), Some("tp1"), "the challenge echoed exactly");
    assert_eq!(
        f,
        Facts {
            name: "tickpack-test".into(),
            map: "ruiner".into(),
            players: 8,
            max_players: 16,
            bots: Some(8),
            roster: None,
        }
    );
    assert_eq!(f.humans(), Some(0));
}

#[test]
fn nexuiz_getstatus_lists_its_8_bots_with_ping_0() {
    let (id, f) = answer(Query::Q3Status, "darkplaces/getstatus.bin");
    assert_eq!(id.as_deref(), Some("tp2"));
    assert_eq!((f.players, f.bots, f.max_players), (8, Some(8), 16));
    assert_eq!(
        names(&f),
        [
            "[BOT]Death",
            "[BOT]Hellfire",
            "[BOT]Pegasus",
            "[BOT]Lion",
            "[BOT]Toxic",
            "[BOT]Gator",
            "[BOT]Eureka",
            "[BOT]Dominator"
        ]
    );
    let roster = f.roster.unwrap();
    assert!(roster.iter().all(|p| p.ping == 0));
    let scores: Vec<i32> = roster.iter().map(|p| p.score).collect();
    assert_eq!(scores, [0, 0, 0, 1, 1, 0, 1, 0]);
}

#[test]
fn nexuiz_in_team_play_lists_its_players_despite_the_team_field() {
    let (id, f) = answer(Query::Q3Status, "darkplaces/getstatus_teamplay.bin");
    assert_eq!(id.as_deref(), Some("tp3"));
    assert_eq!((f.players, f.bots), (4, Some(4)));
    assert_eq!(
        names(&f),
        [
            "[BOT]Sensible",
            "[BOT]Delirium",
            "[BOT]Hellfire",
            "[BOT]Resurrection"
        ]
    );
}

#[test]
fn an_answer_of_the_other_kind_is_not_ours() {
    for (query, name) in [
        (Query::Q3Status, "openarena/getinfo.bin"),
        (Query::Q3Info, "openarena/getstatus.bin"),
        (Query::Q3Status, "darkplaces/getinfo.bin"),
        (Query::A2sInfo, "darkplaces/getstatus.bin"),
    ] {
        assert_eq!(query.decode(&fixture(name)), Heard::NotOurs, "{name}");
    }
}

/// A session's first query is `tp1`: the recorded answers to `getinfo tp1`
/// answer it, and a late copy is not counted again.
#[test]
fn recorded_answers_answer_a_sessions_first_query() {
    for name in ["openarena/getinfo.bin", "darkplaces/getinfo.bin"] {
        let mut s = Session::new(Query::Q3Info, SCHEDULE, Duration::ZERO);
        let mut out = vec![];
        assert!(s.poll_transmit(Duration::ZERO, &mut out));
        assert_eq!(out, b"\xff\xff\xff\xffgetinfo tp1");
        let at = Duration::from_micros(420);
        match s.handle(at, &fixture(name)) {
            Some(Event::Answered { rtt, facts }) => {
                assert_eq!(rtt, at, "{name}");
                assert_eq!(facts.max_players, 16);
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(matches!(
            s.handle(at * 2, &fixture(name)),
            Some(Event::Unmatched { .. })
        ));
        assert_eq!((s.counts().answered, s.counts().stray), (1, 1));
    }
}

/// What `tickpack server` answers, built with the wire encoders: the
/// challenge first, then the info to the query sent again with it.
#[test]
fn a2s_is_challenged_then_answered_with_its_counts() {
    let challenge = fixtures::challenge(0x5eed_0001);
    let info = fixtures::info(&fixtures::TICKPACK_ARENA);
    let mut s = Session::new(Query::A2sInfo, SCHEDULE, Duration::ZERO);
    let mut out = vec![];
    assert!(s.poll_transmit(Duration::ZERO, &mut out));
    assert_eq!(
        a2s::Query::decode(&out),
        Ok(a2s::Query::Info { challenge: None })
    );
    assert_eq!(
        s.handle(Duration::from_millis(1), &challenge),
        Some(Event::Challenged)
    );
    assert!(s.poll_transmit(Duration::from_millis(2), &mut out));
    assert_eq!(
        a2s::Query::decode(&out),
        Ok(a2s::Query::Info {
            challenge: Some(0x5eed_0001)
        })
    );
    match s.handle(Duration::from_millis(5), &info) {
        Some(Event::Answered { rtt, facts }) => {
            assert_eq!(rtt, Duration::from_millis(3));
            assert_eq!(
                facts,
                Facts {
                    name: "tickpack".into(),
                    map: "arena".into(),
                    players: 7,
                    max_players: 32,
                    bots: Some(5),
                    roster: None,
                }
            );
            assert_eq!(facts.humans(), Some(2));
        }
        other => panic!("{other:?}"),
    }
}
