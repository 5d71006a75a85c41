//! The host file (`tickpack host up --config FILE`), its TOML face: every
//! key optional, flags fill the rest. Read with [`FleetFile::load`] (keys
//! the file no longer has are refused with what to write instead) and
//! resolved with [`FleetFile::resolve`]: its text (sizes, CPU lists,
//! commands, the game's name) becomes a typed [`crate::FleetPlan`], which
//! is checked and built like any other.
//!
//! ```toml
//! name = "h1"                 # 1-8 of [a-z0-9]; prefixes everything created: tph1...
//! instances = 8
//! backend = "netns"           # or "process"
//! net = "veth"                # veth (default) | bridge | macvlan | ipvlan (netns only)
//! range = "198.18.0.0/16"     # instance addresses (netns): inside 10/8, 172.16/12,
//!                             # 192.168/16, 100.64/10 or 198.18/15 unless
//! allow_public_range = false  # says otherwise (a routed public range hides real hosts)
//! port = 40000                # every netns instance binds this; process: port + id - 1
//!                             # (default: the game's port)
//! placement = "spread"        # spread | pack | none
//! reserved_cpus = "0"         # kept for the host and the load generator
//! command = "{tickpack} server --bind {ip}:{port} --bots 4"   # placeholders: {ip} {port} {id} {dir} {tickpack}
//! cpu_quota = 1.0             # cores per instance (cgroup), optional
//! memory = "256MiB"           # per instance (cgroup); 4 MiB to 64 TiB; default 1 GiB (netns)
//! pids = 512                  # processes per instance (cgroup); 1 to 65536; default 512 (netns)
//! disk = "64MiB"              # size of the instance's files (netns): a tmpfs of its own,
//!                             # kept across restarts, gone at down, counted as its memory;
//!                             # default 256 MiB
//! log_size = "8MiB"           # cap of one instance log file (default 8 MiB, 4 MiB to 1 GiB);
//!                             # when full it becomes ID.log.1, so at most twice this per instance
//! health = "tickpack"         # tickpack (stats over the wire) | q3 (getinfo) | a2s (A2S_INFO)
//!                             # | none; default: the server's own (its definition's query)
//! batch = ["stress-ng --cpu 0"]  # best-effort work on the server CPUs (own cgroup, supervised)
//! batch_cgroup = "tp-batch/runner"  # or adopt an existing cgroup as the batch (netns)
//! batch_control = "guard"     # none | idle (SCHED_IDLE) | guard (the QoS guard; netns)
//! allow_host_ports = [53]     # host TCP/UDP ports instances may connect to (netns);
//!                             # default: none, instances only answer flows the host started
//!
//! game = "games/mine.toml"    # a game: a name from `tickpack games list` or a definition
//!                             # file's path (docs/games.md), launched from it with its port
//!                             # and query; default: `command` (the reference server)
//! game_vars = ["map=m1"]      # the game's [variables], NAME=VALUE (`tickpack games show GAME`)
//! bots = 4                    # bots per server (default: the definition's)
//! tick_hz = 30                # the server's tick rate (default: the definition's)
//!
//! [env]                       # the server's environment, placeholders expanded;
//! GAME_ID = "{id}"            # HOME is always the instance's directory ({dir})
//!
//! [[file]]                    # written into the instance's directory before each start
//! path = "cfg/server.cfg"     # (owned by the instance, never through a link); relative,
//!                             # at most 8 parts and 200 characters, no two the same or nested
//! contents = "set net_port {port}\n"
//!
//! [[instance]]                # per-instance overrides
//! id = 3
//! memory = "64MiB"
//! command = "/opt/game/srcds_run -port {port} +ip {ip}"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tickpack_game::launch::{ServerSpec, Word};
use tickpack_game::GameAsk;
use tickpack_host::fleet::{Backend, FleetConfig, FleetError, Health};
use tickpack_host::guard::batch::BatchSpec;
use tickpack_host::guard::BatchControl;
use tickpack_host::netpath::NetKind;
use tickpack_host::placement::Policy;

