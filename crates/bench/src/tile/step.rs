//! One step of a tile run on this machine: `n` tiles, each member's
//! servers on a host of their own, each member's players coming and going
//! along its curve, the map changes sent when the curves say, and every
//! member judged in every window ([`super::judge`]).
//!
//! The measured span starts after the warm-up (every server answering,
//! the players present at the start joined) and is cut into windows of
//! the tile's length. Per window: the server cores' busy share
//! (`/proc/stat`), each member's servers' run delay (schedstat, sampled
//! every 100 ms), and, from the players, each member's transaction
//! latency, snapshots, joins and join times.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickpack_fleet::FleetPlan;
use tickpack_host::fleet::Backend;
use tickpack_host::supervisor::Supervisor;
use tickpack_players::{PlayersConfig, PlayersError};
use tickpack_report::bench::{CpuUse, Step};
use tickpack_report::tile::{HostWindow, LoadVariant, MemberStep, MemberWindow, TileStep};
use tickpack_report::verdict::Verdict;
use tickpack_report::Percentiles;

use super::judge::{judge, WindowFigures};
use super::presence;
use super::{member_host_name, member_range, member_run_dir, MemberPlan, TilePlan};
use crate::cpu::{mean_over, CpuReading, CpuWindow};
use crate::readers::{self, Done, Job};
use crate::spec::{LadderSpec, Plan, StepRequest};
use crate::step::{server_pids, RUN_DELAY_PERIOD};
use crate::BenchError;

/// One member's host and what the step made for it.
struct Member<'a> {
    plan: &'a MemberPlan,
    sup: Supervisor,
    timelines: Vec<tickpack_curve::Timeline>,
    run_delay: tickpack_sys::RunDelaySampler,
    windows: Vec<Option<Percentiles>>,
    events: Vec<String>,
    map_changes: Vec<(Duration, usize)>,
    next_map_change: usize,
    map_changes_by_window: Vec<u32>,
    /// The largest peak resident memory of one of its servers, read at
    /// the end of the measured span.
    peak_rss: Option<u64>,
}

/// The curve of a member in a variant: every player all the time for the
/// static reservation; the member's own curve, at each server's own
/// moments or all in step.
pub fn curve_for(m: &MemberPlan, load: LoadVariant) -> tickpack_curve::Curve {
    match load {
        LoadVariant::Static => tickpack_curve::Curve::steady(),
        LoadVariant::Phased => tickpack_curve::Curve {
            aligned: false,
            ..m.curve.clone()
        },
        LoadVariant::Aligned => tickpack_curve::Curve {
            aligned: true,
            ..m.curve.clone()
        },
    }
}

/// Runs step `req` of a tile ladder; `None` when interrupted.
pub fn run(
    plan: &Plan,
    tile: &TilePlan,
    spec: &LadderSpec,
    req: &StepRequest,
    stop: &Arc<AtomicBool>,
) -> Result<Option<Step>, BenchError> {
    let load = spec.load.unwrap_or(LoadVariant::Phased);
    let mut members: Vec<Member<'_>> = Vec::new();
    let result = (|| {
        for (m, mp) in tile.members.iter().enumerate() {
            members.push(start_member(plan, tile, spec, req, m, mp, load)?);
        }
        wait_running(&mut members, req, stop)?;
        measure(plan, tile, &mut members, req, load, stop)
    })();
    let mut problems = Vec::new();
    for m in members {
        problems.extend(m.sup.shutdown());
    }
    if !problems.is_empty() {
        return Err(BenchError::Isolation(format!(
            "could not remove the step's servers: {}",
            problems.join("; ")
        )));
    }
    result
}

