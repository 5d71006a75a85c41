//! The host's batch tenants and the guard loop: starting, reaping,
//! restarting and stopping `--batch` commands in the batch cgroup, and,
//! every [`PERIOD`], gathering the guard's signals, asking the controller
//! and applying its allowance (quota, CPU set; SCHED_IDLE for idle and
//! guard), each decision logged as an event with its reason; with the guard
//! and two or more server cores, an instance whose core loses QoS is moved
//! to the core with the most slack (its cpuset), at most once per 10 s.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use tickpack_wire::ServerStats;

use super::{HostError, RestartDecision, RestartTracker, Supervisor};
use crate::cgroup::{self, Cgroup, CgroupVersion, Limits};
use crate::fleet::{Backend, FleetConfig};
use crate::guard::batch::{BatchSpec, BatchStatus};
use crate::guard::controller::{plan_move, Controller, InstanceSignal, Signals, PERIOD};
use crate::guard::{Action, BatchControl, CpuSampler, Decision, GuardStatus, QosLimits, Tuning};
use crate::spawn::{self, Isolation, Spec};
use crate::status::InstanceState;
use tickpack_sys::is_root;

/// The system PSI file.
const PRESSURE_CPU: &str = "/proc/pressure/cpu";
/// Decisions kept for the status.
const LAST_DECISIONS: usize = 30;
/// How long stopping batch work waits after SIGINT (stress-ng prints its
/// metrics then) before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Periods between two instance moves (a moved server needs its caches
/// and a few periods of figures before it is judged again).
const MOVE_COOLDOWN: u32 = 10;

/// One `--batch` command.
pub(super) struct Tenant {
    spec: BatchSpec,
    child: Option<Child>,
    state: &'static str,
    restarts: u32,
    exits: RestartTracker,
    restart_at: Option<Instant>,
    last_exit: Option<String>,
}

/// The batch: its cgroup, tenants and (with the guard) controller.
pub(super) struct Batch {
    control: BatchControl,
    cgroup: Option<Cgroup>,
    adopted: bool,
    /// An adopted cgroup's CPU set before the guard changed it.
    adopted_cpus: Option<String>,
    tenants: Vec<Tenant>,
    server_cpus: Vec<usize>,
    controller: Option<Controller>,
    next_period: Instant,
    guard_started: Instant,
    prev_stats: HashMap<u32, ServerStats>,
    /// The servers' tick rate the controller's limits were set for.
    tick_hz: Option<u16>,
    /// The server CPUs' idle and the machine's steal between periods.
    cpu_time: CpuSampler,
    cpu_sample: Option<(u64, Instant)>,
    status: GuardStatus,
    last: VecDeque<Decision>,
    /// The allowance last written to the cgroup (written again only when
    /// it changes: every write of a CFS quota takes the kernel's CPU
    /// hotplug lock and resets the group's runtime on every CPU).
    applied: Option<crate::guard::controller::Allowance>,
    counts: BTreeMap<String, u64>,
    /// Periods since the last instance move.
    since_move: u32,
}

/// How far above the instances' `oom_score_adj` a batch tenant's is.
pub const BATCH_OOM_SCORE_ABOVE: i32 = 500;

/// The log of batch tenant `k` (1-based).
pub fn batch_log_path(run_dir: &Path, k: usize) -> PathBuf {
    run_dir.join("logs").join(format!("batch-{k}.log"))
}

impl Batch {
    pub(super) fn new(cfg: &FleetConfig, server_cpus: Vec<usize>) -> Batch {
        let controller = (cfg.batch_control == BatchControl::Guard)
            .then(|| Controller::new(QosLimits::default(), Tuning::default(), server_cpus.clone()));
        Batch {
            control: cfg.batch_control,
            cgroup: None,
            adopted: false,
            adopted_cpus: None,
            tenants: cfg
                .batch
                .iter()
                .map(|spec| Tenant {
                    spec: spec.clone(),
                    child: None,
                    state: "starting",
                    restarts: 0,
                    exits: RestartTracker::new(cfg.restart),
                    restart_at: None,
                    last_exit: None,
                })
                .collect(),
            server_cpus,
            controller,
            next_period: Instant::now() + PERIOD,
            guard_started: Instant::now(),
            prev_stats: HashMap::new(),
            tick_hz: None,
            cpu_time: CpuSampler::default(),
            cpu_sample: None,
            status: GuardStatus::default(),
            last: VecDeque::new(),
            applied: None,
            counts: BTreeMap::new(),
            since_move: MOVE_COOLDOWN,
        }
    }
}

