//! The typed plan of a host, [`FleetPlan`], and the one place its rules
//! are checked ([`FleetPlan::build`] → a validated
//! [`tickpack_host::fleet::FleetConfig`]). A host file resolves into a
//! plan ([`crate::FleetFile::resolve`]); the bench fills one with typed
//! values (CPU sets, a `ServerSpec`, counts) and builds it the same way.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tickpack_game::launch::{ServerSpec, Word};
use tickpack_game::GameServer;
use tickpack_host::fleet::{
    Backend, FleetConfig, FleetError, Health, InstanceSpec, RestartPolicy, DEFAULT_NET,
    MAX_LOOPBACK_SOURCES,
};
use tickpack_host::guard::batch::BatchSpec;
use tickpack_host::guard::BatchControl;
use tickpack_host::netpath::{AddrPlan, NetKind};
use tickpack_host::placement::Policy;
use tickpack_host::spawn::log::{DEFAULT_LOG_BYTES, MAX_LOG_BYTES, MIN_LOG_BYTES};

use crate::size::{check_bytes, disk_size};

/// The memory limit of an instance without one (netns): 1 GiB.
pub const DEFAULT_MEMORY_BYTES: u64 = 1 << 30;

/// The pids limit of an instance (and the batch) without one (netns):
/// the instance init's RLIMIT_NPROC, [`tickpack_host::confine::MAX_PROCESSES`].
pub const DEFAULT_PIDS: u64 = tickpack_host::confine::MAX_PROCESSES;

/// The largest `pids` accepted.
pub const MAX_PIDS: u64 = 65_536;

/// The most instances one host runs.
pub const MAX_INSTANCES: u32 = 250;

/// The reference server, the default command.
pub const DEFAULT_COMMAND: &str = "{tickpack} server --bind {ip}:{port} --name tickpack-{id}";

/// The instance address range unless one is given.
pub const DEFAULT_RANGE: &str = "198.18.0.0/16";

/// The host name unless one is given.
pub const DEFAULT_NAME: &str = "h";

/// One instance's typed overrides (`[[instance]]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InstancePlan {
    pub id: u32,
    /// Another program (its argv); the environment, files and check stay
    /// the host's.
    pub command: Option<ServerSpec>,
    pub memory_bytes: Option<u64>,
    pub disk_bytes: Option<u64>,
    pub cpu_quota: Option<f64>,
}

