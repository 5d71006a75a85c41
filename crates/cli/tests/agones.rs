//! The reference server and the OpenArena sidecar under the real Agones SDK
//! server (`sdk-server` v1.60 in local mode: no Kubernetes), checked
//! through the SDK server's own HTTP API (`GET /gameserver`) and its log.
//!
//! The binary is `<workspace>/../shared/agones/sdk-server`, or the path in
//! `TICKPACK_AGONES_SDK_SERVER`. Where it is missing the tests print that
//! they were skipped and why; under CI (`CI=true`) that is a failure.
//!
//! How health is observed: in local mode the SDK server does not turn a
//! GameServer Unhealthy (that is the controller's job in a cluster), but it
//! logs `Health Ping Received!` for every ping; the tests count those lines.
//! While the process is stopped (SIGSTOP), the count stays put over several
//! ping periods; after SIGCONT it grows again.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{assert_one_error_line, exe, serial, server, text, wait_until};
use tickpack_testkit::{free_tcp_ports, skip_unless_ci, Q3Server};

/// The variable that overrides where the SDK server binary is.
const ENV_SDK_SERVER: &str = "TICKPACK_AGONES_SDK_SERVER";
/// What the SDK server logs for each health ping (local mode).
const HEALTH_LINE: &str = "Health Ping Received!";
/// The exit code for "no SDK server answered".
const EXIT_UNREACHABLE: i32 = 5;

/// A GameServer that starts Scheduled (so Ready is observable) with the
/// `players` list and counter tickpack reports to, and room for player
/// tracking (local mode takes its capacity from `status.players`).
const GAME_SERVER_YAML: &str = "apiVersion: agones.dev/v1
kind: GameServer
metadata:
  name: tickpack-test
spec:
  ports:
  - name: default
    containerPort: 27015
    protocol: UDP
  lists:
    players:
      capacity: 100
  counters:
    players:
      count: 0
      capacity: 100
status:
  state: Scheduled
  players:
    count: 0
    capacity: 100
  lists:
    players:
      capacity: 100
      values: []
  counters:
    players:
      count: 0
      capacity: 100
";

/// Where the SDK server binary should be.
fn sdk_server_path() -> PathBuf {
    if let Some(p) = std::env::var_os(ENV_SDK_SERVER) {
        return PathBuf::from(p);
    }
    // crates/cli -> the workspace root -> beside it.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agones/sdk-server")
}

/// The binary, or `None` after printing why the test is skipped; under CI
/// a missing binary fails the test.
fn sdk_server_available(test: &str) -> Option<PathBuf> {
    let p = sdk_server_path();
    if p.is_file() {
        return Some(p);
    }
    skip_unless_ci(
        test,
        &format!(
            "the Agones SDK server is not at {} (set {ENV_SDK_SERVER} to its path)",
            p.display()
        ),
    );
    None
}

/// A real SDK server in local mode, killed by PID and its directory removed
/// when dropped.
struct SdkServer {
    child: Child,
    http_port: u16,
    dir: PathBuf,
}

impl SdkServer {
    fn start(program: &Path) -> SdkServer {
        SdkServer::start_with(program, &[])
    }

