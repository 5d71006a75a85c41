//! Emulated OpenArena players against the real OpenArena (ioquake3)
//! dedicated server from Debian, on 127.0.0.1 (no root): they connect over
//! Quake III protocol 71, appear in the server's `getstatus` under their
//! names, lose nothing, and a kill -9 of the server is an outage.
//!
//! The server comes from the `openarena-server` package (scripts/setup.sh);
//! without it these tests fail under CI and are skipped elsewhere.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{exe, serial, text};
use tickpack_testkit::Q3Server;

/// `players` exit code when anything was lost or there was an outage.
const EXIT_LOST: i32 = 6;

fn players(target: &str, players: &str, duration: &str) -> Command {
    let mut c = Command::new(exe());
    c.args([
        "players",
        "--game",
        "openarena",
        "--target",
        target,
        "--players",
        players,
        "--duration",
        duration,
        "--quiet",
        "--json",
        "-",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    c
}

fn json(out: &std::process::Output) -> Value {
    support::players_json(out)
}

#[test]
fn openarena_players_play_a_real_server_appear_in_its_status_and_lose_nothing() {
    if !Q3Server::available("openarena players") {
        return;
    }
    let _g = serial();
    // 4 emulated players and bots up to 8: what a real server carries.
    let server = Q3Server::start(&["+set", "bot_minplayers", "8", "+set", "sv_fps", "20"]);
    let target = server.addr().to_string();
    // A VM stall can lose a snapshot in one attempt; a protocol bug loses
    // in every attempt.
    let mut last = String::new();
    for attempt in 1..=3 {
        let out = players(&target, "4", "10s").output().unwrap();
        let r = json(&out);
        assert_eq!(r["game"], "openarena", "{}", text(&out));
        assert_eq!(r["connected"], 4, "{}", text(&out));
        assert_eq!(r["decode_errors"], 0, "{}", text(&out));
        // Every player is listed by the server under its own name (the
        // referee found its ping in getstatus).
        let rows = r["referee"].as_array().expect("referee rows");
        assert_eq!(rows.len(), 4);
        for row in rows {
            assert!(
                row["server_ping_us_median"].is_u64(),
                "{} is not in the server's getstatus: {row}",
                row["player"]
            );
        }
        // Every snapshot came in a datagram the players counted.
        assert!(
            r["traffic"]["datagrams_in"].as_u64().unwrap()
                >= r["snapshots"]["received"].as_u64().unwrap(),
            "{}",
            text(&out)
        );
        // 20 frames a second for 10 s, for 4 players.
        let expected = r["snapshots"]["expected"].as_u64().unwrap();
        assert!(
            (790..=810).contains(&expected),
            "{expected} snapshots expected"
        );
        let lost =
            r["snapshots"]["lost"].as_u64().unwrap() + r["commands"]["lost"].as_u64().unwrap();
        let p99 = r["transaction_latency_us"]["p99"].as_u64().unwrap();
        // One snapshot interval (50 ms) + 5 ms.
        if out.status.success() && lost == 0 && r["outages"]["count"] == 0 && p99 <= 55_000 {
            return;
        }
        last = format!(
            "attempt {attempt}: exit {:?}, {lost} lost, p99 {p99} us\n{}",
            out.status.code(),
            text(&out)
        );
        eprintln!("{last}");
    }
    panic!(
        "three attempts lost or were late: {last}\nserver log:\n{}",
        server.log()
    );
}

#[test]
fn a_kill_9_of_the_openarena_server_is_an_outage_and_the_players_come_back() {
    if !Q3Server::available("openarena outage") {
        return;
    }
    let _g = serial();
    let mut server = Q3Server::start(&[]);
    let target = server.addr().to_string();
    let child = players(&target, "3", "12s").spawn().unwrap();
    // Warm-up is 2 s for 3 players; kill 3 s into the measured window and
    // start a new server process on the same port at once.
    std::thread::sleep(Duration::from_secs(5));
    server.restart();
    let out = child.wait_with_output().unwrap();
    let r = json(&out);
    assert_eq!(out.status.code(), Some(EXIT_LOST), "{}", text(&out));
    assert!(
        r["outages"]["count"].as_u64().unwrap() >= 1,
        "{}",
        text(&out)
    );
    assert!(
        r["snapshots"]["lost"].as_u64().unwrap() > 0,
        "{}",
        text(&out)
    );
    assert!(
        r["reconnects"].as_u64().unwrap() >= 1,
        "the players did not come back to the new process: {}\n{}",
        text(&out),
        server.log()
    );
}

/// Regression: from one source address ioquake3 answers 10 challenge
/// requests and then one a second, so of 16 players of one server only
/// about 11 connected within a 3 s connect timeout (measured: 11 of 16).
/// Spread over four loopback addresses (4 each), all 16 connect.
#[test]
fn openarena_sixteen_players_from_four_source_addresses_all_connect_at_once() {
    if !Q3Server::available("openarena players from three addresses") {
        return;
    }
    let _g = serial();
    let server = Q3Server::start(&["+set", "sv_fps", "20"]);
    let target = server.addr().to_string();
    // The test server has 16 slots.
    let out = players(&target, "16", "2s")
        .args([
            "--source-addrs",
            "127.0.0.2-127.0.0.5",
            "--warmup",
            "2s",
            "--connect-timeout",
            "3s",
        ])
        .output()
        .unwrap();
    let r = json(&out);
    assert_eq!(r["connected"], 16, "{}", text(&out));
    assert_eq!(r["players"], 16, "{}", text(&out));
}

#[test]
fn openarena_players_with_too_few_source_addresses_stop_before_any_player_starts() {
    // No server: the settings are refused before any socket is opened.
    let out = players("127.0.0.1:9", "12", "2s")
        .args(["--source-addrs", "127.0.0.2,127.0.0.3"])
        .output()
        .unwrap();
    let err = support::assert_one_error_line(&out, &[2], "players --source-addrs");
    assert!(err.contains("need 3 addresses"), "{err}");
    assert!(err.contains("the game's 4 per address"), "{err}");
}