#[allow(clippy::too_many_arguments)]
fn start_member<'a>(
    plan: &Plan,
    tile: &TilePlan,
    spec: &LadderSpec,
    req: &StepRequest,
    m: usize,
    mp: &'a MemberPlan,
    load: LoadVariant,
) -> Result<Member<'a>, BenchError> {
    let servers = mp.count * req.tiles;
    let mut game = mp.game.clone();
    game.settings.tick_hz = mp.tick;
    game.settings.bots = u16::try_from(mp.bots).unwrap_or(u16::MAX);
    game.settings.players = u16::try_from(mp.players).unwrap_or(u16::MAX);
    let server = game.spec().map_err(BenchError::Config)?;
    let run_dir = member_run_dir(&plan.run_dir, m);
    std::fs::create_dir_all(&run_dir)
        .map_err(|e| BenchError::Config(format!("cannot create {}: {e}", run_dir.display())))?;
    let mut fleet = FleetPlan {
        name: Some(member_host_name(&plan.host_name, m)),
        instances: Some(servers),
        backend: Some(spec.backend),
        net: Some(spec.net),
        placement: Some(spec.placement),
        reserved_cpus: Some(plan.load_generator_cpus.clone()),
        game: game.clone(),
        server: Some(server),
        port: Some(if spec.backend == Backend::Process {
            47015 + 100 * m as u16
        } else {
            game.port()
        }),
        run_dir: Some(run_dir.clone()),
        range: Some(member_range(plan.range.as_deref(), m).map_err(BenchError::Config)?),
        // Batch work runs beside the first member's servers.
        batch: if m == 0 {
            spec.batch.map(|_| plan.batch.clone()).unwrap_or_default()
        } else {
            vec![]
        },
        // ...and under its guard; the other members' hosts have no batch
        // and so no guard (a guard without a batch is refused).
        batch_control: if m == 0 {
            spec.batch.unwrap_or_default()
        } else {
            Default::default()
        },
        // Players who come and go get twice the source addresses their
        // game's limit per address asks for: the slot of one who just left
        // may linger on the server until it lets it go, and the next join
        // from that address must still find room.
        source_addrs: if mp.idle {
            0
        } else if mp.curve == tickpack_curve::Curve::steady() {
            crate::game::source_addrs_for(&game, mp.players)
        } else {
            crate::game::source_addrs_for(&game, mp.players * 2)
        },
        ..Default::default()
    }
    .build(&run_dir)
    .map_err(|e| BenchError::Config(format!("member {}: {e}", mp.name)))?;
    fleet.restart.start_timeout_s = fleet
        .restart
        .start_timeout_s
        .max(game.start_limit(servers).as_secs_f64());
    let sup =
        Supervisor::start_with_policy(fleet, plan.exe.clone(), Some(tickpack_guard::policy()))
            .map_err(BenchError::Host)?;
    let curve = curve_for(mp, load);
    let seats = if mp.idle {
        0
    } else {
        u16::try_from(mp.players).unwrap_or(u16::MAX)
    };
    // Each server's number in the step is unique across members, so no
    // two servers share a phase unless the curve is aligned.
    let timelines: Vec<_> = (0..servers)
        .map(|s| curve.timeline(tile.seed, (m as u64) << 32 | u64::from(s), seats, tile.step))
        .collect();
    let windows = tickpack_curve::windows(tile.step, tile.window).len();
    let map_changes = presence::map_changes(&timelines);
    Ok(Member {
        plan: mp,
        sup,
        timelines,
        run_delay: tickpack_sys::RunDelaySampler::new(std::path::Path::new("/proc")),
        windows: vec![None; windows],
        events: vec![],
        map_changes,
        next_map_change: 0,
        map_changes_by_window: vec![0; windows],
        peak_rss: None,
    })
}

