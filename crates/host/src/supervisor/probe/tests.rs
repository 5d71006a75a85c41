//! [`Probe`] on a virtual clock: replies, round trips, the A2S challenge,
//! and the defects of the host's own query copy it replaced.

use super::*;
use tickpack_q3::oob;
use tickpack_wire::a2s;

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The datagrams due at `now`.
fn sends(p: &mut Probe, now: Duration) -> Vec<Vec<u8>> {
    let mut out = vec![];
    let mut all = vec![];
    while p.poll_transmit(now, &mut out) {
        all.push(out.clone());
    }
    all
}

fn a2s_info(players: u8, bots: u8) -> Vec<u8> {
    let mut info = vec![];
    a2s::encode_info(
        &a2s::ServerInfo {
            name: "tp",
            map: "arena",
            folder: "tickpack",
            game: "tickpack",
            app_id: 0,
            players,
            max_players: 12,
            bots,
            version: "0",
            port: 27015,
            keywords: "",
        },
        &mut info,
    );
    info
}

fn a2s_challenge(c: u32) -> Vec<u8> {
    let mut out = vec![];
    a2s::encode_challenge(c, &mut out);
    out
}

#[test]
fn a_q3_reply_to_the_pending_request_gives_map_players_and_its_round_trip() {
    let mut p = Probe::new(Health::Q3);
    p.reset(ms(1));
    assert_eq!(
        sends(&mut p, ms(1)),
        vec![b"\xff\xff\xff\xffgetinfo tp1".to_vec()]
    );
    let reply = oob::encode(
        "infoResponse\n\\g_humanplayers\\2\\clients\\12\\mapname\\oa_dm1\\sv_maxclients\\16\\challenge\\tp1",
    );
    assert!(p.handle(us(1_250), &reply));
    assert_eq!(p.map.as_deref(), Some("oa_dm1"));
    assert_eq!((p.players, p.bots), (Some(12), Some(10)));
    let l = p.latency().unwrap();
    assert_eq!((l.count, l.max), (1, 250));
    // A late reply to an old request is a sign of life, not a round trip.
    assert_eq!(sends(&mut p, ms(2_001)).len(), 1);
    assert!(p.handle(ms(2_009), &reply));
    assert_eq!(p.latency().unwrap().count, 1);
    // Anything else is ignored.
    assert!(!p.handle(ms(2_010), &oob::encode("print\nhi")));
    assert!(!p.handle(ms(2_010), b"\x01\x02"));
    p.reset(ms(3_000));
    assert_eq!((p.map.as_deref(), p.players), (None, None));
}

#[test]
fn an_a2s_challenge_is_echoed_at_once_then_the_info_is_read() {
    let mut p = Probe::new(Health::A2s);
    p.reset(Duration::ZERO);
    let first = sends(&mut p, Duration::ZERO);
    assert_eq!(
        a2s::Query::decode(&first[0]),
        Ok(a2s::Query::Info { challenge: None })
    );
    // Received at 100 us, asked again at 150 us (the supervisor's loop).
    assert!(p.handle(us(100), &a2s_challenge(77)), "a sign of life");
    let again = sends(&mut p, us(150));
    assert_eq!(
        again
            .iter()
            .map(|d| a2s::Query::decode(d))
            .collect::<Vec<_>>(),
        vec![Ok(a2s::Query::Info {
            challenge: Some(77)
        })],
        "the query again, with the challenge"
    );
    assert!(p.latency().is_none(), "a challenge is not the answer");
    assert!(p.handle(us(400), &a2s_info(5, 2)));
    assert_eq!(
        p.latency().unwrap().max,
        250,
        "from the query with the challenge"
    );
    assert_eq!((p.players, p.bots), (Some(5), Some(2)));
    assert_eq!(p.map.as_deref(), Some("arena"));
    // The next query carries the kept challenge.
    let next = sends(&mut p, QUERY_INTERVAL);
    assert_eq!(
        a2s::Query::decode(&next[0]),
        Ok(a2s::Query::Info {
            challenge: Some(77)
        })
    );
}

#[test]
fn nothing_is_sent_for_a_check_that_is_no_query_or_before_the_server_started() {
    let mut p = Probe::new(Health::TickpackStats);
    p.reset(Duration::ZERO);
    assert!(sends(&mut p, ms(5_000)).is_empty());
    let mut p = Probe::new(Health::Q3);
    assert!(sends(&mut p, ms(5_000)).is_empty(), "not started");
    assert!(!p.handle(ms(5_000), &oob::encode("infoResponse\n\\clients\\1")));
}

/// The host's own copy read `clients` and `g_humanplayers` as `u8`
/// without trimming: a padded count, or one above 255, made the players
/// and bots unknown in `host status`.
#[test]
fn host_u8_clients_parse_padded_and_large_counts_are_read() {
    let mut p = Probe::new(Health::Q3);
    p.reset(Duration::ZERO);
    sends(&mut p, Duration::ZERO);
    let reply =
        oob::encode("infoResponse\n\\clients\\ 12\\g_humanplayers\\2 \\mapname\\m\\challenge\\tp1");
    assert!(p.handle(ms(1), &reply));
    assert_eq!((p.players, p.bots), (Some(12), Some(10)));
    sends(&mut p, QUERY_INTERVAL);
    let reply = oob::encode("infoResponse\n\\clients\\300\\bots\\300\\challenge\\tp2");
    assert!(p.handle(QUERY_INTERVAL + ms(1), &reply));
    assert_eq!(
        (p.players, p.bots),
        (Some(255), Some(255)),
        "saturated to the status's u8"
    );
}

/// The host's own copy read bots as `clients` minus ioq3's
/// `g_humanplayers` only: a DarkPlaces server (Nexuiz), which says `bots`
/// itself, showed no bots in `host status`.
#[test]
fn host_darkplaces_bots_unknown_a_nexuiz_answer_gives_its_bots() {
    let mut p = Probe::new(Health::Q3);
    p.reset(Duration::ZERO);
    sends(&mut p, Duration::ZERO);
    let reply = oob::encode(
        "infoResponse\n\\gamename\\Nexuiz\\sv_maxclients\\16\\clients\\8\\bots\\8\\mapname\\ruiner\\hostname\\tickpack-test\\protocol\\3\\challenge\\tp1",
    );
    assert!(p.handle(ms(1), &reply));
    assert_eq!((p.players, p.bots), (Some(8), Some(8)));
}

/// The host's own copy sent the query again for every `S2C_CHALLENGE` it
/// got: a server answering only with challenges kept the supervisor
/// sending at the speed of the loopback, each call counted a sign of life.
#[test]
fn host_a2s_endless_challenges_a_query_goes_again_at_most_twice() {
    let mut p = Probe::new(Health::A2s);
    p.reset(Duration::ZERO);
    sends(&mut p, Duration::ZERO);
    let mut resends = 0;
    let mut alive = 0;
    for i in 0..10u64 {
        alive += usize::from(p.handle(us(10 * i + 1), &a2s_challenge(i as u32)));
        resends += sends(&mut p, us(10 * i + 2)).len();
    }
    assert_eq!(
        (resends, alive),
        (2, 2),
        "MAX_CHALLENGES re-sends, then left to time out"
    );
    assert!(p.latency().is_none());
}
