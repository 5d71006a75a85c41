//! The instance firewall and recovery after `kill -9`, end to end as root
//! (CI runs as root): real namespaces, links, cgroups and nftables.
//!
//! Every test uses its own host names (`n...`) and address ranges inside
//! 198.19.128.0/20, and removes what it created also when it fails (guards
//! run `host down`, which removes leftovers).

mod support;

use std::io::Write;
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::host::{host_down, Host};
use support::{alive, exe, players_json, require_root, run, serial, text, Leftovers};

/// What these tests need root for.
const ROOT: &str = "namespaces, cgroups, links, nftables";

/// Everything of host `name` on `range` (e.g. "198.19.128.") that exists:
/// namespaces, links, the guard route, the nft table, cgroups, and processes
/// whose command line binds an address of the range.
fn leftovers(name: &str, range_prefix: &str) -> Vec<String> {
    Leftovers::of(&format!("tp{name}"))
        .routes(&[range_prefix])
        .processes_binding(range_prefix)
        .scan()
}

/// A host started with a config file (written to a directory of its own,
/// removed on drop) and run dir `run_dir`, without waiting.
fn start_in(name: &str, config: &str, run_dir: &Path, args: &[&str]) -> Host {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tp-nf-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("fleet.toml");
    std::fs::write(&conf, config).unwrap();
    let args: Vec<&str> = ["--config", conf.to_str().unwrap()]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    Host::spawn(name, run_dir, &args, Stdio::piped()).remove_on_drop(&dir)
}

/// Like [`start_in`] in a run dir of its own, removed on drop.
fn start(name: &str, config: &str, args: &[&str]) -> Host {
    let run = std::env::temp_dir().join(format!("tp-nf-{name}-{}-run", std::process::id()));
    start_in(name, config, &run, args).remove_on_drop(&run)
}

/// A TCP listener and a UDP echo on 0.0.0.0 (ephemeral ports) in the root
/// namespace: the "host services" an instance must not reach.
struct HostServices {
    tcp: TcpListener,
    udp_port: u16,
    stop: Arc<AtomicBool>,
    echo: Option<std::thread::JoinHandle<()>>,
}

impl HostServices {
    fn start() -> HostServices {
        // The kernel completes handshakes into the backlog: no accept needed.
        let tcp = TcpListener::bind("0.0.0.0:0").unwrap();
        let udp = UdpSocket::bind("0.0.0.0:0").unwrap();
        let udp_port = udp.local_addr().unwrap().port();
        udp.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let echo = std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            // Bounded: stops with the test, or after 2 minutes at most.
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
                if let Ok((n, from)) = udp.recv_from(&mut buf) {
                    // Only our probes' datagrams, only back to their sender.
                    if &buf[..n] == b"nprobe" {
                        let _ = udp.send_to(&buf[..n], from);
                    }
                }
            }
        });
        HostServices {
            tcp,
            udp_port,
            stop,
            echo: Some(echo),
        }
    }
}

impl Drop for HostServices {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.echo.take() {
            let _ = h.join();
        }
    }
}

/// IPv4 addresses of the root namespace on links that are not ours and
/// not loopback (the machine's own addresses).
fn host_addresses() -> Vec<String> {
    let out = Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dev = *f.get(1)?;
            let addr = f.get(3)?.split('/').next()?;
            (dev != "lo" && !dev.starts_with("tp")).then(|| addr.to_string())
        })
        .collect()
}

/// The probe an instance runs: its default gateway and each given address,
/// over TCP (connect) and UDP (echo), all at once with 1.5 s each (so it is
/// done long before the health checks give up on it); prints `PROTO ADDR
/// ok|blocked` per try, then `done`, then idles (bounded).
const PROBE: &str = r#"
import socket, struct, sys, threading, time
def gateway():
    for line in open('/proc/net/route').read().splitlines()[1:]:
        f = line.split()
        if f[1] == '00000000':
            return socket.inet_ntoa(struct.pack('<L', int(f[2], 16)))
tcp_port, udp_port = int(sys.argv[1]), int(sys.argv[2])
targets = [gateway()] + [a for a in sys.argv[3].split(',') if a]
lines = []
def tcp(a):
    try:
        socket.create_connection((a, tcp_port), timeout=1.5).close()
        lines.append('tcp %s ok' % a)
    except OSError:
        lines.append('tcp %s blocked' % a)
def udp(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.5)
    try:
        s.sendto(b'nprobe', (a, udp_port))
        lines.append('udp %s %s' % (a, 'ok' if s.recv(64) == b'nprobe' else 'blocked'))
    except OSError:
        lines.append('udp %s blocked' % a)
