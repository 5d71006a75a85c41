//! Tenants that cannot hurt each other: what one instance leaves, prints,
//! or holds never reaches the host or the next tenant. Each test is named
//! after the finding it guards against; all need root (namespaces, cgroups,
//! instance uids) and clean up through [`Host`]'s drop and [`Scratch`].

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::host::Host;
use support::{require_root, serial};

const ROOT: &str = "instances in their own namespaces and cgroups as their own uids";

/// Paths removed on drop, pass or fail.
struct Scratch(Vec<PathBuf>);

impl Scratch {
    /// A fresh directory `/var/tmp/tp-tenants-TAG-PID` anyone may read
    /// (instance uids run scripts from it).
    fn dir(&mut self, tag: &str) -> PathBuf {
        let d = PathBuf::from(format!("/var/tmp/tp-tenants-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        self.0.push(d.clone());
        d
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Waits (at most 20 s) until `ok` holds.
fn wait(what: &str, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < Duration::from_secs(20), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Finding 6: instance directories survived `host down` and were reused by
/// the next `host up` of the same name; the next tenant read the last
/// one's `$HOME/secret.txt`. They are removed at `down` now, without
/// following the tenant's links.
#[test]
fn root_next_tenant_cannot_read_the_last_ones_files() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let tools = scratch.dir("t6");
    // Something root's removal must not reach through a tenant's link.
    let canary = scratch.dir("t6-canary");
    std::fs::write(canary.join("keep"), "keep").unwrap();
    let leave = tools.join("leave.sh");
    script(
        &leave,
        &format!(
            "echo secret > \"$1/secret.txt\"; mkdir -p \"$1/sub\"; echo x > \"$1/sub/f\"; \
             ln -s {} \"$1/link\"; echo written; exec sleep 600\n",
            canary.display()
        ),
    );
    let read = tools.join("read.sh");
    script(
        &read,
        "if [ -e \"$1/secret.txt\" ]; then echo FOUND; else echo CLEAN; fi; exec sleep 600\n",
    );
    let run = scratch.dir("t6-run");
    std::fs::remove_dir(&run).unwrap();
    let args = |cmd: &Path| {
        vec![
            "--range".to_string(),
            "198.19.66.0/24".into(),
            "--health".into(),
            "none".into(),
            "--command".into(),
            format!("/bin/sh {} {{dir}}", cmd.display()),
        ]
    };
    let a = args(&leave);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let mut first = Host::up("tn6", &run, &a);
    first.wait_log(1, "written");
    assert!(first.instance_dir(1).join("secret.txt").exists());
    let out = first.down();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        !first.instance_dir(1).exists(),
        "the instance directory is gone after down"
    );
    assert!(
        canary.join("keep").exists(),
        "removal did not follow the tenant's link"
    );
    drop(first);
    let b = args(&read);
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let second = Host::up("tn6", &run, &b);
    let log = second.wait_log(1, "CLEAN\n");
    assert!(!log.contains("FOUND"), "{log}");
}

/// Finding 2: an instance writing to stdout put 4.6 GB into its log in 8 s,
/// `--disk` notwithstanding. The log is capped and rotated now: here 20 MB
/// of output leave at most two files of `--log-size` each.
#[test]
fn root_an_instance_flooding_stdout_cannot_fill_the_disk() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let tools = scratch.dir("t2");
    let flood = tools.join("flood.sh");
    script(
        &flood,
        "yes 0123456789abcdef0123456789abcdef | head -c 20000000; echo; echo flooded; exec sleep 600\n",
    );
    let run = scratch.dir("t2-run");
    std::fs::remove_dir(&run).unwrap();
    let cmd = format!("/bin/sh {}", flood.display());
    let host = Host::up(
        "tn2",
        &run,
        &[
            "--range",
            "198.19.67.0/24",
            "--health",
            "none",
            "--log-size",
            "4MiB",
            "--command",
            &cmd,
        ],
    );
    host.wait_log(1, "flooded");
    let logs = run.join("logs");
    let mut total = 0;
    for e in std::fs::read_dir(&logs).unwrap().flatten() {
        let len = e.metadata().unwrap().len();
        assert!(len <= 4 << 20, "{:?} holds {len} bytes", e.path());
        total += len;
    }
    assert!(total <= 2 * (4 << 20), "logs hold {total} bytes");
    assert!(
        logs.join("1.log.1").exists(),
        "the older output was rotated"
    );
}

/// The memory limit file of process `pid`'s cgroup (cgroup v2), if any.
fn memory_max(pid: u64) -> Option<String> {
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = cg.lines().find_map(|l| l.strip_prefix("0::"))?;
    std::fs::read_to_string(format!("/sys/fs/cgroup{path}/memory.max"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// A host of one `sleep` instance, named `name`, in a fresh run dir.
fn sleeper(scratch: &mut Scratch, name: &str, range: &str) -> Host {
    let run = scratch.dir(&format!("{name}-run"));
    std::fs::remove_dir(&run).unwrap();
    Host::up(
        name,
        &run,
        &[
            "--range",
            range,
            "--health",
            "none",
            "--command",
            "/bin/sleep 600",
        ],
    )
}

/// Finding 5: without `--memory` an instance could take all memory (its
/// cgroup unlimited). It gets a default limit of 1 GiB now.
#[test]
fn root_an_instance_without_memory_flag_has_a_memory_limit() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let host = sleeper(&mut scratch, "tn5", "198.19.68.0/24");
    let st = host.status().expect("status");
    let i = &st["instances"][0];
    assert_eq!(i["memory_limit_bytes"], 1u64 << 30, "{st:#}");
    let pid = i["pid"].as_u64().expect("pid");
    if let Some(max) = memory_max(pid) {
        assert_eq!(max, (1u64 << 30).to_string(), "the cgroup's memory.max");
    }
}

/// Finding 5: the supervisor's `oom_score_adj` was 0, as every instance's:
/// under pressure the OOM killer could pick the keeper of all. It is
/// negative now, and the instances' is back at 0.
#[test]
fn root_supervisor_oom_score_adj_is_negative() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let host = sleeper(&mut scratch, "tn7", "198.19.69.0/24");
    let st = host.status().expect("status");
    let adj = |pid: u64| -> i32 {
        std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let sup = st["supervisor_pid"].as_u64().expect("supervisor pid");
    let pid = st["instances"][0]["pid"].as_u64().expect("pid");
    assert!(adj(pid) >= 0, "instance oom_score_adj {}", adj(pid));
    assert!(adj(sup) < adj(pid), "the supervisor is below its instances");
    // Lowering needs CAP_SYS_RESOURCE (bit 24), which some containers drop.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    if cap_eff & (1 << 24) != 0 {
        assert!(adj(sup) < 0, "supervisor oom_score_adj {}", adj(sup));
    } else {
        eprintln!("no CAP_SYS_RESOURCE here: checked the order only");
    }
}

/// The uid the server of a host's instance 1 runs as (the child of its
/// init), once it has one.
fn server_uid(host: &Host) -> u32 {
    let st = host.status().expect("status");
    let init = st["instances"][0]["pid"].as_u64().expect("pid");
    let mut uid = None;
    wait("the server under its init", || {
        uid = support::children(init).first().and_then(|c| {
            let s = std::fs::read_to_string(format!("/proc/{c}/status")).ok()?;
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        });
        uid.is_some()
    });
    uid.unwrap()
}

/// Finding 4: instance N was uid 200000+N on every host, so one host's
/// instance holding its 512 processes (RLIMIT_NPROC, counted per uid) made
/// another host's instance fail to fork. Each host takes its own block.
#[test]
fn root_two_hosts_never_share_instance_uids() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let a = sleeper(&mut scratch, "tn4a", "198.19.71.0/24");
    let b = sleeper(&mut scratch, "tn4b", "198.19.72.0/24");
    let (ua, ub) = (server_uid(&a), server_uid(&b));
    assert_ne!(ua, ub, "instance 1 of two hosts");
    assert!(ua >= 200_001 && ub >= 200_001, "unprivileged: {ua} {ub}");
}

/// Finding 5: without `--disk` an instance's files lived on the host's
/// root file system, so one tenant could fill it. Every instance's
/// directory is a tmpfs of its own now (256 MiB unless `--disk` says
/// otherwise): writing past it fails inside the instance, the host's
/// disk never sees the bytes, and the mount is gone at `down`.
#[test]
fn root_an_instance_without_disk_flag_cannot_fill_the_hosts_disk() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let tools = scratch.dir("t5d");
    let fill = tools.join("fill.sh");
    // 300 MiB into a 256 MiB file system: `head` fails with ENOSPC.
    script(
        &fill,
        "stat -f -c 'FS=%T SIZE=%b*%S' \"$1\"; \
         if head -c 314572800 /dev/zero > \"$1/big\" 2>/dev/null; then echo WROTE-ALL; else echo FULL; fi; \
         exec sleep 600\n",
    );
    let run = scratch.dir("t5d-run");
    std::fs::remove_dir(&run).unwrap();
    let cmd = format!("/bin/sh {} {{dir}}", fill.display());
    let mut host = Host::up(
        "tn5d",
        &run,
        &[
            "--range",
            "198.19.70.0/24",
            "--health",
            "none",
            "--memory",
            "1GiB",
            "--command",
            &cmd,
        ],
    );
    let log = host.wait_log(1, "FULL");
    assert!(!log.contains("WROTE-ALL"), "{log}");
    assert!(log.contains("FS=tmpfs"), "{log}");
    let size = log
        .lines()
        .find_map(|l| l.split("SIZE=").nth(1))
        .and_then(|e| e.split_once('*'))
        .map(|(b, s)| b.trim().parse::<u64>().unwrap() * s.trim().parse::<u64>().unwrap())
        .expect("the size line");
    assert_eq!(size, 256 << 20, "{log}");
    let dir = host.instance_dir(1);
    assert!(mounted(&dir), "the instance's tmpfs is seen by the host");
    let out = host.down();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!mounted(&dir), "unmounted at down");
    assert!(!dir.exists(), "removed at down");
}

