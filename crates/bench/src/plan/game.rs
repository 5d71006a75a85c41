//! The game (or the two games of `--compare game`) a run's steps run, each
//! picked the same way: its definition from the registry (a name) or a
//! file, its settings from `--set NAME=VALUE`, `--bots` and the tick rate,
//! its players, warm-up, load command and QoS limits from the flags or
//! else the definition; then built with [`GameServer::new`] and checked on
//! this machine. No game is named here: what differs between games is in
//! their definition files.

use tickpack_game::{GameDef, GameSettings, PlayerProtocol, QueryProtocol};
use tickpack_report::bench::{LoadSettings, QosLimits};

use super::{config_error, PlanError, Request};
use crate::{Compare, GameServer, GameVariant};

/// One game of the run, with everything the run takes from it.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub server: GameServer,
    pub players_per_server: u32,
    pub bots: u32,
    pub tick_hz: tickpack_report::bench::TickRate,
    pub warmup_s: f64,
    /// The load command (`--load`, else the definition's `[load]`).
    pub load: Option<LoadSettings>,
    pub qos: QosLimits,
    /// The query probed by default (a game without players).
    pub probe: Option<String>,
    /// The game's settings and versions as result.json records them.
    pub recorded: tickpack_report::game_settings::GameSettings,
}

impl Chosen {
    /// The `cost` variable's value, for the settings' `cost` field
    /// (`default` when the game has none).
    pub fn cost(&self) -> String {
        self.server
            .settings
            .variables
            .get("cost")
            .cloned()
            .unwrap_or_else(|| "default".into())
    }

    /// One variant of `--compare game`.
    pub fn variant(&self) -> GameVariant {
        GameVariant {
            game_settings: self.recorded.clone(),
            probe: self.probe.clone(),
            server: self.server.clone(),
            players_per_server: self.players_per_server,
            bots_per_server: self.bots,
            tick_hz: self.tick_hz,
            warmup_s: self.warmup_s,
            qos: self.qos,
        }
    }
}

/// `--compare game`'s pair when none is given: the first two built-in
/// games tickpack can play.
pub fn default_pair() -> Vec<String> {
    tickpack_game::registry::built_in()
        .into_iter()
        .filter(|(d, _)| d.players.protocol != PlayerProtocol::None)
        .map(|(d, _)| d.name)
        .take(2)
        .collect()
}

/// The games of the run, the first the main one (and the ratios' baseline
/// with `--compare game`).
pub fn choose(r: &Request) -> Result<Vec<Chosen>, PlanError> {
    let compare_game = r.compare == Some(Compare::Game);
    let names: Vec<String> = match (compare_game, r.games.len()) {
        (true, 0) => default_pair(),
        (true, 2) | (false, 1) => r.games.clone(),
        (false, 0) => tickpack_game::registry::names()
            .into_iter()
            .take(1)
            .collect(),
        (true, n) => {
            return Err(config_error(format!(
                "--compare game compares two games: give --game twice (or none: {}), got {n}",
                default_pair().join(" and ")
            )))
        }
        (false, n) => {
            return Err(config_error(format!(
                "--game given {n} times: one game per run, or two with --compare game"
            )))
        }
    };
    if compare_game && r.probe.is_some() {
        return Err(config_error(
            "--probe asks one query protocol; the two games of --compare game do not share one",
        ));
    }
    let mut chosen = vec![];
    for name in &names {
        let (def, _) =
            tickpack_game::source::load(name).map_err(|e| config_error(e.to_string()))?;
        chosen.push(one(r, def, compare_game)?);
    }
    // `--set` and `--cost` with two games: each applies to the games that
    // have the variable, and at least one must.
    if compare_game {
        for v in assignments(r) {
            let var = v.split('=').next().unwrap_or_default();
            if !chosen.iter().any(|c| has_variable(&c.server, var)) {
                return Err(config_error(format!(
                    "{}: neither game has a variable {var:?} (`tickpack games show GAME`)",
                    flag_of(r, &v)
                )));
            }
        }
    }
    for c in &chosen {
        if c.players_per_server == 0 && c.bots == 0 && c.load.is_none() && !r.allow_idle {
            return Err(PlanError::Idle(idle_words(&c.server)));
        }
    }
    Ok(chosen)
}

