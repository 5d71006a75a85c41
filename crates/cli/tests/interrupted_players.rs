//! `tickpack players` ended early (Ctrl-C, SIGTERM from a script's timeout)
//! must still report an outage that happened before the interruption: a
//! server that stopped answering in the last second before the signal is
//! not a clean run. Loopback only: a local `tickpack server` that the test
//! freezes with SIGSTOP and thaws again; both children are ended by PID.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `players` exit code when anything was lost or there was an outage.
const EXIT_LOST: i32 = 6;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_tickpack")
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on a child this test started and has not reaped.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill {pid} {sig}");
}

/// A child killed (and thawed first, so SIGKILL is not left pending on a
/// stopped process) and reaped on drop.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child, possibly already exited (ESRCH).
        unsafe { libc::kill(self.0.id() as i32, libc::SIGCONT) };
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_outage_just_before_players_is_interrupted_is_not_hidden() {
    let mut server = Command::new(exe())
        .args(["server", "--bind", "127.0.0.1:0", "--cost", "light"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server");
    let stdout = server.stdout.take().expect("piped");
    let server = Reaped(server);
    // "listening on ADDR ..."
    let mut addr = None;
    for line in BufReader::new(stdout).lines().take(20) {
        let line = line.expect("server output");
        if let Some(rest) = line.split("listening on ").nth(1) {
            addr = rest.split_whitespace().next().map(str::to_string);
            break;
        }
    }
    let addr = addr.expect("the server said where it listens");
    let json = std::env::temp_dir().join(format!("tp-interrupted-{}.json", std::process::id()));
    let players = Command::new(exe())
        .args([
            "players",
            "--target",
            &addr,
            "--players",
            "4",
            "--duration",
            "20s",
            "--warmup",
            "1s",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start players");
    let ppid = players.id();
    let mut players = Reaped(players);
    // Two seconds of service in the window, then the server freezes for
    // 700 ms (well over the 200 ms that make an outage) before the players
    // are interrupted; it is thawed again afterwards.
    std::thread::sleep(Duration::from_millis(3_000));
    signal(server.0.id(), libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(700));
    signal(ppid, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    signal(server.0.id(), libc::SIGCONT);
    // The players stop within a few seconds of the signal (bounded wait).
    let mut status = None;
    for _ in 0..100 {
        if let Some(s) = players.0.try_wait().expect("wait players") {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = status.expect("players ended within 10 s of SIGINT");
    let mut text = String::new();
    if let Some(mut o) = players.0.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut o, &mut text);
    }
    if let Some(mut e) = players.0.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut text);
    }
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("no result ({e}): {text}")),
    )
    .expect("result JSON");
    let _ = std::fs::remove_file(&json);
    drop(server);
    let snaps = &doc["snapshots"];
    let outages = &doc["outages"];
    assert!(
        snaps["lost"].as_u64().unwrap_or(0) > 0 || outages["count"].as_u64().unwrap_or(0) > 0,
        "the server was frozen for 700 ms before the interruption, yet no snapshot \
         was lost and no outage counted: {snaps} {outages}\n{text}"
    );
    assert_eq!(status.code(), Some(EXIT_LOST), "{text}");
}
