//! `tickpack bench` and `tickpack tco` from a test: the flags many ladders
//! share, a bench run to its end with the result it wrote, and the check
//! that a bench left nothing behind.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use super::{text, tickpack, Leftovers};

/// A light server and QoS limits no step fails on this machine: the tests
/// that use them check the ladder's bookkeeping, not a verdict.
pub const LENIENT: [&str; 12] = [
    "--cost",
    "light",
    "--qos-p99-ms",
    "1000",
    "--qos-relative",
    "1000",
    "--qos-tick-lateness-ms",
    "1000",
    "--qos-frame-budget",
    "100",
    "--qos-loss-percent",
    "100",
];

/// `tickpack bench --repeat 1 --tile-servers 1 --max-steps MAX_STEPS`, not
/// started yet: one ladder of one-server steps, at most `max_steps` of them.
pub fn one_ladder(max_steps: &str) -> Command {
    tickpack(&[
        "bench",
        "--repeat",
        "1",
        "--tile-servers",
        "1",
        "--max-steps",
        max_steps,
    ])
}

/// The arguments of `tickpack tco` for ten machines at 0.1 EUR per kWh
/// (`--machines 10 --price-per-kwh 0.1 --currency EUR`), with the watts of
/// one machine before and after and the consolidation ratio.
pub fn tco_of_ten_machines<'a>(
    before_watts: &'a str,
    after_watts: &'a str,
    ratio: &'a str,
) -> [&'a str; 13] {
    [
        "tco",
        "--before-watts",
        before_watts,
        "--after-watts",
        after_watts,
        "--ratio",
        ratio,
        "--machines",
        "10",
        "--price-per-kwh",
        "0.1",
        "--currency",
        "EUR",
    ]
}

/// A bench run to its end.
pub struct BenchRun {
    /// How it exited and what it printed.
    pub out: Output,
    /// Its stdout then its stderr, for messages.
    pub text: String,
    /// The `result.json` it wrote.
    pub result: Value,
}

/// Runs `bench` (a `tickpack bench` without `--out`) with `--out OUT_DIR`
/// to its end and reads the result it wrote there, which must exist.
pub fn run_bench(bench: &mut Command, out_dir: &Path) -> BenchRun {
    let out = bench
        .arg("--out")
        .arg(out_dir)
        .output()
        .expect("run tickpack bench");
    let text = text(&out);
    let path = out_dir.join("result.json");
    assert!(path.exists(), "no result.json: {text}");
    let result = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("result.json is not valid JSON ({e}): {text}"));
    BenchRun { out, text, result }
}

/// Asserts that nothing a bench named `bn` (the default name) created is
/// left: no namespace, link, table or cgroup named `tpbn`.
pub fn assert_no_leftovers() {
    let left = Leftovers::of("tpbn").scan();
    assert!(left.is_empty(), "left over: {left:?}");
}
