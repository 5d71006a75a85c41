//! The ladder: add tiles of servers step by step until a QoS limit fails.
//!
//! Each step: bring up `servers = step x tile` instances with the host
//! supervisor (the same code as `tickpack host`), wait until every one
//! answers, drive them with `players_per_server` emulated players each from
//! the reserved CPUs, sample CPU busy time and power over the measured
//! window, take everything down, and judge the step ([`crate::verdict`]).
//! The ladder stops `steps_past_failure` steps after the first failure.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickpack_host::fleet::{Backend, FleetFile};
use tickpack_host::netpath::NetKind;
use tickpack_host::placement::Policy;
use tickpack_host::status::InstanceState;
use tickpack_host::supervisor::Supervisor;
use tickpack_players::PlayersConfig;
use tickpack_report::bench::{BenchSettings, CpuUse, Ladder, Power, Step};

use crate::cpu::{mean_over, CpuTimes};
use crate::power::PowerSource;
use crate::verdict::{failures, StepFigures, Verdict};
use crate::BenchError;

/// One variant to climb (a comparison runs several).
#[derive(Debug, Clone, PartialEq)]
pub struct LadderSpec {
    pub label: String,
    pub backend: Backend,
    pub net: NetKind,
    pub placement: Policy,
}

/// Where and how to run, shared by all ladders of a run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub settings: BenchSettings,
    /// CPUs kept for the load generator (and the host).
    pub load_generator_cpus: Vec<usize>,
    /// CPUs the servers may use.
    pub server_cpus: Vec<usize>,
    /// The tickpack binary (servers are `tickpack server`).
    pub exe: PathBuf,
    /// Run dir of the temporary hosts.
    pub run_dir: PathBuf,
    /// Host name prefixing everything created ("tp<name>...").
    pub host_name: String,
    /// Instance address range (netns); `None`: the host's default.
    pub range: Option<String>,
}

/// Told about progress (a progress bar, a log line).
pub trait Observer {
    fn step_started(&mut self, ladder: &str, index: u32, servers: u32);
    /// After every finished step, with the ladder so far.
    fn step_finished(&mut self, ladder: &Ladder);
    /// Something worth telling the person running the benchmark.
    fn note(&mut self, _msg: &str) {}
}

/// Climbs one ladder. Returns the ladder with every finished step; an
/// interrupted step (Ctrl-C) is not recorded.
pub fn run_ladder(
    plan: &Plan,
    spec: &LadderSpec,
    power: &mut dyn PowerSource,
    stop: &Arc<AtomicBool>,
    obs: &mut dyn Observer,
) -> Result<Ladder, BenchError> {
    let s = &plan.settings;
    let mut ladder = Ladder {
        label: spec.label.clone(),
        backend: format!("{:?}", spec.backend).to_lowercase(),
        net: (spec.backend == Backend::Netns).then(|| spec.net.to_string()),
        placement: spec.placement.to_string(),
        steps: vec![],
        max_servers: None,
        recommended_servers: None,
        stopped: String::new(),
    };
    let mut baseline: Option<u64> = None;
    let mut first_fail: Option<u32> = None;
    for index in 1..=s.max_steps {
        if stop.load(Ordering::Relaxed) {
            ladder.stopped = interrupted(&ladder, first_fail, s.tile_servers);
            break;
        }
        let servers = index * s.tile_servers;
        obs.step_started(&spec.label, index, servers);
        let Some(mut step) = run_step(plan, spec, index, servers, baseline, power, stop)? else {
            ladder.stopped = interrupted(&ladder, first_fail, s.tile_servers);
            break;
        };
        if step.verdict.is_fail() && s.confirm_failures {
            // One noisy moment must not end the ladder: run it again; the
            // step fails only if both attempts fail. Both are recorded.
            obs.note(&format!(
                "{}: {servers} servers failed ({}); running the step again to confirm",
                spec.label,
                step.failures.join("; ")
            ));
            let Some(mut again) = run_step(plan, spec, index, servers, baseline, power, stop)?
            else {
                ladder.stopped = interrupted(&ladder, first_fail, s.tile_servers);
                break;
            };
            again.first_attempt_failures = std::mem::take(&mut step.failures);
            step = again;
        }
        if index == 1 {
            baseline = Some(step.transaction_latency_us.p99);
        }
        let pass = step.verdict.is_pass();
        if first_fail.is_none() && pass {
            ladder.max_servers = Some(servers);
            if step.cpu.servers_busy_percent <= s.headroom_target * 100.0 {
                ladder.recommended_servers = Some(servers);
            }
        }
        if !pass && first_fail.is_none() {
            first_fail = Some(index);
        }
        ladder.steps.push(step);
        obs.step_finished(&ladder);
        if let Some(f) = first_fail {
            if index >= f + s.steps_past_failure {
                ladder.stopped = format!("step {f} ({} servers) failed QoS", f * s.tile_servers);
                break;
            }
        }
    }
    if ladder.stopped.is_empty() {
        ladder.stopped = format!(
            "reached the last step ({} servers) without a QoS failure",
            s.max_steps * s.tile_servers
        );
    }
    Ok(ladder)
}

