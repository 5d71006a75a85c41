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
    /// The server cores' busy share (what the headroom target reads).
    pub cpu_busy_percent: f64,
    /// The servers' own CPU, % of one core, summed over the servers: the
    /// figure every format shows as the servers' CPU and the idle verdict
    /// reads (`cpu.servers_own_percent`, their threads' on-CPU time from
    /// schedstat); `None` in results from before it was recorded.
    pub servers_cpu_percent: Option<f64>,
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
            servers_cpu_percent: s.cpu.servers_own_percent,
            watts: s.power.as_ref().map(|p| (p.watts, p.source.is_measured())),
        }
    }

    /// The servers' CPU in words, as the step's line and the terminal's
    /// table say it: "0.04% of a core" (the servers' own), or, for a
    /// result from before it was recorded, "cores 12% busy".
    pub fn cpu_words(&self) -> String {
        match self.servers_cpu_percent {
            Some(p) => format!("{}% of a core", crate::numbers::fmt_num(p)),
            None => format!(
                "cores {}% busy",
                crate::numbers::fmt_num(self.cpu_busy_percent)
            ),
        }
    }
}