/// `--set` and `--cost`, as `NAME=VALUE` each.
fn assignments(r: &Request) -> Vec<String> {
    let mut v = r.set.clone();
    if let Some(c) = &r.cost {
        v.push(format!("cost={c}"));
    }
    v
}

/// The flag an assignment came from, for messages.
fn flag_of(r: &Request, assignment: &str) -> String {
    match &r.cost {
        Some(c) if assignment == format!("cost={c}") && !r.set.iter().any(|s| s == assignment) => {
            format!("--cost {c}")
        }
        _ => format!("--set {assignment}"),
    }
}

fn has_variable(server: &GameServer, var: &str) -> bool {
    server.definition().variables.contains_key(var)
}

/// One game from its definition: the flags given apply, the rest is the
/// definition's; checked on this machine before anything is created.
fn one(r: &Request, def: GameDef, compare_game: bool) -> Result<Chosen, PlanError> {
    let name = def.name.clone();
    let config = |m: String| config_error(format!("--game {name}: {m}"));
    let mut settings = GameSettings::defaults(&def);
    for v in assignments(r) {
        let var = v.split('=').next().unwrap_or_default();
        if !def.variables.contains_key(var) {
            if compare_game {
                continue;
            }
            if r.cost.is_some() && var == "cost" && !r.set.iter().any(|s| s == &v) {
                return Err(config(
                    "--cost sets the game's `cost` variable, and this game has none (its game work is its own: use --bots, or --set NAME=VALUE for its variables)".into(),
                ));
            }
        }
        settings.set(&def, &v).map_err(&config)?;
    }
    let playable = def.players.protocol != PlayerProtocol::None;
    let load = load_settings(r, &def, if playable { def.players.default } else { 0 });
    if let Some(n) = r
        .players_per_server
        .filter(|&n| n > 0 && !playable && load.is_none())
    {
        return Err(config(format!(
            "--players-per-server {n}: tickpack has no players for this game (its steps are judged on run delay and query latency)"
        )));
    }
    if let Some(t) = r.tick_hz {
        settings.tick_hz = t;
    }
    if let Some(b) = r.bots {
        settings.bots = u16::try_from(b).unwrap_or(u16::MAX);
    }
    let tick_hz = settings.tick_hz;
    let bots = u32::from(settings.bots);
    let players_per_server = match &load {
        // The load command plays; its {players} are the step's players.
        Some(l) => l.players,
        None if playable => r
            .players_per_server
            .unwrap_or(u32::from(def.players.default)),
        None => 0,
    };
    if let Some(l) = &load {
        tickpack_game::def::check_load_command(&l.command)
            .map_err(|e| config_error(format!("--load {:?}: {e}", l.command)))?;
    }
    let total = players_per_server + bots;
    if load.is_none() && total > u32::from(def.slots) {
        return Err(config(format!(
            "--players-per-server {players_per_server} + --bots {bots} = {total}: a server of this game carries at most {} players and bots",
            def.slots
        )));
    }
    // --quick shortens the warm-up of a game ready at once.
    let warmup_s = r.warmup.map_or(
        if r.quick && def.ready.warmup_s <= 1.0 {
            def.ready.warmup_s.min(0.5)
        } else {
            def.ready.warmup_s
        },
        |d| d.as_secs_f64(),
    );
    def.server_spec(&settings).map_err(&config)?;
    let qos = qos_limits(r, &def, tick_hz, playable)?;
    let server = GameServer::new(def, settings);
    server.check_system().map_err(config_error)?;
    let probe = default_probe(&server);
    let recorded = recorded_settings(&server);
    Ok(Chosen {
        server,
        players_per_server,
        bots,
        tick_hz,
        warmup_s,
        load,
        qos,
        probe,
        recorded,
    })
}