/// Every member's servers answering, or the step's error.
fn wait_running(
    members: &mut [Member<'_>],
    req: &StepRequest,
    stop: &AtomicBool,
) -> Result<(), BenchError> {
    let t0 = Instant::now();
    loop {
        let mut all = true;
        for m in members.iter_mut() {
            m.sup.poll();
            let what = format!("member {} in step {}", m.plan.name, req.index);
            all &= crate::step::answering(&m.sup, &what, &m.plan.game, t0)?;
        }
        if all || stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        // Woken by the first answers, an exit, or the hosts' deadlines.
        let mut sups: Vec<&mut Supervisor> = members.iter_mut().map(|m| &mut m.sup).collect();
        Supervisor::wait_any(&mut sups, Duration::from_millis(250));
    }
}

/// The players of one member, if it has any.
fn players_config(
    plan: &Plan,
    tile: &TilePlan,
    m: &Member<'_>,
) -> Result<Option<PlayersConfig>, BenchError> {
    let Some(protocol) = crate::game::players_game(&m.plan.game) else {
        return Ok(None);
    };
    if m.plan.idle || m.plan.players == 0 {
        return Ok(None);
    }
    let spans = presence::player_spans(&m.timelines);
    let cfg = PlayersConfig {
        game: protocol,
        targets: m.sup.addresses(),
        source_addrs: m.sup.source_addresses(),
        per_source_limit: crate::game::per_source_limit(&m.plan.game),
        players: spans.len(),
        duration: tile.step,
        warmup: tile.warmup,
        connect_timeout: tile.warmup.max(Duration::from_secs(5)),
        threads: 1,
        cpus: plan.load_generator_cpus.clone(),
        // The curves count from the measured span's start; the players
        // from the run's (the warm-up's). A player present when the span
        // starts joins at once, during the warm-up.
        presence: Some(tickpack_players::PresencePlan::since_run_start(
            spans
                .into_iter()
                .map(|v| {
                    v.into_iter()
                        .map(|s| tickpack_players::PresenceSpan {
                            from: if s.from.is_zero() {
                                Duration::ZERO
                            } else {
                                s.from + tile.warmup
                            },
                            until: s.until + tile.warmup,
                        })
                        .collect()
                })
                .collect(),
        )),
        window: Some(tile.window),
        join_timeout: Some(m.plan.max_join),
        seed: tile.seed ^ u64::from(m.plan.count),
        ..Default::default()
    };
    cfg.validate()
        .map_err(|e| BenchError::Config(format!("member {}: {e}", m.plan.name)))?;
    Ok(Some(cfg))
}

fn measure(
    plan: &Plan,
    tile: &TilePlan,
    members: &mut [Member<'_>],
    req: &StepRequest,
    load: LoadVariant,
    stop: &Arc<AtomicBool>,
) -> Result<Option<Step>, BenchError> {
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let configs: Vec<Option<PlayersConfig>> = members
        .iter()
        .map(|m| players_config(plan, tile, m))
        .collect::<Result<_, _>>()?;
    let windows = tickpack_curve::windows(tile.step, tile.window);
    let lives: Vec<Arc<tickpack_players::Live>> = configs
        .iter()
        .map(|_| Arc::new(tickpack_players::Live::default()))
        .collect();
    let probes: Vec<Option<tickpack_probe::ProbeConfig>> = members
        .iter()
        .map(|m| probe_config(plan, tile, m))
        .collect::<Result<_, _>>()?;
    // Each member's players and prober, unprivileged as its host's readers
    // ([`crate::readers`]), ready before the step's clock starts.
    let span_offset = tile.warmup + Duration::from_millis(20);
    let mut players = Vec::with_capacity(members.len());
    let mut probers = Vec::with_capacity(members.len());
    for ((m, c), p) in members.iter().zip(&configs).zip(&probes) {
        let user = m.sup.readers_user();
        players.push(
            c.as_ref()
                .map(|c| readers::start_players(&plan.exe, user, c))
                .transpose()?,
        );
        let job = |cfg: &tickpack_probe::ProbeConfig| Job::ProbeWindows {
            cfg: cfg.clone(),
            windows: windows.clone(),
            span_offset,
        };
        probers.push(
            p.as_ref()
                .map(|p| readers::start_probe(&plan.exe, user, job(p)))
                .transpose()?,
        );
    }
    let started = Instant::now();
    let span_start = started + span_offset;
    let mut host_windows: Vec<HostWindow> = Vec::with_capacity(windows.len());
    let mut step_cpu: Option<(CpuReading, CpuReading)> = None;
    let mut queried: Vec<Vec<Option<Percentiles>>> = vec![vec![]; members.len()];
    let outcomes = std::thread::scope(|scope| {
        let probers: Vec<_> = probers
            .into_iter()
            .map(|p| {
                p.map(|p| {
                    // A prober that failed answered no window.
                    scope.spawn(|| match p.run(stop, None) {
                        Ok(Done::ProbeWindows(w)) if w.len() == windows.len() => w,
                        _ => vec![None; windows.len()],
                    })
                })
            })
            .collect();
        let handles: Vec<_> = players
            .into_iter()
            .zip(&lives)
            .map(|(r, live)| {
                r.map(|r| scope.spawn(move || readers::players_result(r.run(stop, Some(live)))))
            })
            .collect();
        sleep_until(span_start, stop);
        for m in members.iter_mut() {
            let pids = server_pids(&m.sup);
            m.run_delay.sample(&pids);
            m.run_delay.reset();
        }
        let first = CpuReading::read();
        let mut before = first.clone();
        for (w, &(from, until)) in windows.iter().enumerate() {
            let end = span_start + until;
            let mut next_sample = Instant::now() + RUN_DELAY_PERIOD;
            while Instant::now() < end && !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now >= next_sample {
                    next_sample += RUN_DELAY_PERIOD;
                    for m in members.iter_mut() {
                        let pids = server_pids(&m.sup);
                        m.run_delay.sample(&pids);
                    }
                }
                let at = now.saturating_duration_since(span_start);
                for m in members.iter_mut() {
                    send_due_map_changes(m, at, w);
                    m.sup.poll();
                }
                // The hosts' own driver: woken by what needs one of them,
                // no later than the next sample.
                let left = next_sample
                    .min(end)
                    .saturating_duration_since(Instant::now());
                let mut sups: Vec<&mut Supervisor> =
                    members.iter_mut().map(|m| &mut m.sup).collect();
                Supervisor::wait_any(&mut sups, left);
            }
            let after = CpuReading::read();
            let cpu = CpuWindow::between(&before, &after);
            let busy = mean_over(&cpu.busy_percent(), &plan.server_cpus);
            let present: f64 = members
                .iter()
                .map(|m| presence::present_in(&m.timelines, from, until))
                .sum();
            let batch = members
                .first()
                .and_then(|m| m.sup.status().guard)
                .and_then(|g| g.batch_cpu_percent);
            host_windows.push(HostWindow {
                start_s: from.as_secs_f64(),
                end_s: until.as_secs_f64(),
                servers_busy_percent: Some((busy * 10.0).round() / 10.0),
                batch_cpu_percent: batch.map(|b| (b * 10.0).round() / 10.0),
                players_present: (present * 10.0).round() / 10.0,
            });
            for m in members.iter_mut() {
                m.windows[w] = (m.run_delay.intervals_recorded() > 0)
                    .then(|| Percentiles::from_histogram(m.run_delay.histogram()));
                m.run_delay.reset();
            }
            before = after;
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        step_cpu = Some((first, before));
        for (q, p) in queried.iter_mut().zip(probers) {
            if let Some(p) = p {
                *q = p.join().unwrap_or_default();
            }
        }
        for m in members.iter_mut() {
            m.peak_rss = m
                .sup
                .status()
                .instances
                .iter()
                .filter_map(|i| i.pid.and_then(tickpack_sys::tree_peak_rss_bytes))
                .max();
        }
        handles
            .into_iter()
            .map(|h| {
                h.map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(PlayersError::Internal("players panicked".into())))
                })
            })
            .collect::<Vec<_>>()
    });
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let mut results = Vec::new();
    for o in outcomes {
        results.push(o.transpose().map_err(BenchError::Players)?);
    }
    let member_steps: Vec<MemberStep> = members
        .iter()
        .zip(&results)
        .zip(&queried)
        .map(|((m, r), q)| member_step(m, r.as_ref(), q, &windows))
        .collect();
    let failure = TileStep::first_failure(&member_steps);
    let (first, last) = step_cpu.expect("the measuring loop ran");
    let cpu = CpuWindow::between(&first, &last);
    let per_cpu = cpu.busy_percent();
    let steal = cpu.steal_percent();
    let merged = merge_players(&results);
    let players: u32 = configs.iter().flatten().map(|c| c.players as u32).sum();
    let connected = results.iter().flatten().map(|r| r.connected).sum();
    let mut failures: Vec<String> = failure.iter().map(ToString::to_string).collect();
    for m in &member_steps {
        failures.extend(m.events.iter().map(|e| format!("{}: {e}", m.name)));
    }
    let verdict = if failures.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    let servers = req.servers;
    Ok(Some(Step {
        tiles: req.tiles,
        connected: (players > 0).then_some(connected),
        verdict,
        failures,
        duration_s: tile.step.as_secs_f64(),
        measured: merged.0,
        cpu: CpuUse {
            servers_busy_percent: (mean_over(&per_cpu, &plan.server_cpus) * 10.0).round() / 10.0,
            machine_busy_percent: (mean_over(&per_cpu, &[]) * 10.0).round() / 10.0,
            per_cpu_percent: per_cpu,
            steal_percent: steal,
            load_generator_cpu_s: results
                .iter()
                .flatten()
                .map(|r| r.load_generator_cpu_s)
                .sum(),
            servers_own_percent: None,
            foreign_percent: None,
        },
        server_peak_rss_bytes: members.iter().filter_map(|m| m.peak_rss).max(),
        histograms: merged.1,
        tile: Some(TileStep {
            load,
            window_s: tile.window.as_secs_f64(),
            peak_to_mean_cpu: TileStep::peak_to_mean(&host_windows),
            windows: host_windows,
            members: member_steps,
            failure,
        }),
        ..Step::passed(req.index, servers, players)
    }))
}

