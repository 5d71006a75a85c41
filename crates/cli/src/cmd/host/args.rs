//! `host up | status | change-map | down`'s arguments and `host up --help`'s examples.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::ValueEnum;

use crate::cmd::parse_addr;

/// Examples shown by `host up --help`.
pub const UP_EXAMPLES: &str = "Examples:
  tickpack host up --instances 4 --net bridge
  tickpack host up --game GAME --instances 3 --set map=MAP --bots 6 --tick-hz 30
                   (GAME: a name from `tickpack games list`)
  tickpack host up --game ./mine.toml --instances 2      (a definition file: docs/games.md)
  tickpack host up --command \"{tickpack} server --bind {ip}:{port}\" --probe a2s
  tickpack host up --instances 6 --guard --batch \"stress-ng --cpu 0 --cache 1\"";

/// The game query protocols `--probe` names.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ProbeArg {
    /// Quake 3 `getinfo` (Quake 3 engine servers)
    Q3,
    /// Valve `A2S_INFO` (Source servers; the reference server answers it too)
    A2s,
}

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// A fleet file (TOML) with the same settings and per-instance overrides;
    /// flags given on the command line win.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Number of game server instances.
    #[arg(long)]
    pub instances: Option<u32>,
    /// netns (own IP, files, PIDs, hostname, user, cgroup) or process (native baseline).
    #[arg(long)]
    pub backend: Option<String>,
    /// Network path for netns: veth (routed), bridge (software switch),
    /// macvlan or ipvlan (bypass) [default: veth, as `bench`: a host runs
    /// on the path its density was measured on, and instances on veth
    /// share no L2 segment, so they cannot reach each other's ports].
    #[arg(long)]
    pub net: Option<String>,
    /// Instance address range (netns) [default: 198.18.0.0/16]: inside
    /// 10/8, 172.16/12, 192.168/16, 100.64/10 (shared) or 198.18/15
    /// (benchmarking), the ranges set aside for local use.
    #[arg(long)]
    pub range: Option<String>,
    /// Accept a --range outside the local-use ranges: the machine then
    /// reaches those addresses only on the instances, not in the world.
    #[arg(long)]
    pub allow_public_range: bool,
    /// Game port (netns: every instance; process: port + id - 1)
    /// [default: the game's, from its definition].
    #[arg(long)]
    pub port: Option<u16>,
    /// Core placement: spread, pack, or none (leave it to the kernel).
    #[arg(long)]
    pub placement: Option<String>,
    /// CPUs kept for the host and load generators (default: CPU 0 when there are 2+).
    #[arg(long)]
    pub reserved_cpus: Option<String>,
    /// The game server: a name from `tickpack games list` (the default:
    /// the reference server) or a definition file's path (docs/games.md),
    /// launched from its command template with its port and query.
    #[arg(long, value_name = "NAME|FILE")]
    pub game: Option<String>,
    /// The game's variable, NAME=VALUE (repeatable), e.g. --set map=MAP
    /// (`tickpack games show GAME` lists them).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Bots per server [default: the game's definition's].
    #[arg(long)]
    pub bots: Option<u8>,
    /// The server's tick rate in Hz [default: the game's definition's].
    #[arg(long)]
    pub tick_hz: Option<tickpack_game::TickRate>,
    // Flags of one game that are gone, refused with their replacement.
    #[command(flatten)]
    pub gone: GoneFlags,
    /// Command template for each instance; placeholders {ip} {port} {id} {dir} {tickpack}.
    /// Its HOME is the instance's own directory ({dir}); a --config file can add
    /// [env] and [[file]] (config files written there before each start).
    /// Default: the reference server.
    #[arg(long)]
    pub command: Option<String>,
    /// CPU quota per instance, in cores (netns).
    #[arg(long, allow_hyphen_values = true)]
    pub cpu_quota: Option<f64>,
    /// Memory limit per instance, e.g. 256MiB (netns) [default: 1GiB].
    #[arg(long, allow_hyphen_values = true)]
    pub memory: Option<String>,
    /// Most processes and threads per instance and batch, 1-65536 (netns,
    /// cgroup pids.max) [default: 512].
    #[arg(long)]
    pub pids: Option<u64>,
    /// Size of each instance's files, e.g. 64MiB (netns): its working
    /// directory is a tmpfs of its own of that size, kept across restarts,
    /// removed at down, counted as the instance's memory [default: 256MiB].
    #[arg(long)]
    pub disk: Option<String>,
    /// Cap of one instance log file (RUN_DIR/logs/ID.log), e.g. 8MiB; when
    /// full it becomes ID.log.1 (replacing the older one), so an instance's
    /// output never takes more than twice this on the host's disk
    /// [default: 8MiB].
    #[arg(long)]
    pub log_size: Option<String>,
    /// Health check: tickpack (stats over the wire), q3 (getinfo), a2s
    /// (A2S_INFO) or none.
    #[arg(long)]
    pub health: Option<String>,
    /// Check the instances with a game query and record its round trips
    /// (shown by `host status`): the same as --health q3 or --health a2s,
    /// e.g. for a --command server that answers A2S.
    #[arg(long, value_enum, conflicts_with = "health")]
    pub probe: Option<ProbeArg>,
    /// Host name, 1-8 of a-z0-9: prefixes everything created (tp<name>...).
    #[arg(long)]
    pub name: Option<String>,
    /// Directory for state, logs and the control socket
    /// [default: /run/tickpack/<name>]: a new path (created and marked as
    /// tickpack's), an empty directory of ours that no one else can write,
    /// or one tickpack marked before; anything else is refused.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Serve Prometheus metrics for all instances on this address.
    #[arg(long, value_parser = parse_addr)]
    pub metrics: Option<SocketAddr>,
    /// Let instances open connections to this host port (TCP and UDP, any
    /// host address); repeat for more. By default instances can only answer
    /// flows the host started (players, health checks): the host's own
    /// services are out of reach (netns).
    #[arg(long = "allow-host-port", value_name = "PORT")]
    pub allow_host_port: Vec<u16>,
    /// Best-effort batch work beside the servers, e.g. "stress-ng --cpu 0"
    /// (split on spaces, no shell; repeat for more): its own cgroup under
    /// the host's, on the server CPUs, restarted with backoff if it exits,
    /// removed with the host. As root (netns) it gets an instance's
    /// sandbox: its own uid, no privileges, the seccomp filter, its own
    /// PID and mount namespaces (private /tmp and /dev/shm, /proc of its
    /// own processes) and a network namespace with no network at all.
    #[arg(long = "batch", value_name = "CMD")]
    pub batch: Vec<String>,
    /// Treat this existing cgroup as batch work: tuned, never killed or
    /// removed (netns). Only below tickpack's tree for adopted batch work,
    /// tp-batch/NAME (create it and move the work there first); a host's
    /// tp<host>/ tree or any other cgroup is refused (exit 2).
    #[arg(long, value_name = "PATH")]
    pub batch_cgroup: Option<PathBuf>,
    /// The QoS guard: the batch gets CPU only while every server has slack
    /// against its QoS limits, cut at once when one loses it (netns); the
    /// same as --batch-control guard.
    #[arg(long, conflicts_with = "batch_control")]
    pub guard: bool,
    /// How the batch is held back: none (default), idle (SCHED_IDLE only)
    /// or guard.
    #[arg(long, value_name = "MODE")]
    pub batch_control: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The host's name (1-8 of a-z0-9).
    #[arg(long, default_value = "h")]
    pub name: String,
    /// Its run dir [default: /run/tickpack/<name>]; only a run dir
    /// tickpack marked is used.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Print the status document as JSON (an object with an `instances` list).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ChangeMapArgs {
    /// The host's name (1-8 of a-z0-9).
    #[arg(long, default_value = "h")]
    pub name: String,
    /// Its run dir [default: /run/tickpack/<name>]; only a run dir
    /// tickpack marked is used.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// The instance whose map changes (1-based, as `host status` numbers
    /// them).
    #[arg(long)]
    pub instance: u32,
}

#[derive(clap::Args, Debug)]
pub struct DownArgs {
    /// The host's name (1-8 of a-z0-9) [default: the name recorded in the
    /// run dir, else h]; a name the run dir's record contradicts is refused.
    #[arg(long)]
    pub name: Option<String>,
    /// Its run dir [default: /run/tickpack/<name>]; only tickpack's own
    /// records are removed there, and only from a run dir it marked.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
}

/// Flags `host up` no longer takes (one game's settings): hidden, and
/// refused with what to write instead.
#[derive(clap::Args, Debug, Default)]
pub struct GoneFlags {
    #[arg(long = "map", hide = true)]
    pub map: Vec<String>,
    #[arg(long, hide = true)]
    pub players_per_server: Option<String>,
    #[arg(long, hide = true)]
    pub sv_fps: Option<String>,
    #[arg(long = "game-arg", hide = true)]
    pub game_arg: Vec<String>,
}
