//! The machine's speed, measured the same way every time: the reference
//! server's own tick (its world with bots; no sockets, a virtual clock)
//! run [`TICKS`] times on one core, pinned, timing each tick. Run on every
//! server core before the first ladder, after each repetition and after
//! the last, it says how fast the cores were while the ladders ran
//! ([`tickpack_report::machine`]).
//!
//! The work is deterministic (the same seed, bots and ticks), so its time
//! changes only with the core: a busy SMT sibling, cache and memory
//! bandwidth taken by another guest, a lower clock.

use std::time::{Duration, Instant};

use tickpack_report::machine::Calibration;
use tickpack_sim::{Server, ServerConfig};

/// The name of the calibration's thread (the bench's only thread that
/// runs on a server core, between ladders).
pub const THREAD_NAME: &str = "calibration";

/// Ticks per calibration: a few hundred milliseconds on a 2-vCPU VM.
pub const TICKS: u32 = 300;
/// Bots in the calibration world: a full server's worth of moving players.
pub const BOTS: u8 = 24;

/// What the calibration runs, in words for result.json.
pub fn workload() -> String {
    format!(
        "the reference server's tick (its world with {BOTS} bots, cost default, no sockets), {TICKS} ticks on each server core and each load generator's core"
    )
}

/// Calibrates `cpu` (pinned to it on a thread of its own); `when` says
/// when in the run; `load_generator`: `cpu` is a load generator's core.
pub fn calibrate(cpu: usize, when: &str, load_generator: bool) -> Result<Calibration, String> {
    let when = when.to_string();
    // Its own thread, named so: the one thread of the bench that runs on a
    // server core, and only between ladders, when no server runs there.
    std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            tickpack_net::cpu::pin_current_thread(&[cpu])
                .map_err(|e| format!("calibration: cannot pin to CPU {cpu}: {e}"))?;
            let before = crate::cpu::CpuReading::read();
            let own_before = thread_schedstat();
            let mut ticks = run_ticks(TICKS);
            let own_after = thread_schedstat();
            let after = crate::cpu::CpuReading::read();
            let window = crate::cpu::CpuWindow::between(&before, &after);
            let own_ns = own_after.zip(own_before).and_then(|(b, a)| b.since(&a));
            let foreign_percent = match (own_ns, window.task_ns.get(cpu)) {
                (Some(own), Some(&task)) => {
                    Some(window.percent(task.saturating_sub(own.on_cpu_ns)))
                }
                _ => None,
            };
            ticks.sort_unstable();
            let at = |q: f64| {
                let i = ((ticks.len() - 1) as f64 * q).round() as usize;
                ticks[i].as_secs_f64() * 1e6
            };
            Ok(Calibration {
                when,
                cpu,
                tick_us: round1(at(0.5)),
                tick_p10_us: round1(at(0.1)),
                tick_p90_us: round1(at(0.9)),
                ticks: TICKS,
                steal_percent: window.steal_percent().get(cpu).copied().unwrap_or(0.0),
                mhz: cpu_mhz(cpu),
                load_generator,
                foreign_percent,
            })
        })
        .map_err(|e| format!("calibration: cannot start its thread: {e}"))?
        .join()
        .map_err(|_| "calibration: its thread panicked".to_string())?
}

/// This thread's `schedstat` (its time on a CPU so far).
fn thread_schedstat() -> Option<tickpack_sys::schedstat::SchedStat> {
    tickpack_sys::schedstat::parse_schedstat(
        &std::fs::read_to_string("/proc/thread-self/schedstat").ok()?,
    )
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Runs `n` ticks of the calibration world and returns each one's wall
/// time (the first ten, which warm caches, run but are not returned).
pub fn run_ticks(n: u32) -> Vec<Duration> {
    let cfg = ServerConfig {
        bots: BOTS,
        tick_hz: tickpack_wire::TickRate::DEFAULT,
        seed: 7,
        ..ServerConfig::default()
    };
    let mut server = Server::new(cfg, [7; 32]);
    let interval = 10_000u64;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..u64::from(n) + 10 {
        let now = 1_000_000 + i * interval;
        let t = Instant::now();
        server.tick(now, now);
        server.drain_transmits(|_, _| {});
        let took = t.elapsed();
        if i >= 10 {
            out.push(took);
        }
    }
    out
}

/// The frequency the kernel reports for `cpu`, MHz.
fn cpu_mhz(cpu: usize) -> Option<f64> {
    let freq = std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"
    ))
    .ok()
    .and_then(|t| t.trim().parse::<f64>().ok())
    .map(|khz| khz / 1000.0);
    freq.or_else(|| {
        let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
        let mut current = None;
        for line in info.lines() {
            if let Some(v) = line.strip_prefix("processor") {
                current = v
                    .trim_start_matches([' ', '\t', ':'])
                    .trim()
                    .parse::<usize>()
                    .ok();
            }
            if current == Some(cpu) && line.starts_with("cpu MHz") {
                return line.split(':').nth(1)?.trim().parse().ok();
            }
        }
        None
    })
}

/// Runs the calibration ([`calibrate`]) on every server core and every
/// load generator's core (`load_cpus`: the players' speed, which a busy
/// neighbour there changes without touching the servers') and adds it to
/// the result's machine speed; says so, and what went wrong, to `obs`.
pub(crate) fn calibrate_into(
    result: &mut tickpack_report::bench::BenchResult,
    cpus: &[usize],
    load_cpus: &[usize],
    when: &str,
    obs: &mut dyn crate::Observer,
) {
    let speed =
        result
            .machine_speed
            .get_or_insert_with(|| tickpack_report::machine::MachineSpeed {
                workload: workload(),
                calibrations: vec![],
            });
    let cores = cpus.iter().map(|&c| (c, false)).chain(
        load_cpus
            .iter()
            .filter(|c| !cpus.contains(c))
            .map(|&c| (c, true)),
    );
    for (cpu, load_generator) in cores {
        match calibrate(cpu, when, load_generator) {
            Ok(c) => {
                obs.note(&format!(
                    "calibration {when}: CPU {cpu} ({}) ran a tick in {:.0} µs (p10 {:.0}, p90 {:.0}; steal {:.1} %{})",
                    if load_generator { "load generator" } else { "servers" },
                    c.tick_us,
                    c.tick_p10_us,
                    c.tick_p90_us,
                    c.steal_percent,
                    c.foreign_percent
                        .map(|f| format!(", other work {f:.1} %"))
                        .unwrap_or_default()
                ));
                speed.calibrations.push(c);
            }
            Err(e) => obs.note(&e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibration_runs_the_same_ticks_every_time() {
        assert_eq!(run_ticks(20).len(), 20);
        let c = calibrate(0, "before the first ladder", true).unwrap();
        assert_eq!((c.cpu, c.ticks, c.load_generator), (0, TICKS, true));
        assert!(c.tick_us > 0.0, "a tick takes time: {c:?}");
        assert!(
            c.tick_p10_us <= c.tick_us && c.tick_us <= c.tick_p90_us,
            "{c:?}"
        );
    }
}
