//! Batch work in the instance's sandbox, as root (CI runs as root): a
//! `--batch` command cannot reach an instance or a host loopback service,
//! cannot write the host's /dev/shm, cannot see other command lines and
//! runs without privileges under seccomp. Each test runs a probe script as
//! the batch and reads what it printed to its log; hosts are taken down and
//! files removed by guards, also when an assertion fails.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use support::host::Host;
use support::{require_root, serial};

const ROOT: &str = "namespaces, cgroups, another user";
const RANGE: &str = "198.19.101.0/24";

/// Removes a directory (the probe's) or file when dropped.
struct Removed(PathBuf);
impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Kills a process the test started when dropped.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A probe directory outside /tmp (which the batch sees privately),
/// readable by the batch user, with `probe.sh` holding `body`.
fn probe_dir(tag: &str, body: &str) -> (Removed, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = PathBuf::from(format!("/var/tmp/tp-batchbox-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = dir.join("probe.sh");
    std::fs::write(
        &script,
        format!("#!/bin/bash\n{body}\necho PROBE-DONE\nexec sleep 600\n"),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (Removed(dir.clone()), script)
}

/// Waits (bounded) until the batch log says the probe is done; returns it.
fn probe_output(host: &Host) -> String {
    let log = host.run_dir.join("logs").join("batch-1.log");
    let t0 = Instant::now();
    loop {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&log) {
            let _ = f.read_to_string(&mut s);
        }
        if s.contains("PROBE-DONE") || t0.elapsed() > Duration::from_secs(40) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn up_with_probe(name: &str, script: &Path) -> Host {
    let cmd = script.display().to_string();
    Host::up_in_temp(
        "batchbox",
        name,
        &["--instances", "1", "--range", RANGE, "--batch", &cmd],
    )
}

#[test]
fn root_batch_cannot_reach_an_instance_or_host_loopback() {
    let _g = serial();
    require_root(ROOT);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let lport = listener.local_addr().unwrap().port();
    let (dir, script) = probe_dir(
        "net",
        &(r#"d=$(dirname "$0")
for _ in $(seq 200); do [ -s "$d/target" ] && break; sleep 0.1; done
read -r ip port < "$d/target"
if timeout 3 bash -c "echo x > /dev/udp/$ip/$port" 2>/dev/null; then echo INSTANCE-REACHED; else echo INSTANCE-UNREACHABLE; fi"#
            .to_owned()
            + &format!(
                "\nif timeout 3 bash -c 'echo x > /dev/tcp/127.0.0.1/{lport}' 2>/dev/null; then echo LOOPBACK-REACHED; else echo LOOPBACK-UNREACHABLE; fi"
            )),
    );
    let mut host = up_with_probe("bbnet", &script);
    let st = host.wait_for(support::host::all_running, "the instance running");
    let addr = st["instances"][0]["address"].as_str().unwrap().to_owned();
    let (ip, port) = addr.rsplit_once(':').unwrap();
    std::fs::write(dir.0.join("target"), format!("{ip} {port}\n")).unwrap();
    let out = probe_output(&host);
    assert!(out.contains("INSTANCE-UNREACHABLE"), "{out}");
    assert!(out.contains("LOOPBACK-UNREACHABLE"), "{out}");
    drop(listener);
}

#[test]
fn root_batch_cannot_write_the_hosts_dev_shm() {
    let _g = serial();
    require_root(ROOT);
    let shm = PathBuf::from(format!("/dev/shm/tp-batchbox-probe-{}", std::process::id()));
    let _gone = Removed(shm.clone());
    let (_dir, script) = probe_dir(
        "shm",
        &format!(
            "if echo x > {} 2>/dev/null; then echo SHM-WRITTEN; else echo SHM-REFUSED; fi",
            shm.display()
        ),
    );
    let host = up_with_probe("bbshm", &script);
    let out = probe_output(&host);
    assert!(out.contains("SHM-"), "the probe ran: {out}");
    assert!(!shm.exists(), "the batch wrote the host's /dev/shm: {out}");
}

#[test]
fn root_batch_cannot_see_other_command_lines() {
    let _g = serial();
    require_root(ROOT);
    // A process of the host with a marker in its command line.
    let _other = Killed(Command::new("sleep").arg("299.4711").spawn().unwrap());
    let (_dir, script) = probe_dir(
        "cmdline",
        // The pattern does not match its own command line.
        "if grep -qs -- '299[.]4711' /proc/[0-9]*/cmdline; then echo SAW-OTHER; else echo SAW-NOTHING; fi\nls /proc | grep -c '^[0-9]' | sed 's/^/PIDS=/'",
    );
    let host = up_with_probe("bbcmd", &script);
    let out = probe_output(&host);
    assert!(out.contains("SAW-NOTHING"), "{out}");
}

#[test]
fn root_batch_runs_without_privileges_under_seccomp() {
    let _g = serial();
    require_root(ROOT);
    let (_dir, script) = probe_dir(
        "privs",
        "grep -E '^(NoNewPrivs|CapEff|CapPrm|Seccomp):' /proc/self/status",
    );
    let host = up_with_probe("bbpriv", &script);
    let out = probe_output(&host);
    let field = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(str::to_owned)
    };
    assert_eq!(field("NoNewPrivs:").as_deref(), Some("1"), "{out}");
    assert_eq!(
        field("CapEff:").as_deref(),
        Some("0000000000000000"),
        "{out}"
    );
    assert_eq!(
        field("CapPrm:").as_deref(),
        Some("0000000000000000"),
        "{out}"
    );
    assert_eq!(
        field("Seccomp:").as_deref(),
        Some("2"),
        "filter mode: {out}"
    );
}

/// The batch's log was the one log left uncapped after the instances'
/// were capped (finding 2): batch output is rotated at `--log-size` too.
#[test]
fn root_a_batch_flooding_stdout_cannot_fill_the_disk() {
    let _g = serial();
    require_root(ROOT);
    let (_dir, script) = probe_dir(
        "flood",
        "yes 0123456789abcdef0123456789abcdef | head -c 20000000; echo",
    );
    let cmd = script.display().to_string();
    let host = Host::up_in_temp(
        "batchbox",
        "bbflood",
        &[
            "--instances",
            "1",
            "--range",
            RANGE,
            "--log-size",
            "4MiB",
            "--batch",
            &cmd,
        ],
    );
    let out = probe_output(&host);
    assert!(out.contains("PROBE-DONE"), "the flood ended");
    let logs = host.run_dir.join("logs");
    let mut total = 0;
    for k in ["batch-1.log", "batch-1.log.1"] {
        let len = std::fs::metadata(logs.join(k))
            .unwrap_or_else(|e| panic!("{k}: {e}"))
            .len();
        assert!(len <= 4 << 20, "{k} holds {len} bytes");
        total += len;
    }
    assert!(total <= 2 * (4 << 20), "batch logs hold {total} bytes");
}

/// Review of issue 40: a batch job outlived the host's root process that
/// started it. Its init gave root up once it forked the command, which
/// cleared the parent-death signal it was started with, and the root
/// process left its children running when its supervisor went away.
#[test]
fn root_a_batch_job_outlived_its_root_process() {
    use tickpack_root::service::protocol::Walls;
    use tickpack_root::service::{Root, WalledCommand};
    let _g = serial();
    require_root(ROOT);
    let run = std::env::temp_dir().join(format!("tp-bbk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&run);
    std::fs::create_dir(&run).unwrap();
    let run = std::fs::canonicalize(&run).unwrap();
    let _removed = Removed(run.clone());
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let (root, _) = Root::start(Path::new(support::exe()), "bbk", &run).unwrap();
    root.take_uid_block().unwrap();
    let walls = Walls::Batch { job: 1 };
    root.tenant_dir(walls, 1 << 20).unwrap();
    let cmd = WalledCommand {
        argv: &["/bin/sleep".to_string(), "60".to_string()],
        env: &[],
        cpus: None,
        cgroups: &[],
        oom_score_adj: 0,
        sched_idle: false,
    };
    let (init, _out) = root.spawn(walls, &cmd).unwrap();
    let init = u64::from(init);
    let sleeper = support::wait_until(Duration::from_secs(10), Duration::from_millis(20), || {
        support::children(init).first().copied()
    });
    drop(root);
    let gone = support::wait_until(Duration::from_secs(10), Duration::from_millis(50), || {
        (!support::alive(init) && sleeper.is_none_or(|s| !support::alive(s))).then_some(())
    });
    for pid in [Some(init), sleeper].into_iter().flatten() {
        if gone.is_none() && support::alive(pid) {
            // By the PID it started (and found running just now).
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
    // Its tmpfs, from a session of its own.
    let (again, _) = Root::start(Path::new(support::exe()), "bbk", &run).unwrap();
    again.remove_tenant_dirs().unwrap();
    drop(again);
    assert!(sleeper.is_some(), "the batch command never started");
    assert!(
        gone.is_some(),
        "the batch job (init {init}, command {sleeper:?}) outlived its root process"
    );
}
