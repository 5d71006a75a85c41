//! Under `sudo`, `tickpack bench` gives root up before it starts anything:
//! the supervisor, the players and the prober (every thread that reads a
//! hosted server's datagrams) run as the user who typed the command, with
//! no capability; only its root processes (the broker and one `__root` per
//! host) keep root. `sudo` is stood in for by its variables (`SUDO_UID`,
//! `SUDO_GID`) on a command run as root, which is what `sudo` leaves.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::bench::{one_ladder, LENIENT};
use support::host::children_running;
use support::{exe, serial, text, Leftovers};
use tickpack_sys::unprivileged::Privilege;

/// The user sudo ran the tests' commands for: no account needed.
const USER: u32 = 61_234;

fn as_sudo_user(cmd: &mut Command) -> &mut Command {
    cmd.env("SUDO_UID", USER.to_string())
        .env("SUDO_GID", USER.to_string())
}

/// Every thread of `pid`: its privilege.
fn threads(pid: u32) -> Vec<Privilege> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
                .map(|s| Privilege::parse(&s))
                .collect()
        })
        .unwrap_or_default()
}

/// Takes the bench's host down as sudo's user and checks nothing is left.
struct Down(&'static str);

impl Drop for Down {
    fn drop(&mut self) {
        if Path::new("/run/tickpack").join(self.0).exists() {
            let _ = as_sudo_user(&mut Command::new(exe()))
                .args(["host", "down", "--name", self.0])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let left = Leftovers::of(&format!("tp{}", self.0)).scan();
        if !std::thread::panicking() {
            assert!(left.is_empty(), "left over: {left:?}");
        }
    }
}

#[test]
fn root_under_sudo_the_supervisor_players_and_prober_run_without_root() {
    if !tickpack_testkit::root_or_skip(
        "root_under_sudo_the_supervisor_players_and_prober_run_without_root",
    ) {
        return;
    }
    let _g = serial();
    let _down = Down("sdb");
    let top = std::env::temp_dir().join(format!("tp-sudo-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&top);
    let out_dir = top.join("out");
    let mut bench = one_ladder("1");
    as_sudo_user(&mut bench)
        .args(LENIENT)
        .args([
            "--probe",
            "a2s",
            "--name",
            "sdb",
            "--range",
            "198.19.98.0/24",
            "--step-duration",
            "3s",
            "--no-confirm",
            "--max-steal",
            "100",
            "--max-foreign",
            "100",
            "--out",
        ])
        .arg(&out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut bench = bench.spawn().expect("start tickpack bench");
    let pid = bench.id();
    // (what, its threads) as seen while the bench ran.
    let mut seen: Vec<(String, Vec<Privilege>)> = vec![];
    let deadline = Instant::now() + Duration::from_secs(240);
    // Root is given up before the first host's root process is asked
    // for: the bench is judged from then on (it parses its flags as root).
    let mut given_up = false;
    while bench.try_wait().unwrap().is_none() && Instant::now() < deadline {
        let own = threads(pid);
        if given_up && !own.is_empty() {
            seen.push(("supervisor".into(), own));
        }
        for sub in ["__readers", "__decoder"] {
            for (kid, t) in children_running(pid, sub) {
                let cmdline = std::fs::read(format!("/proc/{kid}/cmdline")).unwrap_or_default();
                let job = cmdline.split(|&b| b == 0).nth(2).unwrap_or_default();
                let job = match sub {
                    "__decoder" => "decoder".to_string(),
                    _ => String::from_utf8_lossy(job).into_owned(),
                };
                seen.push((job, t));
            }
        }
        for (broker, t) in children_running(pid, "__root-broker") {
            seen.push(("broker".into(), t));
            for (_, t) in children_running(broker, "__root") {
                seen.push(("root process".into(), t));
                given_up = true;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = bench.kill();
    let out = bench.wait_with_output().unwrap();
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("running as uid 61234"), "{text}");
    let kinds = |k: &'static str| seen.iter().filter(move |(j, t)| j == k && !t.is_empty());
    for job in [
        "supervisor",
        "players",
        "probe",
        "decoder",
        "broker",
        "root process",
    ] {
        assert!(
            kinds(job).next().is_some(),
            "no {job} seen: {seen:?}\n{text}"
        );
    }
    for job in ["supervisor", "players", "probe", "decoder"] {
        for t in kinds(job).flat_map(|(_, t)| t) {
            assert!(t.is_unprivileged(), "a {job} thread: {t:?}");
            assert_eq!(t.uids, Some([USER; 4]), "a {job} thread");
        }
    }
    for job in ["broker", "root process"] {
        for t in kinds(job).flat_map(|(_, t)| t) {
            assert_eq!(t.uids, Some([0; 4]), "the {job} keeps root: {t:?}");
        }
    }
    // What it wrote is the user's; its run dir (root's parent) is gone.
    let result = out_dir.join("result.json");
    assert_eq!(std::fs::metadata(&result).unwrap().uid(), USER);
    // Review of issue 40: the directories made on the way to `--out`
    // were root's (the last one alone was handed over).
    assert_eq!(
        std::fs::metadata(&top).unwrap().uid(),
        USER,
        "{} (made on the way to --out) is not the user's",
        top.display()
    );
    // (The broker removes the run dir once the bench is gone.)
    let gone = Instant::now() + Duration::from_secs(10);
    while Path::new("/run/tickpack/sdb").exists() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!Path::new("/run/tickpack/sdb").exists());
    let _ = std::fs::remove_dir_all(&top);
}

/// `host up` under sudo: its supervisor and decoder run as the user, its
/// instances' inits (once they started their command) as their
/// instances' uids, its broker and root process as root; `host down`
/// under sudo takes it down and nothing is left, its run dir included.
#[test]
fn root_under_sudo_host_up_keeps_root_only_in_its_root_process() {
    if !tickpack_testkit::root_or_skip(
        "root_under_sudo_host_up_keeps_root_only_in_its_root_process",
    ) {
        return;
    }
    let _g = serial();
    let _down = Down("sdh");
    let mut up = Command::new(exe());
    as_sudo_user(&mut up)
        .args(["host", "up", "--name", "sdh", "--backend", "netns"])
        .args(["--instances", "2", "--range", "198.19.99.0/24"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut up = up.spawn().expect("start tickpack host up");
    let pid = up.id();
    // Up once both instances are printed.
    let stdout = up.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut printed = vec![];
    while !printed
        .iter()
        .any(|l: &String| l.starts_with("instance 2 at"))
    {
        assert!(Instant::now() < deadline, "not up: {printed:?}");
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
            printed.push(l);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let supervisor = threads(pid);
    let decoder: Vec<_> = children_running(pid, "__decoder");
    let broker = children_running(pid, "__root-broker");
    let root: Vec<_> = broker
        .iter()
        .flat_map(|(b, _)| children_running(*b, "__root"))
        .collect();
    let inits: Vec<_> = root
        .iter()
        .flat_map(|(r, _)| children_running(*r, "__instance-init"))
        .collect();
    for t in &supervisor {
        assert_eq!(t.uids, Some([USER; 4]), "a supervisor thread: {t:?}");
        assert!(t.is_unprivileged(), "a supervisor thread: {t:?}");
    }
    assert!(!decoder.is_empty(), "no decoder");
    for t in decoder.iter().flat_map(|(_, t)| t) {
        assert_eq!(t.uids, Some([USER; 4]), "a decoder thread: {t:?}");
    }
    assert_eq!(
        (broker.len(), root.len(), inits.len()),
        (1, 1, 2),
        "{root:?}"
    );
    for t in broker.iter().chain(&root).flat_map(|(_, t)| t) {
        assert_eq!(t.uids, Some([0; 4]), "the root side: {t:?}");
    }
    for t in inits.iter().flat_map(|(_, t)| t) {
        assert!(t.is_unprivileged(), "an instance's init: {t:?}");
    }
    let down = as_sudo_user(&mut Command::new(exe()))
        .args(["host", "down", "--name", "sdh"])
        .output()
        .unwrap();
    assert!(down.status.success(), "{}", text(&down));
    let status = up.wait().unwrap();
    assert!(status.success(), "host up ended {status:?}");
    let gone = Instant::now() + Duration::from_secs(10);
    while Path::new("/run/tickpack/sdh").exists() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Its logs stay for reading: the run dir with them, the user's.
    let dir = Path::new("/run/tickpack/sdh");
    if dir.exists() {
        assert_eq!(std::fs::metadata(dir).unwrap().uid(), USER);
        let _ = std::fs::remove_dir_all(dir);
    }
}