/// What a host asks for, typed; `None` and empty take the defaults.
#[derive(Debug, Clone, Default)]
pub struct FleetPlan {
    /// 1-8 of a-z0-9 [default: h].
    pub name: Option<String>,
    /// 1..=250 [default: 1].
    pub instances: Option<u32>,
    /// [default: netns].
    pub backend: Option<Backend>,
    /// [default: [`DEFAULT_NET`]].
    pub net: Option<NetKind>,
    /// Instance addresses (netns) [default: [`DEFAULT_RANGE`]].
    pub range: Option<String>,
    /// Accept a range outside the local-use ranges.
    pub allow_public_range: bool,
    /// [default: the game's port].
    pub port: Option<u16>,
    /// [default: spread].
    pub placement: Option<Policy>,
    /// CPUs kept for the host and load generators; `None`: the default.
    pub reserved_cpus: Option<Vec<usize>>,
    /// The game every instance runs [default: the reference server].
    pub game: GameServer,
    /// The server every instance runs, when not the game's own spec (the
    /// bench's reference server with its settings, a host file's
    /// `command`).
    pub server: Option<ServerSpec>,
    /// Added to the server's environment (`[env]`).
    pub env: Vec<(String, Word)>,
    /// Added to the server's config files (`[[file]]`).
    pub files: Vec<(PathBuf, Word)>,
    /// [default: the server's own check].
    pub health: Option<Health>,
    pub cpu_quota: Option<f64>,
    /// [default: [`DEFAULT_MEMORY_BYTES`] on netns].
    pub memory_bytes: Option<u64>,
    /// [default: [`DEFAULT_PIDS`] on netns].
    pub pids: Option<u64>,
    pub disk_bytes: Option<u64>,
    /// The cap of one instance log file [default: 8 MiB].
    pub log_bytes: Option<u64>,
    /// [default: RUN_ROOT/NAME].
    pub run_dir: Option<PathBuf>,
    /// Host ports instances may connect to (netns).
    pub allow_host_ports: Vec<u16>,
    pub overrides: Vec<InstancePlan>,
    /// The bots the game's command asks for, when the server is a game's
    /// (recorded per instance for the status).
    pub bots: Option<u16>,
    /// Source addresses set aside for load generators (the bench).
    pub source_addrs: u32,
    pub batch: Vec<BatchSpec>,
    pub batch_cgroup: Option<PathBuf>,
    pub batch_control: BatchControl,
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

impl FleetPlan {
    /// Checks every rule and builds the configuration the supervisor
    /// runs; `default_run_root` is /run/tickpack normally. Nothing on the
    /// machine is looked at (the caller checks CPUs, the run dir and the
    /// game's files).
    pub fn build(self, default_run_root: &Path) -> Result<FleetConfig, FleetError> {
        let bad = |m: String| Err(FleetError::Invalid(m));
        let name = self.name.unwrap_or_else(|| DEFAULT_NAME.into());
        if tickpack_sys::validate_host_name(&name).is_err() {
            return bad(format!("host name {name:?} must be 1-{} characters of a-z and 0-9 (it prefixes interface names)", tickpack_sys::MAX_HOST_NAME));
        }
        let n = self.instances.unwrap_or(1);
        if n == 0 || n > MAX_INSTANCES {
            return bad(format!("instances must be 1..={MAX_INSTANCES}, got {n}"));
        }
        let backend = self.backend.unwrap_or(Backend::Netns);
        let net = self.net.unwrap_or(DEFAULT_NET);
        let placement = self.placement.unwrap_or(Policy::Spread);
        let game = self.game;
        // The server: the caller's, else the game's own, else the
        // reference server (the game crate names the game, not this).
        let mut server = match self.server {
            Some(s) => s,
            None => ServerSpec::parse(DEFAULT_COMMAND)?,
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
        let range = self.range.unwrap_or_else(|| DEFAULT_RANGE.into());
        let source_addrs = self.source_addrs;
        if backend == Backend::Process && source_addrs > MAX_LOOPBACK_SOURCES {
            return bad(format!(
                "{source_addrs} source addresses: loopback gives at most {MAX_LOOPBACK_SOURCES}"
            ));
        }
        if backend == Backend::Netns {
            let plan = AddrPlan::parse(&range)
                .and_then(|p| p.with_sources(net, source_addrs))
                .map_err(|e| FleetError::Invalid(format!("address range: {e}")))?;
            if !self.allow_public_range {
                plan.check_local_use().map_err(|e| {
                    FleetError::Invalid(format!(
                        "address range (--range): {e}; --allow-public-range (allow_public_range = true) takes it anyway"
                    ))
                })?;
            }
            for id in 1..=n {
                plan.check(net, id).map_err(|e| {
                    let give = plan.prefix_for(net, n).map_or(String::new(), |p| {
                        format!(" (a /{p} at {} or wider holds them)", plan.range().addr())
                    });
                    FleetError::Invalid(format!(
                        "address range {range} for {n} instances: {e}{give}"
                    ))
                })?;
            }
        }
        // An instance without a memory limit still has one (netns): it may
        // not take the machine's memory from its neighbours.
        let memory = match self.memory_bytes {
            Some(m) => Some(check_bytes(m)?),
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
        let log_bytes = self.log_bytes.unwrap_or(DEFAULT_LOG_BYTES);
        if !(MIN_LOG_BYTES..=MAX_LOG_BYTES).contains(&log_bytes) {
            return bad(format!(
                "log_size (--log-size) must be {} MiB to {} MiB",
                MIN_LOG_BYTES >> 20,
                MAX_LOG_BYTES >> 20
            ));
        }
        let disk = self
            .disk_bytes
            .map(|d| check_bytes(d).map_err(disk_size))
            .transpose()?;
        if let Some(q) = self.cpu_quota {
            check_cpu_quota(q)?;
        }
        server.env.extend(self.env);
        server.files.extend(self.files);
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
                bots: self.bots,
            })
            .collect();
        let mut seen = BTreeSet::new();
        for o in self.overrides {
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
                    argv: c.argv,
                    ..server.clone()
                };
                inst.bots = None;
            }
            if let Some(m) = o.memory_bytes {
                inst.memory_bytes = Some(check_bytes(m)?);
            }
            if let Some(q) = o.cpu_quota {
                check_cpu_quota(q)?;
                inst.cpu_quota = Some(q);
            }
            if let Some(d) = o.disk_bytes {
                inst.disk_bytes = Some(check_bytes(d).map_err(disk_size)?);
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
        let mut allow_host_ports = self.allow_host_ports;
        if allow_host_ports.contains(&0) {
            return bad("allow_host_ports: port 0 is not a port".into());
        }
        if backend == Backend::Process && !allow_host_ports.is_empty() {
            return bad("allow_host_ports needs the netns backend (the process backend shares the host's network and has no firewall)".into());
        }
        allow_host_ports.sort_unstable();
        allow_host_ports.dedup();
        let batch = self.batch;
        let batch_control = self.batch_control;
        if let Some(cg) = &self.batch_cgroup {
            tickpack_host::guard::batch::check_adopted_cgroup(cg).map_err(FleetError::Invalid)?;
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
        // The game's own start time limit, for all at once: what its
        // [ready] says, nothing longer (docs/games.md).
        let start_timeout_s = game.start_limit(n).as_secs_f64();
        Ok(FleetConfig {
            name,
            run_dir,
            backend,
            net,
            range,
            port,
            placement,
            reserved_cpus: self.reserved_cpus,
            health,
            restart: RestartPolicy {
                start_timeout_s,
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
