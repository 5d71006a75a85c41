//! The consolidation host end to end, as root (CI runs as root): real
//! namespaces, cgroups and links. Every test brings its own uniquely named
//! host up in a temporary run dir and takes it down again, also when an
//! assertion fails (a guard runs `host down`, which also removes leftovers).

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use support::host::{children_running, events, host_down, temp_run_dir, Host};
use support::{
    assert_one_error_line, assert_success, exe, free_tcp_port, http_get_metrics, require_root,
    serial, Leftovers,
};

/// What these tests need root for.
const ROOT: &str = "namespaces, cgroups, links";

/// The keys every instance of a `host status --json` document has,
/// space-separated.
const INSTANCE_KEYS: &str = "id address pid cpus state restarts cpu_percent tick_p99_us";

fn stats(addr: SocketAddr, timeout: Duration) -> bool {
    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let req = tickpack_wire::Packet::StatsRequest {
        nonce: 1,
        proof: None,
    }
    .to_vec();
    let t0 = Instant::now();
    let mut buf = [0u8; 512];
    while t0.elapsed() < timeout {
        let _ = s.send_to(&req, addr);
        if let Ok((n, from)) = s.recv_from(&mut buf) {
            if from == addr
                && matches!(
                    tickpack_wire::Packet::decode(&buf[..n]),
                    Ok(tickpack_wire::Packet::Stats(_))
                )
            {
                return true;
            }
        }
    }
    false
}

fn addresses(s: &Value) -> Vec<String> {
    s["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["address"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn four_netns_instances_on_their_own_ips_serve_players_without_loss() {
    let _g = serial();
    require_root(ROOT);
    let metrics = format!("127.0.0.1:{}", free_tcp_port());
    let mut host = Host::up_in_temp(
        "host-test",
        "e1",
        &[
            "--instances",
            "4",
            "--backend",
            "netns",
            "--net",
            "bridge",
            "--command",
            "{tickpack} server --bind {ip}:{port} --cost light",
            "--metrics",
            &metrics,
        ],
    );
    let st = host.status().unwrap();
    let addrs = addresses(&st);
    assert_eq!(addrs.len(), 4);
    let ips: std::collections::BTreeSet<_> = addrs
        .iter()
        .map(|a| a.rsplit_once(':').unwrap().0.to_string())
        .collect();
    assert_eq!(ips.len(), 4, "one IP per instance: {addrs:?}");
    assert!(
        addrs.iter().all(|a| a.ends_with(":27015")),
        "every instance binds the game's usual port: {addrs:?}"
    );
    for i in st["instances"].as_array().unwrap() {
        for key in INSTANCE_KEYS.split_whitespace() {
            assert!(i.get(key).is_some(), "status lacks {key}: {i}");
        }
    }
    let out = Command::new(exe())
        .args([
            "players",
            "--target",
            &addrs.join(","),
            "--players",
            "8",
            "--duration",
            "3s",
            "--quiet",
            "--cpus",
            "0",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&text[text.find("{\n").unwrap()..]).unwrap();
    assert_eq!(doc["connected"], 8);
    assert_eq!(doc["snapshots"]["lost"], 0, "{}", doc["snapshots"]);
    assert_eq!(doc["commands"]["lost"], 0);
    // The instances saw the players.
    let st = host.wait_for(
        |s| {
            s["instances"]
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i["tick_p99_us"].is_u64())
        },
        "stats from every instance",
    );
    assert_eq!(st["instances"].as_array().unwrap().len(), 4);
    // Those stats were decoded without root: the supervisor's decoder
    // runs as its host's readers uid, no capability in any thread.
    let decoders = children_running(host.up.id(), "__decoder");
    assert_eq!(decoders.len(), 1, "one decoder: {decoders:?}");
    for t in &decoders[0].1 {
        assert!(t.is_unprivileged(), "a decoder thread: {t:?}");
        assert_eq!(
            t.seccomp,
            Some(2),
            "a decoder thread without its filter: {t:?}"
        );
    }
    std::thread::sleep(Duration::from_millis(1_100));
    let body = http_get_metrics(&metrics);
    assert!(body.contains("# TYPE tickpack_instance_up gauge"), "{body}");
    for id in 1..=4 {
        assert!(
            body.contains(&format!(
                "tickpack_instance_up{{host=\"e1\",instance=\"{id}\""
            )),
            "instance {id} in {body}"
        );
    }
    let out = host.down();
    assert_success(&out);
    let left = Leftovers::of("tpe1").scan();
    assert!(left.is_empty(), "left behind: {:?}", left);
}

#[test]
fn a_killed_instance_is_restarted_and_reachable_within_a_second() {
    let _g = serial();
    require_root(ROOT);
    let mut host = Host::up_in_temp(
        "host-test",
        "e2",
        &["--instances", "2", "--backend", "netns", "--net", "veth"],
    );
    let st = host.status().unwrap();
    let victim = &st["instances"][1];
    let pid = victim["pid"].as_u64().unwrap();
    let addr: SocketAddr = victim["address"].as_str().unwrap().parse().unwrap();
    assert!(
        stats(addr, Duration::from_secs(2)),
        "instance reachable before the kill"
    );
    let t0 = Instant::now();
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    // Wait until the old process is gone, then the instance must answer again.
    while std::path::Path::new(&format!("/proc/{pid}")).exists()
        && t0.elapsed() < Duration::from_millis(500)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(20));
    let back = stats(
        addr,
        Duration::from_millis(1000).saturating_sub(t0.elapsed()),
    );
    let took = t0.elapsed();
    assert!(
        back,
        "instance not reachable again within 1 s of kill -9 ({took:?})"
    );
    let st = host.wait_for(|s| s["instances"][1]["restarts"] == 1, "restart recorded");
    assert_ne!(
        st["instances"][1]["pid"].as_u64().unwrap(),
        pid,
        "a new process"
    );
    assert!(
        st["instances"][1]["last_exit"]
            .as_str()
            .unwrap()
            .contains("signal 9"),
        "{}",
        st["instances"][1]
    );
    assert!(
        st["instances"][0]["restarts"] == 0,
        "the other instance was left alone"
    );
}

