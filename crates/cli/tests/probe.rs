//! `tickpack probe` end to end, on loopback only and without root: against
//! the reference server (A2S, with its challenge round trip), against the
//! real ioq3 server (`/usr/games/openarena-server`, q3 `getinfo`), against
//! a port that never answers (exit 5, one line), with bad input (exit 2),
//! and interrupted (the result is still written); and `bench --probe` (one
//! quick step on the process backend). Every child is ended by PID when its
//! guard drops.

mod support;

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::server::Server;
use support::{exe, run, serial, text, wait_until};
use tickpack_testkit::Q3Server;

const EXIT_CONFIG: i32 = 2;
const EXIT_UNREACHABLE: i32 = 5;

fn json_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tp-probe-{name}-{}.json", std::process::id()))
}

fn read_json(p: &Path) -> serde_json::Value {
    let v = serde_json::from_str(&std::fs::read_to_string(p).expect("result written")).unwrap();
    let _ = std::fs::remove_file(p);
    v
}

#[test]
fn probe_measures_the_reference_servers_a2s_round_trips() {
    let _g = serial();
    let server = Server::start(&["--cost", "light"]);
    let json = json_file("a2s");
    let addr = server.addr.to_string();
    let out = probe_for_3s(&addr, ["--protocol", "a2s"], &json);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tp_arena"),
        "the map from the reply: {stdout}"
    );
    let v = read_json(&json);
    assert_eq!(v["schema"], "tickpack.probe/1");
    assert_eq!(v["protocol"], "a2s");
    let q = &v["queries"];
    // At 0, 1 and 2 s (fewer only if this machine stalled the prober).
    let sent = q["sent"].as_u64().unwrap();
    assert!((1..=3).contains(&sent), "{v}");
    assert_eq!(q["answered"], sent, "{v}");
    assert_eq!(q["lost"], 0, "{v}");
    // The reference server asks for a challenge first.
    assert!(q["challenges"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["query_latency_us"]["count"], sent, "{v}");
    assert!(v["query_latency_us"]["p99"].as_u64().unwrap() > 0);
    let t = &v["targets"][0];
    assert_eq!(t["address"], addr);
    assert_eq!(t["server"]["map"], "tp_arena");
    assert!(!t["histogram"].as_str().unwrap().is_empty());
}