/// The load command of a run: `--load` (with `--players-per-server`, else
/// `players` as `{players}`), else the definition's `[load]`.
fn load_settings(r: &Request, def: &GameDef, players: u16) -> Option<LoadSettings> {
    let (command, players) = match (&r.load, &def.load) {
        (Some(c), _) => (
            c.clone(),
            r.players_per_server.unwrap_or(u32::from(players)),
        ),
        (None, Some(l)) => (
            l.command.clone(),
            r.players_per_server.unwrap_or(u32::from(l.players)),
        ),
        (None, None) => return None,
    };
    Some(LoadSettings { command, players })
}

/// The QoS limits from the flags over the game's defaults at its tick
/// rate (`tickpack_tile::qos::game_limits`, which a tile's members start
/// from too: the transaction limit follows the snapshots a player sees,
/// one a tick or fewer where the definition says so; a game without
/// players is judged on its run delay and, when it answers one, its
/// query).
fn qos_limits(
    r: &Request,
    def: &GameDef,
    tick_hz: tickpack_report::bench::TickRate,
    playable: bool,
) -> Result<QosLimits, PlanError> {
    let f = &r.qos;
    let mut qos = tickpack_tile::qos::game_limits(def, tick_hz, playable);
    if let Some(ms) = f.p99_ms {
        qos.p99_transaction_us = (ms * 1000.0) as u64;
    }
    if let Some(ms) = f.tick_lateness_ms {
        qos.p99_tick_lateness_us = (ms * 1000.0) as u64;
    }
    qos.p99_relative_to_baseline = f.relative;
    qos.max_snapshot_loss = f.loss_percent / 100.0;
    qos.p99_frame_budget = f.frame_budget;
    if let Some(ms) = f.query_p99_ms {
        if r.probe.is_none() {
            return Err(config_error(
                "--qos-query-p99-ms needs --probe q3|a2s (the query latency it limits)",
            ));
        }
        qos.p99_query_us = Some(((ms * 1000.0) as u64).max(1));
    }
    Ok(qos)
}

/// The query a game is judged on when it has no players: its own
/// definition's, probed by default.
fn default_probe(game: &GameServer) -> Option<String> {
    if game.player_protocol().is_some() {
        return None;
    }
    query_probe_name(game)
}

/// The prober's name for the game's own query (its definition's
/// `[query]`), if it has one the prober speaks.
pub(crate) fn query_probe_name(game: &GameServer) -> Option<String> {
    let def = game.definition();
    // The reference server answers A2S too, but its own game is played,
    // not probed, by default.
    match def.query.protocol {
        QueryProtocol::Tickpack => None,
        _ => def.protocols().probe.map(|p| p.to_string()),
    }
}

/// The game's settings, description and versions as result.json records
/// them.
pub fn recorded_settings(game: &GameServer) -> tickpack_report::game_settings::GameSettings {
    let def = game.definition();
    let settings = &game.settings;
    let (tick_hz, bots, variables) = (
        Some(settings.tick_hz),
        Some(u32::from(settings.bots)),
        settings.variables.clone(),
    );
    tickpack_report::game_settings::GameSettings {
        tick_hz,
        bots,
        variables,
        packages: def
            .packages
            .iter()
            .filter_map(|p| Some((p.clone(), package_version(p)?)))
            .collect(),
        description: Some(def.description.clone()).filter(|d| !d.is_empty()),
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

/// Why a run would measure idle servers, and what to give instead.
pub fn idle_words(game: &GameServer) -> String {
    let def = game.definition();
    let mut give = vec![];
    if def.players.protocol != PlayerProtocol::None {
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
        "--game {}: nothing would load its servers (no emulated players, no bots, no load command), so every step would measure idle servers and any servers-per-core figure would mean nothing. Give {}; or --allow-idle to measure the idle footprint on purpose",
        game.name(),
        give.join(", or ")
    )
}
