//! The supervisor behind `tickpack host up`: brings a fleet up, keeps it up,
//! takes it down, and never leaves anything behind.
//!
//! Order: [`Supervisor::start`] (validate → recover leftovers of an earlier
//! run → run dir and records → placement → network → per instance: working
//! directory, cgroup, spawn; any failure tears down what was made), then
//! [`Supervisor::poll`] every ~50 ms (reap exits, restart with backoff or
//! give up, health checks, CPU and memory use, control requests), then
//! [`Supervisor::shutdown`].
//!
//! Everything created is named with `tp<name>` and listed in
//! `RUN_DIR/state.json` before it is created, so `host down` and the next
//! `host up` can remove it even after the supervisor was killed with -9.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tickpack_wire::Packet;

use crate::cgroup::{self, Cgroup, CgroupLayout, Limits};
use crate::fleet::{expand, Backend, FleetConfig, Health, InstanceSpec};
use crate::netpath::{self, AddrPlan, HostNet};
use crate::placement::{self, Placement, Topology};
use crate::spawn::{self, Isolation, Spec};
use crate::status::{HostStatus, InstanceState, InstanceStatus, STATUS_SCHEMA};

/// Instance N runs as uid and gid `USER_BASE + N` (netns backend).
pub const USER_BASE: u32 = 200_000;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(transparent)]
    Config(#[from] crate::fleet::FleetError),
    #[error("isolation unavailable: {0}")]
    Isolation(String),
    #[error("a host named {name} is already running (supervisor pid {pid}); stop it with `tickpack host down --run-dir {dir}`")]
    AlreadyRunning { name: String, pid: u32, dir: String },
    #[error("{step}: {err}")]
    Io { step: String, err: std::io::Error },
    #[error("starting instance {id}: {err}")]
    Spawn { id: u32, err: spawn::SpawnError },
}

fn io(step: impl Into<String>) -> impl FnOnce(std::io::Error) -> HostError {
    let step = step.into();
    move |err| HostError::Io { step, err }
}

/// What `state.json` records: enough to clean up after a crash.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateRecord {
    pub name: String,
    pub supervisor_pid: u32,
    pub net: Option<netpath::NetRecord>,
    pub cgroups: Vec<PathBuf>,
    pub placement: Option<Placement>,
    pub config: Option<FleetConfig>,
    /// Every process started (instance inits, or the commands of the
    /// process backend), with its start time, so only these are killed.
    #[serde(default)]
    pub processes: Vec<crate::leftover::RecordedProcess>,
}

struct Instance {
    spec: InstanceSpec,
    addr: SocketAddr,
    cpus: Vec<usize>,
    node: Option<usize>,
    dir: PathBuf,
    cgroup: Option<Cgroup>,
    child: Option<Child>,
    state: InstanceState,
    restarts: u32,
    crashes: VecDeque<Instant>,
    restart_at: Option<Instant>,
    last_exit: Option<String>,
    started: Instant,
    last_heard: Option<Instant>,
    stats: Option<tickpack_wire::ServerStats>,
    cpu_sample: Option<(u64, Instant)>,
    cpu_percent: Option<f64>,
    memory_bytes: Option<u64>,
    oom_kills: u64,
}

/// A running fleet.
pub struct Supervisor {
    cfg: FleetConfig,
    exe: PathBuf,
    layout: Option<CgroupLayout>,
    net: Option<HostNet>,
    placement: Option<Placement>,
    reserved: Vec<usize>,
    instances: Vec<Instance>,
    events: VecDeque<String>,
    health: Option<UdpSocket>,
    /// Instance index by address, for health replies (addresses never change).
    health_by_addr: HashMap<SocketAddr, usize>,
    next_health: Instant,
    started: Instant,
    control: Option<UnixListener>,
    /// A `down` request waiting for its answer.
    pending_down: Option<UnixStream>,
    record: StateRecord,
}

/// True when running as root (needed by the netns backend).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn pid_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    pid > 0 && unsafe { libc::kill(pid as i32, 0) == 0 }
}

