//! The supervisor behind `tickpack host up`: brings a fleet up, keeps it up,
//! takes it down, and never leaves anything behind.
//!
//! Order: [`Supervisor::start`] (validate → recover leftovers of an earlier
//! run → run dir and records → placement → network → per instance: working
//! directory, cgroup, spawn; any failure tears down what was made), then
//! [`Supervisor::wait`] and [`Supervisor::poll`] in a loop (`driver.rs`:
//! woken by a pidfd, a check's answer, a control request or its next
//! deadline; `poll` reaps exits, CPU and memory use, health checks: reads
//! the replies, judges the windows that ended, sends the next checks;
//! control requests), then [`Supervisor::shutdown`]. What an instance's
//! state becomes and what to do about it (restart after a back-off, give
//! up, kill at its start limit or after unanswered checks) is decided by
//! its sans-I/O `lifecycle::Lifecycle`, which `poll` feeds and asks.
//!
//! Everything created is named with `tp<name>` and listed in
//! `RUN_DIR/state.json` before it is created, so `host down` and the next
//! `host up` can remove it even after the supervisor was killed with -9.
//!
//! Files: this one is the core (spawning, reaping, status, doing what a
//! lifecycle asks); `lifecycle.rs` the per-instance state machine;
//! `driver.rs` the wait; `bring_up.rs` and `teardown.rs` the way up and down (their order decided, sans-I/O,
//! in `bring_up/plan.rs` and `teardown/plan.rs`); `batch.rs` the batch tenants and
//! `guard_loop.rs` the loop that holds them to their policy (handed in by
//! the caller: [`Supervisor::start_with_policy`]); `restart.rs` the restart policy as a pure tracker
//! ([`RestartTracker`]); `health.rs` health checks (a socket per
//! instance; their answers decoded by an unprivileged child, [`decoder`]), with the liveness rule in `liveness.rs` (its evidence read
//! in `usage.rs`), readiness by a log
//! line or a port in `ready.rs` and each instance's game query (`q3`,
//! `a2s`: a session of `tickpack_game::query`) in `probe.rs`; `usage.rs`
//! CPU and memory sampling; `control.rs` the control socket; `run_dir.rs`
//! the run directory, its records and [`recover`]; `host_lock.rs` the
//! lock a live host holds on its name; `config_files.rs` the
//! server's config files, written into its directory before each start;
//! `console.rs` an instance's console (a game with `[rcon]`: its password
//! at every start, map changes and their answers); `load.rs` load
//! commands (when one is stopped: `load/stop.rs`).

mod batch;
mod bring_up;
mod console;
mod control;
pub mod decoder;
mod driver;
mod guard_loop;
mod health;
mod host_lock;
mod lifecycle;
mod liveness;
mod load;
mod probe;
mod ready;
mod restart;
mod run_dir;
mod start;
mod teardown;
mod usage;

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::cgroup::{Cgroup, CgroupLayout};
use crate::event::{Event, EventKind, ExitCause};
use crate::fleet::{Backend, FleetConfig, Health, InstanceSpec};
use crate::guard::BatchPolicyFactory;
use crate::launch::Slot;
use crate::netpath::NetView;
use crate::placement::{self, Placement};
use crate::spawn::{Isolation, Spec};
use crate::status::{HostStatus, InstanceStatus, STATUS_SCHEMA};

pub use crate::status::LatencySummary;
pub use batch::{batch_log_path, stress_ng_bogo_ops_per_s};
pub use console::ConsoleError;
pub use load::{load_log_path, LoadExit, LoadProcess};
pub use probe::QUERY_INTERVAL;
pub use restart::{RestartDecision, RestartTracker};
pub use run_dir::{
    check_run_dir, hand_over_run_dir, live_supervisor, log_path, recorded_name, recover,
    remove_run_dir, RunDirState, StateRecord, MARKER,
};
use run_dir::{private_dir, secure_run_dir, write_state};

/// The supervisor's `oom_score_adj` (as root): below every instance's 0.
pub const OOM_SCORE_ADJ_SUPERVISOR: i32 = -500;

/// The instances' `oom_score_adj` when the supervisor may not lower its own
/// (no CAP_SYS_RESOURCE): above the supervisor's 0.
pub const OOM_SCORE_ADJ_INSTANCE_FALLBACK: i32 = 500;

