//! The driver on loopback: it listens, ticks on schedule slots, publishes
//! metrics and stops when told, without the binary.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tickpack_net::wait::WaitMode;
use tickpack_server::{run, Live, Options};
use tickpack_sim::ServerConfig;

fn free_tcp_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// Options for a 100 Hz server on a free loopback port with the precise
/// timer, stopped after 30 s at the latest (a bound in case the stop flag
/// is never seen).
fn loopback_at_100_hz() -> Options {
    Options {
        config: ServerConfig {
            tick_hz: tickpack_wire::TickRate::DEFAULT,
            ..Default::default()
        },
        bind: "127.0.0.1:0".parse().unwrap(),
        cpu: None,
        timer: WaitMode::Precise,
        read_at_tick: false,
        metrics: None,
        duration: Some(Duration::from_secs(30)),
        live: None,
    }
}

#[test]
fn the_driver_ticks_serves_metrics_and_stops_when_told() {
    let metrics = free_tcp_addr();
    let stop = AtomicBool::new(false);
    let live = Arc::new(Live::default());
    let opts = Options {
        metrics: Some(metrics),
        live: Some(live.clone()),
        ..loopback_at_100_hz()
    };
    let mut bound = None;
    let stopped = std::thread::scope(|s| {
        let h = s.spawn(|| run(opts, &stop, |a| bound = Some(a)));
        // The first publication happens at the first tick.
        let t0 = std::time::Instant::now();
        let mut body = String::new();
        while !body.contains("# TYPE tickpack_ticks_total counter")
            && t0.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
            if let Ok(mut c) = std::net::TcpStream::connect(metrics) {
                let _ = c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
                body.clear();
                let _ = c.read_to_string(&mut body);
            }
        }
        // What the Agones reporter reads: listening, ticks advancing.
        let seen = live.read();
        assert!(seen.listening);
        let advanced = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            live.read().ticks > seen.ticks
        });
        assert!(advanced, "the live tick count did not advance");
        stop.store(true, Ordering::Relaxed);
        let r = h.join().unwrap();
        assert!(
            body.contains("# TYPE tickpack_ticks_total counter"),
            "no metrics: {body}"
        );
        assert!(
            body.contains("tickpack_drain_cut_total{reason=\"budget\"}"),
            "{body}"
        );
        r
    })
    .unwrap();
    let addr = bound.expect("on_listening was not called");
    assert_ne!(addr.port(), 0);
    assert!(stopped.stats.tick >= 1, "no tick ran: {:?}", stopped.stats);
}

#[test]
fn a_metrics_address_in_use_is_a_config_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let opts = Options {
        config: ServerConfig::default(),
        bind: "127.0.0.1:0".parse().unwrap(),
        cpu: None,
        timer: WaitMode::Plain,
        read_at_tick: false,
        metrics: Some(taken.local_addr().unwrap()),
        duration: Some(Duration::from_secs(5)),
        live: None,
    };
    let err = run(opts, &AtomicBool::new(false), |_| {}).unwrap_err();
    assert!(err.is_config(), "{err}");
    assert!(err.to_string().contains("cannot serve metrics on"), "{err}");
}

#[test]
fn a_server_reading_at_the_tick_still_answers_a_hello() {
    let stop = AtomicBool::new(false);
    let opts = Options {
        read_at_tick: true,
        ..loopback_at_100_hz()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let h = s.spawn(|| run(opts, &stop, move |a| tx.send(a).unwrap()));
        let addr = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut hello = Vec::new();
        tickpack_wire::Packet::Hello {
            version: tickpack_wire::PROTOCOL_VERSION,
            nonce: 42,
        }
        .encode(&mut hello);
        // Asked again until answered (bounded): the answer comes at a tick.
        let mut buf = [0u8; 2048];
        let mut answer = None;
        for _ in 0..25 {
            client.send_to(&hello, addr).unwrap();
            if let Ok((n, _)) = client.recv_from(&mut buf) {
                answer = Some(buf[..n].to_vec());
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap().unwrap();
        let answer = answer.expect("no answer to a hello");
        match tickpack_wire::Packet::decode(&answer) {
            Ok(tickpack_wire::Packet::Challenge { nonce, .. }) => assert_eq!(nonce, 42),
            other => panic!("not a challenge: {other:?}"),
        }
    });
}
