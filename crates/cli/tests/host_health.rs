//! The host's health checks and readiness end to end: a server ready by a
//! line of its output, one ready by its bound port, and a tenant that
//! floods the supervisor's health-check socket while its neighbour must
//! stay up (on 127.0.0.1 with the process backend, and from inside a
//! network namespace). Tests named `root_` need root (namespaces, cgroups,
//! links; CI runs them as root). The fake servers are small shell and
//! python3 scripts written into each instance's directory; every flood is
//! bounded in count and time and goes only to the supervisor, on loopback
//! or from a namespace the host made. Every host is taken down by its
//! guard, pass or fail, and nothing named `tp<name>` may be left.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::host::{instance, one_netns_instance, temp_run_dir, Host};
use support::{require_root, serial, wait_until, Leftovers};

/// What the root tests need root for.
const ROOT: &str = "namespaces, cgroups, links";

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
        &one_netns_instance(range, &["--game", def.to_str().unwrap()]),
        Stdio::null(),
    )
    .remove_on_drop(&dir)
    .remove_on_drop(def);
    host.wait_log(1, started);
    host
}

/// The instance waits for a `go` file the test creates in its directory
/// (at most 60 s), so `starting` before it is certain.
const WAIT_FOR_GO: &str =
    "i=0\nwhile [ ! -e \"$3/go\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n";

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
    let def = write_temp("port", &script_game("portready", &script, "by = \"port\""));
    let host = up_one("hl2", &def, "198.19.151.0/24", "waiting to bind");
    starting_until_go_then_running(host);
}

/// Both instances of a flood test run this script (`ip port id tickpack
/// how`). Instance 1 is a game server that answers each A2S query at its
/// next frame (5-45 ms later, as a server that reads queries once per
/// frame does). Instance 2 answers queries too and, at its first one,
/// learns the supervisor's source port and floods it for at most 20 s:
/// `how` = `loopback` runs `tickpack __flood` at it (as fast as one thread
/// can, at most 5 million datagrams); `socket` sends 1200-byte datagrams
/// from its own socket (the reply flow a netns host's firewall lets
/// through), at most 3 million. Each script lives at most 120 s.
const SCRIPT: &str = r#"import random, socket, subprocess, sys, time
ip, port, me, tickpack, how = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((ip, port))
INFO = b"\xff\xff\xff\xffI\x11tp\x00map\x00f\x00g\x00\x00\x00\x00\x10\x00"
stop = time.monotonic() + 120
s.settimeout(1)
flood = None
junk = b"x" * 1200
while time.monotonic() < stop:
    try:
        data, peer = s.recvfrom(2048)
    except OSError:
        continue
    if me == "1":
        time.sleep(random.uniform(0.005, 0.045))
        s.sendto(INFO, peer)
        continue
    s.sendto(INFO, peer)
    if flood is not None:
        continue
    flood = peer
    print("flooding the host at", peer, flush=True)
    if how == "loopback":
        # Its summary goes to this instance's log; queries are answered meanwhile.
        subprocess.Popen([tickpack, "__flood", "--target", "127.0.0.1:%d" % peer[1], "--kind", "ping", "--rate", "0", "--duration", "20s", "--count", "5000000"])
        continue
    s.setblocking(False)
    end = time.monotonic() + 20
    sent = 0
    while sent < 3000000 and time.monotonic() < end:
        for _ in range(500):
            try:
                s.sendto(junk, peer)
            except OSError:
                pass
        sent += 500
        try:
            while True:
                data, p2 = s.recvfrom(2048)
                s.sendto(INFO, p2)
        except OSError:
            pass
    print("flooded", sent, "datagrams", flush=True)
    s.settimeout(1)
"#;

/// A host of two instances running [`SCRIPT`] with the a2s check;
/// `backend_args` choose where.
fn flood_host(name: &str, how: &str, backend_args: &[&str]) -> Host {
    let conf = write_temp(
        name,
        &format!(
            "command = \"/usr/bin/python3 {{dir}}/srv.py {{ip}} {{port}} {{id}} {{tickpack}} {how}\"\nhealth = \"a2s\"\n[[file]]\npath = \"srv.py\"\ncontents = '''\n{SCRIPT}'''\n"
        ),
    );
    let dir = temp_run_dir("health", name);
    let mut args = vec!["--config", conf.to_str().unwrap(), "--instances", "2"];
    args.extend_from_slice(backend_args);
    Host::spawn(name, &dir, &args, Stdio::null())
        .remove_on_drop(&dir)
        .remove_on_drop(&conf)
}

/// Watches instance 1 through the flood (20 s; the a2s check kills after
/// about 10 s of silence) and a while after: always `running`, never
/// restarted. Returns the flooder's log.
fn neighbour_stays_up_through_the_flood(host: &mut Host, done: &str) -> String {
    host.wait_for(
        |s| instance(s, 1)["state"] == "running",
        "the neighbour running",
    );
    host.wait_log(2, "flooding the host at");
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(24) {
        let st = host
            .status()
            .expect("the host answers its status during the flood");
        let n = instance(&st, 1);
        assert_eq!(n["restarts"], 0, "the neighbour was restarted: {st:#}");
        assert_eq!(n["state"], "running", "the neighbour: {st:#}");
        std::thread::sleep(Duration::from_millis(250));
    }
    let log = wait_until(Duration::from_secs(20), Duration::from_millis(200), || {
        Some(host.log(2)).filter(|l| l.contains(done))
    })
    .expect("the flooder finished its bounded flood");
    let st = host.status().unwrap();
    assert_eq!(instance(&st, 1)["restarts"], 0, "{st:#}");
    host.down();
    log
}

/// Regression: every instance's health reply came to one shared socket of
/// the supervisor. An instance that learned its source port from a query
/// could flood it; the receive queue overflowed, a healthy neighbour's
/// answers were lost, and the neighbour was declared silent and killed
/// (here: never `running`, killed 15 s after its start). Now each instance
/// has its own socket, connected to it, which takes nothing from any other
/// source, and windows in which the supervisor itself dropped datagrams
/// are not held against anyone.
#[test]
fn a_flooding_instance_cannot_get_its_neighbour_killed() {
    let _g = serial();
    let port = support::free_udp_ports(2).to_string();
    let mut host = flood_host(
        "hf1",
        "loopback",
        &["--backend", "process", "--port", &port],
    );
    let log = neighbour_stays_up_through_the_flood(&mut host, "flood to 127.0.0.1");
    // The flood happened: `__flood`'s own summary.
    assert!(log.contains(" pps"), "{log}");
}

/// The same from inside a network namespace, where the only datagrams
/// that pass the host's firewall come from the instance's own socket: its
/// flood fills only its own check socket's queue.
#[test]
fn root_a_flooding_instance_in_its_namespace_cannot_get_its_neighbour_killed() {
    let _g = serial();
    require_root(ROOT);
    let mut host = flood_host(
        "hf2",
        "socket",
        &[
            "--backend",
            "netns",
            "--net",
            "veth",
            "--range",
            "198.19.152.0/24",
        ],
    );
    let log = neighbour_stays_up_through_the_flood(&mut host, "flooded ");
    let sent: u64 = log
        .split("flooded ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(sent >= 10_000, "a flood was sent: {log}");
    let left = Leftovers::of("tphf2").scan();
    assert!(left.is_empty(), "{left:?}");
}
