//! The `tickpack bench` result document (`tickpack.bench/1`).
//!
//! Written to `DIR/result.json` atomically after every step, so Ctrl-C or a
//! crash keeps every finished step (`complete` stays `false` then). Each step
//! keeps its serialized histograms, so percentiles can be recomputed and
//! steps merged later.

use serde::{Deserialize, Serialize};
pub use tickpack_units::TickRate;

use crate::probe::QueryCounts;
use crate::system::SystemInfo;
use crate::verdict::Verdict;
use crate::{Measurements, Percentiles, PlayersHistograms};

pub use crate::power::{Power, PowerSourceKind};
pub use crate::tco::{Tco, TcoInputs, TcoSavings, TcoSide, WattsSource};

/// Schema id of `result.json`.
pub const BENCH_SCHEMA: &str = "tickpack.bench/1";

/// QoS limits a step must meet (all configurable; docs/methodology.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QosLimits {
    /// p99 in-game transaction latency, absolute (microseconds).
    pub p99_transaction_us: u64,
    /// p99 transaction latency relative to the one-tile baseline step.
    pub p99_relative_to_baseline: f64,
    /// p99 tick lateness (microseconds).
    pub p99_tick_lateness_us: u64,
    /// Largest tolerated fraction of snapshots lost (0.001 = 0.1 %).
    pub max_snapshot_loss: f64,
    /// p99 server frame time as a fraction of the tick interval.
    pub p99_frame_budget: f64,
    /// p99 query round trip (`--probe`), microseconds; `None`: not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_query_us: Option<u64>,
    /// p99 run delay of the servers' threads, microseconds; `None`: not
    /// judged (games with players are judged on transaction latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_run_delay_us: Option<u64>,
}

/// How a run was set up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchSettings {
    /// The game every step ran: its definition's name (a built-in game's
    /// or a user's file's). Results from before games were recorded read
    /// as [`crate::GAME_OF_OLDER_RESULTS`], which is not written (so such
    /// a result writes back the same).
    #[serde(
        default = "crate::game_of_older_results",
        skip_serializing_if = "crate::is_game_of_older_results"
    )]
    pub game: String,
    /// The game's own settings and versions, as recorded for the report
    /// (an ioquake3 game: map rotation, sv_fps, bots, game arguments, packages; a
    /// defined game: tick, bots, variables, packages). Typed; results that
    /// kept a flat map of text still read.
    #[serde(
        default,
        deserialize_with = "crate::game_settings::read",
        skip_serializing_if = "crate::game_settings::GameSettings::is_empty"
    )]
    pub game_settings: crate::game_settings::GameSettings,
    /// Servers per tile (the case study's VM held 3).
    pub tile_servers: u32,
    pub players_per_server: u32,
    pub bots_per_server: u32,
    pub tick_hz: TickRate,
    /// The server's `--cost` profile.
    pub cost: String,
    pub step_duration_s: f64,
    pub warmup_s: f64,
    pub max_steps: u32,
    /// The ladder may grow faster than a tile a step while the servers are
    /// far from the limit, then bisect a failure (`--fixed-steps` turns it
    /// off; each step records why it ran its size in `Step::chosen`).
    /// Absent in results written before: a tile a step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive_steps: bool,
    /// Steps run past the first failure, to show the knee.
    pub steps_past_failure: u32,
    /// Run a failing step again; it passes only if most of three attempts
    /// pass (2 of 3).
    #[serde(default)]
    pub confirm_failures: bool,
    /// A step whose worst CPU lost more than this share of its measured
    /// window to steal (percent; a virtual machine's hypervisor ran other
    /// guests) measured the machine's neighbours, not the servers: it is
    /// run again, up to `steal_retries` times. `None`: steal is recorded
    /// but never reruns a step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steal_percent: Option<f64>,
    /// A step whose worst server core spent more than this share of its
    /// measured window running processes that are neither the servers nor
    /// tickpack (percent; [`CpuUse::foreign_percent`]) measured them, not
    /// the servers: it is run again, like a step with steal, up to
    /// `steal_retries` times. `None`: foreign load is recorded but never
    /// reruns a step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_foreign_percent: Option<f64>,
    /// Reruns of a step for steal or foreign load, at most.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steal_retries: u32,
    /// CPU busy target for the recommended density (0.75 = 75 %).
    pub headroom_target: f64,
    pub qos: QosLimits,
    /// What `--compare` asked for: "none", "placement" or "backend".
    pub compare: String,
    /// The query protocol probed beside the players (`--probe`: "q3" or
    /// "a2s"); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    /// A machine size the headline is projected to (`--project-cores`):
    /// its server cores. Absent: this machine only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_cores: Option<u32>,
    /// `--allow-idle`: servers with nothing to do were measured on purpose
    /// (their footprint); their steps are judged, not marked idle, and the
    /// headline says it is no density.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_idle: bool,
    /// The load command started for every server (`[load]` or `--load`);
    /// absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSettings>,
    /// The tile a `--tile` run climbed (several games whose players come
    /// and go); absent: one game, every player all the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile: Option<crate::tile::TileSettings>,
}

