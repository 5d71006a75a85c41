//! `tickpack bench`: how many game servers fit on this machine before the
//! players notice, at what CPU headroom, and what that saves.
//!
//! Order: the flags' typed [`plan::Request`] → [`plan::Request::plan`]
//! (the game from its definition, every default, checked once) →
//! [`BenchConfig`] → [`BenchConfig::validate`] → [`run`], which
//! first removes what a killed earlier run of the same host name left
//! ([`recover_leftovers`]; the records live in the stable
//! [`BenchConfig::run_dir`]), then climbs one ladder per compared variant
//! ([`ladder`], interleaved across the variants of a comparison, and the
//! whole comparison, or the single ladder, `--repeat` times, 3 by default;
//! each step run by [`step`]), judges every step ([`verdict`]),
//! samples CPU ([`cpu`]) and power ([`power`]), rewrites `OUT/result.json`
//! atomically after every step (so Ctrl-C keeps every finished step), and
//! fills in the summary ([`summary`], pure: the headline with its spread
//! over the ladders, and on few server cores the limit between two steps,
//! [`estimate`]) and the cost figures ([`tco`]) at the end. The HTML report is rendered by `tickpack_report::html`.
//!
//! Not here: the servers (`tickpack server`), the host (`tickpack-host`),
//! the players (`tickpack-players`); this crate only drives them.

pub mod calibrate;
pub mod cpu;
pub mod estimate;
pub mod foreign;
pub mod game;
pub mod ladder;
pub mod load;
pub mod pin;
pub mod plan;
pub mod power;
pub mod readers;
pub mod spec;
pub mod step;
pub mod summary;
pub mod tco;
#[cfg(test)]
mod test_support;
pub mod tile;
pub mod verdict;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tickpack_host::fleet::Backend;
use tickpack_host::guard::BatchControl;
use tickpack_host::netpath::NetKind;
use tickpack_host::placement::Policy;
use tickpack_report::bench::{BenchResult, BenchSettings, CoreUse};

pub use game::GameServer;
pub use ladder::{GameVariant, LadderSpec, Observer, Plan};

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("bad benchmark settings: {0}")]
    Config(String),
    #[error("isolation unavailable: {0}")]
    Isolation(String),
    #[error(transparent)]
    Host(#[from] tickpack_host::supervisor::HostError),
    #[error("players: {0}")]
    Players(#[from] tickpack_players::PlayersError),
    /// The query prober (`--probe`) could not run.
    #[error("query probe: {0}")]
    Probe(String),
    #[error("writing results: {0}")]
    Report(#[from] tickpack_report::ReportError),
}

/// The most servers one step runs (every ladder, every host).
pub const MAX_SERVERS: u32 = 250;

/// What to compare in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    None,
    /// tickpack's placement (spread) vs the kernel's (none).
    Placement,
    /// process vs netns veth, bridge, macvlan.
    Backend,
    /// The QoS guard (`--batch`): no batch, batch with no control, batch
    /// under SCHED_IDLE only, batch under the guard.
    Guard,
    /// Two games, each with its own players, bots and tick
    /// ([`BenchConfig::games`]).
    Game,
    /// A tile's players three ways (`--tile`): all present all the time,
    /// the curves at each server's own moments, the curves in step.
    Load,
}

impl Compare {
    /// As `--compare` and result.json spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Compare::None => "none",
            Compare::Placement => "placement",
            Compare::Backend => "backend",
            Compare::Game => "game",
            Compare::Guard => "guard",
            Compare::Load => "load",
        }
    }
}

/// Ladders (of a single variant or a whole comparison) when `--repeat` is
/// not given: enough for a median and a range; `--quick` runs one. One
/// default ladder of the reference server takes about 85 s on a 2-core
/// machine, so three stay within about five minutes.
pub const DEFAULT_REPEAT: u32 = 3;

/// The variants of a run and the ratios it asks about.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonPlan {
    pub specs: Vec<LadderSpec>,
    /// Each ratio of maximum densities, as (numerator, denominator)
    /// indices into `specs`.
    pub ratios: Vec<(usize, usize)>,
}

