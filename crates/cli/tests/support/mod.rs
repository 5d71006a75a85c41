//! Support shared by the end-to-end tests of the `tickpack` binary (each
//! test file says `mod support;`): running the binary and checking how it
//! failed, a bench run to its end with the result it wrote
//! ([`bench::run_bench`]), a host brought up in the background
//! ([`host::Host`]) that a guard takes down and checks for leftovers, and a
//! server on 127.0.0.1 ([`server::Server`]) killed by PID when dropped.
//!
//! What needs no binary (root check, leftovers scanner, free ports, waiting
//! with a deadline, /proc) lives in the `tickpack-testkit` crate and is
//! re-exported here, so a test file needs one `use support::...`.
//!
//! Not every test file uses every helper, hence the `allow` below.
#![allow(dead_code, unused_imports)]

pub mod bench;
pub mod host;
pub mod server;

use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

pub use tickpack_testkit::{
    alive, children, free_tcp_port, free_udp_ports, require_root, wait_until, Leftovers,
};

/// The `tickpack` binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_tickpack")
}

/// `tickpack ARGS`, not started yet.
pub fn tickpack(args: &[&str]) -> Command {
    let mut c = Command::new(exe());
    c.args(args);
    c
}

/// Runs `tickpack ARGS` to its end.
pub fn run(args: &[&str]) -> Output {
    tickpack(args).output().expect("run tickpack")
}

static SERIAL: Mutex<()> = Mutex::new(());

/// Serializes the tests of one test file (they share two cores and read the
/// same namespace and link lists); a failed test does not poison the lock.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stdout then stderr of `o`, for messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts that `out` exited 0, showing its stderr if not.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts that `out` exited with one of `codes` and said why in one line
/// of stderr; returns that stderr. `shown` names the command in messages.
pub fn assert_one_error_line(out: &Output, codes: &[i32], shown: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.code().is_some_and(|c| codes.contains(&c)),
        "{shown}: {:?} {err}",
        out.status
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

/// The JSON document `players --json -` printed after its table.
pub fn players_json(out: &Output) -> serde_json::Value {
    let t = String::from_utf8_lossy(&out.stdout);
    let start = t
        .find("{\n")
        .unwrap_or_else(|| panic!("no JSON: {}", text(out)));
    serde_json::from_str(&t[start..]).unwrap()
}

/// The body of `GET /metrics` from the exporter at `addr`.
pub fn http_get_metrics(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}
