//! A host (`tickpack host up`) brought up in the background by a test,
//! and the guard that takes it down.
//!
//! On drop, pass or fail: `host down` (then the supervisor is waited for and
//! killed by PID if it lingers), any server PID the test handed to
//! [`Host::track_server`] that outlived its instance is killed, `host down`
//! once more (it removes leftovers even if the supervisor died), the files
//! given to [`Host::remove_on_drop`] are removed, and, unless the test is
//! already failing, nothing named `tp<name>` may be left.

use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{exe, free_udp_ports, Leftovers};

/// How long [`Host::wait_for`] and [`Host::wait_log`] wait.
const WAIT: Duration = Duration::from_secs(20);

/// How long the guard waits for the supervisor to exit after `host down`.
const DOWN_WAIT: Duration = Duration::from_secs(10);

/// `tickpack host down --name NAME --run-dir RUN_DIR`, run to its end.
pub fn host_down(name: &str, run_dir: &Path) -> Output {
    Command::new(exe())
        .args(["host", "down", "--name", name, "--run-dir"])
        .arg(run_dir)
        .output()
        .expect("host down")
}

/// The flags of one instance in its own network namespace behind a veth
/// pair on `range` (`--instances 1 --backend netns --net veth --range
/// RANGE`), followed by `more`.
pub fn one_netns_instance<'a>(range: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--instances",
        "1",
        "--backend",
        "netns",
        "--net",
        "veth",
        "--range",
        range,
    ];
    args.extend_from_slice(more);
    args
}

/// `TMPDIR/tp-TAG-NAME-PID`: a run dir of this test process.
pub fn temp_run_dir(tag: &str, name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tp-{tag}-{name}-{}", std::process::id()))
}

/// Whether every instance of a `host status --json` document is running
/// (and there is at least one).
pub fn all_running(s: &Value) -> bool {
    s["instances"]
        .as_array()
        .is_some_and(|v| !v.is_empty() && v.iter().all(|i| i["state"] == "running"))
}

