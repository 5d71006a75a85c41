//! How late does a fixed-rate tick loop start its ticks, and at what CPU cost?
//!
//! Runs the same loop with [`WaitMode::Plain`] (bare `clock_nanosleep`, the
//! baseline) and [`WaitMode::Precise`] (timerfd + poll + short adaptive spin)
//! in one process, alternating in rounds (ABBA order) so drift and noise from
//! other work on the machine hit both alike. Each tick is due on a fixed
//! schedule (`start + i * period`); lateness is `actual start - due`, recorded
//! in ns in an HdrHistogram, so a tick that overran its period shows up in the
//! next tick's lateness instead of vanishing (no coordinated omission). Every
//! tick does `--work-us` of busy work, standing in for the game simulation.
//!
//! Each round runs on a fresh thread (pinned with `--cpu`), because the
//! Precise waiter lowers its thread's timer slack and that must not leak into
//! the Plain rounds.
//!
//! ```text
//! cargo run --release -p tickpack-net --example tick_precision -- \
//!     --hz 100 --seconds 10 --work-us 1000 --cpu 1 [--rounds 10] [--lead-us N] [--json]
//! ```
//!
//! `--seconds` is the time per mode, split over the rounds, so the run takes
//! about twice that. Goals: p99 lateness precise/plain <= 0.2 and CPU
//! precise/plain <= 1.1. Exit code 0 either way: the goals are reported, not
//! enforced, because a shared machine can miss them through no fault of the code;
//! exit code 2 for bad flags or a failed set-up (pinning, socket, timer).

use std::os::fd::AsRawFd;

use anyhow::{bail, Context};
use base64::Engine as _;
use clap::Parser;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde_json::json;
use tickpack_net::{
    now_ns, parse_cpu_list, pin_current_thread, thread_cpu_time_ns, SocketOptions, UdpSocket,
    WaitMode, WaitStats, Waiter,
};

const P99_RATIO_GOAL: f64 = 0.2;
const CPU_RATIO_GOAL: f64 = 1.1;

#[derive(Parser, Debug)]
#[command(about = "Tick lateness and CPU cost of the Plain vs Precise waiter")]
struct Args {
    /// Tick rate in Hz.
    #[arg(long, default_value_t = 100)]
    hz: u32,
    /// Seconds of ticking per mode (split evenly over the rounds).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Busy work per tick in µs (the stand-in for the simulation).
    #[arg(long, default_value_t = 1000)]
    work_us: u64,
    /// CPU list to pin the tick thread to, e.g. "1" or "0-1". Unpinned if absent.
    #[arg(long)]
    cpu: Option<String>,
    /// Precise only: end the coarse sleep this many µs before the deadline
    /// (0 = one sleep straight to the spin margin). Default: the library's.
    #[arg(long)]
    lead_us: Option<u64>,
    /// Rounds per mode; modes alternate Plain, Precise, Precise, Plain, ...
    /// Many short rounds spread bursts of outside noise over both modes.
    #[arg(long, default_value_t = 10)]
    rounds: u32,
    /// Print JSON (with the serialized histograms) instead of a table.
    #[arg(long)]
    json: bool,
}

/// Validated settings.
#[derive(Debug, Clone)]
struct Config {
    hz: u32,
    period_ns: u64,
    work_ns: u64,
    ticks_per_round: u64,
    rounds: u32,
    cpus: Option<Vec<usize>>,
    lead_ns: u64,
}

impl Config {
    fn from_args(args: &Args) -> anyhow::Result<Self> {
        if args.hz == 0 || args.hz > 100_000 {
            bail!("--hz must be in 1..=100000, got {}", args.hz);
        }
        if args.rounds == 0 {
            bail!("--rounds must be at least 1");
        }
        if !(args.seconds > 0.0 && args.seconds.is_finite()) {
            bail!("--seconds must be positive, got {}", args.seconds);
        }
        let cpus = args
            .cpu
            .as_deref()
            .map(parse_cpu_list)
            .transpose()
            .context("--cpu")?;
        let period_ns = 1_000_000_000 / u64::from(args.hz);
        let work_ns = args.work_us * 1_000;
        if work_ns >= period_ns {
            bail!(
                "--work-us {} does not fit in a tick of {} µs at {} Hz",
                args.work_us,
                period_ns / 1_000,
                args.hz
            );
        }
        let total_ticks = (args.seconds * f64::from(args.hz)).round() as u64;
        let ticks_per_round = (total_ticks / u64::from(args.rounds)).max(1);
        Ok(Config {
            hz: args.hz,
            period_ns,
            work_ns,
            ticks_per_round,
            rounds: args.rounds,
            cpus,
            lead_ns: args
                .lead_us
                .map_or(tickpack_net::wait::DEFAULT_LEAD_NS, |us| us * 1_000),
        })
    }
}

/// What one round of one mode measured.
struct Round {
    lateness: Histogram<u64>,
    cpu_ns: u64,
    wall_ns: u64,
    stats: WaitStats,
    final_spin_margin_ns: u64,
}

