//! Load from many machines, one result: `players --targets-file` (address
//! lines, kubectl gameservers JSON) and `report merge`, end to end with the
//! real binary. Traffic goes only to servers these tests start on
//! 127.0.0.1; the fixture's other addresses are only parsed, by tests that
//! fail before any player starts.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use support::server::{cpus, Server};
use support::{assert_one_error_line, exe, run, serial, text};

/// A directory of this test, removed when dropped (pass or fail).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("tp-load-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    fn file(&self, name: &str, body: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A players child killed by PID if the test ends before it does.
struct Players(Option<Child>);

impl Players {
    fn spawn(args: &[&str]) -> Players {
        let (_, player_cpu) = cpus();
        let child = Command::new(exe())
            .args(["players", "--cpus", &player_cpu])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start players");
        Players(Some(child))
    }

    /// Waits at most `limit` for the run to end.
    fn finish(mut self, limit: Duration) -> Output {
        let t0 = Instant::now();
        let mut child = self.0.take().unwrap();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("players did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    }
}

impl Drop for Players {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The kubectl listing of `ready` (name, address, port) in state Ready,
/// beside servers that must be skipped (their addresses are never used).
fn kubectl_json(ready: &[(&str, String, u16)]) -> String {
    let mut items: Vec<Value> = ready
        .iter()
        .map(|(name, addr, port)| {
            json!({
                "apiVersion": "agones.dev/v1", "kind": "GameServer",
                "metadata": {"name": name, "namespace": "default"},
                "status": {"state": "Ready", "address": addr,
                           "ports": [{"name": "default", "port": port}]}
            })
        })
        .collect();
    for (name, state) in [("gs-starting", "Scheduled"), ("gs-gone", "Shutdown")] {
        items.push(json!({
            "apiVersion": "agones.dev/v1", "kind": "GameServer",
            "metadata": {"name": name},
            "status": {"state": state, "address": "192.0.2.10",
                       "ports": [{"name": "default", "port": 7654}]}
        }));
    }
    serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "List", "items": items}))
        .unwrap()
}

#[test]
fn a_bad_line_of_a_targets_file_is_named_and_nothing_starts() {
    let dir = TempDir::new("badline");
    let result = dir.0.join("p.json");
    let cases = [
        (
            "addr.txt",
            "# servers\n127.0.0.1:27015\n\n127.0.0.1\n".to_string(),
            ":4: \"127.0.0.1\" is not an address",
        ),
        (
            "dup.txt",
            "127.0.0.1:27015\n127.0.0.1:27016\n127.0.0.1:27015\n".to_string(),
            ":3: 127.0.0.1:27015 is already the target of line 1",
        ),
        (
            "port0.txt",
            "127.0.0.1:0\n".to_string(),
            ":1: \"127.0.0.1:0\": port 0 is not a server's port",
        ),
        (
            "empty.txt",
            "# none yet\n".to_string(),
            ": no address in the file",
        ),
        (
            "gs.json",
            include_str!("fixtures/gameservers.json").replace("\"port\": 7001", "\"port\": 70000"),
            ":55: game server tickpack-x2k4p-busy (Allocated): status.ports: no port",
        ),
        (
            "broken.json",
            "{\n  \"items\": [\n    {\"status\": }\n  ]\n}\n".to_string(),
            ":3: not valid JSON",
        ),
    ];
    for (name, body, want) in cases {
        let f = dir.file(name, &body);
        let out = run(&[
            "players",
            "--targets-file",
            f.to_str().unwrap(),
            "--players",
            "2",
            "--duration",
            "1s",
            "--json",
            result.to_str().unwrap(),
        ]);
        let err = assert_one_error_line(&out, &[2], name);
        let want = format!("tickpack: {}{want}", f.display());
        assert!(err.starts_with(&want), "{name}: {err}\nwanted: {want}");
        assert!(out.stdout.is_empty(), "{name}: nothing ran: {}", text(&out));
        assert!(!result.exists(), "{name}: no result written");
    }
    // `-` reads stdin, named so in the error.
    let mut child = Command::new(exe())
        .args(["players", "--targets-file", "-", "--json"])
        .arg(&result)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        b"127.0.0.1:27015\n127.0.0.1:27016 x\n",
    )
    .unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let err = assert_one_error_line(&out, &[2], "stdin");
    assert!(
        err.starts_with("tickpack: <stdin>:2: \"127.0.0.1:27016 x\": one address per line"),
        "{err}"
    );
    assert!(!result.exists());
    let out = run(&["players", "--targets-file", "x", "--target", "127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot be used with"), "{}", text(&out));
}