    /// Starts it with `extra` flags (e.g. feature gates).
    fn start_with(program: &Path, extra: &[&str]) -> SdkServer {
        let [grpc, http, health] = free_tcp_ports::<3>();
        let dir = std::env::temp_dir().join(format!("tp-agones-{}-{http}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let yaml = dir.join("gameserver.yaml");
        std::fs::File::create(&yaml)
            .and_then(|mut f| f.write_all(GAME_SERVER_YAML.as_bytes()))
            .unwrap();
        let log = std::fs::File::create(dir.join("sdk-server.log")).unwrap();
        let child = Command::new(program)
            .args(["--local", "--address", "127.0.0.1"])
            .args(["--grpc-port", &grpc.to_string()])
            .args(["--http-port", &http.to_string()])
            .args(["--health-port", &health.to_string()])
            .args(extra)
            .arg("-f")
            .arg(&yaml)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        let s = SdkServer {
            child,
            http_port: http,
            dir,
        };
        let up = wait_until(Duration::from_secs(15), Duration::from_millis(100), || {
            s.try_game_server()
        });
        assert!(up.is_some(), "the SDK server did not answer:\n{}", s.log());
        s
    }

    fn try_game_server(&self) -> Option<Value> {
        let mut resp = ureq::get(format!("http://127.0.0.1:{}/gameserver", self.http_port))
            .call()
            .ok()?;
        serde_json::from_str(&resp.body_mut().read_to_string().ok()?).ok()
    }

    /// `GET /gameserver`.
    fn game_server(&self) -> Value {
        self.try_game_server()
            .unwrap_or_else(|| panic!("GET /gameserver failed:\n{}", self.log()))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sdk-server.log")).unwrap_or_default()
    }

    /// Health pings the SDK server received so far.
    fn health_pings(&self) -> usize {
        self.log().matches(HEALTH_LINE).count()
    }

    /// Waits (at most `limit`) until `GET /gameserver` satisfies `ok`;
    /// panics with `what`, the last answer and the log otherwise.
    fn wait_for(&self, what: &str, limit: Duration, ok: impl Fn(&Value) -> bool) {
        let mut last = Value::Null;
        let got = wait_until(limit, Duration::from_millis(200), || {
            last = self.try_game_server()?;
            ok(&last).then_some(())
        });
        assert!(
            got.is_some(),
            "{what}: not seen within {limit:?}; last GameServer: {last}\nSDK server log:\n{}",
            self.log()
        );
    }

    fn wait_state(&self, state: &str) {
        self.wait_for(&format!("state {state}"), Duration::from_secs(15), |g| {
            g["status"]["state"] == state
        });
    }

    /// Waits until the `players` list holds `n` values and the counter says `n`.
    fn wait_players(&self, n: usize, limit: Duration) {
        self.wait_for(&format!("{n} players"), limit, |g| {
            let values = g["status"]["lists"]["players"]["values"]
                .as_array()
                .map_or(0, Vec::len);
            // int64 is a string in the SDK server's JSON.
            let count = g["status"]["counters"]["players"]["count"].as_str();
            values == n && count == Some(n.to_string().as_str())
        });
    }

    /// Asserts that health pings keep arriving: at least two more within
    /// 15 s (one a second is sent while the game runs).
    fn assert_health_arrives(&self, what: &str) {
        let before = self.health_pings();
        let got = wait_until(Duration::from_secs(15), Duration::from_millis(200), || {
            (self.health_pings() >= before + 2).then_some(())
        });
        assert!(
            got.is_some(),
            "{what}: health pings stopped at {}\n{}",
            self.health_pings(),
            self.log()
        );
    }

    /// Asserts that no health ping arrives over 4 s (four ping periods),
    /// after 3 s for a request in flight at the stop to land.
    fn assert_health_stopped(&self, what: &str) {
        std::thread::sleep(Duration::from_secs(3));
        let stopped_at = self.health_pings();
        std::thread::sleep(Duration::from_secs(4));
        assert_eq!(
            self.health_pings(),
            stopped_at,
            "{what}: health pings went on while stopped\n{}",
            self.log()
        );
    }
}

impl Drop for SdkServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Sends `sig` to our own child `pid`.
fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{sig} {pid} failed");
}

/// A child killed by PID (and continued first, in case it was stopped)
/// when dropped.
struct Guard(Child);

/// Two reference players at `target` for `duration`, on the load
/// generator's CPU, ended on drop.
fn two_players(target: &str, duration: &str) -> Guard {
    let (_, players_cpu) = server::cpus();
    quiet_tickpack(&[
        "players",
        "--target",
        target,
        "--players",
        "2",
        "--duration",
        duration,
        "--cpus",
        &players_cpu,
        "--quiet",
    ])
}

/// `tickpack ARGS` started with its output discarded, ended on drop.
fn quiet_tickpack(args: &[&str]) -> Guard {
    Guard(
        Command::new(exe())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.try_wait().is_ok_and(|s| s.is_none()) {
            let _ = Command::new("kill")
                .args(["-CONT", &self.0.id().to_string()])
                .status();
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (at most 10 s) for `child` to exit; its status.
fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    wait_until(Duration::from_secs(10), Duration::from_millis(50), || {
        child.try_wait().unwrap()
    })
    .expect("did not exit within 10 s of SIGTERM")
}

fn labels(g: &Value) -> &serde_json::Map<String, Value> {
    g["object_meta"]["labels"].as_object().expect("labels")
}

#[test]
fn the_reference_server_under_agones_is_ready_healthy_while_ticking_lists_players_and_shuts_down_on_sigterm(
) {
    let Some(program) = sdk_server_available("reference server under agones") else {
        return;
    };
    let _g = serial();
    let sdk = SdkServer::start(&program);
    assert_eq!(sdk.game_server()["status"]["state"], "Scheduled");
    let port = sdk.http_port.to_string();
    let mut srv = server::Server::start(&["--agones-http-port", &port]);

    sdk.wait_state("Ready");
    sdk.assert_health_arrives("while ticking");
    // The recent tick p99 as a label (the SDK server prefixes it).
    sdk.wait_for("the tick p99 label", Duration::from_secs(15), |g| {
        labels(g)
            .get("agones.dev/sdk-tick-p99-us")
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
    });

    // Two players come and go.
    let target = srv.addr.to_string();
    // Longer than the labels' period (10 s), so the players label catches
    // up while they play.
    let mut players = two_players(&target, "14s");
    sdk.wait_players(2, Duration::from_secs(15));
    let names = sdk.game_server()["status"]["lists"]["players"]["values"].clone();
    assert_eq!(names, serde_json::json!(["player-0", "player-1"]));
    let players_label = |n: &'static str| {
        move |g: &Value| labels(g).get("agones.dev/sdk-players") == Some(&Value::from(n))
    };
    sdk.wait_for(
        "players label 2",
        Duration::from_secs(15),
        players_label("2"),
    );
    let _ = wait_until(Duration::from_secs(40), Duration::from_millis(100), || {
        players.0.try_wait().unwrap()
    });
    sdk.wait_players(0, Duration::from_secs(15));
    sdk.wait_for(
        "players label 0",
        Duration::from_secs(15),
        players_label("0"),
    );

    // A stalled tick loop stops the health pings; they resume with it.
    let pid = srv.child.id();
    signal(pid, "STOP");
    sdk.assert_health_stopped("tick loop stopped");
    signal(pid, "CONT");
    sdk.assert_health_arrives("after SIGCONT");

    let status = srv.terminate();
    assert!(status.success(), "server exit: {status:?}");
    sdk.wait_state("Shutdown");
}

#[test]
fn with_player_tracking_enabled_players_are_also_tracked() {
    let Some(program) = sdk_server_available("agones player tracking") else {
        return;
    };
    let _g = serial();
    let sdk = SdkServer::start_with(&program, &["--feature-gates", "PlayerTracking=true"]);
    let port = sdk.http_port.to_string();
    let mut srv = server::Server::start(&["--agones-http-port", &port]);
    sdk.wait_state("Ready");
    let target = srv.addr.to_string();
    let mut players = two_players(&target, "4s");
    let tracked = |n: usize| {
        move |g: &Value| {
            let p = &g["status"]["players"];
            p["ids"].as_array().map_or(0, Vec::len) == n && p["count"] == n.to_string().as_str()
        }
    };
    sdk.wait_for("2 tracked players", Duration::from_secs(15), tracked(2));
    // The list and counter too (the GameServer declares them).
    sdk.wait_players(2, Duration::from_secs(5));
    let _ = wait_until(Duration::from_secs(30), Duration::from_millis(100), || {
        players.0.try_wait().unwrap()
    });
    sdk.wait_for("no tracked players", Duration::from_secs(15), tracked(0));
    let status = srv.terminate();
    assert!(status.success(), "server exit: {status:?}");
    sdk.wait_state("Shutdown");
}

#[test]
fn the_reference_server_says_shutdown_when_its_match_ends() {
    let Some(program) = sdk_server_available("agones match end") else {
        return;
    };
    let _g = serial();
    let sdk = SdkServer::start(&program);
    let out = Command::new(exe())
        .args(["server", "--bind", "127.0.0.1:0", "--duration", "2s"])
        // Agones' own variable, as in a GameServer pod.
        .env("AGONES_SDK_HTTP_PORT", sdk.http_port.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let g = sdk.game_server();
    assert_eq!(g["status"]["state"], "Shutdown", "{g}");
    let log = sdk.log();
    assert!(log.contains("Ready request has been received!"), "{log}");
    assert!(log.contains(HEALTH_LINE), "{log}");
}

#[test]
fn the_openarena_sidecar_makes_an_unmodified_server_an_agones_game_server() {
    let Some(program) = sdk_server_available("openarena sidecar") else {
        return;
    };
    if !Q3Server::available("openarena sidecar") {
        return;
    }
    let _g = serial();
    let oa = Q3Server::start(&["+set", "sv_fps", "20"]);
    let sdk = SdkServer::start(&program);
    let target = oa.addr().to_string();
    let port = sdk.http_port.to_string();
    let sidecar = Command::new(exe())
        .args(["agones-sidecar", "--game", "openarena", "--target", &target])
        .args(["--sdk-http-port", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut sidecar = Guard(sidecar);

    sdk.wait_state("Ready");
    sdk.assert_health_arrives("while OpenArena answers");

    // Two emulated players join the real server and leave.
    let mut players = quiet_tickpack(&[
        "players",
        "--game",
        "openarena",
        "--target",
        &target,
        "--players",
        "2",
        "--duration",
        "8s",
        "--quiet",
    ]);
    sdk.wait_players(2, Duration::from_secs(30));
    let _ = wait_until(Duration::from_secs(40), Duration::from_millis(100), || {
        players.0.try_wait().unwrap()
    });
    sdk.wait_players(0, Duration::from_secs(30));

    // A hung game server stops answering, so the pings stop.
    signal(oa.pid(), "STOP");
    sdk.assert_health_stopped("OpenArena stopped");
    signal(oa.pid(), "CONT");
    sdk.assert_health_arrives("after SIGCONT");

    signal(sidecar.0.id(), "TERM");
    let status = wait_exit(&mut sidecar.0);
    assert!(status.success(), "sidecar exit: {status:?}");
    sdk.wait_state("Shutdown");
    drop(oa);
}

#[test]
fn without_an_sdk_server_agones_is_exit_5_saying_where_it_looked() {
    // A port nothing listens on (bound, then closed).
    let [closed] = free_tcp_ports::<1>();
    let port = closed.to_string();
    let cases: [(&str, Vec<&str>, Option<&str>); 3] = [
        (
            "--agones-http-port",
            vec![
                "server",
                "--bind",
                "127.0.0.1:0",
                "--agones-http-port",
                &port,
            ],
            None,
        ),
        (
            "AGONES_SDK_HTTP_PORT",
            vec!["server", "--bind", "127.0.0.1:0", "--agones"],
            Some(&port),
        ),
        (
            "--sdk-http-port",
            vec![
                "agones-sidecar",
                "--game",
                "openarena",
                "--sdk-http-port",
                &port,
            ],
            None,
        ),
    ];
    for (from, args, env) in cases {
        let mut c = Command::new(exe());
        c.args(&args);
        c.env_remove("AGONES_SDK_GRPC_PORT");
        match env {
            Some(v) => c.env("AGONES_SDK_HTTP_PORT", v),
            None => c.env_remove("AGONES_SDK_HTTP_PORT"),
        };
        let out = c.output().unwrap();
        let err = assert_one_error_line(&out, &[EXIT_UNREACHABLE], &args.join(" "));
        assert!(err.contains(&format!("127.0.0.1:{closed}")), "{err}");
        assert!(err.contains(from), "{err}");
        // Nothing started: no listening banner.
        assert!(out.stdout.is_empty(), "{}", text(&out));
    }
}

#[test]
fn an_agones_port_variable_that_is_not_a_port_is_exit_2() {
    let out = Command::new(exe())
        .args(["server", "--bind", "127.0.0.1:0"])
        .env("AGONES_SDK_HTTP_PORT", "nine")
        .output()
        .unwrap();
    let err = assert_one_error_line(&out, &[2], "server with a bad AGONES_SDK_HTTP_PORT");
    assert!(err.contains("AGONES_SDK_HTTP_PORT"), "{err}");
}

#[test]
fn the_sidecar_refuses_a_pace_ioquake3_would_rate_limit() {
    let out = Command::new(exe())
        .args(["agones-sidecar", "--game", "openarena", "--every", "200ms"])
        .output()
        .unwrap();
    let err = assert_one_error_line(&out, &[2], "sidecar --every 200ms");
    assert!(err.contains("--every"), "{err}");
}

#[test]
fn the_sidecar_takes_a_query_protocol_with_a_target_instead_of_a_game() {
    // As the fleet manifests run it: the pace rule holds for q3 alone too.
    let out = Command::new(exe())
        .args([
            "agones-sidecar",
            "--query",
            "q3",
            "--target",
            "127.0.0.1:27960",
            "--every",
            "200ms",
        ])
        .output()
        .unwrap();
    let err = assert_one_error_line(&out, &[2], "sidecar --query q3 --every 200ms");
    assert!(err.contains("--every"), "{err}");
    for (args, words) in [
        (&["agones-sidecar", "--query", "q3"][..], "--target"),
        (
            &[
                "agones-sidecar",
                "--query",
                "gamedig",
                "--target",
                "127.0.0.1:1",
            ][..],
            "gamedig",
        ),
        (
            &[
                "agones-sidecar",
                "--game",
                "openarena",
                "--query",
                "q3",
                "--target",
                "127.0.0.1:1",
            ][..],
            "--query",
        ),
    ] {
        let out = Command::new(exe()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(words), "{args:?}: {}", text(&out));
    }
}

#[test]
fn a_demo_in_an_agones_pod_keeps_its_own_server_away_from_the_pods_sdk_server() {
    // The variables name an SDK server nothing serves: a demo server that
    // inherited them would exit 5 and the demo would never start.
    let [closed] = free_tcp_ports::<1>();
    let out = Command::new(exe())
        .args(["demo", "--duration", "1s"])
        .env("AGONES_SDK_HTTP_PORT", closed.to_string())
        .env("AGONES_SDK_GRPC_PORT", "1")
        .output()
        .unwrap();
    let all = text(&out);
    assert!(!all.contains("Agones"), "{all}");
    assert!(!all.contains("did not start"), "{all}");
    // 0, or 6 if a busy machine lost a snapshot: the demo ran.
    assert!(matches!(out.status.code(), Some(0 | 6)), "{all}");
}
