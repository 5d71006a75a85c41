//! A host's settings: flags or a TOML file, validated before anything is
//! created.
//!
//! ```toml
//! name = "h1"                 # 1-8 of [a-z0-9]; prefixes everything created: tph1...
//! instances = 8
//! backend = "netns"           # or "process"
//! net = "veth"                # veth (default) | bridge | macvlan | ipvlan (netns only)
//! range = "198.18.0.0/16"     # instance addresses (netns): inside 10/8, 172.16/12,
//!                             # 192.168/16, 100.64/10 or 198.18/15 unless
//! allow_public_range = false  # says otherwise (a routed public range hides real hosts)
//! port = 27015                # every netns instance binds this; process: port + id - 1
//!                             # (default 27015; 27960 for game = "openarena")
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
//!                             # | none; default: tickpack unless `command` runs something
//!                             # other than `{tickpack} server`, q3 for game = "openarena"
//! batch = ["stress-ng --cpu 0"]  # best-effort work on the server CPUs (own cgroup, supervised)
//! batch_cgroup = "tp-batch/runner"  # or adopt an existing cgroup as the batch (netns)
//! batch_control = "guard"     # none | idle (SCHED_IDLE) | guard (the QoS guard; netns)
//! allow_host_ports = [53]     # host TCP/UDP ports instances may connect to (netns);
//!                             # default: none, instances only answer flows the host started
//!
//! game = "openarena"         # reference (default: `command`) | openarena (builds the command,
//!                             # port 27960) | any other game: a built-in name (nexuiz) or a
//!                             # definition file's path (docs/games.md), launched from it;
//! game_vars = ["map=ruiner"]  #   a defined game's [variables] (bots and sv_fps apply too)
//!                             # for openarena:
//! map = ["oa_dm1", "oa_dm2"]  #   the map rotation (default oa_dm1)
//! players_per_server = 12     #   bots fill each server up to this many players (bot_minplayers)
//! bots = 12                   #   bots added at start (default: players_per_server)
//! sv_fps = 20                 #   server frames per second
//! game_args = ["g_gravity=600"]  # more cvars, +set CVAR VALUE
//!
//! [env]                       # the server's environment, placeholders expanded;
//! GAME_ID = "{id}"            # HOME is always the instance's directory ({dir})
//!
//! [[file]]                    # written into the instance's directory before each start
//! path = "baseq3/server.cfg"  # (owned by the instance, never through a link); relative,
//!                             # at most 8 parts and 200 characters, no two the same or nested
//! contents = "set net_port {port}\n"
//!
//! [[instance]]                # per-instance overrides
//! id = 3
//! memory = "64MiB"
//! command = "/opt/game/srcds_run -port {port} +ip {ip}"
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::guard::batch::BatchSpec;
use crate::guard::BatchControl;
pub use crate::launch::Health;
use crate::launch::{ServerSpec, Word};
use crate::netpath::NetKind;
use crate::placement::Policy;

/// Where the instances run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Plain processes on the host network, distinct ports (the native baseline).
    Process,
    /// Own network, mount, PID and UTS namespaces, unprivileged user, cgroup.
    Netns,
}

impl Backend {
    /// The name a host file and the result documents use.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Process => "process",
            Backend::Netns => "netns",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "process" => Ok(Backend::Process),
            "netns" => Ok(Backend::Netns),
            _ => Err(format!("unknown backend {s:?} (expected process or netns)")),
        }
    }
}

/// Restart behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RestartPolicy {
    /// Give up after this many crashes...
    pub max_crashes: u32,
    /// ...within this many seconds.
    pub window_s: f64,
    /// First restart delay; doubles per crash in the window.
    pub backoff_ms: u64,
    pub max_backoff_ms: u64,
    /// With a game query (`q3`, `a2s`): how long an instance may take to
    /// answer for the first time after a start (a game loads its map and
    /// bots first, slower when many start at once on few cores) before it
    /// is killed, reported with its last output and restarted.
    #[serde(default = "default_start_timeout_s")]
    pub start_timeout_s: f64,
}

fn default_start_timeout_s() -> f64 {
    15.0
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            max_crashes: 5,
            window_s: 30.0,
            backoff_ms: 100,
            max_backoff_ms: 5_000,
            start_timeout_s: default_start_timeout_s(),
        }
    }
}

/// Per-instance overrides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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

