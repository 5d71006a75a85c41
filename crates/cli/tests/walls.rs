//! The holes of issue 30, each closed and guarded by a test named after
//! it: a definition's `[env]` reaching the root init, a stranger's stats
//! flood getting a healthy server killed, `host down` with another host's
//! name tearing that host down, and SysV IPC shared with the host. All
//! but the parse-time refusal need root (namespaces, cgroups, instance
//! uids); every host is taken down by [`Host`]'s drop, pass or fail, and
//! every flood is bounded in count and time and sent only to an instance
//! in a namespace its test made.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::host::{host_down, instance, one_netns_instance, temp_run_dir, Host};
use support::{children, require_root, run, serial, text, Leftovers};

const ROOT: &str = "instances in their own namespaces and cgroups as their own uids";

/// A scratch file removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A definition file whose server runs `script` (written into the
/// instance's directory) with `extra` TOML after it.
fn script_game(tag: &str, script: &str, extra: &str) -> Scratch {
    let p = std::env::temp_dir().join(format!("tp-walls-{tag}-{}.toml", std::process::id()));
    std::fs::write(
        &p,
        format!(
            "name = \"{tag}\"\ndescription = \"a test server\"\ncommand = \"/bin/sh {{dir}}/run.sh {{dir}}\"\nport = 27500\nslots = 4\n[tick]\nhz = 10\n[[file]]\npath = \"run.sh\"\ncontents = \"\"\"\n{script}\"\"\"\n{extra}"
        ),
    )
    .unwrap();
    Scratch(p)
}

fn netns_args<'a>(def: &'a Path, range: &'a str) -> Vec<&'a str> {
    one_netns_instance(range, &["--game", def.to_str().unwrap()])
}