use crate::plan::{FleetPlan, InstancePlan};
use crate::size::{disk_size, parse_bytes};

/// Per-instance overrides (`[[instance]]`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceOverride {
    pub id: u32,
    pub command: Option<String>,
    pub memory: Option<String>,
    pub disk: Option<String>,
    pub cpu_quota: Option<f64>,
}

/// A config file of the server (`[[file]]`): a path relative to the
/// instance's directory and its contents, placeholders expanded.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub contents: String,
}

/// The host file: the settings of a [`FleetPlan`] as a file and flags
/// write them (backend, net, placement, health are the host's enums, in
/// their lowercase spellings; sizes, CPU lists and commands are text).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetFile {
    pub name: Option<String>,
    pub instances: Option<u32>,
    pub backend: Option<Backend>,
    pub net: Option<NetKind>,
    pub range: Option<String>,
    /// Accept an instance range outside the private, shared and
    /// benchmarking ranges (routing it would hide real hosts).
    pub allow_public_range: Option<bool>,
    /// The cap of one instance log file, e.g. 8MiB; one rotated file is
    /// kept beside it (`ID.log.1`).
    pub log_size: Option<String>,
    pub port: Option<u16>,
    pub placement: Option<Policy>,
    pub reserved_cpus: Option<String>,
    pub command: Option<String>,
    pub cpu_quota: Option<f64>,
    pub memory: Option<String>,
    /// Most processes and threads per instance (and batch): `pids.max`.
    pub pids: Option<u64>,
    pub disk: Option<String>,
    pub health: Option<Health>,
    /// The game: a name from the game registry or a definition file's
    /// path, launched from its definition; `None`: `command`.
    pub game: Option<String>,
    /// The game's variables, `NAME=VALUE` each.
    pub game_vars: Option<Vec<String>>,
    /// Bots per server (default: the game's).
    pub bots: Option<u8>,
    /// The server's tick rate in Hz (default: the game's).
    pub tick_hz: Option<tickpack_game::TickRate>,
    pub run_dir: Option<PathBuf>,
    pub allow_host_ports: Option<Vec<u16>>,
    #[serde(default, rename = "instance")]
    pub instances_override: Vec<InstanceOverride>,
    /// Environment of every instance's server (`[env]`), placeholders
    /// expanded; `HOME` is the host's (the instance's directory).
    pub env: Option<BTreeMap<String, String>>,
    /// Config files written into every instance's directory before each
    /// start (`[[file]]`).
    #[serde(default, rename = "file")]
    pub files: Vec<ConfigFile>,
    /// Batch commands run beside the servers (best effort, on the server
    /// CPUs, in their own cgroup, supervised).
    pub batch: Option<Vec<String>>,
    /// An existing cgroup (path below the cgroup root) to treat as the
    /// batch: tuned by the guard, never killed or removed.
    pub batch_cgroup: Option<PathBuf>,
    /// How the batch is held back: none | idle (SCHED_IDLE) | guard.
    pub batch_control: Option<BatchControl>,
}

/// What to write instead of a key that is gone, given its old value.
type Instead = fn(&toml::Value) -> String;

/// Keys a host file no longer has (one game's settings), each with what
/// to write instead.
const GONE_KEYS: [(&str, Instead); 4] = [
    ("map", |v| {
        // A rotation is the `map` variable's comma list.
        let maps: Vec<&str> = match v {
            toml::Value::Array(a) => a.iter().filter_map(|m| m.as_str()).collect(),
            v => v.as_str().into_iter().collect(),
        };
        let maps: Vec<&str> = maps
            .iter()
            .flat_map(|m| m.split(','))
            .map(str::trim)
            .collect();
        let maps = if maps.is_empty() {
            "NAME".to_string()
        } else {
            maps.join(",")
        };
        format!(
            "game_vars = [\"map={}\"]",
            tickpack_sys::text::escape(&maps, 80)
        )
    }),
    ("players_per_server", |v| {
        format!("bots = {}", v.as_integer().unwrap_or(0))
    }),
    ("sv_fps", |v| {
        format!("tick_hz = {}", v.as_integer().unwrap_or(20))
    }),
    ("game_args", |v| {
        let first = v
            .as_array()
            .and_then(|a| a.first())
            .and_then(|a| a.as_str())
            .unwrap_or("NAME=VALUE");
        format!(
            "game_vars = [\"{}\"] (the game's variables: tickpack games show GAME)",
            tickpack_sys::text::escape(first, 40)
        )
    }),
];