/// Instance `id` of a `host status --json` document (`null` if absent).
pub fn instance(s: &Value, id: u64) -> Value {
    s["instances"]
        .as_array()
        .and_then(|v| v.iter().find(|i| i["id"] == id))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The events of kind `kind` in a `host status --json` document, oldest
/// first (typed records: `tickpack_host::event::Event`).
pub fn events(s: &Value, kind: &str) -> Vec<Value> {
    s["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

/// The hosts of a bench named `name`, taken down on drop, also when an
/// assertion failed (a bench removes its own hosts; this is for one that
/// crashed or was killed). With `check_leftovers`, nothing named
/// `tp<name>` may be left then, unless the test is already failing.
pub struct BenchHosts {
    pub name: &'static str,
    pub check_leftovers: bool,
}

impl Drop for BenchHosts {
    fn drop(&mut self) {
        let _ = Command::new(exe())
            .args(["host", "down", "--name", self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if self.check_leftovers {
            let left = Leftovers::of(&format!("tp{}", self.name)).scan();
            if !std::thread::panicking() {
                assert!(left.is_empty(), "left over: {left:?}");
            }
        }
    }
}

/// A `host up` running in the background; see the module header for what
/// its drop does.
pub struct Host {
    pub name: String,
    pub run_dir: PathBuf,
    pub up: Child,
    servers: Vec<u32>,
    remove: Vec<PathBuf>,
}

impl Host {
    /// Starts `host up --name NAME --run-dir RUN_DIR ARGS` without waiting;
    /// stdout is dropped, stderr goes to `stderr`.
    pub fn spawn(name: &str, run_dir: &Path, args: &[&str], stderr: Stdio) -> Host {
        Host::spawn_with_env(name, run_dir, args, stderr, &[])
    }

    /// [`Host::spawn`] with `env` added to the environment of `host up`.
    pub fn spawn_with_env(
        name: &str,
        run_dir: &Path,
        args: &[&str],
        stderr: Stdio,
        env: &[(&str, &str)],
    ) -> Host {
        let mut cmd = Command::new(exe());
        cmd.envs(env.iter().copied());
        Host::start(cmd, name, run_dir, args, stderr)
    }

    /// [`Host::spawn`] with descriptors left open as a careless parent
    /// leaves them (a service manager, a CI harness, a shell's `9</`):
    /// each `(fd, at)` is duplicated to number `at` in `host up`, not
    /// close-on-exec.
    pub fn spawn_inheriting(
        name: &str,
        run_dir: &Path,
        args: &[&str],
        stderr: Stdio,
        fds: &[(RawFd, RawFd)],
    ) -> Host {
        let fds = fds.to_vec();
        let mut cmd = Command::new(exe());
        // SAFETY: the closure only calls dup2(2), which is
        // async-signal-safe, on descriptors this test holds open.
        unsafe {
            cmd.pre_exec(move || {
                for &(fd, at) in &fds {
                    if libc::dup2(fd, at) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        Host::start(cmd, name, run_dir, args, stderr)
    }

    /// `cmd` (the binary) run as `host up --name NAME --run-dir RUN_DIR ARGS`.
    fn start(mut cmd: Command, name: &str, run_dir: &Path, args: &[&str], stderr: Stdio) -> Host {
        let up = cmd
            .args(["host", "up", "--name", name, "--run-dir"])
            .arg(run_dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start host up");
        Host {
            name: name.into(),
            run_dir: run_dir.to_path_buf(),
            up,
            servers: vec![],
            remove: vec![],
        }
    }

    /// [`Host::spawn`] run through `wrapper` (a program and its words that
    /// then run tickpack, e.g. `setpriv --bounding-set=-sys_resource`),
    /// stderr piped.
    pub fn spawn_wrapped(wrapper: &[&str], name: &str, run_dir: &Path, args: &[&str]) -> Host {
        let (program, words) = wrapper.split_first().expect("a wrapper program");
        let up = Command::new(program)
            .args(words)
            .arg(exe())
            .args(["host", "up", "--name", name, "--run-dir"])
            .arg(run_dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start host up");
        Host {
            name: name.into(),
            run_dir: run_dir.to_path_buf(),
            up,
            servers: vec![],
            remove: vec![],
        }
    }

    /// [`Host::spawn`] (stderr dropped), then waits until every instance
    /// runs.
    pub fn up(name: &str, run_dir: &Path, args: &[&str]) -> Host {
        Host::spawn(name, run_dir, args, Stdio::null()).running()
    }

    /// [`Host::up`] in a [`temp_run_dir`] removed on drop.
    pub fn up_in_temp(tag: &str, name: &str, args: &[&str]) -> Host {
        let dir = temp_run_dir(tag, name);
        Host::spawn(name, &dir, args, Stdio::null())
            .remove_on_drop(&dir)
            .running()
    }

    /// [`Host::up_in_temp`] on the process backend, its instances on
    /// 127.0.0.1 from a port on that is free for `ports` of them
    /// (`--backend process --port PORT`), then `args`; returns the host
    /// and PORT.
    pub fn up_on_free_ports(tag: &str, name: &str, ports: u16, args: &[&str]) -> (Host, u16) {
        let port = free_udp_ports(ports);
        let port_arg = port.to_string();
        let mut all = vec!["--backend", "process", "--port", &port_arg];
        all.extend_from_slice(args);
        (Host::up_in_temp(tag, name, &all), port)
    }

    /// Waits until every instance runs; returns the host.
    pub fn running(mut self) -> Host {
        self.wait_for(all_running, "all instances running");
        self
    }

    /// Removes `path` (a directory or a file) on drop.
    pub fn remove_on_drop(mut self, path: &Path) -> Host {
        self.remove.push(path.to_path_buf());
        self
    }

    /// Kills `pid` on drop if it still runs a server: a server orphaned by
    /// its init's death is one this test started.
    pub fn track_server(&mut self, pid: u32) {
        self.servers.push(pid);
    }

    /// `host status --json`, if it answers.
    pub fn status(&self) -> Option<Value> {
        let out = Command::new(exe())
            .args(["host", "status", "--json", "--name", &self.name])
            .arg("--run-dir")
            .arg(&self.run_dir)
            .output()
            .ok()?;
        serde_json::from_slice(&out.stdout).ok()
    }

    /// Waits (at most 20 s) until `ok` holds for the status; fails at once
    /// if `host up` exits meanwhile.
    pub fn wait_for(&mut self, ok: impl Fn(&Value) -> bool, what: &str) -> Value {
        let t0 = Instant::now();
        loop {
            if let Ok(Some(st)) = self.up.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = self.up.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                panic!("host up exited ({st}) while waiting for {what}: {err}");
            }
            let s = self.status();
            if let Some(s) = s.as_ref().filter(|s| ok(s)) {
                return s.clone();
            }
            assert!(t0.elapsed() < WAIT, "timed out waiting for {what}: {s:#?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `host down`, then waits (at most 10 s) for the supervisor to exit.
    pub fn down(&mut self) -> Output {
        let out = host_down(&self.name, &self.run_dir);
        let t0 = Instant::now();
        while self.up.try_wait().ok().flatten().is_none() && t0.elapsed() < DOWN_WAIT {
            std::thread::sleep(Duration::from_millis(20));
        }
        out
    }

    /// The host-side working directory of instance `id`.
    pub fn instance_dir(&self, id: u32) -> PathBuf {
        self.run_dir.join("instances").join(id.to_string())
    }

    /// The log of instance `id` (empty until it exists).
    pub fn log(&self, id: u32) -> String {
        std::fs::read_to_string(self.run_dir.join("logs").join(format!("{id}.log")))
            .unwrap_or_default()
    }

    /// Waits (at most 20 s) until instance `id`'s log holds `needle`;
    /// returns the log.
    pub fn wait_log(&self, id: u32, needle: &str) -> String {
        let t0 = Instant::now();
        loop {
            let out = self.log(id);
            if out.contains(needle) {
                return out;
            }
            assert!(
                t0.elapsed() < WAIT,
                "instance {id} never printed {needle:?}: {out:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if self.up.try_wait().ok().flatten().is_none() {
            self.down();
            let _ = self.up.kill();
            let _ = self.up.wait();
        }
        for &pid in &self.servers {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmd).contains("server") {
                // SAFETY: kill(2) has no memory preconditions; the PID runs a
                // server this test started (checked just above).
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
        // Once more: removes leftovers even if the supervisor died.
        let _ = host_down(&self.name, &self.run_dir);
        for p in &self.remove {
            let _ = std::fs::remove_dir_all(p);
            let _ = std::fs::remove_file(p);
        }
        let left = Leftovers::of(&format!("tp{}", self.name)).scan();
        if !std::thread::panicking() {
            assert!(
                left.is_empty(),
                "host {} left after host down: {left:?}",
                self.name
            );
        }
    }
}

/// The children of `pid` (from every one of its threads) whose command
/// is `tickpack SUB ...` (`__decoder`, `__readers`): each one's PID and
/// the privilege of each of its threads.
#[allow(dead_code)] // each test binary uses what it needs
pub fn children_running(
    pid: u32,
    sub: &str,
) -> Vec<(u32, Vec<tickpack_sys::unprivileged::Privilege>)> {
    let mut found = vec![];
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return found;
    };
    for task in tasks.flatten() {
        let kids = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for kid in kids
            .split_whitespace()
            .filter_map(|k| k.parse::<u32>().ok())
        {
            let cmdline = std::fs::read(format!("/proc/{kid}/cmdline")).unwrap_or_default();
            if cmdline.split(|&b| b == 0).nth(1) != Some(sub.as_bytes()) {
                continue;
            }
            let threads = std::fs::read_dir(format!("/proc/{kid}/task"))
                .map(|d| {
                    d.flatten()
                        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
                        .map(|s| tickpack_sys::unprivileged::Privilege::parse(&s))
                        .collect()
                })
                .unwrap_or_default();
            found.push((kid, threads));
        }
    }
    found
}
