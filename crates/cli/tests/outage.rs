//! A hosted server killed with -9 while `tickpack players` plays against
//! it: the measurement must show the outage, the reconnects and the lost
//! commands, and `players` must exit non-zero. As root (CI runs as root):
//! real namespaces, cgroups and links; every test brings its own host up
//! (names `tpm*`, its own address range) and takes it down again, also when
//! an assertion fails.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::host::{one_netns_instance, Host};
use support::{children, exe, require_root, serial, text, wait_until};

/// `players` exit code when anything was lost or there was an outage.
const EXIT_LOST: i32 = 6;

/// One netns instance brought up in the background on `range`; taken down
/// on drop (see `support::host`).
fn host_up(name: &str, range: &str) -> Host {
    Host::up_in_temp(
        "outage-test",
        name,
        &one_netns_instance(
            range,
            &[
                "--command",
                "{tickpack} server --bind {ip}:{port} --cost light",
            ],
        ),
    )
}

/// The game server: the child of the init that `host status` reports,
/// killed on drop should it outlive its instance.
fn server_pid(host: &mut Host, init: u32) -> u32 {
    let pid = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
        children(u64::from(init)).first().copied()
    })
    .unwrap_or_else(|| panic!("the init {init} has no child process"));
    let pid = u32::try_from(pid).unwrap();
    host.track_server(pid);
    pid
}