/// Runs one round of `mode` on a fresh, pinned thread.
fn run_round(mode: WaitMode, cfg: &Config) -> anyhow::Result<Round> {
    let cfg = cfg.clone();
    std::thread::spawn(move || -> anyhow::Result<Round> {
        if let Some(cpus) = &cfg.cpus {
            pin_current_thread(cpus)?;
        }
        // A socket that never receives: Precise polls it as a server would.
        let sock = UdpSocket::bind("127.0.0.1:0".parse()?, &SocketOptions::default())?;
        let fds = [sock.as_raw_fd()];
        let mut waiter = Waiter::new(mode)?;
        waiter.set_lead_ns(cfg.lead_ns);
        let mut lateness = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
        let cpu0 = thread_cpu_time_ns();
        let wall0 = now_ns();
        let first_due = wall0 + cfg.period_ns;
        for i in 0..cfg.ticks_per_round {
            let due = first_due + i * cfg.period_ns;
            // Plain only returns Deadline; Precise might report the socket,
            // which nobody writes to, so keep waiting on anything else.
            while waiter.wait(&fds, due)? != tickpack_net::Wake::Deadline {}
            let started = now_ns();
            lateness.saturating_record((started - due).max(1));
            busy_work(started + cfg.work_ns);
        }
        Ok(Round {
            lateness,
            cpu_ns: thread_cpu_time_ns() - cpu0,
            wall_ns: now_ns() - wall0,
            stats: waiter.stats(),
            final_spin_margin_ns: waiter.spin_margin_ns(),
        })
    })
    .join()
    .map_err(|_| anyhow::anyhow!("{mode} round panicked"))?
}

/// Burns CPU until `until_ns`, doing arithmetic the optimizer cannot drop.
fn busy_work(until_ns: u64) {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    while now_ns() < until_ns {
        for _ in 0..64 {
            x = std::hint::black_box(x.rotate_left(5) ^ x.wrapping_mul(0x2545_f491_4f6c_dd1d));
        }
    }
    std::hint::black_box(x);
}

/// One mode's rounds merged.
struct Summary {
    mode: WaitMode,
    lateness: Histogram<u64>,
    cpu_ns: u64,
    wall_ns: u64,
    stats: WaitStats,
    rounds: Vec<Round>,
}

impl Summary {
    fn new(mode: WaitMode, rounds: Vec<Round>) -> anyhow::Result<Self> {
        let mut lateness = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
        let (mut cpu_ns, mut wall_ns, mut stats) = (0, 0, WaitStats::default());
        for r in &rounds {
            lateness.add(&r.lateness)?;
            cpu_ns += r.cpu_ns;
            wall_ns += r.wall_ns;
            stats.waits += r.stats.waits;
            stats.readable += r.stats.readable;
            stats.timer_wakes += r.stats.timer_wakes;
            stats.overshoots += r.stats.overshoots;
            stats.spin_ns += r.stats.spin_ns;
        }
        Ok(Summary {
            mode,
            lateness,
            cpu_ns,
            wall_ns,
            stats,
            rounds,
        })
    }

    fn cpu_pct(&self) -> f64 {
        cpu_pct(self.cpu_ns, self.wall_ns)
    }

    fn p_us(&self, q: f64) -> f64 {
        us(self.lateness.value_at_quantile(q))
    }

    fn spin_us_per_tick(&self) -> f64 {
        us(self.stats.spin_ns) / self.lateness.len().max(1) as f64
    }