/// A load command as a bench ran it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadSettings {
    /// As given, placeholders unexpanded.
    pub command: String,
    /// `{players}`: players per server.
    pub players: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Who used which cores.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CoreUse {
    pub total: usize,
    pub load_generator: Vec<usize>,
    pub servers: Vec<usize>,
}

/// CPU use during a step's measurement.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuUse {
    /// Busy share of the server cores, 0-100 %, less their foreign load
    /// ([`foreign_percent`](Self::foreign_percent)) where it was recorded.
    pub servers_busy_percent: f64,
    /// Busy share of the whole machine, 0-100 %.
    pub machine_busy_percent: f64,
    /// Busy share per CPU, 0-100 %, indexed by CPU number (steal counts as
    /// busy).
    pub per_cpu_percent: Vec<f64>,
    /// Steal per CPU, 0-100 %, indexed by CPU number: the time a virtual
    /// machine's hypervisor ran other guests while the CPU had work. High
    /// steal in a step is the machine disturbing the measurement, not the
    /// servers (empty in results from before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steal_percent: Vec<f64>,
    /// Load generator CPU time over the step, seconds.
    pub load_generator_cpu_s: f64,
    /// The servers' own CPU over the measured window, summed over the
    /// servers, % of one core: their threads' time on a CPU from schedstat
    /// (ns, to 0.001; before 2026-11-28 cgroup or tick figures, to 0.1),
    /// the one figure the step's line, its rows and the idle verdict read;
    /// the host's cgroup samples or clock ticks only when no thread could
    /// be read. Only the servers, where `servers_busy_percent` counts what
    /// ran on their cores. Absent in results from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_own_percent: Option<f64>,
    /// Per server core, the share of its measured window spent running
    /// processes that are neither the servers nor tickpack (the core's
    /// user and system time less that of the servers' and the bench's
    /// threads; see `docs/methodology.md`). Absent in results from before
    /// it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_percent: Option<ForeignLoad>,
}

/// Foreign load on the server cores over a step, 0-100 % of a core.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ForeignLoad {
    /// Per server core, by CPU number.
    pub per_core: std::collections::BTreeMap<usize, f64>,
    /// The largest of `per_core` (0 when empty).
    pub worst: f64,
}

impl ForeignLoad {
    /// From the foreign load of every CPU (indexed by CPU number), the
    /// server cores' (a server core missing from `per_cpu` reads 0).
    pub fn of_cores(per_cpu: &[f64], server_cores: &[usize]) -> ForeignLoad {
        let per_core: std::collections::BTreeMap<usize, f64> = server_cores
            .iter()
            .map(|&c| (c, per_cpu.get(c).copied().unwrap_or(0.0)))
            .collect();
        let worst = per_core.values().copied().fold(0.0, f64::max);
        ForeignLoad { per_core, worst }
    }
}

impl CpuUse {
    /// The worst steal of any CPU over the step, percent (0 when not
    /// recorded).
    pub fn worst_steal(&self) -> f64 {
        self.steal_percent.iter().copied().fold(0.0, f64::max)
    }

    /// The worst foreign load of a server core over the step, percent (0
    /// when not recorded).
    pub fn worst_foreign(&self) -> f64 {
        self.foreign_percent.as_ref().map_or(0.0, |f| f.worst)
    }