/// Removes everything an earlier run of host `name` left behind: what its
/// records list, then anything else carrying its prefix.
pub fn recover(cfg: &FleetConfig) -> Result<Vec<String>, HostError> {
    let mut removed = vec![];
    if std::fs::symlink_metadata(&cfg.run_dir).is_ok() {
        // Records in a directory someone else controls could name anything.
        owned_dir(&cfg.run_dir)?;
    }
    let state_path = cfg.run_dir.join("state.json");
    if let Ok(text) = std::fs::read_to_string(&state_path) {
        if let Ok(rec) = serde_json::from_str::<StateRecord>(&text) {
            if rec.supervisor_pid != std::process::id()
                && pid_alive(rec.supervisor_pid)
                && is_tickpack(rec.supervisor_pid)
            {
                return Err(HostError::AlreadyRunning {
                    name: cfg.name.clone(),
                    pid: rec.supervisor_pid,
                    dir: cfg.run_dir.display().to_string(),
                });
            }
            for p in &rec.processes {
                if p.kill_if_same() {
                    removed.push(format!("process {}", p.pid));
                }
            }
            if let Some(net) = &rec.net {
                net.cleanup().map_err(|e| {
                    HostError::Isolation(format!("removing the network of an earlier run: {e}"))
                })?;
                removed.extend(net.namespaces.iter().cloned());
                removed.extend(net.routes.iter().map(|r| format!("route {r}")));
                removed.extend(net.tables.iter().map(|t| format!("nft table inet {t}")));
            }
            for cg in &rec.cgroups {
                if cg.exists() {
                    removed.push(cg.display().to_string());
                }
            }
        }
    }
    let prefix = format!("tp{}", cfg.name);
    if is_root() {
        let gone = netpath::cleanup_prefix(&prefix).map_err(|e| {
            HostError::Isolation(format!(
                "removing leftover {prefix}* links and namespaces: {e}"
            ))
        })?;
        removed.extend(gone);
        let table = crate::netpath::filter::table_name(&cfg.name);
        if crate::leftover::remove_firewall(&cfg.name).map_err(|e| {
            HostError::Isolation(format!("removing leftover nft table inet {table}: {e}"))
        })? && !removed.iter().any(|r| r.ends_with(&table))
        {
            removed.push(format!("nft table inet {table}"));
        }
        if let Ok(layout) = CgroupLayout::detect(Path::new("/sys/fs/cgroup")) {
            if let Ok(gone) = cgroup::remove_stale(&layout, &prefix) {
                removed.extend(gone.into_iter().map(|p| p.display().to_string()));
            }
        }
    }
    let _ = std::fs::remove_file(cfg.run_dir.join("control.sock"));
    let _ = std::fs::remove_file(&state_path);
    Ok(removed)
}

/// Where instance `id`'s output goes: `RUN_DIR/logs/ID.log`, in a directory
/// only root can write, so an instance cannot point it elsewhere.
pub fn log_path(run_dir: &Path, id: u32) -> PathBuf {
    run_dir.join("logs").join(format!("{id}.log"))
}

/// Creates the run dir and makes it root's own (0700): instances (and other
/// users) can neither read the records nor place links in it. Refuses a
/// run dir that is a link or belongs to someone else, whose owner could
/// swap what root writes there.
fn secure_run_dir(dir: &Path) -> Result<(), HostError> {
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    real_dir(dir)?;
    private_dir(dir)
}

/// `path` is a directory itself, not a link to one.
fn real_dir(path: &Path) -> Result<std::fs::Metadata, HostError> {
    let m = std::fs::symlink_metadata(path).map_err(io(format!("reading {}", path.display())))?;
    if !m.file_type().is_dir() {
        return Err(HostError::Isolation(format!(
            "{} is not a directory (a link or a file); refusing to use it",
            path.display()
        )));
    }
    Ok(m)
}

/// A directory owned by us, mode 0700.
fn private_dir(path: &Path) -> Result<(), HostError> {
    owned_dir(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
        .map_err(io(format!("chmod 700 {}", path.display())))
}

/// A directory (not a link) owned by us.
fn owned_dir(path: &Path) -> Result<(), HostError> {
    let m = real_dir(path)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Err(HostError::Isolation(format!(
            "{} belongs to uid {}, not to us (uid {me}); choose another --run-dir",
            path.display(),
            m.uid()
        )));
    }
    Ok(())
}

fn is_tickpack(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("tickpack"))
        .unwrap_or(false)
}