/// The uid base without a block (process backend, where nothing switches
/// uid); as root a host takes a block (`tickpack_root::uid_block`): instance N runs as
/// the block's base + N, the host's batch work as the base itself.
pub const USER_BASE: u32 = 200_000;
pub use host_lock::LOCK_DIR;
pub use tickpack_root::uid_block::{BLOCKS_BASE, BLOCK_DIR, BLOCK_SIZE, READERS_UID_OFFSET};

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(transparent)]
    Config(#[from] crate::fleet::FleetError),
    #[error("isolation unavailable: {0}")]
    Isolation(String),
    /// A run dir tickpack may not use (not its own, not empty): a bad flag.
    #[error("run dir (--run-dir): {0}")]
    RunDir(String),
    #[error("a host named {name} is already running (supervisor pid {pid}); stop it with `tickpack host down --run-dir {dir}`")]
    AlreadyRunning { name: String, pid: u32, dir: String },
    #[error("{step}: {err}")]
    Io { step: String, err: std::io::Error },
    #[error("starting instance {id}: {err}")]
    Spawn {
        id: u32,
        err: crate::spawn::SpawnError,
    },
}

fn io(step: impl Into<String>) -> impl FnOnce(std::io::Error) -> HostError {
    let step = step.into();
    move |err| HostError::Io { step, err }
}

struct Instance {
    spec: InstanceSpec,
    addr: SocketAddr,
    cpus: Vec<usize>,
    node: Option<usize>,
    dir: PathBuf,
    cgroup: Option<Cgroup>,
    child: Option<tickpack_root::service::Proc>,
    /// Its state and what it has to do next: restarts, kills
    /// ([`lifecycle::Lifecycle`], sans-I/O).
    life: lifecycle::Lifecycle,
    /// Its process pinned: readable when it exits (the driver waits on
    /// it).
    pidfd: Option<std::os::fd::OwnedFd>,
    /// How its last process ended (its exit's event, `last_exit` in the
    /// status).
    last_cause: Option<ExitCause>,
    last_heard: Option<Instant>,
    /// Its own health-check socket, connected to `addr` (none without a
    /// check).
    check: Option<UdpSocket>,
    /// The kernel's drop counter of `check` as last seen.
    check_drops: u32,
    /// The key of its checks (`tickpack` health): new at every start,
    /// given to the server in its environment, so it answers our checks
    /// from a budget strangers cannot drain.
    health_key: Option<tickpack_wire::HealthKey>,
    /// Checks sent since its start: the counter of the last one (each
    /// check's is one more; the server refuses one not above the last).
    health_seq: u64,
    /// Check windows and unanswered checks in a row.
    liveness: liveness::Liveness,
    /// Readiness by a log line: what it wrote since its start.
    log_watch: Option<ready::LogWatch>,
    stats: Option<tickpack_wire::ServerStats>,
    /// The game query's state and findings (`q3`, `a2s` health).
    probe: probe::Probe,
    cpu_sample: Option<(u64, Instant)>,
    cpu_percent: Option<f64>,
    memory_bytes: Option<u64>,
    oom_kills: u64,
    /// Its console, when its game has one.
    console: Option<console::ConsoleState>,
}

