//! The game definition: one TOML file says everything tickpack needs to
//! host, query, judge and (where it can) play a game server. The annotated
//! complete example is `docs/games.md`; the shipped ones are `games/*.toml`.
//!
//! [`GameDef::parse`] reads a file's text (unknown keys are errors) and
//! checks it as a whole ([`GameDef::check`]); every refusal is one line,
//! `FILE:LINE: what is wrong` ([`DefError`]). Nothing here reads a file or
//! looks at the machine: the caller reads the text (bounded by
//! [`MAX_DEF_BYTES`]) and checks that the program is installed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tickpack_wire::TickRate;

use crate::check::HealthTiming;
use crate::gamedig::GamedigProtocol;
use crate::names::check_placeholders;
pub use crate::names::{check_value, is_name};
pub use crate::query_protocol::QueryProtocol;
pub use crate::transport::Transport;

/// The largest definition file read, in bytes.
pub const MAX_DEF_BYTES: u64 = 64 * 1024;
pub use crate::names::MAX_VALUE_LEN;
/// The most config files a definition writes into an instance.
pub const MAX_FILES: usize = 16;

/// Per-instance placeholders, filled by the host for each instance
/// (`{rcon_password}` only for a game with `[rcon]`: a new secret at every
/// start, [`crate::console::Password`]).
pub const INSTANCE_PLACEHOLDERS: [&str; 6] =
    ["ip", "port", "id", "dir", "tickpack", "rcon_password"];
/// Game-level placeholders every definition has, filled from the run's
/// settings: the tick rate two ways, the bots, the client slots, the
/// emulated players per server, and those players and the bots together.
pub const GAME_PLACEHOLDERS: [&str; 6] = [
    "tick_hz",
    "tick_interval_s",
    "bots",
    "slots",
    "players",
    "players_and_bots",
];

/// A game definition, as read from its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameDef {
    /// What `--game` calls it: lower-case letters, digits, `-` and `_`.
    pub name: String,
    /// One line for `games list`.
    pub description: String,
    /// The Debian packages that provide the server (named in the error
    /// when its program is missing; installed by `scripts/setup.sh` for the
    /// shipped games).
    #[serde(default)]
    pub packages: Vec<String>,
    /// The command line, words split on white space, with placeholders:
    /// `{ip} {port} {id} {dir} {tickpack}` (each instance's), the game's
    /// `{tick_hz} {tick_interval_s} {bots} {slots} {players}
    /// {players_and_bots}` and every name in `[variables]`.
    pub command: String,
    /// Environment beside the host's own (which sets `HOME` = `{dir}`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The port the server binds (every netns instance has its own address).
    pub port: u16,
    /// `udp` (the default) or `tcp`.
    #[serde(default)]
    pub transport: Transport,
    /// Client slots (`{slots}`): humans and bots together.
    pub slots: u16,
    /// The game's own variables and their defaults, e.g. `map = "oa_dm1"`;
    /// a run may set them (`--set map=...`). A value may be a
    /// comma-separated list, which a config file's `{for ...}` line
    /// repeats over ([`crate::template`]).
    #[serde(default)]
    pub variables: BTreeMap<String, String>,
    /// What the game's data must hold for a run's values ([`DataDef`]).
    #[serde(default)]
    pub data: DataDef,
    pub tick: TickDef,
    #[serde(default)]
    pub bots: BotsDef,
    #[serde(default)]
    pub query: QueryDef,
    #[serde(default)]
    pub ready: ReadyDef,
    /// The health check's timing (needs a `[query]` protocol); absent:
    /// the protocol's own ([`crate::Health::default_timing`]).
    #[serde(default)]
    pub health: Option<HealthDef>,
    #[serde(default)]
    pub stop: StopDef,
    #[serde(default)]
    pub players: PlayersDef,
    /// A load command of the user's, started by `bench` beside every
    /// server ([`LoadDef`]).
    #[serde(default)]
    pub load: Option<LoadDef>,
    /// `[rcon]`: how the host sends the running server a console command
    /// (a map change), [`crate::console`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcon: Option<crate::console::RconDef>,
    /// Config files written into each instance's directory before every
    /// start.
    #[serde(default, rename = "file")]
    pub files: Vec<FileDef>,
    /// `[agones]`: the game in an Agones Fleet ([`crate::agones`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agones: Option<crate::agones::AgonesDef>,
}

/// `[load]`: a command `bench` starts for every server, on the load
/// generator's CPUs, in a sandbox that reaches only that server
/// (`tickpack_host::supervisor::LoadProcess`), to play on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadDef {
    /// The command line, split on white space; placeholders
    /// [`LOAD_PLACEHOLDERS`].
    pub command: String,
    /// `{players}`: players per server (0-1024).
    #[serde(default)]
    pub players: u16,
}