/// `/proc/stat`'s text (empty when it cannot be read: no figures then).
fn read_proc_stat() -> String {
    std::fs::read_to_string("/proc/stat").unwrap_or_default()
}

impl Supervisor {
    /// Creates (or adopts) the batch cgroup and starts the batch commands;
    /// with the guard the batch starts at zero and earns CPU from slack.
    pub(super) fn batch_up(&mut self) -> Result<(), HostError> {
        let Some(mut batch) = self.batch.take() else {
            return Ok(());
        };
        let result = self.batch_up_inner(&mut batch);
        self.batch = Some(batch);
        result
    }

    fn batch_up_inner(&mut self, batch: &mut Batch) -> Result<(), HostError> {
        if let Some(layout) = &self.layout {
            let cg = match &self.cfg.batch_cgroup {
                Some(path) => {
                    let cg = Cgroup::adopt(layout, path).map_err(|e| {
                        HostError::Isolation(format!("--batch-cgroup {}: {e}", path.display()))
                    })?;
                    batch.adopted = true;
                    batch.adopted_cpus = cg
                        .controller_path(cgroup::Controller::Cpuset)
                        .and_then(|d| std::fs::read_to_string(d.join("cpuset.cpus")).ok())
                        .map(|s| s.trim().to_owned());
                    cg
                }
                None => {
                    let name = format!("tp{}/tp{}-batch", self.cfg.name, self.cfg.name);
                    let limits = Limits {
                        cpus: Some(batch.server_cpus.clone()),
                        cpu_quota: Some(batch.server_cpus.len() as f64),
                        memory_bytes: None,
                        pids_max: self.cfg.pids_max,
                    };
                    let cg = Cgroup::create(layout, &name, &limits)
                        .map_err(|e| HostError::Isolation(format!("cgroup for the batch: {e}")))?;
                    self.record.cgroups.extend(cg.paths());
                    self.save()?;
                    cg
                }
            };
            let tuned = (|| -> Result<(), cgroup::CgroupError> {
                match batch.control {
                    BatchControl::None => cg.set_cpu_quota(None),
                    BatchControl::Idle => {
                        cg.set_cpu_quota(None)?;
                        cg.set_idle(true).map(|_| ())
                    }
                    BatchControl::Guard => {
                        cg.set_idle(true)?;
                        // The controller's first allowance: the whole
                        // server cores (no quota) unless it measures first.
                        let first = batch.controller.as_ref().map_or(0.0, |c| c.quota_cores());
                        let whole = first >= batch.server_cpus.len() as f64;
                        cg.set_cpu_quota((!whole).then_some(first))
                    }
                }
            })();
            batch.cgroup = Some(cg);
            tuned.map_err(|e| HostError::Isolation(format!("tuning the batch cgroup: {e}")))?;
        }
        for k in 0..batch.tenants.len() {
            self.start_tenant(batch, k, true)?;
        }
        if !batch.tenants.is_empty() || batch.cgroup.is_some() {
            let what = match batch.control {
                BatchControl::None => "no control".to_string(),
                BatchControl::Idle => "SCHED_IDLE only".to_string(),
                BatchControl::Guard => format!(
                    "the guard (period {} ms, starting at zero, then at half the measured idle of the server CPUs)",
                    PERIOD.as_millis()
                ),
            };
            self.event(format!(
                "batch: {} command(s){} on CPUs {:?}, {what}",
                batch.tenants.len(),
                if batch.adopted {
                    " and an adopted cgroup"
                } else {
                    ""
                },
                batch.server_cpus
            ));
        }
        batch.guard_started = Instant::now();
        // The first period's idle is measured from here.
        batch.cpu_time.sample(&read_proc_stat(), &batch.server_cpus);
        Ok(())
    }

