//! [`QueryTarget`] on a virtual clock: the schedule, matching, timeouts,
//! late replies and the A2S challenge round trip.

use super::*;
use tickpack_game::query::{query_id as q3_id, MAX_CHALLENGES};
use tickpack_wire::a2s::fixtures;

const MS: u64 = 1_000;

fn addr() -> SocketAddr {
    "127.0.0.1:27960".parse().unwrap()
}

fn q3_reply(id: &str) -> Vec<u8> {
    tickpack_q3::oob::encode(&format!(
        "infoResponse\n\\clients\\2\\g_humanplayers\\0\\sv_maxclients\\8\\mapname\\oa_dm1\\hostname\\arena\\challenge\\{id}"
    ))
}

/// A LAN server's info reply: "tp" on "lan", 3 of 12 players.
fn a2s_info() -> Vec<u8> {
    fixtures::info(&fixtures::lan_server(3))
}

fn q3_target() -> QueryTarget {
    QueryTarget::new(addr(), Protocol::Q3, ProbeSettings::DEFAULT, 0, 10_000 * MS)
}

fn a2s_target() -> QueryTarget {
    QueryTarget::new(
        addr(),
        Protocol::A2s,
        ProbeSettings::DEFAULT,
        0,
        10_000 * MS,
    )
}

/// The datagrams due at `now`.
fn sends(t: &mut QueryTarget, now: u64) -> Vec<Vec<u8>> {
    let mut out = vec![];
    let mut all = vec![];
    while t.poll_transmit(now, &mut out) {
        all.push(out.clone());
    }
    all
}

#[test]
fn queries_follow_the_polite_schedule_and_stop_at_the_end() {
    let mut t = q3_target();
    let mut times = vec![];
    let mut now = 0;
    while now < 12_000 * MS {
        if !sends(&mut t, now).is_empty() {
            times.push(now);
            t.handle(now + 3 * MS, &q3_reply(&q3_id(times.len() as u64)));
        }
        now = t.next_deadline().min(now + 500 * MS).max(now + MS);
    }
    assert_eq!(
        times,
        vec![0, 2_000 * MS, 4_000 * MS, 6_000 * MS, 8_000 * MS]
    );
    assert_eq!(t.next_deadline(), u64::MAX);
    let c = t.counts();
    assert_eq!((c.sent, c.answered, c.lost), (5, 5, 0));
    assert_eq!(t.histogram().len(), 5);
    assert_eq!(
        t.histogram().max(),
        3 * MS + 1,
        "3 ms within the histogram's precision"
    );
    assert_eq!(t.facts().unwrap().map, "oa_dm1");
    assert_eq!(t.facts().unwrap().bots, 2);
}

#[test]
fn a_q3_reply_is_matched_by_its_id_and_a_wrong_id_is_not_a_sample() {
    let mut t = q3_target();
    assert_eq!(
        sends(&mut t, 0),
        vec![b"\xff\xff\xff\xffgetinfo tp1".to_vec()]
    );
    t.handle(2 * MS, &q3_reply("tp9"));
    t.handle(2 * MS, b"garbage");
    assert_eq!(t.counts().answered, 0);
    assert_eq!(t.stray(), 2);
    t.handle(5 * MS, &q3_reply("tp1"));
    assert_eq!(t.counts().answered, 1);
    assert!(t.idle());
    // The same reply again (a duplicate) answers nothing.
    t.handle(6 * MS, &q3_reply("tp1"));
    assert_eq!(t.counts().answered, 1);
    assert_eq!(t.stray(), 3);
}

