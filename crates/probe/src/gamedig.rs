//! The prober's loop for a gamedig protocol: the same schedule, counts and
//! result as tickpack's own protocols ([`crate::run`]), each query one
//! call of `tickpack-gamedig-query`'s [`Driver`] (a thread per call, behind
//! `catch_unwind`, abandoned at its deadline).
//!
//! Per target: one query in flight; queries on a fixed schedule (the
//! first ones spread over one interval), no catch-up burst; the deadline
//! is the timeout capped at the interval; a call that overruns it is lost
//! (gamedig cannot be cancelled, so its thread is abandoned, and the
//! driver bounds how many such threads live at once: a query it refuses
//! is lost too). An answer's round trip is timed by the driver around
//! gamedig's call: socket set-up, every round trip of the query (A2S: the
//! challenge too) and parsing. This thread only schedules and collects,
//! waking every few milliseconds while queries are in flight; the CPU
//! time it reports leaves out the calls' own threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tickpack_game::GamedigProtocol;
use tickpack_gamedig_query::{Driver, Pending, QueryError, MAX_RUNNING};
use tickpack_net::clock::now_us;
use tickpack_report::probe::ServerFacts;

use crate::figures::TargetFigures;
use crate::loop_clock::{thread_rusage_ns, INTERRUPT_DRAIN_US};
use crate::{Live, ProbeConfig, ProbeError, ProbeOutcome};

/// How often the loop looks at calls in flight (their round trips are
/// timed on their own threads, so this costs no precision).
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// One target of the gamedig loop.
struct Target {
    figures: TargetFigures,
    /// When its next query is due, µs.
    due: u64,
    in_flight: Option<Pending>,
}

impl Target {
    fn lose(&mut self, e: &QueryError, live: &Live) {
        self.figures.counts.lost += 1;
        live.lost.fetch_add(1, Ordering::Relaxed);
        if !matches!(e, QueryError::Timeout(_)) {
            self.figures.last_error = Some(e.to_string());
        }
    }
}

/// Probes `cfg.targets` with `protocol` until the duration ends or `stop`
/// is set.
pub fn run(
    cfg: &ProbeConfig,
    protocol: GamedigProtocol,
    stop: &AtomicBool,
    live: &Live,
) -> Result<ProbeOutcome, ProbeError> {
    if !cfg.cpus.is_empty() {
        tickpack_net::cpu::pin_current_thread(&cfg.cpus)
            .map_err(|e| ProbeError::Setup(e.to_string()))?;
    }
    if let Some(a) = cfg.targets.iter().find(|a| a.is_ipv6()) {
        return Err(ProbeError::Setup(format!(
            "{a}: gamedig asks IPv4 addresses only"
        )));
    }
    let driver = Driver::new(protocol, MAX_RUNNING.max(cfg.targets.len()))
        .map_err(|e| ProbeError::Setup(e.to_string()))?;
    let cpu0 = thread_rusage_ns();
    let settings = cfg.settings();
    let interval = settings.interval_us.max(1);
    let timeout_us = settings.effective_timeout_us();
    let timeout = Duration::from_micros(timeout_us);
    let schedule = tickpack_game::query::Schedule {
        interval: Duration::from_micros(interval),
        timeout,
    };
    let start = now_us() + cfg.start_delay.as_micros() as u64;
    let mut stop_sending = start + cfg.duration.as_micros() as u64;
    let n = cfg.targets.len().max(1) as u64;
    let mut targets: Vec<Target> = cfg
        .targets
        .iter()
        .enumerate()
        .map(|(i, &addr)| Target {
            figures: TargetFigures::new(addr),
            due: start + interval * i as u64 / n,
            in_flight: None,
        })
        .collect();
    let mut end = stop_sending + timeout_us;
    let mut interrupted = false;
    loop {
        let now = now_us();
        if !interrupted && stop.load(Ordering::Relaxed) {
            interrupted = true;
            stop_sending = stop_sending.min(now);
            end = end.min(now + INTERRUPT_DRAIN_US.min(timeout_us));
        }
        for t in &mut targets {
            collect(t, live);
        }
        if now >= end || (now >= stop_sending && targets.iter().all(|t| t.in_flight.is_none())) {
            break;
        }
        for t in &mut targets {
            if t.in_flight.is_some() || now < t.due || t.due >= stop_sending {
                continue;
            }
            // The query session's rule (no catch-up burst).
            t.due = schedule
                .next_due(Duration::from_micros(t.due), Duration::from_micros(now))
                .as_micros() as u64;
            t.figures.counts.sent += 1;
            live.sent.fetch_add(1, Ordering::Relaxed);
            match driver.start(t.figures.addr, timeout) {
                Ok(p) => t.in_flight = Some(p),
                Err(e) => t.lose(&e, live),
            }
        }
        let next = targets
            .iter()
            .filter(|t| t.in_flight.is_none() && t.due < stop_sending)
            .map(|t| t.due)
            .min()
            .unwrap_or(u64::MAX)
            .min(end);
        let busy = targets.iter().any(|t| t.in_flight.is_some());
        let mut wait = Duration::from_micros(next.saturating_sub(now_us()));
        if busy || wait > Duration::from_millis(50) {
            // Look at calls in flight and at `stop` often enough.
            wait = wait.min(if busy {
                LOOK_EVERY
            } else {
                Duration::from_millis(50)
            });
        }
        std::thread::sleep(wait);
    }
    // A query still in flight (an interrupted run) is not counted.
    for t in &mut targets {
        collect(t, live);
        if t.in_flight.take().is_some() {
            t.figures.counts.sent -= 1;
        }
    }
    Ok(ProbeOutcome {
        refused: vec![false; targets.len()],
        targets: targets.into_iter().map(|t| t.figures).collect(),
        window: (start, stop_sending.max(start)),
        interrupted,
        cpu_time_ns: thread_rusage_ns().saturating_sub(cpu0),
    })
}