/// The file form of a [`FleetConfig`], its TOML face: the same typed
/// values (backend, net, placement, health are the config's enums, in
/// their lowercase spellings), every field optional; flags fill the rest.
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
    /// The cap of one instance log file, e.g. 8MiB; one rotated file is
    /// kept beside it (`ID.log.1`).
    pub log_size: Option<String>,
    pub allow_public_range: Option<bool>,
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
    /// The game: `reference` (the default, `command`), `openarena` (its
    /// own command, from the settings below), or any other game's
    /// definition (a built-in name or a file's path), launched from it.
    pub game: Option<String>,
    /// A defined game's variables, `NAME=VALUE` each.
    pub game_vars: Option<Vec<String>>,
    /// OpenArena: the map rotation; an entry may be a comma list.
    pub map: Option<Vec<String>>,
    /// OpenArena: players per server, humans and bots (`bot_minplayers`).
    pub players_per_server: Option<u8>,
    /// OpenArena: bots added at start (default: `players_per_server`).
    pub bots: Option<u8>,
    /// OpenArena: server frames per second.
    pub sv_fps: Option<u16>,
    /// OpenArena: more cvars, `CVAR=VALUE` each.
    pub game_args: Option<Vec<String>>,
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
    /// The typed face of `command`, for callers in code (the bench): the
    /// server every instance runs. Not a file key; give one or the other.
    #[serde(skip)]
    pub server: Option<ServerSpec>,
    /// Source addresses for load generators (netns: the top of the range,
    /// on the host side of every path; process: loopback addresses), for
    /// callers in code (the bench); not a file key. See
    /// [`crate::netpath::AddrPlan::with_sources`].
    #[serde(skip)]
    pub source_addrs: Option<u32>,
    /// Batch commands run beside the servers (best effort, on the server
    /// CPUs, in their own cgroup, supervised).
    pub batch: Option<Vec<String>>,
    /// An existing cgroup (path below the cgroup root) to treat as the
    /// batch: tuned by the guard, never killed or removed.
    pub batch_cgroup: Option<PathBuf>,
    /// How the batch is held back: none | idle (SCHED_IDLE) | guard.
    pub batch_control: Option<BatchControl>,
}

impl FleetFile {
    /// Reads a host file: only a regular file of at most
    /// [`tickpack_sys::user_file::MAX_CONFIG_BYTES`], as UTF-8 TOML.
    pub fn load(path: &Path) -> Result<Self, FleetError> {
        let text =
            tickpack_sys::user_file::read_text(path, tickpack_sys::user_file::MAX_CONFIG_BYTES)
                .map_err(|e| FleetError::Invalid(format!("cannot read {e}")))?;
        // A file that is not TOML at all (`--config /etc/shadow`) is named
        // with the line, never quoted: its text may be a secret.
        if let Err(e) = toml::from_str::<toml::Table>(&text) {
            return Err(FleetError::Invalid(file_error(path, &text, &e, false)));
        }
        toml::from_str(&text).map_err(|e| FleetError::Invalid(file_error(path, &text, &e, true)))
    }
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

/// One instance's resolved settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceSpec {
    pub id: u32,
    /// What runs (recorded as `command` and `health`).
    #[serde(flatten)]
    pub server: ServerSpec,
    pub memory_bytes: Option<u64>,
    pub cpu_quota: Option<f64>,
    /// Working directory size limit (a tmpfs of this size).
    #[serde(default)]
    pub disk_bytes: Option<u64>,
}

/// A validated host configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetConfig {
    pub name: String,
    pub run_dir: PathBuf,
    pub backend: Backend,
    pub net: NetKind,
    pub range: String,
    pub port: u16,
    pub placement: Policy,
    /// `None`: the default (CPU 0 when there are two or more).
    pub reserved_cpus: Option<Vec<usize>>,
    pub health: Health,
    pub restart: RestartPolicy,
    pub instances: Vec<InstanceSpec>,
    /// Host ports (TCP and UDP) instances may open connections to (netns).
    #[serde(default)]
    pub allow_host_ports: Vec<u16>,
    /// The game every instance's spec was built from; check it against
    /// the machine ([`tickpack_game::GameServer::check_system`]) before
    /// starting. Not recorded: the specs are.
    #[serde(skip)]
    pub game: tickpack_game::GameServer,
    /// Batch work beside the servers (`--batch`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<BatchSpec>,
    /// An adopted batch cgroup (`--batch-cgroup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_cgroup: Option<PathBuf>,
    /// How the batch is held back.
    #[serde(default)]
    pub batch_control: BatchControl,
    /// The cap of one instance log file in bytes (`log_size`); `ID.log.1`
    /// holds the one before.
    #[serde(default = "default_log_bytes")]
    pub log_bytes: u64,
    /// Source addresses set aside for load generators
    /// ([`crate::supervisor::Supervisor::source_addresses`]).
    #[serde(default)]
    pub source_addrs: u32,
    /// The pids limit (`pids.max`) of every instance's cgroup and the
    /// batch's (`pids`).
    #[serde(default)]
    pub pids_max: Option<u64>,
}

