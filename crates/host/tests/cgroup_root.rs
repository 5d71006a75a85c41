//! The cgroup module on this machine's real cgroup filesystem (v1 or v2).
//!
//! These tests need root, as CI has: without it they fail with a message
//! saying so rather than passing silently. Every cgroup they create is named
//! `tp-test-<pid>-<test>` and is removed by a guard, also when an assertion
//! fails.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tickpack_host::cgroup::{
    join_from_child, remove_stale, Cgroup, CgroupLayout, CgroupVersion, Controller, Limits,
    DEFAULT_ROOT,
};
use tickpack_host::placement::{Topology, DEFAULT_SYS_ROOT};

fn require_root() {
    tickpack_testkit::require_root(&format!(
        "it creates cgroups under {DEFAULT_ROOT}; run `cargo test -p tickpack-host` as root"
    ));
}

fn layout() -> CgroupLayout {
    require_root();
    CgroupVersion::detect(Path::new(DEFAULT_ROOT))
        .unwrap_or_else(|e| panic!("cgroup detection on this machine failed: {e}"))
}

fn name(test: &str) -> String {
    format!("tp-test-{}-{test}", std::process::id())
}

/// Removes the cgroup when the test ends, whatever happened.
struct Guard(Option<Cgroup>);

impl Guard {
    fn new(cgroup: Cgroup) -> Guard {
        Guard(Some(cgroup))
    }

    fn get(&self) -> &Cgroup {
        self.0.as_ref().expect("cgroup already removed")
    }

    fn remove(&mut self) -> Result<(), tickpack_host::cgroup::CgroupError> {
        self.0.take().expect("cgroup already removed").remove()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(cgroup) = self.0.take() {
            let paths = cgroup.paths();
            if let Err(e) = cgroup.remove() {
                eprintln!("cleanup: cannot remove {paths:?}: {e}");
            }
        }
    }
}

/// Removes every cgroup with this prefix when the test ends.
struct StaleGuard(CgroupLayout, String);

impl Drop for StaleGuard {
    fn drop(&mut self) {
        if let Err(e) = remove_stale(&self.0, &self.1) {
            eprintln!("cleanup: remove_stale {}: {e}", self.1);
        }
    }
}

/// Kills and reaps a child when the test ends.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A command that joins `cgroup` between fork and exec, the way the
/// spawner does it.
fn joined(cgroup: &Cgroup, program: &str, args: &[&str]) -> (Command, Vec<File>) {
    let files = cgroup.open_procs().unwrap();
    let fds: Vec<RawFd> = files.iter().map(AsRawFd::as_raw_fd).collect();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure only calls join_from_child, which is
    // async-signal-safe (write(2) on descriptors opened before fork).
    unsafe {
        cmd.pre_exec(move || join_from_child(&fds).map_err(io::Error::from_raw_os_error));
    }
    (cmd, files)
}

fn assert_gone(paths: &[PathBuf]) {
    for p in paths {
        assert!(!p.exists(), "{} is still there after remove", p.display());
    }
}

#[test]
fn a_process_over_its_memory_limit_is_oom_killed_and_counted() {
    let layout = layout();
    let limits = Limits {
        memory_bytes: Some(32 << 20),
        ..Limits::default()
    };
    let mut cg = Guard::new(Cgroup::create(&layout, &name("oom"), &limits).unwrap());
    let paths = cg.get().paths();

    // Under the limit: runs to the end.
    let (mut small, _files) = joined(
        cg.get(),
        "dd",
        &["if=/dev/zero", "of=/dev/null", "bs=4M", "count=4"],
    );
    let status = small.status().unwrap();
    assert!(
        status.success(),
        "dd with a 4 MiB buffer failed: {status:?}"
    );
    assert_eq!(cg.get().usage().oom_kills, 0);

    // dd allocates and fills a 100 MiB buffer: three times the limit.
    let (mut big, _files) = joined(
        cg.get(),
        "dd",
        &["if=/dev/zero", "of=/dev/null", "bs=100M", "count=1"],
    );
    let status = big.status().unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "dd touching 100 MiB under a 32 MiB limit should be SIGKILLed, got {status:?}"
    );
    let usage = cg.get().try_usage().unwrap();
    assert!(usage.oom_kills >= 1, "no OOM kill counted: {usage:?}");
    assert!(usage.cpu_usage_ns > 0, "no CPU time counted: {usage:?}");

    cg.remove().unwrap();
    assert_gone(&paths);
}

