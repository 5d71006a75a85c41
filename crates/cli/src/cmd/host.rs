//! `tickpack host up | status | down`: the consolidation host.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use tickpack_host::fleet::{FleetFile, Health};
use tickpack_host::status::{query_status, request, ControlError, HostStatus};
use tickpack_host::supervisor::{HostError, Supervisor};

use super::parse_addr;
use crate::exit::{fail, Code, Failure};
use tickpack_sys::text::{escape, EXCERPT, SHORT};

/// Where run dirs live unless --run-dir says otherwise.
pub const RUN_ROOT: &str = "/run/tickpack";

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: HostCmd,
}

#[derive(Subcommand, Debug)]
pub enum HostCmd {
    /// Start the instances and supervise them in the foreground until
    /// `tickpack host down`, SIGTERM or Ctrl-C.
    #[command(allow_negative_numbers = true, after_help = UP_EXAMPLES)]
    Up(Box<UpArgs>),
    /// Show the instances of a running host.
    Status(StatusArgs),
    /// Stop a host and remove everything it created (also after a crash).
    Down(DownArgs),
}

/// Examples shown by `host up --help`.
const UP_EXAMPLES: &str = "Examples:
  tickpack host up --instances 4 --net bridge
  tickpack host up --game openarena --instances 2 --map oa_dm1,oa_dm2 --players-per-server 12
  tickpack host up --game openarena --game-arg g_gravity=600 --sv-fps 40
  tickpack host up --game nexuiz --instances 3 --set map=ruiner --bots 6
  tickpack host up --game ./mine.toml --instances 2      (a definition file: docs/games.md)
  tickpack host up --command \"{tickpack} server --bind {ip}:{port}\" --probe a2s
  tickpack host up --instances 6 --guard --batch \"stress-ng --cpu 0 --cache 1\"";

/// The game query protocols `--probe` names.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ProbeArg {
    /// Quake 3 `getinfo` (OpenArena, ioquake3)
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
    /// [default: 27015; 27960 with --game openarena].
    #[arg(long)]
    pub port: Option<u16>,
    /// Core placement: spread, pack, or none (leave it to the kernel).
    #[arg(long)]
    pub placement: Option<String>,
    /// CPUs kept for the host and load generators (default: CPU 0 when there are 2+).
    #[arg(long)]
    pub reserved_cpus: Option<String>,
    /// The game server: a built-in game (`tickpack games list`:
    /// reference, the default; openarena, port 27960, checked with the
    /// Quake 3 query; nexuiz) or a definition file's path (docs/games.md),
    /// launched from its command template with its port and query.
    #[arg(long, value_name = "NAME|FILE")]
    pub game: Option<String>,
    /// A defined game's variable, NAME=VALUE (repeatable), e.g.
    /// --set map=ruiner (`tickpack games show GAME` lists them).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// OpenArena: the map; repeat or give a comma list for a rotation
    /// [default: oa_dm1]. A defined game: its `map` variable (the first).
    #[arg(long = "map", value_name = "MAP")]
    pub map: Vec<String>,
    /// OpenArena: players per server, humans and bots: bots fill each
    /// server up to this many (bot_minplayers), 0-16 [default: 12].
    #[arg(long)]
    pub players_per_server: Option<u8>,
    /// OpenArena: bots added at start, so a server is full at once
    /// [default: --players-per-server]; bot_minplayers then keeps the total,
    /// removing one bot per 10 s as players join (24 slots in all: 8 stay
    /// free for players to join at once). A defined game: bots per server
    /// [default: its definition's].
    #[arg(long)]
    pub bots: Option<u8>,
    /// OpenArena: server frames per second (sv_fps) [default: 20, the
    /// engine's default, what public servers run]. A defined game: its tick
    /// rate [default: its definition's].
    #[arg(long)]
    pub sv_fps: Option<u16>,
    /// OpenArena: one more cvar, CVAR=VALUE, passed as `+set CVAR VALUE`
    /// after the host's own; repeat for more.
    #[arg(long = "game-arg", value_name = "CVAR=VALUE")]
    pub game_arg: Vec<String>,
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

