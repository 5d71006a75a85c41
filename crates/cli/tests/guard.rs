//! The QoS guard's batch work end to end, as root (CI runs as root): a
//! `--batch` command runs as the unprivileged batch user in the host's
//! batch cgroup on the server CPUs, is removed with the host also after a
//! `kill -9` of it, and is restarted (and reported) when it exits or
//! crashes. Every host is taken down by its guard, also when an assertion
//! fails (see `support::host::Host`).

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::host::{events, host_down, Host};
use support::{require_root, serial};

/// What these tests need root for.
const ROOT: &str = "namespaces, cgroups, another user";
/// Address range of these tests' hosts.
const RANGE: &str = "198.19.100.0/24";

fn batch(s: &Value) -> &Value {
    &s["guard"]["batch"][0]
}

/// Alive and not a zombie.
fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_owned()))
        .is_some_and(|r| !r.starts_with('Z') && !r.starts_with('X'))
}

fn comm_of(pid: u64) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The command the sandbox's init `init` runs, once it has dropped its
/// privileges (before that the init's child is still root) and, when
/// `comm` is given, exec'd it.
fn command_of(init: u64, comm: Option<&str>) -> Option<u64> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        let ready =
            |&p: &u64| uid_of(p).is_some_and(|u| u != 0) && comm.is_none_or(|c| comm_of(p) == c);
        if let Some(p) = children(init).into_iter().find(ready) {
            return Some(p);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn uid_of(pid: u64) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The processes whose parent is `pid` (stress-ng's workers).
fn children(pid: u64) -> Vec<u64> {
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// The batch cgroup's CPU set (v1 cpuset hierarchy or the v2 tree).
fn batch_cpus(name: &str) -> Option<String> {
    [
        format!("/sys/fs/cgroup/cpuset/tp{name}/tp{name}-batch/cpuset.cpus"),
        format!("/sys/fs/cgroup/tp{name}/tp{name}-batch/cpuset.cpus"),
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .map(|s| s.trim().to_owned())
}

#[test]
fn root_batch_work_is_removed_after_kill_9_of_the_host() {
    let _g = serial();
    require_root(ROOT);
    let mut host = Host::up_in_temp(
        "guard",
        "gk9",
        &[
            "--instances",
            "1",
            "--range",
            RANGE,
            "--reserved-cpus",
            "0",
            "--guard",
            "--batch",
            "stress-ng --cpu 1",
        ],
    );
    let st = host.wait_for(
        |s| batch(s)["state"] == "running" && batch(s)["pid"].is_u64(),
        "the batch running",
    );
    let init = batch(&st)["pid"].as_u64().unwrap();
    // The status names the sandbox's init (root); the command is its child.
    let pid = command_of(init, Some("stress-ng")).expect("the init started stress-ng");
    // The host's own batch uid: its uid block's base, one below instance
    // 1's (whose server is its init's child too).
    let inst = st["instances"][0]["pid"].as_u64().unwrap();
    let server = command_of(inst, None).expect("instance 1's server");
    let server_uid = uid_of(server).expect("instance 1's uid");
    assert!(server_uid > 200_000, "instance 1 in a block: {server_uid}");
    assert_eq!(
        uid_of(pid),
        Some(server_uid - 1),
        "runs as the host's batch user"
    );
    let cpus = batch_cpus("gk9").expect("the batch has its own cgroup");
    assert!(
        !cpus.split(',').any(|c| c == "0"),
        "never on the reserved CPU 0: {cpus}"
    );
    // stress-ng's worker, in the same cgroup, outlives nothing either.
    let t0 = Instant::now();
    let mut workers = children(pid);
    while workers.is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        workers = children(pid);
    }
    assert!(!workers.is_empty(), "stress-ng started its worker");

    host.up.kill().unwrap(); // SIGKILL: no clean-up happens
    host.up.wait().unwrap();
    let out = host_down("gk9", &host.run_dir);
    assert!(out.status.success(), "{out:?}");
    for p in [init, pid].into_iter().chain(workers) {
        assert!(
            !alive(p),
            "batch process {p} outlived the host and its host down"
        );
    }
    assert_eq!(batch_cpus("gk9"), None, "the batch cgroup is removed");
    assert!(!Path::new(&host.run_dir).join("state.json").exists());
}

#[test]
fn root_a_batch_command_that_exits_or_crashes_is_restarted_and_reported() {
    let _g = serial();
    require_root(ROOT);
    let mut host = Host::up_in_temp(
        "guard",
        "grs",
        &[
            "--instances",
            "1",
            "--range",
            RANGE,
            "--batch",
            "false",
            "--batch",
            "sleep 600",
        ],
    );
    // `false` exits with 1: restarted with backoff, the exit in the status.
    let st = host.wait_for(
        |s| batch(s)["restarts"].as_u64() >= Some(1),
        "the exiting batch command restarted",
    );
    assert_eq!(
        batch(&st)["last_exit"],
        "exited with code 1",
        "{:#}",
        st["guard"]
    );
    // `sleep` killed: a crash, restarted too.
    let st = host.wait_for(
        |s| s["guard"]["batch"][1]["pid"].is_u64(),
        "the second batch command running",
    );
    let pid = st["guard"]["batch"][1]["pid"].as_u64().unwrap();
    // The sandbox's init runs the command as PID 1 of its own PID
    // namespace, where the kernel drops a signal it has no handler for
    // unless it is SIGKILL (a real fault is forced): kill the command.
    let sleep = command_of(pid, Some("sleep")).expect("the init runs sleep");
    // SAFETY: kill(2) on the batch process this test's host started.
    unsafe { libc::kill(sleep as i32, libc::SIGKILL) };
    let st = host.wait_for(
        |s| s["guard"]["batch"][1]["restarts"].as_u64() >= Some(1),
        "the crashed batch command restarted",
    );
    let b = &st["guard"]["batch"][1];
    assert_eq!(b["last_exit"], "was killed by signal 9", "{b:#}");
    assert_ne!(b["pid"].as_u64(), Some(pid));
    let exits = events(&st, "batch_exited");
    let exited = |batch: u64, command: &str, cause: Value| {
        exits.iter().any(|e| {
            e["batch"] == batch
                && e["command"] == command
                && e["cause"] == cause
                && e["after"]["then"] == "restart"
        })
    };
    assert!(
        exited(1, "false", serde_json::json!({"how": "code", "code": 1})),
        "{exits:?}"
    );
    assert!(
        exited(
            2,
            "sleep 600",
            serde_json::json!({"how": "signal", "signal": 9})
        ),
        "{exits:?}"
    );
    let out = host.down();
    assert!(out.status.success(), "{out:?}");
}