    fn start_tenant(&mut self, batch: &mut Batch, k: usize, first: bool) -> Result<(), HostError> {
        let parent = self.cfg.run_dir.join("batch");
        let dir = parent.join((k + 1).to_string());
        std::fs::create_dir_all(&dir).map_err(super::io(format!("creating {}", dir.display())))?;
        let root = is_root() && self.cfg.backend == Backend::Netns;
        if root && first {
            // Root's, 0700, as `instances/`: no tenant swaps a directory for a link.
            super::private_dir(&parent)?;
            // Its files on a tmpfs of their own, kept across its restarts.
            super::disk::tenant_dir(&dir, super::disk::DEFAULT_DISK_BYTES, self.uid_base)?;
        }
        let log_path = batch_log_path(&self.cfg.run_dir, k + 1);
        if first {
            // A fresh log per `host up`; restarts append (spawn opens it).
            OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(&log_path)
                .map_err(super::io(format!("opening {}", log_path.display())))?;
        }
        let procs = match &batch.cgroup {
            Some(cg) => cg
                .open_procs()
                .map_err(|e| HostError::Isolation(format!("batch cgroup: {e}")))?,
            None => vec![],
        };
        let t = &batch.tenants[k];
        // The instance's sandbox (see spawn.rs), with a new empty network
        // namespace in place of the instance's: no network at all.
        let spec = Spec {
            argv: t.spec.argv.clone(),
            env: vec![("HOME".into(), dir.display().to_string())],
            workdir: dir.clone(),
            log: log_path,
            log_bytes: self.cfg.log_bytes,
            // Best-effort work is the first the kernel's OOM killer takes.
            oom_score_adj: (self.instance_oom_score_adj + BATCH_OOM_SCORE_ABOVE).min(1000),
            cpus: batch.cgroup.is_none().then(|| batch.server_cpus.clone()),
            cgroup_procs: procs,
            isolation: if root {
                Isolation {
                    netns: None,
                    own_netns: true,
                    hostname: Some(format!("tp{}-batch-{}", self.cfg.name, k + 1)),
                    user: Some((self.uid_base, self.uid_base)),
                    hide: Some(self.cfg.run_dir.clone()),
                }
            } else {
                Isolation::default()
            },
            init_exe: self.exe.clone(),
            sched_idle: batch.control != BatchControl::None,
            own_session: true,
        };
        let child = spawn::spawn(&spec).map_err(|e| {
            HostError::Isolation(format!(
                "starting batch command {:?}: {e}",
                batch.tenants[k].spec.command
            ))
        })?;
        drop(spec);
        let recorded = crate::leftover::RecordedProcess::of(child.id());
        let t = &mut batch.tenants[k];
        t.child = Some(child);
        t.state = "running";
        self.record.processes.retain(|p| p.is_same_process());
        self.record.processes.extend(recorded);
        self.save()
    }

    /// Reaps batch commands that exited and restarts them with backoff
    /// (or gives up, reported), then runs the guard's period when due.
    pub(super) fn batch_poll(&mut self, now: Instant) {
        let Some(mut batch) = self.batch.take() else {
            return;
        };
        let mut events = vec![];
        for (k, t) in batch.tenants.iter_mut().enumerate() {
            let Some(child) = t.child.as_mut() else {
                continue;
            };
            let Ok(Some(status)) = child.try_wait() else {
                continue;
            };
            let pid = child.id();
            t.child = None;
            // What it started in its session goes with it.
            // SAFETY: kill(2) on the process group the tenant led (setsid).
            unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
            let why = super::describe_exit(status);
            t.last_exit = Some(why.clone());
            match t.exits.exited(now) {
                RestartDecision::GiveUp { exits_in_window } => {
                    t.state = "failed";
                    events.push(format!(
                        "batch {} ({}) {why}; it exited {exits_in_window} times in {:.0} s, giving up",
                        k + 1,
                        t.spec.command,
                        t.exits.window_s()
                    ));
                }
                RestartDecision::RestartAt { at, backoff_ms } => {
                    t.state = "restarting";
                    t.restart_at = Some(at);
                    events.push(format!(
                        "batch {} ({}) {why}; restarting in {backoff_ms} ms",
                        k + 1,
                        t.spec.command
                    ));
                }
            }
        }
        for k in 0..batch.tenants.len() {
            let t = &batch.tenants[k];
            if t.state != "restarting" || t.restart_at.is_some_and(|at| at > now) {
                continue;
            }
            batch.tenants[k].restart_at = None;
            batch.tenants[k].restarts += 1;
            if let Err(e) = self.start_tenant(&mut batch, k, false) {
                batch.tenants[k].state = "failed";
                events.push(format!("batch {} could not be restarted: {e}", k + 1));
            }
        }
        if now >= batch.next_period {
            batch.next_period = now + PERIOD;
            if let Some(e) = self.guard_period(&mut batch, now) {
                events.push(e);
            }
        }
        for e in events {
            self.event(e);
        }
        self.batch = Some(batch);
    }