/// The run dir of `status` and `down`: --run-dir, or the default for a
/// name that passes the host-name rule (the name becomes part of a path).
fn run_dir(name: &str, dir: &Option<PathBuf>) -> Result<PathBuf, Failure> {
    if let Err(e) = tickpack_sys::validate_host_name(name) {
        return Err(fail(
            Code::Config,
            format!(
                "--name \"{}\": {e} (a host name is 1-{} of a-z and 0-9)",
                tickpack_sys::text::escape(name, tickpack_sys::text::SHORT),
                tickpack_sys::MAX_HOST_NAME
            ),
        ));
    }
    let dir = dir
        .clone()
        .unwrap_or_else(|| Path::new(RUN_ROOT).join(name));
    check_run_dir_flag(&dir)?;
    Ok(dir)
}

/// Exit 2 unless tickpack may use `dir` as a run dir: missing, empty and
/// ours, or marked as tickpack's (see `tickpack_host::supervisor::check_run_dir`).
fn check_run_dir_flag(dir: &Path) -> Result<(), Failure> {
    tickpack_host::supervisor::check_run_dir(dir)
        .map(|_| ())
        .map_err(|why| fail(Code::Config, format!("run dir (--run-dir): {why}")))
}

pub fn run(a: Args) -> Result<(), Failure> {
    match a.cmd {
        HostCmd::Up(u) => up(*u),
        HostCmd::Status(s) => status(s),
        HostCmd::Down(d) => down(d),
    }
}

fn host_failure(e: HostError) -> Failure {
    let code = match e {
        HostError::Config(_) => Code::Config,
        HostError::Isolation(_) | HostError::Spawn { .. } => Code::Isolation,
        HostError::AlreadyRunning { .. } | HostError::RunDir(_) => Code::Config,
        HostError::Io { .. } => Code::Runtime,
    };
    Failure {
        code,
        error: e.into(),
    }
}

/// Builds a validated fleet config from a file and flags.
pub fn fleet_config(u: &UpArgs) -> Result<tickpack_host::fleet::FleetConfig, Failure> {
    let mut f = match &u.config {
        Some(p) => FleetFile::load(p).map_err(|e| fail(Code::Config, e))?,
        None => FleetFile::default(),
    };
    macro_rules! flag {
        ($($field:ident),*) => { $( if u.$field.is_some() { f.$field = u.$field.clone(); } )* };
    }
    flag!(
        instances,
        range,
        port,
        reserved_cpus,
        command,
        cpu_quota,
        memory,
        pids,
        disk,
        log_size,
        name,
        run_dir
    );
    // The typed settings, parsed by their own types (one line on error).
    macro_rules! typed_flag {
        ($($field:ident),*) => { $( if let Some(v) = &u.$field {
            f.$field = Some(v.parse().map_err(|e| fail(Code::Config, e))?);
        } )* };
    }
    typed_flag!(backend, net, placement, health);
    if let Some(p) = u.probe {
        f.health = Some(match p {
            ProbeArg::Q3 => Health::Q3,
            ProbeArg::A2s => Health::A2s,
        });
    }
    if let Some(g) = &u.game {
        f.game = Some(g.clone());
    }
    if !u.set.is_empty() {
        f.game_vars = Some(u.set.clone());
    }
    if !u.map.is_empty() {
        f.map = Some(u.map.clone());
    }
    if u.players_per_server.is_some() {
        f.players_per_server = u.players_per_server;
    }
    if u.bots.is_some() {
        f.bots = u.bots;
    }
    if u.sv_fps.is_some() {
        f.sv_fps = u.sv_fps;
    }
    if !u.game_arg.is_empty() {
        f.game_args = Some(u.game_arg.clone());
    }
    if !u.allow_host_port.is_empty() {
        f.allow_host_ports = Some(u.allow_host_port.clone());
    }
    if !u.batch.is_empty() {
        f.batch = Some(u.batch.clone());
    }
    if u.batch_cgroup.is_some() {
        f.batch_cgroup = u.batch_cgroup.clone();
    }
    if let Some(c) = &u.batch_control {
        f.batch_control = Some(c.parse().map_err(|e| fail(Code::Config, e))?);
    }
    if u.allow_public_range {
        f.allow_public_range = Some(true);
    }
    if u.guard {
        f.batch_control = Some(tickpack_host::guard::BatchControl::Guard);
    }
    let cfg = f
        .resolve(Path::new(RUN_ROOT))
        .map_err(|e| fail(Code::Config, e))?;
    // What depends on this machine, before anything is created.
    if let Some(cpus) = &cfg.reserved_cpus {
        super::check_cpus("reserved CPUs (--reserved-cpus)", cpus)?;
    }
    check_run_dir_flag(&cfg.run_dir)?;
    cfg.game.check_system().map_err(|e| fail(Code::Config, e))?;
    Ok(cfg)
}