    fn json(&self) -> anyhow::Result<serde_json::Value> {
        let mut raw = Vec::new();
        V2Serializer::new().serialize(&self.lateness, &mut raw)?;
        let rounds: Vec<_> = self
            .rounds
            .iter()
            .map(|r| {
                json!({
                    "ticks": r.lateness.len(),
                    "lateness_us": quantiles(&r.lateness),
                    "cpu_pct": cpu_pct(r.cpu_ns, r.wall_ns),
                    "spin_ns": r.stats.spin_ns,
                    "timer_overshoots": r.stats.overshoots,
                    "final_spin_margin_ns": r.final_spin_margin_ns,
                })
            })
            .collect();
        Ok(json!({
            "mode": self.mode.to_string(),
            "ticks": self.lateness.len(),
            "lateness_us": quantiles(&self.lateness),
            "cpu_pct": self.cpu_pct(),
            "cpu_ns": self.cpu_ns,
            "wall_ns": self.wall_ns,
            "spin_us_per_tick": self.spin_us_per_tick(),
            "timer_overshoots": self.stats.overshoots,
            "rounds": rounds,
            "lateness_ns_hdr_v2_base64": base64::engine::general_purpose::STANDARD.encode(raw),
        }))
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

fn cpu_pct(cpu_ns: u64, wall_ns: u64) -> f64 {
    100.0 * cpu_ns as f64 / wall_ns.max(1) as f64
}

fn quantiles(h: &Histogram<u64>) -> serde_json::Value {
    json!({
        "p50": us(h.value_at_quantile(0.5)),
        "p99": us(h.value_at_quantile(0.99)),
        "p999": us(h.value_at_quantile(0.999)),
        "max": us(h.max()),
        "mean": h.mean() / 1_000.0,
    })
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// Prints the error chain once; exit 2 for bad flags or a failed set-up.
fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tick_precision: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let cfg = Config::from_args(&args)?;
    let load_before = loadavg();

    let mut plain = Vec::new();
    let mut precise = Vec::new();
    for round in 0..cfg.rounds {
        let order = if round % 2 == 0 {
            [WaitMode::Plain, WaitMode::Precise]
        } else {
            [WaitMode::Precise, WaitMode::Plain]
        };
        for mode in order {
            let r = run_round(mode, &cfg).with_context(|| format!("round {round}, {mode}"))?;
            if !args.json {
                eprintln!(
                    "round {round} {mode:<7}: p99 {:>8.1} us  max {:>8.1} us  cpu {:>5.2} %",
                    us(r.lateness.value_at_quantile(0.99)),
                    us(r.lateness.max()),
                    cpu_pct(r.cpu_ns, r.wall_ns),
                );
            }
            match mode {
                WaitMode::Plain => plain.push(r),
                WaitMode::Precise => precise.push(r),
            }
        }
    }
    let plain = Summary::new(WaitMode::Plain, plain)?;
    let precise = Summary::new(WaitMode::Precise, precise)?;
    let p99_ratio = ratio(precise.p_us(0.99), plain.p_us(0.99));
    let cpu_ratio = ratio(precise.cpu_pct(), plain.cpu_pct());
    let p99_ok = p99_ratio <= P99_RATIO_GOAL;
    let cpu_ok = cpu_ratio <= CPU_RATIO_GOAL;

    if args.json {
        let out = json!({
            "schema": "tickpack-net/tick_precision/1",
            "tickpack_version": env!("CARGO_PKG_VERSION"),
            "config": {
                "hz": cfg.hz,
                "work_us": cfg.work_ns / 1_000,
                "ticks_per_round": cfg.ticks_per_round,
                "rounds": cfg.rounds,
                "cpus": cfg.cpus,
                "precise_lead_us": cfg.lead_ns / 1_000,
            },
            "context": context(),
            "loadavg_before": load_before,
            "loadavg_after": loadavg(),
            "modes": [plain.json()?, precise.json()?],
            "ratios": {
                "p99_lateness_precise_over_plain": p99_ratio,
                "cpu_precise_over_plain": cpu_ratio,
            },
            "goals": {
                "p99_ratio_max": P99_RATIO_GOAL,
                "cpu_ratio_max": CPU_RATIO_GOAL,
                "p99_ratio_met": p99_ok,
                "cpu_ratio_met": cpu_ok,
            },
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }

    println!(
        "\n{} Hz, {} us work/tick, {} rounds x {} ticks per mode, cpu {}, precise lead {} us",
        cfg.hz,
        cfg.work_ns / 1_000,
        cfg.rounds,
        cfg.ticks_per_round,
        args.cpu.as_deref().unwrap_or("unpinned"),
        cfg.lead_ns / 1_000,
    );
    println!(
        "load average (1 min) before {} after {}: other work on these CPUs shows up as lateness",
        load_before.as_deref().unwrap_or("?"),
        loadavg().as_deref().unwrap_or("?"),
    );
    println!(
        "{:<8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10}",
        "mode", "ticks", "p50 us", "p99 us", "p999 us", "max us", "cpu %", "spin us/t"
    );
    for s in [&plain, &precise] {
        println!(
            "{:<8} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>8.2} {:>10.1}",
            s.mode.to_string(),
            s.lateness.len(),
            s.p_us(0.5),
            s.p_us(0.99),
            s.p_us(0.999),
            us(s.lateness.max()),
            s.cpu_pct(),
            s.spin_us_per_tick(),
        );
    }
    let verdict = |ok| if ok { "met" } else { "MISSED" };
    println!(
        "p99 lateness precise/plain = {p99_ratio:.3}  (goal <= {P99_RATIO_GOAL}: {})",
        verdict(p99_ok)
    );
    println!(
        "cpu          precise/plain = {cpu_ratio:.3}  (goal <= {CPU_RATIO_GOAL}: {})",
        verdict(cpu_ok)
    );
    Ok(())
}

/// The 1-minute load average, to tell a quiet run from a contended one.
fn loadavg() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().next().map(str::to_owned)
}

/// Where the numbers came from.
fn context() -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_owned()).ok();
    let cpu_model = read("/proc/cpuinfo").and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
    });
    json!({
        "kernel": read("/proc/sys/kernel/osrelease"),
        "cpu_model": cpu_model,
        "online_cpus": tickpack_net::online_cpus(),
        "clocksource": read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
    })
}