    /// True when the guard decides at the next [`Supervisor::poll`] (the
    /// moment to hand it the players' figures of the period).
    pub fn guard_period_due(&self) -> bool {
        self.batch
            .as_ref()
            .is_some_and(|b| b.controller.is_some() && Instant::now() >= b.next_period)
    }

    /// The signals of one period.
    fn guard_signals(&mut self, batch: &mut Batch, now: Instant) -> Signals {
        let query = self.cfg.health.is_query();
        let mut instances = vec![];
        for i in &mut self.instances {
            let answer_within = if query {
                i.spec.server.timing().interval() * 2 + PERIOD
            } else {
                PERIOD * 3
            };
            let answered = i.state == InstanceState::Running
                && i.last_heard
                    .is_some_and(|t| now.duration_since(t) <= answer_within);
            let (mut lag, mut frame, mut behind) = (None, None, None);
            if let Some(s) = i.stats {
                if let Some(r) = s.recent {
                    // The server's own window: judged like the verdict.
                    if s.tick_hz > 0 && batch.tick_hz != Some(s.tick_hz) {
                        batch.tick_hz = Some(s.tick_hz);
                        if let Some(c) = batch.controller.as_mut() {
                            c.set_limits(QosLimits::for_tick_hz(u32::from(s.tick_hz)));
                        }
                    }
                    if r.window_ms > 0 {
                        (lag, frame) = (Some(r.lateness_p99_us), Some(r.frame_p99_us));
                    }
                } else if let Some(p) = batch.prev_stats.get(&i.spec.id) {
                    if s.uptime_ms > p.uptime_ms && s.tick >= p.tick {
                        let dt_ms = (s.uptime_ms - p.uptime_ms) as f64;
                        let interval_us = 1e6 / f64::from(s.tick_hz.max(1));
                        let expected = dt_ms * f64::from(s.tick_hz) / 1000.0;
                        let ticks = (s.tick - p.tick) as f64;
                        let overruns = s.overruns.saturating_sub(p.overruns) as f64;
                        let behind_ticks = (expected - ticks).max(0.0) + overruns;
                        behind = Some((behind_ticks * interval_us) as u32);
                        let cpu = s.cpu_time_us.saturating_sub(p.cpu_time_us) as f64;
                        frame = Some((cpu / ticks.max(1.0)) as u32);
                    } else if s.uptime_ms == p.uptime_ms {
                        // The same reply again: not a new period of figures.
                        behind = Some(0);
                    }
                }
                batch.prev_stats.insert(i.spec.id, s);
            }
            let query_us = query
                .then(|| i.probe.take_recent_max())
                .flatten()
                .map(|u| u.min(u64::from(u32::MAX)) as u32);
            instances.push(InstanceSignal {
                id: i.spec.id,
                cpu: i.cpus.first().copied().unwrap_or(0),
                answered,
                tick_lag_us: lag,
                frame_us: frame,
                behind_us: behind,
                query_us,
            });
        }
        let cpu = batch.cpu_time.sample(&read_proc_stat(), &batch.server_cpus);
        Signals {
            instances,
            psi_some_avg10: cgroup::system_cpu_pressure(Path::new(PRESSURE_CPU)),
            players_p99_us: self.players_p99_us.take(),
            idle_cores: cpu.map(|c| c.idle_cores),
            steal: cpu.map(|c| c.steal),
        }
    }