threads = [threading.Thread(target=f, args=(a,)) for a in targets for f in (tcp, udp)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print('\n'.join(lines + ['done']), flush=True)
time.sleep(120)
"#;

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A fleet file: instance 1 is the reference server (players, health
/// checks), instance 2 runs the probe.
fn probe_fleet(net: &str, range: &str, services: &HostServices, targets: &[String]) -> String {
    let tcp_port = services.tcp.local_addr().unwrap().port();
    let probe = format!(
        "python3 -c exec(__import__('base64').b64decode('{}')) {tcp_port} {} {}",
        base64(PROBE.as_bytes()),
        services.udp_port,
        targets.join(",")
    );
    format!(
        "instances = 2\nbackend = \"netns\"\nnet = \"{net}\"\nrange = \"{range}\"\n\
         health = \"tickpack\"\n\
         command = \"{{tickpack}} server --bind {{ip}}:{{port}} --cost light\"\n\
         [[instance]]\nid = 2\ncommand = \"{probe}\"\n"
    )
}

/// Waits until instance 1 (the reference server) runs: its health checks
/// pass.
fn server_running(host: &mut Host) -> Value {
    host.wait_for(
        |s| s["instances"][0]["state"] == "running",
        "the server instance running (health checks pass)",
    )
}

/// Lines `PROTO ADDR RESULT` of a probe's first round.
fn probe_results(out: &str) -> Vec<(String, String, String)> {
    out.lines()
        .take_while(|l| *l != "done")
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && (f[0] == "tcp" || f[0] == "udp"))
                .then(|| (f[0].to_string(), f[1].to_string(), f[2].to_string()))
        })
        .collect()
}

fn players_connect(addr: &str) -> Value {
    players_json(&run(&[
        "players",
        "--target",
        addr,
        "--players",
        "4",
        "--duration",
        "2s",
        "--quiet",
        "--cpus",
        "0",
        "--json",
        "-",
    ]))
}

#[test]
fn instances_cannot_reach_host_services_unless_a_port_is_allowed() {
    let _g = serial();
    require_root(ROOT);
    let services = HostServices::start();
    let tcp_port = services.tcp.local_addr().unwrap().port().to_string();
    let udp_port = services.udp_port.to_string();
    let others = host_addresses();
    for (k, net) in ["veth", "bridge", "macvlan"].into_iter().enumerate() {
        let name = format!("nf{}", &net[..1]);
        let range = format!("198.19.{}.0/24", 128 + k);
        let range_prefix = format!("198.19.{}.", 128 + k);
        // Closed by default.
        let mut host = start(&name, &probe_fleet(net, &range, &services, &others), &[]);
        let st = server_running(&mut host);
        let out = host.wait_log(2, "done");
        let results = probe_results(&out);
        assert_eq!(results.len(), 2 * (1 + others.len()), "{net}: {out}");
        for (proto, addr, r) in &results {
            assert_eq!(
                r, "blocked",
                "{net}: the instance reached the host's {proto} service at {addr}: {out}"
            );
        }
        assert!(
            results.iter().any(|(_, a, _)| a.starts_with(&range_prefix)),
            "{net}: the gateway was probed: {out}"
        );
        // Players still play, health checks still pass.
        let addr = st["instances"][0]["address"].as_str().unwrap().to_string();
        let doc = players_connect(&addr);
        assert_eq!(doc["connected"], 4, "{net}: {doc}");
        assert_eq!(
            host.status().unwrap()["instances"][0]["state"],
            "running",
            "{net}: health checks still answered"
        );
        drop(host);
        let left = leftovers(&name, &range_prefix);
        assert!(left.is_empty(), "{net}: left behind: {left:?}");

        // Opened on request.
        let mut host = start(
            &name,
            &probe_fleet(net, &range, &services, &others),
            &[
                "--allow-host-port",
                &tcp_port,
                "--allow-host-port",
                &udp_port,
            ],
        );
        server_running(&mut host);
        let out = host.wait_log(2, "done");
        let results = probe_results(&out);
        assert_eq!(results.len(), 2 * (1 + others.len()), "{net}: {out}");
        for (proto, addr, r) in &results {
            assert_eq!(
                r, "ok",
                "{net}: --allow-host-port did not open {proto} {addr}: {out}"
            );
        }
        drop(host);
        let left = leftovers(&name, &range_prefix);
        assert!(left.is_empty(), "{net}: left behind: {left:?}");
    }
}