/// What one of the user's machines ran and drew before consolidating: the
/// consolidation ratio exists only with it, the cost figures only with
/// every cost input too. Nothing here has a default: a figure the user did
/// not give is not made up.
#[derive(Debug, Clone, PartialEq)]
pub struct Before {
    /// Servers one machine ran before consolidating (`--before-servers`).
    pub servers: u32,
    /// The cost inputs, when the user gave them.
    pub cost: Option<CostInputs>,
}

/// Cost inputs besides the measured density and watts, all given by the
/// user.
#[derive(Debug, Clone, PartialEq)]
pub struct CostInputs {
    /// Watts of one machine before (`--before-watts`).
    pub before_watts: f64,
    /// Machines before (`--machines`).
    pub machines: u64,
    /// The currency the costs are in (`--currency`).
    pub currency: String,
    pub price_per_kwh: f64,
    pub currency_rate: f64,
    pub hours_per_year: f64,
}

/// Everything `tickpack bench` needs.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub settings: BenchSettings,
    pub out_dir: PathBuf,
    pub compare: Compare,
    /// `None`: netns when root, else process.
    pub backend: Option<Backend>,
    pub net: NetKind,
    pub load_generator_cpus: Vec<usize>,
    pub power: power::PowerConfig,
    /// `None`: the user gave no "before", so no ratio and no cost.
    pub before: Option<Before>,
    pub exe: PathBuf,
    /// Run dir of the steps' hosts: keep it stable per host name (the
    /// default `/run/tickpack/bn`) so a run killed with -9 is found and
    /// cleaned up by the next one, or by `host down --name NAME`.
    pub run_dir: PathBuf,
    /// Host name of the steps' hosts (everything created is `tp<name>...`).
    pub host_name: String,
    /// Instance address range (netns); `None`: the host's default.
    pub range: Option<String>,
    /// The game server the steps run.
    pub game: GameServer,
    /// Batch commands run beside the servers (`--batch`): with `--compare
    /// guard` in three of its four variants, else under the guard in the
    /// one ladder.
    pub batch: Vec<String>,
    /// The games `--compare game` climbs, each with its own settings; the
    /// first is the ratios' baseline.
    pub games: Vec<GameVariant>,
    /// Whole comparisons run one after the other (`--repeat`).
    pub repeat: u32,
    /// The tile `--tile` climbs instead of one game.
    pub tile: Option<tile::TilePlan>,
}

use tickpack_sys::has_root;

