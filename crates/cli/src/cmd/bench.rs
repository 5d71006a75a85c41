//! `tickpack bench` and `tickpack report`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use tickpack_bench::{Before, BenchConfig, Compare, CostInputs, Observer};
use tickpack_report::bench::{BenchResult, BenchSettings, Ladder};
use tickpack_report::words;

use tickpack_host::supervisor::HostError;

use super::{
    check_cpus, check_dir_flag, parse_cpus, parse_duration, parse_factor, parse_non_negative,
    parse_percent, parse_positive, parse_positive_duration, CpuList,
};

use tickpack_bench::GameServer;

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
    /// tickpack's reference server against the real OpenArena server, each
    /// with its own players, bots and tick rate
    Game,
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
    /// Run the whole comparison (or the single ladder) this many times; the
    /// result keeps every repetition and reports the median and range of
    /// each variant's densities [default: 3 with --compare, else 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub repeat: Option<u32>,
    /// The game server the steps run: a built-in game (`tickpack games
    /// list`: reference, openarena, nexuiz) or a definition file's path
    /// (docs/games.md) [default: reference]. A game tickpack cannot play
    /// (no player protocol) is judged on its servers' run delay and its
    /// query latency. With --compare game, give two (the first is the
    /// ratios' baseline) [default: reference and openarena].
    #[arg(long, value_name = "NAME|FILE")]
    pub game: Vec<String>,
    /// A game variable, NAME=VALUE (repeatable): one of the definition's
    /// [variables], e.g. --set map=dm_aggressor (`tickpack games show GAME`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// OpenArena: the map (or a comma-separated rotation).
    #[arg(long, value_delimiter = ',', default_value = "oa_dm1")]
    pub map: Vec<String>,
    /// OpenArena: any cvar, CVAR=VALUE (repeatable), set after tickpack's.
    #[arg(long = "game-arg", value_name = "CVAR=VALUE")]
    pub game_arg: Vec<String>,
    /// Servers added per step [default: half the server cores, rounded
    /// up, at most 20: 1 on 1-2 server cores, 2 on 3-4, 4 on 8, 8 on 16,
    /// 20 from 39; --quick: 1]. The server cores are the CPUs not kept for
    /// the load generator (--load-cpus).
    #[arg(long)]
    pub tile_servers: Option<u32>,
    /// Emulated players per server [default: the game's, 12 for the
    /// reference server and openarena]. When the game limits players per
    /// source address (openarena: 4, ioquake3's burst of 10 connection
    /// requests per address), the bench adds enough source addresses on
    /// the host side of every network path (the top of --range; loopback
    /// on the process backend) and spreads each server's players over them.
    #[arg(long)]
    pub players_per_server: Option<u32>,
    /// Server-side bots per server [default: the game's: 0 for the
    /// reference server and openarena, 8 for nexuiz].
    #[arg(long)]
    pub bots: Option<u32>,
    /// Game work per tick of each server (see `tickpack server --help`).
    #[arg(long, default_value = "default")]
    pub cost: String,
    /// Ticks per second of every server [default: 100; openarena: its
    /// sv_fps, 20, the engine's default].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub tick_hz: Option<u32>,
    /// Measured time per step [default: 6s; --quick: 2s].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub step_duration: Option<Duration>,
    /// Unmeasured time at the start of each step [default: 1s; --quick:
    /// 0.5s; openarena: 2s; a defined game: its definition's warm-up].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Most steps per ladder [default: 12; --quick: 2].
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Steps to run past the first failure, to show the knee.
    #[arg(long, default_value_t = 0)]
    pub steps_past_failure: u32,
    /// Do not re-run a failing step to confirm it (by default a step fails
    /// only if it fails twice in a row: one noisy moment must not end a ladder).
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

/// Where the steps' hosts keep their records: the same place `host down
/// --name NAME` and the next bench look, so a bench killed with -9 is found.
fn default_run_dir(name: &str) -> PathBuf {
    if tickpack_sys::is_root() {
        return PathBuf::from(super::host::RUN_ROOT).join(name);
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("tickpack").join(name),
        None => std::env::temp_dir().join(format!("tickpack-bench-{}", std::process::id())),
    }
}

/// Removes the bench's run dir when the run ends (finished, failed or
/// interrupted), unless a host could not be cleaned up: then its
/// `state.json` stays for `host down` or the next bench.
struct RunDirGuard {
    dir: PathBuf,
    /// Cleared when the dir turned out to belong to a bench still running.
    armed: bool,
}

