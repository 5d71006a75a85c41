//! End to end on 127.0.0.1: the real `tickpack` binary as server and players.
//!
//! Each test starts its own server on port 0 and ends it by PID. The tests
//! share the machine's two cores, so they run one at a time (a lock), with
//! the server pinned to the last CPU and the players to the first.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use support::server::{cpus, Server};
use support::{assert_one_error_line, exe, free_tcp_port, http_get_metrics, serial, text};

fn players(target: SocketAddr, extra: &[&str]) -> (Output, Option<Value>) {
    let (_, player_cpu) = cpus();
    let json = std::env::temp_dir().join(format!(
        "tp-e2e-{}-{}.json",
        std::process::id(),
        target.port()
    ));
    let out = Command::new(exe())
        .args([
            "players",
            "--target",
            &target.to_string(),
            "--cpus",
            &player_cpu,
            "--quiet",
        ])
        .arg("--json")
        .arg(&json)
        .args(extra)
        .output()
        .expect("run players");
    let doc = std::fs::read_to_string(&json)
        .ok()
        .map(|s| serde_json::from_str(&s).expect("valid JSON"));
    let _ = std::fs::remove_file(&json);
    (out, doc)
}

/// The QoS a LAN player expects, as far as a test can check it on a shared
/// machine: nothing lost, and the median transaction within a tick + 2 ms.
///
/// The QoS tests run the light world (`--cost light`, 4 bots): the bound then
/// checks what tickpack's own path adds (network, tick wait, scheduling,
/// snapshot building and sending). A command waits for the next tick, so the
/// median is about half a tick plus that path; a real regression (commands
/// applied a tick late, slow snapshots) moves the median past a tick.
///
/// The p99 is printed, not asserted: on a loaded 2-core VM (other builds,
/// hypervisor bursts of milliseconds) one burst in a 4-second window decides
/// it, so its goal (p99 within a tick + 2 ms) lives in
/// `scripts/bench-qos.sh`, which prints the figure and its ratio to the goal.
/// The median is checked on up to [`ATTEMPTS`] runs; every attempt's figures
/// are printed.
///
/// Loss is a failed attempt, not a panic: a server stalled by the VM for a
/// few ticks (bursts of tens of ms happen here) skips those ticks, and the
/// players now count them as lost, as they must. A run that loses nothing
/// in one of [`ATTEMPTS`] is certain on a working build; a loss bug loses in
/// every attempt.
fn check_qos(doc: &Value, tick_hz: u64, players: u64) -> Result<(), String> {
    assert_eq!(doc["connected"], players, "{doc:#}");
    let snaps = &doc["snapshots"];
    assert!(snaps["expected"].as_u64().unwrap() > 0);
    if snaps["lost"] != 0 || doc["commands"]["lost"] != 0 || doc["outages"]["count"] != 0 {
        return Err(format!(
            "lost: snapshots {snaps}, commands {}, outages {}",
            doc["commands"], doc["outages"]
        ));
    }
    let tl = &doc["transaction_latency_us"];
    // A command waits for the next tick, so the median is several ms, never ~0.
    assert!(
        tl["p50"].as_u64().unwrap() > 1_000_000 / tick_hz / 10,
        "{tl}"
    );
    let bound = 1_000_000 / tick_hz + 2_000;
    let p50 = tl["p50"].as_u64().unwrap();
    eprintln!(
        "transaction latency p50 {p50} us (bound {bound} us), p99 {} us; server frame p99 {} us, tick lateness p99 {} us",
        tl["p99"], doc["server_frame_us"]["p99"], doc["tick_lateness_us"]["p99"]
    );
    if p50 <= bound {
        Ok(())
    } else {
        Err(format!(
            "p50 transaction latency {p50} us > {bound} us: {tl}"
        ))
    }
}

const ATTEMPTS: usize = 3;

/// Runs `attempt` until its QoS check passes, at most [`ATTEMPTS`] times.
fn within_attempts(mut attempt: impl FnMut() -> Result<(), String>) {
    let mut failures = vec![];
    for _ in 0..ATTEMPTS {
        match attempt() {
            Ok(()) => return,
            Err(e) => failures.push(e),
        }
    }
    panic!(
        "QoS bound missed in all {ATTEMPTS} attempts:\n{}",
        failures.join("\n")
    );
}