fn up(u: UpArgs) -> Result<(), Failure> {
    let cfg = fleet_config(&u)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let metrics = u
        .metrics
        .map(tickpack_server::metrics::Endpoint::serve)
        .transpose()
        .map_err(|e| Failure {
            code: Code::Config,
            error: e.into(),
        })?;
    let exe = std::env::current_exe().context("finding the tickpack binary")?;
    let t0 = Instant::now();
    let mut sup = Supervisor::start_with_policy(cfg, exe, Some(tickpack_guard::policy()))
        .map_err(host_failure)?;
    let st = sup.status();
    eprintln!(
        "tickpack host {} up: {} instances ({}{}), placement {}, reserved CPUs {:?}, started in {} ms; run dir {}",
        st.name,
        st.instances.len(),
        st.backend,
        st.net.as_deref().map(|n| format!(", {n}")).unwrap_or_default(),
        st.placement,
        st.reserved_cpus,
        t0.elapsed().as_millis(),
        sup.config().run_dir.display()
    );
    for i in &st.instances {
        println!("instance {} at {} on CPUs {:?}", i.id, i.address, i.cpus);
    }
    let mut next_metrics = Instant::now();
    let mut events_seen = 0;
    loop {
        let down = sup.poll();
        let (events, seen) = sup.events_since(events_seen);
        events_seen = seen;
        for e in events {
            eprintln!("tickpack host: {}", escape(&e, EXCERPT));
        }
        if down || stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(m) = &metrics {
            if Instant::now() >= next_metrics {
                next_metrics = Instant::now() + Duration::from_secs(1);
                m.publish(&metric_families(&sup.status()));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("tickpack host: stopping instances and removing what was created");
    let problems = sup.shutdown();
    if !problems.is_empty() {
        return Err(fail(
            Code::Isolation,
            format!("could not remove everything: {}", problems.join("; ")),
        ));
    }
    Ok(())
}

fn status(s: StatusArgs) -> Result<(), Failure> {
    let dir = run_dir(&s.name, &s.run_dir)?;
    let st = query_status(&dir).map_err(control_failure)?;
    if s.json {
        println!("{}", serde_json::to_string_pretty(&st)?);
        return Ok(());
    }
    print_status(&st);
    Ok(())
}

fn control_failure(e: ControlError) -> Failure {
    let code = match e {
        ControlError::NotRunning { .. } => Code::Unreachable,
        _ => Code::Runtime,
    };
    Failure {
        code,
        error: e.into(),
    }
}

/// One line of a text built in memory (writing to a String cannot fail).
macro_rules! put {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Prints the `host status` table.
pub fn print_status(st: &HostStatus) {
    print!("{}", status_text(st));
}

/// The `host status` table. Everything an instance controls (the map its
/// query answer names, its exit and log excerpts in events) is escaped and
/// cut ([`escape`]): a forged answer cannot add rows or drive the terminal.
pub fn status_text(st: &HostStatus) -> String {
    let mut out = String::new();
    put!(
        out,
        "host {} ({}{}), placement {}, supervisor pid {}, up {:.0} s",
        escape(&st.name, SHORT),
        st.backend,
        st.net
            .as_deref()
            .map(|n| format!(", {n}"))
            .unwrap_or_default(),
        st.placement,
        st.supervisor_pid,
        st.uptime_s
    );
    put!(
        out,
        "{:>4} {:<22} {:>8} {:<8} {:<12} {:>8} {:>6} {:>12} {:>8} {:>5} {:>11} {:>4}  map",
        "id",
        "address",
        "pid",
        "cpus",
        "state",
        "restarts",
        "cpu%",
        "tick p99 us",
        "players",
        "bots",
        "mem MiB",
        "oom",
    );
    for i in &st.instances {
        let cpus = i
            .cpus
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        put!(
            out,
            "{:>4} {:<22} {:>8} {:<8} {:<12} {:>8} {:>6} {:>12} {:>8} {:>5} {:>11} {:>4}  {}",
            i.id,
            escape(&i.address, SHORT),
            opt(i.pid.map(|p| p.to_string())),
            cpus,
            format!("{:?}", i.state).to_lowercase(),
            i.restarts,
            opt(i.cpu_percent.map(|c| format!("{c:.1}"))),
            opt(i.tick_p99_us.map(|t| t.to_string())),
            opt(i.players.map(|p| p.to_string())),
            opt(i.bots.map(|b| b.to_string())),
            // Used/limit; "-" where not sampled or unlimited.
            format!(
                "{}/{}",
                opt(i.memory_bytes.map(|b| (b >> 20).to_string())),
                opt(i.memory_limit_bytes.map(|b| (b >> 20).to_string()))
            ),
            i.oom_kills,
            i.map.as_deref().map_or("-".into(), |m| escape(m, SHORT)),
        );
        if let Some(q) = &i.query_latency_us {
            put!(
                out,
                "{:>4} query round trip: p50 {} us, p99 {} us, max {} us ({} replies)",
                "",
                q.p50,
                q.p99,
                q.max,
                q.count
            );
        }
        if let Some(why) = &i.last_exit {
            put!(out, "{:>4} last exit: {}", "", escape(why, EXCERPT));
        }
    }
    if let Some(g) = &st.guard {
        print_guard(&mut out, g);
    }
    if !st.events.is_empty() {
        put!(out, "events:");
        for e in st.events.iter().rev().take(10).rev() {
            put!(out, "  {}", escape(e, EXCERPT));
        }
    }
    out
}

/// The guard's lines of `host status`.
fn print_guard(out: &mut String, g: &tickpack_host::guard::GuardStatus) {
    let opt = |v: Option<f64>, unit: &str| v.map_or("-".into(), |v| format!("{v:.1}{unit}"));
    put!(out,
        "batch: control {}, quota {}, CPUs {:?}, batch CPU {}, PSI some avg10 {}{}, steal {}, throttled {} times ({} ms)",
        g.control,
        g.quota_cores
            .map_or("unlimited".into(), |q| format!("{q:.2} cores")),
        g.cpus,
        opt(g.batch_cpu_percent, "%"),
        opt(g.psi_some_avg10, "%"),
        g.psi_unavailable
            .as_deref()
            .map(|w| format!(" (unavailable: {w})"))
            .unwrap_or_default(),
        opt(g.steal.map(|s| s * 100.0), "%"),
        g.nr_throttled,
        g.throttled_ms,
    );
    if let Some(b) = g.baseline_slack {
        put!(
            out,
            "  servers' own slack (batch at zero): {:.0}%{}",
            b * 100.0,
            if b < tickpack_guard::Tuning::default().grow_above {
                " (below the growth band: the batch is judged on what it costs them)"
            } else {
                ""
            }
        );
    }
    if let Some(why) = &g.cgroup_pressure_unavailable {
        put!(out, "  batch cgroup pressure: unavailable ({why})");
    }
    for b in &g.batch {
        put!(
            out,
            "  {} pid {} {} restarts {}{}",
            escape(&b.command, EXCERPT),
            b.pid.map_or("-".into(), |p| p.to_string()),
            b.state,
            b.restarts,
            b.last_exit
                .as_deref()
                .map(|w| format!(", last exit: {}", escape(w, EXCERPT)))
                .unwrap_or_default()
        );
    }
    if !g.last.is_empty() {
        let counts: Vec<String> = g
            .decisions
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        put!(out, "guard decisions ({}), last:", counts.join(", "));
        for d in &g.last {
            put!(
                out,
                "  [{:8.2}s] {:?} -> {:.2} cores on {:?}: {}",
                d.at_ms as f64 / 1000.0,
                d.action,
                d.allowance.quota_cores,
                d.allowance.cpus,
                escape(&d.reason, EXCERPT)
            );
        }
    }
}

/// The host name when none is given or recorded.
const DEFAULT_HOST: &str = "h";

/// How long `down` waits for a host that is still starting (its supervisor
/// is alive, its control socket not yet bound) before giving up.
const DOWN_START_WAIT: Duration = Duration::from_secs(60);

fn down(d: DownArgs) -> Result<(), Failure> {
    let dir = run_dir(d.name.as_deref().unwrap_or(DEFAULT_HOST), &d.run_dir)?;
    // The run dir's own record says whose it is; a --name that disagrees
    // would take down (or clean up after) another host.
    let recorded = tickpack_host::supervisor::recorded_name(&dir)
        .filter(|n| tickpack_sys::validate_host_name(n).is_ok());
    let name = match (d.name, recorded) {
        (Some(asked), Some(rec)) if asked != rec => {
            return Err(fail(
                Code::Config,
                format!(
                    "--name {asked}: the run dir {} belongs to host {rec}; leave out --name, or give --name {rec}",
                    dir.display()
                ),
            ))
        }
        (_, Some(rec)) => rec,
        (Some(asked), None) => asked,
        (None, None) if d.run_dir.is_some() => {
            tickpack_host::supervisor::remove_run_dir(&dir);
            eprintln!(
                "tickpack host: {} records no host, so nothing was taken down; to clean up after a host by its name, give --name",
                dir.display()
            );
            return Ok(());
        }
        (None, None) => DEFAULT_HOST.to_string(),
    };
    let t0 = Instant::now();
    let mut said_waiting = false;
    loop {
        match request(&dir, "down", Duration::from_secs(30)) {
            Ok(_) => {
                eprintln!("tickpack host {name}: down");
                return Ok(());
            }
            Err(ControlError::NotRunning { .. }) => {}
            Err(e) => return Err(control_failure(e)),
        }
        // A supervisor that is alive but has no control socket yet is
        // starting: wait for it (it answers `down` once up) rather than
        // refusing, and never recover under its feet.
        let Some(pid) = tickpack_host::supervisor::live_supervisor(&dir) else {
            break;
        };
        if t0.elapsed() > DOWN_START_WAIT {
            return Err(fail(
                Code::Runtime,
                format!(
                    "host {} (supervisor pid {pid}) is still starting after {} s and has no control socket; try again, or stop it with kill {pid}",
                    name,
                    DOWN_START_WAIT.as_secs()
                ),
            ));
        }
        if !said_waiting {
            eprintln!(
                "tickpack host {name}: still starting (supervisor pid {pid}); waiting to take it down"
            );
            said_waiting = true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // No supervisor: remove whatever a crashed one left behind.
    let cfg = tickpack_host::fleet::FleetFile {
        name: Some(name.clone()),
        run_dir: Some(dir.clone()),
        ..Default::default()
    }
    .resolve(Path::new(RUN_ROOT))
    .map_err(|e| fail(Code::Config, e))?;
    let removed = tickpack_host::supervisor::recover(&cfg).map_err(host_failure)?;
    // Only tickpack's own records go; directories left empty too (logs
    // someone may want to read stay).
    tickpack_host::supervisor::remove_run_dir(&dir);
    if removed.is_empty() {
        eprintln!("tickpack host {name}: nothing was running and nothing was left over");
    } else {
        eprintln!(
            "tickpack host {name}: no supervisor was running; removed leftovers: {}",
            removed.join(", ")
        );
    }
    Ok(())
}

/// The Prometheus families of all instances of a host.
pub fn metric_families(st: &HostStatus) -> Vec<tickpack_server::metrics::MetricFamily> {
    use tickpack_host::status::InstanceState as S;
    let rows: Vec<_> = st
        .instances
        .iter()
        .map(|i| tickpack_server::metrics::host::Instance {
            id: i.id.to_string(),
            address: i.address.clone(),
            up: i.state == S::Running,
            restarts: i.restarts,
            cpu_percent: i.cpu_percent,
            tick_p99_us: i.tick_p99_us,
            frame_p99_us: i.frame_p99_us,
            players: i.players.map(u32::from),
            memory_bytes: i.memory_bytes,
            oom_kills: i.oom_kills,
        })
        .collect();
    let mut families = tickpack_server::metrics::host::families(&st.name, &rows);
    if let Some(g) = &st.guard {
        families.extend(guard_families(&st.name, g));
    }
    families
}

/// The guard's Prometheus families: the allowance, the batch's CPU use,
/// pressure, throttling and the decisions by action.
fn guard_families(
    host: &str,
    g: &tickpack_host::guard::GuardStatus,
) -> Vec<tickpack_server::metrics::MetricFamily> {
    use tickpack_server::metrics::{family, Kind};
    let one = |name: &str, help: &str, kind: Kind, v: Option<f64>| {
        let labels = [("host", host)];
        family(name, help, kind, v.map(|v| (&labels[..], v)))
    };
    let mut out = vec![
        one(
            "tickpack_guard_batch_quota_cores",
            "CPU quota the guard gives the batch, in cores (absent: unlimited).",
            Kind::Gauge,
            g.quota_cores,
        ),
        one(
            "tickpack_guard_batch_cpu_percent",
            "CPU use of the batch cgroup over the last period, percent of one core.",
            Kind::Gauge,
            g.batch_cpu_percent,
        ),
        one(
            "tickpack_guard_cpu_pressure_some_avg10",
            "System CPU pressure (PSI some avg10), percent.",
            Kind::Gauge,
            g.psi_some_avg10,
        ),
        one(
            "tickpack_guard_baseline_slack",
            "The servers' own slack with the batch at zero (1 - worst signal / limit), once measured.",
            Kind::Gauge,
            g.baseline_slack,
        ),
        one(
            "tickpack_guard_steal_ratio",
            "The largest share of the last period a CPU lost to steal (the hypervisor ran other guests), 0-1.",
            Kind::Gauge,
            g.steal,
        ),
        one(
            "tickpack_guard_batch_throttled_total",
            "Periods the batch cgroup was throttled (cpu.stat nr_throttled).",
            Kind::Counter,
            Some(g.nr_throttled as f64),
        ),
    ];
    let rows: Vec<([(&str, &str); 2], f64)> = g
        .decisions
        .iter()
        .map(|(a, n)| ([("host", host), ("action", a.as_str())], *n as f64))
        .collect();
    out.push(family(
        "tickpack_guard_decisions_total",
        "Guard decisions by action (grow, hold, cut, zero).",
        Kind::Counter,
        rows.iter().map(|(l, v)| (&l[..], *v)),
    ));
    out
}

/// `__instance-init`: the init of an isolated instance (internal).
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    #[arg(long)]
    pub uid: Option<u32>,
    #[arg(long)]
    pub gid: Option<u32>,
    /// A descriptor holding the command's environment (NUL-separated
    /// KEY=VALUE), read and closed by the init.
    #[arg(long)]
    pub env_fd: Option<i32>,
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

pub fn instance_init(a: InitArgs) -> Result<(), Failure> {
    let code = tickpack_host::spawn::instance_init(a.uid, a.gid, a.env_fd, &a.command);
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_host::status::{InstanceState, InstanceStatus, STATUS_SCHEMA};

    /// A host's status with one running instance: its map, players, memory,
    /// OOM kills, last exit and events as given.
    fn one_instance(
        map: Option<String>,
        memory: (Option<u64>, Option<u64>, u64),
        last_exit: &str,
        events: Vec<String>,
    ) -> HostStatus {
        HostStatus {
            schema: STATUS_SCHEMA.into(),
            name: "h".into(),
            backend: "netns".into(),
            net: Some("bridge".into()),
            placement: "spread".into(),
            reserved_cpus: vec![0],
            supervisor_pid: 1,
            uptime_s: 1.0,
            instances: vec![InstanceStatus {
                id: 1,
                address: "198.18.0.3:27015".into(),
                pid: Some(42),
                cpus: vec![1],
                state: InstanceState::Running,
                restarts: 0,
                cpu_percent: None,
                tick_p99_us: None,
                frame_p99_us: None,
                players: Some(1),
                bots: Some(0),
                map,
                query_latency_us: None,
                memory_bytes: memory.0,
                memory_limit_bytes: memory.1,
                oom_kills: memory.2,
                last_exit: Some(last_exit.into()),
            }],
            events,
            guard: None,
        }
    }

    /// Regression: a query answer whose map name held a newline and
    /// terminal escapes printed a fake row and raw escapes in `host status`.
    #[test]
    fn status_escapes_a_forged_map_name() {
        let forged = "dm1\n   2 10.6.6.6:27015     666 0        running             0    0.0          1        0     0  x\x1b[2J\x1b]0;owned\x07";
        let st = one_instance(
            Some(forged.into()),
            (None, None, 0),
            &format!("exited with code 1; last output: {forged}"),
            vec![format!("instance 1 said {forged}")],
        );
        let text = status_text(&st);
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text}");
        // Header, column names, one row, its last exit, "events:", one event.
        assert_eq!(text.lines().count(), 6, "no forged row: {text}");
        assert!(text.contains("dm1\\n"), "{text}");
        let row = text.lines().nth(2).unwrap();
        assert!(row.chars().count() < 200, "the map is cut: {row}");
    }

    /// Regression: the README promised memory and OOM kill columns that
    /// `host status` did not print.
    #[test]
    fn status_shows_memory_and_oom_kills() {
        let st = one_instance(
            None,
            (Some(12 << 20), Some(1 << 30), 3),
            "killed by the OOM killer",
            vec![],
        );
        let text = status_text(&st);
        let mut lines = text.lines().skip(1);
        let head = lines.next().unwrap();
        assert!(head.contains("mem MiB") && head.contains("oom"), "{text}");
        let row = lines.next().unwrap();
        assert!(row.contains("12/1024") && row.contains(" 3 "), "{row}");
        assert!(
            text.contains("last exit: killed by the OOM killer"),
            "{text}"
        );
    }

    #[test]
    fn status_and_down_refuse_a_name_that_is_not_one() {
        for name in ["../../x", "a/b", "H1", ""] {
            let e = run_dir(name, &None).unwrap_err();
            assert_eq!(e.code, Code::Config, "{name}");
        }
    }
}
