//! `tickpack host up --game openarena` and the game query health checks
//! (`--probe q3|a2s`) end to end. The OpenArena server (Debian's
//! `openarena-server`, installed by scripts/setup.sh) runs only in
//! namespaces these tests create or on 127.0.0.1, never contacting a
//! master server (the adapter's `dedicated 1` and empty `sv_master*`).
//!
//! Tests named `root_` need root (namespaces, cgroups, links; CI runs them
//! as root). Every host is taken down by its guard, pass or fail, and
//! nothing named `tp<name>` may be left.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tickpack_q3::query::{self as q3, Info, Reply};
use tickpack_testkit::q3_server;

use support::host::{all_running, events, temp_run_dir, Host};
use support::{children, exe, free_udp_ports, require_root, serial, Leftovers};

/// What the root tests need root for.
const ROOT: &str = "namespaces, cgroups, links";

/// Fails (never passes silently) unless the OpenArena server is installed.
fn require_openarena() {
    let program = q3_server::program();
    assert!(
        Path::new(&program).is_file(),
        "this test needs the OpenArena server ({program}): apt-get install openarena-server, or run scripts/setup.sh"
    );
}

/// Asks `addr` with `getinfo` until it answers (at most `limit`; one
/// request per 700 ms, below ioq3's per-address limit of one a second
/// after a burst of 10); the info string, if it answered.
fn getinfo(addr: SocketAddr, limit: Duration) -> Option<Info> {
    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while t0.elapsed() < limit {
        n += 1;
        let challenge = format!("t{n}");
        let _ = s.send_to(&q3::request(q3::Kind::Info, &challenge), addr);
        let deadline = Instant::now() + Duration::from_millis(700);
        while Instant::now() < deadline {
            let Ok((len, from)) = s.recv_from(&mut buf) else {
                break;
            };
            if let (true, Ok(Reply::Info(info))) = (from == addr, q3::decode(&buf[..len])) {
                if info.get("challenge") == Some(challenge.as_str()) {
                    return Some(info);
                }
            }
        }
    }
    None
}

fn instances(s: &Value) -> &Vec<Value> {
    s["instances"].as_array().unwrap()
}

