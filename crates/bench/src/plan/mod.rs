//! The typed plan of a run, built once from the flags and checked there:
//! `tickpack bench` parses its arguments into a [`Request`] (plain values,
//! no parsing left) and [`Request::plan`] turns it into the
//! [`BenchConfig`] the run climbs, or says in one line what is wrong
//! ([`PlanError`]). What depends on several flags, on the game's
//! definition or on this machine (CPUs, the program installed) is checked
//! here, before anything is created; ripgrep's low and high arguments.
//!
//! The game ([`game`]): every game goes the same way, its definition from
//! the registry (a name) or a file, its settings from `--set`, `--bots`
//! and the tick rate. The user's machines before ([`before`]): the
//! consolidation and cost inputs.

pub mod before;
pub mod game;
#[cfg(test)]
mod tests;
pub mod tile;

use std::path::PathBuf;
use std::time::Duration;

use tickpack_report::bench::BenchSettings;

use crate::{BenchConfig, Compare};

/// A plan that cannot run, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The flags (or the game's definition) ask for something that cannot
    /// run, or this machine cannot run it.
    #[error("{0}")]
    Config(String),
    /// Nothing would load the servers and `--allow-idle` was not given.
    #[error("{0}")]
    Idle(String),
}

pub(crate) fn config_error(m: impl Into<String>) -> PlanError {
    PlanError::Config(m.into())
}

/// What the user asked, as typed values: one field per flag of `tickpack
/// bench` (`None`: not given, the default applies).
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub quick: bool,
    pub out: PathBuf,
    pub compare: Option<Compare>,
    pub batch: Vec<String>,
    pub repeat: Option<u32>,
    /// `--game NAME|FILE`: none, one, or two with `--compare game`.
    pub games: Vec<String>,
    /// `--set NAME=VALUE`, in order.
    pub set: Vec<String>,
    /// `--cost`: shorthand for `--set cost=VALUE` (games with that variable).
    pub cost: Option<String>,
    pub tile_servers: Option<u32>,
    pub players_per_server: Option<u32>,
    pub bots: Option<u32>,
    pub tick_hz: Option<tickpack_report::bench::TickRate>,
    pub step_duration: Option<Duration>,
    pub warmup: Option<Duration>,
    pub max_steps: Option<u32>,
    /// `--fixed-steps`: a tile a step, never faster.
    pub fixed_steps: bool,
    pub steps_past_failure: u32,
    pub confirm_failures: bool,
    /// Percent; 100 turns the reruns off.
    pub max_steal: f64,
    pub max_foreign: f64,
    pub steal_retries: u32,
    /// Percent of the server cores.
    pub headroom: f64,
    pub qos: QosFlags,
    pub probe: Option<tickpack_probe::ProbeProtocol>,
    pub backend: Option<String>,
    pub net: String,
    /// `None`: CPU 0 when there are two or more.
    pub load_cpus: Option<Vec<usize>>,
    pub power: crate::power::PowerConfig,
    pub load: Option<String>,
    pub allow_idle: bool,
    pub project_cores: Option<u32>,
    pub before: before::BeforeFlags,
    /// The steps' hosts' run dir (the caller resolves its default).
    pub run_dir: PathBuf,
    pub host_name: String,
    pub range: Option<String>,
    /// `--tile FILE`: a tile of several games instead of one.
    pub tile: Option<PathBuf>,
}

