//! One ladder step on a real host: the [`StepRunner`] that `tickpack bench`
//! uses.
//!
//! Brings up `servers` instances with the host supervisor (the same code as
//! `tickpack host`), waits until every one answers, drives them with the
//! emulated players from the reserved CPUs (from as many source
//! addresses as the game's limit per address asks for, set aside on the
//! host side of the step's network paths:
//! [`crate::game::source_addrs_for`]), samples CPU busy time, the
//! foreign load on the server cores ([`crate::foreign`]) and power over the
//! measured window, takes everything down, and judges the step
//! ([`crate::verdict`]). With `--probe`, a query prober runs beside the
//! players on the same CPUs over the measured window, asking every
//! instance at the polite rate ([`tickpack_probe::ProbeSettings::DEFAULT`]),
//! and the step records the merged round trips as `query_latency_us`. At the
//! end of the measured window it records the largest peak resident memory
//! of one server (its process tree's `VmHWM`). Needs whatever the ladder's backend needs (root for
//! netns); the ladder's own logic is tested with a scripted runner instead.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickpack_fleet::FleetPlan;
use tickpack_host::fleet::Backend;
use tickpack_host::launch::ServerSpec;
use tickpack_host::status::InstanceState;
use tickpack_host::supervisor::{batch_log_path, stress_ng_bogo_ops_per_s, Supervisor};
use tickpack_players::{PlayersConfig, PlayersError};
use tickpack_probe::{ProbeConfig, ProbeProtocol, ProbeSettings};
use tickpack_report::bench::{BenchSettings, CpuUse, ForeignLoad, Power, Step, StepBatch};

use crate::cpu::mean_over;
use crate::foreign::OwnCpu;
use crate::game::GameServer;
use crate::power::PowerSource;
use crate::readers::{self, Job};
use crate::spec::{LadderSpec, Plan, StepRequest, StepRunner};
use crate::verdict::{failures, StepFigures, Verdict};
use crate::BenchError;

mod window;
pub(crate) use window::{server_pids, RUN_DELAY_PERIOD};
use window::{wait_until, BatchSamples, ThreadSamplers};

/// Runs steps on this machine with real servers and players.
pub struct HostStepRunner<'a> {
    pub plan: &'a Plan,
    pub power: &'a mut dyn PowerSource,
    /// Set by Ctrl-C: the step in progress ends early and is not recorded.
    pub stop: &'a Arc<AtomicBool>,
}

impl StepRunner for HostStepRunner<'_> {
    fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn run_step(
        &mut self,
        spec: &LadderSpec,
        req: &StepRequest,
    ) -> Result<Option<Step>, BenchError> {
        let plan = self.plan;
        // The host's events in this step carry its index and size.
        let _step = tracing::info_span!(
            "step",
            index = req.index,
            servers = req.servers,
            tiles = req.tiles
        )
        .entered();
        if let Some(tile) = &plan.tile {
            return crate::tile::step::run(plan, tile, spec, req, self.stop);
        }
        let s = &spec.settings(&plan.settings);
        let game = spec.game_server(&plan.game);
        let server = server_spec(game, s)?;
        // The host gets typed values (CPU numbers, the spec, counts),
        // checked by the same rules as a host file.
        let mut fleet = FleetPlan {
            name: Some(plan.host_name.clone()),
            instances: Some(req.servers),
            backend: Some(spec.backend),
            net: Some(spec.net),
            placement: Some(spec.placement),
            reserved_cpus: Some(plan.load_generator_cpus.clone()),
            game: game.clone(),
            server: Some(server),
            port: Some(if spec.backend == Backend::Process {
                47015
            } else {
                game.port()
            }),
            run_dir: Some(plan.run_dir.clone()),
            range: plan.range.clone(),
            batch: spec.batch.map(|_| plan.batch.clone()).unwrap_or_default(),
            batch_control: spec.batch.unwrap_or_default(),
            // Enough source addresses on the host side of every path that
            // no server sees more players from one than the game allows.
            source_addrs: crate::game::source_addrs_for(game, s.players_per_server),
            ..Default::default()
        }
        .build(&plan.run_dir)
        .map_err(|e| BenchError::Config(e.to_string()))?;
        fleet.restart.start_timeout_s = fleet
            .restart
            .start_timeout_s
            .max(game.start_limit(req.servers).as_secs_f64());
        let mut sup =
            Supervisor::start_with_policy(fleet, plan.exe.clone(), Some(tickpack_guard::policy()))
                .map_err(BenchError::Host)?;
        let run_dir = sup.config().run_dir.clone();
        let batches = sup.config().batch.len();
        // The host is polled through the step when any variant runs batch
        // work (the guard decides in the poll), so every variant of the
        // comparison sees the same supervisor.
        let poll = !plan.batch.is_empty();
        let mut result = self.measure(&mut sup, req, poll, s, game);
        let problems = sup.shutdown();
        // Stopped with SIGINT, stress-ng printed its metrics on the way out.
        if let Ok(Some(step)) = &mut result {
            if let Some(b) = &mut step.batch {
                b.bogo_ops_per_s = (1..=batches)
                    .filter_map(|k| {
                        std::fs::read_to_string(batch_log_path(&run_dir, k))
                            .ok()
                            .and_then(|t| stress_ng_bogo_ops_per_s(&t))
                    })
                    .reduce(|a, b| a + b)
                    .map(|v| (v * 10.0).round() / 10.0);
            }
        }
        if !problems.is_empty() {
            return Err(BenchError::Isolation(format!(
                "could not remove the step's servers: {}",
                problems.join("; ")
            )));
        }
        result
    }
}