#[test]
fn kubectl_gameservers_json_drives_players_to_the_ready_servers_only() {
    let _g = serial();
    let dir = TempDir::new("kubectl");
    let mut a = Server::start(&["--tick-hz", "50", "--bots", "2", "--cost", "light"]);
    let mut b = Server::start(&["--tick-hz", "50", "--bots", "2", "--cost", "light"]);
    let gs = dir.file(
        "gs.json",
        &kubectl_json(&[
            ("gs-a", a.addr.ip().to_string(), a.addr.port()),
            ("gs-b", b.addr.ip().to_string(), b.addr.port()),
        ]),
    );
    let json = dir.0.join("p.json");
    let out = Players::spawn(&[
        "--targets-file",
        gs.to_str().unwrap(),
        "--players",
        "4",
        "--duration",
        "2s",
        "--json",
        json.to_str().unwrap(),
    ])
    .finish(Duration::from_secs(30));
    a.terminate();
    b.terminate();
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("2 game server(s) Ready or Allocated; skipped 2: gs-starting (Scheduled), gs-gone (Shutdown)"),
        "{}",
        text(&out)
    );
    assert!(
        matches!(out.status.code(), Some(0 | 6)),
        "served (loss on a busy machine is 6): {}",
        text(&out)
    );
    let doc = read_json(&json);
    assert_eq!(
        doc["targets"],
        json!([a.addr.to_string(), b.addr.to_string()])
    );
    assert_eq!(doc["players"], 4);
    assert_eq!(doc["connected"], 4, "{}", text(&out));
    // Both servers served: each player's snapshots name its server's tick
    // rate, and round robin gave each server two players.
    assert_eq!(doc["tick_hz"], 50);
    assert!(doc["snapshots"]["received"].as_u64().unwrap() > 0);
}

