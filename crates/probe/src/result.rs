//! A probe run as the result document (`tickpack.probe/1`), and the
//! merged figures a bench step records.

use hdrhistogram::Histogram;
use tickpack_report::probe::{ProbeResult, ProbeTarget, QueryCounts, PROBE_SCHEMA};
use tickpack_report::{encode_histogram, new_histogram, Percentiles};

use crate::run::{ProbeConfig, ProbeOutcome};

/// Every target's round trips merged, and their counts summed.
pub fn merged(o: &ProbeOutcome) -> (Histogram<u64>, QueryCounts) {
    let mut h = new_histogram();
    let mut c = QueryCounts::default();
    for t in &o.targets {
        h.add(t.histogram()).expect("same bounds");
        c.add(&t.counts());
    }
    (h, c)
}

/// The document `tickpack probe --json` writes.
pub fn to_result(cfg: &ProbeConfig, o: &ProbeOutcome) -> ProbeResult {
    let (all, queries) = merged(o);
    let s = cfg.settings();
    ProbeResult {
        schema: PROBE_SCHEMA.into(),
        tickpack_version: env!("CARGO_PKG_VERSION").into(),
        system: tickpack_report::system::SystemInfo::collect(),
        protocol: cfg.protocol.to_string(),
        interval_s: s.interval_us as f64 / 1e6,
        timeout_s: s.effective_timeout_us() as f64 / 1e6,
        duration_s: o.window.1.saturating_sub(o.window.0) as f64 / 1e6,
        interrupted: o.interrupted,
        query_latency_us: Percentiles::from_histogram(&all),
        queries,
        prober_cpu_s: o.cpu_time_ns as f64 / 1e9,
        targets: o
            .targets
            .iter()
            .map(|t| ProbeTarget {
                address: t.addr.to_string(),
                server: t.facts().cloned(),
                query_latency_us: Percentiles::from_histogram(t.histogram()),
                queries: t.counts(),
                histogram: encode_histogram(t.histogram()),
            })
            .collect(),
    }
}