/// Whether a file system is mounted at `dir` in this mount namespace.
fn mounted(dir: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == dir.to_str())
}

/// The instance's tmpfs (finding 5) outlives a `kill -9` of its supervisor
/// only until the next `host down`, which unmounts it and removes the
/// directory.
#[test]
fn root_an_instance_tmpfs_is_unmounted_after_kill_9_of_the_host() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let mut host = sleeper(&mut scratch, "tn5k", "198.19.71.0/24");
    let dir = host.instance_dir(1);
    assert!(mounted(&dir), "the instance's tmpfs");
    host.up.kill().unwrap(); // SIGKILL: no clean-up happens
    host.up.wait().unwrap();
    assert!(mounted(&dir), "left behind by the kill");
    let out = support::host::host_down("tn5k", &host.run_dir);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!mounted(&dir), "unmounted by host down");
    assert!(!dir.exists(), "removed by host down");
}

/// Issue 38, item 3: after a `kill -9` of host A's supervisor its instances
/// kept running as A's uids, and the next host (B, another name and run
/// dir) was handed A's uid block, since its record named a supervisor that
/// was gone: B's instance ran as A's uid, under one process limit, and
/// could signal and ptrace A's. A block is handed out only while no
/// process runs as one of its uids; B takes another and says so. A's
/// address range stays A's too: B is refused it while A's route is there.
#[test]
fn root_a_uid_block_was_handed_out_while_its_last_owners_instances_still_ran() {
    use tickpack_host::supervisor::{BLOCKS_BASE, BLOCK_SIZE};
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let block = |uid: u32| uid.checked_sub(BLOCKS_BASE).map(|u| u / BLOCK_SIZE);
    let fresh_run_dir = |scratch: &mut Scratch, tag: &str| {
        let run = scratch.dir(tag);
        std::fs::remove_dir(&run).unwrap();
        run
    };
    // A: one reference server (the default command), killed with -9.
    let run_a = fresh_run_dir(&mut scratch, "tnua-run");
    let mut a = Host::up(
        "tnua",
        &run_a,
        &["--instances", "1", "--range", "198.19.173.0/24"],
    );
    let ua = server_uid(&a);
    let init = a.status().expect("status")["instances"][0]["pid"]
        .as_u64()
        .expect("pid");
    let servers = support::children(init);
    for &s in &servers {
        // Killed by PID on drop, pass or fail; `host down` of A then
        // removes the rest.
        a.track_server(s as u32);
    }
    a.up.kill().unwrap(); // SIGKILL of the supervisor we started
    a.up.wait().unwrap();
    let a_runs = || servers.iter().all(|&s| support::alive(s));
    assert!(a_runs(), "A's server outlives its supervisor");

    // B on A's range: refused while A's instances hold it.
    let tools = scratch.dir("tnub-tools");
    let run_b = fresh_run_dir(&mut scratch, "tnub-run");
    let mut refused = Host::spawn(
        "tnub",
        &run_b,
        &["--instances", "1", "--range", "198.19.173.0/24"],
        std::process::Stdio::piped(),
    );
    let exit = support::wait_until(Duration::from_secs(20), Duration::from_millis(50), || {
        refused.up.try_wait().unwrap()
    });
    let mut told = String::new();
    // Read only once it exited (its stderr is then closed).
    if let (Some(_), Some(mut e)) = (exit, refused.up.stderr.take()) {
        use std::io::Read;
        let _ = e.read_to_string(&mut told);
    }
    assert!(
        exit.is_some_and(|e| !e.success()),
        "B is refused A's range ({exit:?}): {told}"
    );
    assert!(
        told.contains("198.19.173.0/24"),
        "B is told which range: {told}"
    );
    drop(refused);
    assert!(a_runs(), "B's refusal left A's server alone");

    // B on its own range.
    let said = tools.join("b.stderr");
    let b = Host::spawn(
        "tnub",
        &run_b,
        &["--instances", "1", "--range", "198.19.174.0/24"],
        std::fs::File::create(&said).unwrap().into(),
    )
    .running();
    let ub = server_uid(&b);
    assert!(a_runs(), "A's server still ran while B started");
    assert_ne!(
        block(ua),
        block(ub),
        "B's instance runs as uid {ub}, in the block of A's still-running instance (uid {ua})"
    );
    // And says why it did not take that block.
    wait("B says it skipped A's block", || {
        let text = std::fs::read_to_string(&said).unwrap_or_default();
        text.lines()
            .any(|l| l.contains("uid block") && l.contains("tnua"))
    });
}

