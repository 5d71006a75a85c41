//! The guard loop: every [`PERIOD`] the supervisor gathers the policy's
//! signals (each instance's QoS figures, PSI, the server CPUs' idle and
//! steal, the players' latency), asks the [`BatchPolicy`] it was handed,
//! and applies the allowance to the batch cgroup (quota, CPU set), each
//! decision logged as an event with its reason; with two or more server
//! cores, an instance whose core loses QoS is moved to the core the policy
//! names (its cpuset), at most once per [`MOVE_COOLDOWN`] periods. The
//! policy decides; this file only measures and applies.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::time::Instant;

use tickpack_wire::ServerStats;

use super::Supervisor;
use crate::cgroup::{self, Cgroup, CgroupVersion};
use crate::event::EventKind;
use crate::guard::policy::{Allowance, BatchPolicy, InstanceSignal, Signals, PERIOD};
use crate::guard::{Action, BatchControl, CpuSampler, Decision, GuardStatus};
use crate::status::InstanceState;

/// The system PSI file.
const PRESSURE_CPU: &str = "/proc/pressure/cpu";
/// Decisions kept for the status.
const LAST_DECISIONS: usize = 30;
/// Periods between two instance moves (a moved server needs its caches
/// and a few periods of figures before it is judged again).
const MOVE_COOLDOWN: u32 = 10;

/// The guard loop's state: the policy (none for `--batch-control none` or
/// `idle`, whose periods only refresh the status figures) and what it
/// measured and decided so far.
pub(super) struct GuardLoop {
    policy: Option<Box<dyn BatchPolicy>>,
    next_period: Instant,
    started: Instant,
    prev_stats: HashMap<u32, ServerStats>,
    /// The servers' tick rate the policy was told.
    tick_hz: Option<tickpack_wire::TickRate>,
    /// The server CPUs' idle and the machine's steal between periods.
    cpu_time: CpuSampler,
    cpu_sample: Option<(u64, Instant)>,
    status: GuardStatus,
    last: VecDeque<Decision>,
    /// The allowance last written to the cgroup (written again only when
    /// it changes: every write of a CFS quota takes the kernel's CPU
    /// hotplug lock and resets the group's runtime on every CPU).
    applied: Option<Allowance>,
    counts: BTreeMap<String, u64>,
    /// Periods since the last instance move.
    since_move: u32,
}

/// The batch cgroup and how it is held, as the guard loop sees them.
#[derive(Clone, Copy)]
pub(super) struct HeldBatch<'a> {
    pub cgroup: Option<&'a Cgroup>,
    pub control: BatchControl,
    pub server_cpus: &'a [usize],
}

/// `/proc/stat`'s text (empty when it cannot be read: no figures then).
fn read_proc_stat() -> String {
    std::fs::read_to_string("/proc/stat").unwrap_or_default()
}