/// What a load command's words may name: `{ip}` and `{port}` its server's
/// address, `{id}` its number, `{players}` players per server, `{tick_hz}`,
/// `{warmup_s}` and `{duration_s}` the step's warm-up and measured window
/// in seconds, `{dir}` its own directory, `{out}` the file in it the bench
/// reads its samples from (a `tickpack players --json` result), and
/// `{tickpack}` this binary.
pub const LOAD_PLACEHOLDERS: [&str; 10] = [
    "ip",
    "port",
    "id",
    "players",
    "tick_hz",
    "warmup_s",
    "duration_s",
    "dir",
    "out",
    "tickpack",
];

/// Refuses a load command that is empty or names a placeholder not in
/// [`LOAD_PLACEHOLDERS`]; the reason in one line.
pub fn check_load_command(command: &str) -> Result<(), String> {
    if command.split_whitespace().next().is_none() {
        return Err("the load command is empty".into());
    }
    if command.len() > 4096 {
        return Err("the load command is longer than 4096 characters".into());
    }
    check_placeholders(command, &LOAD_PLACEHOLDERS)
}

/// `[data]`: values of a run checked against the installed game before
/// anything starts (`GameServer::check_system`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataDef {
    /// A variable whose every item (a comma-separated list) must be a map
    /// in the Quake 3 data files (`*.pk3`) of `pk3_dirs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pk3_maps: Option<String>,
    /// The directories holding the game's `*.pk3` files (absolute).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pk3_dirs: Vec<String>,
}

/// The tick rate: its default and the range the game accepts. How it is
/// set is where `{tick_hz}` or `{tick_interval_s}` stands (the command or
/// a file); a definition with neither has a fixed tick (`min_hz` =
/// `max_hz` = `hz`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TickDef {
    pub hz: TickRate,
    #[serde(default)]
    pub min_hz: Option<TickRate>,
    #[serde(default)]
    pub max_hz: Option<TickRate>,
}

/// Server-side bots: how many by default and at most. They are asked for
/// where `{bots}` stands.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BotsDef {
    #[serde(default)]
    pub default: u16,
    #[serde(default)]
    pub max: Option<u16>,
}

/// The game's own status query: the host's health check, `probe`, the
/// bench's `query_latency_us`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryDef {
    #[serde(default)]
    pub protocol: QueryProtocol,
    /// With `protocol = "gamedig"`: which of gamedig's protocols
    /// ([`crate::gamedig::GAMEDIG_PROTOCOLS`], e.g. `"unreal2"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamedig: Option<String>,
}

impl QueryDef {
    /// The gamedig protocol named, when the protocol is `gamedig` (checked
    /// at parse time, so a parsed definition always has one).
    pub fn gamedig_protocol(&self) -> Option<GamedigProtocol> {
        match self.protocol {
            QueryProtocol::Gamedig => self.gamedig.as_deref().and_then(GamedigProtocol::from_name),
            _ => None,
        }
    }
}

/// When a started server counts as up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadyDef {
    /// `query` (its query answers; the default when it has one),
    /// `process` (its process lives 200 ms), `log` (a line of its output
    /// contains `log`) or `port` (its port is bound, or listening for TCP).
    #[serde(default)]
    pub by: Option<ReadyBy>,
    /// With `by = "log"`: a piece of the line that says it is ready.
    #[serde(default)]
    pub log: Option<String>,
    /// Seconds a server may take to be ready, plus `per_server_s` for
    /// every server started at once (they load their data together).
    #[serde(default = "default_ready_timeout")]
    pub timeout_s: f64,
    #[serde(default)]
    pub per_server_s: f64,
    /// Seconds after every server is ready before anything is measured
    /// (players connect, bots join, the map settles).
    #[serde(default = "default_warmup")]
    pub warmup_s: f64,
}

fn default_warmup() -> f64 {
    1.0
}

fn default_ready_timeout() -> f64 {
    20.0
}