/// Why an interrupted ladder stopped, saying whether it found its limit.
fn interrupted(ladder: &Ladder, first_fail: Option<u32>, tile_servers: u32) -> String {
    match (first_fail, ladder.max_servers) {
        (Some(f), _) => format!(
            "interrupted after step {f} ({} servers) failed QoS",
            f * tile_servers
        ),
        (None, Some(n)) => format!("interrupted before its limit: at least {n} servers passed"),
        (None, None) => "interrupted before a step finished".into(),
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn run_step(
    plan: &Plan,
    spec: &LadderSpec,
    index: u32,
    servers: u32,
    baseline: Option<u64>,
    power: &mut dyn PowerSource,
    stop: &Arc<AtomicBool>,
) -> Result<Option<Step>, BenchError> {
    let s = &plan.settings;
    let command = format!(
        "{{tickpack}} server --bind {{ip}}:{{port}} --tick-hz {} --bots {} --max-players {} --cost {}",
        s.tick_hz,
        s.bots_per_server,
        s.players_per_server.max(1),
        s.cost
    );
    let fleet = FleetFile {
        name: Some(plan.host_name.clone()),
        instances: Some(servers),
        backend: Some(format!("{:?}", spec.backend).to_lowercase()),
        net: Some(spec.net.to_string()),
        placement: Some(spec.placement.to_string()),
        reserved_cpus: Some(cpu_list(&plan.load_generator_cpus)),
        command: Some(command),
        health: Some("tickpack".into()),
        port: Some(if spec.backend == Backend::Process {
            47015
        } else {
            27015
        }),
        run_dir: Some(plan.run_dir.clone()),
        range: plan.range.clone(),
        ..Default::default()
    }
    .resolve(&plan.run_dir)
    .map_err(|e| BenchError::Config(e.to_string()))?;
    let mut sup = Supervisor::start(fleet, plan.exe.clone()).map_err(BenchError::Host)?;
    let result = measure(plan, &mut sup, index, servers, baseline, power, stop);
    let problems = sup.shutdown();
    if !problems.is_empty() {
        return Err(BenchError::Isolation(format!(
            "could not remove the step's servers: {}",
            problems.join("; ")
        )));
    }
    result
}

fn measure(
    plan: &Plan,
    sup: &mut Supervisor,
    index: u32,
    servers: u32,
    baseline: Option<u64>,
    power: &mut dyn PowerSource,
    stop: &Arc<AtomicBool>,
) -> Result<Option<Step>, BenchError> {
    let s = &plan.settings;
    // Every instance answering before the players come.
    let t0 = Instant::now();
    loop {
        sup.poll();
        let st = sup.status();
        if st
            .instances
            .iter()
            .all(|i| i.state == InstanceState::Running)
        {
            break;
        }
        if let Some(bad) = st
            .instances
            .iter()
            .find(|i| i.state == InstanceState::Failed)
        {
            return Err(BenchError::Isolation(format!(
                "server {} of step {index} failed to start: {}",
                bad.id,
                bad.last_exit.as_deref().unwrap_or("unknown")
            )));
        }
        if t0.elapsed() > Duration::from_secs(20) {
            return Err(BenchError::Isolation(format!(
                "the {servers} servers of step {index} did not all answer within 20 s"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let players = servers * s.players_per_server;
    let warmup = Duration::from_secs_f64(s.warmup_s);
    let duration = Duration::from_secs_f64(s.step_duration_s);
    let pcfg = PlayersConfig {
        targets: sup.addresses(),
        players: players as usize,
        duration,
        warmup,
        connect_timeout: Duration::from_secs(5),
        threads: plan.load_generator_cpus.len().max(1),
        cpus: plan.load_generator_cpus.clone(),
        ..Default::default()
    };
    pcfg.validate()
        .map_err(|e| BenchError::Config(e.to_string()))?;
    let live = Arc::new(tickpack_players::Live::default());
    let started = Instant::now();
    let (outcome, cpu, watts) = std::thread::scope(|scope| {
        let h = scope.spawn(|| tickpack_players::run(&pcfg, stop, &live));
        // Sample over the measured window only.
        sleep_until(started + warmup + Duration::from_millis(20), stop);
        let c0 = CpuTimes::read();
        let started_power = power.start();
        sleep_until(started + warmup + duration, stop);
        let c1 = CpuTimes::read();
        let per_cpu = c0.busy_percent(&c1);
        let machine = mean_over(&per_cpu, &[]);
        let watts = match started_power {
            Ok(()) => power.watts_since_start(machine / 100.0).ok(),
            Err(_) => None,
        };
        let outcome = h.join().unwrap_or_else(|_| {
            Err(tickpack_players::PlayersError::Internal(
                "players panicked".into(),
            ))
        });
        (outcome, per_cpu, watts)
    });
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let outcome = outcome.map_err(BenchError::Players)?;
    let r = tickpack_players::to_result(&pcfg, &outcome);
    let figures = StepFigures {
        players,
        connected: r.connected,
        tick_hz: s.tick_hz,
        transaction_latency_us: &r.transaction_latency_us,
        tick_lateness_us: &r.tick_lateness_us,
        server_frame_us: &r.server_frame_us,
        snapshots: &r.snapshots,
        commands: &r.commands,
        outages: &r.outages,
    };
    let why = failures(&figures, baseline, &s.qos);
    Ok(Some(Step {
        index,
        tiles: index,
        servers,
        players,
        verdict: Verdict::of(&why),
        failures: why.iter().map(ToString::to_string).collect(),
        first_attempt_failures: vec![],
        duration_s: s.step_duration_s,
        cpu: CpuUse {
            servers_busy_percent: (mean_over(&cpu, &plan.server_cpus) * 10.0).round() / 10.0,
            machine_busy_percent: (mean_over(&cpu, &[]) * 10.0).round() / 10.0,
            per_cpu_percent: cpu,
            load_generator_cpu_s: r.load_generator_cpu_s,
        },
        power: watts.map(|w| Power {
            watts: (w * 10.0).round() / 10.0,
            source: power.kind(),
        }),
        transaction_latency_us: r.transaction_latency_us,
        rtt_us: r.rtt_us,
        server_frame_us: r.server_frame_us,
        tick_lateness_us: r.tick_lateness_us,
        snapshot_jitter_us: r.snapshot_jitter_us,
        snapshots: r.snapshots,
        commands: r.commands,
        outages: r.outages,
        reconnects: r.reconnects,
        histograms: r.histograms,
    }))
}

fn sleep_until(t: Instant, stop: &AtomicBool) {
    while Instant::now() < t && !stop.load(Ordering::Relaxed) {
        std::thread::sleep((t - Instant::now()).min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ladder(max: Option<u32>) -> Ladder {
        Ladder {
            label: "l".into(),
            backend: "process".into(),
            net: None,
            placement: "spread".into(),
            steps: vec![],
            max_servers: max,
            recommended_servers: None,
            stopped: String::new(),
        }
    }

    #[test]
    fn an_interrupted_ladder_says_whether_it_found_its_limit() {
        assert_eq!(
            interrupted(&ladder(Some(2)), None, 1),
            "interrupted before its limit: at least 2 servers passed"
        );
        assert_eq!(
            interrupted(&ladder(None), None, 3),
            "interrupted before a step finished"
        );
        assert_eq!(
            interrupted(&ladder(Some(3)), Some(2), 3),
            "interrupted after step 2 (6 servers) failed QoS"
        );
    }
}