impl GuardLoop {
    pub(super) fn new(policy: Option<Box<dyn BatchPolicy>>) -> GuardLoop {
        GuardLoop {
            policy,
            next_period: Instant::now() + PERIOD,
            started: Instant::now(),
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

    /// The policy's first allowance, cores (`None` without a policy).
    pub(super) fn first_quota(&self) -> Option<f64> {
        self.policy.as_ref().map(|p| p.quota_cores())
    }

    /// The loop's clock starts; the first period's idle is measured from
    /// here.
    pub(super) fn start(&mut self, server_cpus: &[usize]) {
        self.started = Instant::now();
        self.cpu_time.sample(&read_proc_stat(), server_cpus);
    }

    /// A period is due at `now` (and the next one is set a [`PERIOD`] on).
    pub(super) fn take_due(&mut self, now: Instant) -> bool {
        let due = now >= self.next_period;
        if due {
            self.next_period = now + PERIOD;
        }
        due
    }

    /// A policy decides at the next poll.
    pub(super) fn decides_at(&self, now: Instant) -> bool {
        self.policy.is_some() && now >= self.next_period
    }

    /// The figures and decisions so far, for the status.
    pub(super) fn status(&self) -> GuardStatus {
        self.status.clone()
    }
}

impl Supervisor {
    /// The signals of one period.
    fn guard_signals(&mut self, g: &mut GuardLoop, server_cpus: &[usize], now: Instant) -> Signals {
        let query = self.cfg.health.is_query();
        let mut instances = vec![];
        for i in &mut self.instances {
            let answer_within = if query {
                i.spec.server.timing().interval() * 2 + PERIOD
            } else {
                PERIOD * 3
            };
            let answered = i.life.state() == InstanceState::Running
                && i.last_heard
                    .is_some_and(|t| now.duration_since(t) <= answer_within);
            let (mut lag, mut frame, mut behind) = (None, None, None);
            if let Some(s) = i.stats {
                if let Some(r) = s.recent {
                    // The server's own window: judged like the verdict.
                    if g.tick_hz != Some(s.tick_hz) {
                        g.tick_hz = Some(s.tick_hz);
                        if let Some(p) = g.policy.as_mut() {
                            p.set_tick_hz(s.tick_hz);
                        }
                    }
                    if r.window_ms > 0 {
                        (lag, frame) = (Some(r.lateness_p99_us), Some(r.frame_p99_us));
                    }
                } else if let Some(p) = g.prev_stats.get(&i.spec.id) {
                    if s.uptime_ms > p.uptime_ms && s.tick >= p.tick {
                        let dt_ms = (s.uptime_ms - p.uptime_ms) as f64;
                        let interval_us = s.tick_hz.interval_ns() as f64 / 1e3;
                        let expected = dt_ms * f64::from(s.tick_hz.hz()) / 1000.0;
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
                g.prev_stats.insert(i.spec.id, s);
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
        let cpu = g.cpu_time.sample(&read_proc_stat(), server_cpus);
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
    pub(super) fn guard_period(
        &mut self,
        g: &mut GuardLoop,
        held: HeldBatch<'_>,
        now: Instant,
    ) -> Option<EventKind> {
        let signals = self.guard_signals(g, held.server_cpus, now);
        if let Some(e) = self.maybe_move(g, held.server_cpus, &signals) {
            self.event(e);
        }
        let st = &mut g.status;
        st.control = held.control.to_string();
        match &signals.psi_some_avg10 {
            Ok(p) => (st.psi_some_avg10, st.psi_unavailable) = (Some(*p), None),
            Err(e) => (st.psi_some_avg10, st.psi_unavailable) = (None, Some(e.clone())),
        }
        if let Some(cg) = held.cgroup {
            match cg.cpu_pressure() {
                Ok(p) => (st.cgroup_pressure, st.cgroup_pressure_unavailable) = (Some(p), None),
                Err(e) => (st.cgroup_pressure, st.cgroup_pressure_unavailable) = (None, Some(e)),
            }
            if let Ok(t) = cg.throttling() {
                st.nr_throttled = t.nr_throttled;
                st.throttled_ms = t.throttled_ns / 1_000_000;
            }
            if let Some(ns) = cg.cpu_usage_ns() {
                if let Some((prev, at)) = g.cpu_sample {
                    let dt = now.duration_since(at).as_secs_f64();
                    if dt > 0.0 {
                        st.batch_cpu_percent =
                            Some(ns.saturating_sub(prev) as f64 / 1e9 / dt * 100.0);
                    }
                }
                g.cpu_sample = Some((ns, now));
            }
            if cg.version() == CgroupVersion::V1 && held.control != BatchControl::None {
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
        let policy = g.policy.as_mut()?;
        let d = policy.decide(now.duration_since(g.started), &signals);
        let prev = g.last.back().map(|p| (p.allowance.clone(), p.action));
        let mut applied = Ok(());
        if let Some(cg) = held
            .cgroup
            .filter(|_| g.applied.as_ref() != Some(&d.allowance))
        {
            // The whole server cores is no quota at all: a quota equal to
            // the cores still throttles in CFS slices, SCHED_IDLE alone not.
            let whole = d.allowance.quota_cores >= held.server_cpus.len() as f64;
            applied = cg
                .set_cpu_quota((!whole).then_some(d.allowance.quota_cores))
                .and_then(|()| cg.set_cpus(&d.allowance.cpus));
            g.applied = applied.is_ok().then(|| d.allowance.clone());
        }
        g.status.quota_cores = Some(d.allowance.quota_cores);
        g.status.baseline_slack = policy.baseline();
        g.status.steal = signals.steal;
        g.status.cpus = d.allowance.cpus.clone();
        *g.counts
            .entry(format!("{:?}", d.action).to_lowercase())
            .or_default() += 1;
        g.status.decisions = g.counts.clone();
        let changed = prev
            .as_ref()
            .is_none_or(|(a, act)| *a != d.allowance || *act != d.action);
        let event = (changed
            || d.action == Action::Zero && prev.as_ref().is_some_and(|(a, _)| a.quota_cores > 0.0))
        .then(|| EventKind::Guard {
            action: d.action,
            quota_cores: d.allowance.quota_cores,
            cpus: d.allowance.cpus.clone(),
            reason: d.reason.clone(),
            apply_error: applied.as_ref().err().map(ToString::to_string),
        });
        g.last.push_back(d);
        while g.last.len() > LAST_DECISIONS {
            g.last.pop_front();
        }
        g.status.last = g.last.iter().cloned().collect();
        event
    }

    /// The instance-move decision ([`BatchPolicy::plan_move`]), at most
    /// once every [`MOVE_COOLDOWN`] periods, applied to the instance's
    /// cpuset (with a policy only; a host with one server core never
    /// moves).
    fn maybe_move(
        &mut self,
        g: &mut GuardLoop,
        server_cpus: &[usize],
        signals: &Signals,
    ) -> Option<EventKind> {
        let policy = g.policy.as_ref()?;
        if server_cpus.len() < 2 {
            return None;
        }
        if g.since_move < MOVE_COOLDOWN {
            g.since_move += 1;
            return None;
        }
        let m = policy.plan_move(signals)?;
        let i = self
            .instances
            .iter_mut()
            .find(|i| i.spec.id == m.instance)?;
        let cg = i.cgroup.as_ref()?;
        g.since_move = 0;
        let error = match cg.set_cpus(&[m.to]) {
            Ok(()) => {
                i.cpus = vec![m.to];
                None
            }
            Err(e) => Some(e.to_string()),
        };
        Some(EventKind::GuardMove {
            instance: m.instance,
            from: m.from,
            to: m.to,
            error,
        })
    }
}