/// The addresses of the two instances of `s`: each on `port`, each its
/// own IP.
fn two_own_addresses(s: &Value, port: u16) -> Vec<SocketAddr> {
    let addrs: Vec<SocketAddr> = instances(s)
        .iter()
        .map(|i| i["address"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(addrs.len(), 2);
    assert!(
        addrs.iter().all(|a| a.port() == port),
        "port {port} on every instance: {addrs:?}"
    );
    assert_ne!(addrs[0].ip(), addrs[1].ip(), "one IP per instance");
    addrs
}

/// Every instance runs and its query reported `map`.
fn all_on_map(s: &Value, map: &str) -> bool {
    all_running(s) && instances(s).iter().all(|i| i["map"] == map)
}

#[test]
fn root_openarena_instances_answer_getinfo_on_their_own_ips_and_come_back_after_kill_9() {
    let _g = serial();
    require_root(ROOT);
    require_openarena();
    let mut host = Host::up_in_temp(
        "game-host",
        "oa1",
        &[
            "--game",
            "openarena",
            "--instances",
            "2",
            "--backend",
            "netns",
            "--net",
            "bridge",
            "--range",
            "198.19.60.0/24",
            "--bots",
            "12",
        ],
    );
    let st = host.wait_for(|s| all_on_map(s, "oa_dm1"), "both instances on oa_dm1");
    // Quake 3's port on every instance.
    let addrs = two_own_addresses(&st, 27960);
    for a in &addrs {
        let info = getinfo(*a, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{a} did not answer getinfo"));
        assert_eq!(info.get("mapname"), Some("oa_dm1"), "{info:?}");
        assert_eq!(info.get("sv_maxclients"), Some("24"), "{info:?}");
        assert_eq!(info.get("pure"), Some("0"), "{info:?}");
    }
    // The status carries what the host's own queries found.
    let st = host.wait_for(
        |s| {
            instances(s).iter().all(|i| {
                i["query_latency_us"]["count"].as_u64().unwrap_or(0) >= 1
                    && i["players"].as_u64() == Some(12)
            })
        },
        "12 players (bots) and a query round trip on every instance",
    );
    assert_eq!(instances(&st)[0]["bots"], 12, "{st:#}");

    // kill -9 of the game server itself (the init's child): restarted.
    let init = instances(&st)[1]["pid"].as_u64().unwrap();
    let server = children(init);
    assert_eq!(server.len(), 1, "the init runs one server: {server:?}");
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", server[0])).unwrap();
    assert!(comm.contains("ioq3ded"), "the server process: {comm}");
    assert!(Command::new("kill")
        .args(["-9", &server[0].to_string()])
        .status()
        .unwrap()
        .success());
    let st = host.wait_for(
        |s| {
            let i = &instances(s)[1];
            i["restarts"] == 1 && i["state"] == "running" && i["pid"].as_u64() != Some(init)
        },
        "instance 2 restarted and running",
    );
    assert!(
        st["instances"][1]["last_exit"]
            .as_str()
            .is_some_and(|e| e.contains("signal 9")),
        "{st:#}"
    );
    assert_eq!(
        instances(&st)[0]["restarts"],
        0,
        "the neighbour is untouched"
    );
    let info = getinfo(addrs[1], Duration::from_secs(10)).expect("answers again");
    assert_eq!(info.get("mapname"), Some("oa_dm1"));

    let out = host.down();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = Leftovers::of("tpoa1").scan();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn openarena_on_127_0_0_1_rotates_its_maps_from_its_map_variable() {
    let _g = serial();
    require_openarena();
    let (host, port) = Host::up_on_free_ports(
        "game-host",
        "oa2",
        1,
        &[
            "--game",
            "openarena",
            "--set",
            "map=oa_dm2,oa_dm1",
            "--bots",
            "2",
        ],
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let info = getinfo(addr, Duration::from_secs(10)).expect("answers getinfo");
    assert_eq!(
        info.get("mapname"),
        Some("oa_dm2"),
        "the rotation's first map"
    );
    let cfg = std::fs::read_to_string(host.instance_dir(1).join(".openarena/baseoa/tickpack.cfg"))
        .unwrap();
    assert!(
        cfg.contains("map oa_dm1 ; set nextmap vstr tp_map1"),
        "{cfg}"
    );
    assert_eq!(cfg.matches("addbot").count(), 2, "{cfg}");
}

#[test]
fn probe_a2s_reads_the_reference_servers_map_and_round_trips() {
    let _g = serial();
    let (mut host, _) = Host::up_on_free_ports(
        "game-host",
        "pa1",
        1,
        &[
            "--command",
            "{tickpack} server --bind {ip}:{port} --cost light --bots 3",
            "--probe",
            "a2s",
        ],
    );
    let st = host.wait_for(
        |s| instances(s)[0]["query_latency_us"]["count"].as_u64() >= Some(2),
        "two A2S round trips",
    );
    let i = &instances(&st)[0];
    assert_eq!(i["map"], "tp_arena", "{i}");
    assert_eq!(i["bots"], 3, "{i}");
    let q = &i["query_latency_us"];
    assert!(q["p50"].as_u64() <= q["max"].as_u64(), "{q}");
}

#[test]
fn a_server_that_never_answers_its_query_is_reported_with_its_last_output() {
    let _g = serial();
    let port = free_udp_ports(1);
    let dir = temp_run_dir("game-host", "pq1");
    let conf = std::env::temp_dir().join(format!("tp-game-pq1-{}.toml", std::process::id()));
    std::fs::write(
        &conf,
        "[[file]]\npath = \"run.sh\"\ncontents = \"echo loading the silent server\\necho it will never answer\\nexec sleep 60\\n\"\n",
    )
    .unwrap();
    let host = Host::spawn(
        "pq1",
        &dir,
        &[
            "--config",
            conf.to_str().unwrap(),
            "--backend",
            "process",
            "--port",
            &port.to_string(),
            "--command",
            "/bin/sh {dir}/run.sh",
            "--probe",
            "q3",
        ],
        Stdio::null(),
    )
    .remove_on_drop(&dir)
    .remove_on_drop(&conf);
    // The host gives a first answer 15 s (`start_timeout_s`); wait longer
    // than `Host::wait_for` would.
    let reported = |s: &Value| !events(s, "never_ready").is_empty();
    let st = support::wait_until(Duration::from_secs(60), Duration::from_millis(200), || {
        host.status().filter(reported)
    })
    .expect("the silent server reported within 60 s");
    let event = &events(&st, "never_ready")[0];
    assert_eq!(event["why"]["never"], "answered", "{event}");
    assert_eq!(event["check"], "its q3 query", "{event}");
    assert!(
        event["last_output"]
            .as_str()
            .unwrap()
            .contains("loading the silent server | it will never answer"),
        "the last output lines: {event}"
    );
}

/// Runs `tickpack host up ARGS` with a run dir that must stay absent;
/// asserts exit 2 and one error line containing `needle`.
fn rejected(name: &str, args: &[&str], needle: &str) -> Output {
    let dir = temp_run_dir("game-host-bad", name);
    let out = Command::new(exe())
        .args(["host", "up", "--name", name, "--run-dir"])
        .arg(&dir)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("error:") || l.starts_with("tickpack:"))
        .collect();
    assert_eq!(errors.len(), 1, "{args:?}: one error line: {err}");
    assert!(
        errors[0].contains(needle),
        "{args:?}: {needle:?} not in {err}"
    );
    assert!(!dir.exists(), "{args:?} created {}", dir.display());
    assert!(
        Leftovers::of(&format!("tp{name}")).scan().is_empty(),
        "{args:?} left something"
    );
    out
}

#[test]
fn an_unknown_game_is_a_usage_error_naming_the_games() {
    let out = rejected("bg1", &["--game", "quake"], "unknown game \"quake\"");
    assert!(String::from_utf8_lossy(&out.stderr).contains("reference, openarena"));
}

#[test]
fn an_unknown_map_is_one_line_and_creates_nothing() {
    require_openarena();
    rejected(
        "bg2",
        &["--game", "openarena", "--set", "map=oa_dm1,no_such_map"],
        "map \"no_such_map\" is not in the openarena data",
    );
}

#[test]
fn bad_game_settings_are_one_line_each() {
    for (args, needle) in [
        (
            &["--game-arg", "g_gravity=600"][..],
            "--game-arg is gone from host up; write --set g_gravity=600",
        ),
        (&["--players-per-server", "12"], "write --bots 12 instead"),
        (&["--sv-fps", "40"], "write --tick-hz 40 instead"),
        (&["--map", "m1,m2"], "write --set map=m1,m2 instead"),
        (
            &["--game", "openarena", "--bots", "17"][..],
            "at most 16 bots",
        ),
        (
            &["--game", "nexuiz", "--command", "{tickpack} server"],
            "not both",
        ),
        (&["--health", "ping"], "q3, a2s"),
    ] {
        rejected("bg3", args, needle);
    }
}

#[test]
fn probe_and_health_do_not_go_together() {
    let out = rejected("bg4", &["--probe", "q3", "--health", "none"], "--probe");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

/// Regression: a server of `host up --game openarena` starts full of bots
/// (12 of 12), and had 16 slots, so the 5th and 6th emulated player of
/// `players --players 6` (the README's and the example) were
/// refused ("Server is full") until the game removed bots, one per 10 s.
#[test]
fn root_six_players_join_an_openarena_server_full_of_bots_at_once() {
    let _g = serial();
    require_root(ROOT);
    require_openarena();
    let mut host = Host::up_in_temp(
        "game-host",
        "oa6",
        &[
            "--game",
            "openarena",
            "--instances",
            "1",
            "--range",
            "198.19.61.0/24",
        ],
    );
    let st = host.wait_for(|s| all_on_map(s, "oa_dm1"), "the instance on oa_dm1");
    let addr = instances(&st)[0]["address"].as_str().unwrap().to_string();
    let out = Command::new(exe())
        .args([
            "players",
            "--game",
            "openarena",
            "--target",
            &addr,
            "--players",
            "6",
            "--duration",
            "3s",
            "--quiet",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    let r = support::players_json(&out);
    assert_eq!(r["connected"], 6, "{}", support::text(&out));
    host.down();
}

/// A game shipped as a definition file only: `host up --game nexuiz`
/// launches it from its command template, on its own port and address,
/// checked with its q3 query, with the map a `--set` chose and the bots
/// `--bots` asked for.
#[test]
fn root_nexuiz_instances_run_from_their_definition_and_answer_their_query() {
    let _g = serial();
    require_root(ROOT);
    if !Path::new("/usr/games/nexuiz-server").is_file() {
        tickpack_testkit::skip_unless_ci(
            "host up --game nexuiz",
            "/usr/games/nexuiz-server is missing (apt-get install nexuiz-server nexuiz-data, or scripts/setup.sh)",
        );
        return;
    }
    let mut host = Host::up_in_temp(
        "game-host",
        "nx1",
        &[
            "--game",
            "nexuiz",
            "--set",
            "map=ruiner",
            "--bots",
            "4",
            "--instances",
            "2",
            "--backend",
            "netns",
            "--net",
            "veth",
            "--range",
            "198.19.61.0/24",
        ],
    );
    let st = host.wait_for(|s| all_on_map(s, "ruiner"), "both instances on ruiner");
    // The definition's port on every instance.
    two_own_addresses(&st, 26000);
    // The host's own q3 queries see the bots join (DarkPlaces counts them
    // as clients).
    host.wait_for(
        |s| {
            instances(s).iter().all(|i| {
                i["query_latency_us"]["count"].as_u64().unwrap_or(0) >= 1
                    && i["players"].as_u64() == Some(4)
            })
        },
        "both instances report their 4 bots",
    );
    host.down();
    let left = Leftovers::of("tpnx1").scan();
    assert!(left.is_empty(), "{left:?}");
}