/// The processes below `pid` (children, grandchildren, ...).
fn descendants(pid: u64) -> Vec<u64> {
    let mut out = vec![];
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for c in children(p) {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

fn cmdline(pid: u64) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .replace('\0', " ")
}

/// Finding 1: `[env] LD_PRELOAD` in a definition loaded a library into the
/// instance's init, which runs as root with every capability; its
/// constructor wrote to the host's disk. Loader variables are refused when
/// the file is read, before anything is created.
#[test]
fn a_definitions_ld_preload_was_loaded_into_the_root_init() {
    let def = script_game(
        "wld",
        "exec sleep 600\n",
        "[env]\nLD_PRELOAD = \"/tmp/evil.so\"\n",
    );
    for args in [
        vec!["games", "check", def.0.to_str().unwrap()],
        vec![
            "host",
            "up",
            "--name",
            "wld",
            "--run-dir",
            "/nonexistent/tp-walls-never",
            "--game",
            def.0.to_str().unwrap(),
        ],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let t = text(&out);
        assert!(
            t.contains("LD_PRELOAD") && t.contains("dynamic loader"),
            "{t}"
        );
    }
    assert!(!Path::new("/nonexistent/tp-walls-never").exists());
}

/// Finding 1: a definition's variables (and root's own PATH) reached the
/// init, which runs as root before the walls go up. Now the init's
/// environment is empty; the variables reach the server alone, with a
/// fixed PATH.
#[test]
fn root_a_definitions_env_reached_the_root_init() {
    let _g = serial();
    require_root(ROOT);
    let def = script_game(
        "wenv",
        "echo \"mark=$TP_WALLS_MARK path=$PATH root=${TP_ROOT_ONLY:-none}\"\necho started\nexec sleep 600\n",
        "[env]\nTP_WALLS_MARK = \"inside-{id}\"\n",
    );
    let dir = temp_run_dir("walls", "wenv");
    let root_path = format!(
        "/tp-walls-root-path:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    let host = Host::spawn_with_env(
        "wenv",
        &dir,
        &netns_args(&def.0, "198.19.161.0/24"),
        Stdio::null(),
        &[("PATH", &root_path), ("TP_ROOT_ONLY", "leaked")],
    )
    .remove_on_drop(&dir);
    let log = host.wait_log(1, "started");
    assert!(log.contains("mark=inside-1 "), "{log}");
    assert!(!log.contains("tp-walls-root-path"), "root's PATH: {log}");
    assert!(log.contains("root=none"), "root's variables: {log}");
    assert!(
        log.contains("path=/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games "),
        "{log}"
    );
    let inits: Vec<u64> = descendants(u64::from(host.up.id()))
        .into_iter()
        .filter(|&p| cmdline(p).contains("__instance-init"))
        .collect();
    assert!(!inits.is_empty(), "the instance's init was found");
    for pid in inits {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let env = String::from_utf8_lossy(&env);
        for leak in [
            "TP_WALLS_MARK",
            "TP_ROOT_ONLY",
            "tp-walls-root-path",
            "TICKPACK_HEALTH_KEY",
        ] {
            assert!(
                !env.contains(leak),
                "the init (pid {pid}) has {leak}: {env:?}"
            );
        }
    }
}

/// Finding 2: a peer on the host side sending about 20 000 stats requests
/// a second from 1 000 ports of one address drained the budget the
/// reference server shares among strangers; the host's checks went
/// unanswered and it killed the healthy server, twice in 14 s. The host's
/// checks carry a key now and are answered from a budget of their own.
#[test]
fn root_a_stats_flood_from_many_ports_got_a_healthy_server_killed() {
    let _g = serial();
    require_root(ROOT);
    let dir = temp_run_dir("walls", "wfl");
    let mut host = Host::spawn(
        "wfl",
        &dir,
        &one_netns_instance("198.19.162.0/24", &[]),
        Stdio::null(),
    )
    .remove_on_drop(&dir)
    .running();
    let st = host.status().unwrap();
    let target: SocketAddr = instance(&st, 1)["address"]
        .as_str()
        .expect("address")
        .parse()
        .unwrap();
    assert!(
        target.ip().to_string().starts_with("198.19.162."),
        "{target}"
    );
    // 1 000 source ports of the host's own address, 20 000 requests a
    // second for 14 s: at most 280 000 datagrams, to our own instance.
    let socks: Vec<UdpSocket> = (0..1000)
        .map(|_| UdpSocket::bind("0.0.0.0:0").unwrap())
        .collect();
    // Paced evenly (a datagram every 50 us, not in bursts): the shared
    // budget's every new token goes to the flood, as the attacker's did.
    let t0 = Instant::now();
    let (rate, secs) = (20_000u64, 14u64);
    let mut sent = 0u64;
    while t0.elapsed() < Duration::from_secs(secs) && sent < rate * secs {
        let due = (t0.elapsed().as_secs_f64() * rate as f64) as u64;
        if sent < due {
            let req = tickpack_wire::Packet::StatsRequest {
                nonce: sent,
                proof: None,
            }
            .to_vec();
            let _ = socks[(sent % 1000) as usize].send_to(&req, target);
            sent += 1;
        } else {
            std::hint::spin_loop();
        }
    }
    assert!(sent > rate * secs / 2, "the flood was sent: {sent}");
    std::thread::sleep(Duration::from_secs(1));
    let st = host.status().unwrap();
    let i = instance(&st, 1);
    assert_eq!(i["restarts"], 0, "the server was killed: {st:#}");
    assert_eq!(i["state"], "running", "{st:#}");
    host.down();
}

/// Takes host `.0` of run dir `.1` down on drop, pass or fail, and removes
/// the run dir.
struct DownOnDrop(&'static str, PathBuf);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        let _ = host_down(self.0, &self.1);
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

/// Brings up a host, then kills its supervisor with -9: a run dir with a
/// record and the host's namespaces and cgroups left behind.
fn killed_host(name: &str, range: &str, def: &Path) -> PathBuf {
    let dir = temp_run_dir("walls", name);
    let mut h = Host::spawn(name, &dir, &netns_args(def, range), Stdio::null()).running();
    h.up.kill().unwrap();
    h.up.wait().unwrap();
    // The guard would take it down on drop: keep its leftovers.
    std::mem::forget(h);
    dir
}

/// Finding 3: `host down --run-dir STALE --name OTHER` removed a running
/// host's nftables table, veth, namespaces and cgroups (it took the name
/// from --name, not from the run dir's record); a bare `down --run-dir`
/// acted on a host named `h`, and after a `kill -9` it left the host's
/// cgroups behind.
#[test]
fn root_host_down_with_another_hosts_name_tore_that_host_down() {
    let _g = serial();
    require_root(ROOT);
    let def = script_game("wdn", "echo started\nexec sleep 600\n", "");
    let run_a = temp_run_dir("walls", "wdna");
    let mut a = Host::spawn(
        "wdna",
        &run_a,
        &netns_args(&def.0, "198.19.163.0/24"),
        Stdio::null(),
    )
    .remove_on_drop(&run_a)
    .running();
    let stale = killed_host("wdnb", "198.19.164.0/24", &def.0);
    let _b = DownOnDrop("wdnb", stale.clone());
    let a_alive = |a: &mut Host| {
        let st = a.status().expect("host a answers");
        assert_eq!(instance(&st, 1)["state"], "running", "{st:#}");
        assert_eq!(instance(&st, 1)["restarts"], 0, "{st:#}");
        assert!(
            Path::new("/run/netns/tpwdna-1").exists(),
            "host a's namespace is there"
        );
    };
    // The stale run dir's record names wdnb: --name wdna is refused.
    let out = host_down("wdna", &stale);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("belongs to host wdnb"),
        "{}",
        text(&out)
    );
    a_alive(&mut a);
    // A marked run dir with no record, and a's name: a's lock refuses it.
    let empty = temp_run_dir("walls", "wdnc");
    let _empty = Scratch(empty.clone());
    std::fs::create_dir(&empty).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = host_down("wdna", &empty);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("already running"), "{}", text(&out));
    a_alive(&mut a);
    // A bare `down --run-dir STALE` takes down wdnb, named as such, and
    // everything it left, in one call.
    let out = run(&["host", "down", "--run-dir", stale.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("tickpack host wdnb:"), "{}", text(&out));
    let left = Leftovers::of("tpwdnb").scan();
    assert!(left.is_empty(), "after one down: {left:?}");
    a_alive(&mut a);
    a.down();
}

/// The SysV shared memory segments the host sees (`/proc/sysvipc/shm`),
/// as `(key, uid)`.
fn host_shm_segments() -> Vec<(String, u32)> {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.first()?.to_string(), f.get(7)?.parse().ok()?))
        })
        .collect()
}