/// Sends member `m`'s map changes due by `at` (in window `w`).
fn send_due_map_changes(m: &mut Member<'_>, at: Duration, w: usize) {
    while let Some(&(due, server)) = m.map_changes.get(m.next_map_change) {
        if due > at {
            break;
        }
        m.next_map_change += 1;
        m.map_changes_by_window[w] += 1;
        if let Err(e) = m.sup.change_map(server as u32 + 1) {
            m.events.push(format!(
                "{:.1} s: the map change of server {} failed: {e}",
                due.as_secs_f64(),
                server + 1
            ));
        }
    }
}

/// One member's windows, judged.
fn member_step(
    m: &Member<'_>,
    r: Option<&tickpack_report::PlayersResult>,
    queried: &[Option<Percentiles>],
    windows: &[(Duration, Duration)],
) -> MemberStep {
    let wins = windows
        .iter()
        .enumerate()
        .map(|(w, &(from, until))| {
            let mut f = r
                .and_then(|r| r.windows.get(w))
                .map(WindowFigures::from_players_window)
                .unwrap_or_default();
            f.players_present = presence::present_in(&m.timelines, from, until);
            f.run_delay_us = m.windows.get(w).copied().flatten();
            f.query_us = queried.get(w).copied().flatten();
            // A window in which no query came back is not judged on the
            // query unless the one before was silent too: a few polite
            // queries a window, and an engine's own pause (one DarkPlaces game's at its
            // match start) must not fail the step; a server silent for two
            // windows in a row does.
            let silent = |w: usize| queried.get(w).copied().flatten().is_none();
            let mut qos = m.plan.qos;
            if silent(w) && !(w > 0 && silent(w - 1)) {
                qos.p99_query_us = None;
            }
            let failures = judge(&f, &qos, m.plan.tick, m.plan.max_join.as_micros() as u64);
            MemberWindow {
                start_s: from.as_secs_f64(),
                end_s: until.as_secs_f64(),
                players_present: (f.players_present * 10.0).round() / 10.0,
                joins: f.joins,
                failed_joins: f.failed_joins,
                join_p99_us: f.join_us.filter(|p| p.count > 0).map(|p| p.p99),
                transaction_p99_us: (f.measured.transaction_latency_us.count > 0)
                    .then_some(f.measured.transaction_latency_us.p99),
                server_frame_p99_us: (f.measured.server_frame_us.count > 0)
                    .then_some(f.measured.server_frame_us.p99),
                run_delay_p99_us: f.run_delay_us.map(|p| p.p99),
                snapshots_expected: f.measured.snapshots.expected,
                snapshots_lost: f.measured.snapshots.lost,
                map_changes: m.map_changes_by_window.get(w).copied().unwrap_or(0),
                failures,
            }
        })
        .collect();
    MemberStep {
        name: m.plan.name.clone(),
        servers: m.timelines.len() as u32,
        server_peak_rss_bytes: m.peak_rss,
        windows: wins,
        events: m.events.clone(),
    }
}