impl Default for ReadyDef {
    fn default() -> Self {
        ReadyDef {
            by: None,
            log: None,
            timeout_s: default_ready_timeout(),
            per_server_s: 0.0,
            warmup_s: default_warmup(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadyBy {
    Query,
    Process,
    Log,
    Port,
}

/// `[health]`: how often the query asks and how many unanswered queries
/// in a row are allowed; each key defaults to the protocol's own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthDef {
    #[serde(default)]
    pub interval_s: Option<f64>,
    #[serde(default)]
    pub unresponsive_after: Option<u32>,
    #[serde(default)]
    pub kill_after: Option<u32>,
}

/// How a server is stopped: the launch contract's own type.
pub type StopDef = crate::launch::Stop;
pub use crate::launch::StopSignal;

/// The players tickpack can emulate for this game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlayersDef {
    #[serde(default)]
    pub protocol: PlayerProtocol,
    /// Emulated players per server by default.
    #[serde(default)]
    pub default: u16,
    /// The q3 network protocol number (ioquake3 1.36: 71).
    #[serde(default)]
    pub q3_protocol: Option<u32>,
    /// Most emulated players per server from one source address (the
    /// server rate-limits what one address may ask: ioquake3 answers a
    /// burst of 10 challenge requests and queries, then one a second: 4
    /// leave room for retries and queries); the load generator spreads each server's
    /// players over enough addresses. `None`: no limit known.
    #[serde(default)]
    pub per_address: Option<u16>,
    /// Snapshots a second the server sends each player, when fewer than
    /// its ticks (Teeworlds: one every second tick, 25 at 50 Hz). The
    /// default p99 transaction-latency limit is one snapshot interval +
    /// 5 ms: a player cannot see an input sooner than the next snapshot.
    /// `None`: one a tick.
    #[serde(default)]
    pub snapshot_hz: Option<u16>,
    /// Most emulated players and bots together per server (OpenArena's
    /// `bot_minplayers` fills up to 16); `None`: no limit but the slots
    /// for the bots.
    #[serde(default)]
    pub max_with_bots: Option<u16>,
}

impl Default for PlayersDef {
    fn default() -> Self {
        PlayersDef {
            protocol: PlayerProtocol::None,
            default: 0,
            q3_protocol: None,
            per_address: None,
            snapshot_hz: None,
            max_with_bots: None,
        }
    }
}

/// The protocols emulated players speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlayerProtocol {
    /// tickpack's own (the reference server).
    Reference,
    /// Quake III Arena (ioquake3).
    Q3,
    /// Teeworlds 0.7 (0.7.5).
    #[serde(rename = "teeworlds7")]
    Tw7,
    /// None: the game is judged on its run delay and query latency.
    #[default]
    None,
}

impl PlayerProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            PlayerProtocol::Reference => "reference",
            PlayerProtocol::Q3 => "q3",
            PlayerProtocol::Tw7 => "teeworlds7",
            PlayerProtocol::None => "none",
        }
    }
}

/// One config file written into each instance's directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileDef {
    /// Relative to the instance's directory; no `..`, no leading `/`.
    pub path: String,
    /// The text, with placeholders.
    pub contents: String,
}

/// A refused definition: `FILE:LINE: what is wrong` (`FILE: what is
/// wrong` when no line is to blame: the file cannot be read, the name is
/// not a game's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DefError {
    pub file: String,
    /// 1-based; 0 when the file as a whole is refused.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for DefError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file, self.message),
            n => write!(f, "{}:{n}: {}", self.file, self.message),
        }
    }
}

impl GameDef {
    /// Whether `{name}` stands in the command, the environment or a file
    /// (or a file repeats a line `up to name`).
    pub fn uses(&self, name: &str) -> bool {
        let p = format!("{{{name}}}");
        self.command.contains(&p)
            || self.env.values().any(|v| v.contains(&p))
            || self.files.iter().any(|f| {
                f.contents.contains(&p)
                    || crate::template::counts_in(&f.contents).any(|c| c == name)
            })
    }

    /// The tick rates the game accepts (the default alone when fixed).
    pub fn tick_range(&self) -> (TickRate, TickRate) {
        let t = &self.tick;
        (t.min_hz.unwrap_or(t.hz), t.max_hz.unwrap_or(t.hz))
    }

    /// The most bots a server may be asked for (0 when it has none).
    pub fn bots_max(&self) -> u16 {
        self.bots
            .max
            .unwrap_or(if self.bots.default > 0 { self.slots } else { 0 })
    }

    /// When a server counts as up.
    pub fn ready_by(&self) -> ReadyBy {
        self.ready.by.unwrap_or(match self.query.protocol {
            // The host checks gamedig games by their process only.
            QueryProtocol::None | QueryProtocol::Gamedig => ReadyBy::Process,
            _ => ReadyBy::Query,
        })
    }

    /// The health check's timing the definition sets (`[health]`, each
    /// missing key the protocol's default); `None` without `[health]`.
    pub fn health_timing(&self) -> Option<HealthTiming> {
        let h = self.health?;
        // None for gamedig games and games without a query: refused with
        // [health] (checked by process only).
        let protocol = self.query.protocol.health();
        let d = protocol.default_timing();
        Some(HealthTiming {
            interval_s: h.interval_s.unwrap_or(d.interval_s),
            unresponsive_after: h.unresponsive_after.unwrap_or(d.unresponsive_after),
            kill_after: h.kill_after.unwrap_or(d.kill_after),
        })
    }

    /// How long `servers` servers started at once may take to be ready.
    pub fn start_limit(&self, servers: u32) -> std::time::Duration {
        std::time::Duration::from_secs_f64(
            self.ready.timeout_s + self.ready.per_server_s * f64::from(servers),
        )
    }

    /// The default tick rate.
    pub fn tick(&self) -> TickRate {
        self.tick.hz
    }

    /// The program: the command's first word.
    pub fn program(&self) -> &str {
        self.command.split_whitespace().next().unwrap_or("")
    }
}