#[test]
fn a_reply_after_the_timeout_is_lost_not_a_sample() {
    let mut t = q3_target();
    sends(&mut t, 0);
    assert_eq!(t.next_deadline(), 1_000 * MS);
    // Exactly at the timeout: lost.
    t.handle(1_000 * MS, &q3_reply("tp1"));
    let c = t.counts();
    assert_eq!((c.sent, c.answered, c.lost, c.late), (1, 0, 1, 1));
    assert!(t.histogram().is_empty());
    // Timed out by the clock first, then the late reply comes.
    sends(&mut t, 2_000 * MS);
    assert!(sends(&mut t, 3_000 * MS).is_empty());
    assert_eq!(t.counts().lost, 2);
    t.handle(3_500 * MS, &q3_reply("tp2"));
    let c = t.counts();
    assert_eq!((c.sent, c.answered, c.lost, c.late), (2, 0, 2, 2));
    assert!(t.histogram().is_empty());
}

#[test]
fn the_timeout_is_capped_at_the_interval() {
    let s = ProbeSettings {
        interval_us: 200 * MS,
        timeout_us: 1_000 * MS,
    };
    assert_eq!(s.effective_timeout_us(), 200 * MS);
    let mut t = QueryTarget::new(addr(), Protocol::Q3, s, 0, 1_000 * MS);
    sends(&mut t, 0);
    assert_eq!(t.next_deadline(), 200 * MS);
    // At 200 ms the first is lost and the second goes out: one in flight.
    assert_eq!(sends(&mut t, 200 * MS).len(), 1);
    assert_eq!(t.counts().lost, 1);
}

#[test]
fn a2s_answers_the_challenge_and_times_the_resend() {
    let mut t = a2s_target();
    let first = sends(&mut t, 0);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].len(), 25, "no challenge yet");
    t.handle(10 * MS, &fixtures::challenge(77));
    assert_eq!(t.next_deadline(), 0, "the re-send is due at once");
    let again = sends(&mut t, 11 * MS);
    assert_eq!(again.len(), 1);
    assert_eq!(&again[0][25..], &77u32.to_le_bytes());
    assert_eq!(
        t.next_deadline(),
        1_011 * MS,
        "the timeout runs from the re-send"
    );
    t.handle(14 * MS, &a2s_info());
    let c = t.counts();
    assert_eq!((c.sent, c.answered, c.lost, c.challenges), (1, 1, 0, 1));
    assert_eq!(
        t.histogram().max(),
        3 * MS + 1,
        "from the re-send, not the first send"
    );
    let f = t.facts().unwrap();
    assert_eq!(
        (f.name.as_str(), f.players, f.max_players, f.bots),
        ("tp", Some(3), 12, 1)
    );
    // The next query carries the challenge it was given.
    let next = sends(&mut t, 2_000 * MS);
    assert_eq!(&next[0][25..], &77u32.to_le_bytes());
}

#[test]
fn an_a2s_server_that_only_sends_challenges_loses_the_query() {
    let mut t = a2s_target();
    sends(&mut t, 0);
    for i in 0..5u64 {
        t.handle(i * 10 * MS + 1, &fixtures::challenge(i as u32));
        sends(&mut t, i * 10 * MS + 2);
    }
    assert_eq!(t.counts().challenges, u64::from(MAX_CHALLENGES));
    assert!(sends(&mut t, 1_500 * MS).is_empty());
    let c = t.counts();
    assert_eq!((c.sent, c.answered, c.lost), (1, 0, 1));
    // A challenge with nothing in flight is stray.
    assert!(t.stray() >= 3);
}

#[test]
fn a_late_a2s_reply_is_not_given_to_the_next_query() {
    let mut t = a2s_target();
    sends(&mut t, 0);
    assert!(sends(&mut t, 1_000 * MS).is_empty());
    t.handle(1_500 * MS, &a2s_info());
    sends(&mut t, 2_000 * MS);
    t.handle(2_002 * MS, &a2s_info());
    let c = t.counts();
    assert_eq!((c.sent, c.answered, c.lost, c.late), (2, 1, 1, 1));
    assert_eq!(t.histogram().max(), 2 * MS);
}