/// Takes the result of `t`'s query in flight, if it has one (or its
/// deadline has passed).
fn collect(t: &mut Target, live: &Live) {
    let Some(p) = &t.in_flight else {
        return;
    };
    let Some(result) = p.poll(Instant::now()) else {
        return;
    };
    t.in_flight = None;
    match result {
        Ok(a) => {
            tickpack_report::record(&mut t.figures.hist, a.rtt.as_micros() as u64);
            t.figures.counts.answered += 1;
            live.answered.fetch_add(1, Ordering::Relaxed);
            t.figures.facts = Some(ServerFacts {
                name: a.name,
                map: a.map,
                players: a.players,
                max_players: a.max_players,
                bots: a.bots.unwrap_or(0),
            });
            t.figures.last_error = None;
        }
        Err(e) => t.lose(&e, live),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::tests::{loop_config, with_loopback_responder};
    use crate::ProbeProtocol;
    use tickpack_wire::a2s::{self, fixtures};

    /// A loopback socket that answers A2S as `tickpack server` does (the
    /// challenge, then the info), so the loop is tested without a server.
    #[test]
    fn the_gamedig_loop_measures_a_loopback_responder_and_stops_on_time() {
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let live = Live::default();
        let out = with_loopback_responder(
            |query| match a2s::Query::decode(query) {
                Ok(a2s::Query::Info { challenge: None }) => fixtures::challenge(7),
                _ => fixtures::info(&fixtures::lan_server(3)),
            },
            |addr| {
                let cfg = loop_config(
                    vec![addr, silent.local_addr().unwrap()],
                    ProbeProtocol::Gamedig(GamedigProtocol::from_name("valve").unwrap()),
                );
                crate::run(&cfg, &AtomicBool::new(false), &live)
            },
        )
        .unwrap();
        let (answering, quiet) = (&out.targets[0], &out.targets[1]);
        let c = answering.counts();
        // 0, 100, 200, 300, 400 ms: five queries at most, never a burst.
        assert!((1..=5).contains(&c.sent), "{c:?}");
        assert_eq!(c.answered + c.lost, c.sent);
        assert_eq!(answering.histogram().len(), c.answered);
        if c.answered > 0 {
            let f = answering.facts().unwrap();
            assert_eq!((f.map.as_str(), f.players, f.bots), ("lan", Some(3), 1));
        }
        let q = quiet.counts();
        assert!(q.sent >= 1 && q.answered == 0 && q.lost == q.sent, "{q:?}");
        assert_eq!(live.sent.load(Ordering::Relaxed), c.sent + q.sent);
        assert!(!out.interrupted);
    }
}