/// A cgroup `tp-batch/NAME` made as an operator would for `--batch-cgroup`
/// (in every CPU hierarchy of cgroup v1, or in v2), removed on drop.
struct BatchCgroup(Vec<PathBuf>);

impl BatchCgroup {
    fn new(name: &str) -> BatchCgroup {
        let root = Path::new("/sys/fs/cgroup");
        let hierarchies: Vec<PathBuf> = if root.join("cgroup.controllers").exists() {
            vec![root.to_path_buf()]
        } else {
            ["cpu", "cpuacct", "cpuset"]
                .iter()
                .map(|c| root.join(c))
                .filter(|d| d.is_dir())
                .collect()
        };
        let mut made = BatchCgroup(vec![]);
        for h in hierarchies {
            let mut parent = h.clone();
            for part in ["tp-batch", name] {
                let d = parent.join(part);
                if !d.exists() {
                    std::fs::create_dir(&d).unwrap();
                    made.0.push(d.clone());
                }
                // A v1 cpuset takes no task before it has CPUs and nodes.
                for f in ["cpuset.cpus", "cpuset.mems"] {
                    if let Ok(v) = std::fs::read_to_string(parent.join(f)) {
                        let _ = std::fs::write(d.join(f), v.trim());
                    }
                }
                parent = d;
            }
        }
        made
    }
}