#[test]
fn a_loop_that_fell_behind_sends_once_not_a_burst() {
    let mut t = q3_target();
    sends(&mut t, 0);
    t.handle(MS, &q3_reply("tp1"));
    // Woken 7 s late: one query, then the schedule restarts from there.
    assert_eq!(sends(&mut t, 9_000 * MS).len(), 1);
    t.handle(9_001 * MS, &q3_reply("tp2"));
    assert!(sends(&mut t, 9_500 * MS).is_empty());
    assert_eq!(t.next_deadline(), u64::MAX, "11 s is past the stop");
}

#[test]
fn finishing_an_interrupted_run_leaves_the_query_in_flight_uncounted() {
    let mut t = q3_target();
    sends(&mut t, 0);
    t.handle(MS, &q3_reply("tp1"));
    sends(&mut t, 2_000 * MS);
    t.stop_at(2_100 * MS);
    t.finish(2_200 * MS);
    let c = t.counts();
    assert_eq!((c.sent, c.answered, c.lost), (1, 1, 0));
    assert!(sends(&mut t, 4_000 * MS).is_empty());
    // At the end a query whose time is up is lost, not dropped.
    let mut t = q3_target();
    sends(&mut t, 0);
    t.finish(1_000 * MS);
    assert_eq!(t.counts().lost, 1);
    assert_eq!(t.counts().sent, 1);
}

proptest::proptest! {
    /// Whatever arrives whenever: sent = answered + lost + in flight, and
    /// every sample is below the timeout.
    #[test]
    fn the_counts_always_add_up(
        events in proptest::collection::vec((0u64..300_000, proptest::collection::vec(proptest::num::u8::ANY, 0..40), 0u8..4), 0..80),
        a2s in proptest::bool::ANY,
    ) {
        let proto = if a2s { Protocol::A2s } else { Protocol::Q3 };
        let mut t = QueryTarget::new(addr(), proto, ProbeSettings { interval_us: 100 * MS, timeout_us: 50 * MS }, 0, 5_000 * MS);
        let mut now = 0;
        for (dt, bytes, kind) in events {
            now += dt;
            sends(&mut t, now);
            let d = match (kind, a2s) {
                (0, _) => bytes,
                (1, true) => a2s_info(),
                (2, true) => fixtures::challenge(1),
                (_, true) => a2s_info(),
                (_, false) => q3_reply(&q3_id(t.session.seq())),
            };
            t.handle(now, &d);
        }
        let c = t.counts();
        let in_flight = u64::from(!t.idle());
        proptest::prop_assert_eq!(c.sent, c.answered + c.lost + in_flight);
        proptest::prop_assert_eq!(t.histogram().len(), c.answered);
        if c.answered > 0 {
            proptest::prop_assert!(t.histogram().max() <= 50 * MS + 50);
        }
        t.finish(now);
        let c = t.counts();
        proptest::prop_assert_eq!(c.sent, c.answered + c.lost);
    }
}

/// The prober read bots only from ioq3's `g_humanplayers`, so a DarkPlaces
/// server (Nexuiz), which says `bots` instead, showed 0 bots in
/// `tickpack probe` and `bench --probe` results while 8 played.
#[test]
fn darkplaces_bots_read_as_zero_a_nexuiz_answer_shows_its_bots() {
    let mut t = q3_target();
    sends(&mut t, 0);
    // As Nexuiz 2.5.2 answered `getinfo tp1` (crates/game/tests/fixtures).
    let reply = tickpack_q3::oob::encode(
        "infoResponse\n\\gamename\\Nexuiz\\modname\\data\\gameversion\\20000\\sv_maxclients\\16\\clients\\8\\bots\\8\\mapname\\ruiner\\hostname\\tickpack-test\\protocol\\3\\qcstatus\\dm:2.5.2::score!!\\challenge\\tp1",
    );
    t.handle(2 * MS, &reply);
    assert_eq!(t.counts().answered, 1);
    let f = t.facts().unwrap();
    assert_eq!((f.players, f.bots, f.max_players), (Some(8), 8, 16));
}