fn default_log_bytes() -> u64 {
    crate::spawn::log::DEFAULT_LOG_BYTES
}

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("bad host configuration: {0}")]
    Invalid(String),
}

impl From<tickpack_game::launch::LaunchError> for FleetError {
    fn from(e: tickpack_game::launch::LaunchError) -> FleetError {
        let tickpack_game::launch::LaunchError::Invalid(m) = e;
        FleetError::Invalid(m)
    }
}

/// Most loopback source addresses (process backend): 127.0.0.2 up.
pub const MAX_LOOPBACK_SOURCES: u32 = 250;

/// The memory limit of an instance without `memory` (netns): 1 GiB.
pub const DEFAULT_MEMORY_BYTES: u64 = 1 << 30;

/// The pids limit of an instance (and the batch) without `pids` (netns):
/// the instance init's RLIMIT_NPROC, [`crate::confine::MAX_PROCESSES`].
pub const DEFAULT_PIDS: u64 = crate::confine::MAX_PROCESSES;

/// The largest `pids` accepted.
pub const MAX_PIDS: u64 = 65_536;

/// The reference server, the default command.
pub const DEFAULT_COMMAND: &str = "{tickpack} server --bind {ip}:{port} --name tickpack-{id}";

/// The largest memory or disk size accepted (64 TiB): more than any one
/// machine holds, far below where a byte count overflows.
pub const MAX_BYTES: u64 = 64 << 40;

/// A size error of [`parse_bytes`], said of the disk limit.
fn disk_size(e: FleetError) -> FleetError {
    let FleetError::Invalid(m) = e;
    FleetError::Invalid(m.replacen("memory size", "disk size", 1))
}

/// Parses `256MiB`, `1GiB`, `512M`, `1048576`: 4 MiB to [`MAX_BYTES`].
pub fn parse_bytes(s: &str) -> Result<u64, FleetError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| {
        FleetError::Invalid(format!(
            "memory size \"{}\": expected e.g. 256MiB",
            tickpack_sys::text::escape(s, 40)
        ))
    })?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        u => {
            return Err(FleetError::Invalid(format!(
                "memory size {s:?}: unknown unit {u:?} (use KiB, MiB, GiB)"
            )))
        }
    };
    let v = n * mult as f64;
    if !v.is_finite() || v > MAX_BYTES as f64 {
        return Err(FleetError::Invalid(format!(
            "memory size \"{}\" is above the {} TiB maximum",
            tickpack_sys::text::escape(s, 40),
            MAX_BYTES >> 40
        )));
    }
    let v = v as u64;
    if v < (4 << 20) {
        return Err(FleetError::Invalid(format!(
            "memory size {s:?} is below the 4 MiB minimum"
        )));
    }
    Ok(v)
}

/// The network path when none is named: veth, for `host up` and `bench`
/// alike. One rule, so a host runs on the path its density was measured
/// on, and the strictest one: a routed point-to-point link per instance,
/// no shared L2 segment, so instances cannot reach each other's ports
/// (docs/design.md, what an instance can and cannot do).
pub const DEFAULT_NET: NetKind = NetKind::Veth;

