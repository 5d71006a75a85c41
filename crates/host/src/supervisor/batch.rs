//! The host's batch tenants: creating (or adopting) the batch cgroup and
//! holding it as asked (no control, SCHED_IDLE, or the guard's first
//! allowance), starting, reaping, restarting and stopping `--batch`
//! commands in it, and their rows in the status. The guard loop that
//! holds the batch to its policy's allowance every period is
//! `guard_loop.rs`.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tickpack_root::service::protocol::Walls;
use tickpack_root::service::Proc;

use super::guard_loop::{GuardLoop, HeldBatch};
use super::{HostError, RestartDecision, RestartTracker, Supervisor};
use crate::cgroup::{self, Cgroup, Limits};
use crate::event::{AfterExit, EventKind, ExitCause};
use crate::fleet::FleetConfig;
use crate::guard::batch::{BatchSpec, BatchStatus};
use crate::guard::policy::{BatchPolicyFactory, PERIOD};
use crate::guard::{BatchControl, GuardStatus};
use crate::spawn::{Isolation, Spec};
use rustix::process::{kill_process_group, Pid, Signal};

/// kill(2) of the process group `leader` leads (a tenant started with
/// setsid); a group already gone is fine.
fn kill_group(leader: u32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(leader as i32) {
        let _ = kill_process_group(pid, sig);
    }
}

/// How long stopping batch work waits after SIGINT (stress-ng prints its
/// metrics then) before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// One `--batch` command.
pub(super) struct Tenant {
    spec: BatchSpec,
    child: Option<Proc>,
    state: &'static str,
    restarts: u32,
    exits: RestartTracker,
    restart_at: Option<Instant>,
    last_exit: Option<String>,
}

/// The batch: its cgroup, tenants and guard loop (with the guard, its
/// policy).
pub(super) struct Batch {
    control: BatchControl,
    cgroup: Option<Cgroup>,
    adopted: bool,
    /// An adopted cgroup's CPU set before the guard changed it.
    adopted_cpus: Option<String>,
    tenants: Vec<Tenant>,
    server_cpus: Vec<usize>,
    guard: GuardLoop,
}

/// How far above the instances' `oom_score_adj` a batch tenant's is.
pub const BATCH_OOM_SCORE_ABOVE: i32 = 500;

/// The log of batch tenant `k` (1-based).
pub fn batch_log_path(run_dir: &Path, k: usize) -> PathBuf {
    run_dir.join("logs").join(format!("batch-{k}.log"))
}