impl Drop for RunDirGuard {
    fn drop(&mut self) {
        if self.armed && !self.dir.join("state.json").exists() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn config(a: &Args) -> Result<BenchConfig, Failure> {
    // Checked first: the name becomes part of the run dir's path.
    if tickpack_sys::validate_host_name(&a.name).is_err() {
        return Err(fail(
            Code::Config,
            format!(
                "--name {:?}: 1-{} characters of a-z and 0-9",
                a.name,
                tickpack_sys::MAX_HOST_NAME
            ),
        ));
    }
    // The flags' value parsers checked ranges; what depends on several
    // flags or on the machine is checked here, before anything is created.
    let compare_game = matches!(a.compare, Some(CompareArg::Game));
    let names: Vec<&str> = match (compare_game, a.game.len()) {
        (true, 0) => vec!["reference", "openarena"],
        (true, 2) | (false, 1) => a.game.iter().map(String::as_str).collect(),
        (false, 0) => vec!["reference"],
        (true, n) => {
            return Err(fail(
                Code::Config,
                format!("--compare game compares two games: give --game twice (or none: the reference server and OpenArena), got {n}"),
            ))
        }
        (false, n) => {
            return Err(fail(
                Code::Config,
                format!("--game given {n} times: one game per run, or two with --compare game"),
            ))
        }
    };
    if compare_game && a.probe.is_some() {
        return Err(fail(
            Code::Config,
            "--probe asks one query protocol; the two games of --compare game do not share one",
        ));
    }
    let (defaults, game, qos) = game_choice(a, names[0])?;
    // --compare game: each game with its own defaults (flags given apply
    // to both), the first the ratios' baseline.
    let games = if compare_game {
        let mut v = vec![];
        for n in &names {
            let (d, server, qos) = game_choice(a, n)?;
            if d.players_per_server == 0 && d.bots == 0 && !a.allow_idle {
                return Err(fail(Code::Idle, idle_words(&server)));
            }
            v.push(d.variant(server, qos));
        }
        v
    } else {
        vec![]
    };
    let (tick_hz, mut players_per_server, bots) =
        (defaults.tick_hz, defaults.players_per_server, defaults.bots);
    if let Some(l) = &defaults.load {
        tickpack_game::def::check_load_command(&l.command)
            .map_err(|e| fail(Code::Config, format!("--load {:?}: {e}", l.command)))?;
        // The load command plays; its {players} are the step's players.
        players_per_server = l.players;
    }
    if players_per_server == 0 && bots == 0 && defaults.load.is_none() && !a.allow_idle {
        return Err(fail(Code::Idle, idle_words(&game)));
    }
    let online = tickpack_net::cpu::online_cpus();
    let load = match &a.load_cpus {
        Some(c) => {
            check_cpus("--load-cpus", &c.0)?;
            c.0.clone()
        }
        None if online.len() >= 2 => vec![online[0]],
        None => online.clone(),
    };
    // The servers run on every online CPU the load generator does not
    // (all of them on a machine of one CPU).
    let server_cores = match online.iter().filter(|c| !load.contains(c)).count() {
        0 => online.len(),
        n => n,
    };
    let settings = BenchSettings {
        game: game.name().into(),
        game_settings: game_settings(&game),
        tile_servers: a.tile_servers.unwrap_or(if a.quick {
            1
        } else {
            default_tile_servers(server_cores)
        }),
        players_per_server,
        bots_per_server: bots,
        tick_hz,
        cost: a.cost.clone(),
        step_duration_s: a
            .step_duration
            .map_or(if a.quick { 2.0 } else { 6.0 }, |d| d.as_secs_f64()),
        warmup_s: defaults.warmup_s,
        max_steps: a.max_steps.unwrap_or(if a.quick { 2 } else { 12 }),
        steps_past_failure: a.steps_past_failure,
        confirm_failures: !a.no_confirm,
        max_steal_percent: (a.max_steal < 100.0).then_some(a.max_steal),
        max_foreign_percent: (a.max_foreign < 100.0).then_some(a.max_foreign),
        steal_retries: a.steal_retries,
        headroom_target: a.headroom / 100.0,
        qos,
        compare: compare_of(a.compare).as_str().into(),
        project_cores: a.project_cores,
        allow_idle: a.allow_idle,
        load: defaults.load.clone(),
        probe: a
            .probe
            .map(|p| p.to_string())
            .or_else(|| default_probe(&game)),
    };
    if a.cost.parse::<tickpack_sim::world::CostProfile>().is_err() {
        return Err(fail(
            Code::Config,
            format!(
                "--cost {:?}: expected light, default, heavy or a factor",
                a.cost
            ),
        ));
    }
    let backend = a
        .backend
        .as_deref()
        .map(str::parse::<tickpack_host::fleet::Backend>)
        .transpose()
        .map_err(|e| fail(Code::Config, e))?;
    let net = a
        .net
        .parse()
        .map_err(|e| fail(Code::Config, format!("--net: {e}")))?;
    check_source_addr_room(a, &settings, &game, backend, net)?;
    // The last step's players each hold a socket in this process.
    let most_players = u64::from(settings.max_steps)
        * u64::from(settings.tile_servers)
        * u64::from(settings.players_per_server);
    super::players::check_file_limit(
        &format!("the last step's {most_players} players (--max-steps x --tile-servers x --players-per-server)"),
        usize::try_from(most_players).unwrap_or(usize::MAX),
    )?;
    check_dir_flag("--out", &a.out)?;
    if let Some(d) = &a.run_dir {
        check_dir_flag("--run-dir", d)?;
    }
    if let Some(w) = a.warmup {
        if w > Duration::from_secs(3600) {
            return Err(fail(Code::Config, "--warmup must be at most 1h"));
        }
    }
    let before = before(a)?;
    Ok(BenchConfig {
        settings,
        out_dir: a.out.clone(),
        compare: compare_of(a.compare),
        backend,
        net,
        load_generator_cpus: load,
        power: tickpack_bench::power::PowerConfig {
            command: a.power_command.clone(),
            idle_watts: a.idle_watts,
            max_watts: a.max_watts,
            ..Default::default()
        },
        before,
        exe: std::env::current_exe().context("finding the tickpack binary")?,
        run_dir: a
            .run_dir
            .clone()
            .unwrap_or_else(|| default_run_dir(&a.name)),
        host_name: a.name.clone(),
        range: a.range.clone(),
        game,
        batch: a.batch.clone(),
        games,
        repeat: a.repeat.unwrap_or(if a.compare.is_some() {
            tickpack_bench::DEFAULT_COMPARE_REPEAT
        } else {
            1
        }),
    })
}

/// The most servers a default tile has: 12 default steps of it stay within
/// the 250 servers a ladder may run.
pub const MAX_DEFAULT_TILE: u32 = 20;
const _: () = assert!(12 * MAX_DEFAULT_TILE <= 250);

/// The default `--tile-servers` on `server_cores` server cores: half of
/// them, rounded up, at most [`MAX_DEFAULT_TILE`]. One server per step on
/// a small machine (a first tile of 3 on one server core failed QoS on a
/// busy 2-vCPU machine before the ladder could say anything), and a ladder
/// of 12 steps that can still reach the limit of a big one.
pub fn default_tile_servers(server_cores: usize) -> u32 {
    u32::try_from(server_cores.div_ceil(2))
        .unwrap_or(u32::MAX)
        .clamp(1, MAX_DEFAULT_TILE)
}

/// The "before" from the flags: none, the servers alone (a ratio), or
/// with every cost input (a ratio and the cost). Some cost flags without
/// the rest is a configuration error naming the missing ones: a figure the
/// user did not give is never made up.
fn before(a: &Args) -> Result<Option<Before>, Failure> {
    let cost_flags = [
        ("--before-watts", a.before_watts.is_some()),
        ("--machines", a.machines.is_some()),
        ("--price-per-kwh", a.price_per_kwh.is_some()),
        ("--currency", a.currency.is_some()),
    ];
    let given: Vec<&str> = cost_flags.iter().filter(|f| f.1).map(|f| f.0).collect();
    let mut missing: Vec<&str> = cost_flags.iter().filter(|f| !f.1).map(|f| f.0).collect();
    if a.before_servers.is_none() {
        missing.insert(0, "--before-servers");
    }
    if !given.is_empty() && !missing.is_empty() {
        return Err(fail(
            Code::Config,
            format!(
                "the cost figures need what your machines run and draw today: {} given, {} missing",
                given.join(", "),
                missing.join(", ")
            ),
        ));
    }
    let Some(servers) = a.before_servers else {
        return Ok(None);
    };
    let cost = match (a.before_watts, a.machines, a.price_per_kwh, &a.currency) {
        (Some(before_watts), Some(machines), Some(price_per_kwh), Some(currency)) => {
            Some(CostInputs {
                before_watts,
                machines,
                price_per_kwh,
                currency: currency.clone(),
                currency_rate: a.currency_rate,
                hours_per_year: 8760.0,
            })
        }
        _ => None,
    };
    Ok(Some(Before { servers, cost }))
}

fn compare_of(c: Option<CompareArg>) -> Compare {
    match c {
        None => Compare::None,
        Some(CompareArg::Placement) => Compare::Placement,
        Some(CompareArg::Backend) => Compare::Backend,
        Some(CompareArg::Game) => Compare::Game,
        Some(CompareArg::Guard) => Compare::Guard,
    }
}

/// Refuses, before any step, a range that cannot hold the source
/// addresses the players need (the game's limit per address) beside the
/// last step's servers (netns; loopback has room for them).
fn check_source_addr_room(
    a: &Args,
    settings: &BenchSettings,
    game: &GameServer,
    backend: Option<tickpack_host::fleet::Backend>,
    net: tickpack_host::netpath::NetKind,
) -> Result<(), Failure> {
    let n = tickpack_bench::game::source_addrs_for(game, settings.players_per_server);
    if n == 0 || backend == Some(tickpack_host::fleet::Backend::Process) {
        return Ok(());
    }
    let range = a.range.as_deref().unwrap_or("198.18.0.0/16");
    let last = settings.max_steps.saturating_mul(settings.tile_servers);
    tickpack_host::netpath::AddrPlan::parse(range)
        .and_then(|p| p.with_sources(net, n))
        .and_then(|p| p.check(net, last))
        .map_err(|e| {
            fail(
                Code::Config,
                format!(
                    "--range {range}: {n} source addresses for {} players per server (at most {} per address) and {last} servers: {e}",
                    settings.players_per_server,
                    tickpack_bench::game::per_source_limit(game).unwrap_or(0)
                ),
            )
        })
}

/// A game's players, bots, tick and warm-up: the flags when given, else
/// the game's own defaults.
struct GameDefaults {
    tick_hz: u32,
    players_per_server: u32,
    bots: u32,
    warmup_s: f64,
    /// The load command (`--load`, else the definition's `[load]`).
    load: Option<tickpack_report::bench::LoadSettings>,
}

/// The load command of a run: `--load` (with `--players-per-server`, else
/// `players` as `{players}`), else the definition's `[load]`.
fn load_settings(
    a: &Args,
    def: &tickpack_game::GameDef,
    players: u32,
) -> Option<tickpack_report::bench::LoadSettings> {
    let (command, players) = match (&a.load, &def.load) {
        (Some(c), _) => (c.clone(), a.players_per_server.unwrap_or(players)),
        (None, Some(l)) => (
            l.command.clone(),
            a.players_per_server.unwrap_or(u32::from(l.players)),
        ),
        (None, None) => return None,
    };
    Some(tickpack_report::bench::LoadSettings { command, players })
}

impl GameDefaults {
    /// From the flags, else the game's definition (`games/*.toml`).
    fn of(a: &Args, def: &tickpack_game::GameDef, oa: bool) -> Self {
        GameDefaults {
            tick_hz: a.tick_hz.unwrap_or(u32::from(def.tick.hz)),
            players_per_server: a
                .players_per_server
                .unwrap_or(u32::from(def.players.default)),
            bots: a.bots.unwrap_or(u32::from(def.bots.default)),
            warmup_s: a.warmup.map_or(
                match (oa, a.quick) {
                    (false, true) => 0.5,
                    _ => def.ready.warmup_s,
                },
                |d| d.as_secs_f64(),
            ),
            load: load_settings(a, def, u32::from(def.players.default)),
        }
    }

    /// One variant of `--compare game`.
    fn variant(
        &self,
        server: GameServer,
        qos: tickpack_report::bench::QosLimits,
    ) -> tickpack_bench::GameVariant {
        tickpack_bench::GameVariant {
            game_settings: game_settings(&server),
            probe: default_probe(&server),
            server,
            players_per_server: self.players_per_server,
            bots_per_server: self.bots,
            tick_hz: self.tick_hz,
            warmup_s: self.warmup_s,
            qos,
        }
    }
}

/// The QoS limits from the flags, defaults following the tick rate.
fn qos_limits(a: &Args, tick_hz: u32) -> Result<tickpack_report::bench::QosLimits, Failure> {
    let mut qos = tickpack_bench::verdict::default_limits(tick_hz);
    if let Some(ms) = a.qos_p99_ms {
        qos.p99_transaction_us = (ms * 1000.0) as u64;
    }
    if let Some(ms) = a.qos_tick_lateness_ms {
        qos.p99_tick_lateness_us = (ms * 1000.0) as u64;
    }
    qos.p99_relative_to_baseline = a.qos_relative;
    qos.max_snapshot_loss = a.qos_loss_percent / 100.0;
    qos.p99_frame_budget = a.qos_frame_budget;
    if let Some(ms) = a.qos_query_p99_ms {
        if a.probe.is_none() {
            return Err(fail(
                Code::Config,
                "--qos-query-p99-ms needs --probe q3|a2s (the query latency it limits)",
            ));
        }
        qos.p99_query_us = Some(((ms * 1000.0) as u64).max(1));
    }
    Ok(qos)
}

/// The game server of every step (the reference server or OpenArena,
/// from its built-in definition), checked on this machine (program
/// installed, maps present) before anything is created.
fn game_server(
    a: &Args,
    def: tickpack_game::GameDef,
    oa: bool,
    d: &GameDefaults,
) -> Result<GameServer, Failure> {
    let compare_game = matches!(a.compare, Some(CompareArg::Game));
    let defaults_changed = a.map != ["oa_dm1"] || !a.game_arg.is_empty();
    let config = |m: String| fail(Code::Config, m);
    let mut settings = tickpack_game::GameSettings::defaults(&def);
    settings.tick_hz = u16::try_from(d.tick_hz).unwrap_or(u16::MAX);
    settings.bots = u16::try_from(d.bots).unwrap_or(u16::MAX);
    settings.players = u16::try_from(d.players_per_server).unwrap_or(u16::MAX);
    if !oa {
        if defaults_changed && !compare_game {
            return Err(config(
                "--map and --game-arg are OpenArena settings: add --game openarena".into(),
            ));
        }
        settings
            .set(&def, &format!("cost={}", a.cost))
            .map_err(|e| config(format!("--cost: {e}")))?;
        return Ok(GameServer::new(def, settings));
    }
    // With --compare game, --cost is the reference variant's.
    if a.cost != "default" && !compare_game {
        return Err(config(
            "--cost is the reference server's game work; OpenArena's is its own (use --bots)"
                .into(),
        ));
    }
    if !a.game_arg.is_empty() {
        return Err(config(
            "--game-arg: OpenArena is launched from games/openarena.toml now; set its variables with --set NAME=VALUE".into(),
        ));
    }
    settings
        .set(&def, &format!("map={}", a.map.join(",")))
        .map_err(|e| config(format!("--map: {e}")))?;
    let server = GameServer::new(def, settings);
    server
        .spec()
        .and_then(|_| server.check_system())
        .map_err(config)?;
    Ok(server)
}

/// One game of the run from `--game NAME|FILE`: its defaults (the flags
/// given apply), its server and its QoS limits. The reference server and
/// OpenArena keep their typed launchers; every other game is launched from
/// its definition.
fn game_choice(
    a: &Args,
    arg: &str,
) -> Result<(GameDefaults, GameServer, tickpack_report::bench::QosLimits), Failure> {
    let (def, source) = super::games::load(arg)?;
    let built_in = matches!(source, tickpack_game::Source::BuiltIn(_));
    let oa = built_in && def.name == "openarena";
    if built_in && (oa || def.name == "reference") {
        let defaults = GameDefaults::of(a, &def, oa);
        let game = game_server(a, def, oa, &defaults)?;
        let qos = qos_limits(a, defaults.tick_hz)?;
        Ok((defaults, game, qos))
    } else {
        defined_game(a, def)
    }
}

/// The query a game is judged on when it has no players: its own
/// definition's, probed by default.
fn default_probe(game: &GameServer) -> Option<String> {
    let def = &game.def;
    if game.player_protocol().is_some() {
        return None;
    }
    match def.query.protocol {
        tickpack_game::QueryProtocol::Q3 => Some("q3".into()),
        tickpack_game::QueryProtocol::A2s => Some("a2s".into()),
        tickpack_game::QueryProtocol::Gamedig => {
            def.query.gamedig_protocol().map(|g| g.probe_name())
        }
        _ => None,
    }
}

/// A game launched from its definition: its defaults, the flags given,
/// checked on this machine (program installed) before anything is created.
fn defined_game(
    a: &Args,
    def: tickpack_game::GameDef,
) -> Result<(GameDefaults, GameServer, tickpack_report::bench::QosLimits), Failure> {
    let config = |m: String| fail(Code::Config, format!("--game {}: {m}", def.name));
    // With --compare game, OpenArena's and the reference server's own
    // flags are theirs.
    let compare_game = matches!(a.compare, Some(CompareArg::Game));
    if !compare_game && (a.map != ["oa_dm1"] || !a.game_arg.is_empty()) {
        return Err(config(
            "--map and --game-arg are OpenArena's; set a game variable with --set NAME=VALUE"
                .into(),
        ));
    }
    if a.cost != "default" && !compare_game {
        return Err(config("--cost is the reference server's game work".into()));
    }
    let mut settings = tickpack_game::GameSettings::defaults(&def);
    for v in &a.set {
        settings.set(&def, v).map_err(&config)?;
    }
    let playable = def.players.protocol != tickpack_game::PlayerProtocol::None;
    let load = load_settings(a, &def, 0);
    if let Some(n) = a
        .players_per_server
        .filter(|&n| n > 0 && !playable && load.is_none())
    {
        return Err(config(format!(
            "--players-per-server {n}: tickpack has no players for this game (its steps are judged on run delay and query latency)"
        )));
    }
    if let Some(t) = a.tick_hz {
        settings.tick_hz = u16::try_from(t).unwrap_or(u16::MAX);
    }
    if let Some(b) = a.bots {
        settings.bots = u16::try_from(b).unwrap_or(u16::MAX);
    }
    let defaults = GameDefaults {
        tick_hz: u32::from(settings.tick_hz),
        players_per_server: if playable {
            a.players_per_server
                .unwrap_or(u32::from(def.players.default))
        } else {
            0
        },
        bots: u32::from(settings.bots),
        warmup_s: a.warmup.map_or(def.ready.warmup_s, |d| d.as_secs_f64()),
        load,
    };
    def.server_spec(&settings).map_err(&config)?;
    if let Some(why) = tickpack_game::source::missing_program(&def) {
        return Err(fail(Code::Config, why));
    }
    // The transaction limit follows the snapshots a player sees: one a tick,
    // or fewer where the definition says so (Teeworlds: every second tick).
    let snapshot_hz = def
        .players
        .snapshot_hz
        .map_or(defaults.tick_hz, |h| u32::from(h).min(defaults.tick_hz));
    let mut qos = qos_limits(a, defaults.tick_hz)?;
    if a.qos_p99_ms.is_none() && snapshot_hz < defaults.tick_hz {
        qos.p99_transaction_us =
            tickpack_bench::verdict::default_limits(snapshot_hz).p99_transaction_us;
    }
    if !playable {
        let judged = tickpack_report::qos::default_limits_without_players(defaults.tick_hz);
        qos.p99_run_delay_us = judged.p99_run_delay_us;
        qos.p99_query_us = qos.p99_query_us.or(match def.query.protocol {
            tickpack_game::QueryProtocol::Q3
            | tickpack_game::QueryProtocol::A2s
            | tickpack_game::QueryProtocol::Gamedig => judged.p99_query_us,
            _ => None,
        });
    }
    let mut settings = settings;
    settings.players = u16::try_from(defaults.players_per_server).unwrap_or(u16::MAX);
    let game = GameServer::new(def, settings);
    Ok((defaults, game, qos))
}

/// The game's settings and versions as result.json records them.
fn game_settings(game: &GameServer) -> tickpack_report::game_settings::GameSettings {
    use tickpack_report::game_settings::GameSettings;
    let packages = |names: &[&str]| {
        names
            .iter()
            .filter_map(|p| Some((p.to_string(), package_version(p)?)))
            .collect()
    };
    let (def, settings) = (&game.def, &game.settings);
    GameSettings {
        tick_hz: Some(u32::from(settings.tick_hz)),
        bots: Some(u32::from(settings.bots)),
        variables: settings.variables.clone(),
        packages: packages(&def.packages.iter().map(String::as_str).collect::<Vec<_>>()),
        ..Default::default()
    }
}

/// The installed version of a Debian package, if dpkg knows it.
fn package_version(package: &str) -> Option<String> {
    let out = std::process::Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", package])
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !v.is_empty()).then_some(v)
}

/// Progress on stderr: a bar when it is a terminal, one line per step otherwise.
struct Progress {
    bar: Option<ProgressBar>,
    /// The run repeats: say which repetition a step belongs to.
    repeated: bool,
}

impl Observer for Progress {
    fn step_started(&mut self, ladder: &str, index: u32, servers: u32) {
        let msg = format!("{ladder}: step {index}, {}", words::servers(servers));
        match &self.bar {
            Some(b) => b.set_message(msg),
            None => eprintln!("bench: {msg} ..."),
        }
    }
    fn repetition_started(&mut self, repetition: u32, of: u32) {
        self.note(&format!("repetition {repetition} of {of}"));
    }
    fn step_finished(&mut self, ladder: &Ladder) {
        let Some(s) = ladder.steps.last() else { return };
        // A game without players: its run delay leads, not a transaction
        // latency nobody measured.
        let latency = match (&s.run_delay_us, s.players) {
            (Some(rd), 0) => format!("run delay p99 {:.2} ms", rd.p99 as f64 / 1000.0),
            (None, 0) => "run delay not sampled".to_string(),
            _ => format!("p99 {:.2} ms", s.transaction_latency_us.p99 as f64 / 1000.0),
        };
        let line = format!(
            "{}: {} {} ({latency}, servers' CPU {:.0}%{}{}){}",
            ladder_title(ladder, self.repeated),
            words::servers(s.servers),
            s.verdict.as_str().to_uppercase(),
            s.cpu.servers_busy_percent,
            s.query_latency_us.map_or(String::new(), |q| format!(
                ", query p99 {:.2} ms",
                q.p99 as f64 / 1000.0
            )),
            step_disturbance(s),
            if s.failures.is_empty() {
                String::new()
            } else {
                format!(": {}", s.failures.join("; "))
            }
        );
        match &self.bar {
            Some(b) => {
                b.inc(1);
                b.println(line);
            }
            None => eprintln!("bench: {line}"),
        }
    }
    fn note(&mut self, msg: &str) {
        match &self.bar {
            Some(b) => b.println(format!("bench: {msg}")),
            None => eprintln!("bench: {msg}"),
        }
    }
}

pub fn run(a: Args) -> Result<(), Failure> {
    let cfg = config(&a)?;
    cfg.validate().map_err(bench_failure)?;
    // The results' directory is made before anything is said or started:
    // one that cannot be made is a bad flag, not a lost measurement.
    std::fs::create_dir_all(&cfg.out_dir).map_err(|e| {
        fail(
            Code::Config,
            format!("--out {}: cannot create it: {e}", cfg.out_dir.display()),
        )
    })?;
    // A run dir given by hand that already held something is left alone.
    let mut run_dir = (a.run_dir.is_none() || !cfg.run_dir.exists()).then(|| RunDirGuard {
        dir: cfg.run_dir.clone(),
        armed: true,
    });
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let ladders = cfg.plan().specs.len() as u64;
    let steps = u64::from(cfg.settings.max_steps) * ladders * u64::from(cfg.repeat);
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(steps);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} steps (at most) {msg}",
            )
            .expect("static template"),
        );
        b.enable_steady_tick(Duration::from_millis(200));
        b
    });
    let mut progress = Progress {
        bar,
        repeated: cfg.repeat > 1,
    };
    eprintln!(
        "tickpack bench: tiles of {} x {} players, {} s per step, load generator on CPU {:?}; results in {}",
        words::servers(cfg.settings.tile_servers),
        cfg.settings.players_per_server,
        cfg.settings.step_duration_s,
        cfg.load_generator_cpus,
        cfg.out_dir.display()
    );
    if cfg.compare != Compare::None || cfg.repeat > 1 {
        eprintln!(
            "tickpack bench: {} variant{}, steps interleaved, {} repetition{}",
            ladders,
            if ladders == 1 { "" } else { "s" },
            cfg.repeat,
            if cfg.repeat == 1 { "" } else { "s" }
        );
    }
    let result = tickpack_bench::run(&cfg, &stop, &mut progress);
    if let Some(b) = &progress.bar {
        b.finish_and_clear();
    }
    if let (Err(tickpack_bench::BenchError::Host(HostError::AlreadyRunning { .. })), Some(g)) =
        (&result, run_dir.as_mut())
    {
        g.armed = false;
    }
    let result = result.map_err(bench_failure)?;
    let html = tickpack_report::html::render(&[("result.json".to_string(), result.clone())]);
    let report = cfg.out_dir.join("report.html");
    tickpack_report::write_atomic(&report, html.as_bytes())?;
    print_summary(&result);
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
    if first_step_always_failed(&result) {
        return Err(fail(Code::QosFailed, first_step_failed_words(&result)));
    }
    Ok(())
}