    /// The worst foreign load of the step when it reaches 1 % of a server
    /// core: "foreign 42.0% of CPU 1 (processes other than the servers and
    /// tickpack)".
    pub fn foreign_note(&self) -> Option<String> {
        let f = self.foreign_percent.as_ref()?;
        let (cpu, worst) = f
            .per_core
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(&c, &w)| (c, w))?;
        (worst >= 1.0).then(|| {
            format!(
                "foreign {worst:.1}% of CPU {cpu} (processes other than the servers and tickpack)"
            )
        })
    }

    /// The worst steal of the step when it reaches 1 % of a CPU: "steal
    /// 18.2% of CPU 0 (the hypervisor ran other guests)". Shown beside a
    /// step's verdict so that a failure the machine caused reads as such.
    pub fn steal_note(&self) -> Option<String> {
        let (cpu, worst) = self
            .steal_percent
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        (worst >= 1.0)
            .then(|| format!("steal {worst:.1}% of CPU {cpu} (the hypervisor ran other guests)"))
    }
}

/// One attempt of a step run more than once to confirm a failure: what it
/// gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub verdict: Verdict,
    /// Each limit it missed, in words; empty when it passed.
    #[serde(default)]
    pub failures: Vec<String>,
}

impl Step {
    /// A passed step with nothing measured: step `index` of as many tiles,
    /// `servers` servers and `players` players, 1 s long; nothing failed,
    /// rerun or disturbed, every optional figure absent. A base for steps
    /// built by hand: `Step { cpu, ..Step::passed(1, 3, 30) }`.
    pub fn passed(index: u32, servers: u32, players: u32) -> Step {
        Step {
            index,
            tiles: index,
            servers,
            players,
            connected: None,
            verdict: Verdict::Pass,
            chosen: None,
            failures: vec![],
            first_attempt_failures: vec![],
            disturbed_attempts: vec![],
            attempts: vec![],
            disturbed: None,
            duration_s: 1.0,
            measured: Measurements::default(),
            cpu: CpuUse::default(),
            power: None,
            query_latency_us: None,
            run_delay_us: None,
            run_delay_seconds_p99_us: vec![],
            queries: None,
            clients_seen: None,
            batch: None,
            server_peak_rss_bytes: None,
            tile: None,
            histograms: PlayersHistograms::default(),
        }
    }

    /// How many attempts the step took (one unless confirmed).
    pub fn attempt_count(&self) -> usize {
        self.attempts.len().max(1)
    }
}