impl Batch {
    /// The batch of `cfg` on `server_cpus`; with the guard, `policy`
    /// makes its policy (the guard without one is refused).
    pub(super) fn new(
        cfg: &FleetConfig,
        server_cpus: Vec<usize>,
        policy: Option<BatchPolicyFactory>,
    ) -> Result<Batch, HostError> {
        let policy = match (cfg.batch_control, policy) {
            (BatchControl::Guard, Some(make)) => Some(make(server_cpus.clone())),
            (BatchControl::Guard, None) => {
                return Err(HostError::Config(crate::fleet::FleetError::Invalid(
                    "the guard (--batch-control guard) needs its policy: the caller starts the \
                     supervisor with Supervisor::start_with_policy and tickpack_guard::policy()"
                        .into(),
                )))
            }
            _ => None,
        };
        Ok(Batch {
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
            guard: GuardLoop::new(policy),
        })
    }
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
                    refuse_other_hosts_work(&cg, path, self.uid_base)?;
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
                        // The policy's first allowance: the guard's is the
                        // whole server cores (no quota) unless it measures
                        // first.
                        let first = batch.guard.first_quota().unwrap_or(0.0);
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
            self.event(EventKind::BatchStarted {
                commands: batch.tenants.len(),
                adopted: batch.adopted,
                cpus: batch.server_cpus.clone(),
                how: what,
            });
        }
        batch.guard.start(&batch.server_cpus);
        Ok(())
    }

    fn start_tenant(&mut self, batch: &mut Batch, k: usize, first: bool) -> Result<(), HostError> {
        let dir = self.cfg.run_dir.join("batch").join((k + 1).to_string());
        let walls = Walls::Batch { job: k as u32 + 1 };
        let root = self.root.is_some();
        match &self.root {
            // Its files on a tmpfs of their own, kept across its restarts,
            // in `batch/` (root's, 0700, as `instances/`: no tenant swaps
            // a directory for a link), made by the root process.
            Some(r) if first => r
                .tenant_dir(walls, tickpack_root::tenant_dir::DEFAULT_DISK_BYTES)
                .map_err(|e| HostError::Isolation(format!("the batch's directory: {e}")))?,
            Some(_) => {}
            None => std::fs::create_dir_all(&dir)
                .map_err(super::io(format!("creating {}", dir.display())))?,
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
            cgroup_procs: vec![],
            isolation: if root {
                Isolation {
                    netns: None,
                    own_netns: true,
                    hostname: Some(format!("tp{}-batch-{}", self.cfg.name, k + 1)),
                    user: Some((self.uid_base, self.uid_base)),
                    hide: Some(self.cfg.run_dir.clone()),
                    workdir_fd: None,
                }
            } else {
                Isolation::default()
            },
            init_exe: self.exe.clone(),
            sched_idle: batch.control != BatchControl::None,
            own_session: true,
        };
        let child = self
            .start_command(walls, spec, batch.cgroup.as_ref())
            .map_err(|e| {
                HostError::Isolation(format!(
                    "starting batch command {:?}: {e}",
                    batch.tenants[k].spec.command
                ))
            })?;
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
            let (pid, walled) = (child.id(), child.root().is_some());
            t.child = None;
            // What it started in its session goes with it: kill(2) on the
            // process group the tenant led (setsid); a walled one's root
            // process did so when it reaped it.
            if !walled {
                kill_group(pid, Signal::KILL);
            }
            let cause = ExitCause::of(status);
            t.last_exit = Some(cause.to_string());
            let after = match t.exits.exited(now) {
                RestartDecision::GiveUp { exits_in_window } => {
                    t.state = "failed";
                    AfterExit::GiveUp {
                        exits: exits_in_window,
                        window_s: t.exits.window_s(),
                    }
                }
                RestartDecision::RestartAt { at, backoff_ms } => {
                    t.state = "restarting";
                    t.restart_at = Some(at);
                    AfterExit::Restart { in_ms: backoff_ms }
                }
            };
            events.push(EventKind::BatchExited {
                batch: k + 1,
                command: t.spec.command.clone(),
                cause,
                after,
            });
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
                events.push(EventKind::BatchRestartFailed {
                    batch: k + 1,
                    error: e.to_string(),
                });
            }
        }
        if batch.guard.take_due(now) {
            let held = HeldBatch {
                cgroup: batch.cgroup.as_ref(),
                control: batch.control,
                server_cpus: &batch.server_cpus,
            };
            if let Some(e) = self.guard_period(&mut batch.guard, held, now) {
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
            .is_some_and(|b| b.guard.decides_at(Instant::now()))
    }

    /// The guard's part of the status (`None` without batch work).
    pub(super) fn guard_status(&self) -> Option<GuardStatus> {
        let batch = self.batch.as_ref()?;
        let mut st = batch.guard.status();
        st.control = batch.control.to_string();
        if batch.control != BatchControl::Guard {
            st.cpus = batch.server_cpus.clone();
        }
        st.batch = batch
            .tenants
            .iter()
            .map(|t| BatchStatus {
                command: t.spec.command.clone(),
                pid: t.child.as_ref().map(Proc::id),
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
        for t in &mut batch.tenants {
            if let Some(c) = &mut t.child {
                // The process group the tenant leads.
                let _ = c.signal_group(Signal::INT);
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
                // Whatever is left of the group (its root process kills
                // it when it reaps a walled one; ours after, as it is
                // reaped first here).
                let _ = c.signal_group(Signal::KILL);
                let _ = c.kill();
                let _ = c.wait();
                if c.root().is_none() {
                    kill_group(c.id(), Signal::KILL);
                }
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

/// Refuses an adopted cgroup in which another host's work runs (a uid of
/// another block: that host's batch commands): this host's guard would
/// hold them to its own allowance, and give the cgroup back at its `down`
/// while the other host still holds it.
fn refuse_other_hosts_work(cg: &Cgroup, path: &Path, own_base: u32) -> Result<(), HostError> {
    let shown = path.display();
    let pids = cg
        .pids()
        .map_err(|e| HostError::Isolation(format!("--batch-cgroup {shown}: {e}")))?;
    let other =
        tickpack_root::uid_block::first_of_other_blocks(Path::new("/proc"), &pids, own_base);
    match other {
        None => Ok(()),
        Some((pid, uid)) => Err(HostError::Isolation(format!(
            "--batch-cgroup {shown}: process {pid} in it runs as uid {uid}, another host's ({}); \
             end that host's work (`tickpack host down` of that host) or give another cgroup",
            tickpack_root::uid_block::holder_of_uid(uid)
        ))),
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
    fn the_guard_without_its_policy_is_refused_as_a_config_error() {
        let cfg = FleetConfig {
            name: "tpguard".into(),
            run_dir: "/run/tickpack/tpguard".into(),
            backend: crate::fleet::Backend::Netns,
            net: crate::fleet::DEFAULT_NET,
            range: "198.18.0.0/16".into(),
            port: 27_100,
            placement: crate::placement::Policy::Spread,
            reserved_cpus: None,
            health: crate::fleet::Health::None,
            restart: crate::fleet::RestartPolicy::default(),
            instances: vec![],
            allow_host_ports: vec![],
            game: Default::default(),
            batch: vec![BatchSpec::parse("sh").unwrap()],
            batch_cgroup: None,
            batch_control: BatchControl::Guard,
            log_bytes: 1 << 20,
            source_addrs: 0,
            pids_max: None,
        };
        let e = Batch::new(&cfg, vec![1], None).err().expect("refused");
        assert!(
            matches!(e, HostError::Config(_)) && e.to_string().contains("policy"),
            "{e}"
        );
        let idle = FleetConfig {
            batch_control: BatchControl::Idle,
            ..cfg
        };
        assert!(Batch::new(&idle, vec![1], None).is_ok());
    }

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