impl FleetFile {
    /// Reads a host file: only a regular file of at most
    /// [`tickpack_sys::user_file::MAX_CONFIG_BYTES`], as UTF-8 TOML.
    pub fn load(path: &Path) -> Result<Self, FleetError> {
        let text =
            tickpack_sys::user_file::read_text(path, tickpack_sys::user_file::MAX_CONFIG_BYTES)
                .map_err(|e| FleetError::Invalid(format!("cannot read {e}")))?;
        Self::from_toml(&text, path)
    }

    /// Parses a host file's text; `path` names it in errors, which are one
    /// line each.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, FleetError> {
        // A file that is not TOML at all (`--config /etc/shadow`) is named
        // with the line, never quoted: its text may be a secret.
        let table = toml::from_str::<toml::Table>(text)
            .map_err(|e| FleetError::Invalid(file_error(path, text, &e, false)))?;
        for (key, instead) in GONE_KEYS {
            if let Some(v) = table.get(key) {
                return Err(FleetError::Invalid(format!(
                    "{} line {}: {key} is no longer a host file key; write {} instead",
                    path.display(),
                    key_line(text, key),
                    instead(v)
                )));
            }
        }
        let file: FleetFile = toml::from_str(text)
            .map_err(|e| FleetError::Invalid(file_error(path, text, &e, true)))?;
        // `[env]`: the names a definition's may set, refused here with the
        // line (the loader's, and the host's own such as
        // TICKPACK_HEALTH_KEY, which the server would see twice).
        for name in file.env.iter().flat_map(|env| env.keys()) {
            if let Err(why) = tickpack_game::env_name::check_env_name(name) {
                let at = tickpack_game::lines::line_of(text, &["env".into(), name.clone()]);
                return Err(FleetError::Invalid(format!(
                    "{} line {at}: {why}",
                    path.display()
                )));
            }
        }
        Ok(file)
    }

    /// Resolves the text into a typed plan and builds it: the checks are
    /// [`FleetPlan::build`]'s; `default_run_root` is /run/tickpack
    /// normally.
    pub fn resolve(self, default_run_root: &Path) -> Result<FleetConfig, FleetError> {
        self.into_plan()?.build(default_run_root)
    }

    /// The typed plan this file asks for: sizes, CPU lists, commands and
    /// batch commands parsed, the game resolved (by the game crate, so
    /// nothing here names one).
    pub fn into_plan(self) -> Result<FleetPlan, FleetError> {
        let bad = |m: String| Err(FleetError::Invalid(m));
        let reserved_cpus = match self.reserved_cpus.as_deref() {
            None => None,
            Some("") | Some("none") => Some(vec![]),
            Some(s) => Some(parse_cpu_list(s)?),
        };
        let ask = game_ask(self.game, self.bots, self.tick_hz, self.game_vars);
        // Nothing asked of the game: the host's own command (or default).
        let asked = ask.asks_anything();
        let game = ask.resolve().map_err(FleetError::Invalid)?;
        let game_spec = match asked {
            true => Some(game.spec().map_err(FleetError::Invalid)?),
            false => None,
        };
        // The bots each instance is given, for its status.
        let bots = (asked && game.definition().bots_max() > 0).then_some(game.settings.bots);
        // The command's text face is parsed once, here.
        let server = match (self.command, game_spec) {
            (Some(_), Some(_)) => {
                return bad(format!(
                    "game = {:?} builds its own command: give a game or a command, not both",
                    game.name()
                ))
            }
            (Some(c), None) => Some(ServerSpec::parse(&c)?),
            (None, spec) => spec,
        };
        let log_bytes = self.log_size.as_deref().map(parse_bytes).transpose()?;
        let overrides = self
            .instances_override
            .into_iter()
            .map(|o| {
                Ok(InstancePlan {
                    id: o.id,
                    command: o.command.as_deref().map(ServerSpec::parse).transpose()?,
                    memory_bytes: o.memory.as_deref().map(parse_bytes).transpose()?,
                    disk_bytes: o
                        .disk
                        .as_deref()
                        .map(|d| parse_bytes(d).map_err(disk_size))
                        .transpose()?,
                    cpu_quota: o.cpu_quota,
                })
            })
            .collect::<Result<Vec<_>, FleetError>>()?;
        let batch = self
            .batch
            .unwrap_or_default()
            .iter()
            .map(|c| BatchSpec::parse(c))
            .collect::<Result<Vec<_>, _>>()
            .map_err(FleetError::Invalid)?;
        Ok(FleetPlan {
            bots,
            name: self.name,
            instances: self.instances,
            backend: self.backend,
            net: self.net,
            range: self.range,
            allow_public_range: self.allow_public_range.unwrap_or(false),
            port: self.port,
            placement: self.placement,
            reserved_cpus,
            game,
            server,
            env: self
                .env
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, Word::from(v)))
                .collect(),
            files: self
                .files
                .into_iter()
                .map(|f| (f.path, Word::from(f.contents)))
                .collect(),
            health: self.health,
            cpu_quota: self.cpu_quota,
            memory_bytes: self.memory.as_deref().map(parse_bytes).transpose()?,
            pids: self.pids,
            disk_bytes: self
                .disk
                .as_deref()
                .map(|d| parse_bytes(d).map_err(disk_size))
                .transpose()?,
            log_bytes,
            run_dir: self.run_dir,
            allow_host_ports: self.allow_host_ports.unwrap_or_default(),
            overrides,
            source_addrs: 0,
            batch,
            batch_cgroup: self.batch_cgroup,
            batch_control: self.batch_control.unwrap_or_default(),
        })
    }
}