#[test]
fn twelve_players_lose_nothing_and_their_median_stays_within_a_tick_plus_2ms() {
    let _g = serial();
    within_attempts(|| {
        let mut server = Server::start(&["--tick-hz", "100", "--bots", "4", "--cost", "light"]);
        let (out, doc) = players(server.addr, &["--players", "12", "--duration", "4s"]);
        // 0 when nothing was lost; 6 when something was (judged below).
        assert!(matches!(out.status.code(), Some(0 | 6)), "{}", text(&out));
        let doc = doc.expect("players wrote JSON");
        assert_eq!(doc["schema"], "tickpack.players/1");
        for key in [
            "transaction_latency_us",
            "rtt_us",
            "server_frame_us",
            "tick_lateness_us",
        ] {
            for p in ["p50", "p90", "p99", "p999", "max", "count"] {
                assert!(doc[key][p].is_u64(), "{key}.{p} missing");
            }
            let h = doc["histograms"][key].as_str().unwrap();
            let hist = tickpack_report::decode_histogram(h).expect("histogram decodes");
            assert_eq!(
                hist.len(),
                doc[key]["count"].as_u64().unwrap(),
                "{key} histogram matches its count"
            );
        }
        // How long a light frame takes depends on the machine: assert that
        // frames were measured, not a speed.
        assert!(
            doc["server_frame_us"]["count"].as_u64().unwrap() > 0,
            "the server's frame time is reported"
        );
        assert!(
            text(&out).contains("transaction latency (ms)"),
            "terminal table"
        );
        assert!(server.terminate().success(), "clean exit on SIGTERM");
        check_qos(&doc, 100, 12)
    });
}

/// The load generator's two I/O paths serve the same players: every one
/// connects, commands are reflected, the result says which path ran, and the
/// ring's late reading (arrivals wait in the kernel until the thread wakes)
/// changes no latency figure: the median stays within a tick + 2 ms.
#[test]
fn both_io_paths_serve_every_player_and_the_result_names_the_one_used() {
    let _g = serial();
    for io in ["ring", "epoll"] {
        within_attempts(|| {
            let mut server = Server::start(&["--tick-hz", "100", "--bots", "4", "--cost", "light"]);
            let (out, doc) = players(
                server.addr,
                &["--players", "12", "--duration", "3s", "--io", io],
            );
            assert!(matches!(out.status.code(), Some(0 | 6)), "{}", text(&out));
            let doc = doc.expect("players wrote JSON");
            assert_eq!(doc["load_generator_io"], io, "--io {io}");
            assert_eq!(doc["connected"], 12, "--io {io}");
            assert!(doc["commands"]["reflected"].as_u64().unwrap() > 0);
            assert!(
                text(&out).contains(&format!("{io} I/O")),
                "the terminal names the path: {}",
                text(&out)
            );
            assert!(server.terminate().success());
            check_qos(&doc, 100, 12).map_err(|e| format!("--io {io}: {e}"))
        });
    }
}

#[test]
fn garbage_flood_neither_crashes_the_server_nor_costs_players_their_qos() {
    let _g = serial();
    within_attempts(garbage_flood_attempt);
}