/// Runs two players runs together (two "load generators", each with its
/// own server), merges them and checks the sums.
#[test]
fn two_players_runs_merge_into_one_result_whose_counts_and_histograms_are_sums() {
    let _g = serial();
    let dir = TempDir::new("merge");
    let servers: Vec<Server> = (0..2)
        .map(|_| Server::start(&["--tick-hz", "50", "--bots", "2", "--cost", "light"]))
        .collect();
    let results: Vec<PathBuf> = (0..2).map(|i| dir.0.join(format!("lg{i}.json"))).collect();
    let runs: Vec<Players> = (0..2)
        .map(|i| {
            let targets = dir.file(
                &format!("servers{i}.txt"),
                &format!("# load generator {i}\n{}\n", servers[i].addr),
            );
            Players::spawn(&[
                "--targets-file",
                targets.to_str().unwrap(),
                "--players",
                &(2 + i).to_string(),
                "--duration",
                "2s",
                "--json",
                results[i].to_str().unwrap(),
                "--quiet",
            ])
        })
        .collect();
    for (i, r) in runs.into_iter().enumerate() {
        let out = r.finish(Duration::from_secs(30));
        assert!(
            matches!(out.status.code(), Some(0 | 6)),
            "run {i}: {}",
            text(&out)
        );
    }
    drop(servers);
    let docs: Vec<Value> = results.iter().map(|p| read_json(p)).collect();

    let all = dir.0.join("all.json");
    let out = run(&[
        "report",
        "merge",
        results[0].to_str().unwrap(),
        results[1].to_str().unwrap(),
        "--out",
        all.to_str().unwrap(),
    ]);
    assert!(
        matches!(out.status.code(), Some(0 | 6)),
        "merge: {}",
        text(&out)
    );
    let m = read_json(&all);
    let sum = |path: &str| -> u64 {
        docs.iter()
            .map(|d| d.pointer(path).unwrap().as_u64().unwrap())
            .sum()
    };
    for path in [
        "/players",
        "/connected",
        "/snapshots/expected",
        "/snapshots/received",
        "/snapshots/lost",
        "/commands/sent",
        "/commands/reflected",
        "/commands/lost",
        "/outages/count",
        "/outages/total_us",
        "/reconnects",
        "/traffic/datagrams_in",
        "/traffic/bytes_out",
        "/transaction_latency_us/count",
        "/rtt_us/count",
    ] {
        assert_eq!(
            m.pointer(path).unwrap().as_u64().unwrap(),
            sum(path),
            "{path}"
        );
    }
    assert_eq!(m["players"], 5);
    let max_longest = docs
        .iter()
        .map(|d| d["outages"]["longest_us"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(m["outages"]["longest_us"], max_longest);
    // The merged histogram holds every sample of both, and its summary is
    // recomputed from it.
    for h in ["transaction_latency_us", "rtt_us", "server_frame_us"] {
        let len = |d: &Value| {
            tickpack_report::decode_histogram(d["histograms"][h].as_str().unwrap())
                .unwrap()
                .len()
        };
        let merged =
            tickpack_report::decode_histogram(m["histograms"][h].as_str().unwrap()).unwrap();
        assert_eq!(merged.len(), len(&docs[0]) + len(&docs[1]), "{h}");
        assert_eq!(m[h]["count"], merged.len(), "{h}");
        assert_eq!(m[h]["p99"], merged.value_at_quantile(0.99), "{h}");
    }
    assert!(m["transaction_latency_us"]["count"].as_u64().unwrap() > 0);
    let sources: Vec<&str> = m["merged_from"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        [results[0].to_str().unwrap(), results[1].to_str().unwrap()]
    );

    // The report renders the merged result, marked as such.
    let page = dir.0.join("all.html");
    let out = run(&[
        "report",
        all.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("merged from 2 sources"), "marked as merged");
    assert!(html.contains("lg1.json"), "one row per source");

    // Runs that did not share settings are refused; nothing is written.
    let mut other = docs[1].clone();
    other["tick_hz"] = json!(30);
    let other = dir.file("other.json", &other.to_string());
    let refused = dir.0.join("refused.json");
    let merge_refused = |with: &Path| {
        run(&[
            "report",
            "merge",
            results[0].to_str().unwrap(),
            with.to_str().unwrap(),
            "--out",
            refused.to_str().unwrap(),
        ])
    };
    let out = merge_refused(&other);
    let err = assert_one_error_line(&out, &[2], "merge of different tick rates");
    assert!(
        err.contains("other.json: tick rate is 30 Hz, but") && err.contains("has 50 Hz"),
        "{err}"
    );
    assert!(!refused.exists());
    // A file that is no players result is named.
    let bench = dir.file("bench.json", r#"{"schema": "tickpack.bench/1"}"#);
    let out = merge_refused(&bench);
    let err = assert_one_error_line(&out, &[2], "merge of a bench result");
    assert!(
        err.contains("bench.json has schema \"tickpack.bench/1\""),
        "{err}"
    );
    assert!(!refused.exists());
    // No temp file was left beside the outputs.
    assert!(
        dir.entries().iter().all(|e| !e.starts_with('.')),
        "{:?}",
        dir.entries()
    );
}

/// `players --help` and `tco --help` showed only the exit codes: the
/// subcommand's `after_help` in main replaced their examples.
#[test]
fn players_and_tco_help_showed_the_exit_codes_instead_of_their_examples() {
    for (cmd, example) in [
        ("players", "--targets-file - --players 1200"),
        ("tco", "tickpack tco --before-watts 350"),
        ("report", "tickpack report merge lg1.json"),
    ] {
        let out = run(&[cmd, "--help"]);
        assert!(out.status.success(), "{}", text(&out));
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains(example), "{cmd}: {help}");
        assert!(help.contains("Exit codes: 0 done"), "{cmd}: {help}");
    }
}