fn players(target: &str, json: &PathBuf) -> Child {
    Command::new(exe())
        .args([
            "players",
            "--target",
            target,
            "--players",
            "6",
            "--duration",
            "5s",
            "--warmup",
            "1s",
            "--quiet",
            "--json",
        ])
        .arg(json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start players")
}

fn finish(child: Child, json: &PathBuf) -> (Output, Value) {
    let out = child.wait_with_output().unwrap();
    let text = std::fs::read_to_string(json).unwrap_or_else(|e| {
        panic!(
            "no result document ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let _ = std::fs::remove_file(json);
    (out, serde_json::from_str(&text).unwrap())
}

fn kill9(pid: u32) {
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

/// The longest time (ms) a server went without answering stats requests
/// sent every 10 ms, while `run` is true: the test's own view of the outage.
fn probe(addr: SocketAddr, run: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        let req = tickpack_wire::Packet::StatsRequest {
            nonce: 3,
            proof: None,
        }
        .to_vec();
        let mut buf = [0u8; 512];
        let mut last = Instant::now();
        let mut longest = Duration::ZERO;
        let t_end = Instant::now() + Duration::from_secs(30);
        while run.load(Ordering::Relaxed) && Instant::now() < t_end {
            let _ = s.send_to(&req, addr);
            let sent = Instant::now();
            while sent.elapsed() < Duration::from_millis(10) {
                if let Ok((n, from)) = s.recv_from(&mut buf) {
                    if from == addr
                        && matches!(
                            tickpack_wire::Packet::decode(&buf[..n]),
                            Ok(tickpack_wire::Packet::Stats(_))
                        )
                    {
                        longest = longest.max(last.elapsed());
                        last = Instant::now();
                    }
                }
            }
        }
        longest = longest.max(last.elapsed());
        longest.as_millis() as u64
    })
}

#[test]
fn a_server_killed_mid_run_is_an_outage_and_the_players_reconnect_to_its_restart() {
    let _g = serial();
    require_root("namespaces, cgroups, links");
    let mut host = host_up("m1", "198.19.81.0/24");
    let st = host.status().unwrap();
    let init = st["instances"][0]["pid"].as_u64().unwrap() as u32;
    let addr = st["instances"][0]["address"].as_str().unwrap().to_string();
    let server = server_pid(&mut host, init);
    let json = std::env::temp_dir().join(format!("tp-outage-m1-{}.json", std::process::id()));
    let p = players(&addr, &json);
    // Two seconds into the five-second window.
    std::thread::sleep(Duration::from_millis(3_000));
    kill9(server);
    let (out, doc) = finish(p, &json);
    let text = text(&out);
    let st = host.status().unwrap();
    assert!(
        st["instances"][0]["restarts"].as_u64().unwrap() >= 1,
        "the supervisor restarted the server: {st:#}"
    );
    assert_eq!(out.status.code(), Some(EXIT_LOST), "{text}");
    assert_eq!(doc["connected"], 6, "{text}");
    // Every player saw the outage and came back.
    let outages = &doc["outages"];
    assert!(outages["count"].as_u64().unwrap() >= 6, "{outages} {text}");
    assert!(
        outages["longest_us"].as_u64().unwrap() >= 200_000,
        "{outages}"
    );
    assert!(doc["reconnects"].as_u64().unwrap() >= 6, "{text}");
    let (snaps, cmds) = (&doc["snapshots"], &doc["commands"]);
    assert!(snaps["lost"].as_u64().unwrap() > 0, "{snaps}");
    assert_eq!(
        snaps["expected"].as_u64().unwrap(),
        snaps["received"].as_u64().unwrap() + snaps["lost"].as_u64().unwrap()
    );
    let (reflected, lost) = (
        cmds["reflected"].as_u64().unwrap(),
        cmds["lost"].as_u64().unwrap(),
    );
    assert!(lost > 0, "{cmds}");
    // The kill came about 2 s into the 5 s window: far more than 2/5 of the
    // due commands reflected means the restarted server reflected many.
    assert!(
        reflected * 100 > (reflected + lost) * 50,
        "commands after the restart were reflected: {cmds} {text}"
    );
    assert!(text.contains("outages:"), "{text}");
    assert!(text.contains("not served"), "{text}");
}

/// Killing the instance's init (the PID `host status` reports) must never
/// go unseen: whatever happens to the server (it may be killed and
/// restarted with the instance, or survive the init), the players' report
/// agrees with the test's own probe of the server, and any interruption is
/// an outage with lost commands and exit 6.
#[test]
fn a_killed_instance_init_is_never_hidden_from_the_players_report() {
    let _g = serial();
    require_root("namespaces, cgroups, links");
    let mut host = host_up("m2", "198.19.82.0/24");
    let st = host.status().unwrap();
    let init = st["instances"][0]["pid"].as_u64().unwrap() as u32;
    let addr = st["instances"][0]["address"].as_str().unwrap().to_string();
    server_pid(&mut host, init);
    let json = std::env::temp_dir().join(format!("tp-outage-m2-{}.json", std::process::id()));
    let p = players(&addr, &json);
    let run = Arc::new(AtomicBool::new(true));
    std::thread::sleep(Duration::from_millis(1_500));
    let gap = probe(addr.parse().unwrap(), run.clone());
    std::thread::sleep(Duration::from_millis(1_500));
    // The server seen before is killed on drop if it outlives its init.
    kill9(init);
    let (out, doc) = finish(p, &json);
    run.store(false, Ordering::Relaxed);
    let longest_gap_ms = gap.join().unwrap();
    let text = text(&out);
    let outages = doc["outages"]["count"].as_u64().unwrap();
    let lost =
        doc["snapshots"]["lost"].as_u64().unwrap() + doc["commands"]["lost"].as_u64().unwrap();
    eprintln!("probe: longest gap {longest_gap_ms} ms; players: {outages} outage(s), {lost} lost");
    // The exit code and the document always agree.
    assert_eq!(
        out.status.code() == Some(EXIT_LOST),
        outages > 0 || lost > 0,
        "{text}"
    );
    if longest_gap_ms >= 300 {
        // The server was away: the players must say so.
        assert!(
            outages >= 1,
            "probe saw {longest_gap_ms} ms without an answer: {text}"
        );
        assert!(doc["commands"]["lost"].as_u64().unwrap() > 0, "{text}");
        assert_eq!(out.status.code(), Some(EXIT_LOST), "{text}");
        assert!(doc["reconnects"].as_u64().unwrap() >= 1, "{text}");
    } else if longest_gap_ms < 100 {
        // The server never stopped answering: no invented outage.
        assert_eq!(
            outages, 0,
            "probe's longest gap {longest_gap_ms} ms: {text}"
        );
    }
}