/// Why a run would measure idle servers, and what to give instead.
fn idle_words(game: &GameServer) -> String {
    let name = game.name();
    let mut give = vec![];
    let def = &game.def;
    if def.players.protocol != tickpack_game::PlayerProtocol::None {
        give.push(format!(
            "emulated players (--players-per-server N, up to {})",
            def.slots
        ));
    }
    if def.bots_max() > 0 {
        give.push(format!(
            "server-side bots (--bots N, up to {})",
            def.bots_max()
        ));
    }
    give.push(
        "a load command of your own (`[load]` in the game's definition; docs/games.md)".into(),
    );
    format!(
        "--game {name}: nothing would load its servers (no emulated players, no bots, no load command), so every step would measure idle servers and any servers-per-core figure would mean nothing. Give {}; or --allow-idle to measure the idle footprint on purpose",
        give.join(", or ")
    )
}

/// What a failed first step means and what to try next: the settings that
/// made the tile, and the flags that shrink it, in the order worth trying.
fn first_step_failed_words(r: &BenchResult) -> String {
    let s = &r.settings;
    let first = r.ladders.first().and_then(|l| l.steps.first());
    let mut tries = vec![];
    if s.tile_servers > 1 {
        tries.push(format!(
            "--tile-servers 1 (the first step ran {} servers at once)",
            s.tile_servers
        ));
    }
    if first.is_some_and(|st| st.cpu.worst_steal() >= 1.0) {
        tries.push("a quieter machine: the hypervisor ran other guests during the step".into());
    } else {
        tries.push(
            "a quieter machine: stop other work on it (a package install, a build) and run again"
                .into(),
        );
    }
    if s.players_per_server > 1 {
        tries.push(format!(
            "fewer players (--players-per-server {})",
            (s.players_per_server / 2).max(1)
        ));
    }
    tries.push("looser limits, if yours allow it (--qos-p99-ms, --qos-tick-lateness-ms)".into());
    let missed = first
        .map(|st| st.failures.join("; "))
        .filter(|f| !f.is_empty())
        .map_or(String::new(), |f| format!(" ({f})"));
    format!(
        "QoS failed already at the first step, {} server{}{missed}: this machine could not hold \
         one tile at these limits. Try: {}",
        s.tile_servers,
        if s.tile_servers == 1 { "" } else { "s" },
        tries.join("; ")
    )
}