/// One step of the ladder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub index: u32,
    pub tiles: u32,
    pub servers: u32,
    pub players: u32,
    /// How many of the step's players were connected at the end of it;
    /// `None` in results from before it was recorded, and for a game
    /// without players.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected: Option<u32>,
    pub verdict: Verdict,
    /// Why the ladder ran this many tiles at this step (an adaptive
    /// ladder: "doubled: ...", "bisection between ..."); absent for a
    /// ladder that adds a tile a step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<String>,
    /// Each limit missed, in words (a [`crate::qos::Miss`] each).
    pub failures: Vec<String>,
    /// What the first attempt missed when it failed and was run again to
    /// confirm; empty otherwise.
    #[serde(default)]
    pub first_attempt_failures: Vec<String>,
    /// Every attempt of a step run again to confirm a failure, in order
    /// (the step passes only when most of them pass: fail, pass, pass);
    /// the step's own figures are the last attempt's. Empty when the step
    /// ran once, and in results from before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// Attempts of this step set aside because the machine's steal passed
    /// [`BenchSettings::max_steal_percent`] or its foreign load passed
    /// [`BenchSettings::max_foreign_percent`], each as "steal 31.0% of CPU
    /// 0 (...): pass|fail"; empty when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_attempts: Vec<String>,
    /// Set when the attempt that stands was itself disturbed past a limit
    /// (steal or foreign load) because the reruns ran out: what disturbed
    /// it, "foreign 42.0% of CPU 1 (...), more than 5%". Its figures count
    /// more than the servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<String>,
    pub duration_s: f64,
    /// What the players measured (flattened: the fields sit at this level).
    #[serde(flatten)]
    pub measured: Measurements,
    pub cpu: CpuUse,
    pub power: Option<Power>,
    /// Round trips of the game's query protocol (`--probe`), every
    /// instance merged: NOT transaction latency (see [`crate::probe`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_latency_us: Option<Percentiles>,
    /// How long the servers' threads waited runnable for a CPU: per thread
    /// and 100 ms interval of the measured window, the mean wait of a
    /// timeslice (`/proc/PID/task/TID/schedstat`; see
    /// docs/methodology.md). Absent in results written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_delay_us: Option<Percentiles>,
    /// The p99 run delay of each second of the measured window, µs, that
    /// the relative limit compares ([`crate::qos::typical_run_delay_us`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_delay_seconds_p99_us: Vec<u64>,
    /// What happened to those queries (`--probe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries: Option<QueryCounts>,
    /// Clients (humans and bots) the servers said they held in their last
    /// answer to the step's queries, summed over the servers that answered
    /// with a count; absent without such a query. Bots asked for but not
    /// seen here did not join.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients_seen: Option<u32>,
    /// Batch work beside the servers (`--batch`): its throughput and CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<StepBatch>,
    /// The largest peak resident memory of one server of the step, bytes:
    /// each server's process tree's `VmHWM` summed, read at the end of the
    /// measured window (absent in results written before it was recorded).
    /// `tickpack agones fleet` sizes a pod's memory from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_peak_rss_bytes: Option<u64>,
    pub histograms: PlayersHistograms,
    /// A tile run's step: each member judged in every window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile: Option<crate::tile::TileStep>,
}

/// What the batch work of a step got (`bench --batch`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepBatch {
    /// none (no control) | idle (SCHED_IDLE only) | guard.
    pub control: String,
    /// stress-ng's bogo-ops/s (real time, summed over its stressors and
    /// commands) over the batch's life in the step; `None` when the batch
    /// printed none (not stress-ng, or killed before reporting).
    pub bogo_ops_per_s: Option<f64>,
    /// The batch cgroup's CPU use over the measured window, percent of one
    /// core.
    pub cpu_percent: Option<f64>,
    /// The servers' own CPU use over the window (their cgroups summed),
    /// percent of one core.
    pub servers_cpu_percent: Option<f64>,
    /// The share of the CPU the servers left idle that the batch used,
    /// percent: batch / (server cores x 100 - servers).
    pub idle_share_percent: Option<f64>,
    /// Guard decisions by action over the step.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub guard_decisions: std::collections::BTreeMap<String, u64>,
    /// The guard's last decisions of the step, oldest first, as
    /// `at_s action quota: reason`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guard_last: Vec<String>,
}

impl Step {
    /// The figures the verdict read, as far as the step kept them, to ask
    /// which rules had something to judge ([`crate::qos::Rule::judged`]).
    /// An older step does not record how many players connected (its
    /// `failures` say when fewer did), so `connected` is `players` then:
    /// these figures answer what was judged, they do not judge the step
    /// again.
    pub fn figures(&self, tick_hz: TickRate) -> crate::figures::StepFigures<'_> {
        crate::figures::StepFigures::of(
            self.players,
            self.connected.unwrap_or(self.players),
            tick_hz,
            &self.measured,
            self.query_latency_us.as_ref(),
            self.run_delay_us.as_ref(),
        )
        .with_run_delay_seconds(&self.run_delay_seconds_p99_us)
    }
}

/// The figures read as the step's own (`step.rtt_us`), as in the JSON.
impl std::ops::Deref for Step {
    type Target = Measurements;
    fn deref(&self) -> &Measurements {
        &self.measured
    }
}

