//! `tickpack bench`: its flags (clap) and a call into the library. The
//! flags become the library's typed plan ([`request`],
//! [`tickpack_bench::plan`]), the run climbs its ladders
//! ([`tickpack_bench::run`]) with progress on stderr ([`progress`]), and
//! the result is rendered once per format by the report crate: the HTML
//! page and the terminal's text ([`tickpack_report::text`]).

mod progress;
mod request;
mod run_dir;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tickpack_bench::Compare;
use tickpack_host::supervisor::HostError;
use tickpack_report::{text, words};

use super::{
    parse_cpus, parse_duration, parse_factor, parse_non_negative, parse_percent, parse_positive,
    parse_positive_duration, CpuList,
};
use crate::exit::{fail, Code, Failure};

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum CompareArg {
    /// tickpack's placement (spread) against the kernel's (none), side by side
    Placement,
    /// process against netns veth, bridge and macvlan (root): the isolation cost
    Backend,
    /// with --batch: no batch, batch with no control, batch under
    /// SCHED_IDLE only, batch under the QoS guard (root)
    Guard,
    /// two games (--game twice), each with its own players, bots and tick
    /// rate [default: the first two built-in games tickpack can play]
    Game,
    /// with --tile: every player all the time (the static reservation), the
    /// curves at each server's own moments, and the curves in step: what
    /// the players' rhythm is worth
    Load,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A short ladder (1-server tiles, 2 steps, 2 s each): a first look, and tests.
    #[arg(long)]
    pub quick: bool,
    /// Directory for result.json and report.html.
    #[arg(long, default_value = "tickpack-results")]
    pub out: PathBuf,
    /// Also climb the ladder for a comparison, in the same run: the
    /// variants' steps interleaved (step k of every variant before step k+1
    /// of any), the whole comparison repeated (--repeat), every ratio
    /// reported with its range.
    #[arg(long, value_enum)]
    pub compare: Option<CompareArg>,
    /// Best-effort batch work beside the servers, e.g. "stress-ng --cpu 0
    /// --metrics-brief" (split on spaces; repeatable): its bogo-ops/s is the
    /// batch throughput. With --compare guard it runs in three of the four
    /// variants; without, the one ladder runs it under the guard (root).
    #[arg(long = "batch", value_name = "CMD")]
    pub batch: Vec<String>,
    /// A tile of several games whose players come and go (a TOML file, see
    /// docs/tiles.md; tiles/evening.toml ships): the ladder adds whole
    /// tiles, each member judged on its own limits in every window, and the
    /// headline is the density at the peak of the curves. Takes the place
    /// of --game and the per-game flags.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["game", "tile_servers", "players_per_server", "bots", "step_duration", "tick_hz"])]
    pub tile: Option<PathBuf>,
    /// Run the whole comparison (or the single ladder) this many times; the
    /// result keeps every repetition and reports the headline as the median
    /// with its range over the ladders, and each variant's densities alike
    /// [default: 3; --quick: 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub repeat: Option<u32>,
    /// The game server the steps run: a built-in game's name (`tickpack
    /// games list`) or a definition file's path (docs/games.md) [default:
    /// the first built-in game]. A game tickpack cannot play (no player
    /// protocol) is judged on its servers' run delay and its query
    /// latency. With --compare game, give two (the first is the ratios'
    /// baseline) [default: the first two built-in games with players].
    #[arg(long, value_name = "NAME|FILE")]
    pub game: Vec<String>,
    /// A game variable, NAME=VALUE (repeatable): one of the definition's
    /// [variables], e.g. --set map=dm_aggressor (`tickpack games show GAME`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Removed: a game's map is one of its variables, `--set map=NAME`.
    #[arg(long, hide = true, value_name = "NAME")]
    pub map: Vec<String>,
    /// Removed: a game's settings are its variables, `--set NAME=VALUE`.
    #[arg(long = "game-arg", hide = true, value_name = "CVAR=VALUE")]
    pub game_arg: Vec<String>,
    /// Servers added per step [default: half the server cores, rounded
    /// up, at most 20: 1 on 1-2 server cores, 2 on 3-4, 4 on 8, 8 on 16,
    /// 20 from 39; --quick: 1]. The server cores are the CPUs not kept for
    /// the load generator (--load-cpus).
    #[arg(long)]
    pub tile_servers: Option<u32>,
    /// Emulated players per server [default: the game's definition's].
    /// When the game limits players per source address (its definition's
    /// `[players] per_address`), the bench adds enough source addresses on
    /// the host side of every network path (the top of --range; loopback
    /// on the process backend) and spreads each server's players over them.
    #[arg(long)]
    pub players_per_server: Option<u32>,
    /// Server-side bots per server [default: the game's definition's].
    #[arg(long)]
    pub bots: Option<u32>,
    /// Game work per tick of each server (see `tickpack server --help`):
    /// shorthand for `--set cost=VALUE`, for a game with a `cost` variable.
    #[arg(long)]
    pub cost: Option<String>,
    /// Ticks per second of every server [default: the game's definition's].
    #[arg(long, value_parser = super::parse_tick_rate)]
    pub tick_hz: Option<tickpack_report::bench::TickRate>,
    /// Measured time per step [default: 6s; --quick: 2s].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub step_duration: Option<Duration>,
    /// Unmeasured time at the start of each step [default: the game's
    /// definition's warm-up; --quick: 0.5s for a game ready within 1s].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Most steps per ladder [default: 12; --quick: 2]. While the servers
    /// are far from the limit (server cores under 25 % busy, tick
    /// lateness, frame and run delay under half their limits) a step
    /// doubles the tiles, then grows
    /// halfway to where the cores would be full, and a failure is bisected,
    /// so a light game's limit is found within these steps; each step
    /// records why it ran its size.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// A tile a step, as before the ladder could grow faster: step N runs N
    /// tiles.
    #[arg(long)]
    pub fixed_steps: bool,
    /// Steps to run past the first failure, to show the knee.
    #[arg(long, default_value_t = 0)]
    pub steps_past_failure: u32,
    /// Do not re-run a failing step to confirm it (by default a failed step
    /// runs again and passes only if 2 of 3 attempts pass: one noisy moment
    /// must not end a ladder, nor one lucky one pass it).
    #[arg(long)]
    pub no_confirm: bool,
    /// Run a step again when a CPU lost more than this share of its measured
    /// window to steal (percent): on a virtual machine, the hypervisor ran
    /// other guests, and the step measured them, not the servers. Every
    /// step records its steal per CPU either way; 100 turns the reruns off.
    #[arg(long, default_value_t = 5.0, value_name = "PERCENT", value_parser = steal_percent)]
    pub max_steal: f64,
    /// Run a step again when processes other than the servers and tickpack
    /// used more than this share of a server core over its measured window
    /// (percent: another program's load would pass for the servers'). Every
    /// step records its foreign load per server core either way; 100 turns
    /// the reruns off. See docs/methodology.md for what is counted.
    #[arg(long, default_value_t = 5.0, value_name = "PERCENT", value_parser = steal_percent)]
    pub max_foreign: f64,
    /// Reruns of a step for steal or foreign load, at most (then the last
    /// attempt stands, flagged disturbed beside its verdict).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub steal_retries: u32,
    /// CPU busy target (percent of the server cores) for the recommended density.
    #[arg(long, default_value_t = 75.0, allow_hyphen_values = true, value_parser = parse_percent)]
    pub headroom: f64,
    /// QoS: p99 transaction latency limit in ms [default: one tick + 5 ms].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive)]
    pub qos_p99_ms: Option<f64>,
    /// QoS: p99 transaction latency limit relative to the one-tile step.
    #[arg(long, default_value_t = 1.5, allow_hyphen_values = true, value_parser = parse_factor)]
    pub qos_relative: f64,
    /// QoS: p99 tick lateness limit in ms [default: a quarter tick].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive)]
    pub qos_tick_lateness_ms: Option<f64>,
    /// QoS: largest share of snapshots lost, percent.
    #[arg(long, default_value_t = 0.1, allow_hyphen_values = true, value_parser = parse_percent)]
    pub qos_loss_percent: f64,
    /// QoS: p99 server frame time limit, as a share of the tick.
    #[arg(long, default_value_t = 0.5, allow_hyphen_values = true, value_parser = parse_positive)]
    pub qos_frame_budget: f64,
    /// Also ask every instance its game's query protocol (q3: `getinfo`;
    /// a2s: `A2S_INFO`; gamedig:NAME: a gamedig protocol) beside the
    /// players, one query per instance every 2 s, and record the round
    /// trips per step as `query_latency_us` (NOT transaction latency).
    #[arg(long, value_parser = super::probe::parse_protocol)]
    pub probe: Option<tickpack_probe::ProbeProtocol>,
    /// QoS: p99 query latency limit in ms (needs --probe) [default: not judged].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive)]
    pub qos_query_p99_ms: Option<f64>,
    /// Isolation backend: netns or process [default: netns as root, else process].
    #[arg(long)]
    pub backend: Option<String>,
    /// Network path for netns: veth (routed), bridge (software switch),
    /// macvlan or ipvlan (bypass); the default is `host up`'s too, so a host
    /// runs on the path its density was measured on.
    #[arg(long, default_value = "veth")]
    pub net: String,
    /// CPUs for the load generator [default: CPU 0 when there are 2+].
    #[arg(long, value_parser = parse_cpus)]
    pub load_cpus: Option<CpuList>,
    /// A command that prints the machine's watts (tried before RAPL and IPMI).
    #[arg(long)]
    pub power_command: Option<String>,
    /// Power model: watts idle (used when nothing measures power; labeled "modeled").
    #[arg(long, default_value_t = tickpack_bench::power::DEFAULT_IDLE_WATTS, allow_hyphen_values = true, value_parser = parse_non_negative)]
    pub idle_watts: f64,
    /// Power model: watts with every core busy.
    #[arg(long, default_value_t = tickpack_bench::power::DEFAULT_MAX_WATTS, allow_hyphen_values = true, value_parser = parse_positive)]
    pub max_watts: f64,
    /// A load command of yours, started for every server on the load
    /// generator's CPUs for each step, in a sandbox that reaches only that
    /// server (in place of tickpack's players and of the game's `[load]`).
    /// Placeholders: {ip} {port} {id} {players} (--players-per-server)
    /// {tick_hz} {warmup_s} {duration_s} {dir} {out} {tickpack}. One that
    /// does not exit 0 fails the step; one that writes {out} as a
    /// `tickpack players --json` result is judged on it like players
    /// (docs/games.md, "Bring your own load").
    #[arg(long, value_name = "CMD")]
    pub load: Option<String>,
    /// Measure servers with nothing to do on purpose (no players, no bots,
    /// no load command): their idle footprint (memory, wake-ups, run
    /// delay), said as such in the headline, never as a density. Without
    /// it such a run is refused, and a step whose servers turn out idle
    /// ends the ladder with the verdict `idle` (exit 7).
    #[arg(long)]
    pub allow_idle: bool,
    /// Also project the headline (servers per server core) to a machine
    /// with this many server cores: "on 64 server cores: M servers"
    /// (linear, rounded down, cores as fast as these).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub project_cores: Option<u32>,
    /// Before: servers one of your machines runs today. With it the result
    /// has a consolidation ratio (servers per machine here / this); without
    /// it, none [default: none].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub before_servers: Option<u32>,
    /// Cost: watts one of your machines draws today. The cost figures need
    /// --before-servers, --before-watts, --machines, --price-per-kwh and
    /// --currency, all given [default: none, no cost figures].
    #[arg(long, value_name = "W", allow_hyphen_values = true, value_parser = parse_positive)]
    pub before_watts: Option<f64>,
    /// Cost: machines you run today.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub machines: Option<u64>,
    /// Cost: electricity price per kWh, in the bill's currency.
    #[arg(long, value_name = "P", allow_hyphen_values = true, value_parser = parse_positive)]
    pub price_per_kwh: Option<f64>,
    /// Cost: the currency the costs are in, e.g. EUR (the bill's, or the
    /// one --currency-rate converts to).
    #[arg(long, value_name = "CODE")]
    pub currency: Option<String>,
    /// Cost: converts the bill's currency into --currency (1.49 turns EUR
    /// into USD at 1.49 USD per EUR).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = parse_positive)]
    pub currency_rate: f64,
    /// Run dir of the temporary hosts the steps bring up [default:
    /// /run/tickpack/<name> as root, else $XDG_RUNTIME_DIR/tickpack/<name>,
    /// else a temporary directory]. Removed at the end of the run.
    #[arg(long, hide = true)]
    pub run_dir: Option<PathBuf>,
    /// Host name of the steps' hosts (1-8 of a-z0-9): `host down --name`
    /// with it removes what a killed bench left; give two benches at once
    /// different names.
    #[arg(long, default_value = "bn")]
    pub name: String,
    /// Instance address range of the steps' hosts (netns) [default:
    /// 198.18.0.0/16, as `host up`]: a local-use range (`host up --help`);
    /// give another when a host of yours already uses that one.
    #[arg(long)]
    pub range: Option<String>,
}