    /// One guard period: signals, status figures, decision, actuation.
    /// Returns the event to log (every decision that changes something,
    /// and every zero).
    fn guard_period(&mut self, batch: &mut Batch, now: Instant) -> Option<String> {
        let signals = self.guard_signals(batch, now);
        if let Some(e) = self.maybe_move(batch, &signals) {
            self.event(e);
        }
        let st = &mut batch.status;
        st.control = batch.control.to_string();
        match &signals.psi_some_avg10 {
            Ok(p) => (st.psi_some_avg10, st.psi_unavailable) = (Some(*p), None),
            Err(e) => (st.psi_some_avg10, st.psi_unavailable) = (None, Some(e.clone())),
        }
        if let Some(cg) = &batch.cgroup {
            match cg.cpu_pressure() {
                Ok(p) => (st.cgroup_pressure, st.cgroup_pressure_unavailable) = (Some(p), None),
                Err(e) => (st.cgroup_pressure, st.cgroup_pressure_unavailable) = (None, Some(e)),
            }
            if let Ok(t) = cg.throttling() {
                st.nr_throttled = t.nr_throttled;
                st.throttled_ms = t.throttled_ns / 1_000_000;
            }
            if let Some(ns) = cg.cpu_usage_ns() {
                if let Some((prev, at)) = batch.cpu_sample {
                    let dt = now.duration_since(at).as_secs_f64();
                    if dt > 0.0 {
                        st.batch_cpu_percent =
                            Some(ns.saturating_sub(prev) as f64 / 1e9 / dt * 100.0);
                    }
                }
                batch.cpu_sample = Some((ns, now));
            }
            if cg.version() == CgroupVersion::V1 && batch.control != BatchControl::None {
                // Every task of the batch is SCHED_IDLE as well as its
                // group (an older v1 kernel has no idle group): new ones
                // inherit it, adopted ones are set here.
                if let Ok(pids) = cg.pids() {
                    for p in pids {
                        cgroup::set_sched_idle(p);
                    }
                }
            }
        }
        let controller = batch.controller.as_mut()?;
        let d = controller.decide(now.duration_since(batch.guard_started), &signals);
        let prev = batch.last.back().map(|p| (p.allowance.clone(), p.action));
        let mut applied = Ok(());
        if let Some(cg) = batch
            .cgroup
            .as_ref()
            .filter(|_| batch.applied.as_ref() != Some(&d.allowance))
        {
            // The whole server cores is no quota at all: a quota equal to
            // the cores still throttles in CFS slices, SCHED_IDLE alone not.
            let whole = d.allowance.quota_cores >= batch.server_cpus.len() as f64;
            applied = cg
                .set_cpu_quota((!whole).then_some(d.allowance.quota_cores))
                .and_then(|()| cg.set_cpus(&d.allowance.cpus));
            batch.applied = applied.is_ok().then(|| d.allowance.clone());
        }
        batch.status.quota_cores = Some(d.allowance.quota_cores);
        batch.status.baseline_slack = controller.baseline();
        batch.status.steal = signals.steal;
        batch.status.cpus = d.allowance.cpus.clone();
        *batch
            .counts
            .entry(format!("{:?}", d.action).to_lowercase())
            .or_default() += 1;
        batch.status.decisions = batch.counts.clone();
        let changed = prev
            .as_ref()
            .is_none_or(|(a, act)| *a != d.allowance || *act != d.action);
        let event = (changed
            || d.action == Action::Zero && prev.as_ref().is_some_and(|(a, _)| a.quota_cores > 0.0))
        .then(|| {
            format!(
                "guard: {:?} to {:.2} cores on CPUs {:?}: {}{}",
                d.action,
                d.allowance.quota_cores,
                d.allowance.cpus,
                d.reason,
                match &applied {
                    Ok(()) => String::new(),
                    Err(e) => format!(" (applying it failed: {e})"),
                }
            )
            .replacen("guard: Grow", "guard: grow", 1)
            .replacen("guard: Hold", "guard: hold", 1)
            .replacen("guard: Cut", "guard: cut", 1)
            .replacen("guard: Zero", "guard: zero", 1)
        });
        batch.last.push_back(d);
        while batch.last.len() > LAST_DECISIONS {
            batch.last.pop_front();
        }
        batch.status.last = batch.last.iter().cloned().collect();
        event
    }

    /// The instance-move decision ([`plan_move`]), at most once every
    /// [`MOVE_COOLDOWN`] periods, applied to the instance's cpuset (the
    /// guard only; a host with one server core never moves).
    fn maybe_move(&mut self, batch: &mut Batch, signals: &Signals) -> Option<String> {
        batch.controller.as_ref()?;
        if batch.server_cpus.len() < 2 {
            return None;
        }
        if batch.since_move < MOVE_COOLDOWN {
            batch.since_move += 1;
            return None;
        }
        let m = plan_move(
            &QosLimits::default(),
            &Tuning::default(),
            &batch.server_cpus,
            signals,
        )?;
        let i = self
            .instances
            .iter_mut()
            .find(|i| i.spec.id == m.instance)?;
        let cg = i.cgroup.as_ref()?;
        batch.since_move = 0;
        Some(match cg.set_cpus(&[m.to]) {
            Ok(()) => {
                i.cpus = vec![m.to];
                format!(
                    "guard: moved instance {} from CPU {} to CPU {}: its core lost QoS and CPU {} had the most slack",
                    m.instance, m.from, m.to, m.to
                )
            }
            Err(e) => format!(
                "guard: moving instance {} to CPU {} failed: {e}",
                m.instance, m.to
            ),
        })
    }