#[test]
fn cpuset_pins_the_process_and_remove_kills_it_and_leaves_nothing() {
    let layout = layout();
    let topo = Topology::read(Path::new(DEFAULT_SYS_ROOT)).unwrap();
    // CPU 1 on this 2-CPU machine: the last one in general.
    let cpu = *topo.online().last().unwrap();
    let limits = Limits {
        cpus: Some(vec![cpu]),
        ..Limits::default()
    };
    let group = name("pin");
    let mut cg = Guard::new(Cgroup::create(&layout, &format!("{group}/tp-0"), &limits).unwrap());
    let paths = cg.get().paths();
    let parents: Vec<PathBuf> = paths.iter().map(|p| p.parent().unwrap().into()).collect();

    let (mut cmd, _files) = joined(cg.get(), "sleep", &["30"]);
    let mut child = ChildGuard(cmd.spawn().unwrap());
    let pid = child.0.id();

    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    assert_eq!(allowed, cpu.to_string(), "not pinned by the cpuset");
    assert_eq!(cg.get().pids().unwrap(), vec![pid]);

    cg.remove().unwrap();
    let exit = child.0.wait().unwrap();
    assert_eq!(exit.signal(), Some(libc::SIGKILL), "{exit:?}");
    assert_gone(&paths);
    assert_gone(&parents);
}

#[test]
fn cpu_quota_caps_a_busy_loop() {
    let layout = layout();
    let limits = Limits {
        cpu_quota: Some(0.2),
        ..Limits::default()
    };
    let mut cg = Guard::new(Cgroup::create(&layout, &name("quota"), &limits).unwrap());
    let (mut cmd, _files) = joined(cg.get(), "sh", &["-c", "while :; do :; done"]);
    let _child = ChildGuard(cmd.spawn().unwrap());
    // Wait until the loop has used 0.1 s of CPU (at most 0.2 core: 0.5 s of
    // wall time or more), not for a fixed time: on a loaded machine the loop
    // may get less than its quota. Bounded at 20 s.
    let start = Instant::now();
    let mut used = 0.0;
    while used < 0.1 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
        used = cg.get().try_usage().unwrap().cpu_usage_ns as f64 / 1e9;
    }
    let wall = start.elapsed().as_secs_f64();
    assert!(
        used >= 0.1,
        "CPU time is not accounted: {used:.3} s in {wall:.1} s"
    );
    // Unlimited, the loop would use one whole CPU (as much CPU as wall time).
    assert!(
        used < 0.5 * wall,
        "a 0.2-core quota let a busy loop use {used:.2} s of CPU in {wall:.2} s"
    );
    cg.remove().unwrap();
}

#[test]
fn a_bad_cpu_list_is_refused_with_the_file_and_nothing_is_left() {
    let layout = layout();
    let topo = Topology::read(Path::new(DEFAULT_SYS_ROOT)).unwrap();
    let bad = topo.online().last().unwrap() + 1;
    let leaf = name("badcpu");
    let err = Cgroup::create(
        &layout,
        &leaf,
        &Limits {
            cpus: Some(vec![bad]),
            ..Limits::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!("cannot write {bad} to ")) && err.contains("cpuset.cpus: "),
        "{err}"
    );
    for dir in layout.hierarchies() {
        assert!(
            !dir.join(&leaf).exists(),
            "{} left behind",
            dir.join(&leaf).display()
        );
    }
}