#[test]
fn memory_limit_is_enforced_and_the_kill_reported() {
    let _g = serial();
    require_root(ROOT);
    // Instance 2 runs a command that grows without bound: `tail` buffers a
    // "line" of zeros that never ends.
    let cfg = std::env::temp_dir().join(format!("tp-fleet-e3-{}.toml", std::process::id()));
    std::fs::write(
        &cfg,
        "instances = 2\nbackend = \"netns\"\nnet = \"veth\"\nhealth = \"none\"\ncommand = \"{tickpack} server --bind {ip}:{port} --cost light\"\n[[instance]]\nid = 2\nmemory = \"32MiB\"\ncommand = \"tail /dev/zero\"\n",
    )
    .unwrap();
    let dir = temp_run_dir("host-test", "e3");
    let mut host = Host::spawn(
        "e3",
        &dir,
        &["--config", cfg.to_str().unwrap()],
        Stdio::null(),
    )
    .remove_on_drop(&dir)
    .remove_on_drop(&cfg);
    let st = host.wait_for(
        |s| {
            s["instances"]
                .as_array()
                .is_some_and(|v| v.len() == 2 && v[1]["oom_kills"].as_u64().unwrap_or(0) >= 1)
        },
        "an OOM kill of instance 2",
    );
    let i2 = &st["instances"][1];
    assert_eq!(i2["memory_limit_bytes"], 32 << 20);
    let st = host.wait_for(
        |s| {
            s["instances"][1]["last_exit"]
                .as_str()
                .is_some_and(|e| e.contains("OOM"))
        },
        "the OOM kill reported as the exit reason",
    );
    assert!(
        events(&st, "exited")
            .iter()
            .any(|e| e["instance"] == 2 && e["cause"]["how"] == "oom_killed"),
        "{st:#}"
    );
    assert_eq!(
        st["instances"][0]["restarts"], 0,
        "the neighbour is unaffected"
    );
}