pub fn run(a: Args) -> Result<(), Failure> {
    let cfg = request::config(&a)?;
    cfg.validate().map_err(bench_failure)?;
    // Under sudo: root given up here, before anything starts.
    super::sudo::give_up_root(&cfg.run_dir, Some(&cfg.out_dir))?;
    // The results' directory is made before anything is said or started:
    // one that cannot be made is a bad flag, not a lost measurement.
    std::fs::create_dir_all(&cfg.out_dir).map_err(|e| {
        fail(
            Code::Config,
            format!("--out {}: cannot create it: {e}", cfg.out_dir.display()),
        )
    })?;
    // A run dir given by hand that already held something is left alone.
    let mut run_dir =
        (a.run_dir.is_none() || !cfg.run_dir.exists()).then(|| run_dir::RunDirGuard {
            dir: cfg.run_dir.clone(),
            armed: true,
        });
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let ladders = cfg.plan().specs.len() as u64;
    let steps = u64::from(cfg.settings.max_steps) * ladders * u64::from(cfg.repeat);
    let mut progress =
        progress::Progress::new(steps, std::io::stderr().is_terminal(), cfg.repeat > 1);
    match &cfg.tile {
        Some(t) => {
            // A tile: its members, its curves' time, and how long the run
            // takes at most before it starts.
            eprintln!(
                "tickpack bench: tile {} of {} ({} s per step, {} s windows, warm-up {} s), load generator on CPU {:?}; results in {}",
                t.settings.name,
                t.members
                    .iter()
                    .map(|m| format!(
                        "{} {}{}",
                        m.count,
                        m.name,
                        if m.idle {
                            " (idle)".to_string()
                        } else if m.players > 0 {
                            format!(" x {} players", m.players)
                        } else {
                            format!(" x {} bots", m.bots)
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                t.step.as_secs_f64(),
                t.window.as_secs_f64(),
                t.warmup.as_secs_f64(),
                cfg.load_generator_cpus,
                cfg.out_dir.display()
            );
            eprintln!("tickpack bench: time is compressed: {}", t.settings.compression);
            let per_step = t.step.as_secs_f64() + t.warmup.as_secs_f64() + 10.0;
            eprintln!(
                "tickpack bench: at most {steps} steps of about {:.0} s: at most {:.0} min (a ladder ends at its first failure and the steps past it)",
                per_step,
                steps as f64 * per_step / 60.0
            );
        }
        None => eprintln!(
            "tickpack bench: tiles of {}, {}, {} s per step, load generator on CPU {:?}; results in {}",
            words::servers(cfg.settings.tile_servers),
            words::load_per_server(&cfg.settings),
            cfg.settings.step_duration_s,
            cfg.load_generator_cpus,
            cfg.out_dir.display()
        ),
    }
    if cfg.compare == Compare::None && cfg.repeat > 1 {
        eprintln!(
            "tickpack bench: {} ladders, one after the other; the headline is their median with its range",
            cfg.repeat
        );
    } else if cfg.compare != Compare::None {
        eprintln!(
            "tickpack bench: {} variant{}, steps interleaved, {} repetition{}",
            ladders,
            if ladders == 1 { "" } else { "s" },
            cfg.repeat,
            if cfg.repeat == 1 { "" } else { "s" }
        );
    }
    let result = tickpack_bench::run(&cfg, &stop, &mut progress);
    progress.finish();
    if let (Err(tickpack_bench::BenchError::Host(HostError::AlreadyRunning { .. })), Some(g)) =
        (&result, run_dir.as_mut())
    {
        g.armed = false;
    }
    let result = result.map_err(bench_failure)?;
    // The page names the run (game or tile, date, answer) itself; the
    // label is the result file it came from.
    let html = tickpack_report::html::render(&[("result.json".to_string(), result.clone())]);
    let report = cfg.out_dir.join("report.html");
    tickpack_report::write_atomic(&report, html.as_bytes())?;
    print!("{}", text::bench_summary(&result));
    println!(
        "results: {} and {}",
        cfg.out_dir.join("result.json").display(),
        report.display()
    );
    if !result.complete {
        return Err(fail(
            Code::Runtime,
            "interrupted: the finished steps are kept in result.json",
        ));
    }
    if let Some(idle) = tickpack_report::headline::idle_words(&result) {
        return Err(fail(Code::Idle, idle));
    }
    if text::first_step_always_failed(&result) {
        return Err(fail(
            Code::QosFailed,
            text::first_step_failed_words(&result),
        ));
    }
    Ok(())
}

fn bench_failure(e: tickpack_bench::BenchError) -> Failure {
    use tickpack_bench::BenchError as E;
    let code = match &e {
        E::Config(_) => Code::Config,
        E::Isolation(_) | E::Host(_) => Code::Isolation,
        E::Players(_) | E::Probe(_) | E::Report(_) => Code::Runtime,
    };
    Failure {
        code,
        error: e.into(),
    }
}

/// `--max-steal`, `--max-foreign`: a percentage, 0-100.
fn steal_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage (e.g. 5)"))?;
    if (0.0..=100.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("'{s}' is not between 0 and 100"))
    }
}

#[cfg(test)]
mod tests {
    use super::steal_percent;

    #[test]
    fn max_steal_takes_a_percentage_and_refuses_the_rest() {
        assert_eq!(steal_percent("5"), Ok(5.0));
        assert_eq!(steal_percent("2.5%"), Ok(2.5));
        assert!(steal_percent("101")
            .unwrap_err()
            .contains("between 0 and 100"));
        assert!(steal_percent("lots")
            .unwrap_err()
            .contains("not a percentage"));
    }
}
