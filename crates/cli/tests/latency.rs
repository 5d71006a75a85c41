//! `tickpack latency` end to end with the real binary. The runs that build
//! paths need root (CI runs as root) and fail saying so without it; each
//! uses its own name (`lt1`, `lt2`: everything it creates starts with
//! `tplt1`/`tplt2`) and its own /22 of 198.19.0.0/16, and a guard removes
//! leftovers even when an assertion fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::{exe, require_root, serial, Leftovers};

/// Fails loudly without root; then serializes the root tests (they read
/// the same namespace and link lists, and share two CPUs).
fn root() -> MutexGuard<'static, ()> {
    require_root("it builds network namespaces and links");
    serial()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tp-latency-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().expect("running ip");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The /24s a run with `--range <base>.0/22` uses, as route prefixes.
fn slash24s(base: &str) -> Vec<String> {
    let (head, third) = base.rsplit_once('.').unwrap();
    let third: u32 = third.parse().unwrap();
    (0..4)
        .map(|i| format!("{head}.{}.0/24", third + i))
        .collect()
}

/// What an operator would see: namespaces (`ip netns list`), links
/// (`ip -o link`), tables and cgroups starting with `prefix`, and routes for
/// the /24s.
fn leftovers(prefix: &str, nets: &[String]) -> Vec<String> {
    Leftovers::of(prefix).routes(nets).scan()
}

/// Removes whatever a failed run left (pass or fail), so one failure does
/// not cascade. Names are checked to carry our prefix before removal.
struct Sweep {
    prefix: String,
    nets: Vec<String>,
}

impl Drop for Sweep {
    fn drop(&mut self) {
        for item in leftovers(&self.prefix, &self.nets) {
            let (what, name) = item.split_once(' ').unwrap();
            let _ = match what {
                "netns" => Command::new("ip").args(["netns", "del", name]).output(),
                "link" => Command::new("ip").args(["link", "del", name]).output(),
                "route" => Command::new("ip")
                    .args(["route", "del"])
                    .args(name.split_whitespace())
                    .output(),
                _ => continue,
            };
        }
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(exe())
        .arg("latency")
        .args(args)
        .output()
        .expect("run tickpack latency")
}

/// A running `tickpack latency`: interrupted (then killed) on drop, so a
/// failed assertion does not leave it measuring.
struct Running(Option<Child>);

impl Running {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }

