//! A step's load commands (`[load]` in a game's definition, `bench
//! --load`): one per server, started by the host in a sandbox that
//! reaches only that server ([`tickpack_host::supervisor::LoadProcess`]),
//! on the load generator's CPUs, for the step's warm-up and measured
//! window.
//!
//! What a step learns from them:
//! - each command's end: one that did not exit 0 by itself (crashed,
//!   never connected, ran past its step) is a failure of the step, named
//!   with its last output;
//! - its CPU time, added to the load generator's;
//! - its samples, when it wrote `{out}` as a `tickpack players --json`
//!   result (`tickpack.players/1`): the results of all servers are merged
//!   ([`tickpack_report::merge::merge_players`]) and the step is judged on
//!   them like built-in players (transaction latency, loss, outages).
//!   Without samples it is judged on run delay and query latency.

use std::net::SocketAddr;
use std::time::Duration;

use tickpack_host::supervisor::{LoadProcess, Supervisor};
use tickpack_report::bench::LoadSettings;
use tickpack_report::PlayersResult;

use crate::BenchError;

/// The file in a load command's directory that `{out}` names.
pub const SAMPLES_FILE: &str = "samples.json";
/// The largest samples file read (a players result with its histograms is
/// tens of kilobytes).
const SAMPLES_MAX: u64 = 16 << 20;
/// How long a load command may run past its step before it is stopped.
const GRACE: Duration = Duration::from_secs(10);

/// The values a load command's placeholders take for one server.
pub struct LoadSlot<'a> {
    pub addr: SocketAddr,
    pub id: u32,
    pub players: u32,
    pub tick_hz: tickpack_report::bench::TickRate,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub dir: &'a str,
    pub tickpack: &'a str,
}

/// `command` split on white space, each word's placeholders filled for
/// `slot` (a value never splits a word).
pub fn expand(command: &str, slot: &LoadSlot<'_>) -> Vec<String> {
    let out = format!("{}/{SAMPLES_FILE}", slot.dir);
    let secs = |s: f64| format!("{}", (s * 1000.0).round() / 1000.0);
    let values = [
        ("{ip}", slot.addr.ip().to_string()),
        ("{port}", slot.addr.port().to_string()),
        ("{id}", slot.id.to_string()),
        ("{players}", slot.players.to_string()),
        ("{tick_hz}", slot.tick_hz.to_string()),
        ("{warmup_s}", secs(slot.warmup_s)),
        ("{duration_s}", secs(slot.duration_s)),
        ("{dir}", slot.dir.to_string()),
        ("{out}", out),
        ("{tickpack}", slot.tickpack.to_string()),
    ];
    command
        .split_whitespace()
        .map(|w| {
            values
                .iter()
                .fold(w.to_string(), |acc, (k, v)| acc.replace(k, v))
        })
        .collect()
}

/// What a step's load commands gave.
#[derive(Debug, Default)]
pub struct LoadOutcome {
    /// Their samples merged, when every command wrote some.
    pub samples: Option<PlayersResult>,
    /// One sentence per command that failed.
    pub failures: Vec<String>,
    /// Their CPU seconds, all together.
    pub cpu_s: f64,
}

/// Starts `load` for every server of `sup` (ids from 1, in address order).
pub fn start(
    sup: &mut Supervisor,
    load: &LoadSettings,
    tick_hz: tickpack_report::bench::TickRate,
    warmup_s: f64,
    duration_s: f64,
    cpus: &[usize],
    exe: &std::path::Path,
) -> Result<Vec<LoadProcess>, BenchError> {
    let mut started = vec![];
    let tickpack = exe.display().to_string();
    for (k, addr) in sup.addresses().into_iter().enumerate() {
        let id = k as u32 + 1;
        let dir = sup.load_dir(id).display().to_string();
        let argv = expand(
            &load.command,
            &LoadSlot {
                addr,
                id,
                players: load.players,
                tick_hz,
                warmup_s,
                duration_s,
                dir: &dir,
                tickpack: &tickpack,
            },
        );
        started.push(sup.start_load(id, argv, cpus).map_err(BenchError::Host)?);
    }
    Ok(started)
}

/// Waits for every load command to end (stopping those that run more
/// than [`GRACE`] past the step), then gathers what they gave.
pub fn finish(loads: Vec<LoadProcess>) -> LoadOutcome {
    let mut out = LoadOutcome::default();
    let mut results = vec![];
    let mut missing = 0;
    for mut l in loads {
        let exit = l.finish(GRACE);
        out.cpu_s += exit.cpu_s;
        if !exit.ok() {
            out.failures.push(format!(
                "the load command of server {} {}: {}",
                l.id,
                exit.describe(),
                nonempty(l.last_output())
            ));
        }
        match l.read_file(SAMPLES_FILE, SAMPLES_MAX) {
            Ok(Some(text)) => match serde_json::from_str::<PlayersResult>(&text) {
                Ok(r) => results.push((format!("server {}", l.id), r)),
                Err(e) => out.failures.push(format!(
                    "the load command of server {} wrote samples that are not a players result: {}",
                    l.id,
                    tickpack_sys::text::escape(&e.to_string(), 200)
                )),
            },
            Ok(None) => missing += 1,
            Err(e) => out.failures.push(format!(
                "the samples of server {}'s load command were refused: {}",
                l.id,
                tickpack_sys::text::escape(&e, 200)
            )),
        }
    }
    if !results.is_empty() && missing > 0 {
        out.failures.push(format!(
            "{missing} load command(s) wrote no samples while the others did"
        ));
    }
    if !results.is_empty() {
        match tickpack_report::merge::merge_players(&results) {
            Ok(m) => out.samples = Some(m),
            Err(e) => out
                .failures
                .push(format!("the load commands' samples cannot be merged: {e}")),
        }
    }
    out
}

fn nonempty(s: String) -> String {
    if s.is_empty() {
        "(it printed nothing)".into()
    } else {
        format!("its last output: {s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_per_word_and_values_never_split_words() {
        let slot = LoadSlot {
            addr: "198.18.0.6:27015".parse().unwrap(),
            id: 3,
            players: 12,
            tick_hz: tickpack_report::bench::TickRate::DEFAULT,
            warmup_s: 2.0,
            duration_s: 6.0,
            dir: "/run/tickpack/b/batch/load-3",
            tickpack: "/usr/bin/tickpack",
        };
        let argv = expand(
            "{tickpack} players --target {ip}:{port} --players {players} --warmup {warmup_s}s --duration {duration_s}s --json {out} --name tp{id}",
            &slot,
        );
        assert_eq!(
            argv,
            [
                "/usr/bin/tickpack",
                "players",
                "--target",
                "198.18.0.6:27015",
                "--players",
                "12",
                "--warmup",
                "2s",
                "--duration",
                "6s",
                "--json",
                "/run/tickpack/b/batch/load-3/samples.json",
                "--name",
                "tp3",
            ]
        );
    }
}