#[test]
fn a_bad_config_is_one_clear_error_and_creates_nothing() {
    let _g = serial();
    require_root(ROOT);
    let dir = temp_run_dir("host-test", "e4");
    for (args, needle) in [
        (vec!["--instances", "0"], "instances"),
        (vec!["--net", "wifi"], "wifi"),
        (vec!["--memory", "lots"], "memory size"),
        (vec!["--command", "srv --bind {address}"], "{address}"),
        (vec!["--range", "300.1.0.0/16"], "300.1.0.0"),
    ] {
        let out = Command::new(exe())
            .args(["host", "up", "--name", "e4", "--run-dir"])
            .arg(&dir)
            .args(&args)
            .output()
            .unwrap();
        let err = assert_one_error_line(&out, &[2, 3], &format!("{args:?}"));
        assert!(err.contains(needle), "{args:?}: {err}");
        let left = Leftovers::of("tpe4").scan();
        assert!(left.is_empty(), "{args:?} left {:?}", left);
        assert!(!dir.join("control.sock").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_up_after_a_kill_9_of_the_supervisor_removes_the_leftovers() {
    let _g = serial();
    require_root(ROOT);
    let mut first = Host::up_in_temp(
        "host-test",
        "e5",
        &["--instances", "2", "--backend", "netns", "--net", "macvlan"],
    );
    let pids: Vec<u64> = first.status().unwrap()["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["pid"].as_u64().unwrap())
        .collect();
    let decoders = children_running(first.up.id(), "__decoder");
    assert_eq!(decoders.len(), 1, "{decoders:?}");
    first.up.kill().unwrap(); // SIGKILL: no clean-up happens
    first.up.wait().unwrap();
    // The decoder dies with its supervisor (its death signal).
    let decoder = u64::from(decoders[0].0);
    let deadline = Instant::now() + Duration::from_secs(5);
    while tickpack_testkit::procs::alive(decoder) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !tickpack_testkit::procs::alive(decoder),
        "the decoder outlived its supervisor"
    );
    assert!(
        !Leftovers::of("tpe5").scan().is_empty(),
        "the killed supervisor left its namespaces behind"
    );
    // `down` without a supervisor removes what it left.
    let out = host_down("e5", &first.run_dir);
    assert_success(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("leftovers"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = Leftovers::of("tpe5").scan();
    assert!(left.is_empty(), "left: {:?}", left);
    for p in pids {
        // Gone, or a zombie waiting for the machine's init to reap it.
        let state = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let alive = state
            .rsplit_once(')')
            .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'));
        assert!(!alive, "instance {p} survived: {state}");
    }
    // And a new `up` after another kill -9 starts cleanly over the remains.
    let mut second = Host::up_in_temp(
        "host-test",
        "e5",
        &["--instances", "2", "--backend", "netns", "--net", "bridge"],
    );
    second.up.kill().unwrap();
    second.up.wait().unwrap();
    let third = Host::up_in_temp(
        "host-test",
        "e5",
        &["--instances", "1", "--backend", "netns", "--net", "veth"],
    );
    assert_eq!(
        third.status().unwrap()["instances"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    drop(third);
    drop(second);
    let left = Leftovers::of("tpe5").scan();
    assert!(left.is_empty(), "left: {:?}", left);
}

#[test]
fn process_backend_is_the_native_baseline_on_distinct_ports() {
    let _g = serial();
    let (host, base) = Host::up_on_free_ports("host-test", "e6", 3, &["--instances", "3"]);
    let addrs = addresses(&host.status().unwrap());
    let want: Vec<String> = (0..3).map(|i| format!("127.0.0.1:{}", base + i)).collect();
    assert_eq!(addrs, want);
    for a in addrs {
        assert!(
            stats(a.parse().unwrap(), Duration::from_secs(2)),
            "{a} answers"
        );
    }
}

#[test]
fn a_command_instance_sees_home_in_its_own_directory() {
    let _g = serial();
    require_root(ROOT);
    // The host writes the server's script as a config file into the
    // instance's directory; the `--command` runs it: it prints what it
    // sees, then waits to be taken down.
    let conf = std::env::temp_dir().join(format!("tp-launch-l1-{}.toml", std::process::id()));
    std::fs::write(
        &conf,
        r#"
        [env]
        GAME_INSTANCE = "g{id}"
        [[file]]
        path = "bin/run.sh"
        contents = """
        echo HOME=$HOME
        echo GAME_INSTANCE=$GAME_INSTANCE
        echo OWNER=$(stat -c %u {dir}/bin/run.sh)
        echo PORT={port}
        exec sleep 60
        """
        "#,
    )
    .unwrap();
    let dir = temp_run_dir("host-test", "l1");
    let host = Host::spawn(
        "l1",
        &dir,
        &[
            "--config",
            conf.to_str().unwrap(),
            "--instances",
            "1",
            "--range",
            "198.19.220.0/24",
            "--health",
            "none",
            "--command",
            "/bin/sh {dir}/bin/run.sh",
        ],
        Stdio::null(),
    )
    .remove_on_drop(&dir)
    .remove_on_drop(&conf)
    .running();
    let idir = std::fs::canonicalize(host.instance_dir(1)).unwrap();
    let log = host.wait_log(1, "PORT=");
    let seen = |k: &str| {
        log.lines()
            .find_map(|l| l.trim().strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
    };
    assert_eq!(
        seen("HOME").as_deref(),
        idir.to_str(),
        "HOME is the instance's own directory: {log}"
    );
    assert_eq!(seen("GAME_INSTANCE").as_deref(), Some("g1"), "{log}");
    let owner: u32 = seen("OWNER").and_then(|o| o.parse().ok()).unwrap_or(0);
    assert!(
        owner > 200_000,
        "the config file belongs to the instance's user (its host's uid block): {log}"
    );
    assert_eq!(seen("PORT").as_deref(), Some("27015"), "{log}");
}
