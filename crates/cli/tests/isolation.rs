//! What an isolated (netns backend) instance can and cannot do, checked
//! from inside: each test starts a real host whose instances run a probe
//! shell script (`host up --command`), reads the answers the probe writes
//! into its working directory, and checks them. These back the table
//! "What an instance can and cannot do" in docs/design.md.
//!
//! Root only (CI runs as root). Hosts are named `i<n>` (so everything they
//! create is `tpi<n>...`) on 198.19.64.0/22; a guard takes every host down,
//! removes the files the test made and checks nothing named after the host
//! is left over, also when an assertion fails.

mod support;

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::host::Host;
use support::{children, require_root, serial};

/// What these tests need root for.
const ROOT: &str = "namespaces, cgroups, mounts";

/// Files and directories a test made; removed on drop.
struct Scratch(Vec<PathBuf>);

impl Scratch {
    /// A fresh directory `BASE/tpi-isolation-NAME-PID`.
    fn dir(&mut self, base: &str, name: &str) -> PathBuf {
        let d = Path::new(base).join(format!("tpi-isolation-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        self.0.push(d.clone());
        d
    }

    /// A fresh `/var/tmp/tpi-isolation-TEST-tools-PID` the instances may
    /// read and run (0755).
    fn tools(&mut self, test: &str) -> PathBuf {
        let d = self.dir("/var/tmp", &format!("{test}-tools"));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `host up` of netns instances on veth links with `args`, not waiting;
/// taken down (and checked for leftovers) on drop.
fn host_spawn(name: &str, dir: &Path, args: &[&str]) -> Host {
    let args: Vec<&str> = ["--backend", "netns", "--net", "veth"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    Host::spawn(name, dir, &args, Stdio::null())
}

/// [`host_spawn`], waiting until every instance is running.
fn host_up(name: &str, dir: &Path, args: &[&str]) -> Host {
    host_spawn(name, dir, args).running()
}

/// Waits for the probe of instance `id` to print its last answer (`end=1`)
/// to its log, and returns the answers.
fn answers(host: &Host, id: u32) -> HashMap<String, String> {
    let t0 = Instant::now();
    let mut log = host.log(id);
    while !log.lines().any(|l| l == "end=1") {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "instance {id} printed no answers; its log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
        log = host.log(id);
    }
    log.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

fn write_script(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The probe: prints `key=value` lines to its log, `end=1` last, then
/// sleeps. Arguments: {dir} {id} RUN_DIR SETUID_ID.
const PROBE: &str = r#"#!/bin/sh
dir="$1"; id="$2"; run="$3"; suid="$4"
ans() { echo "$1=$2"; }
yn() { if "$@" >/dev/null 2>&1; then echo yes; else echo no; fi; }
ans write_root "$(yn touch /tpi-probe)"
ans write_etc "$(yn touch /etc/tpi-probe)"
ans write_dir "$(yn touch "$dir/w")"
ans write_tmp "$(yn sh -c "echo $id > /tmp/tpi-probe-$id")"
ans write_shm "$(yn sh -c "echo $id > /dev/shm/tpi-probe-$id")"
sleep 1
ans shm_seen "$(ls /dev/shm | grep tpi-probe | tr '\n' ' ')"
ans tmp_seen "$(ls /tmp | grep tpi-probe | tr '\n' ' ')"
ans shm_opts "$(awk '$2=="/dev/shm"{print $4}' /proc/mounts | tail -n 1)"
ans tmp_opts "$(awk '$2=="/tmp"{print $4}' /proc/mounts | tail -n 1)"
ans root_opts "$(awk '$2=="/"{print $4}' /proc/mounts | tail -n 1)"
ans nnp "$(awk '/^NoNewPrivs:/{print $2}' /proc/self/status)"
ans seccomp "$(awk '/^Seccomp:/{print $2}' /proc/self/status)"
ans capbnd "$(awk '/^CapBnd:/{print $2}' /proc/self/status)"
ans capeff "$(awk '/^CapEff:/{print $2}' /proc/self/status)"
ans uid "$(id -u)"
ans nproc "$(awk '/^Max processes/{print $3 "/" $4}' /proc/self/limits)"
ans suid_euid "$("$suid" -u 2>&1)"
ans read_state "$(yn cat "$run/state.json")"
ans run_dir_list "$(ls -A "$run" 2>&1 | tr '\n' ' ')"
ans read_other_dir "$(yn ls "$run/instances/$((3 - id))")"
mkdir -p "$dir/m"
ans mount "$(yn mount -t tmpfs none "$dir/m")"
ans unshare_user_net "$(yn unshare -U -r -n true)"
ans unshare_net "$(yn unshare -n true)"
ans fill_disk "$(yn dd if=/dev/zero of="$dir/big" bs=1M count=24)"
rm -f "$dir/big"
ans end 1
exec sleep 600
"#;

/// A host of two probes, run dir outside /tmp (which the private /tmp would
/// hide anyway), with a setuid-root copy of `id` on the root file system.
#[test]
fn an_instance_gets_nothing_the_host_did_not_give_it() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let tools = scratch.tools("i1");
    let probe = tools.join("probe.sh");
    write_script(&probe, PROBE);
    let suid = tools.join("id");
    std::fs::copy("/usr/bin/id", &suid).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let run = scratch.dir("/var/tmp", "i1-run");
    // A marker on the host's own /dev/shm must stay invisible.
    let host_shm = PathBuf::from(format!("/dev/shm/tpi-probe-host-{}", std::process::id()));
    std::fs::write(&host_shm, "host").unwrap();
    scratch.0.push(host_shm.clone());
    let command = format!(
        "/bin/sh {} {{dir}} {{id}} {} {}",
        probe.display(),
        run.display(),
        suid.display()
    );
    let host = host_up(
        "i1",
        &run,
        &[
            "--instances",
            "2",
            "--range",
            "198.19.64.0/24",
            "--health",
            "none",
            "--disk",
            "16MiB",
            "--command",
            &command,
        ],
    );
    let a = answers(&host, 1);
    let b = answers(&host, 2);
    let show = format!("instance 1: {a:#?}");
    let get = |k: &str| a.get(k).map(String::as_str).unwrap_or("(missing)");

    assert_eq!(
        get("write_dir"),
        "yes",
        "its working directory is writable: {show}"
    );
    assert_eq!(get("write_root"), "no", "/ is read-only: {show}");
    assert_eq!(get("write_etc"), "no", "/etc is read-only: {show}");
    for opt in ["ro", "nosuid", "nodev"] {
        assert!(
            get("root_opts").split(',').any(|o| o == opt),
            "/ is mounted {opt}: {show}"
        );
    }
    assert_eq!(get("write_tmp"), "yes", "/tmp is writable: {show}");
    assert_eq!(get("write_shm"), "yes", "/dev/shm is writable: {show}");
    assert_eq!(get("tmp_seen"), "tpi-probe-1", "/tmp is its own: {show}");
    assert_eq!(
        get("shm_seen"),
        "tpi-probe-1",
        "/dev/shm is its own (not the host's, not instance 2's): {show}"
    );
    assert_eq!(b.get("shm_seen").map(String::as_str), Some("tpi-probe-2"));
    assert!(
        !Path::new("/dev/shm/tpi-probe-1").exists(),
        "the host's /dev/shm got the instance's file"
    );
    for k in ["shm_opts", "tmp_opts"] {
        let o: Vec<&str> = get(k).split(',').collect();
        assert!(
            o.contains(&"nosuid")
                && o.contains(&"nodev")
                && o.iter().any(|o| o.starts_with("size=")),
            "{k}: a size-limited nosuid,nodev tmpfs: {show}"
        );
    }
    // Its host's uid block (uid_block.rs): above the process backend's 200000.
    let uid: u32 = get("uid").parse().unwrap_or(0);
    assert!(uid > 200_000, "runs as its own uid: {show}");
    assert_eq!(
        get("nproc"),
        "512/512",
        "a per-instance process limit it cannot raise (no fork bomb takes every PID): {show}"
    );
    assert_eq!(get("nnp"), "1", "NoNewPrivs: {show}");
    assert_eq!(get("seccomp"), "2", "a seccomp filter: {show}");
    assert_eq!(
        get("capbnd"),
        "0000000000000000",
        "empty bounding set: {show}"
    );
    assert_eq!(get("capeff"), "0000000000000000", "no capabilities: {show}");
    assert_eq!(
        get("suid_euid"),
        uid.to_string(),
        "a setuid-root binary gives no root: {show}"
    );
    assert_eq!(
        get("read_state"),
        "no",
        "state.json is out of reach: {show}"
    );
    assert_eq!(
        get("read_other_dir"),
        "no",
        "another instance's directory is out of reach: {show}"
    );
    assert_eq!(
        get("run_dir_list"),
        "instances",
        "the run dir shows nothing but the instance's own directory: {show}"
    );
    assert_eq!(get("mount"), "no", "mount is refused: {show}");
    assert_eq!(
        get("unshare_user_net"),
        "no",
        "no new namespaces, not even through a user namespace: {show}"
    );
    assert_eq!(get("unshare_net"), "no", "no new network namespace: {show}");
    assert_eq!(
        get("fill_disk"),
        "no",
        "24 MiB do not fit in a 16 MiB working directory: {show}"
    );
}

/// Regression: the supervisor (root) opened `output.log` in the instance's
/// own directory following links; an instance that replaced it with a link
/// got its output written into any file on the next restart.
#[test]
fn an_instance_cannot_make_the_supervisor_write_its_log_into_a_root_file() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let tools = scratch.tools("i2");
    let target = tools.join("root-only");
    std::fs::write(&target, "secret\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let script = tools.join("attack.sh");
    // Every place a log of this instance could be: its own directory (where
    // it was) and the run dir's logs (where it is now, out of reach).
    write_script(
        &script,
        r#"#!/bin/sh
dir="$1"; target="$2"; run="$3"
for l in "$dir/output.log" "$run/logs/1.log" "$dir/../../logs/1.log"; do
    rm -f "$l" 2>/dev/null; ln -s "$target" "$l" 2>/dev/null
done
echo PWNED-BY-THE-INSTANCE
touch "$dir/ran"
sleep 0.3
exit 1
"#,
    );
    let run = scratch.dir("/var/tmp", "i2-run");
    let command = format!(
        "/bin/sh {} {{dir}} {} {}",
        script.display(),
        target.display(),
        run.display()
    );
    let mut host = host_spawn(
        "i2",
        &run,
        &[
            "--instances",
            "1",
            "--range",
            "198.19.65.0/24",
            "--health",
            "none",
            "--command",
            &command,
        ],
    );
    // Restarted at least twice: the links were in place for a restart.
    host.wait_for(
        |s| s["instances"][0]["restarts"].as_u64().unwrap_or(0) >= 2,
        "two restarts",
    );
    assert!(
        host.instance_dir(1).join("ran").exists(),
        "the attack script ran"
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "secret\n",
        "the root-only file is unchanged"
    );
    let meta = std::fs::metadata(&target).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
    let log = host.log(1);
    assert!(
        log.contains("PWNED-BY-THE-INSTANCE"),
        "the output went to the instance's log: {log:?}"
    );
}

/// Regression: with a run dir under /tmp, `{dir}` named a path the
/// instance's private /tmp hides.
#[test]
fn dir_placeholder_is_valid_inside_an_instance_with_a_run_dir_under_tmp() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let tools = scratch.tools("i3");
    let script = tools.join("hello.sh");
    write_script(
        &script,
        "#!/bin/sh\necho \"hello from $(id -u)\" > \"$1/hello\"\nexec sleep 600\n",
    );
    let run = scratch.dir("/tmp", "i3-run");
    let command = format!("/bin/sh {} {{dir}}", script.display());
    let host = host_up(
        "i3",
        &run,
        &[
            "--instances",
            "1",
            "--range",
            "198.19.66.0/24",
            "--health",
            "none",
            "--command",
            &command,
        ],
    );
    let hello = host.instance_dir(1).join("hello");
    let t0 = Instant::now();
    while !hello.exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = host.log(1);
    let said = std::fs::read_to_string(&hello).unwrap_or_default();
    let uid: u32 = said
        .strip_prefix("hello from ")
        .and_then(|u| u.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        uid > 200_000,
        "the instance wrote {{dir}}/hello as its own uid ({said:?}); its log: {log}"
    );
}

/// Asks `addr` for stats until a server that started after `since` answers.
fn fresh_answer(addr: SocketAddr, since: Instant, deadline: Instant) -> Option<u64> {
    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let req = tickpack_wire::Packet::StatsRequest {
        nonce: 1,
        proof: None,
    }
    .to_vec();
    let mut buf = [0u8; 512];
    while Instant::now() < deadline {
        let _ = s.send_to(&req, addr);
        if let Ok((n, from)) = s.recv_from(&mut buf) {
            if from != addr {
                continue;
            }
            if let Ok(tickpack_wire::Packet::Stats(st)) = tickpack_wire::Packet::decode(&buf[..n]) {
                if Duration::from_millis(st.uptime_ms) < since.elapsed() {
                    return Some(st.uptime_ms);
                }
            }
        }
    }
    None
}

/// Regression: kill -9 of the PID `host status` reports (the init) left the
/// real server running without its parent (its death signal was cleared by
/// the uid change), holding the port, so every restart failed.
#[test]
fn kill_9_of_the_init_kills_the_whole_instance_and_it_answers_again_within_a_second() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let run = scratch.dir("/var/tmp", "i4-run");
    let mut host = host_up(
        "i4",
        &run,
        &["--instances", "1", "--range", "198.19.67.0/24"],
    );
    let st = host.status().unwrap();
    let init = st["instances"][0]["pid"].as_u64().unwrap();
    let addr: SocketAddr = st["instances"][0]["address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let server = children(init);
    assert_eq!(server.len(), 1, "the init runs one server: {server:?}");
    let t0 = Instant::now();
    // SAFETY: kill(2) of the instance's init, started by our host.
    assert_eq!(unsafe { libc::kill(init as i32, libc::SIGKILL) }, 0);
    let fresh = fresh_answer(addr, t0, t0 + Duration::from_secs(1));
    let took = t0.elapsed();
    let status = host.status();
    assert!(
        fresh.is_some(),
        "no new server answered within 1 s of kill -9 of the init ({took:?}); status: {status:#?}"
    );
    let old = server[0];
    let state = std::fs::read_to_string(format!("/proc/{old}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.contains(") Z "),
        "the old server {old} still runs: {state}"
    );
    let st = host.wait_for(
        |s| s["instances"][0]["state"] == "running",
        "the instance running again",
    );
    assert_eq!(st["instances"][0]["restarts"], 1, "one restart: {st:#}");
}

/// A run dir that someone else owns (or a link to one) could be read or
/// swapped under root's feet: `host up` and `host down` refuse it.
#[test]
fn a_run_dir_owned_by_another_user_is_refused() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let run = scratch.dir("/var/tmp", "i5-run");
    std::os::unix::fs::chown(&run, Some(4242), Some(4242)).unwrap();
    let link = scratch.dir("/var/tmp", "i5-link");
    std::fs::remove_dir(&link).unwrap();
    let target = scratch.dir("/var/tmp", "i5-target");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for (dir, says) in [(&run, "belongs to uid 4242"), (&link, "not a directory")] {
        // The guard takes the host down should it have come up after all.
        let mut host = Host::spawn(
            "i5",
            dir,
            &[
                "--backend",
                "process",
                "--instances",
                "1",
                "--port",
                "27560",
            ],
            Stdio::piped(),
        );
        let t0 = Instant::now();
        let code = loop {
            if let Some(st) = host.up.try_wait().unwrap() {
                break st.code();
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "host up accepted {} and runs",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(host.up.stderr.as_mut().unwrap(), &mut err).unwrap();
        // A bad --run-dir, refused before anything starts.
        assert_eq!(code, Some(2), "{}: {err}", dir.display());
        assert!(err.contains(says), "{}: {err}", dir.display());
    }
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "nothing was written through the link"
    );
}

/// Regression: the instance init said only "exec failed", without the
/// program or the reason.
#[test]
fn exec_failure_names_the_program_and_the_errno() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let run = scratch.dir("/var/tmp", "i6-run");
    let host = host_spawn(
        "i6",
        &run,
        &[
            "--instances",
            "1",
            "--range",
            "198.19.68.0/24",
            "--health",
            "none",
            "--command",
            "/nonexistent/tpi-game-server --port {port}",
        ],
    );
    let want = "cannot exec /nonexistent/tpi-game-server: No such file or directory";
    let t0 = Instant::now();
    while !host.log(1).contains(want) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = host.log(1);
    assert!(log.contains(want), "the log says why: {log:?}");
}
