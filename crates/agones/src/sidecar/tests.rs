//! What the sidecar asks and reads (the game query layer's datagrams), and
//! its asking loop against a loopback responder.

use super::*;
use tickpack_game::query::{query_id, Heard};
use tickpack_wire::a2s;

fn facts(query: Query, datagram: &[u8]) -> Heard {
    query.decode(datagram)
}

fn names(h: Heard) -> Vec<String> {
    match h {
        Heard::Answer { facts, .. } => players(&facts),
        other => panic!("{other:?}"),
    }
}

fn a2s_info(players: u8, bots: u8) -> Vec<u8> {
    let mut info = vec![];
    a2s::encode_info(
        &a2s::ServerInfo {
            name: "s",
            map: "m",
            folder: "f",
            game: "g",
            app_id: 0,
            players,
            max_players: 12,
            bots,
            version: "1",
            port: 27015,
            keywords: "",
        },
        &mut info,
    );
    info
}

#[test]
fn an_openarena_status_reply_gives_the_names_without_colours() {
    let mut q = vec![];
    Query::Q3Status.encode(&query_id(3), None, &mut q);
    assert_eq!(q, b"\xff\xff\xff\xffgetstatus tp3");
    let reply = b"\xff\xff\xff\xffstatusResponse\n\\sv_maxclients\\8\\challenge\\tp3\n5 20 \"^1Sarge\"\n0 999 \"tp-1\"\n";
    assert_eq!(
        names(facts(Query::Q3Status, reply)),
        vec!["Sarge".to_string(), "tp-1".into()]
    );
    let empty = b"\xff\xff\xff\xffstatusResponse\n\\sv_maxclients\\8\n";
    assert_eq!(names(facts(Query::Q3Status, empty)), Vec::<String>::new());
    // An infoResponse is not what was asked.
    let info = b"\xff\xff\xff\xffinfoResponse\n\\clients\\0";
    assert_eq!(facts(Query::Q3Status, info), Heard::NotOurs);
    assert_eq!(facts(Query::Q3Status, b"junk"), Heard::NotOurs);
}

#[test]
fn a_reference_info_reply_counts_humans_and_a_challenge_is_passed_on() {
    let mut ch = vec![];
    a2s::encode_challenge(77, &mut ch);
    assert_eq!(facts(Query::A2sInfo, &ch), Heard::Challenge(77));
    let mut q = vec![];
    Query::A2sInfo.encode(&query_id(1), Some(77), &mut q);
    assert_eq!(&q[q.len() - 4..], &77u32.to_le_bytes());
    assert_eq!(
        names(facts(Query::A2sInfo, &a2s_info(5, 3))),
        vec!["player-1".to_string(), "player-2".into()]
    );
    assert_eq!(facts(Query::A2sInfo, b"\xff"), Heard::NotOurs);
}

/// A socket connected to a responder on 127.0.0.1 that answers the first
/// `requests` requests with what `answer` makes of each.
fn responder(
    requests: usize,
    answer: impl Fn(&[u8]) -> Vec<Vec<u8>> + Send + 'static,
) -> (UdpSocket, std::thread::JoinHandle<()>) {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(server.local_addr().unwrap()).unwrap();
    let h = std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        for _ in 0..requests {
            let Ok((n, peer)) = server.recv_from(&mut b) else {
                return;
            };
            for r in answer(&b[..n]) {
                server.send_to(&r, peer).unwrap();
            }
        }
    });
    (sock, h)
}

/// The old sidecar took any `statusResponse` that came while it waited as
/// the answer, ids unchecked: an answer to an older query (one that came
/// after that query's wait ended) was read as this query's, with the
/// players of back then.
#[test]
fn sidecar_stale_reply_taken_as_the_answer_an_older_querys_status_is_ignored() {
    let (sock, h) = responder(1, |req| {
        assert_eq!(req, b"\xff\xff\xff\xffgetstatus tp1");
        vec![
            b"\xff\xff\xff\xffstatusResponse\n\\challenge\\tp0\n0 0 \"Stale\"\n".to_vec(),
            b"\xff\xff\xff\xffstatusResponse\n\\challenge\\tp1\n0 0 \"Fresh\"\n".to_vec(),
        ]
    });
    let stop = AtomicBool::new(false);
    let mut asker = Asker::new(Query::Q3Status, Duration::from_secs(2));
    let got = asker.next_answer(&sock, &stop).map(|f| players(&f));
    assert_eq!(got, Some(vec!["Fresh".to_string()]));
    assert_eq!(asker.session.counts().stray, 1);
    h.join().unwrap();
}

#[test]
fn the_reference_server_is_asked_again_with_its_challenge() {
    let (sock, h) = responder(2, |req| match a2s::Query::decode(req) {
        Ok(a2s::Query::Info { challenge: None }) => {
            let mut ch = vec![];
            a2s::encode_challenge(0xC0FFEE, &mut ch);
            vec![ch]
        }
        Ok(a2s::Query::Info {
            challenge: Some(0xC0FFEE),
        }) => vec![a2s_info(4, 1)],
        other => panic!("{other:?}"),
    });
    let stop = AtomicBool::new(false);
    let mut asker = Asker::new(Query::A2sInfo, Duration::from_secs(2));
    let got = asker.next_answer(&sock, &stop).map(|f| players(&f));
    assert_eq!(got.map(|p| p.len()), Some(3), "4 players, 1 bot");
    let c = asker.session.counts();
    assert_eq!((c.sent, c.answered, c.challenges), (1, 1, 1));
    h.join().unwrap();
}

#[test]
fn a_silent_game_times_out_after_the_period_and_the_next_query_waits_its_turn() {
    let (sock, h) = responder(0, |_| vec![]);
    let stop = AtomicBool::new(false);
    let every = Duration::from_millis(60);
    let mut asker = Asker::new(Query::Q3Status, every);
    let t = Instant::now();
    assert_eq!(asker.next_answer(&sock, &stop), None);
    assert!(t.elapsed() >= every, "{:?}", t.elapsed());
    assert_eq!(asker.session.counts().timed_out, 1);
    stop.store(true, Ordering::Relaxed);
    assert_eq!(asker.next_answer(&sock, &stop), None);
    h.join().unwrap();
}
