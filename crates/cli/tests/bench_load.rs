//! Bring your own load (`bench --load`, `[load]` in a definition): a
//! command started for every server in a sandbox that reaches only that
//! server. `tickpack players` run that way must give the verdicts the
//! built-in players give, and a command that crashes or never connects
//! must be reported as such. As root (CI) on the netns backend, else on
//! the process backend; every bench is bounded by its steps.

mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use support::bench::{assert_no_leftovers, one_ladder, run_bench};
use support::{exe, serial, text};

/// A test's directory, removed even when the test fails.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("tp-load-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One one-server step of the reference server with `extra` flags: the
/// result and what the bench printed.
fn one_step(dir: &TempDir, tag: &str, extra: &[&str]) -> (Value, String) {
    let run = run_bench(
        one_ladder("1")
            .args(["--step-duration", "4s", "--no-confirm"])
            .args(extra),
        &dir.0.join(tag),
    );
    (run.result, run.text)
}

fn first_step(r: &Value) -> &Value {
    &r["ladders"][0]["steps"][0]
}

const PLAYERS: &str = "{tickpack} players --target {ip}:{port} --players {players} \
     --warmup {warmup_s}s --duration {duration_s}s --json {out}";

#[test]
fn tickpack_players_as_a_load_command_gets_the_built_in_verdicts() {
    let _g = serial();
    let dir = TempDir::new("same");
    let (built_in, t1) = one_step(&dir, "built-in", &[]);
    let (loaded, t2) = one_step(&dir, "load", &["--load", PLAYERS]);
    let (a, b) = (first_step(&built_in), first_step(&loaded));
    assert_eq!(a["verdict"], b["verdict"], "{t1}\n{t2}");
    assert_eq!(b["players"], 12, "{t2}");
    assert_eq!(b["connected"], 12, "{t2}");
    assert!(
        b["transaction_latency_us"]["count"].as_u64().unwrap() > 1000,
        "judged on the load's samples: {b}"
    );
    assert_eq!(loaded["settings"]["load"]["players"], 12);
    assert!(b["cpu"]["load_generator_cpu_s"].as_f64().unwrap() > 0.0);
    assert_no_leftovers();
}

#[test]
fn a_load_command_that_crashes_or_never_connects_is_reported_as_such() {
    let _g = serial();
    let dir = TempDir::new("bad");
    let (r, t) = one_step(&dir, "crash", &["--load", "/bin/false"]);
    let s = first_step(&r);
    assert_eq!(s["verdict"], "fail", "{t}");
    let why = s["failures"].to_string();
    assert!(
        why.contains("the load command of server 1 exited with code 1"),
        "{why}"
    );
    // Pointed at a port nothing listens on: `players` exits 5.
    let never = "{tickpack} players --target {ip}:9 --players 1 --warmup 1s \
                 --duration {duration_s}s --json {out}";
    let (r, t) = one_step(&dir, "never", &["--load", never]);
    let s = first_step(&r);
    assert_eq!(s["verdict"], "fail", "{t}");
    let why = s["failures"].to_string();
    assert!(
        why.contains("the load command of server 1 exited with code 5"),
        "{why}"
    );
    // A bad placeholder is refused before anything starts.
    let out = Command::new(exe())
        .args([
            "bench",
            "--repeat",
            "1",
            "--load",
            "{tickpack} players --target {nope}",
        ])
        .arg("--out")
        .arg(dir.0.join("refused"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("unknown placeholder {nope}"));
    assert_no_leftovers();
}

/// Issue 41: a load command that ran past its step and exited 0 on the
/// SIGTERM that stopped it (`tickpack players` does: it ends its window
/// early and reports) counted as ended well, though a load command must
/// end by itself. The step fails and says why.
#[test]
fn a_load_command_that_ran_past_its_step_and_exited_0_on_sigterm_ended_well() {
    let _g = serial();
    let dir = TempDir::new("runs-on");
    let runs_on = "{tickpack} players --target {ip}:{port} --players 2 --warmup {warmup_s}s \
                   --duration 120s --quiet";
    let (r, t) = one_step(&dir, "runs-on", &["--load", runs_on]);
    let s = first_step(&r);
    assert_eq!(s["verdict"], "fail", "{t}");
    let why = s["failures"].to_string();
    assert!(
        why.contains("the load command of server 1 ran past its step and was stopped"),
        "{why}"
    );
    assert!(why.contains("must end by itself"), "{why}");
    assert_no_leftovers();
}