impl FleetFile {
    /// Resolves and validates; `default_run_root` is /run/tickpack normally.
    pub fn resolve(self, default_run_root: &Path) -> Result<FleetConfig, FleetError> {
        let bad = |m: String| Err(FleetError::Invalid(m));
        let name = self.name.unwrap_or_else(|| "h".into());
        if tickpack_sys::validate_host_name(&name).is_err() {
            return bad(format!("host name {name:?} must be 1-{} characters of a-z and 0-9 (it prefixes interface names)", tickpack_sys::MAX_HOST_NAME));
        }
        let n = self.instances.unwrap_or(1);
        if n == 0 || n > 250 {
            return bad(format!("instances must be 1..=250, got {n}"));
        }
        let backend = self.backend.unwrap_or(Backend::Netns);
        let net = self.net.unwrap_or(DEFAULT_NET);
        let placement = self.placement.unwrap_or(Policy::Spread);
        let reserved_cpus = match self.reserved_cpus.as_deref() {
            None => None,
            Some("") | Some("none") => Some(vec![]),
            Some(s) => Some(parse_cpu_list(s)?),
        };
        // The game names nothing here: the game crate resolves it.
        if self.players_per_server.is_some() || self.game_args.is_some() {
            return bad("players_per_server and game_args are gone: every game is launched from its definition; set its variables with game_vars (--set NAME=VALUE)".into());
        }
        // `map = [...]`: the game's `map` variable (a list for a rotation).
        let mut game_vars = self.game_vars;
        if let Some(maps) = self.map {
            let list: Vec<&str> = maps
                .iter()
                .flat_map(|m| m.split(','))
                .map(str::trim)
                .collect();
            game_vars
                .get_or_insert_with(Vec::new)
                .insert(0, format!("map={}", list.join(",")));
        }
        let ask = tickpack_game::GameAsk {
            game: self.game,
            bots: self.bots,
            tick_hz: self.sv_fps,
            game_vars,
        };
        // Nothing asked of the game: the host's own command (or default).
        let asked = ask.asks_anything();
        let game = ask.resolve().map_err(FleetError::Invalid)?;
        let game_spec = match asked {
            true => Some(game.spec().map_err(FleetError::Invalid)?),
            false => None,
        };
        // The command's text face is parsed once, here. Foreign servers do
        // not speak tickpack; the reference server does.
        let mut server = match (self.server, self.command, game_spec) {
            (None, None, Some(spec)) => spec,
            (_, _, Some(_)) => {
                return bad(format!(
                    "game = {:?} builds its own command: give a game or a command, not both",
                    game.name()
                ))
            }
            (Some(_), Some(_), None) => {
                return bad("give the server as a typed spec or as a command, not both".into())
            }
            (Some(s), None, None) => s,
            (None, Some(c), None) => ServerSpec::parse(&c)?,
            (None, None, None) => ServerSpec::parse(DEFAULT_COMMAND)?,
        };
        let health = self.health.unwrap_or(server.health);
        let port = self.port.unwrap_or(game.port());
        if port == 0 {
            return bad("port must not be 0".into());
        }
        if backend == Backend::Process && u32::from(port) + n > 65_536 {
            return bad(format!(
                "ports {port}..{} do not fit below 65536",
                u32::from(port) + n
            ));
        }
        let range = self.range.unwrap_or_else(|| "198.18.0.0/16".into());
        let source_addrs = self.source_addrs.unwrap_or(0);
        if backend == Backend::Process && source_addrs > MAX_LOOPBACK_SOURCES {
            return bad(format!(
                "{source_addrs} source addresses: loopback gives at most {MAX_LOOPBACK_SOURCES}"
            ));
        }
        if backend == Backend::Netns {
            let plan = crate::netpath::AddrPlan::parse(&range)
                .and_then(|p| p.with_sources(net, source_addrs))
                .map_err(|e| FleetError::Invalid(format!("address range: {e}")))?;
            if !self.allow_public_range.unwrap_or(false) {
                plan.check_local_use().map_err(|e| {
                    FleetError::Invalid(format!(
                        "address range (--range): {e}; --allow-public-range (allow_public_range = true) takes it anyway"
                    ))
                })?;
            }
            for id in 1..=n {
                plan.check(net, id).map_err(|e| {
                    FleetError::Invalid(format!("address range {range} for {n} instances: {e}"))
                })?;
            }
        }
        // An instance without `memory` still has a limit (netns): it may
        // not take the machine's memory from its neighbours.
        let memory = match self.memory.as_deref() {
            Some(m) => Some(parse_bytes(m)?),
            None => (backend == Backend::Netns).then_some(DEFAULT_MEMORY_BYTES),
        };
        // Likewise for processes: a fork bomb may not take every PID.
        let pids_max = match self.pids {
            Some(p) if !(1..=MAX_PIDS).contains(&p) => {
                return bad(format!("pids (--pids) must be 1..={MAX_PIDS}, got {p}"));
            }
            Some(p) => Some(p),
            None => (backend == Backend::Netns).then_some(DEFAULT_PIDS),
        };
        let log_bytes = match self.log_size.as_deref() {
            None => default_log_bytes(),
            Some(l) => {
                let b = parse_bytes(l)?;
                let (lo, hi) = (
                    crate::spawn::log::MIN_LOG_BYTES,
                    crate::spawn::log::MAX_LOG_BYTES,
                );
                if !(lo..=hi).contains(&b) {
                    return bad(format!(
                        "log_size (--log-size) must be {} MiB to {} MiB",
                        lo >> 20,
                        hi >> 20
                    ));
                }
                b
            }
        };
        let disk = self
            .disk
            .as_deref()
            .map(|d| parse_bytes(d).map_err(disk_size))
            .transpose()?;
        if let Some(q) = self.cpu_quota {
            check_cpu_quota(q)?;
        }
        let env = self.env.unwrap_or_default();
        server
            .env
            .extend(env.into_iter().map(|(k, v)| (k, Word::from(v))));
        server.files.extend(
            self.files
                .into_iter()
                .map(|f| (f.path, Word::from(f.contents))),
        );
        server.check()?;
        // ^ also checks the game's and the host file's [[file]] paths as one
        // set: a duplicate or one inside another fails here, not at start.
        server.health = health;
        let mut instances: Vec<InstanceSpec> = (1..=n)
            .map(|id| InstanceSpec {
                id,
                server: server.clone(),
                memory_bytes: memory,
                cpu_quota: self.cpu_quota,
                disk_bytes: disk,
            })
            .collect();
        let mut seen = BTreeSet::new();
        for o in self.instances_override {
            if !seen.insert(o.id) {
                return bad(format!("instance {} is overridden twice", o.id));
            }
            let Some(inst) = instances.iter_mut().find(|i| i.id == o.id) else {
                return bad(format!(
                    "override for instance {} but instances are 1..={n}",
                    o.id
                ));
            };
            if let Some(c) = o.command {
                // Another program, the same environment, files and check.
                inst.server = ServerSpec {
                    argv: ServerSpec::parse(&c)?.argv,
                    ..server.clone()
                };
            }
            if let Some(m) = o.memory {
                inst.memory_bytes = Some(parse_bytes(&m)?);
            }
            if let Some(q) = o.cpu_quota {
                check_cpu_quota(q)?;
                inst.cpu_quota = Some(q);
            }
            if let Some(d) = o.disk {
                inst.disk_bytes = Some(parse_bytes(&d).map_err(disk_size)?);
            }
        }
        if backend == Backend::Process
            && (pids_max.is_some()
                || instances.iter().any(|i| {
                    i.memory_bytes.is_some() || i.cpu_quota.is_some() || i.disk_bytes.is_some()
                }))
        {
            return bad("memory, disk, pids and cpu_quota limits need the netns backend (cgroups); the process backend is the unlimited native baseline".into());
        }
        let mut allow_host_ports = self.allow_host_ports.unwrap_or_default();
        if allow_host_ports.contains(&0) {
            return bad("allow_host_ports: port 0 is not a port".into());
        }
        if backend == Backend::Process && !allow_host_ports.is_empty() {
            return bad("allow_host_ports needs the netns backend (the process backend shares the host's network and has no firewall)".into());
        }
        allow_host_ports.sort_unstable();
        allow_host_ports.dedup();
        let batch = self
            .batch
            .unwrap_or_default()
            .iter()
            .map(|c| BatchSpec::parse(c))
            .collect::<Result<Vec<_>, _>>()
            .map_err(FleetError::Invalid)?;
        let batch_control = self.batch_control.unwrap_or_default();
        if let Some(cg) = &self.batch_cgroup {
            crate::guard::batch::check_adopted_cgroup(cg).map_err(FleetError::Invalid)?;
            if backend == Backend::Process {
                return bad("--batch-cgroup needs the netns backend (cgroups)".into());
            }
        }
        if batch_control == BatchControl::Guard && backend == Backend::Process {
            return bad("--guard needs the netns backend (it tunes the batch's cgroup)".into());
        }
        if batch_control != BatchControl::None && batch.is_empty() && self.batch_cgroup.is_none() {
            return bad(format!(
                "batch control {batch_control} needs --batch CMD or --batch-cgroup PATH"
            ));
        }
        let run_dir = self.run_dir.unwrap_or_else(|| default_run_root.join(&name));
        Ok(FleetConfig {
            name,
            run_dir,
            backend,
            net,
            range,
            port,
            placement,
            reserved_cpus,
            health,
            restart: RestartPolicy {
                // A defined game's own start time limit, for all at once.
                start_timeout_s: game
                    .start_limit(n)
                    .as_secs_f64()
                    .max(default_start_timeout_s()),
                ..RestartPolicy::default()
            },
            instances,
            allow_host_ports,
            game,
            batch,
            batch_cgroup: self.batch_cgroup,
            batch_control,
            log_bytes,
            source_addrs,
            pids_max,
        })
    }
}