impl Drop for BatchCgroup {
    fn drop(&mut self) {
        for d in self.0.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Issue 38, item 3 (cgroups): a host adopted (`--batch-cgroup`) the
/// cgroup in which another host's batch work ran as that host's uid, and
/// held it to its own guard's allowance. It is refused now, with the
/// process and whose uid it runs as; the other host's work runs on.
#[test]
fn root_a_host_adopted_a_batch_cgroup_in_which_another_hosts_work_ran() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let cg = BatchCgroup::new("tnuc");
    let run_a = scratch.dir("tnuc-run");
    std::fs::remove_dir(&run_a).unwrap();
    let batch = [
        "--instances",
        "1",
        "--health",
        "none",
        "--command",
        "/bin/sleep 600",
        "--batch",
        "/bin/sleep 600",
        "--batch-cgroup",
        "tp-batch/tnuc",
    ];
    let mut a_args = batch.to_vec();
    a_args.extend(["--range", "198.19.175.0/24"]);
    let mut a = Host::up("tnuc", &run_a, &a_args);
    let batch_runs = |s: &serde_json::Value| {
        s["guard"]["batch"]
            .as_array()
            .is_some_and(|v| v.iter().any(|b| b["state"] == "running"))
    };
    wait("A's batch command runs", || {
        a.status().is_some_and(|s| batch_runs(&s))
    });
    let procs = |cg: &BatchCgroup| -> Vec<u32> {
        let procs =
            cg.0.iter()
                .find(|d| d.ends_with("tnuc"))
                .unwrap()
                .join("cgroup.procs");
        std::fs::read_to_string(procs)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    let before = procs(&cg);
    assert!(!before.is_empty(), "A's batch work is in the cgroup");

    let run_b = scratch.dir("tnud-run");
    std::fs::remove_dir(&run_b).unwrap();
    let mut b_args = batch.to_vec();
    b_args.extend(["--range", "198.19.176.0/24"]);
    let mut b = Host::spawn("tnud", &run_b, &b_args, std::process::Stdio::piped());
    let exit = support::wait_until(Duration::from_secs(20), Duration::from_millis(50), || {
        b.up.try_wait().unwrap()
    });
    let mut told = String::new();
    if let (Some(_), Some(mut e)) = (exit, b.up.stderr.take()) {
        use std::io::Read;
        let _ = e.read_to_string(&mut told);
    }
    assert!(
        exit.is_some_and(|e| !e.success()),
        "B is refused the cgroup A's work runs in ({exit:?}): {told}"
    );
    assert!(
        told.contains("tp-batch/tnuc") && told.contains("another host's"),
        "and told why: {told}"
    );
    let st = a.status().expect("A answers");
    assert!(batch_runs(&st), "A's batch work runs on: {st:#}");
    assert_eq!(procs(&cg), before, "A's work is where it was");
    drop(b);
    let out = a.down();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}