fn nft_table_exists(table: &str) -> bool {
    let out = Command::new("nft")
        .args(["list", "tables"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == format!("table inet {table}"))
}

#[test]
fn the_firewall_table_is_removed_after_a_kill_9_of_the_supervisor() {
    let _g = serial();
    require_root(ROOT);
    let config =
        "instances = 1\nbackend = \"netns\"\nnet = \"bridge\"\nrange = \"198.19.132.0/24\"\n";
    let mut first = start("nfk", config, &[]);
    first.wait_for(
        |s| s["instances"][0]["state"] == "running",
        "the instance running",
    );
    assert!(nft_table_exists("tpnfk"), "host up made its firewall");
    first.up.kill().unwrap(); // SIGKILL: no clean-up happens
    first.up.wait().unwrap();
    assert!(
        nft_table_exists("tpnfk"),
        "the killed supervisor left its table"
    );
    // `host down` without a supervisor removes it with the rest.
    let out = host_down("nfk", &first.run_dir);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("tpnfk"), "{}", text(&out));
    let left = leftovers("nfk", "198.19.132.");
    assert!(left.is_empty(), "left behind: {left:?}");

    // Killed again: the next `host up` removes the table and makes its own.
    let mut second = start("nfk", config, &[]);
    second.wait_for(
        |s| s["instances"][0]["state"] == "running",
        "the instance running",
    );
    second.up.kill().unwrap();
    second.up.wait().unwrap();
    let mut third = start("nfk", config, &[]);
    third.wait_for(
        |s| s["instances"][0]["state"] == "running",
        "the instance running over the remains of a killed host",
    );
    assert!(nft_table_exists("tpnfk"));
    let out = host_down("nfk", &third.run_dir);
    assert!(out.status.success(), "{}", text(&out));
    third.up.wait().unwrap();
    assert!(!nft_table_exists("tpnfk"), "host down removed the table");
    drop(third);
    drop(second);
    drop(first);
    let left = leftovers("nfk", "198.19.132.");
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A `tickpack bench` with host name `name` on `range`, one short step.
fn bench(name: &str, range: &str, out: &Path) -> Command {
    let mut c = Command::new(exe());
    c.args([
        "bench",
        "--quick",
        "--max-steps",
        "1",
        "--no-confirm",
        "--cost",
        "light",
        "--backend",
        "netns",
        "--name",
        name,
        "--range",
        range,
        "--out",
    ])
    .arg(out);
    c
}

/// Waits (at most 20 s) until the bench `b` (host `name`) runs its step's
/// server on `range_prefix`; fails if the bench exits first.
fn wait_bench_server(b: &mut Child, name: &str, range_prefix: &str) {
    let t0 = Instant::now();
    while !leftovers(name, range_prefix)
        .iter()
        .any(|l| l.starts_with("process"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(20) && b.try_wait().unwrap().is_none(),
            "the bench never started its server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts a bench and kills it with -9 once its step's server runs.
fn kill_bench_mid_step(name: &str, range: &str, range_prefix: &str, out: &Path) {
    let mut b = bench(name, range, out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_bench_server(&mut b, name, range_prefix);
    b.kill().unwrap(); // SIGKILL mid-step
    b.wait().unwrap();
    let left = leftovers(name, range_prefix);
    // Its namespace, routes and nftables table stay for certain. Its
    // server process is not certain to be there: in one CI run it was gone
    // when scanned right after the kill (the kill can land while the
    // bench's one short step is torn down), and requiring it failed the
    // test. Whatever is left, processes included, must go below.
    for what in ["netns", "route", "table inet"] {
        assert!(
            left.iter().any(|l| l.starts_with(what)),
            "a killed bench leaves {what} behind (else this test proves nothing): {left:?}"
        );
    }
}

/// Removes what a bench of `name` left, whatever happened.
struct BenchGuard(&'static str);

impl Drop for BenchGuard {
    fn drop(&mut self) {
        let dir = Path::new("/run/tickpack").join(self.0);
        host_down(self.0, &dir);
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_bench_killed_with_9_is_cleaned_up_by_the_next_bench_and_by_host_down() {
    let _g = serial();
    require_root(ROOT);
    let _guard = BenchGuard("nfb");
    let (range, prefix) = ("198.19.136.0/24", "198.19.136.");
    let out = std::env::temp_dir().join(format!("tp-nf-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);

    // The next bench on the same name and range succeeds and leaves nothing.
    kill_bench_mid_step("nfb", range, prefix, &out);
    let o = bench("nfb", range, &out).output().unwrap();
    let t = text(&o);
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(4),
        "the next bench ran its step (0: pass, 4: QoS failed): {t}"
    );
    assert!(t.contains("removed leftovers of an earlier run"), "{t}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    assert_eq!(r["complete"], true, "{t}");
    let left = leftovers("nfb", prefix);
    assert!(
        left.is_empty(),
        "left behind after the next bench: {left:?}"
    );
    assert!(
        !Path::new("/run/tickpack/nfb").exists(),
        "the bench removes its run dir"
    );

    // `host down --name` finds what a killed bench left, and removes it all.
    kill_bench_mid_step("nfb", range, prefix, &out);
    let o = host_down("nfb", Path::new("/run/tickpack/nfb"));
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("removed leftovers"), "{t}");
    let left = leftovers("nfb", prefix);
    assert!(left.is_empty(), "left behind after host down: {left:?}");

    // And `host up` on the range after a killed bench works.
    kill_bench_mid_step("nfb", range, prefix, &out);
    let conf = format!("instances = 1\nbackend = \"netns\"\nnet = \"veth\"\nrange = \"{range}\"\n");
    let mut host = start_in("nfb", &conf, Path::new("/run/tickpack/nfb"), &[]);
    host.wait_for(
        |s| s["instances"][0]["state"] == "running",
        "host up over a killed bench's remains",
    );
    drop(host);
    let left = leftovers("nfb", prefix);
    assert!(left.is_empty(), "left behind after host up/down: {left:?}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_finished_bench_leaves_no_run_dir_of_its_own() {
    let _g = serial();
    require_root(ROOT);
    let _guard = BenchGuard("nfd");
    let out = std::env::temp_dir().join(format!("tp-nf-bench-d-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let child = bench("nfd", "198.19.137.0/24", &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(4),
        "{}",
        text(&o)
    );
    let own = std::env::temp_dir().join(format!("tickpack-bench-{pid}"));
    assert!(!own.exists(), "{} left behind", own.display());
    assert!(
        !Path::new("/run/tickpack/nfd").exists(),
        "/run/tickpack/nfd left behind"
    );
    let left = leftovers("nfd", "198.19.137.");
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::io::stderr().flush();
}

#[test]
fn host_down_kills_the_orphans_of_a_killed_process_backend_host() {
    let _g = serial();
    let config = "instances = 2\nbackend = \"process\"\nport = 47615\n";
    let mut host = start("nfp", config, &[]);
    let st = host.wait_for(
        |s| {
            s["instances"]
                .as_array()
                .is_some_and(|v| v.iter().all(|i| i["state"] == "running"))
        },
        "both instances running",
    );
    let pids: Vec<u64> = st["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["pid"].as_u64().unwrap())
        .collect();
    // The servers are this test's own children's children: killed by PID
    // on the way out, whatever happens.
    struct KillOnDrop(Vec<u64>);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            for &p in &self.0 {
                if alive(p) {
                    // SAFETY: kill(2) on a PID this test started (checked alive).
                    unsafe { libc::kill(p as i32, libc::SIGKILL) };
                }
            }
        }
    }
    let _servers = KillOnDrop(pids.clone());
    host.up.kill().unwrap(); // SIGKILL: the servers are orphaned
    host.up.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        pids.iter().all(|&p| alive(p)),
        "a killed supervisor orphans its servers (else this test proves nothing)"
    );
    let out = host_down("nfp", &host.run_dir);
    assert!(out.status.success(), "{}", text(&out));
    let t0 = Instant::now();
    while pids.iter().any(|&p| alive(p)) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<u64> = pids.iter().copied().filter(|&p| alive(p)).collect();
    assert!(
        survivors.is_empty(),
        "host down left the recorded servers running: {survivors:?} ({})",
        text(&out)
    );
    assert!(text(&out).contains("process"), "{}", text(&out));
}

#[test]
fn an_interrupted_bench_leaves_no_run_dir_and_nothing_else() {
    let _g = serial();
    require_root(ROOT);
    let _guard = BenchGuard("nfi");
    let (range, prefix) = ("198.19.141.0/24", "198.19.141.");
    let out = std::env::temp_dir().join(format!("tp-nf-bench-i-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut b = bench("nfi", range, &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_bench_server(&mut b, "nfi", prefix);
    let pid = b.id();
    // SAFETY: SIGINT (Ctrl-C) to the bench this test started.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = b.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "interrupted: {}", text(&o));
    let own = std::env::temp_dir().join(format!("tickpack-bench-{pid}"));
    assert!(!own.exists(), "{} left behind", own.display());
    assert!(
        !Path::new("/run/tickpack/nfi").exists(),
        "an interrupted bench removes its run dir"
    );
    let left = leftovers("nfi", prefix);
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&out);
}