/// The QoS flags; the limits not given follow the tick rate.
#[derive(Debug, Clone, Default)]
pub struct QosFlags {
    pub p99_ms: Option<f64>,
    pub relative: f64,
    pub tick_lateness_ms: Option<f64>,
    pub loss_percent: f64,
    pub frame_budget: f64,
    pub query_p99_ms: Option<f64>,
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

impl Request {
    /// The run this request asks for, every flag checked against the
    /// others, the game's definition and this machine.
    pub fn plan(&self) -> Result<BenchConfig, PlanError> {
        // Checked first: the name becomes part of the run dir's path.
        if tickpack_sys::validate_host_name(&self.host_name).is_err() {
            return Err(config_error(format!(
                "--name {:?}: 1-{} characters of a-z and 0-9",
                self.host_name,
                tickpack_sys::MAX_HOST_NAME
            )));
        }
        let compare = self.compare.unwrap_or(Compare::None);
        let chosen = game::choose(self)?;
        let main = &chosen[0];
        let online = tickpack_net::cpu::online_cpus();
        let load = match &self.load_cpus {
            Some(c) => c.clone(),
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
            game: main.server.name().into(),
            game_settings: main.recorded.clone(),
            tile_servers: self.tile_servers.unwrap_or(if self.quick {
                1
            } else {
                default_tile_servers(server_cores)
            }),
            players_per_server: main.players_per_server,
            bots_per_server: main.bots,
            tick_hz: main.tick_hz,
            cost: main.cost(),
            step_duration_s: self
                .step_duration
                .map_or(if self.quick { 2.0 } else { 6.0 }, |d| d.as_secs_f64()),
            warmup_s: main.warmup_s,
            max_steps: self.max_steps.unwrap_or(if self.quick { 2 } else { 12 }),
            adaptive_steps: !self.fixed_steps,
            steps_past_failure: self.steps_past_failure,
            confirm_failures: self.confirm_failures,
            max_steal_percent: (self.max_steal < 100.0).then_some(self.max_steal),
            max_foreign_percent: (self.max_foreign < 100.0).then_some(self.max_foreign),
            steal_retries: self.steal_retries,
            headroom_target: self.headroom / 100.0,
            qos: main.qos,
            compare: compare.as_str().into(),
            project_cores: self.project_cores,
            allow_idle: self.allow_idle,
            load: main.load.clone(),
            tile: None,
            probe: self
                .probe
                .map(|p| p.to_string())
                .or_else(|| main.probe.clone()),
        };
        let backend = self
            .backend
            .as_deref()
            .map(str::parse::<tickpack_host::fleet::Backend>)
            .transpose()
            .map_err(config_error)?;
        let net = self
            .net
            .parse()
            .map_err(|e| config_error(format!("--net: {e}")))?;
        before::check_source_addr_room(
            self.range.as_deref(),
            &settings,
            &main.server,
            backend,
            net,
        )?;
        if let Some(w) = self.warmup {
            if w > Duration::from_secs(3600) {
                return Err(config_error("--warmup must be at most 1h"));
            }
        }
        let before = before::before(&self.before)?;
        let exe = std::env::current_exe()
            .map_err(|e| config_error(format!("finding the tickpack binary: {e}")))?;
        let games = if compare == Compare::Game {
            chosen.iter().map(game::Chosen::variant).collect()
        } else {
            vec![]
        };
        let game = chosen.into_iter().next().expect("one game at least").server;
        // A tile: its members instead of one game, its step and warm-up.
        let mut settings = settings;
        let tile = match &self.tile {
            Some(path) => {
                let t = tile::tile_plan(path, self.quick)?;
                settings.game = format!("tile {}", t.settings.name);
                settings.tile_servers = t.servers_per_tile();
                settings.players_per_server = t.members.first().map_or(0, |m| m.players);
                settings.bots_per_server = 0;
                settings.step_duration_s = t.step.as_secs_f64();
                settings.warmup_s = t.warmup.as_secs_f64();
                settings.probe = None;
                settings.load = None;
                settings.tile = Some(t.settings.clone());
                Some(t)
            }
            None => None,
        };
        if self.compare == Some(Compare::Load) && tile.is_none() {
            return Err(config_error(
                "--compare load needs --tile FILE (the players whose rhythm it compares)",
            ));
        }
        Ok(BenchConfig {
            settings,
            out_dir: self.out.clone(),
            compare,
            backend,
            net,
            load_generator_cpus: load,
            power: self.power.clone(),
            before,
            exe,
            run_dir: self.run_dir.clone(),
            host_name: self.host_name.clone(),
            range: self.range.clone(),
            game,
            batch: self.batch.clone(),
            games,
            // A short look runs once; otherwise enough ladders for a
            // median and a range, as hyperfine times a command.
            repeat: self
                .repeat
                .unwrap_or(if self.quick { 1 } else { crate::DEFAULT_REPEAT }),
            tile,
        })
    }
}