    /// SIGINT, then waits up to `limit`; panics (after SIGKILL) if it
    /// does not stop.
    fn interrupt(&mut self, limit: Duration) -> ExitStatus {
        let c = self.child();
        // SAFETY: kill has no memory preconditions; the pid is our child's
        // and it has not been reaped yet.
        unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        let t = Instant::now();
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                return st;
            }
            if t.elapsed() > limit {
                let _ = c.kill();
                let _ = c.wait();
                panic!("tickpack latency did not stop within {limit:?} of SIGINT");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                // SAFETY: as in `interrupt`.
                unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
                let t = Instant::now();
                while matches!(c.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(15) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read_json(p: &Path) -> Value {
    let s = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{}: {e}\n{s}", p.display()))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn quick_run_measures_every_available_path_and_leaves_nothing_behind() {
    let _serial = root();
    let (prefix, base) = ("tplt1", "198.19.232");
    let nets = slash24s(base);
    let _sweep = Sweep {
        prefix: prefix.into(),
        nets: nets.clone(),
    };
    assert!(
        leftovers(prefix, &nets).is_empty(),
        "leftovers before the test: {:?}",
        leftovers(prefix, &nets)
    );
    let dir = tmp("quick");
    let (json, html) = (dir.join("out.json"), dir.join("out.html"));
    let range = format!("{base}.0/22");
    let out = run(&[
        "--quick",
        "--name",
        "lt1",
        "--range",
        &range,
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);

    // Nothing is left behind once the command returns.
    assert_eq!(leftovers(prefix, &nets), Vec::<String>::new());

    let d = read_json(&json);
    assert_eq!(d["schema"], "tickpack.latency/1");
    assert_eq!(d["complete"], true);
    assert!(!d["tickpack_version"].as_str().unwrap().is_empty());
    assert!(d["system"]["logical_cpus"].as_u64().unwrap() >= 1);
    assert_eq!(d["settings"]["streams"], 2);
    assert_eq!(d["settings"]["rounds"], 1);
    assert_eq!(d["settings"]["sizes"], serde_json::json!([64, 256, 1024]));
    assert!(d["cores"]["clients"].is_array() && d["cores"]["echo_servers"].is_array());
    assert!(d["load"]["before"]["load1"].is_number(), "{}", d["load"]);
    assert!(d["load"]["after"]["load1"].is_number(), "{}", d["load"]);

    // Every path is either measured or unavailable with a reason.
    let measured: Vec<String> = d["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    let unavailable = d["unavailable"].as_array().unwrap();
    for u in unavailable {
        let p = u["path"].as_str().unwrap();
        assert!(
            !measured.iter().any(|m| m == p),
            "{p} both measured and unavailable"
        );
        assert!(
            u["reason"].as_str().is_some_and(|r| r.len() > 10),
            "no reason for {p}: {u}"
        );
        assert!(stdout.contains(&format!("{p}: unavailable")), "{stdout}");
    }
    for p in ["native", "veth", "bridge", "macvlan", "ipvlan"] {
        let listed = measured.iter().any(|m| m == p) || unavailable.iter().any(|u| u["path"] == p);
        assert!(listed, "{p} is neither measured nor unavailable");
    }
    for p in ["native", "veth", "bridge"] {
        assert!(
            measured.iter().any(|m| m == p),
            "{p} was not measured: {measured:?}"
        );
    }

    // One well-formed row per measured path x size x mode.
    let rows = d["results"].as_array().unwrap();
    assert_eq!(rows.len(), measured.len() * 3 * 2, "{rows:#?}");
    for p in &measured {
        for size in [64, 256, 1024] {
            for mode in ["blocking", "busy"] {
                let r: Vec<&Value> = rows
                    .iter()
                    .filter(|r| r["path"] == p.as_str() && r["size"] == size && r["mode"] == mode)
                    .collect();
                assert_eq!(r.len(), 1, "{p} {size} {mode}");
                let r = r[0];
                let (p50, p99, p999) = (f(&r["p50_us"]), f(&r["p99_us"]), f(&r["p999_us"]));
                assert!(
                    p50 > 0.0 && p50 <= p99 && p99 <= p999,
                    "{p} {size} {mode}: {p50} {p99} {p999}"
                );
                let o = f(&r["overhead_vs_native"]);
                assert!(o > 0.0, "{p} {size} {mode}: overhead {o}");
                if p == "native" {
                    assert_eq!(o, 1.0);
                }
                assert_eq!(r["rounds"], 1);
                let count = r["all_rounds"]["count"].as_u64().unwrap();
                // How many fit in 300 ms depends on the machine's load.
                assert!(count > 0, "{p} {size} {mode}: no round trip measured");
                let h =
                    tickpack_report::decode_histogram(r["histogram_ns"].as_str().unwrap()).unwrap();
                assert_eq!(h.len(), count);
            }
        }
    }

    // The table and the report show the same.
    for p in &measured {
        assert!(stdout.contains(p.as_str()), "{p} missing from\n{stdout}");
    }
    assert!(
        stdout.contains("p50 us") && stdout.contains("x native"),
        "{stdout}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<svg").count(), 2, "one chart per mode");
    assert_eq!(
        page.matches("<rect class=\"bar\"").count(),
        rows.len(),
        "one bar per row"
    );
    assert!(!page.contains("http") && !page.contains("<script"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_removes_every_path_and_keeps_a_valid_result() {
    let _serial = root();
    let (prefix, base) = ("tplt2", "198.19.236");
    let nets = slash24s(base);
    let _sweep = Sweep {
        prefix: prefix.into(),
        nets: nets.clone(),
    };
    let dir = tmp("sigint");
    let json = dir.join("out.json");
    let range = format!("{base}.0/22");
    let mut run = Running(Some(
        Command::new(exe())
            .args(["latency", "--name", "lt2", "--range", &range])
            .args(["--paths", "veth,bridge", "--streams", "2", "--rounds", "3"])
            .args(["--duration", "2s", "--json", json.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tickpack latency"),
    ));
    // Wait until both paths exist and measuring has begun.
    let t0 = Instant::now();
    while !(ip(&["-o", "link", "show"]).contains("tplt2bbr")
        && ip(&["netns", "list"]).contains("tplt2v-1"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the paths were not built within 20 s"
        );
        if let Some(st) = run.child().try_wait().unwrap() {
            panic!("tickpack latency exited early: {st}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let status = run.interrupt(Duration::from_secs(15));
    let child = run.0.take().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(leftovers(prefix, &nets), Vec::<String>::new());
    let d = read_json(&json);
    assert_eq!(d["complete"], false);
    assert_eq!(d["schema"], "tickpack.latency/1");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn game_traffic_is_reported_as_size_game() {
    // Native only: needs no root.
    let out = run(&[
        "--quick", "--game", "--paths", "native", "--modes", "busy", "--json", "-",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let json = &stdout[stdout.find("{\n").expect("a JSON document on stdout")..];
    let d: Value = serde_json::from_str(json).unwrap();
    let rows = d["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["size"], "game");
    assert_eq!(rows[0]["path"], "native");
    assert_eq!(d["settings"]["game"]["response"], 2000);
    assert!(f(&rows[0]["p50_us"]) > 0.0);
}

#[test]
fn bad_flags_exit_2_and_name_the_problem() {
    let cases: &[(&[&str], &str)] = &[
        (&["--streams", "0"], "--streams"),
        (&["--streams", "33"], "--streams"),
        (&["--rounds", "0"], "--rounds"),
        (&["--sizes", "8"], "16..=8192"),
        (&["--sizes", "64,big"], "big"),
        (&["--paths", "vlan"], "vlan"),
        (&["--modes", "spin"], "spin"),
        (&["--game", "--sizes", "64"], "--sizes"),
        (&["--range", "198.19.240.0/24"], "/22"),
        (&["--range", "127.0.0.0/16"], "loopback"),
        (&["--name", "LT"], "--name"),
        (&["--duration", "soon"], "--duration"),
        (&["--client-cpu", "1000"], "--client-cpu"),
    ];
    for (args, word) in cases {
        let out = run(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(word),
            "{args:?}: {stderr:?} should mention {word:?}"
        );
    }
}

#[test]
fn without_root_the_namespaced_paths_exit_3_and_say_why() {
    let _serial = root();
    // Drop to nobody for this one run (setpriv is in util-linux).
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", exe()])
        .args(["latency", "--quick", "--paths", "veth", "--name", "lt3"])
        .output()
        .expect("run setpriv (util-linux)");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("root") && stderr.contains("veth"),
        "{stderr}"
    );
    assert!(ip(&["netns", "list"])
        .lines()
        .all(|l| !l.starts_with("tplt3")));
}