/// Every member's players' figures merged (the step's usual figures).
fn merge_players(
    results: &[Option<tickpack_report::PlayersResult>],
) -> (
    tickpack_report::Measurements,
    tickpack_report::PlayersHistograms,
) {
    let sources: Vec<(String, tickpack_report::PlayersResult)> = results
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, r)| (format!("member {i}"), r.clone()))
        .collect();
    match tickpack_report::merge::merge_players(&sources) {
        Ok(r) => (r.measured, r.histograms),
        Err(_) => Default::default(),
    }
}

pub(crate) fn sleep_until(t: Instant, stop: &AtomicBool) {
    while Instant::now() < t && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(
            t.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50)),
        );
    }
}

/// The prober of a member judged on its query (an idle lobby, bots
/// only): its servers, at the polite rate, on the load generator's CPUs.
fn probe_config(
    plan: &Plan,
    tile: &TilePlan,
    m: &Member<'_>,
) -> Result<Option<tickpack_probe::ProbeConfig>, BenchError> {
    if m.plan.qos.p99_query_us.is_none() {
        return Ok(None);
    }
    let Some(name) = crate::plan::game::query_probe_name(&m.plan.game) else {
        return Ok(None);
    };
    let protocol: tickpack_probe::ProbeProtocol = name.parse().map_err(BenchError::Config)?;
    let polite = tickpack_probe::ProbeSettings::DEFAULT;
    Ok(Some(tickpack_probe::ProbeConfig {
        targets: m.sup.addresses(),
        protocol,
        interval: Duration::from_micros(polite.interval_us),
        timeout: Duration::from_micros(polite.timeout_us),
        duration: tile.window,
        start_delay: Duration::ZERO,
        cpus: plan.load_generator_cpus.clone(),
    }))
}