#[test]
fn remove_stale_removes_a_leftover_and_kills_its_process() {
    let layout = layout();
    let prefix = name("stale");
    let _cleanup = StaleGuard(layout.clone(), prefix.clone());
    let limits = Limits {
        memory_bytes: Some(64 << 20),
        ..Limits::default()
    };
    // A crashed run: the cgroup and a process in it, no Cgroup value left.
    let leftover = Cgroup::create(&layout, &format!("{prefix}/tp-1"), &limits).unwrap();
    let (mut cmd, _files) = joined(&leftover, "sleep", &["30"]);
    let mut child = ChildGuard(cmd.spawn().unwrap());
    let paths = leftover.paths();
    drop(leftover);

    let removed = remove_stale(&layout, &prefix).unwrap();
    let mut expected: Vec<PathBuf> = paths
        .iter()
        .map(|p| p.parent().unwrap().to_owned())
        .collect();
    expected.sort();
    assert_eq!(removed, expected);
    assert_gone(&removed);
    let exit = child.0.wait().unwrap();
    assert_eq!(exit.signal(), Some(libc::SIGKILL), "{exit:?}");
}

#[test]
fn a_pids_limit_of_8_stops_a_shell_forking_20_sleeps() {
    let layout = layout();
    let limits = Limits {
        pids_max: Some(8),
        ..Limits::default()
    };
    let mut cg = Guard::new(Cgroup::create(&layout, &name("pids"), &limits).unwrap());
    let paths = cg.get().paths();
    let dir = cg
        .get()
        .controller_path(Controller::Pids)
        .expect("a pids limit joins the pids hierarchy");
    assert_eq!(
        std::fs::read_to_string(dir.join("pids.max"))
            .unwrap()
            .trim(),
        "8"
    );

    // The sleeps do not hold the shell's stderr, so it ends with the shell.
    // dash gives up at the first fork the limit refuses ("Cannot fork").
    let script =
        "i=0; while [ $i -lt 20 ]; do sleep 30 >/dev/null 2>&1 & i=$((i+1)); done; echo all-forked";
    let (mut cmd, _files) = joined(cg.get(), "sh", &["-c", script]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut shell = ChildGuard(cmd.spawn().unwrap());
    let start = Instant::now();
    while shell.0.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let running = cg.get().pids().unwrap();
    let status = shell.0.try_wait().unwrap();
    assert!(status.is_some(), "the shell was still running after 20 s");
    let (mut stdout, mut stderr) = (String::new(), String::new());
    io::Read::read_to_string(&mut shell.0.stdout.take().unwrap(), &mut stdout).unwrap();
    io::Read::read_to_string(&mut shell.0.stderr.take().unwrap(), &mut stderr).unwrap();

    assert!(
        !running.is_empty() && running.len() <= 8,
        "{} processes in a cgroup limited to 8: {running:?}",
        running.len()
    );
    assert!(
        !stdout.contains("all-forked"),
        "all 20 forks succeeded under pids.max 8 (status {status:?})"
    );
    assert!(
        stderr.to_lowercase().contains("fork"),
        "the shell did not report a failed fork: status {status:?}, stderr {stderr:?}"
    );
    // The kernel counts the forks it refused (pids.events, 4.3+) and the
    // most processes there were at once (pids.peak, 6.1+; v1 and v2).
    if let Ok(events) = std::fs::read_to_string(dir.join("pids.events")) {
        let refused: u64 = events
            .lines()
            .find_map(|l| l.strip_prefix("max "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        assert!(
            refused >= 1,
            "pids.events counts no refused fork: {events:?}"
        );
    }
    if let Ok(peak) = std::fs::read_to_string(dir.join("pids.peak")) {
        let peak: u64 = peak.trim().parse().unwrap();
        assert!(peak <= 8, "pids.peak {peak} above pids.max 8");
    }

    cg.remove().unwrap();
    assert_gone(&paths);
}