impl BenchConfig {
    /// Checks the settings and resolves defaults; nothing is started before.
    pub fn validate(&self) -> Result<(), BenchError> {
        let s = &self.settings;
        let bad = |m: String| Err(BenchError::Config(m));
        if s.tile_servers == 0 || s.tile_servers > 64 {
            return bad(format!(
                "--tile-servers must be 1..=64, got {}",
                s.tile_servers
            ));
        }
        // A game tickpack cannot play runs no players.
        let playable = crate::game::players_game(&self.game).is_some();
        if self.tile.is_none()
            && ((playable && s.players_per_server == 0) || s.players_per_server > 255)
        {
            return bad(format!(
                "--players-per-server must be 1..=255, got {}",
                s.players_per_server
            ));
        }
        let servers = u64::from(s.max_steps) * u64::from(s.tile_servers);
        if s.max_steps == 0 || servers > 250 {
            return bad(format!(
                "--max-steps x --tile-servers must be 1..=250 servers, got {servers}"
            ));
        }
        if !(s.warmup_s >= 0.0 && s.warmup_s <= 3600.0) {
            return bad("--warmup must be 0..1h".into());
        }
        if s.tick_hz.hz() > tickpack_report::bench::TickRate::SERVER_MAX_HZ {
            return bad(format!("--tick-hz must be 1..=1000, got {}", s.tick_hz));
        }
        let q = &s.qos;
        if q.p99_transaction_us == 0 || q.p99_tick_lateness_us == 0 {
            return bad("QoS latency limits must be more than 0 ms".into());
        }
        if !(q.p99_relative_to_baseline.is_finite() && q.p99_relative_to_baseline >= 1.0) {
            return bad(format!(
                "--qos-relative must be 1 or more, got {}",
                q.p99_relative_to_baseline
            ));
        }
        if !(0.0..=1.0).contains(&q.max_snapshot_loss) {
            return bad(format!(
                "--qos-loss-percent must be 0..=100, got {}",
                q.max_snapshot_loss * 100.0
            ));
        }
        if !(q.p99_frame_budget > 0.0 && q.p99_frame_budget.is_finite()) {
            return bad(format!(
                "--qos-frame-budget must be more than 0, got {}",
                q.p99_frame_budget
            ));
        }
        if let Some(p) = &s.probe {
            p.parse::<tickpack_probe::ProbeProtocol>()
                .map_err(|e| BenchError::Config(format!("--probe: {e}")))?;
        }
        match (q.p99_query_us, &s.probe) {
            (Some(0), _) => return bad("--qos-query-p99-ms must be more than 0".into()),
            (Some(_), None) => {
                return bad(
                    "--qos-query-p99-ms needs --probe q3|a2s (the query latency it limits)".into(),
                )
            }
            _ => {}
        }
        if let Some(b) = &self.before {
            if b.servers == 0 {
                return bad("--before-servers must be 1 or more".into());
            }
            if let Some(c) = &b.cost {
                if c.currency.trim().is_empty() || c.currency.len() > 16 {
                    return bad(
                        "--currency must name the currency, e.g. EUR (1-16 characters)".into(),
                    );
                }
                // The cost figures are computed at the end: check their
                // inputs now (the measured side is stood in by the before
                // side).
                tco::validate(&tickpack_report::bench::TcoInputs {
                    before_watts: c.before_watts,
                    after_watts: c.before_watts,
                    ratio: 1.0,
                    machines: c.machines,
                    price_per_kwh: c.price_per_kwh,
                    currency_rate: c.currency_rate,
                    hours_per_year: c.hours_per_year,
                })
                .map_err(|e| BenchError::Config(format!("cost: {e}")))?;
            }
        }
        if !(s.step_duration_s >= 0.5 && s.step_duration_s <= 3600.0) {
            return bad("--step-duration must be 500ms..1h".into());
        }
        if !(s.headroom_target > 0.0 && s.headroom_target <= 1.0) {
            return bad(format!(
                "--headroom must be in (0, 100] %, got {}",
                s.headroom_target * 100.0
            ));
        }
        self.power
            .validate()
            .map_err(|e| BenchError::Config(format!("power model: {e}")))?;
        for c in &self.batch {
            tickpack_host::guard::batch::BatchSpec::parse(c).map_err(BenchError::Config)?;
        }
        if self.compare == Compare::Guard && self.batch.is_empty() {
            return bad("--compare guard needs --batch CMD (e.g. \"stress-ng --cpu 0\")".into());
        }
        if !self.batch.is_empty() && (!has_root() || self.backend == Some(Backend::Process)) {
            return Err(BenchError::Isolation(
                "--batch needs the netns backend (the batch's cgroup; root)".into(),
            ));
        }
        if !(1..=50).contains(&self.repeat) {
            return bad(format!("--repeat must be 1..=50, got {}", self.repeat));
        }
        if self.compare == Compare::Load && self.tile.is_none() {
            return bad(
                "--compare load needs --tile FILE (the players whose rhythm it compares)".into(),
            );
        }
        if self.tile.is_some() && !matches!(self.compare, Compare::None | Compare::Load) {
            return bad(format!(
                "--tile takes --compare load only, not --compare {}",
                self.compare.as_str()
            ));
        }
        if self.compare == Compare::Game && self.games.len() != 2 {
            return bad("--compare game needs two games, each with its settings".into());
        }
        if self.compare == Compare::Backend && !has_root() {
            return Err(BenchError::Isolation(
                "--compare backend needs root (network namespaces)".into(),
            ));
        }
        if self.backend == Some(Backend::Netns) && !has_root() {
            return Err(BenchError::Isolation(
                "the netns backend needs root; run as root or use --backend process".into(),
            ));
        }
        Ok(())
    }