/// One ladder (one variant of a comparison).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ladder {
    /// e.g. "netns/bridge, placement spread".
    pub label: String,
    pub backend: String,
    pub net: Option<String>,
    pub placement: String,
    pub steps: Vec<Step>,
    /// Largest step that passed before the first failure (or the last
    /// step that passed, when none failed: see `limit_found`).
    pub max_servers: Option<u32>,
    /// Largest passing step whose server-core busy share is within the headroom target.
    pub recommended_servers: Option<u32>,
    /// Why the ladder stopped, in words.
    pub stopped: String,
    /// True when a step failed QoS (the ladder found its limit); false when
    /// it stopped at `--max-steps` or was interrupted with every step
    /// passing, so `max_servers` is only a lower bound. Absent in results
    /// written before it was recorded ([`Ladder::limit_found`] reads the
    /// steps then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_found: Option<bool>,
    /// Which repetition of the comparison (`--repeat`) this ladder is,
    /// from 1; absent in results written before repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    /// The ladder's own game when the variants of a comparison run
    /// different games (`--compare game`); absent: the run's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game: Option<LadderGame>,
    /// How the tile's players came and went in this ladder (`--tile`);
    /// absent for a one-game run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::tile::LoadVariant>,
}

/// What a ladder ran instead of the run's game settings (`--compare game`):
/// each game keeps its own players, bots, tick rate and the QoS limits
/// that follow from its tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderGame {
    /// The game's name (its definition's).
    pub game: String,
    #[serde(
        default,
        deserialize_with = "crate::game_settings::read",
        skip_serializing_if = "crate::game_settings::GameSettings::is_empty"
    )]
    pub game_settings: crate::game_settings::GameSettings,
    pub players_per_server: u32,
    pub bots_per_server: u32,
    pub tick_hz: TickRate,
    pub warmup_s: f64,
    pub qos: QosLimits,
}

impl Ladder {
    /// The repetition this ladder belongs to (1 for results without).
    pub fn repetition(&self) -> u32 {
        self.repetition.unwrap_or(1)
    }

    /// The game this ladder ran (its definition's name).
    pub fn game_name<'a>(&'a self, settings: &'a BenchSettings) -> &'a str {
        self.game
            .as_ref()
            .map_or(settings.game.as_str(), |g| &g.game)
    }

    /// The QoS limits this ladder's steps were judged by.
    pub fn qos<'a>(&'a self, settings: &'a BenchSettings) -> &'a QosLimits {
        self.game.as_ref().map_or(&settings.qos, |g| &g.qos)
    }

    /// The tick rate this ladder's servers ran at.
    pub fn tick_hz(&self, settings: &BenchSettings) -> TickRate {
        self.game.as_ref().map_or(settings.tick_hz, |g| g.tick_hz)
    }

    /// True when a step of the ladder failed QoS: its maximum density is
    /// its limit, not a lower bound.
    pub fn limit_found(&self) -> bool {
        self.limit_found
            .unwrap_or_else(|| self.steps.iter().any(|s| s.verdict.is_fail()))
    }

    /// True when the ladder was interrupted before any step failed QoS:
    /// it never found its limit, and `max_servers` is only a lower bound.
    pub fn interrupted_before_limit(&self) -> bool {
        self.stopped.starts_with("interrupted") && !self.steps.iter().any(|s| s.verdict.is_fail())
    }

    /// The maximum density in words: `4 servers`, `not reached` (the first
    /// step failed), or, for a ladder that never failed a step,
    /// `at least 4 servers (interrupted before a step failed)` or
    /// `at least 4 servers (the last step, --max-steps, passed)`.
    pub fn max_density_words(&self) -> String {
        if self.steps.iter().any(|s| s.verdict.is_idle()) {
            return "none (the servers were idle)".into();
        }
        let why = if self.stopped.starts_with("interrupted") {
            "interrupted before a step failed"
        } else {
            "the last step, --max-steps, passed"
        };
        match (self.limit_found(), self.max_servers) {
            (false, Some(n)) => format!("at least {} ({why})", crate::words::servers(n)),
            (false, None) if self.steps.is_empty() => {
                "not found (interrupted before a step finished)".into()
            }
            (false, None) => "not found".into(),
            (true, Some(n)) => crate::words::servers(n),
            (true, None) => "not reached".into(),
        }
    }
}