fn garbage_flood_attempt() -> Result<(), String> {
    let server = Server::start(&["--tick-hz", "100", "--bots", "4", "--cost", "light"]);
    let target = server.addr;
    let flood = std::thread::spawn(move || {
        // On the load generator's core, never the server's.
        tickpack_net::cpu::pin_current_thread(&[0]).unwrap();
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut buf = [0u8; 1400];
        let t0 = Instant::now();
        let mut sent = 0u64;
        // Bounded: 10k datagrams/s for at most 5.5 s.
        while t0.elapsed() < Duration::from_millis(5_500) && sent < 55_000 {
            for _ in 0..100 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let len = (x % 1400) as usize;
                for (i, b) in buf[..len].iter_mut().enumerate() {
                    *b = (x >> (i % 57)) as u8;
                }
                match x % 4 {
                    0 if len >= 3 => buf[..2].copy_from_slice(b"TP"),
                    1 if len >= 5 => buf[..4].copy_from_slice(&[0xFF; 4]),
                    _ => {}
                }
                let _ = s.send_to(&buf[..len], target);
                sent += 1;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        sent
    });
    let (out, doc) = players(target, &["--players", "12", "--duration", "4s"]);
    let sent = flood.join().unwrap();
    // The flood is paced by sleeps, so how much it sent depends on the
    // machine's load; 10 batches of 100 in 5.5 s is certain.
    assert!(sent >= 1_000, "the flood ran ({sent} datagrams)");
    // 0 when nothing was lost; 6 when something was (judged in check_qos).
    assert!(matches!(out.status.code(), Some(0 | 6)), "{}", text(&out));
    // Still alive and counting what it dropped.
    let stats = query_stats(target).expect("server answers after the flood");
    assert!(
        stats.malformed > 0 && stats.malformed <= sent,
        "garbage counted as malformed: {} of {sent}",
        stats.malformed
    );
    check_qos(&doc.unwrap(), 100, 12)
}

fn query_stats(target: SocketAddr) -> Option<tickpack_wire::ServerStats> {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let req = tickpack_wire::Packet::StatsRequest {
        nonce: 3,
        proof: None,
    }
    .to_vec();
    let mut buf = [0u8; 2048];
    for _ in 0..5 {
        s.send_to(&req, target).unwrap();
        if let Ok((n, _)) = s.recv_from(&mut buf) {
            if let Ok(tickpack_wire::Packet::Stats(st)) = tickpack_wire::Packet::decode(&buf[..n]) {
                return Some(st);
            }
        }
    }
    None
}

#[test]
fn a_port_in_use_is_one_clear_line_and_exit_2() {
    let _g = serial();
    let holder = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = holder.local_addr().unwrap();
    let out = Command::new(exe())
        .args(["server", "--bind", &addr.to_string()])
        .output()
        .unwrap();
    let err = assert_one_error_line(&out, &[2], &text(&out));
    assert!(
        err.contains(&addr.to_string()) && err.contains("in use"),
        "{err}"
    );
}

#[test]
fn an_unreachable_target_is_reported_not_waited_on() {
    let _g = serial();
    // A port nobody listens on: bind and close it.
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t0 = Instant::now();
    let out = Command::new(exe())
        .args([
            "players",
            "--target",
            &format!("127.0.0.1:{port}"),
            "--players",
            "3",
            "--duration",
            "30s",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "players hung on an unreachable target"
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("refused"),
        "{err}"
    );
}

#[test]
fn malformed_flags_and_addresses_exit_2_with_a_message() {
    let _g = serial();
    for args in [
        vec!["players", "--target", "not-an-address"],
        vec!["players", "--target", "127.0.0.1:1", "--cmd-size", "10-5"],
        vec!["players", "--target", "127.0.0.1:1", "--duration", "soon"],
        vec!["players", "--target", "127.0.0.1:1", "--io", "uring"],
        vec!["server", "--tick-hz", "0"],
        vec!["server", "--cost", "free"],
        vec!["ping", "--target", "127.0.0.1:1", "--size", "2"],
    ] {
        let out = Command::new(exe()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(!out.stderr.is_empty(), "{args:?} printed no reason");
    }
}

#[test]
fn sigterm_tells_the_players_and_metrics_speak_prometheus() {
    let _g = serial();
    let metrics = format!("127.0.0.1:{}", free_tcp_port());
    let mut server = Server::start(&["--metrics", &metrics, "--bots", "2"]);
    let addr = server.addr;
    let players = std::thread::spawn(move || {
        players(
            addr,
            &["--players", "4", "--duration", "20s", "--warmup", "0s"],
        )
    });
    // The metrics are refreshed once a second: wait until they show the
    // players rather than for a fixed time (a loaded machine is slower).
    let t_wait = Instant::now();
    let mut body = http_get_metrics(&metrics);
    while !body.contains("tickpack_players 4") && t_wait.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
        body = http_get_metrics(&metrics);
    }
    assert!(
        body.contains("# TYPE tickpack_ticks_total counter"),
        "{body}"
    );
    assert!(body.contains("tickpack_players 4"), "{body}");
    assert!(
        body.contains("tickpack_frame_seconds{quantile=\"0.99\"}"),
        "{body}"
    );
    let t0 = Instant::now();
    assert!(server.terminate().success());
    let (out, _) = players.join().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "players kept waiting after the server left"
    );
    assert!(
        text(&out).contains("ServerShutdown"),
        "players were told: {}",
        text(&out)
    );
}

#[test]
fn valve_query_clients_list_the_server() {
    let _g = serial();
    let probe = Command::new("python3").args(["-c", "import a2s"]).output();
    assert!(
        probe.map(|o| o.status.success()).unwrap_or(false),
        "python3 with the python-a2s package is needed for this test: run scripts/setup.sh (pip install python-a2s)"
    );
    let server = Server::start(&["--bots", "3", "--name", "e2e-server"]);
    let script = format!(
        "import a2s\naddr=('127.0.0.1',{})\ni=a2s.info(addr,timeout=3)\np=a2s.players(addr,timeout=3)\nprint(i.server_name,'|',i.map_name,'|',i.player_count,'|',i.max_players,'|',i.bot_count,'|',len(p))",
        server.addr.port()
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let line = String::from_utf8_lossy(&out.stdout);
    let f: Vec<&str> = line.trim().split(" | ").collect();
    assert_eq!(f, ["e2e-server", "tp_arena", "3", "15", "3", "3"], "{line}");
}