    /// The variants this run climbs and the ratios it reports.
    pub fn plan(&self) -> ComparisonPlan {
        let backend = self.backend.unwrap_or(if has_root() {
            Backend::Netns
        } else {
            Backend::Process
        });
        let path = |backend: Backend, net: NetKind| match backend {
            Backend::Process => "process".to_string(),
            Backend::Netns => format!("netns/{net}"),
        };
        let spec = |backend: Backend, net: NetKind, placement: Policy, name: String| LadderSpec {
            label: format!("{}, placement {placement}", path(backend, net)),
            name,
            backend,
            net,
            placement,
            batch: None,
            game: None,
            load: None,
        };
        let by_path = |backend: Backend, net: NetKind| {
            let name = match backend {
                Backend::Process => "plain processes".to_string(),
                Backend::Netns => path(backend, net),
            };
            spec(backend, net, Policy::Spread, name)
        };
        let with_batch = |control: Option<BatchControl>| {
            let mut l = spec(backend, self.net, Policy::Spread, String::new());
            (l.label, l.name) = match control {
                None => (format!("{}, no batch", l.label), "no batch".into()),
                Some(BatchControl::None) => (
                    format!("{}, batch with no control", l.label),
                    "batch with no control".into(),
                ),
                Some(BatchControl::Idle) => (
                    format!("{}, batch under SCHED_IDLE", l.label),
                    "batch under SCHED_IDLE alone".into(),
                ),
                Some(BatchControl::Guard) => (
                    format!("{}, batch under the guard", l.label),
                    "batch under the guard".into(),
                ),
            };
            l.batch = control;
            l
        };
        // A tile's ladders: one variant of how its players come and go,
        // or the three of `--compare load`, the static reservation first
        // (the ratios' baseline).
        let with_load = |mut l: LadderSpec, load: tile::LoadVariant| {
            if self.tile.is_some() {
                l.label = format!("{}, {}", l.label, load.as_str());
                l.name = load.words().to_string();
                l.load = Some(load);
            }
            l
        };
        if self.tile.is_some() {
            let base = if self.batch.is_empty() {
                spec(backend, self.net, Policy::Spread, path(backend, self.net))
            } else {
                with_batch(Some(BatchControl::Guard))
            };
            return match self.compare {
                Compare::Load => ComparisonPlan {
                    specs: [
                        tile::LoadVariant::Static,
                        tile::LoadVariant::Phased,
                        tile::LoadVariant::Aligned,
                    ]
                    .into_iter()
                    .map(|v| with_load(base.clone(), v))
                    .collect(),
                    ratios: vec![(1, 0), (2, 0)],
                },
                _ => ComparisonPlan {
                    specs: vec![with_load(base, tile::LoadVariant::Phased)],
                    ratios: vec![],
                },
            };
        }
        match self.compare {
            Compare::Load => ComparisonPlan {
                specs: vec![],
                ratios: vec![],
            },
            Compare::None if !self.batch.is_empty() => ComparisonPlan {
                specs: vec![with_batch(Some(BatchControl::Guard))],
                ratios: vec![],
            },
            // The guard against each other way, density relative to no
            // batch at all.
            Compare::Guard => ComparisonPlan {
                specs: vec![
                    with_batch(None),
                    with_batch(Some(BatchControl::None)),
                    with_batch(Some(BatchControl::Idle)),
                    with_batch(Some(BatchControl::Guard)),
                ],
                ratios: vec![(1, 0), (2, 0), (3, 0)],
            },
            Compare::None => ComparisonPlan {
                specs: vec![spec(
                    backend,
                    self.net,
                    Policy::Spread,
                    path(backend, self.net),
                )],
                ratios: vec![],
            },
            Compare::Placement => ComparisonPlan {
                specs: vec![
                    spec(
                        backend,
                        self.net,
                        Policy::Spread,
                        "tickpack's placement (spread)".into(),
                    ),
                    spec(
                        backend,
                        self.net,
                        Policy::None,
                        "the kernel's scheduling (none)".into(),
                    ),
                ],
                ratios: vec![(0, 1)],
            },
            Compare::Backend => ComparisonPlan {
                specs: vec![
                    by_path(Backend::Process, self.net),
                    by_path(Backend::Netns, NetKind::Veth),
                    by_path(Backend::Netns, NetKind::Bridge),
                    by_path(Backend::Netns, NetKind::Macvlan),
                ],
                ratios: vec![(1, 0), (2, 0), (3, 0)],
            },
            Compare::Game => ComparisonPlan {
                specs: self
                    .games
                    .iter()
                    .map(|g| {
                        let game = g.server.name();
                        let name = g.server.name().to_string();
                        LadderSpec {
                            label: format!("{game}, {}, placement spread", path(backend, self.net)),
                            name,
                            game: Some(g.clone()),
                            ..spec(backend, self.net, Policy::Spread, String::new())
                        }
                    })
                    .collect(),
                ratios: (1..self.games.len()).map(|i| (i, 0)).collect(),
            },
        }
    }
}

