//! A host facing hostile values and hostile readers, end to end: a reader
//! that closes the pipe early, `down` while a host is still starting, and
//! records that name what is already gone.

mod support;

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::host::Host;
use support::{exe, free_udp_ports, require_root, tickpack};

const ROOT: &str = "network namespaces named in a run dir's records";

/// What `tickpack ARGS` does when the reader of its stdout is gone before
/// it prints: (exit code, stderr).
fn with_stdout_closed(mut cmd: Command) -> (Option<i32>, String) {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two new descriptors, which we own from here.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fresh descriptors from pipe(2), owned once each.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let out = cmd
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A run dir of this test process, removed first.
fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tp-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Regression: `host status --json | head` panicked on the broken pipe
/// ("failed printing to stdout"); so did every command that prints.
#[test]
fn host_status_json_piped_to_head_does_not_panic() {
    let dir = fresh_dir("epipe");
    let port = free_udp_ports(2).to_string();
    let host = Host::up(
        "ep1",
        &dir,
        &["--backend", "process", "--instances", "2", "--port", &port],
    )
    .remove_on_drop(&dir);
    let mut cmd = tickpack(&["host", "status", "--json", "--name", "ep1"]);
    cmd.arg("--run-dir").arg(&host.run_dir);
    for cmd in [cmd, tickpack(&["games", "list"])] {
        let shown = format!("{cmd:?}");
        let (code, stderr) = with_stdout_closed(cmd);
        assert!(!stderr.contains("panicked"), "{shown}: {stderr}");
        assert!(stderr.trim().is_empty(), "{shown}: quiet: {stderr}");
        assert_eq!(code, Some(141), "{shown}: 128 + SIGPIPE");
    }
}

/// Regression: `host down` during the second a host starts (its records
/// written, its control socket not yet bound) was refused, naming the
/// command that had just failed. It now waits for the start and then
/// removes what is left. The starting supervisor is played by a process
/// whose command line names tickpack, recorded in a marked run dir.
#[test]
fn host_down_while_a_host_starts_waits_instead_of_refusing() {
    let dir = fresh_dir("starting");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".tickpack-run-dir"),
        "tickpack run dir (created by tickpack)\n",
    )
    .unwrap();
    let mut starting = Command::new("sh")
        .args(["-c", "sleep 2", "tickpack-starting"])
        .spawn()
        .unwrap();
    std::fs::write(
        dir.join("state.json"),
        format!(
            "{{\"name\":\"st1\",\"supervisor_pid\":{},\"net\":null,\"cgroups\":[],\"placement\":null,\"config\":null}}",
            starting.id()
        ),
    )
    .unwrap();
    let t0 = Instant::now();
    let out = tickpack(&["host", "down", "--name", "st1", "--run-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = starting.kill();
    let _ = starting.wait();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("already running"), "{stderr}");
    assert!(stderr.contains("still starting"), "{stderr}");
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "it waited for the start to end"
    );
    assert!(!dir.exists(), "its own run dir, emptied, is gone");
}

/// Regression: after a failed start, `host down` reported removing the
/// namespaces, routes and tables its records named, though they were
/// already gone. Only what was there is reported now.
#[test]
fn root_host_down_reports_only_removals_that_happened() {
    require_root(ROOT);
    let dir = fresh_dir("gone");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".tickpack-run-dir"),
        "tickpack run dir (created by tickpack)\n",
    )
    .unwrap();
    assert!(!Path::new("/run/netns/tpgn1-1").exists());
    std::fs::write(
        dir.join("state.json"),
        r#"{"name":"gn1","supervisor_pid":0,"net":{"namespaces":["tpgn1-1"],"links":["tpgn1br"],"routes":["unreachable 10.251.0.0/16 metric 4294967295"],"tables":["tpgn1"]},"cgroups":[],"placement":null,"config":null}"#,
    )
    .unwrap();
    let out = Command::new(exe())
        .args(["host", "down", "--name", "gn1", "--run-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("nothing was left over") && !stderr.contains("tpgn1-1"),
        "{stderr}"
    );
    assert!(!dir.exists(), "its own run dir, emptied, is gone");
}