    /// The guard's part of the status (`None` without batch work).
    pub(super) fn guard_status(&self) -> Option<GuardStatus> {
        let batch = self.batch.as_ref()?;
        let mut st = batch.status.clone();
        st.control = batch.control.to_string();
        if batch.control != BatchControl::Guard {
            st.cpus = batch.server_cpus.clone();
        }
        st.batch = batch
            .tenants
            .iter()
            .map(|t| BatchStatus {
                command: t.spec.command.clone(),
                pid: t.child.as_ref().map(Child::id),
                state: t.state.to_owned(),
                restarts: t.restarts,
                last_exit: t.last_exit.clone(),
            })
            .collect();
        if batch.adopted {
            st.batch.push(BatchStatus {
                command: format!(
                    "(adopted cgroup {})",
                    self.cfg
                        .batch_cgroup
                        .as_ref()
                        .map_or(String::new(), |p| p.display().to_string())
                ),
                pid: None,
                state: "adopted".into(),
                restarts: 0,
                last_exit: None,
            });
        }
        Some(st)
    }

    /// Stops the batch: SIGINT (stress-ng then prints its metrics), up to
    /// [`STOP_GRACE`], SIGKILL; removes its cgroup, or gives an adopted
    /// one its quota, weight and CPU set back. Returns problems.
    pub(super) fn batch_down(&mut self) -> Vec<String> {
        let mut problems = vec![];
        let Some(mut batch) = self.batch.take() else {
            return problems;
        };
        for t in &batch.tenants {
            if let Some(c) = &t.child {
                // SAFETY: signalling the process group the tenant leads.
                unsafe { libc::kill(-(c.id() as i32), libc::SIGINT) };
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        for t in &mut batch.tenants {
            if let Some(mut c) = t.child.take() {
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = c.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                // SAFETY: as above; whatever is left of the group.
                unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
                let _ = c.kill();
                let _ = c.wait();
            }
            t.state = "stopped";
        }
        if let Some(cg) = batch.cgroup.take() {
            if batch.adopted {
                let restored = cg
                    .set_cpu_quota(None)
                    .and_then(|()| cg.set_idle(false).map(|_| ()))
                    .and_then(|()| match &batch.adopted_cpus {
                        Some(cpus) if batch.control == BatchControl::Guard => {
                            match tickpack_sys::parse_cpu_list(cpus, None) {
                                Ok(list) => cg.set_cpus(&list),
                                Err(_) => Ok(()),
                            }
                        }
                        _ => Ok(()),
                    });
                if let Err(e) = restored {
                    problems.push(format!("restoring the adopted batch cgroup: {e}"));
                }
            } else if let Err(e) = cg.remove() {
                problems.push(format!("batch cgroup: {e}"));
            }
        }
        problems
    }
}

/// The bogo-ops/s (real time) stress-ng reported with `--metrics-brief`
/// (or `--metrics`), summed over its stressors; `None` if there is none
/// (it was killed before reporting, or is not stress-ng).
pub fn stress_ng_bogo_ops_per_s(log: &str) -> Option<f64> {
    let mut total = None;
    for line in log.lines() {
        let Some(rest) = line.split("metrc:").nth(1) else {
            continue;
        };
        // "[PID] cpu   3243   1.71   1.71   0.00   1894.95   1894.86"
        let fields: Vec<&str> = rest.split_whitespace().skip(1).collect();
        if fields.len() < 7 || fields[1].parse::<f64>().is_err() {
            continue;
        }
        if let Ok(v) = fields[5].parse::<f64>() {
            *total.get_or_insert(0.0) += v;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stress_ng_metrics_are_summed_over_stressors() {
        let log = "stress-ng: info:  [11012] dispatching hogs: 1 cpu
stress-ng: metrc: [11012] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [11012]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [11012] cpu                3243      1.71      1.71      0.00      1894.95        1894.86
stress-ng: metrc: [11012] cache               100      1.71      1.71      0.00        58.48          58.48
stress-ng: info:  [11012] successful run completed in 1.71s
";
        let v = stress_ng_bogo_ops_per_s(log).unwrap();
        assert!((v - 1953.43).abs() < 1e-6, "{v}");
        assert_eq!(stress_ng_bogo_ops_per_s("nothing here"), None);
    }
}