/// Removes what an earlier run of the same host name left behind (a bench
/// or host killed with -9): recorded processes, namespaces, links, the guard
/// route, the firewall table and cgroups. Returns what was removed.
pub fn recover_leftovers(cfg: &BenchConfig) -> Result<Vec<String>, BenchError> {
    let recover = |name: String, run_dir: PathBuf| -> Result<Vec<String>, BenchError> {
        let fleet = tickpack_fleet::FleetPlan {
            name: Some(name),
            run_dir: Some(run_dir.clone()),
            ..Default::default()
        }
        .build(&run_dir)
        .map_err(|e| BenchError::Config(e.to_string()))?;
        Ok(tickpack_host::supervisor::recover(&fleet)?)
    };
    let mut removed = recover(cfg.host_name.clone(), cfg.run_dir.clone())?;
    // A tile run's members each had a host of their own, in the run dir.
    for m in 0..tile::MAX_MEMBERS {
        let dir = tile::member_run_dir(&cfg.run_dir, m);
        if dir.is_dir() {
            removed.extend(recover(tile::member_host_name(&cfg.host_name, m), dir)?);
        }
    }
    Ok(removed)
}

/// Runs the benchmark; `on_update` sees the result after every step (the
/// caller's progress display). Writes `out_dir/result.json` as it goes.
pub fn run(
    cfg: &BenchConfig,
    stop: &Arc<AtomicBool>,
    obs: &mut dyn Observer,
) -> Result<BenchResult, BenchError> {
    cfg.validate()?;
    // First, before any thread is started: no thread of the bench runs on
    // a server core.
    pin::pin_process(&cfg.load_generator_cpus).map_err(BenchError::Config)?;
    std::fs::create_dir_all(&cfg.out_dir)
        .map_err(|e| BenchError::Config(format!("cannot create {}: {e}", cfg.out_dir.display())))?;
    let online = tickpack_net::cpu::online_cpus();
    let server_cpus: Vec<usize> = online
        .iter()
        .copied()
        .filter(|c| !cfg.load_generator_cpus.contains(c))
        .collect();
    let plan = Plan {
        settings: cfg.settings.clone(),
        load_generator_cpus: cfg.load_generator_cpus.clone(),
        server_cpus: if server_cpus.is_empty() {
            online.clone()
        } else {
            server_cpus.clone()
        },
        exe: cfg.exe.clone(),
        run_dir: cfg.run_dir.clone(),
        host_name: cfg.host_name.clone(),
        range: cfg.range.clone(),
        game: cfg.game.clone(),
        tile: cfg.tile.clone(),
        batch: cfg
            .batch
            .iter()
            .map(|c| tickpack_host::guard::batch::BatchSpec::parse(c))
            .collect::<Result<_, _>>()
            .map_err(BenchError::Config)?,
    };
    let removed = recover_leftovers(cfg)?;
    if !removed.is_empty() {
        obs.note(&format!(
            "removed leftovers of an earlier run: {}",
            removed.join(", ")
        ));
    }
    let (mut power, power_reason) = power::detect_with_reason(&cfg.power);
    obs.note(&format!("power: {power_reason}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut result = BenchResult {
        before_servers: cfg.before.as_ref().map(|b| b.servers),
        started_unix: now,
        ..BenchResult::new(
            env!("CARGO_PKG_VERSION"),
            tickpack_report::system::SystemInfo::collect(),
            cfg.settings.clone(),
            CoreUse {
                total: online.len(),
                load_generator: cfg.load_generator_cpus.clone(),
                servers: plan.server_cpus.clone(),
            },
        )
    };
    let path = cfg.out_dir.join("result.json");
    // The machine's speed before the first ladder, on every server core.
    calibrate::calibrate_into(
        &mut result,
        &plan.server_cpus,
        &cfg.load_generator_cpus,
        "before the first ladder",
        obs,
    );
    tickpack_report::write_json_atomic(&path, &result)?;

    struct Saving<'a> {
        inner: &'a mut dyn Observer,
        result: &'a mut BenchResult,
        path: PathBuf,
        error: Option<tickpack_report::ReportError>,
    }
    impl Observer for Saving<'_> {
        fn step_started(&mut self, ladder: &str, index: u32, servers: u32) {
            self.inner.step_started(ladder, index, servers);
        }
        fn note(&mut self, msg: &str) {
            self.inner.note(msg);
        }
        fn step_finished(&mut self, ladder: &tickpack_report::bench::Ladder) {
            // The ladder in progress replaces its previous copy.
            summary::upsert_ladder(&mut self.result.ladders, ladder.clone());
            if let Err(e) = tickpack_report::write_json_atomic(&self.path, &*self.result) {
                self.error.get_or_insert(e);
            }
            self.inner.step_finished(ladder);
        }
    }

    let comparison = cfg.plan();
    for repetition in 1..=cfg.repeat {
        if cfg.repeat > 1 {
            obs.repetition_started(repetition, cfg.repeat);
        }
        let mut saving = Saving {
            inner: &mut *obs,
            result: &mut result,
            path: path.clone(),
            error: None,
        };
        let ladders = ladder::run_ladders(
            &plan,
            &comparison.specs,
            repetition,
            power.as_mut(),
            stop,
            &mut saving,
        )?;
        if let Some(e) = saving.error {
            return Err(e.into());
        }
        // The repetition's ladders, in the variants' order.
        let idle = ladders.iter().any(ladder::ended_idle);
        result.ladders.retain(|l| l.repetition != Some(repetition));
        result.ladders.extend(ladders);
        if !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let when = if repetition == cfg.repeat || idle {
                "after the last ladder".to_string()
            } else {
                format!("after repetition {repetition}")
            };
            calibrate::calibrate_into(
                &mut result,
                &plan.server_cpus,
                &cfg.load_generator_cpus,
                &when,
                obs,
            );
        }
        if idle && repetition < cfg.repeat {
            // Idle servers stay idle: another repetition would only
            // measure them again.
            obs.note(&format!(
                "the servers were idle, so the run ends after repetition {repetition} of {}",
                cfg.repeat
            ));
            break;
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            // The comparison so far, from the repetitions that finished.
            result.comparison = summary::summarize(
                &result.ladders,
                &comparison,
                cfg.compare,
                cfg.repeat,
                cfg.before.as_ref(),
            )
            .comparison;
            tickpack_report::write_json_atomic(&path, &result)?;
            return Ok(result);
        }
        tickpack_report::write_json_atomic(&path, &result)?;
    }

    summary::summarize(
        &result.ladders,
        &comparison,
        cfg.compare,
        cfg.repeat,
        cfg.before.as_ref(),
    )
    .apply(&mut result);
    result.complete = true;
    result.finished_unix = Some(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    );
    tickpack_report::write_json_atomic(&path, &result)?;
    Ok(result)
}