/// A running fleet.
pub struct Supervisor {
    cfg: FleetConfig,
    exe: PathBuf,
    layout: Option<CgroupLayout>,
    /// The host's network, made by its root process.
    net: Option<NetView>,
    /// The root process that made it, and writes instances' files as
    /// their users (netns backend only).
    root: Option<std::sync::Arc<tickpack_root::service::Root>>,
    placement: Option<Placement>,
    reserved: Vec<usize>,
    instances: Vec<Instance>,
    events: VecDeque<Event>,
    /// Events ever recorded (the deque keeps the last 50).
    events_total: u64,
    /// When CPU and memory are sampled next.
    next_usage: Instant,
    started: Instant,
    control: Option<UnixListener>,
    /// What the driver waits on: pidfds, check sockets, the control
    /// socket ([`Supervisor::wait`]; `None`: it sleeps instead).
    wake: Option<tickpack_sys::epoll::Epoll>,
    /// When the last [`Supervisor::wait`] returned.
    last_wake: Option<Instant>,
    /// A `down` request waiting for its answer.
    pending_down: Option<UnixStream>,
    record: StateRecord,
    /// Batch work and the guard (`--batch`, `--batch-cgroup`).
    batch: Option<batch::Batch>,
    /// Makes the batch's policy at bring-up (the guard's, from the caller).
    batch_policy: Option<BatchPolicyFactory>,
    /// The players' p99 transaction latency handed over since the guard's
    /// last period ([`Supervisor::set_players_transaction_p99`]).
    players_p99_us: Option<u32>,
    /// The `oom_score_adj` each instance starts with: 0, or
    /// [`OOM_SCORE_ADJ_INSTANCE_FALLBACK`] when the supervisor could not
    /// go below it.
    instance_oom_score_adj: i32,
    /// Whether this host holds a block of instance uids (netns; its base
    /// is `uid_base`), taken and given back by its root process.
    uid_block: bool,
    /// Instance N's uid is `uid_base + N`.
    uid_base: u32,
    /// The unprivileged child that decodes the checks' answers (none
    /// without checks, or after it failed until it is started again).
    decoder: Option<decoder::Decoder>,
    /// When a failed decoder may be started again.
    decoder_retry: Option<Instant>,
    /// This host name's lock, held while the supervisor lives.
    _lock: host_lock::HostLock,
}

impl Supervisor {
    /// Brings the fleet up. On error, everything created is removed again.
    /// A fleet whose batch runs under the guard needs its policy:
    /// [`Supervisor::start_with_policy`].
    pub fn start(cfg: FleetConfig, exe: PathBuf) -> Result<Supervisor, HostError> {
        Supervisor::start_with_policy(cfg, exe, None)
    }