impl Supervisor {
    /// Brings the fleet up. On error, everything created is removed again.
    pub fn start(cfg: FleetConfig, exe: PathBuf) -> Result<Supervisor, HostError> {
        if cfg.backend == Backend::Netns && !is_root() {
            return Err(HostError::Isolation(
                "the netns backend needs root (namespaces, cgroups, links); run as root or use --backend process".into(),
            ));
        }
        secure_run_dir(&cfg.run_dir)?;
        // Absolute and free of links: the instance's mounts name it.
        let mut cfg = cfg;
        cfg.run_dir = std::fs::canonicalize(&cfg.run_dir)
            .map_err(io(format!("resolving {}", cfg.run_dir.display())))?;
        let left = recover(&cfg)?;
        let mut sup = Supervisor {
            record: StateRecord {
                name: cfg.name.clone(),
                supervisor_pid: std::process::id(),
                config: Some(cfg.clone()),
                ..Default::default()
            },
            cfg,
            exe,
            layout: None,
            net: None,
            placement: None,
            reserved: vec![],
            instances: vec![],
            events: VecDeque::new(),
            health: None,
            health_by_addr: HashMap::new(),
            next_health: Instant::now(),
            started: Instant::now(),
            control: None,
            pending_down: None,
        };
        if !left.is_empty() {
            sup.event(format!(
                "removed leftovers of an earlier run: {}",
                left.join(", ")
            ));
        }
        match sup.bring_up() {
            Ok(()) => Ok(sup),
            Err(e) => {
                let problems = sup.teardown();
                if problems.is_empty() {
                    Err(e)
                } else {
                    Err(HostError::Isolation(format!(
                        "{e}; and cleaning up failed too: {}",
                        problems.join("; ")
                    )))
                }
            }
        }
    }

    fn event(&mut self, e: String) {
        let secs = self.started.elapsed().as_secs_f64();
        self.events.push_back(format!("[{secs:8.2}s] {e}"));
        while self.events.len() > 50 {
            self.events.pop_front();
        }
    }

    fn save(&self) -> Result<(), HostError> {
        write_state(&self.cfg.run_dir, &self.record)
    }

    /// A closure for `HostNet`'s journal: persists the record with `net`
    /// as it will be, before the next object is created.
    fn journal(&self) -> impl FnMut(&netpath::NetRecord) {
        let dir = self.cfg.run_dir.clone();
        let mut rec = self.record.clone();
        move |net| {
            rec.net = Some(net.clone());
            // The same file was just written; a failure here shows up at
            // the next save.
            let _ = write_state(&dir, &rec);
        }
    }

