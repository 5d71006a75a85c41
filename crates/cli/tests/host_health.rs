//! The host's health checks and readiness end to end, as root (network
//! namespaces, cgroups, links; CI runs them as root): a server ready by a
//! line of its output, one ready by its bound port, and a tenant that
//! floods the supervisor's health-check socket while its neighbour must
//! stay up. The fake servers are small shell and python3 scripts written
//! into each instance's directory; every flood is bounded in count and
//! time and goes only to the supervisor, from inside a namespace the host
//! made. Every host is taken down by its guard, pass or fail, and nothing
//! named `tp<name>` may be left.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::host::{temp_run_dir, Host};
use support::{require_root, serial, wait_until, Leftovers};

/// What the root tests need root for.
const ROOT: &str = "namespaces, cgroups, links";

fn instance(s: &Value, id: u64) -> Value {
    s["instances"]
        .as_array()
        .and_then(|v| v.iter().find(|i| i["id"] == id))
        .cloned()
        .unwrap_or(Value::Null)
}

fn write_temp(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tp-health-{name}-{}.toml", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

/// A game definition whose server runs `script` (a shell script, written
/// into the instance's directory), ready as `ready` says.
fn script_game(name: &str, script: &str, ready: &str) -> String {
    format!(
        "name = \"{name}\"\ndescription = \"a test server\"\ncommand = \"/bin/sh {{dir}}/run.sh {{ip}} {{port}} {{dir}}\"\nport = 27500\nslots = 4\n[tick]\nhz = 10\n[ready]\n{ready}\n[[file]]\npath = \"run.sh\"\ncontents = \"\"\"\n{script}\"\"\"\n"
    )
}

/// Brings up one instance of the game in `def` (a file) and returns the
/// host once its log shows `started`.
fn up_one(name: &str, def: &Path, range: &str, started: &str) -> Host {
    let dir = temp_run_dir("health", name);
    let host = Host::spawn(
        name,
        &dir,
        &[
            "--game",
            def.to_str().unwrap(),
            "--instances",
            "1",
            "--backend",
            "netns",
            "--net",
            "veth",
            "--range",
            range,
        ],
        Stdio::null(),
    )
    .remove_on_drop(&dir)
    .remove_on_drop(def);
    host.wait_log(1, started);
    host
}

/// The instance waits for a `go` file the test creates in its directory
/// (at most 60 s), so `starting` before it is certain.
const WAIT_FOR_GO: &str = "i=0\nwhile [ ! -e \"$3/go\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n";

fn starting_until_go_then_running(mut host: Host) {
    // The server cannot be ready before `go`: it stays `starting`.
    std::thread::sleep(Duration::from_millis(1500));
    let st = host.status().expect("status");
    assert_eq!(instance(&st, 1)["state"], "starting", "{st:#}");
    std::fs::write(host.instance_dir(1).join("go"), "").unwrap();
    host.wait_for(
        |s| instance(s, 1)["state"] == "running",
        "the instance running once ready",
    );
    let st = host.status().unwrap();
    assert_eq!(instance(&st, 1)["restarts"], 0, "{st:#}");
    host.down();
    let left = Leftovers::of(&format!("tp{}", host.name)).scan();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn root_a_server_is_ready_when_its_log_says_so() {
    let _g = serial();
    require_root(ROOT);
    let script = format!(
        "echo loading the map\n{WAIT_FOR_GO}echo 'Server listening on' $2\nexec sleep 120\n"
    );
    let def = write_temp(
        "log",
        &script_game(
            "logready",
            &script,
            "by = \"log\"\nlog = \"Server listening on\"",
        ),
    );
    let host = up_one("hl1", &def, "198.19.150.0/24", "loading the map");
    starting_until_go_then_running(host);
}

#[test]
fn root_a_server_is_ready_when_its_port_is_bound() {
    let _g = serial();
    require_root(ROOT);
    // Binds its UDP port only after `go` (python3: the shell cannot bind).
    let script = format!(
        "echo waiting to bind\n{WAIT_FOR_GO}exec /usr/bin/python3 -c \"import socket,sys,time; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind((sys.argv[1],int(sys.argv[2]))); print('bound',flush=True); time.sleep(120)\" $1 $2\n"
    );
    let def = write_temp(
        "port",
        &script_game("portready", &script, "by = \"port\""),
    );
    let host = up_one("hl2", &def, "198.19.151.0/24", "waiting to bind");
    starting_until_go_then_running(host);
}

/// The flooder: binds the instance's port, answers the host's first A2S
/// query (so the host counts it as up) and learns the supervisor's source
/// port from it, then sends the supervisor 1200-byte datagrams as fast as
/// it can from that same socket (a reply flow the host's firewall lets
/// through) for at most 20 s and 3 million datagrams, answering queries
/// in between; then it only answers queries, for at most 60 s.
const FLOODER: &str = r#"import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
INFO = b"\xff\xff\xff\xffI\x11flood\x00map\x00f\x00g\x00\x00\x00\x00\x10\x00"
print("flooder waiting for a query", flush=True)
data, sup = s.recvfrom(2048)
s.sendto(INFO, sup)
print("flooding the host at", sup, flush=True)
s.setblocking(False)
junk = b"x" * 1200
end = time.monotonic() + 20
sent = 0
while sent < 3000000 and time.monotonic() < end:
    for _ in range(500):
        try:
            s.sendto(junk, sup)
        except OSError:
            pass
    sent += 500
    try:
        while True:
            data, peer = s.recvfrom(2048)
            if peer == sup:
                s.sendto(INFO, sup)
    except OSError:
        pass
print("flooded", sent, flush=True)
s.settimeout(1)
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        data, peer = s.recvfrom(2048)
        s.sendto(INFO, peer)
    except OSError:
        pass
"#;

/// Regression: every instance's health reply came to one shared socket of
/// the supervisor. An instance that learned its source port from a check
/// could flood it; the receive queue overflowed, a healthy neighbour's
/// replies were lost, and the neighbour was declared silent and killed.
/// Now each instance has its own connected socket, and windows in which
/// the supervisor itself dropped datagrams are not held against anyone.
#[test]
fn root_a_flooding_instance_cannot_get_its_neighbour_killed() {
    let _g = serial();
    require_root(ROOT);
    let conf = write_temp(
        "flood",
        &format!(
            "command = \"{{tickpack}} server --bind {{ip}}:{{port}}\"\nhealth = \"a2s\"\n[[file]]\npath = \"flood.py\"\ncontents = '''\n{FLOODER}'''\n[[instance]]\nid = 2\ncommand = \"/usr/bin/python3 {{dir}}/flood.py {{ip}} {{port}}\"\n"
        ),
    );
    let dir = temp_run_dir("health", "hf1");
    let mut host = Host::spawn(
        "hf1",
        &dir,
        &[
            "--config",
            conf.to_str().unwrap(),
            "--instances",
            "2",
            "--backend",
            "netns",
            "--net",
            "veth",
            "--range",
            "198.19.152.0/24",
        ],
        Stdio::null(),
    )
    .remove_on_drop(&dir)
    .remove_on_drop(&conf);
    host.wait_for(
        |s| instance(s, 1)["state"] == "running",
        "the neighbour running",
    );
    host.wait_log(2, "flooding the host at");
    // Watch the neighbour through the flood (20 s; the a2s check kills
    // after about 10 s of silence) and a while after.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(24) {
        let st = host.status().expect("the host answers its status during the flood");
        let n = instance(&st, 1);
        assert_eq!(n["restarts"], 0, "the neighbour was restarted: {st:#}");
        assert_eq!(n["state"], "running", "the neighbour: {st:#}");
        std::thread::sleep(Duration::from_millis(250));
    }
    // The flood happened (the script counts what it sent).
    let log = wait_until(Duration::from_secs(20), Duration::from_millis(200), || {
        Some(host.log(2)).filter(|l| l.contains("flooded "))
    })
    .expect("the flooder finished its bounded flood");
    let sent: u64 = log
        .split("flooded ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(sent >= 10_000, "a flood was sent: {log}");
    let st = host.status().unwrap();
    assert_eq!(instance(&st, 1)["restarts"], 0, "{st:#}");
    host.down();
    let left = Leftovers::of("tphf1").scan();
    assert!(left.is_empty(), "{left:?}");
}