/// What the file asks of the game: its name, bots, tick and variables.
fn game_ask(
    game: Option<String>,
    bots: Option<u8>,
    tick_hz: Option<tickpack_game::TickRate>,
    game_vars: Option<Vec<String>>,
) -> GameAsk {
    GameAsk {
        game,
        bots,
        tick_hz,
        game_vars,
    }
}

/// The line (from 1) where `key = ...` is written, 0 if not found.
fn key_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(0, |i| i + 1)
}

/// A TOML error in one line: file, line number, what is wrong and, with
/// `quote` (the file is TOML; a value is wrong), the line's text, escaped
/// and cut (e.g. `backend = "vm"`: unknown variant `vm`, expected
/// `process` or `netns`).
fn file_error(path: &Path, text: &str, e: &toml::de::Error, quote: bool) -> String {
    let what = e.message().trim();
    let Some(span) = e.span() else {
        return format!("{}: {what}", path.display());
    };
    let at = span.start.min(text.len());
    let start = text
        .get(..at)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let line_no = text[..start].matches('\n').count() + 1;
    if !quote {
        return format!(
            "{} line {line_no}: not a host file ({what})",
            path.display()
        );
    }
    let line = text[start..].lines().next().unwrap_or("").trim();
    format!(
        "{} line {line_no} ({}): {what}",
        path.display(),
        tickpack_sys::text::escape(line, 80)
    )
}

/// A CPU list's text (`0-1,4`), as CPU numbers.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, FleetError> {
    tickpack_sys::parse_cpu_list(s, None).map_err(|e| {
        FleetError::Invalid(format!(
            "reserved CPU list \"{}\": {e} (expected e.g. 0 or 0-1,4)",
            tickpack_sys::text::escape(s, 40)
        ))
    })
}