/// Finding 4: instances shared the host's IPC namespace. A 1 GiB SysV
/// segment, a queue and a semaphore made inside one survived `host down`,
/// outside every memory limit, owned by a uid a later host may get again.
/// Each instance has an IPC namespace of its own now.
#[test]
fn root_an_instances_sysv_segment_outlived_its_host() {
    let _g = serial();
    require_root(ROOT);
    let def = script_game(
        "wipc",
        "ipcmk -M 65536 && ipcmk -Q && ipcmk -S 1 && echo made\nexec sleep 600\n",
        "",
    );
    let before = host_shm_segments();
    let dir = temp_run_dir("walls", "wipc");
    let mut host = Host::spawn(
        "wipc",
        &dir,
        &netns_args(&def.0, "198.19.165.0/24"),
        Stdio::null(),
    )
    .remove_on_drop(&dir);
    let log = host.wait_log(1, "made");
    assert!(log.contains("Shared memory id"), "ipcmk ran: {log}");
    let new: Vec<_> = host_shm_segments()
        .into_iter()
        .filter(|s| !before.contains(s))
        .collect();
    assert!(
        new.is_empty(),
        "the host sees the instance's segment: {new:?}"
    );
    host.down();
    let new: Vec<_> = host_shm_segments()
        .into_iter()
        .filter(|s| !before.contains(s) && s.1 >= 200_000)
        .collect();
    assert!(new.is_empty(), "a segment outlived the host: {new:?}");
}

/// Finding 5: `logs/N.log` was kept and appended to across tenants of the
/// same host name, so one tenant's output was read as the next one's. A
/// new `up` starts new logs; the last run's stay readable until then.
#[test]
fn the_last_tenants_log_was_appended_to_by_the_next() {
    let _g = serial();
    let dir = temp_run_dir("walls", "wlog");
    let _dir = Scratch(dir.clone());
    for tenant in ["tenant-a", "tenant-b"] {
        let def = script_game("wlog", &format!("echo {tenant}\nexec sleep 600\n"), "");
        let mut host = Host::spawn(
            "wlog",
            &dir,
            &[
                "--game",
                def.0.to_str().unwrap(),
                "--instances",
                "1",
                "--backend",
                "process",
                "--health",
                "none",
            ],
            Stdio::null(),
        );
        let log = host.wait_log(1, tenant);
        assert!(
            tenant == "tenant-a" || !log.contains("tenant-a"),
            "the last tenant's output in the new log: {log:?}"
        );
        let out = host.down();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(host.log(1).contains(tenant), "kept after down");
    }
}
