//! What a ladder climbs and who runs its steps, below both the ladder
//! ([`crate::ladder`], which decides what to run next) and the real step
//! runner ([`crate::step`]): a variant ([`LadderSpec`], [`GameVariant`]),
//! the run's plan ([`Plan`]), one step asked ([`StepRequest`]), the
//! [`StepRunner`] that runs it and the [`Observer`] told of progress.

use std::path::PathBuf;

use tickpack_host::fleet::Backend;
use tickpack_host::guard::BatchControl;
use tickpack_host::netpath::NetKind;
use tickpack_host::placement::Policy;
use tickpack_report::bench::{BenchSettings, Ladder, LadderGame, Step};

use crate::BenchError;

/// One variant to climb (a comparison runs several).
#[derive(Debug, Clone, PartialEq)]
pub struct LadderSpec {
    pub label: String,
    /// How sentences name the variant ("plain processes", "netns/macvlan").
    pub name: String,
    pub backend: Backend,
    pub net: NetKind,
    pub placement: Policy,
    /// Batch work beside the servers (`--batch`) and how it is held back;
    /// `None`: no batch in this variant.
    pub batch: Option<BatchControl>,
    /// The variant's own game (`--compare game`); `None`: the run's.
    pub game: Option<GameVariant>,
    /// How a tile's players come and go in this variant (`--tile`);
    /// `None`: a one-game run.
    pub load: Option<tickpack_report::tile::LoadVariant>,
}

/// A variant's own game and the settings that go with it: each game keeps
/// its players, bots, tick rate, warm-up and the QoS limits of its tick.
#[derive(Debug, Clone, PartialEq)]
pub struct GameVariant {
    pub server: crate::GameServer,
    pub players_per_server: u32,
    pub bots_per_server: u32,
    pub tick_hz: tickpack_report::bench::TickRate,
    pub warmup_s: f64,
    pub qos: tickpack_report::bench::QosLimits,
    /// As recorded in result.json (versions, map, ...).
    pub game_settings: tickpack_report::game_settings::GameSettings,
    /// The query protocol probed beside this game's steps (a game judged
    /// on its query), if any.
    pub probe: Option<String>,
}

impl LadderSpec {
    /// The settings this variant's steps run with: the run's, with the
    /// variant's game in place of the run's.
    pub fn settings(&self, run: &BenchSettings) -> BenchSettings {
        let mut s = run.clone();
        if let Some(g) = &self.game {
            s.game = g.server.name().into();
            s.game_settings = g.game_settings.clone();
            s.players_per_server = g.players_per_server;
            s.bots_per_server = g.bots_per_server;
            s.tick_hz = g.tick_hz;
            s.warmup_s = g.warmup_s;
            s.probe = g.probe.clone();
            s.qos = g.qos;
        }
        s
    }

    /// The game server this variant's steps run.
    pub fn game_server<'a>(&'a self, run: &'a crate::GameServer) -> &'a crate::GameServer {
        self.game.as_ref().map_or(run, |g| &g.server)
    }

    /// The game as the ladder records it (only for a variant's own game).
    pub(crate) fn ladder_game(&self) -> Option<LadderGame> {
        self.game.as_ref().map(|g| LadderGame {
            game: g.server.name().into(),
            game_settings: g.game_settings.clone(),
            players_per_server: g.players_per_server,
            bots_per_server: g.bots_per_server,
            tick_hz: g.tick_hz,
            warmup_s: g.warmup_s,
            qos: g.qos,
        })
    }
}

/// Where and how to run, shared by all ladders of a run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub settings: BenchSettings,
    /// CPUs kept for the load generator (and the host).
    pub load_generator_cpus: Vec<usize>,
    /// CPUs the servers may use.
    pub server_cpus: Vec<usize>,
    /// The tickpack binary (servers are `tickpack server`).
    pub exe: PathBuf,
    /// Run dir of the temporary hosts.
    pub run_dir: PathBuf,
    /// Host name prefixing everything created ("tp<name>...").
    pub host_name: String,
    /// Instance address range (netns); `None`: the host's default.
    pub range: Option<String>,
    /// The game server the steps run.
    pub game: crate::GameServer,
    /// Batch commands (`--batch`, parsed) for the variants that run batch
    /// work.
    pub batch: Vec<tickpack_host::guard::batch::BatchSpec>,
    /// The tile a `--tile` run climbs (its steps then run
    /// [`crate::tile::step::run`]); `None`: one game.
    pub tile: Option<crate::tile::TilePlan>,
}

/// Told about progress (a progress bar, a log line).
pub trait Observer {
    fn step_started(&mut self, ladder: &str, index: u32, servers: u32);
    /// After every finished step, with the ladder so far.
    fn step_finished(&mut self, ladder: &Ladder);
    /// Something worth telling the person running the benchmark.
    fn note(&mut self, _msg: &str) {}
    /// A repetition of the comparison starts (1-based, of `of`).
    fn repetition_started(&mut self, _repetition: u32, _of: u32) {}
}

/// What the ladder asks of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRequest {
    /// 1-based step number.
    pub index: u32,
    /// Tiles the step runs (the step number, unless the ladder grows
    /// faster: [`crate::ladder::growth`]).
    pub tiles: u32,
    pub servers: u32,
    /// p99 transaction latency of the first step (µs), once it ran.
    pub baseline: Option<u64>,
}

/// Runs ladder steps (hyperfine's `Executor`): the real runner brings up
/// servers and players, a test scripts the outcomes.
pub trait StepRunner {
    /// Runs one step and judges it; `None` when it was interrupted (the
    /// step is then not recorded).
    fn run_step(
        &mut self,
        spec: &LadderSpec,
        req: &StepRequest,
    ) -> Result<Option<Step>, BenchError>;
    /// True once the run should stop (Ctrl-C): no further step starts.
    fn stop_requested(&self) -> bool;
}
