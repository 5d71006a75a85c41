//! Emulated Teeworlds 0.7 players against the real Teeworlds 0.7.5
//! dedicated server from Debian, on 127.0.0.1 (no root): 16 players from
//! four loopback addresses (the server admits 4 per address) join, every
//! input they send shows in a snapshot, and the server's own log lists
//! each of them entering the game under its name. As root, a two-step
//! bench of real servers gets every player of every server in.
//!
//! The server comes from the `teeworlds-server` package (scripts/setup.sh);
//! without it these tests fail under CI and are skipped elsewhere.

mod support;

use std::process::{Command, Stdio};

use serde_json::Value;
use support::bench::one_ladder;
use support::host::BenchHosts;
use support::{exe, serial, text};
use tickpack_testkit::TwServer;

/// Starts the server on 127.0.0.1 and a free port with the settings of
/// games/teeworlds.toml (16 players, 4 per address, dm1), and waits for the
/// line that says it is ready.
fn start_server() -> TwServer {
    TwServer::start(&[
        "sv_max_clients 16",
        "sv_player_slots 16",
        "sv_max_clients_per_ip 4",
        "sv_map dm1",
    ])
}

#[test]
fn sixteen_teeworlds_players_play_a_real_server_and_every_input_shows() {
    if !TwServer::available("teeworlds players") {
        return;
    }
    let _g = serial();
    // A VM stall can lose a snapshot in one attempt; a protocol bug loses
    // in every attempt.
    let mut last = String::new();
    for attempt in 1..=3 {
        let server = start_server();
        let out = Command::new(exe())
            .args([
                "players",
                "--game",
                "teeworlds",
                "--target",
                &server.addr().to_string(),
                "--players",
                "16",
                "--source-addrs",
                "127.0.0.2-127.0.0.5",
                "--duration",
                "5s",
                "--quiet",
                "--json",
                "-",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let r: Value = support::players_json(&out);
        let log = server.log();
        assert_eq!(r["game"], "teeworlds", "{}", text(&out));
        assert_eq!(r["connected"], 16, "{}\n{log}", text(&out));
        assert_eq!(r["tick_hz"], 50, "{}", text(&out));
        assert_eq!(r["decode_errors"], 0, "{}", text(&out));
        // The server's log lists every emulated player in the game.
        assert_eq!(
            log.matches("player has entered the game").count(),
            16,
            "{log}"
        );
        for i in 0..16 {
            assert!(
                log.contains(&format!(":tp-{i}' team=0")),
                "tp-{i} did not join a team:\n{log}"
            );
        }
        let p = &r["transaction_latency_us"];
        assert!(p["p50"].as_u64().unwrap() > 0, "{}", text(&out));
        assert!(p["p99"].as_u64().unwrap() >= p["p50"].as_u64().unwrap());
        // 50 inputs a second for 5 s for 16 players, every one sent.
        let sent = r["commands"]["sent"].as_u64().unwrap();
        assert!((3_960..=4_040).contains(&sent), "{sent} sent");
        let lost =
            r["snapshots"]["lost"].as_u64().unwrap() + r["commands"]["lost"].as_u64().unwrap();
        if out.status.success() && lost == 0 && r["outages"]["count"] == 0 {
            assert_eq!(r["commands"]["reflected"], sent);
            return;
        }
        last = format!(
            "attempt {attempt}: exit {:?}, {lost} lost\n{}",
            out.status.code(),
            text(&out)
        );
        eprintln!("{last}");
    }
    panic!("three attempts lost something: {last}");
}

#[test]
fn root_a_teeworlds_bench_connects_every_player_on_every_server() {
    if !tickpack_testkit::root_or_skip(
        "root_a_teeworlds_bench_connects_every_player_on_every_server",
    ) {
        return;
    }
    if !TwServer::available("root teeworlds bench") {
        return;
    }
    let _g = serial();
    let _down = BenchHosts {
        name: "tw",
        check_leftovers: false,
    };
    let out_dir = std::env::temp_dir().join(format!("tp-tw-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = one_ladder("2")
        .args([
            "--game",
            "teeworlds",
            "--name",
            "tw",
            "--steps-past-failure",
            "2",
            "--step-duration",
            "4s",
            "--no-confirm",
            // Players connected and measured is the point here, not a
            // verdict on this machine (a snapshot every second tick puts
            // p99 near two ticks, above the default one tick + 5 ms).
            "--qos-p99-ms",
            "1000",
            "--max-steal",
            "100",
            "--max-foreign",
            "100",
            "--range",
            "198.19.97.0/24",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let text = text(&out);
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("result.json")).expect("result.json exists"),
    )
    .expect("valid JSON");
    assert_eq!(r["complete"], true, "{text}");
    assert_eq!(r["settings"]["game"], "teeworlds", "{text}");
    let steps = r["ladders"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{text}");
    for (i, s) in steps.iter().enumerate() {
        let players = 16 * (i as u64 + 1);
        assert_eq!(s["players"], players, "{s}");
        assert_eq!(s["connected"], players, "every player connected: {s}");
        assert!(
            s["transaction_latency_us"]["count"].as_u64().unwrap() > 0,
            "{s}"
        );
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}