    /// Brings the fleet up with `batch_policy` making the policy of its
    /// batch under the guard (`tickpack_guard::policy()`; ignored without
    /// batch work or with another batch control). On error, everything
    /// created is removed again.
    pub fn start_with_policy(
        cfg: FleetConfig,
        exe: PathBuf,
        batch_policy: Option<BatchPolicyFactory>,
    ) -> Result<Supervisor, HostError> {
        if cfg.backend == Backend::Netns && !tickpack_sys::has_root() {
            return Err(HostError::Isolation(
                "the netns backend needs root (namespaces, cgroups, links); run as root or use --backend process".into(),
            ));
        }
        secure_run_dir(&cfg.run_dir)?;
        // Absolute and free of links: the instance's mounts name it.
        let mut cfg = cfg;
        cfg.run_dir = std::fs::canonicalize(&cfg.run_dir)
            .map_err(io(format!("resolving {}", cfg.run_dir.display())))?;
        let (lock, left) = run_dir::recover_holding(&cfg)?;
        let mut sup = Supervisor {
            _lock: lock,
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
            root: None,
            placement: None,
            reserved: vec![],
            instances: vec![],
            events: VecDeque::new(),
            events_total: 0,
            next_usage: Instant::now(),
            decoder: None,
            decoder_retry: None,
            started: Instant::now(),
            control: None,
            wake: tickpack_sys::epoll::Epoll::new().ok(),
            last_wake: None,
            pending_down: None,
            batch: None,
            batch_policy,
            players_p99_us: None,
            instance_oom_score_adj: 0,
            uid_block: false,
            uid_base: USER_BASE,
        };
        // Under memory pressure an instance dies before its keeper: the
        // supervisor goes below 0; where it may not (no CAP_SYS_RESOURCE,
        // as in some containers) the instances go above it instead, which
        // orders them the same: nothing to warn about.
        if std::fs::write(
            "/proc/self/oom_score_adj",
            format!("{OOM_SCORE_ADJ_SUPERVISOR}\n"),
        )
        .is_err()
        {
            sup.instance_oom_score_adj = OOM_SCORE_ADJ_INSTANCE_FALLBACK;
        }
        if !left.is_empty() {
            sup.event(EventKind::LeftoversRemoved { items: left });
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

    fn event(&mut self, kind: EventKind) {
        kind.trace();
        let at_s = (self.started.elapsed().as_secs_f64() * 100.0).round() / 100.0;
        self.events.push_back(Event { at_s, kind });
        self.events_total += 1;
        while self.events.len() > 50 {
            self.events.pop_front();
        }
    }

    fn save(&self) -> Result<(), HostError> {
        write_state(&self.cfg.run_dir, &self.record)
    }

    fn start_instance(&mut self, k: usize) -> Result<(), HostError> {
        let netns = self
            .net
            .as_ref()
            .map(|n| n.netns_path(self.instances[k].spec.id));
        let query_clock = self.query_clock();
        let i = &mut self.instances[k];
        let unanswered = i.console.as_mut().and_then(console::ConsoleState::restart);
        let ip = i.addr.ip().to_string();
        let slot = Slot {
            ip: &ip,
            port: i.addr.port(),
            id: i.spec.id,
            dir: &i.dir,
            tickpack: &self.exe,
            rcon_password: i.console.as_ref().map(console::ConsoleState::password),
        };
        let argv = i.spec.server.argv(&slot);
        // The log line that says it is ready, filled as its command is.
        let ready_log = i.spec.server.ready.log_for(&slot);
        let mut env = i.spec.server.env(&slot);
        i.health_key = (self.cfg.health == Health::TickpackStats).then(|| {
            use rand::RngCore;
            let mut secret = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut secret);
            tickpack_wire::HealthKey::new(secret)
        });
        i.health_seq = 0;
        if let Some(key) = &i.health_key {
            env.push((tickpack_wire::HEALTH_KEY_ENV.to_string(), key.to_hex()));
        }
        let isolated = self.cfg.backend == Backend::Netns;
        let owner = isolated.then_some(self.uid_base + i.spec.id);
        for (rel, contents) in i.spec.server.files(&slot) {
            let what = || {
                format!(
                    "writing config file {} of instance {}",
                    rel.display(),
                    i.spec.id
                )
            };
            match &self.root {
                // As the instance's user: its root process writes it.
                Some(root) => root
                    .write_file(i.spec.id, &rel, &contents)
                    .map_err(|e| HostError::Isolation(format!("{}: {e}", what())))?,
                None => tickpack_root::files::write_file(&i.dir, &rel, &contents, owner)
                    .map_err(io(what()))?,
            }
        }
        let spec = Spec {
            argv,
            env,
            workdir: i.dir.clone(),
            log: log_path(&self.cfg.run_dir, i.spec.id),
            log_bytes: self.cfg.log_bytes,
            oom_score_adj: self.instance_oom_score_adj,
            cpus: (!isolated && self.cfg.placement != placement::Policy::None)
                .then(|| i.cpus.clone()),
            cgroup_procs: vec![],
            isolation: if isolated {
                Isolation {
                    netns,
                    own_netns: false,
                    hostname: Some(format!("tp{}-{}", self.cfg.name, i.spec.id)),
                    user: Some((self.uid_base + i.spec.id, self.uid_base + i.spec.id)),
                    hide: Some(self.cfg.run_dir.clone()),
                    workdir_fd: None,
                }
            } else {
                Isolation::default()
            },
            init_exe: self.exe.clone(),
            sched_idle: false,
            own_session: false,
        };
        // What the server prints from this start on.
        i.log_watch = ready_log.map(|text| ready::LogWatch::new(&spec.log, &text));
        let id = i.spec.id;
        let walls = tickpack_root::service::protocol::Walls::Instance { id };
        let child = self
            .start_command(walls, spec, self.instances[k].cgroup.as_ref())
            .map_err(|err| HostError::Spawn { id, err })?;
        let i = &mut self.instances[k];
        let recorded = crate::leftover::RecordedProcess::of(child.id());
        i.pidfd = tickpack_sys::pidfd::open(child.id()).ok();
        if let Some(fd) = &i.pidfd {
            driver::watch(&self.wake, fd);
        }
        i.child = Some(child);
        i.life.handle(Instant::now(), lifecycle::Input::Started);
        i.last_heard = None;
        i.liveness = liveness::Liveness::new(i.spec.server.timing(), query_clock);
        i.stats = None;
        i.probe.reset(query_clock);
        i.cpu_sample = None;
        self.record.processes.retain(|p| p.is_same_process());
        self.record.processes.extend(recorded);
        if let Some(sent) = unanswered {
            self.event(EventKind::MapChangeCutByRestart {
                instance: sent.instance,
                map: sent.map,
            });
        }
        self.save()
    }

    /// One round of supervision; call every ~50 ms. Returns `true` once a
    /// `down` request has arrived.
    pub fn poll(&mut self) -> bool {
        let now = Instant::now();
        self.reap(now);
        self.drive(now);
        if now >= self.next_usage {
            self.next_usage = now + Duration::from_secs(1);
            self.sample_usage(now);
        }
        self.read_health(now);
        self.poll_console();
        self.check_readiness();
        // One reading of the query clock for both: a window is judged and
        // the next one's check sent at the same instant.
        let clock = self.query_clock();
        self.check_liveness(clock);
        self.drive(Instant::now());
        self.send_checks(clock);
        self.batch_poll(now);
        self.serve_control()
    }

    fn reap(&mut self, now: Instant) {
        let mut events = vec![];
        for i in &mut self.instances {
            let Some(child) = i.child.as_mut() else {
                continue;
            };
            let Ok(Some(status)) = child.try_wait() else {
                continue;
            };
            i.child = None;
            // Closing it leaves the driver's set.
            i.pidfd = None;
            let mut cause = ExitCause::of(status);
            if let Some(cg) = &i.cgroup {
                // The instance dies whole: whatever outlived its init (a
                // server whose death signal did not fire, its children) is
                // killed before a restart could find its port taken.
                if let Err(e) = cg.kill_all() {
                    events.push(EventKind::KillingRemainsFailed {
                        instance: i.spec.id,
                        error: e.to_string(),
                    });
                }
                let u = cg.usage();
                if u.oom_kills > i.oom_kills {
                    i.oom_kills = u.oom_kills;
                    cause = ExitCause::OomKilled {
                        memory_limit_mib: i.spec.memory_bytes.map(|b| b >> 20),
                    };
                }
            }
            i.last_cause = Some(cause);
            i.life.handle(now, lifecycle::Input::Exited);
        }
        for e in events {
            self.event(e);
        }
    }

    /// Does what every instance's lifecycle asks at `now`: starts due
    /// restarts, kills, and records what it says.
    fn drive(&mut self, now: Instant) {
        for k in 0..self.instances.len() {
            while let Some(action) = self.instances[k].life.poll(now) {
                self.act(k, now, action);
            }
        }
    }

    fn act(&mut self, k: usize, now: Instant, action: lifecycle::Action) {
        use lifecycle::{Action, Kill};
        let check = match self.cfg.health {
            Health::TickpackStats => "health checks".to_string(),
            h => format!("its {h} query"),
        };
        let i = &mut self.instances[k];
        let instance = i.spec.id;
        let timing = i.spec.server.timing();
        let kind = match action {
            Action::Spawn => match self.start_instance(k) {
                Ok(()) => return,
                Err(e) => {
                    self.instances[k]
                        .life
                        .handle(now, lifecycle::Input::StartFailed);
                    EventKind::RestartFailed {
                        instance,
                        error: e.to_string(),
                    }
                }
            },
            Action::Exited(after) => EventKind::Exited {
                instance,
                cause: i.last_cause.unwrap_or(ExitCause::Unknown),
                after,
            },
            Action::Unresponsive { unanswered } => EventKind::Unresponsive {
                instance,
                check,
                unanswered,
            },
            Action::Contended { others, cpu_ns } => EventKind::Contended {
                instance,
                check,
                datagrams: others,
                window_s: timing.interval_s,
                cpu_ms: cpu_ns / 1_000_000,
            },
            Action::Kill(why) => {
                if let Some(c) = i.child.as_mut() {
                    let _ = c.kill();
                }
                match why {
                    Kill::Unanswered { unanswered } => EventKind::LivenessKill {
                        instance,
                        unanswered,
                        interval_s: timing.interval_s,
                    },
                    Kill::NeverReady { ready, limit } => {
                        let log = std::fs::read_to_string(log_path(&self.cfg.run_dir, instance))
                            .unwrap_or_default();
                        EventKind::NeverReady {
                            instance,
                            check,
                            why: health::not_ready(i, ready),
                            limit_s: limit.as_secs_f64(),
                            last_output: health::last_lines(&log, health::LOG_LINES),
                        }
                    }
                }
            }
        };
        self.event(kind);
    }

    /// The current status.
    /// Hands the guard the players' p99 transaction latency of the last
    /// period (players run beside the host, as in the bench): judged in the
    /// guard's next period against its transaction latency limit,
    /// then forgotten, so a figure that stops coming is not judged again.
    pub fn set_players_transaction_p99(&mut self, p99_us: Option<u64>) {
        self.players_p99_us = p99_us.map(|v| v.min(u64::from(u32::MAX)) as u32);
    }

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
                    pid: i.child.as_ref().map(tickpack_root::service::Proc::id),
                    cpus: i.cpus.clone(),
                    state: i.life.state(),
                    restarts: i.life.restarts(),
                    cpu_percent: i.cpu_percent,
                    tick_p99_us: i.stats.map(|s| s.lateness_p99_us),
                    frame_p99_us: i.stats.map(|s| s.frame_p99_us),
                    players: i.stats.map(|s| s.players).or(i.probe.players),
                    bots: i.probe.bots,
                    bots_asked: i.spec.bots,
                    map: i.probe.map.clone(),
                    query_latency_us: i.probe.latency(),
                    memory_bytes: i.memory_bytes,
                    memory_limit_bytes: i.spec.memory_bytes,
                    oom_kills: i.oom_kills,
                    last_exit: i.last_cause.map(|c| c.to_string()),
                    console: i.console.as_ref().map(console::ConsoleState::status),
                })
                .collect(),
            events: self.events.iter().cloned().collect(),
            guard: self.guard_status(),
        }
    }

    /// The events recorded after the first `seen` (of all ever recorded),
    /// and the new total: `host up` prints them as they come.
    pub fn events_since(&self, seen: u64) -> (Vec<Event>, u64) {
        let new = (self.events_total.saturating_sub(seen) as usize).min(self.events.len());
        let skip = self.events.len() - new;
        (
            self.events.iter().skip(skip).cloned().collect(),
            self.events_total,
        )
    }

    /// The user the host's readers run as (the bench's players and prober,
    /// which parse what the instances send): the last uid of the host's
    /// block ([`READERS_UID_OFFSET`]), which no instance and no batch job
    /// runs as, so neither can signal or trace them; its gid the same.
    pub fn readers_user(&self) -> tickpack_sys::unprivileged::User {
        let id = self.uid_base + READERS_UID_OFFSET;
        tickpack_sys::unprivileged::User { uid: id, gid: id }
    }

    /// Instance addresses, in id order (for load generators).
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.instances.iter().map(|i| i.addr).collect()
    }

    /// The source addresses set aside for load generators
    /// (`FleetFile::source_addrs`): netns, the top of the range, on the
    /// host side of every path; process, loopback addresses from
    /// 127.0.0.2 up. Empty when none were asked for.
    pub fn source_addresses(&self) -> Vec<IpAddr> {
        match &self.net {
            Some(net) => net
                .plan()
                .source_addrs()
                .into_iter()
                .map(IpAddr::V4)
                .collect(),
            None => (0..self
                .cfg
                .source_addrs
                .min(crate::fleet::MAX_LOOPBACK_SOURCES))
                .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + i as u8)))
                .collect(),
        }
    }

    /// NUMA node per instance, as placed.
    pub fn nodes(&self) -> Vec<Option<usize>> {
        self.instances.iter().map(|i| i.node).collect()
    }

    pub fn config(&self) -> &FleetConfig {
        &self.cfg
    }

    /// Stops every instance (its stop signal, SIGTERM by default, then
    /// SIGKILL after its grace time, 3 s by default), removes
    /// cgroups, network and records, and answers a pending `down`. Returns
    /// what could not be removed (empty when everything went).
    pub fn shutdown(mut self) -> Vec<String> {
        let problems = self.teardown();
        if let Some(s) = self.pending_down.take() {
            control::answer_down(s, &problems);
        }
        problems
    }
}

/// Where `step` is in a plan's `steps` (the plans' tests: bring-up and
/// teardown); a step missing fails the test with the plan.
#[cfg(test)]
pub(crate) fn position_in_plan<T: PartialEq + std::fmt::Debug>(steps: &[T], step: T) -> usize {
    steps
        .iter()
        .position(|s| *s == step)
        .unwrap_or_else(|| panic!("{step:?} not in {steps:?}"))
}
