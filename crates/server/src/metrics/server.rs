//! The Prometheus families of one game server (names and labels are read
//! by scripts and tests: keep them).

use hdrhistogram::Histogram;
use prometheus::proto::MetricFamily;
use tickpack_sim::{Ask, Server};

use super::{family, single, summary, Kind};
use crate::drain::DrainCounters;

/// Seconds of a histogram of microseconds: (sum, count).
fn sum_count(h: &Histogram<u64>) -> (f64, u64) {
    (h.mean() * h.len() as f64 / 1e6, h.len())
}

/// The families of `server` at `now_us`, with the drain counters of its
/// driver.
pub fn families(server: &Server, drains: &DrainCounters, now_us: u64) -> Vec<MetricFamily> {
    let s = server.stats(now_us);
    let c = server.counters();
    let q = |p50: u32, p99: u32, max: u32| {
        [
            (0.5, f64::from(p50) / 1e6),
            (0.99, f64::from(p99) / 1e6),
            (1.0, f64::from(max) / 1e6),
        ]
    };
    let (frame_sum, frame_count) = sum_count(server.frame_histogram());
    let (late_sum, late_count) = sum_count(server.lateness_histogram());
    let by_ask = |by: &[u64; 4]| -> Vec<(&'static str, f64)> {
        Ask::ALL
            .iter()
            .map(|k| (k.name(), by[k.index()] as f64))
            .collect()
    };
    let limited = |name: &str, help: &str, by: &[u64; 4]| {
        let rows: Vec<([(&str, &str); 1], f64)> = by_ask(by)
            .into_iter()
            .map(|(ask, v)| ([("ask", ask)], v))
            .collect();
        family(
            name,
            help,
            Kind::Counter,
            rows.iter().map(|(l, v)| (&l[..], *v)),
        )
    };
    vec![
        single("tickpack_ticks_total", "Ticks run.", Kind::Counter, s.tick as f64),
        single(
            "tickpack_skipped_slots_total",
            "Tick slots the schedule passed without a tick (the server stalled a whole tick or more): a snapshot lost for every player.",
            Kind::Counter,
            server.skipped_slots() as f64,
        ),
        single(
            "tickpack_players",
            "Connected human players.",
            Kind::Gauge,
            f64::from(s.players),
        ),
        single("tickpack_bots", "Server-side bots.", Kind::Gauge, f64::from(s.bots)),
        summary(
            "tickpack_frame_seconds",
            "Server processing time per tick.",
            &q(s.frame_p50_us, s.frame_p99_us, s.frame_max_us),
            frame_sum,
            frame_count,
        ),
        summary(
            "tickpack_tick_lateness_seconds",
            "How late ticks started.",
            &q(s.lateness_p50_us, s.lateness_p99_us, s.lateness_max_us),
            late_sum,
            late_count,
        ),
        single(
            "tickpack_overruns_total",
            "Ticks longer than the tick interval.",
            Kind::Counter,
            s.overruns as f64,
        ),
        single(
            "tickpack_packets_received_total",
            "Datagrams received.",
            Kind::Counter,
            c.packets_in as f64,
        ),
        single(
            "tickpack_packets_sent_total",
            "Datagrams sent.",
            Kind::Counter,
            c.packets_out as f64,
        ),
        single(
            "tickpack_malformed_total",
            "Datagrams dropped as malformed or not allowed.",
            Kind::Counter,
            c.malformed as f64,
        ),
        single(
            "tickpack_amplification_drops_total",
            "Replies withheld from unproven sources.",
            Kind::Counter,
            c.amplification_drops as f64,
        ),
        limited(
            "tickpack_rate_limited_source_total",
            "Requests from unproven sources dropped because their source exceeded its own rate.",
            &c.flood.source_limited,
        ),
        limited(
            "tickpack_rate_limited_global_total",
            "Requests from unproven sources dropped because all unproven sources together exceeded the global budget.",
            &c.flood.budget_limited,
        ),
        family(
            "tickpack_health_checks_total",
            "The host's keyed health checks: answered, dropped past their budget, or refused as stale (a replay, or older than the last answered).",
            Kind::Counter,
            [
                (&[("result", "answered")][..], c.health_checks as f64),
                (&[("result", "over_budget")][..], c.health_limited as f64),
                (&[("result", "stale")][..], c.health_stale as f64),
            ],
        ),
        single(
            "tickpack_socket_drops_total",
            "Datagrams the kernel dropped because the receive buffer was full.",
            Kind::Counter,
            s.socket_drops as f64,
        ),
        family(
            "tickpack_drain_cut_total",
            "Receive drains stopped before the socket was empty, so the tick runs on time.",
            Kind::Counter,
            [
                (&[("reason", "deadline")][..], drains.deadline as f64),
                (&[("reason", "budget")][..], drains.budget as f64),
            ],
        ),
        single(
            "tickpack_cpu_seconds_total",
            "CPU time used by the server process.",
            Kind::Counter,
            s.cpu_time_us as f64 / 1e6,
        ),
    ]
}
