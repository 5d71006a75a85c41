//! No thread of tickpack but the servers' may run on a server core while
//! `tickpack bench` measures (issue 33): the bench holds itself to the load
//! generator's CPUs, the servers get their own cores. Root (netns backend).

mod support;

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{exe, serial, Leftovers};

/// The CPUs a thread may run on (`Cpus_allowed_list` of its `status`).
fn allowed(pid: u32, tid: &str) -> Option<BTreeSet<usize>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    tickpack_sys::parse_cpu_list(list.trim(), None)
        .ok()
        .map(|v| v.into_iter().collect())
}

/// The threads of `pid` (with the thread's name) and its child processes.
fn threads_and_children(pid: u32) -> (Vec<(String, String)>, Vec<u32>) {
    let mut threads = vec![];
    let mut children = vec![];
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let tid = e.file_name().to_string_lossy().into_owned();
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let kids = std::fs::read_to_string(e.path().join("children")).unwrap_or_default();
        children.extend(
            kids.split_whitespace()
                .filter_map(|k| k.parse::<u32>().ok()),
        );
        threads.push((tid, comm.trim().to_string()));
    }
    (threads, children)
}

/// Stops the bench and takes its host down, even when the test fails.
struct Cleanup(Child);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = Command::new(exe())
            .args(["host", "down", "--name", "bp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let left = Leftovers::of("tpbp").scan();
        if !std::thread::panicking() {
            assert!(left.is_empty(), "left over: {left:?}");
        }
    }
}

#[test]
fn root_a_tickpack_thread_ran_on_a_server_core() {
    if !tickpack_testkit::root_or_skip("root_a_tickpack_thread_ran_on_a_server_core") {
        return;
    }
    let online = tickpack_net::cpu::online_cpus();
    if online.len() < 2 {
        eprintln!("skipped: one CPU, no server core apart from the load generator's");
        return;
    }
    let _g = serial();
    let out_dir = std::env::temp_dir().join(format!("tp-bench-pinning-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    // The load generator on CPU 0 (the default), servers on the others.
    let bench = Command::new(exe())
        .args([
            "bench",
            "--quick",
            "--cost",
            "light",
            "--backend",
            "netns",
            "--name",
            "bp",
            "--range",
            "198.19.97.0/24",
            "--out",
        ])
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tickpack bench starts");
    let pid = bench.id();
    let mut cleanup = Cleanup(bench);
    let load = BTreeSet::from([0usize]);
    let mut bench_threads = BTreeSet::new();
    let mut server_on_server_core = false;
    let mut readers_threads = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while cleanup.0.try_wait().unwrap().is_none() && Instant::now() < deadline {
        // The bench pins itself first thing in its run (after parsing its
        // flags): from then on, every thread of it.
        let pid_text = pid.to_string();
        if bench_threads.is_empty() && allowed(pid, &pid_text).is_some_and(|c| c != load) {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        let (threads, children) = threads_and_children(pid);
        for (tid, name) in threads {
            // The calibration runs on a server core on purpose, between
            // ladders, when no server runs there (its thread's name).
            if name == "calibration" {
                continue;
            }
            if let Some(cpus) = allowed(pid, &tid) {
                assert!(
                    cpus.is_subset(&load),
                    "bench thread {tid} ({name}) may run on {cpus:?}, not only the load \
                     generator's {load:?}"
                );
                bench_threads.insert(tid);
            }
        }
        // The servers (children of the host's root process, a child of the
        // bench, or below its init) are not held to the load generator's
        // CPUs; the players and the prober (its `__readers` children) and
        // the checks' `__decoder` are.
        let mut children = children;
        while let Some(child) = children.pop() {
            let (threads, kids) = threads_and_children(child);
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
            let sub = cmdline.split(|&b| b == 0).nth(1);
            if sub == Some(b"__root".as_slice()) {
                children.extend(kids);
                continue;
            }
            if sub == Some(b"__readers".as_slice()) || sub == Some(b"__decoder".as_slice()) {
                for (tid, name) in &threads {
                    if let Some(cpus) = allowed(child, tid) {
                        assert!(
                            cpus.is_subset(&load),
                            "readers thread {tid} ({name}) may run on {cpus:?}, not only the \
                             load generator's {load:?}"
                        );
                        readers_threads += 1;
                    }
                }
                continue;
            }
            server_on_server_core |= threads.iter().any(|(tid, _)| {
                allowed(child, tid).is_some_and(|c| c.iter().any(|cpu| !load.contains(cpu)))
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = cleanup.0.wait().unwrap();
    let mut err = String::new();
    if let Some(mut e) = cleanup.0.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    // Its verdicts do not matter here (a busy CI machine fails QoS): that
    // it ran steps does.
    assert!(
        err.contains("step 1"),
        "the bench ran a step ({status}): {err}"
    );
    assert!(
        bench_threads.len() > 1,
        "threads were sampled: {bench_threads:?}"
    );
    assert!(
        server_on_server_core,
        "a server was allowed on a server core"
    );
    assert!(readers_threads > 0, "the players' threads were sampled");
    let _ = std::fs::remove_dir_all(&out_dir);
}