/// Whether every server of `sup` answers (`what` names them in errors:
/// "step 3", "member NAME in step 3"): an error once one failed to
/// start, or when they did not all answer within the game's start limit
/// since `t0`.
pub(crate) fn answering(
    sup: &Supervisor,
    what: &str,
    game: &GameServer,
    t0: Instant,
) -> Result<bool, BenchError> {
    let st = sup.status();
    if let Some(bad) = st
        .instances
        .iter()
        .find(|i| i.state == InstanceState::Failed)
    {
        return Err(BenchError::Isolation(format!(
            "server {} of {what} failed to start: {}",
            bad.id,
            bad.last_exit.as_deref().unwrap_or("unknown")
        )));
    }
    if st
        .instances
        .iter()
        .all(|i| i.state == InstanceState::Running)
    {
        return Ok(true);
    }
    let servers = st.instances.len() as u32;
    let limit = game.start_limit(servers);
    if t0.elapsed() > limit {
        return Err(BenchError::Isolation(format!(
            "the {servers} servers of {what} did not all answer within {} s",
            limit.as_secs()
        )));
    }
    Ok(false)
}

/// How every server of a step is launched: its game's definition with
/// the step's tick rate, bots and players per server.
fn server_spec(game: &GameServer, s: &BenchSettings) -> Result<ServerSpec, BenchError> {
    let mut game = game.clone();
    let settings = &mut game.settings;
    settings.tick_hz = s.tick_hz;
    settings.bots = u16::try_from(s.bots_per_server).unwrap_or(u16::MAX);
    settings.players = u16::try_from(s.players_per_server).unwrap_or(u16::MAX);
    game.spec().map_err(BenchError::Config)
}