    fn bring_up(&mut self) -> Result<(), HostError> {
        let dir = self.cfg.run_dir.clone();
        for sub in ["instances", "logs"] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).map_err(io(format!("creating {}", d.display())))?;
            private_dir(&d)?;
        }
        self.save()?;

        let topo = Topology::read(Path::new("/sys"))
            .map_err(|e| HostError::Isolation(format!("reading CPU topology: {e}")))?;
        self.reserved = self
            .cfg
            .reserved_cpus
            .clone()
            .unwrap_or_else(|| placement::default_reserved(&topo));
        let n = self.cfg.instances.len();
        let plan = placement::plan(&topo, n, self.cfg.placement, &self.reserved)
            .map_err(|e| HostError::Isolation(format!("placing {n} instances: {e}")))?;
        for w in &plan.warnings {
            let w = w.clone();
            self.event(w);
        }
        self.record.placement = Some(plan.clone());
        self.placement = Some(plan.clone());

        let ids: Vec<u32> = self.cfg.instances.iter().map(|i| i.id).collect();
        if self.cfg.backend == Backend::Netns {
            let layout = CgroupLayout::detect(Path::new("/sys/fs/cgroup"))
                .map_err(|e| HostError::Isolation(format!("cgroups: {e}")))?;
            self.layout = Some(layout);
            let plan = AddrPlan::parse(&self.cfg.range)
                .map_err(|e| HostError::Isolation(e.to_string()))?;
            let (ip, name, kind) = (netpath::Ip::default(), &self.cfg.name, self.cfg.net);
            let net = HostNet::setup_journaled(ip, name, kind, plan, &ids, &mut self.journal())
                .map_err(|e| HostError::Isolation(format!("network ({}): {e}", self.cfg.net)))?;
            self.record.net = Some(net.record().clone());
            self.net = Some(net);
            self.save()?;
            let mut journal = self.journal();
            let net = self.net.as_mut().expect("set above");
            let filtered =
                net.install_filter(self.cfg.port, &self.cfg.allow_host_ports, &mut journal);
            self.record.net = Some(net.record().clone());
            filtered.map_err(|e| HostError::Isolation(format!("instance firewall: {e}")))?;
            self.save()?;
        }

        for (k, spec) in self.cfg.instances.clone().into_iter().enumerate() {
            let slot = &plan.instances[k];
            let addr = match &self.net {
                Some(net) => SocketAddr::new(IpAddr::V4(net.instance_addr(spec.id)), self.cfg.port),
                None => SocketAddr::new(
                    IpAddr::V4(Ipv4Addr::LOCALHOST),
                    self.cfg.port + (spec.id - 1) as u16,
                ),
            };
            let idir = dir.join("instances").join(spec.id.to_string());
            std::fs::create_dir_all(&idir).map_err(io(format!("creating {}", idir.display())))?;
            if self.cfg.backend == Backend::Netns {
                // `instances/` is root's, so the instance cannot swap its
                // directory for a link; lchown and the check hold anyway.
                let uid = USER_BASE + spec.id;
                real_dir(&idir)?;
                std::os::unix::fs::lchown(&idir, Some(uid), Some(uid))
                    .map_err(io(format!("chown {}", idir.display())))?;
                std::fs::set_permissions(&idir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io(format!("chmod {}", idir.display())))?;
            }
            let cgroup = match &self.layout {
                Some(layout) => {
                    let name = format!("tp{}/tp{}-{}", self.cfg.name, self.cfg.name, spec.id);
                    let limits = Limits {
                        cpus: Some(slot.cpus.clone()),
                        cpu_quota: spec.cpu_quota,
                        memory_bytes: spec.memory_bytes,
                    };
                    let cg = Cgroup::create(layout, &name, &limits).map_err(|e| {
                        HostError::Isolation(format!("cgroup for instance {}: {e}", spec.id))
                    })?;
                    self.record.cgroups.extend(cg.paths());
                    self.save()?;
                    Some(cg)
                }
                None => None,
            };
            self.instances.push(Instance {
                spec,
                addr,
                cpus: slot.cpus.clone(),
                node: slot.node,
                dir: idir,
                cgroup,
                child: None,
                state: InstanceState::Starting,
                restarts: 0,
                crashes: VecDeque::new(),
                restart_at: None,
                last_exit: None,
                started: Instant::now(),
                last_heard: None,
                stats: None,
                cpu_sample: None,
                cpu_percent: None,
                memory_bytes: None,
                oom_kills: 0,
            });
        }
        if self.cfg.health == Health::Tickpack {
            if let Some(net) = &self.net {
                for i in &self.instances {
                    net.check_route(match i.addr.ip() {
                        IpAddr::V4(a) => a,
                        IpAddr::V6(_) => unreachable!("instances are IPv4"),
                    })
                    .map_err(|e| {
                        HostError::Isolation(format!("route to instance {}: {e}", i.spec.id))
                    })?;
                }
            }
            let s = UdpSocket::bind("0.0.0.0:0").map_err(io("binding the health-check socket"))?;
            s.set_nonblocking(true).map_err(io("health-check socket"))?;
            self.health_by_addr = self
                .instances
                .iter()
                .enumerate()
                .map(|(k, i)| (i.addr, k))
                .collect();
            self.health = Some(s);
        }
        for k in 0..self.instances.len() {
            self.start_instance(k)?;
        }
        let sock = dir.join("control.sock");
        let _ = std::fs::remove_file(&sock);
        let l = UnixListener::bind(&sock).map_err(io(format!("binding {}", sock.display())))?;
        l.set_nonblocking(true).map_err(io("control socket"))?;
        self.control = Some(l);
        self.save()?;
        Ok(())
    }

    fn start_instance(&mut self, k: usize) -> Result<(), HostError> {
        let netns = self
            .net
            .as_ref()
            .map(|n| n.netns_path(self.instances[k].spec.id));
        let i = &mut self.instances[k];
        let ip = i.addr.ip().to_string();
        let argv = expand(
            &i.spec.command,
            &ip,
            i.addr.port(),
            i.spec.id,
            &i.dir,
            &self.exe,
        );
        let isolated = self.cfg.backend == Backend::Netns;
        let cgroup_procs = match &i.cgroup {
            Some(cg) => cg.open_procs().map_err(|e| {
                HostError::Isolation(format!("cgroup of instance {}: {e}", i.spec.id))
            })?,
            None => vec![],
        };
        let spec = Spec {
            argv,
            workdir: i.dir.clone(),
            log: log_path(&self.cfg.run_dir, i.spec.id),
            cpus: (!isolated && self.cfg.placement != placement::Policy::None)
                .then(|| i.cpus.clone()),
            cgroup_procs,
            isolation: if isolated {
                Isolation {
                    netns,
                    hostname: Some(format!("tp{}-{}", self.cfg.name, i.spec.id)),
                    user: Some((USER_BASE + i.spec.id, USER_BASE + i.spec.id)),
                    hide: Some(self.cfg.run_dir.clone()),
                    disk_bytes: i.spec.disk_bytes,
                }
            } else {
                Isolation::default()
            },
            init_exe: self.exe.clone(),
        };
        let child = spawn::spawn(&spec).map_err(|err| HostError::Spawn { id: i.spec.id, err })?;
        let recorded = crate::leftover::RecordedProcess::of(child.id());
        i.child = Some(child);
        i.state = InstanceState::Starting;
        i.started = Instant::now();
        i.last_heard = None;
        i.stats = None;
        i.cpu_sample = None;
        self.record.processes.retain(|p| p.is_same_process());
        self.record.processes.extend(recorded);
        self.save()
    }

    /// One round of supervision; call every ~50 ms. Returns `true` once a
    /// `down` request has arrived.
    pub fn poll(&mut self) -> bool {
        let now = Instant::now();
        self.reap(now);
        self.restart_due(now);
        if now >= self.next_health {
            self.next_health = now + Duration::from_secs(1);
            self.sample_usage(now);
            self.send_health();
        }
        self.read_health(now);
        self.check_liveness(now);
        self.serve_control()
    }

    fn reap(&mut self, now: Instant) {
        let policy = self.cfg.restart;
        let mut events = vec![];
        for i in &mut self.instances {
            let Some(child) = i.child.as_mut() else {
                continue;
            };
            let Ok(Some(status)) = child.try_wait() else {
                continue;
            };
            i.child = None;
            let mut why = describe_exit(status);
            if let Some(cg) = &i.cgroup {
                // The instance dies whole: whatever outlived its init (a
                // server whose death signal did not fire, its children) is
                // killed before a restart could find its port taken.
                if let Err(e) = cg.kill_all() {
                    events.push(format!(
                        "instance {}: killing what was left of it: {e}",
                        i.spec.id
                    ));
                }
                let u = cg.usage();
                if u.oom_kills > i.oom_kills {
                    i.oom_kills = u.oom_kills;
                    why = format!(
                        "killed by the OOM killer (memory limit {})",
                        i.spec
                            .memory_bytes
                            .map_or("none".into(), |b| format!("{} MiB", b >> 20))
                    );
                }
            }
            i.last_exit = Some(why.clone());
            i.crashes.push_back(now);
            while i
                .crashes
                .front()
                .is_some_and(|t| now.duration_since(*t).as_secs_f64() > policy.window_s)
            {
                i.crashes.pop_front();
            }
            if i.crashes.len() as u32 >= policy.max_crashes {
                i.state = InstanceState::Failed;
                events.push(format!(
                    "instance {} {why}; it exited {} times in {:.0} s, giving up",
                    i.spec.id,
                    i.crashes.len(),
                    policy.window_s
                ));
            } else {
                let backoff = policy
                    .backoff_ms
                    .saturating_mul(1 << (i.crashes.len() as u32 - 1).min(16))
                    .min(policy.max_backoff_ms);
                i.state = InstanceState::Restarting;
                i.restart_at = Some(now + Duration::from_millis(backoff));
                events.push(format!(
                    "instance {} {why}; restarting in {backoff} ms",
                    i.spec.id
                ));
            }
        }
        for e in events {
            self.event(e);
        }
    }

    fn restart_due(&mut self, now: Instant) {
        for k in 0..self.instances.len() {
            let i = &self.instances[k];
            if i.state != InstanceState::Restarting || i.restart_at.is_some_and(|t| t > now) {
                continue;
            }
            self.instances[k].restart_at = None;
            self.instances[k].restarts += 1;
            if let Err(e) = self.start_instance(k) {
                self.instances[k].state = InstanceState::Failed;
                self.event(format!(
                    "instance {} could not be restarted: {e}",
                    self.instances[k].spec.id
                ));
            }
        }
    }

    fn send_health(&mut self) {
        let Some(sock) = &self.health else { return };
        let req = Packet::StatsRequest { nonce: 1 }.to_vec();
        for i in &self.instances {
            if i.child.is_some() {
                let _ = sock.send_to(&req, i.addr);
            }
        }
    }

    fn read_health(&mut self, now: Instant) {
        let Some(sock) = &self.health else {
            // No health checks: running once the process has lived a moment.
            for i in &mut self.instances {
                if i.state == InstanceState::Starting
                    && i.child.is_some()
                    && i.started.elapsed() > Duration::from_millis(200)
                {
                    i.state = InstanceState::Running;
                }
            }
            return;
        };
        let mut buf = [0u8; 512];
        for _ in 0..1024 {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                break;
            };
            let Some(&k) = self.health_by_addr.get(&from) else {
                continue;
            };
            if let Ok(Packet::Stats(s)) = Packet::decode(&buf[..n]) {
                let i = &mut self.instances[k];
                i.last_heard = Some(now);
                i.stats = Some(s);
                if matches!(
                    i.state,
                    InstanceState::Starting | InstanceState::Unresponsive
                ) && i.child.is_some()
                {
                    i.state = InstanceState::Running;
                }
            }
        }
    }

    fn check_liveness(&mut self, now: Instant) {
        if self.health.is_none() {
            return;
        }
        let limit = Duration::from_secs_f64(self.cfg.restart.unresponsive_s);
        let mut events = vec![];
        for i in &mut self.instances {
            let Some(child) = i.child.as_mut() else {
                continue;
            };
            let since = i.last_heard.unwrap_or(i.started);
            if now.duration_since(since) > Duration::from_secs(2)
                && i.state == InstanceState::Running
            {
                i.state = InstanceState::Unresponsive;
                events.push(format!(
                    "instance {} stopped answering health checks",
                    i.spec.id
                ));
            }
            if now.duration_since(since) > limit {
                let _ = child.kill();
                events.push(format!(
                    "instance {} silent for {:.0} s: killed, will restart",
                    i.spec.id,
                    limit.as_secs_f64()
                ));
                i.last_heard = Some(now);
            }
        }
        for e in events {
            self.event(e);
        }
    }

    fn sample_usage(&mut self, now: Instant) {
        let mut events = vec![];
        for i in &mut self.instances {
            let (cpu_ns, mem, ooms) = match &i.cgroup {
                Some(cg) => {
                    let u = cg.usage();
                    (Some(u.cpu_usage_ns), Some(u.memory_bytes), u.oom_kills)
                }
                None => (
                    i.child.as_ref().and_then(|c| proc_cpu_ns(c.id())),
                    i.child.as_ref().and_then(|c| proc_rss(c.id())),
                    0,
                ),
            };
            if ooms > i.oom_kills {
                events.push(format!(
                    "instance {}: the OOM killer killed a process (memory limit reached)",
                    i.spec.id
                ));
                i.oom_kills = ooms;
            }
            i.memory_bytes = mem;
            if let Some(ns) = cpu_ns {
                if let Some((prev, t)) = i.cpu_sample {
                    let dt = now.duration_since(t).as_nanos() as f64;
                    if dt > 0.0 && ns >= prev {
                        i.cpu_percent = Some(((ns - prev) as f64 / dt * 1000.0).round() / 10.0);
                    }
                }
                i.cpu_sample = Some((ns, now));
            }
        }
        for e in events {
            self.event(e);
        }
    }

    fn serve_control(&mut self) -> bool {
        let Some(l) = &self.control else { return false };
        let mut down = false;
        while let Ok((mut s, _)) = l.accept() {
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let mut line = String::new();
            let _ = BufReader::new(&s).read_line(&mut line);
            match line.trim() {
                "status" => {
                    let body = serde_json::to_string(&self.status()).expect("status serializes");
                    let _ = writeln!(s, "{body}");
                }
                "down" => {
                    self.pending_down = Some(s);
                    down = true;
                }
                other => {
                    let _ = writeln!(
                        s,
                        "{{\"error\":\"unknown request {other:?} (status or down)\"}}"
                    );
                }
            }
        }
        down
    }

    /// The current status.
    pub fn status(&self) -> HostStatus {
        HostStatus {
            schema: STATUS_SCHEMA.into(),
            name: self.cfg.name.clone(),
            backend: format!("{:?}", self.cfg.backend).to_lowercase(),
            net: (self.cfg.backend == Backend::Netns).then(|| self.cfg.net.to_string()),
            placement: format!("{:?}", self.cfg.placement).to_lowercase(),
            reserved_cpus: self.reserved.clone(),
            supervisor_pid: std::process::id(),
            uptime_s: self.started.elapsed().as_secs_f64(),
            instances: self
                .instances
                .iter()
                .map(|i| InstanceStatus {
                    id: i.spec.id,
                    address: i.addr.to_string(),
                    pid: i.child.as_ref().map(Child::id),
                    cpus: i.cpus.clone(),
                    state: i.state,
                    restarts: i.restarts,
                    cpu_percent: i.cpu_percent,
                    tick_p99_us: i.stats.map(|s| s.lateness_p99_us),
                    frame_p99_us: i.stats.map(|s| s.frame_p99_us),
                    players: i.stats.map(|s| s.players),
                    memory_bytes: i.memory_bytes,
                    memory_limit_bytes: i.spec.memory_bytes,
                    oom_kills: i.oom_kills,
                    last_exit: i.last_exit.clone(),
                })
                .collect(),
            events: self.events.iter().cloned().collect(),
        }
    }

    /// Instance addresses, in id order (for load generators).
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.instances.iter().map(|i| i.addr).collect()
    }

    /// NUMA node per instance, as placed.
    pub fn nodes(&self) -> Vec<Option<usize>> {
        self.instances.iter().map(|i| i.node).collect()
    }

    pub fn config(&self) -> &FleetConfig {
        &self.cfg
    }

    /// Stops every instance (SIGTERM, then SIGKILL after 3 s), removes
    /// cgroups, network and records, and answers a pending `down`. Returns
    /// what could not be removed (empty when everything went).
    pub fn shutdown(mut self) -> Vec<String> {
        let problems = self.teardown();
        if let Some(mut s) = self.pending_down.take() {
            let body = serde_json::json!({ "ok": problems.is_empty(), "problems": problems });
            let _ = writeln!(s, "{body}");
        }
        problems
    }

    fn teardown(&mut self) -> Vec<String> {
        let mut problems = vec![];
        for i in &mut self.instances {
            if let Some(c) = &i.child {
                // SAFETY: signalling a child we spawned and have not reaped.
                unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            }
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for i in &mut self.instances {
            if let Some(mut c) = i.child.take() {
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = c.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                if let Ok(None) = c.try_wait() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
            i.state = InstanceState::Stopped;
            if let Some(cg) = i.cgroup.take() {
                if let Err(e) = cg.remove() {
                    problems.push(format!("cgroup of instance {}: {e}", i.spec.id));
                }
            }
        }
        if let Some(layout) = &self.layout {
            if let Err(e) = cgroup::remove_stale(layout, &format!("tp{}", self.cfg.name)) {
                problems.push(format!("cgroups: {e}"));
            }
        }
        let net = match self.net.take() {
            Some(net) => net.teardown(),
            None => self.record.net.as_ref().map_or(Ok(()), |r| r.cleanup()),
        };
        if let Err(e) = net {
            problems.push(format!("network: {e}"));
        }
        self.control = None;
        let _ = std::fs::remove_file(self.cfg.run_dir.join("control.sock"));
        if problems.is_empty() {
            let _ = std::fs::remove_file(self.cfg.run_dir.join("state.json"));
        }
        problems
    }
}

/// Writes `dir/state.json` atomically (temp file, rename).
fn write_state(dir: &Path, record: &StateRecord) -> Result<(), HostError> {
    let path = dir.join("state.json");
    let tmp = dir.join(".state.json.tmp");
    let body = serde_json::to_vec_pretty(record).expect("state serializes");
    // Root never follows a link here (the run dir is root's own, but the
    // records are written in one place only, with O_NOFOLLOW).
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(io(format!("writing {}", tmp.display())))?;
    f.write_all(&body)
        .map_err(io(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, &path).map_err(io(format!("writing {}", path.display())))
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) if c > 128 && c < 160 => format!("was killed by signal {}", c - 128),
        (Some(c), _) => format!("exited with code {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "exited".into(),
    }
}

fn proc_cpu_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(ticks * 1_000_000_000 / hz)
}

fn proc_rss(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}