/// The first variant's first step failed in every repetition: the machine
/// cannot hold one tile (one noisy repetition among passing ones is noise,
/// and the comparison says so).
fn first_step_always_failed(r: &BenchResult) -> bool {
    let Some(first) = r.ladders.first() else {
        return false;
    };
    r.ladders
        .iter()
        .filter(|l| l.label == first.label)
        .all(|l| l.steps.first().is_some_and(|s| s.verdict.is_fail()))
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

/// The consolidation ratio and what it is computed against, in words
/// below 1; what to pass when the result has none.
fn consolidation_line(ratio: Option<f64>, recommended: Option<u32>, before: Option<u32>) -> String {
    match (ratio, recommended, before) {
        (Some(_), Some(rec), Some(before)) => {
            tickpack_report::headline::consolidation_words(rec, before)
        }
        (Some(c), _, _) => format!("consolidation ratio {c:.2}:1 (its baseline was not recorded)"),
        (None, None, _) => "consolidation ratio: n/a (no recommended density)".into(),
        (None, Some(_), _) => "consolidation ratio: not computed; give the servers one of your \
             machines runs today (--before-servers N)"
            .into(),
    }
}

/// The headline: servers per server core, what it means for this machine
/// and the projected one, and its assumptions.
fn headline_lines(r: &BenchResult) -> String {
    match tickpack_report::headline::Headline::of(r) {
        Some(h) => {
            let mut s = format!(
                "{} at QoS within the headroom target\n",
                h.per_core_words().to_uppercase()
            );
            if let Some(d) = h.disturbed_words() {
                s += &format!("  {d}\n");
            }
            for line in h.machine_lines() {
                s += &format!("  {line}\n");
            }
            s += &format!("  assumptions: {}\n", h.assumptions());
            s
        }
        None => match tickpack_report::headline::idle_words(r) {
            Some(idle) => format!("NO DENSITY, THE SERVERS WERE IDLE\n  {idle}\n"),
            None => {
                "servers per server core: not reached (no step passed within the headroom target)\n"
                    .into()
            }
        },
    }
}

/// A ladder's heading: its label, and its repetition when the run had
/// several.
fn ladder_title(l: &Ladder, repeated: bool) -> String {
    match l.repetition {
        Some(n) if repeated => format!("{}, repetition {n}", l.label),
        _ => l.label.clone(),
    }
}

/// The comparison over the repetitions: per variant the median and range
/// of its densities, then every ratio with its range and whether the
/// variants can be told apart.
fn comparison_lines(c: &tickpack_report::comparison::Comparison) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ncomparison ({}): {} of {} repetition{} finished, steps interleaved",
        c.kind,
        c.repetitions_finished,
        c.repetitions,
        if c.repetitions == 1 { "" } else { "s" }
    );
    let width = c
        .variants
        .iter()
        .map(|v| v.label.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let _ = writeln!(
        out,
        "  {:<width$}  {:>14} {:>9}  {:>14} {:>9}  per repetition (maximum)",
        "variant", "maximum median", "range", "recomm. median", "range"
    );
    for v in &c.variants {
        let per: Vec<String> = v
            .max_servers
            .per_repetition
            .iter()
            .map(|x| x.map_or("-".into(), |x| format!("{x:.0}")))
            .collect();
        let _ = writeln!(
            out,
            "  {:<width$}  {:>14} {:>9}  {:>14} {:>9}  {}",
            v.label,
            v.max_servers.median_words(0),
            v.max_servers.range_words(0),
            v.recommended_servers.median_words(0),
            v.recommended_servers.range_words(0),
            per.join(" ")
        );
    }
    if !c.ratios.is_empty() {
        let _ = writeln!(out, "{}:", c.question());
        for line in c.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// The terminal summary: the headline first, then the ladders, the
/// comparison, the consolidation and the cost, the headline again last
/// (under a long table of steps).
pub fn print_summary(r: &BenchResult) {
    print!("{}", headline_lines(r));
    let repeated = r.comparison.as_ref().is_some_and(|c| c.repetitions > 1);
    for l in &r.ladders {
        println!("\n{} ({})", ladder_title(l, repeated), l.stopped);
        println!(
            "{:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>9} {:>8} {:>8}",
            "servers",
            "players",
            "verdict",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "tick p99",
            "CPU %",
            "watts"
        );
        for s in &l.steps {
            // No players, no transaction latency: n/a, never 0.
            let tl = |us: u64| {
                if s.transaction_latency_us.count == 0 {
                    "n/a".to_string()
                } else {
                    format!("{:.2}", us as f64 / 1000.0)
                }
            };
            println!(
                "{:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>9} {:>8.1} {:>8}",
                s.servers,
                s.players,
                s.verdict,
                tl(s.transaction_latency_us.p50),
                tl(s.transaction_latency_us.p99),
                tl(s.transaction_latency_us.p999),
                // A real game server does not report its ticks' lateness.
                if s.tick_lateness_us.count == 0 {
                    "n/a".to_string()
                } else {
                    format!("{:.2}", s.tick_lateness_us.p99 as f64 / 1000.0)
                },
                s.cpu.servers_busy_percent,
                s.power.as_ref().map_or("-".into(), |p| format!(
                    "{:.0}{}",
                    p.watts,
                    if p.source.is_measured() { "" } else { "*" }
                ))
            );
        }
        for s in &l.steps {
            if let Some(p) = &s.run_delay_us {
                println!(
                    "  {}: run delay (threads waiting for a CPU) p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {} samples",
                    words::servers(s.servers),
                    p.p50 as f64 / 1000.0,
                    p.p99 as f64 / 1000.0,
                    p.max as f64 / 1000.0,
                    p.count
                );
            }
            if let (Some(p), Some(q)) = (&s.query_latency_us, &s.queries) {
                println!(
                    "  {}: query latency (not transaction latency) p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {} of {} queries answered",
                    words::servers(s.servers),
                    p.p50 as f64 / 1000.0,
                    p.p99 as f64 / 1000.0,
                    p.max as f64 / 1000.0,
                    q.answered,
                    q.sent
                );
            }
        }
        for s in l
            .steps
            .iter()
            .filter(|s| !s.first_attempt_failures.is_empty())
        {
            println!(
                "  {}: first attempt failed ({}); second attempt {}",
                words::servers(s.servers),
                s.first_attempt_failures.join("; "),
                s.verdict
            );
        }
        println!(
            "maximum density {}; recommended (servers' CPU <= {:.0}%) {}",
            l.max_density_words(),
            r.settings.headroom_target * 100.0,
            l.recommended_servers
                .map_or("not reached".to_string(), words::servers)
        );
    }
    match &r.comparison {
        Some(c) => print!("{}", comparison_lines(c)),
        None => {
            if let Some(ratio) = r.comparison_ratio {
                println!("\ntickpack's placement fits {ratio:.2}x the servers the kernel's scheduling fits at the same QoS");
            }
        }
    }
    println!(
        "\n{}",
        consolidation_line(
            r.consolidation_ratio,
            r.recommended_servers,
            r.before_servers
        )
    );
    match &r.tco {
        Some(t) => {
            let cur = t.currency.as_deref().unwrap_or("(currency not recorded)");
            let i = &t.inputs;
            println!(
                "cost per year: {} machines -> {}, {:.0} -> {:.0} {cur}, saving {:.0} {cur} ({:.0}%)",
                t.before.machines,
                t.after.machines,
                t.before.annual_cost,
                t.after.annual_cost,
                t.savings.annual,
                t.savings.percent
            );
            println!(
                "  from: {} machines, {:.0} W each before, {:.2} {cur}/kWh x rate {} (given); \
                 {:.0} W each after ({} at the recommended step); ratio {:.2} (measured); \
                 8760 h a year; electricity only",
                i.machines,
                i.before_watts,
                i.price_per_kwh,
                i.currency_rate,
                i.after_watts,
                t.watts_source,
                i.ratio
            );
        }
        None => println!(
            "no cost figures: {}",
            tickpack_report::headline::why_no_cost(r)
        ),
    }
    if tickpack_report::headline::Headline::of(r).is_some() {
        print!("\n{}", headline_lines(r));
    }
    if r.ladders
        .iter()
        .flat_map(|l| &l.steps)
        .any(|s| s.power.as_ref().is_some_and(|p| !p.source.is_measured()))
    {
        println!("* modeled watts (no power meter found); see docs/methodology.md");
    }
}

/// What a step line says of the machine beside the servers: the worst
/// server core's foreign load (when recorded), the steal (from 1 %), and
/// whether the attempt that stands was disturbed past a limit.
fn step_disturbance(s: &tickpack_report::bench::Step) -> String {
    let mut out = String::new();
    if let Some(f) = &s.cpu.foreign_percent {
        out.push_str(&format!(", foreign {:.1}%", f.worst));
    }
    if let Some(n) = s.cpu.steal_note() {
        out.push_str(&format!(", {n}"));
    }
    if let Some(d) = &s.disturbed {
        out.push_str(&format!(", DISTURBED: {d}"));
    }
    out
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
    use super::{consolidation_line, first_step_always_failed, steal_percent, step_disturbance};
    use tickpack_report::bench::BenchResult;

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

    #[test]
    fn a_step_line_shows_the_foreign_load_and_a_disturbed_attempt() {
        let v: serde_json::Value = serde_json::from_str(include_str!(
            "../../../report/tests/fixtures/result-v1.json"
        ))
        .unwrap();
        let mut st: tickpack_report::bench::Step =
            serde_json::from_value(v["ladders"][0]["steps"][0].clone()).expect("a step");
        assert_eq!(step_disturbance(&st), "", "an old step says nothing");
        st.cpu.foreign_percent = Some(tickpack_report::bench::ForeignLoad::of_cores(
            &[0.0, 37.25],
            &[1],
        ));
        st.disturbed = Some("foreign 37.2% of CPU 1 (...), more than 5%".into());
        assert_eq!(
            step_disturbance(&st),
            ", foreign 37.2%, DISTURBED: foreign 37.2% of CPU 1 (...), more than 5%"
        );
    }

    #[test]
    fn qos_failed_at_the_first_step_needs_every_repetition_of_the_first_variant_to_fail() {
        let fail_pass = |first: [&str; 2]| -> BenchResult {
            let mut v: serde_json::Value = serde_json::from_str(include_str!(
                "../../../report/tests/fixtures/result-v1.json"
            ))
            .unwrap();
            let l0 = v["ladders"][0].clone();
            let ladders: Vec<serde_json::Value> = first
                .iter()
                .enumerate()
                .map(|(i, verdict)| {
                    let mut l = l0.clone();
                    l["repetition"] = (i as u64 + 1).into();
                    l["steps"][0]["verdict"] = (*verdict).into();
                    l
                })
                .collect();
            v["ladders"] = ladders.into();
            serde_json::from_value(v).unwrap()
        };
        assert!(first_step_always_failed(&fail_pass(["fail", "fail"])));
        assert!(!first_step_always_failed(&fail_pass(["fail", "pass"])));
    }

    #[test]
    fn consolidation_summary_names_before_servers_as_its_baseline() {
        let line = consolidation_line(Some(2.0), Some(12), Some(6));
        assert_eq!(
            line,
            "consolidation ratio 2.00:1 (12 servers per machine at the recommended density on this machine / 6 per machine before (--before-servers))"
        );
        // bench_printed_a_consolidation_ratio_below_one: 3 servers against
        // a hidden 6 printed "consolidation ratio 0.50:1".
        let line = consolidation_line(Some(0.5), Some(3), Some(6));
        assert!(line.starts_with("no consolidation:"), "{line}");
        assert!(!line.contains("0.50:1"), "{line}");
        // No before given: no ratio, and what to pass.
        let line = consolidation_line(None, Some(3), None);
        assert!(line.contains("--before-servers N"), "{line}");
    }

    #[test]
    fn the_default_tile_is_one_server_on_one_or_two_server_cores_and_grows_with_them() {
        // bench_default_tile_of_3_failed_on_a_small_machine.
        let tiles: Vec<u32> = [1, 2, 3, 4, 7, 8, 16, 39, 40, 255]
            .into_iter()
            .map(super::default_tile_servers)
            .collect();
        assert_eq!(tiles, [1, 1, 2, 2, 4, 4, 8, 20, 20, 20]);
        assert_eq!(super::default_tile_servers(0), 1);
    }

    #[test]
    fn a_failed_first_step_says_what_to_try_next() {
        let mut r: BenchResult = serde_json::from_str(include_str!(
            "../../../report/tests/fixtures/result-v1.json"
        ))
        .unwrap();
        r.settings.tile_servers = 3;
        r.settings.players_per_server = 12;
        let words = super::first_step_failed_words(&r);
        assert!(words.contains("Try: --tile-servers 1"), "{words}");
        assert!(words.contains("a quieter machine"), "{words}");
        assert!(words.contains("--players-per-server 6"), "{words}");
        r.settings.tile_servers = 1;
        let words = super::first_step_failed_words(&r);
        assert!(!words.contains("--tile-servers 1"), "{words}");
        assert!(words.contains("first step, 1 server"), "{words}");
    }

    #[test]
    fn the_terminal_summary_opens_with_servers_per_server_core() {
        let mut r: BenchResult = serde_json::from_str(include_str!(
            "../../../report/tests/fixtures/result-v1.json"
        ))
        .unwrap();
        r.recommended_servers = Some(3);
        r.cores.servers = vec![1];
        r.cores.load_generator = vec![0];
        r.cores.total = 2;
        r.settings.project_cores = Some(64);
        let text = super::headline_lines(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("3.00 SERVERS PER SERVER CORE"),
            "{text}"
        );
        assert_eq!(lines[1], "  this machine, on 1 server core: 3 servers");
        assert_eq!(lines[2], "  projected, on 64 server cores: 192 servers");
        assert!(
            lines[3].contains("load generator's 1 core of 2 excluded"),
            "{text}"
        );
    }
}
