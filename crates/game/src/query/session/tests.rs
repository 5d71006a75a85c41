//! [`Session`] on a virtual clock (milliseconds from zero): answered,
//! challenged then answered, timed out, late and stray answers, the
//! schedule, the end of a run.

use super::*;
use tickpack_q3::oob;
use tickpack_wire::a2s::{self, fixtures};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const EVERY_2S: Schedule = Schedule {
    interval: Duration::from_secs(2),
    timeout: Duration::from_secs(1),
};

fn q3_info(id: &str) -> Vec<u8> {
    oob::encode(&format!(
        "infoResponse\n\\clients\\2\\g_humanplayers\\0\\sv_maxclients\\8\\mapname\\oa_dm1\\hostname\\arena\\challenge\\{id}"
    ))
}

/// A LAN server's info reply: "tp" on "lan", `players` of 12.
fn a2s_info(players: u8) -> Vec<u8> {
    fixtures::info(&fixtures::lan_server(players))
}

/// The datagrams due at `now`, after the timeout is handled.
fn sends(s: &mut Session, now: Duration) -> Vec<Vec<u8>> {
    s.handle_timeout(now);
    let mut out = vec![];
    let mut all = vec![];
    while s.poll_transmit(now, &mut out) {
        all.push(out.clone());
    }
    all
}

fn rtt(e: Option<Event>) -> Duration {
    match e {
        Some(Event::Answered { rtt, .. }) => rtt,
        other => panic!("not an answer: {other:?}"),
    }
}

