//! One step's row, built once from a [`Step`]: the figures every table of
//! steps shows (the terminal's and the HTML report's), each `None` where
//! the step measured nothing (n/a, never 0). The formats only format.

use crate::bench::Step;

/// The cells of one step's row: latencies in microseconds (each format
/// says them in its own way), shares in percent.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    pub index: u32,
    pub servers: u32,
    pub players: u32,
    pub verdict: crate::verdict::Verdict,
    /// Transaction latency p50, p99, p99.9; `None`: no players, none measured.
    pub latency_us: Option<[u64; 3]>,
    /// Tick lateness p99; `None`: the servers report none (a real game).
    pub tick_lateness_p99_us: Option<u64>,
    /// Server frame time p99; `None`: the servers report none.
    pub server_frame_p99_us: Option<u64>,
    /// The server cores' busy share.
    pub cpu_busy_percent: f64,
    /// Watts, and whether they were measured (else modeled).
    pub watts: Option<(f64, bool)>,
}

impl StepRow {
    pub fn of(s: &Step) -> StepRow {
        let reported = |p: &crate::Percentiles| (p.count > 0).then_some(p.p99);
        let t = &s.transaction_latency_us;
        StepRow {
            index: s.index,
            servers: s.servers,
            players: s.players,
            verdict: s.verdict,
            latency_us: (s.players > 0 && t.count > 0).then_some([t.p50, t.p99, t.p999]),
            tick_lateness_p99_us: reported(&s.tick_lateness_us),
            server_frame_p99_us: reported(&s.server_frame_us),
            cpu_busy_percent: s.cpu.servers_busy_percent,
            watts: s.power.as_ref().map(|p| (p.watts, p.source.is_measured())),
        }
    }
}
