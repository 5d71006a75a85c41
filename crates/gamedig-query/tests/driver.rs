//! The driver against UDP responders on 127.0.0.1: a real protocol's
//! answers (A2S as `tickpack server` sends it, a recorded OpenArena
//! `getstatus`), garbage that makes gamedig panic or fail, and a server
//! that answers only challenges for ever.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickpack_game::GamedigProtocol;
use tickpack_gamedig_query::{Driver, QueryError};
use tickpack_wire::a2s::{self, fixtures};

/// Every responder stops after this long, whatever the test does.
const RESPONDER_LIMIT: Duration = Duration::from_secs(20);

/// A UDP socket on 127.0.0.1 that sends `reply(datagram)` back for every
/// datagram, until dropped (or [`RESPONDER_LIMIT`]).
struct Responder {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Responder {
    fn start(reply: impl Fn(&[u8]) -> Vec<Vec<u8>> + Send + 'static) -> Responder {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut answered = 0u64;
            let mut buf = [0u8; 2048];
            while !flag.load(Ordering::Relaxed) && started.elapsed() < RESPONDER_LIMIT {
                if let Ok((n, from)) = sock.recv_from(&mut buf) {
                    for d in reply(&buf[..n]) {
                        let _ = sock.send_to(&d, from);
                    }
                    answered += 1;
                }
            }
            answered
        });
        Responder {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops answering; how many datagrams it answered.
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn driver(name: &str, limit: usize) -> Driver {
    Driver::new(GamedigProtocol::from_name(name).unwrap(), limit).unwrap()
}

/// The challenge `tickpack server` sends a query without one.
fn challenge() -> Vec<u8> {
    fixtures::challenge(0x5eed_0001)
}

/// What `tickpack server` answers to `A2S_INFO`.
fn a2s_info() -> Vec<u8> {
    fixtures::info(&fixtures::TICKPACK_ARENA)
}

/// Challenges a query without one, answers one with it.
fn a2s_server() -> Responder {
    Responder::start(|d| match a2s::Query::decode(d) {
        Ok(a2s::Query::Info { challenge: None }) => vec![challenge()],
        Ok(a2s::Query::Info { challenge: Some(_) }) => vec![a2s_info()],
        _ => vec![],
    })
}

/// Waits (at most 10 s) until the driver runs no call.
fn wait_idle(d: &Driver) -> usize {
    let until = Instant::now() + Duration::from_secs(10);
    while d.running() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    d.running()
}

#[test]
fn an_a2s_server_answers_with_its_facts_and_a_round_trip() {
    let server = a2s_server();
    let d = driver("valve", 4);
    let a = d.query(server.addr, Duration::from_secs(2)).unwrap();
    assert_eq!(
        (a.name.as_str(), a.map.as_str(), a.players, a.max_players),
        ("tickpack", "arena", Some(7), 32)
    );
    assert!(a.rtt > Duration::ZERO && a.rtt < Duration::from_secs(2));
    // Challenge, then the query again with it: two datagrams answered.
    assert_eq!(server.finish(), 2);
    assert_eq!(wait_idle(&d), 0);
}

#[test]
fn quake3_player_counts_from_gamedig_are_unknown_not_zero() {
    let status = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../game/tests/fixtures/openarena/getstatus.bin"),
    )
    .unwrap();
    // The recorded server listed 3 bots; gamedig 0.9 would say 0.
    assert!(String::from_utf8_lossy(&status).matches("\n0 0 \"").count() >= 1);
    let server = Responder::start(move |d| {
        if d.starts_with(b"\xff\xff\xff\xffgetstatus") {
            vec![status.clone()]
        } else {
            vec![]
        }
    });
    let a = driver("quake3", 4)
        .query(server.addr, Duration::from_secs(2))
        .unwrap();
    assert_eq!(a.map, "oa_dm1");
    assert_eq!(a.max_players, 16);
    assert_eq!(a.players, None);
}

#[test]
fn garbage_answers_are_errors_and_no_panic_escapes() {
    // An A2S_INFO cut inside the game's name, before the app id: gamedig
    // 0.9 slices past the end and panics (release and debug alike).
    let mut cut = a2s_info();
    let at = cut.windows(8).position(|w| w == b"tickpack").unwrap();
    let after_folder = cut[at..]
        .windows(9)
        .enumerate()
        .filter(|(_, w)| w == b"tickpack\0")
        .map(|(i, _)| at + i + 9)
        .nth(1)
        .unwrap();
    cut.truncate(after_folder + 3);
    let garbage: Vec<Vec<u8>> = vec![
        cut,
        b"\xff\xff\xff\xff".to_vec(),
        b"\xff\xff\xff\xffI".to_vec(),
        vec![0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0],
        b"hello".to_vec(),
        vec![0xff; 1400],
    ];
    let d = driver("valve", 4);
    let mut panicked = 0;
    for g in garbage {
        let reply = g.clone();
        let server = Responder::start(move |_| vec![reply.clone()]);
        match d.query(server.addr, Duration::from_millis(300)) {
            Ok(a) => panic!("{g:?} answered {a:?}"),
            Err(QueryError::Panicked(m)) => {
                assert!(!m.is_empty());
                panicked += 1;
            }
            Err(QueryError::Malformed(_) | QueryError::Timeout(_)) => {}
            Err(e) => panic!("{g:?}: {e}"),
        }
    }
    // The cut answer is gamedig's known panic: caught, reported.
    assert!(panicked >= 1);
    assert_eq!(wait_idle(&d), 0);
    // And the driver still asks.
    let server = a2s_server();
    assert_eq!(
        d.query(server.addr, Duration::from_secs(2)).unwrap().map,
        "arena"
    );
}

#[test]
fn a_server_answering_only_challenges_is_abandoned_at_the_deadline_and_bounded() {
    let server = Responder::start(|_| vec![challenge()]);
    let d = driver("valve", 2);
    let started = Instant::now();
    let e = d
        .query(server.addr, Duration::from_millis(300))
        .unwrap_err();
    assert_eq!(e, QueryError::Timeout(Duration::from_millis(300)));
    assert!(started.elapsed() < Duration::from_secs(5));
    // gamedig keeps going on its thread; a second one fills the driver.
    assert_eq!(d.running(), 1);
    let second = d.start(server.addr, Duration::from_millis(300)).unwrap();
    assert_eq!(
        second.wait(),
        Err(QueryError::Timeout(Duration::from_millis(300)))
    );
    assert_eq!(
        d.start(server.addr, Duration::from_millis(300))
            .unwrap_err(),
        QueryError::Busy(2)
    );
    // When the server falls silent, gamedig's own read timeout ends both.
    assert!(server.finish() > 2);
    assert_eq!(wait_idle(&d), 0);
}

#[test]
fn a_silent_port_times_out() {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let d = driver("unreal2", 1);
    assert_eq!(
        d.query(sock.local_addr().unwrap(), Duration::from_millis(100)),
        Err(QueryError::Timeout(Duration::from_millis(100)))
    );
    assert_eq!(wait_idle(&d), 0);
}