impl HostStepRunner<'_> {
    fn measure(
        &mut self,
        sup: &mut Supervisor,
        req: &StepRequest,
        poll: bool,
        s: &BenchSettings,
        game: &GameServer,
    ) -> Result<Option<Step>, BenchError> {
        let plan = self.plan;
        let stop = self.stop;
        let StepRequest {
            index,
            tiles,
            servers,
            baseline,
        } = *req;
        // Every instance answering before the players come.
        let t0 = Instant::now();
        loop {
            sup.poll();
            let what = format!("step {index}");
            if answering(sup, &what, game, t0)? {
                break;
            }
            // Woken by the first answers, an exit, or its own deadlines.
            sup.wait(Duration::from_millis(250));
        }
        // A load command of the user's plays instead of tickpack's players.
        let players_game = crate::game::players_game(game)
            .filter(|_| s.players_per_server > 0 && s.load.is_none());
        let mut players = if players_game.is_some() {
            servers * s.players_per_server
        } else {
            0
        };
        let warmup = Duration::from_secs_f64(s.warmup_s);
        let duration = Duration::from_secs_f64(s.step_duration_s);
        let pcfg = PlayersConfig {
            game: players_game.unwrap_or_default(),
            targets: sup.addresses(),
            source_addrs: sup.source_addresses(),
            per_source_limit: crate::game::per_source_limit(game),
            players: players as usize,
            duration,
            warmup,
            connect_timeout: warmup.max(Duration::from_secs(5)),
            threads: plan.load_generator_cpus.len().max(1),
            cpus: plan.load_generator_cpus.clone(),
            ..Default::default()
        };
        if players > 0 {
            pcfg.validate()
                .map_err(|e| BenchError::Config(e.to_string()))?;
        }
        let probe = probe_config(s, sup.addresses(), &plan.load_generator_cpus)?;
        let live = Arc::new(tickpack_players::Live::default());
        // The players and the prober, unprivileged ([`crate::readers`]),
        // ready before the step's clock starts.
        let user = sup.readers_user();
        let players_reader = (players > 0)
            .then(|| readers::start_players(&plan.exe, user, &pcfg))
            .transpose()?;
        let probe_reader = probe
            .as_ref()
            .map(|p| readers::start_probe(&plan.exe, user, Job::Probe(p.clone())))
            .transpose()?;
        let started = Instant::now();
        let power = &mut *self.power;
        let mut samples = BatchSamples::default();
        let proc = std::path::Path::new("/proc");
        let mut threads = ThreadSamplers {
            run_delay: tickpack_sys::RunDelaySampler::new(proc),
            own_cpu: OwnCpu::new(proc),
            seconds_p99_us: vec![],
        };
        let me = [std::process::id()];
        let loads = match &s.load {
            Some(l) => Some(crate::load::start(
                sup,
                l,
                s.tick_hz,
                s.warmup_s,
                s.step_duration_s,
                &plan.load_generator_cpus,
                &plan.exe,
            )?),
            None => None,
        };
        let (outcome, (cpu, steal, foreign, servers_percent), watts, probed) =
            std::thread::scope(|scope| {
                let h = players_reader
                    .map(|r| scope.spawn(|| readers::players_result(r.run(stop, Some(&live)))));
                let prober =
                    probe_reader.map(|r| scope.spawn(|| readers::probe_result(r.run(stop, None))));
                // Sample over the measured window only.
                wait_until(
                    sup,
                    poll,
                    started + warmup + Duration::from_millis(20),
                    stop,
                    &live,
                    None,
                    None,
                );
                // The threads' counters as the measured window starts.
                let pids = server_pids(sup);
                threads.run_delay.sample(&pids);
                threads.run_delay.reset();
                threads.own_cpu.start_window(&pids, &me);
                let started_power = power.start();
                wait_until(
                    sup,
                    poll,
                    started + warmup + duration,
                    stop,
                    &live,
                    Some(&mut samples),
                    Some(&mut threads),
                );
                // Exact figures on both sides ([`crate::foreign`]).
                let window = threads.own_cpu.end_window(&server_pids(sup), &me);
                let per_cpu = window.cpu.busy_percent();
                let steal = window.cpu.steal_percent();
                let foreign = window.foreign_percent;
                let servers_percent = window.servers_percent;
                // The power model sees the machine's busy share without the
                // foreign load: it models what the servers (and tickpack) draw.
                let machine = (mean_over(&per_cpu, &[]) - mean_over(&foreign, &[])).max(0.0);
                let watts = match started_power {
                    Ok(()) => power.watts_since_start(machine / 100.0).ok(),
                    Err(_) => None,
                };
                let outcome = h.map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(PlayersError::Internal("players panicked".into())))
                });
                let probed = prober.map(|p| {
                    p.join()
                        .unwrap_or_else(|_| Err("the prober panicked".to_string()))
                });
                (
                    outcome,
                    (per_cpu, steal, foreign, servers_percent),
                    watts,
                    probed,
                )
            });
        let loaded = loads.map(crate::load::finish);
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        // Still running: each server's peak memory so far.
        let server_peak_rss_bytes = sup
            .status()
            .instances
            .iter()
            .filter_map(|i| i.pid.and_then(tickpack_sys::tree_peak_rss_bytes))
            .max();
        let outcome = outcome.transpose().map_err(BenchError::Players)?;
        // A game tickpack cannot play has nothing from players; a load
        // command's samples stand for them.
        let played = |r: tickpack_report::PlayersResult| Played {
            connected: r.connected,
            load_generator_cpu_s: r.load_generator_cpu_s,
            measured: r.measured,
            histograms: r.histograms,
        };
        let mut r = match (&outcome, loaded.as_ref().and_then(|l| l.samples.clone())) {
            (Some(o), _) => played(o.clone()),
            (None, Some(samples)) => {
                players = samples.players;
                played(samples)
            }
            (None, None) => Played::default(),
        };
        r.load_generator_cpu_s += loaded.as_ref().map_or(0.0, |l| l.cpu_s);
        let run_delay = &threads.run_delay;
        let run_delay_us = (run_delay.intervals_recorded() > 0)
            .then(|| tickpack_report::Percentiles::from_histogram(run_delay.histogram()));
        let probed = probed.transpose().map_err(BenchError::Probe)?;
        // What the servers said they held: the bots that joined, not the
        // number asked.
        let clients_seen = probed.as_ref().and_then(|o| {
            let counts: Vec<u32> = o
                .targets
                .iter()
                .filter_map(|t| t.server.as_ref().and_then(|f| f.players))
                .collect();
            (!counts.is_empty()).then(|| counts.iter().sum())
        });
        let query = probed
            .as_ref()
            .map(|r| readers::merged_probe(r).map(|h| (h, r.queries)))
            .transpose()
            .map_err(|e| BenchError::Probe(e.to_string()))?;
        let query_latency = query
            .as_ref()
            .map(|(h, _)| tickpack_report::Percentiles::from_histogram(h));
        let figures = StepFigures::of(
            players,
            r.connected,
            s.tick_hz,
            &r.measured,
            query_latency.as_ref(),
            run_delay_us.as_ref(),
        )
        .with_run_delay_seconds(&threads.seconds_p99_us);
        let why = failures(&figures, baseline, &s.qos);
        let batch = sup.status().guard.map(|g| {
            let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            let cpu_percent = mean(&samples.batch_cpu);
            let servers_cpu_percent = mean(&samples.servers_cpu);
            let idle = plan.server_cpus.len() as f64 * 100.0 - servers_cpu_percent.unwrap_or(0.0);
            let round = |v: f64| (v * 10.0).round() / 10.0;
            StepBatch {
                control: g.control.clone(),
                bogo_ops_per_s: None,
                cpu_percent: cpu_percent.map(round),
                servers_cpu_percent: servers_cpu_percent.map(round),
                idle_share_percent: cpu_percent
                    .filter(|_| idle > 0.0)
                    .map(|b| round((b / idle * 100.0).min(100.0))),
                guard_decisions: g.decisions.clone(),
                guard_last: g
                    .last
                    .iter()
                    .map(|d| {
                        format!(
                            "{:.0} s {:?} {:.2}: {}",
                            d.at_ms as f64 / 1000.0,
                            d.action,
                            d.allowance.quota_cores,
                            d.reason
                        )
                        .to_lowercase()
                    })
                    .collect(),
            }
        });
        // The server cores' busy share is the servers' (and ours), not the
        // foreign load's.
        let less_foreign: Vec<f64> = cpu
            .iter()
            .enumerate()
            .map(|(c, b)| (b - foreign.get(c).copied().unwrap_or(0.0)).max(0.0))
            .collect();
        // The servers' own CPU, one figure for the step's line, rows and
        // idle verdict: schedstat's ns of their threads (clock ticks read
        // 0 for a light server); else cgroup samples, else ticks.
        let exact_own = (threads.run_delay.threads_tracked() > 0).then(|| {
            threads.run_delay.total_on_cpu_ns() as f64 / (s.step_duration_s * 1e9) * 100.0
        });
        let fallback = match samples.servers_cpu.len() {
            0 => servers_percent,
            n => samples.servers_cpu.iter().sum::<f64>() / n as f64,
        };
        let servers_own = exact_own
            .or(Some(fallback))
            .filter(|p| p.is_finite())
            .map(|p| (p * 1000.0).round() / 1000.0);
        // Servers with nothing to do give no density (but --allow-idle).
        let idle = if s.allow_idle {
            None
        } else {
            tickpack_report::qos::idle_reason(&tickpack_report::qos::StepLoad {
                players,
                servers,
                bots_asked: s.bots_per_server * servers,
                load_command: s.load.is_some(),
                clients_seen,
                servers_own_percent: exact_own.map(|p| (p * 1000.0).round() / 1000.0),
            })
        };
        let mut failures: Vec<String> = idle.iter().cloned().collect();
        failures.extend(why.iter().map(ToString::to_string));
        // A load command that crashed, never connected or ran on fails the
        // step: what it measured (if anything) is not what was asked.
        let load_failed = loaded.as_ref().is_some_and(|l| !l.failures.is_empty());
        if let Some(l) = &loaded {
            failures.extend(l.failures.iter().cloned());
        }
        Ok(Some(Step {
            index,
            tiles,
            servers,
            players,
            connected: (outcome.is_some() || players > 0).then_some(r.connected),
            verdict: if idle.is_some() {
                Verdict::Idle
            } else if load_failed {
                Verdict::Fail
            } else {
                Verdict::of(&why)
            },
            chosen: None,
            failures,
            first_attempt_failures: vec![],
            disturbed_attempts: vec![],
            attempts: vec![],
            disturbed: None,
            duration_s: s.step_duration_s,
            cpu: CpuUse {
                servers_busy_percent: (mean_over(&less_foreign, &plan.server_cpus) * 10.0).round()
                    / 10.0,
                machine_busy_percent: (mean_over(&cpu, &[]) * 10.0).round() / 10.0,
                per_cpu_percent: cpu,
                steal_percent: steal,
                load_generator_cpu_s: r.load_generator_cpu_s,
                servers_own_percent: servers_own,
                foreign_percent: Some(ForeignLoad::of_cores(&foreign, &plan.server_cpus)),
            },
            power: watts.map(|w| Power {
                watts: (w * 10.0).round() / 10.0,
                source: power.kind(),
            }),
            query_latency_us: query_latency,
            run_delay_us,
            run_delay_seconds_p99_us: threads.seconds_p99_us.clone(),
            queries: query.as_ref().map(|(_, c)| *c),
            clients_seen,
            batch,
            server_peak_rss_bytes,
            tile: None,
            measured: r.measured,
            histograms: tickpack_report::PlayersHistograms {
                query_latency_us: query
                    .as_ref()
                    .map(|(h, _)| tickpack_report::encode_histogram(h))
                    .unwrap_or_default(),
                run_delay_us: if run_delay.intervals_recorded() > 0 {
                    tickpack_report::encode_histogram(run_delay.histogram())
                } else {
                    String::new()
                },
                ..r.histograms
            },
        }))
    }
}