#[test]
fn probe_reads_the_real_ioq3_servers_getinfo() {
    if !Q3Server::available("probe q3") {
        return;
    }
    let _g = serial();
    // The engine's default 8 slots and two bots, at sv_fps 20.
    let oa = Q3Server::start(&[
        "+set",
        "sv_maxclients",
        "8",
        "+set",
        "bot_minplayers",
        "2",
        "+set",
        "sv_fps",
        "20",
    ]);
    let json = json_file("q3");
    let addr = oa.addr().to_string();
    // One query a second: within ioq3's per-address limit after its burst.
    let out = probe_for_3s(&addr, ["--protocol", "q3"], &json);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v = read_json(&json);
    let q = &v["queries"];
    assert!(q["answered"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["targets"][0]["server"]["map"], "oa_dm1", "{v}");
    assert_eq!(v["targets"][0]["server"]["max_players"], 8, "{v}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("oa_dm1"));
}

#[test]
fn a_target_that_never_answers_exits_5_with_one_line() {
    let _g = serial();
    // Held, so no ICMP "port unreachable": queries simply go unanswered.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let json = json_file("silent");
    let out = run(&[
        "probe",
        "--target",
        &addr,
        "--protocol",
        "q3",
        "--interval",
        "200ms",
        "--duration",
        "600ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(EXIT_UNREACHABLE), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("never answered") && err.contains(&addr),
        "{err}"
    );
    let v = read_json(&json);
    assert_eq!(v["queries"]["answered"], 0);
    assert_eq!(v["queries"]["lost"], v["queries"]["sent"]);
    assert!(v["queries"]["sent"].as_u64().unwrap() >= 1);
}

#[test]
fn bad_probe_input_exits_2_before_sending() {
    for (args, says) in [
        (
            &["--target", "not-an-address", "--protocol", "q3"][..],
            "not an address",
        ),
        (&["--target", "127.0.0.1:0", "--protocol", "q3"], "port 0"),
        (
            &["--target", "127.0.0.1:27960", "--protocol", "gamespy"],
            "q3, a2s or gamedig:NAME",
        ),
        (
            &[
                "--target",
                "127.0.0.1:27960",
                "--protocol",
                "q3",
                "--interval",
                "50ms",
            ],
            "100 ms",
        ),
        (
            &[
                "--target",
                "127.0.0.1:27960",
                "--protocol",
                "a2s",
                "--duration",
                "0s",
            ],
            "more than 0",
        ),
    ] {
        refused_as_config(&["probe"], args, says);
    }
}

/// `tickpack COMMAND.. ARGS..` exits with the config error and says `says`.
fn refused_as_config(command: &[&str], args: &[&str], says: &str) {
    let mut all = command.to_vec();
    all.extend_from_slice(args);
    let out = run(&all);
    assert_eq!(
        out.status.code(),
        Some(EXIT_CONFIG),
        "{all:?}: {}",
        text(&out)
    );
    assert!(text(&out).contains(says), "{all:?}: {}", text(&out));
}

#[test]
fn an_interrupted_probe_still_writes_its_result() {
    let _g = serial();
    let server = Server::start(&["--cost", "light"]);
    let json = json_file("interrupted");
    let child = Command::new(exe())
        .args([
            "probe",
            "--target",
            &server.addr.to_string(),
            "--protocol",
            "a2s",
        ])
        .args([
            "--interval",
            "200ms",
            "--duration",
            "30s",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start probe");
    struct Reaped(Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut probe = Reaped(child);
    std::thread::sleep(Duration::from_millis(1200));
    // SAFETY: kill(2) on our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(probe.0.id() as i32, libc::SIGINT) }, 0);
    let ended = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
        probe.0.try_wait().unwrap()
    })
    .expect("probe ended after SIGINT");
    assert_eq!(ended.code(), Some(0));
    let v = read_json(&json);
    assert_eq!(v["interrupted"], true, "{v}");
    assert!(v["duration_s"].as_f64().unwrap() < 10.0, "{v}");
    assert!(v["queries"]["answered"].as_u64().unwrap() >= 1, "{v}");
    let q = &v["queries"];
    assert_eq!(
        q["sent"].as_u64().unwrap(),
        q["answered"].as_u64().unwrap() + q["lost"].as_u64().unwrap()
    );
}

#[test]
fn bench_query_limit_needs_a_probe_and_a_known_protocol() {
    for (args, says) in [
        (&["--qos-query-p99-ms", "20"][..], "needs --probe"),
        (&["--probe", "gamespy"], "q3, a2s or gamedig:NAME"),
        (
            &["--probe", "a2s", "--qos-query-p99-ms", "0"],
            "more than 0",
        ),
    ] {
        refused_as_config(&["bench", "--quick"], args, says);
    }
}

#[test]
fn bench_with_a_probe_records_query_latency_per_step() {
    let _g = serial();
    let dir = std::env::temp_dir().join(format!("tp-probe-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (out_dir, run_dir) = (dir.join("out"), dir.join("run"));
    let out = Command::new(exe())
        .args(["bench", "--quick", "--max-steps", "1", "--cost", "light"])
        .args([
            "--backend",
            "process",
            "--name",
            "pq",
            "--step-duration",
            "3s",
        ])
        .args(["--probe", "a2s", "--qos-query-p99-ms", "1000", "--out"])
        .arg(&out_dir)
        .arg("--run-dir")
        .arg(&run_dir)
        .output()
        .unwrap();
    // 4: this machine may miss a players' QoS limit; the query figures are
    // recorded either way.
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", text(&out));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("result.json")).unwrap())
            .unwrap();
    assert_eq!(r["settings"]["probe"], "a2s");
    assert_eq!(r["settings"]["qos"]["p99_query_us"], 1_000_000);
    let s = &r["ladders"][0]["steps"][0];
    // Queries at the window's start and 2 s in, to the step's one server.
    let q = &s["queries"];
    let answered = q["answered"].as_u64().unwrap();
    assert!(answered >= 1, "{s}");
    assert_eq!(
        q["sent"].as_u64().unwrap(),
        answered + q["lost"].as_u64().unwrap()
    );
    assert_eq!(s["query_latency_us"]["count"], answered);
    let h =
        tickpack_report::decode_histogram(s["histograms"]["query_latency_us"].as_str().unwrap())
            .unwrap();
    assert_eq!(h.len(), answered);
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("Query latency p99"));
    assert_eq!(support::Leftovers::of("tppq").scan(), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A definition file whose query is a gamedig protocol, in a temp file
/// removed when the guard drops.
struct GamedigDef(PathBuf);

impl GamedigDef {
    fn write(name: &str, protocol: &str) -> GamedigDef {
        let p = std::env::temp_dir().join(format!("tp-gamedig-{name}-{}.toml", std::process::id()));
        std::fs::write(
            &p,
            format!(
                "name = \"gd-{name}\"\ndescription = \"a game asked with gamedig\"\ncommand = \"/usr/bin/true {{port}}\"\nport = 27015\nslots = 8\n[tick]\nhz = 30\n[query]\nprotocol = \"gamedig\"\ngamedig = \"{protocol}\"\n"
            ),
        )
        .unwrap();
        GamedigDef(p)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for GamedigDef {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `probe` of one target, asked as `how` says (`["--game", DEF]` or
/// `["--protocol", NAME]`), a query a second for 3 s, its result in `json`.
fn probe_for_3s(addr: &str, how: [&str; 2], json: &Path) -> std::process::Output {
    run(&[
        "probe",
        "--target",
        addr,
        how[0],
        how[1],
        "--interval",
        "1s",
        "--duration",
        "3s",
        "--json",
        json.to_str().unwrap(),
    ])
}

#[test]
fn probe_asks_the_reference_server_through_a_gamedig_definition() {
    let _g = serial();
    let server = Server::start(&["--cost", "light"]);
    let def = GamedigDef::write("valve", "valve");
    let json = json_file("gamedig");
    let addr = server.addr.to_string();
    let out = probe_for_3s(&addr, ["--game", def.path()], &json);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("gamedig valve queries"), "{stdout}");
    assert!(stdout.contains("tp_arena"), "{stdout}");
    let v = read_json(&json);
    assert_eq!(v["protocol"], "gamedig:valve");
    let q = &v["queries"];
    let sent = q["sent"].as_u64().unwrap();
    assert!((1..=3).contains(&sent), "{v}");
    assert_eq!(q["answered"], sent, "{v}");
    assert_eq!(v["query_latency_us"]["count"], sent, "{v}");
    assert!(v["query_latency_us"]["p99"].as_u64().unwrap() > 0);
    let s = &v["targets"][0]["server"];
    assert_eq!(s["map"], "tp_arena", "{v}");
    assert!(s["players"].is_u64(), "A2S counts are known: {v}");
}

#[test]
fn probe_asks_openarena_with_gamedig_quake3_and_leaves_players_unknown() {
    if !Q3Server::available("probe gamedig quake3") {
        return;
    }
    let _g = serial();
    let oa = Q3Server::start(&["+set", "sv_maxclients", "8", "+set", "bot_minplayers", "2"]);
    let def = GamedigDef::write("quake3", "quake3");
    let json = json_file("gamedig-q3");
    let addr = oa.addr().to_string();
    let out = probe_for_3s(&addr, ["--game", def.path()], &json);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v = read_json(&json);
    assert!(v["queries"]["answered"].as_u64().unwrap() > 0, "{v}");
    let s = &v["targets"][0]["server"];
    assert_eq!(s["map"], "oa_dm1", "{v}");
    assert_eq!(s["max_players"], 8, "{v}");
    // gamedig 0.9 says 0 for every Quake server: not believed.
    assert!(s["players"].is_null(), "{v}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("?/8 players"));
}

#[test]
fn an_unknown_gamedig_protocol_is_refused_with_its_line_before_any_work() {
    let def = GamedigDef::write("bad", "q3a");
    let out = run(&["games", "check", def.path()]);
    assert_eq!(out.status.code(), Some(EXIT_CONFIG), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:10: query: unknown gamedig protocol \"q3a\"",
            def.path()
        )),
        "{err}"
    );
    let out = run(&["probe", "--target", "127.0.0.1:9", "--game", def.path()]);
    assert_eq!(out.status.code(), Some(EXIT_CONFIG), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains(":10: query: unknown gamedig protocol"));
}