/// The whole `result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    pub schema: String,
    pub tickpack_version: String,
    pub system: SystemInfo,
    pub settings: BenchSettings,
    pub cores: CoreUse,
    pub ladders: Vec<Ladder>,
    /// The headline: the recommended density over the server cores (the
    /// load generator's excluded), to three decimals
    /// ([`crate::headline`]). Absent when nothing was recommended, and in
    /// results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_per_core: Option<f64>,
    /// The headline over repeated ladders: its median, range and number
    /// of ladders ([`crate::spread`]). Absent for one ladder, and in
    /// results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_per_core_spread: Option<crate::spread::HeadlineSpread>,
    /// On few server cores, where between the last passing and the first
    /// failing step the QoS limit lies: an estimate, not a measured step
    /// ([`crate::estimate`]). Absent when there is none, and in results
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_estimate: Option<crate::estimate::LimitEstimate>,
    /// True when every ladder of the first variant found its limit (a step
    /// failed QoS); false when one stopped with every step passing: its
    /// densities are lower bounds ("at least"). Absent in results written
    /// before it was recorded ([`BenchResult::limit_found`] reads the
    /// ladders then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_found: Option<bool>,
    /// Recommended density of the first ladder (tickpack's own settings).
    pub recommended_servers: Option<u32>,
    pub max_servers: Option<u32>,
    /// For `--compare placement`: first ladder's max servers over the
    /// second's (tickpack's placement vs the kernel's); with repetitions,
    /// the median of the per-repetition ratios. Every comparison's ratios,
    /// with their spread, are in `comparison`.
    pub comparison_ratio: Option<f64>,
    /// The comparison judged over its repetitions: per variant the median
    /// and range of its densities, and each ratio with its range (absent
    /// for a single ladder run once, and in results written before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<crate::comparison::Comparison>,
    /// Recommended servers per machine over `before_servers` (the servers
    /// one machine ran before consolidating, `--before-servers`); absent
    /// when the user gave no "before". Below 1 it is no consolidation
    /// ([`crate::headline::consolidation_words`] says so).
    pub consolidation_ratio: Option<f64>,
    /// The consolidation ratio's baseline: servers per machine before, as
    /// the user gave it (absent when not given; results written before
    /// 2026-11 recorded a default of 6 here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_servers: Option<u32>,
    pub tco: Option<Tco>,
    /// False until the run finished; an interrupted run keeps its steps.
    pub complete: bool,
    pub started_unix: u64,
    pub finished_unix: Option<u64>,
    /// How fast the server cores were through the run (a fixed
    /// calibration before, between and after the ladders): absent in
    /// results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_speed: Option<crate::machine::MachineSpeed>,
}

impl BenchResult {
    /// A run's result before its first ladder: `settings` run by tickpack
    /// `tickpack_version` on `system` with `cores`; no ladder, nothing
    /// summarized (no headline, limit, densities, comparison, consolidation
    /// or TCO), not complete, started at 0 (callers set `started_unix`).
    pub fn new(
        tickpack_version: &str,
        system: SystemInfo,
        settings: BenchSettings,
        cores: CoreUse,
    ) -> BenchResult {
        BenchResult {
            schema: BENCH_SCHEMA.into(),
            tickpack_version: tickpack_version.into(),
            system,
            settings,
            cores,
            ladders: vec![],
            servers_per_core: None,
            servers_per_core_spread: None,
            limit_estimate: None,
            limit_found: None,
            recommended_servers: None,
            max_servers: None,
            comparison_ratio: None,
            comparison: None,
            consolidation_ratio: None,
            before_servers: None,
            tco: None,
            complete: false,
            started_unix: 0,
            finished_unix: None,
            machine_speed: None,
        }
    }

    /// Whether the first variant's ladders all found their limit (see
    /// `limit_found`).
    pub fn limit_found(&self) -> bool {
        self.limit_found.unwrap_or_else(|| {
            let Some(first) = self.ladders.first() else {
                return false;
            };
            self.ladders
                .iter()
                .filter(|l| l.label == first.label)
                .all(Ladder::limit_found)
        })
    }

    /// True when the recommended density is only a lower bound: no step
    /// failed and the recommended step is the last that passed (the
    /// headroom target did not stop it either).
    pub fn recommended_is_lower_bound(&self) -> bool {
        !self.limit_found()
            && self.recommended_servers.is_some()
            && self.recommended_servers == self.max_servers
    }
}

#[cfg(test)]
mod tests;