/// A CPU quota in cores: more than 0, at most 1024 (top level and overrides).
fn check_cpu_quota(q: f64) -> Result<(), FleetError> {
    if !(q > 0.0 && q <= 1024.0) {
        return Err(FleetError::Invalid(format!(
            "cpu_quota must be in (0, 1024] cores, got {q}"
        )));
    }
    Ok(())
}

fn parse_cpu_list(s: &str) -> Result<Vec<usize>, FleetError> {
    tickpack_sys::parse_cpu_list(s, None).map_err(|e| {
        FleetError::Invalid(format!(
            "reserved CPU list \"{}\": {e} (expected e.g. 0 or 0-1,4)",
            tickpack_sys::text::escape(s, 40)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(toml_text: &str) -> Result<FleetConfig, FleetError> {
        toml::from_str::<FleetFile>(toml_text)
            .map_err(|e| FleetError::Invalid(e.to_string()))?
            .resolve(Path::new("/run/tickpack"))
    }

    /// A bug: a host with no `net` ran on a bridge while `bench` measured
    /// on veth. Both default to veth now.
    #[test]
    fn a_host_without_a_net_runs_on_veth_as_the_bench_measured() {
        assert_eq!(resolve("").unwrap().net, NetKind::Veth);
        assert_eq!(resolve("net = \"bridge\"").unwrap().net, NetKind::Bridge);
    }

    #[test]
    fn a_full_file_resolves_with_overrides() {
        let c = resolve(
            r#"
            name = "h1"
            instances = 4
            backend = "netns"
            net = "macvlan"
            memory = "256MiB"
            disk = "32MiB"
            [[instance]]
            id = 3
            memory = "64MiB"
            disk = "8MiB"
            command = "/opt/game/run -port {port} +ip {ip}"
            "#,
        )
        .unwrap();
        assert_eq!(c.instances.len(), 4);
        assert_eq!(c.run_dir, Path::new("/run/tickpack/h1"));
        assert_eq!(c.instances[0].memory_bytes, Some(256 << 20));
        assert_eq!(c.instances[2].memory_bytes, Some(64 << 20));
        assert_eq!(c.instances[0].disk_bytes, Some(32 << 20));
        assert_eq!(c.instances[2].disk_bytes, Some(8 << 20));
        assert!(c.instances[2]
            .server
            .template()
            .starts_with("/opt/game/run"));
        assert_eq!(c.health, Health::TickpackStats);
        assert!(c.allow_host_ports.is_empty(), "closed by default");
        let c = resolve("allow_host_ports = [8080, 53, 8080]").unwrap();
        assert_eq!(c.allow_host_ports, [53, 8080]);
    }

    #[test]
    fn bad_settings_are_named() {
        for (text, needle) in [
            ("instances = 0", "instances"),
            ("name = \"Host_1\"", "host name"),
            ("backend = \"vm\"", "backend"),
            ("net = \"wifi\"", "wifi"),
            ("memory = \"lots\"", "memory size"),
            ("memory = \"1KiB\"", "minimum"),
            ("placement = \"random\"", "placement"),
            ("command = \"srv {address}\"", "{address}"),
            ("instances = 2\n[[instance]]\nid = 9", "override"),
            ("backend = \"process\"\nmemory = \"64MiB\"", "netns backend"),
            ("backend = \"process\"\ndisk = \"64MiB\"", "netns backend"),
            ("backend = \"process\"\npids = 64", "netns backend"),
            ("pids = 0", "pids (--pids) must be 1..=65536"),
            ("pids = 65537", "pids (--pids) must be 1..=65536"),
            ("pids = -1", "pids"),
            ("disk = \"lots\"", "disk size"),
            ("reserved_cpus = \"a-b\"", "reserved CPU"),
            ("cpu_quota = -2.0", "cpu_quota"),
            ("colour = \"blue\"", "colour"),
            ("allow_host_ports = [0]", "port 0"),
            ("range = \"8.8.8.0/24\"", "not a private"),
            ("allow_host_ports = [70000]", "allow_host_ports"),
            (
                "backend = \"process\"\nallow_host_ports = [53]",
                "netns backend",
            ),
        ] {
            let e = resolve(text).expect_err(text).to_string();
            assert!(e.contains(needle), "{text:?} gave {e:?}");
        }
    }

    /// Regression: nested, 5,000-character, NUL-holding or duplicate
    /// `[[file]]` paths were accepted and failed only when an instance
    /// started (exit 1), or the last one silently won.
    #[test]
    fn file_paths_nested_long_nul_or_duplicate_are_refused_before_start() {
        let long = "x".repeat(5000);
        for (paths, needle) in [
            (vec!["cfg", "cfg/server.cfg"], "clashes"),
            (vec!["a.cfg", "a.cfg"], "clashes"),
            (vec![long.as_str()], "relative path"),
            (vec!["a\\u0000b"], "relative path"),
        ] {
            let mut text = String::from("command = \"/opt/game/run\"\n");
            for p in &paths {
                text.push_str(&format!("[[file]]\npath = \"{p}\"\ncontents = \"x\"\n"));
            }
            let e = resolve(&text).expect_err(&text).to_string();
            assert!(
                e.contains("[[file]]") && e.contains(needle),
                "{paths:?}: {e}"
            );
            assert!(e.len() < 400 && !e.contains('\0'), "bounded, escaped: {e}");
        }
        // A game's own file and the host file's, as one set.
        let e = resolve(
            "game = \"nexuiz\"\n[[file]]\npath = \"data/tickpack.cfg\"\ncontents = \"x\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("clashes"), "{e}");
    }

    #[test]
    fn pids_default_to_the_rlimit_on_netns_and_to_none_on_process() {
        assert_eq!(resolve("").unwrap().pids_max, Some(DEFAULT_PIDS));
        assert_eq!(DEFAULT_PIDS, 512);
        assert_eq!(resolve("pids = 64").unwrap().pids_max, Some(64));
        assert_eq!(resolve("pids = 65536").unwrap().pids_max, Some(65_536));
        assert_eq!(resolve("backend = \"process\"").unwrap().pids_max, None);
    }

    /// Regression: `memory = "99999999999999999999999GiB"` was accepted
    /// (saturated to 16 EiB).
    #[test]
    fn absurd_memory_sizes_are_refused() {
        for m in ["99999999999999999999999GiB", "65537GiB", "1e999"] {
            let text = format!("memory = \"{m}\"");
            let e = resolve(&text).expect_err(&text).to_string();
            assert!(e.contains("memory size"), "{m}: {e}");
        }
        assert_eq!(parse_bytes("64GiB").unwrap(), 64 << 30);
        assert_eq!(parse_bytes("65536GiB").unwrap(), MAX_BYTES);
    }

    /// Regression: `--config /etc/shadow` printed the file's first line in
    /// its error; `--config /dev/zero` read until 4 GB.
    #[test]
    fn config_error_never_quotes_a_file_that_is_not_toml() {
        let dir = std::env::temp_dir().join(format!("tp-fleet-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("shadow");
        std::fs::write(&path, "root:$6$secrethash:19000:0:99999:7:::\n").unwrap();
        let e = FleetFile::load(&path).unwrap_err().to_string();
        assert!(!e.contains("secrethash") && !e.contains("root:"), "{e}");
        assert!(e.contains("line 1") && e.contains("not a host file"), "{e}");
        let e = FleetFile::load(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_negative_cpu_quota_override_is_rejected_before_the_network_is_built() {
        for q in ["-2.0", "0.0", "nan", "2000.0"] {
            let text = format!("instances = 2\n[[instance]]\nid = 2\ncpu_quota = {q}");
            let e = resolve(&text).expect_err(&text).to_string();
            assert!(e.contains("cpu_quota"), "{text:?} gave {e:?}");
        }
    }

    #[test]
    fn a_bad_value_in_a_file_is_one_line_naming_the_key() {
        let dir = std::env::temp_dir().join(format!("tp-fleet-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fleet.toml");
        std::fs::write(&path, "instances = 2\nbackend = \"vm\"\n").unwrap();
        let e = FleetFile::load(&path).unwrap_err().to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("line 2 (backend = \"vm\")"), "{e}");
        assert!(e.contains("`process` or `netns`"), "{e}");
    }

    #[test]
    fn a_typed_server_is_checked_and_exclusive_with_a_command() {
        let mut spec = ServerSpec::parse("/opt/game/run").unwrap();
        spec.files = vec![("server.cfg".into(), crate::launch::Word::text("x"))];
        let file = |disk: Option<&str>, command: Option<&str>| FleetFile {
            server: Some(spec.clone()),
            disk: disk.map(Into::into),
            command: command.map(Into::into),
            ..Default::default()
        };
        let c = file(None, None)
            .resolve(Path::new("/run/tickpack"))
            .unwrap();
        assert_eq!(c.instances[0].server.files, spec.files);
        assert_eq!(c.health, Health::None, "a foreign server's own check");
        // Config files live on the disk limit's tmpfs (mounted before
        // they are written): both together are fine.
        let c = file(Some("16MiB"), None)
            .resolve(Path::new("/run/tickpack"))
            .unwrap();
        assert_eq!(c.instances[0].disk_bytes, Some(16 << 20));
        let e = file(None, Some("/opt/game/run"))
            .resolve(Path::new("/run/tickpack"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not both"), "{e}");
        let c = resolve(
            r#"
            command = "/opt/q3/ioq3ded +exec server.cfg"
            [env]
            GAME_ID = "g{id}"
            [[file]]
            path = "baseq3/server.cfg"
            contents = "set net_port {port}"
            "#,
        )
        .unwrap();
        let s = &c.instances[0].server;
        assert_eq!(
            s.env,
            [("GAME_ID".to_string(), Word::from("g{id}".to_string()))]
        );
        assert_eq!(s.files[0].0, Path::new("baseq3/server.cfg"));
        assert_eq!(s.files[0].1.template(), "set net_port {port}");
        let mut home = file(None, None);
        home.server.as_mut().unwrap().env = vec![("HOME".into(), crate::launch::Word::text("/"))];
        let e = home
            .resolve(Path::new("/run/tickpack"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("HOME"), "{e}");
    }

    #[test]
    fn a_defined_game_is_launched_from_its_definition() {
        let c = resolve(
            "game = \"nexuiz\"\ninstances = 3\ngame_vars = [\"map=ruiner\"]\nbots = 4\nsv_fps = 30",
        )
        .unwrap();
        let spec = &c.instances[0].server;
        let t = spec.template();
        assert!(t.starts_with("/usr/games/nexuiz-server "), "{t}");
        for w in [
            "+map ruiner",
            "bot_number 4",
            "sys_ticrate 0.0333333",
            "net_address {ip}",
            "port {port}",
        ] {
            assert!(t.contains(w), "{w} in {t}");
        }
        assert_eq!(spec.files.len(), 1, "its tickpack.cfg");
        assert_eq!(c.port, 26000, "the definition's port");
        assert_eq!(c.health, Health::Q3, "checked with its query");
        assert_eq!(c.restart.start_timeout_s, 39.0, "30 s + 3 s per server");
        assert_eq!(c.game.name(), "nexuiz");
        for (file, needle) in [
            (
                "game = \"nexuiz\"\ngame_vars = [\"mapp=x\"]",
                "not a variable of nexuiz",
            ),
            ("game = \"nexuiz\"\ncommand = \"x\"", "not both"),
            ("game_vars = [\"map=x\"]", "not a variable of reference"),
            ("game = \"./no-such-game.toml\"", "no-such-game.toml"),
        ] {
            let e = resolve(file).unwrap_err().to_string();
            assert!(e.contains(needle), "{file}: {e}");
        }
    }

    #[test]
    fn game_openarena_builds_its_spec_with_the_q3_check_on_port_27960() {
        let c = resolve(
            r#"
            game = "openarena"
            instances = 2
            game_vars = ["map=oa_dm1,oa_dm2,oa_dm3"]
            bots = 4
            "#,
        )
        .unwrap();
        assert_eq!(c.port, 27960);
        assert_eq!(c.health, Health::Q3);
        assert_eq!(c.game.name(), "openarena");
        assert_eq!(c.game.settings.variables["map"], "oa_dm1,oa_dm2,oa_dm3");
        assert_eq!(c.game.settings.bots, 4);
        assert_eq!(c.instances[1].server, c.game.spec().unwrap());
        let json = serde_json::to_string(&c).unwrap();
        let back = serde_json::from_str::<FleetConfig>(&json).unwrap();
        assert_eq!(back.instances, c.instances, "the specs are recorded");
        let c = resolve("game = \"openarena\"\nport = 27000\nhealth = \"none\"").unwrap();
        assert_eq!((c.port, c.health), (27000, Health::None));
        let c = resolve("game = \"reference\"").unwrap();
        assert!(
            c.game == tickpack_game::GameServer::default()
                && c.instances[0].server.is_reference_server()
        );
        for (text, needle) in [
            ("game = \"quake\"", "quake"),
            ("game = \"openarena\"\ncommand = \"x\"", "not both"),
            ("sv_fps = 4000", "1..=1000 Hz"),
            ("game = \"openarena\"\nbots = 17", "at most 16 bots"),
            (
                "game = \"openarena\"\ngame_vars = [\"map=a;b\"]",
                "a value is one word",
            ),
            ("bots = 3\ncommand = \"x\"", "not both"),
        ] {
            let e = resolve(text).expect_err(text).to_string();
            assert!(e.contains(needle), "{text:?} gave {e:?}");
        }
    }

    #[test]
    fn templates_expand() {
        let argv =
            ServerSpec::parse("{tickpack} server --bind {ip}:{port} --name s{id} --log {dir}/x")
                .unwrap()
                .argv(&crate::launch::Slot {
                    ip: "198.18.0.2",
                    port: 27015,
                    id: 7,
                    dir: Path::new("/r/7"),
                    tickpack: Path::new("/bin/tp"),
                });
        assert_eq!(
            argv,
            [
                "/bin/tp",
                "server",
                "--bind",
                "198.18.0.2:27015",
                "--name",
                "s7",
                "--log",
                "/r/7/x"
            ]
        );
    }
}