/// The prober of a step (`--probe`): every instance, at the polite rate,
/// over the measured window, on the load generator's CPUs.
fn probe_config(
    s: &BenchSettings,
    targets: Vec<std::net::SocketAddr>,
    cpus: &[usize],
) -> Result<Option<ProbeConfig>, BenchError> {
    let Some(name) = &s.probe else {
        return Ok(None);
    };
    let protocol: ProbeProtocol = name.parse().map_err(BenchError::Config)?;
    let polite = ProbeSettings::DEFAULT;
    Ok(Some(ProbeConfig {
        targets,
        protocol,
        interval: Duration::from_micros(polite.interval_us),
        timeout: Duration::from_micros(polite.timeout_us),
        duration: Duration::from_secs_f64(s.step_duration_s),
        // The players start 20 ms from now; queries start with their window.
        start_delay: Duration::from_secs_f64(s.warmup_s) + Duration::from_millis(20),
        cpus: cpus.to_vec(),
    }))
}

/// What the players of a step measured (nothing for a game without).
#[derive(Default)]
struct Played {
    connected: u32,
    load_generator_cpu_s: f64,
    measured: tickpack_report::Measurements,
    histograms: tickpack_report::PlayersHistograms,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::settings;

    #[test]
    fn the_steps_servers_are_launched_with_the_bench_settings() {
        let mut s = settings(1, 0, false);
        s.tick_hz = tickpack_report::bench::TickRate::new(64).unwrap();
        s.bots_per_server = 2;
        s.players_per_server = 10;
        let mut game = GameServer::default();
        game.settings.set(&game.def.clone(), "cost=light").unwrap();
        assert_eq!(
            server_spec(&game, &s).unwrap().template(),
            "{tickpack} server --bind {ip}:{port} --tick-hz 64 --bots 2 --max-players 12 --cost light --name tickpack-{id}"
        );
        s.tick_hz = tickpack_report::bench::TickRate::new(5000).unwrap();
        assert!(server_spec(&game, &s).is_err());
    }

