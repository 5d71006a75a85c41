//! `tickpack host up | status | down`: the consolidation host.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Subcommand;
use tickpack_host::fleet::FleetFile;
use tickpack_host::status::{query_status, request, ControlError, HostStatus};
use tickpack_host::supervisor::{HostError, Supervisor};

use super::parse_addr;
use crate::exit::{fail, Code, Failure};

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
    #[command(allow_negative_numbers = true)]
    Up(Box<UpArgs>),
    /// Show the instances of a running host.
    Status(StatusArgs),
    /// Stop a host and remove everything it created (also after a crash).
    Down(DownArgs),
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
    /// Network path for netns: veth (routed), bridge (software switch), macvlan or ipvlan (bypass).
    #[arg(long)]
    pub net: Option<String>,
    /// Instance address range (netns).
    #[arg(long)]
    pub range: Option<String>,
    /// Game port (netns: every instance; process: port + id - 1).
    #[arg(long)]
    pub port: Option<u16>,
    /// Core placement: spread, pack, or none (leave it to the kernel).
    #[arg(long)]
    pub placement: Option<String>,
    /// CPUs kept for the host and load generators (default: CPU 0 when there are 2+).
    #[arg(long)]
    pub reserved_cpus: Option<String>,
    /// Command template for each instance; placeholders {ip} {port} {id} {dir} {tickpack}.
    /// Its HOME is the instance's own directory ({dir}); a --config file can add
    /// [env] and [[file]] (config files written there before each start).
    /// Default: the reference server.
    #[arg(long)]
    pub command: Option<String>,
    /// CPU quota per instance, in cores (netns).
    #[arg(long, allow_hyphen_values = true)]
    pub cpu_quota: Option<f64>,
    /// Memory limit per instance, e.g. 256MiB (netns).
    #[arg(long, allow_hyphen_values = true)]
    pub memory: Option<String>,
    /// Working directory size limit per instance, e.g. 64MiB (netns): a tmpfs
    /// of that size, emptied at every start, counted as the instance's memory.
    #[arg(long)]
    pub disk: Option<String>,
    /// Health check: tickpack (stats over the wire) or none.
    #[arg(long)]
    pub health: Option<String>,
    /// Host name, 1-8 of a-z0-9: prefixes everything created (tp<name>...).
    #[arg(long)]
    pub name: Option<String>,
    /// Directory for state and the control socket [default: /run/tickpack/<name>].
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
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[arg(long, default_value = "h")]
    pub name: String,
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Print the status document as JSON (an object with an `instances` list).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct DownArgs {
    #[arg(long, default_value = "h")]
    pub name: String,
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
}

fn run_dir(name: &str, dir: &Option<PathBuf>) -> PathBuf {
    dir.clone()
        .unwrap_or_else(|| Path::new(RUN_ROOT).join(name))
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
        HostError::AlreadyRunning { .. } => Code::Config,
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
        disk,
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
    if !u.allow_host_port.is_empty() {
        f.allow_host_ports = Some(u.allow_host_port.clone());
    }
    let cfg = f
        .resolve(Path::new(RUN_ROOT))
        .map_err(|e| fail(Code::Config, e))?;
    // What depends on this machine, before anything is created.
    if let Some(cpus) = &cfg.reserved_cpus {
        super::check_cpus("reserved CPUs (--reserved-cpus)", cpus)?;
    }
    super::check_dir_flag("run dir (--run-dir)", &cfg.run_dir)?;
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
    let mut sup = Supervisor::start(cfg, exe).map_err(host_failure)?;
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
    loop {
        let down = sup.poll();
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
    let dir = run_dir(&s.name, &s.run_dir);
    super::check_dir_flag("--run-dir", &dir)?;
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

/// The `host status` table.
pub fn print_status(st: &HostStatus) {
    println!(
        "host {} ({}{}), placement {}, supervisor pid {}, up {:.0} s",
        st.name,
        st.backend,
        st.net
            .as_deref()
            .map(|n| format!(", {n}"))
            .unwrap_or_default(),
        st.placement,
        st.supervisor_pid,
        st.uptime_s
    );
    println!(
        "{:>4} {:<22} {:>8} {:<8} {:<12} {:>8} {:>6} {:>12} {:>8}",
        "id", "address", "pid", "cpus", "state", "restarts", "cpu%", "tick p99 us", "players"
    );
    for i in &st.instances {
        let cpus = i
            .cpus
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        println!(
            "{:>4} {:<22} {:>8} {:<8} {:<12} {:>8} {:>6} {:>12} {:>8}",
            i.id,
            i.address,
            opt(i.pid.map(|p| p.to_string())),
            cpus,
            format!("{:?}", i.state).to_lowercase(),
            i.restarts,
            opt(i.cpu_percent.map(|c| format!("{c:.1}"))),
            opt(i.tick_p99_us.map(|t| t.to_string())),
            opt(i.players.map(|p| p.to_string())),
        );
        if let Some(why) = &i.last_exit {
            println!("{:>4} last exit: {why}", "");
        }
    }
    if !st.events.is_empty() {
        println!("events:");
        for e in st.events.iter().rev().take(10).rev() {
            println!("  {e}");
        }
    }
}

fn down(d: DownArgs) -> Result<(), Failure> {
    let dir = run_dir(&d.name, &d.run_dir);
    super::check_dir_flag("--run-dir", &dir)?;
    match request(&dir, "down", Duration::from_secs(30)) {
        Ok(_) => {
            eprintln!("tickpack host {}: down", d.name);
            Ok(())
        }
        Err(ControlError::NotRunning { .. }) => {
            // No supervisor: remove whatever a crashed one left behind.
            let cfg = tickpack_host::fleet::FleetFile {
                name: Some(d.name.clone()),
                run_dir: Some(dir.clone()),
                ..Default::default()
            }
            .resolve(Path::new(RUN_ROOT))
            .map_err(|e| fail(Code::Config, e))?;
            let removed = tickpack_host::supervisor::recover(&cfg).map_err(host_failure)?;
            // Directories left empty go too (a non-empty one, holding logs
            // someone may want to read, stays).
            for d in [dir.join("instances"), dir.join("logs"), dir.clone()] {
                let _ = std::fs::remove_dir(d);
            }
            if removed.is_empty() {
                eprintln!(
                    "tickpack host {}: nothing was running and nothing was left over",
                    d.name
                );
            } else {
                eprintln!(
                    "tickpack host {}: no supervisor was running; removed leftovers: {}",
                    d.name,
                    removed.join(", ")
                );
            }
            Ok(())
        }
        Err(e) => Err(control_failure(e)),
    }
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
    tickpack_server::metrics::host::families(&st.name, &rows)
}

/// `__instance-init`: the init of an isolated instance (internal).
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    #[arg(long)]
    pub uid: Option<u32>,
    #[arg(long)]
    pub gid: Option<u32>,
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

pub fn instance_init(a: InitArgs) -> Result<(), Failure> {
    let code = tickpack_host::spawn::instance_init(a.uid, a.gid, &a.command);
    std::process::exit(code);
}