#[test]
fn a_q3_query_is_answered_with_its_round_trip_and_facts() {
    let mut s = Session::new(Query::Q3Info, EVERY_2S, ms(0));
    assert_eq!(s.next_timeout(), Some(ms(0)));
    assert_eq!(
        sends(&mut s, ms(0)),
        vec![b"\xff\xff\xff\xffgetinfo tp1".to_vec()]
    );
    assert_eq!(s.next_timeout(), Some(ms(1_000)), "its timeout");
    match s.handle(ms(3), &q3_info("tp1")) {
        Some(Event::Answered { rtt, facts }) => {
            assert_eq!(rtt, ms(3));
            assert_eq!(
                (facts.map.as_str(), facts.players, facts.bots),
                ("oa_dm1", 2, Some(2))
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(s.idle());
    assert_eq!(s.next_timeout(), Some(ms(2_000)), "the next query");
    let c = s.counts();
    assert_eq!((c.sent, c.answered, c.timed_out, c.stray), (1, 1, 0, 0));
}

#[test]
fn an_a2s_query_is_challenged_then_answered_timed_from_the_resend() {
    let mut s = Session::new(Query::A2sInfo, EVERY_2S, ms(0));
    let first = sends(&mut s, ms(0));
    assert_eq!(
        a2s::Query::decode(&first[0]),
        Ok(a2s::Query::Info { challenge: None })
    );
    assert_eq!(
        s.handle(ms(10), &fixtures::challenge(77)),
        Some(Event::Challenged)
    );
    assert_eq!(
        s.next_timeout(),
        Some(Duration::ZERO),
        "the re-send is due at once"
    );
    let again = sends(&mut s, ms(11));
    assert_eq!(
        a2s::Query::decode(&again[0]),
        Ok(a2s::Query::Info {
            challenge: Some(77)
        })
    );
    assert_eq!(
        s.next_timeout(),
        Some(ms(1_011)),
        "the timeout runs from the re-send"
    );
    assert_eq!(
        rtt(s.handle(ms(14), &a2s_info(3))),
        ms(3),
        "from the re-send"
    );
    let c = s.counts();
    assert_eq!((c.sent, c.answered, c.challenges), (1, 1, 1));
    // The next query carries the challenge it was given.
    let next = sends(&mut s, ms(2_000));
    assert_eq!(
        a2s::Query::decode(&next[0]),
        Ok(a2s::Query::Info {
            challenge: Some(77)
        })
    );
}

#[test]
fn an_unanswered_query_times_out_once_and_the_next_goes_on_schedule() {
    let mut s = Session::new(Query::Q3Info, EVERY_2S, ms(0));
    sends(&mut s, ms(0));
    assert_eq!(s.handle_timeout(ms(999)), None);
    assert_eq!(s.handle_timeout(ms(1_000)), Some(Event::TimedOut));
    assert_eq!(s.handle_timeout(ms(1_001)), None, "reported once");
    assert_eq!(s.next_timeout(), Some(ms(2_000)));
    assert_eq!(sends(&mut s, ms(2_000)).len(), 1);
    let c = s.counts();
    assert_eq!((c.sent, c.answered, c.timed_out), (2, 0, 1));
}

#[test]
fn a_timeout_noticed_by_poll_transmit_is_still_reported() {
    let mut s = Session::new(Query::Q3Info, EVERY_2S, ms(0));
    let mut out = vec![];
    assert!(s.poll_transmit(ms(0), &mut out));
    // The caller skipped handle_timeout: the new query still waits for
    // the old one to be counted, and the timeout is reported later.
    assert!(s.poll_transmit(ms(2_000), &mut out));
    assert_eq!(s.counts().timed_out, 1);
    assert_eq!(s.handle_timeout(ms(2_000)), Some(Event::TimedOut));
}

#[test]
fn an_answer_at_or_after_the_timeout_is_late_not_a_sample() {
    let mut s = Session::new(Query::Q3Info, EVERY_2S, ms(0));
    sends(&mut s, ms(0));
    // Exactly at the timeout: late.
    assert!(matches!(
        s.handle(ms(1_000), &q3_info("tp1")),
        Some(Event::Late { .. })
    ));
    let c = s.counts();
    assert_eq!((c.sent, c.answered, c.timed_out, c.late), (1, 0, 1, 1));
    // The same answer again is nobody's.
    assert!(matches!(
        s.handle(ms(1_100), &q3_info("tp1")),
        Some(Event::Unmatched { .. })
    ));
    assert_eq!(s.counts().late, 1);
    assert_eq!(s.counts().stray, 1);
}

#[test]
fn stray_answers_are_counted_and_ignored() {
    let mut s = Session::new(Query::Q3Info, EVERY_2S, ms(0));
    sends(&mut s, ms(0));
    assert!(matches!(
        s.handle(ms(2), &q3_info("tp9")),
        Some(Event::Unmatched { .. })
    ));
    assert_eq!(s.handle(ms(2), b"garbage"), None);
    let status = oob::encode("statusResponse\n\\challenge\\tp1\n");
    assert_eq!(s.handle(ms(2), &status), None, "not the kind asked");
    assert_eq!(
        s.handle(ms(2), &fixtures::challenge(5)),
        None,
        "q3 has no challenge"
    );
    assert!(!s.idle(), "still waiting for its own answer");
    assert_eq!(rtt(s.handle(ms(5), &q3_info("tp1"))), ms(5));
    let c = s.counts();
    assert_eq!((c.answered, c.stray), (1, 4));
}

#[test]
fn an_answer_to_a_previous_query_is_not_counted_twice() {
    let mut s = Session::new(Query::Q3Info, EVERY_2S, ms(0));
    sends(&mut s, ms(0));
    rtt(s.handle(ms(1), &q3_info("tp1")));
    sends(&mut s, ms(2_000));
    // A duplicate of the first answer arrives while the second query waits.
    assert!(matches!(
        s.handle(ms(2_001), &q3_info("tp1")),
        Some(Event::Unmatched { .. })
    ));
    assert!(!s.idle());
    assert_eq!(rtt(s.handle(ms(2_004), &q3_info("tp2"))), ms(4));
    let c = s.counts();
    assert_eq!((c.sent, c.answered, c.stray), (2, 2, 1));
}

#[test]
fn a_late_a2s_answer_is_not_given_to_the_next_query() {
    let mut s = Session::new(Query::A2sInfo, EVERY_2S, ms(0));
    sends(&mut s, ms(0));
    assert!(sends(&mut s, ms(1_000)).is_empty());
    assert!(matches!(
        s.handle(ms(1_500), &a2s_info(1)),
        Some(Event::Late { .. })
    ));
    sends(&mut s, ms(2_000));
    assert_eq!(rtt(s.handle(ms(2_002), &a2s_info(2))), ms(2));
    let c = s.counts();
    assert_eq!((c.sent, c.answered, c.timed_out, c.late), (2, 1, 1, 1));
}

#[test]
fn a_server_that_only_sends_challenges_gets_two_resends_then_a_timeout() {
    let mut s = Session::new(Query::A2sInfo, EVERY_2S, ms(0));
    sends(&mut s, ms(0));
    let mut resends = 0;
    for i in 0..5u32 {
        let t = ms(u64::from(i) * 10 + 1);
        s.handle(t, &fixtures::challenge(i));
        resends += sends(&mut s, t).len();
    }
    assert_eq!(resends, MAX_CHALLENGES as usize);
    assert_eq!(s.counts().challenges, u64::from(MAX_CHALLENGES));
    assert_eq!(s.handle_timeout(ms(1_500)), Some(Event::TimedOut));
    let c = s.counts();
    assert_eq!((c.sent, c.answered, c.timed_out, c.stray), (1, 0, 1, 3));
    // A challenge with nothing in flight is stray too.
    assert_eq!(s.handle(ms(1_600), &fixtures::challenge(9)), None);
}

#[test]
fn the_timeout_is_capped_at_the_interval() {
    let sched = Schedule {
        interval: ms(200),
        timeout: ms(1_000),
    };
    assert_eq!(sched.effective_timeout(), ms(200));
    let mut s = Session::new(Query::Q3Info, sched, ms(0));
    sends(&mut s, ms(0));
    assert_eq!(s.next_timeout(), Some(ms(200)));
    // At 200 ms the first is timed out and the second goes: one in flight.
    assert_eq!(sends(&mut s, ms(200)).len(), 1);
    assert_eq!(s.counts().timed_out, 1);
}

#[test]
fn a_caller_that_fell_behind_sends_once_not_a_burst() {
    let mut s = Session::new(Query::Q3Info, EVERY_2S, ms(0));
    sends(&mut s, ms(0));
    rtt(s.handle(ms(1), &q3_info("tp1")));
    // Woken 7 s late: one query, then the schedule restarts from there.
    assert_eq!(sends(&mut s, ms(9_000)).len(), 1);
    rtt(s.handle(ms(9_001), &q3_info("tp2")));
    assert!(sends(&mut s, ms(9_500)).is_empty());
    assert_eq!(s.next_timeout(), Some(ms(11_000)));
}

#[test]
fn no_query_starts_after_the_stop_and_an_abandoned_one_is_not_counted() {
    let mut s = Session::new(Query::Q3Info, EVERY_2S, ms(0));
    s.stop_at(ms(3_000));
    sends(&mut s, ms(0));
    rtt(s.handle(ms(1), &q3_info("tp1")));
    sends(&mut s, ms(2_000));
    assert!(s.abandon());
    assert!(!s.abandon());
    assert_eq!(s.next_timeout(), None, "4 s is past the stop");
    assert!(sends(&mut s, ms(4_000)).is_empty());
    let c = s.counts();
    assert_eq!((c.sent, c.answered, c.timed_out), (1, 1, 0));
}

#[test]
fn a_clock_that_goes_backwards_gives_a_zero_round_trip_not_a_panic() {
    let mut s = Session::new(Query::A2sInfo, EVERY_2S, ms(100));
    sends(&mut s, ms(100));
    assert_eq!(rtt(s.handle(ms(99), &a2s_info(1))), Duration::ZERO);
    let mut s = Session::new(Query::Q3Info, EVERY_2S, Duration::MAX - ms(1));
    assert_eq!(sends(&mut s, Duration::MAX).len(), 1);
    assert_eq!(s.handle_timeout(Duration::MAX), Some(Event::TimedOut));
}