    #[test]
    fn the_prober_asks_every_instance_politely_over_the_measured_window() {
        let mut s = settings(1, 0, false);
        let addrs: Vec<std::net::SocketAddr> = vec![
            "10.0.0.2:27015".parse().unwrap(),
            "10.0.0.3:27015".parse().unwrap(),
        ];
        assert!(probe_config(&s, addrs.clone(), &[0]).unwrap().is_none());
        s.probe = Some("a2s".into());
        s.warmup_s = 1.0;
        s.step_duration_s = 6.0;
        let p = probe_config(&s, addrs.clone(), &[0]).unwrap().unwrap();
        assert_eq!(p.protocol, tickpack_probe::Protocol::A2s.into());
        assert_eq!(p.targets, addrs);
        assert_eq!(p.cpus, vec![0], "on the load generator's CPUs");
        assert_eq!(p.interval, Duration::from_secs(2));
        assert_eq!(p.timeout, Duration::from_secs(1));
        assert_eq!(p.start_delay, Duration::from_millis(1020));
        assert_eq!(p.duration, Duration::from_secs(6));
        s.probe = Some("gamedig:unreal2".into());
        assert_eq!(
            probe_config(&s, addrs.clone(), &[0])
                .unwrap()
                .unwrap()
                .protocol,
            ProbeProtocol::Gamedig("unreal2".parse().unwrap())
        );
        s.probe = Some("gamespy".into());
        assert!(probe_config(&s, addrs, &[0]).is_err());
    }
}
