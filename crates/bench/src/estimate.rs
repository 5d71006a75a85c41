//! The QoS limit between two steps on few server cores: where the judged
//! figures that follow the load most closely (p99 tick lateness, p99
//! server frame) meet their limit, interpolated linearly in servers between
//! a ladder's last passing and first failing step, the median over the
//! first variant's ladders. What it finds is a
//! [`tickpack_report::estimate::LimitEstimate`], shown as an estimate beside
//! the measured steps.

use tickpack_report::bench::{BenchSettings, Ladder, Step};
use tickpack_report::comparison::Spread;
use tickpack_report::estimate::{Crossing, LadderEstimate, LimitEstimate, FEW_SERVER_CORES};

/// The largest passing step below the first failing one, and that failing
/// step.
fn bracket(l: &Ladder) -> Option<(&Step, &Step)> {
    // The smallest failing step: an adaptive ladder may run a failing
    // step before the smaller ones that bisect it.
    let failed = l
        .steps
        .iter()
        .filter(|s| s.verdict.is_fail())
        .min_by_key(|s| s.servers)?;
    let passed = l
        .steps
        .iter()
        .filter(|s| s.verdict.is_pass() && s.servers < failed.servers)
        .max_by_key(|s| s.servers)?;
    Some((passed, failed))
}

/// A judged figure of a step, microseconds.
type Figure = fn(&Step) -> u64;

/// Where one figure meets its limit between the two steps, linear in
/// servers; `None` unless it held at `p` and missed at `f`.
fn crossing(p: &Step, f: &Step, figure: Figure, limit_us: u64) -> Option<f64> {
    let (at_p, at_f) = (figure(p), figure(f));
    if !(at_p <= limit_us && at_f > limit_us) {
        return None;
    }
    let share = (limit_us - at_p) as f64 / (at_f - at_p) as f64;
    Some(f64::from(p.servers) + f64::from(f.servers - p.servers) * share)
}

/// Where `l`'s QoS limit lies between its last passing and first failing
/// step: the servers at which the first of its judged figures (p99 tick
/// lateness, p99 server frame) meets its limit, with the two steps, the
/// figure and its limit. `None` when the ladder has no such pair or the
/// failing step missed neither figure (it failed on loss or latency).
pub fn ladder_limit(l: &Ladder, settings: &BenchSettings) -> Option<Crossing> {
    let (p, f) = bracket(l)?;
    let q = l.qos(settings);
    let figures: [(&str, Figure, u64); 2] = [
        (
            "p99 tick lateness",
            |s| s.tick_lateness_us.p99,
            q.p99_tick_lateness_us,
        ),
        (
            "p99 server frame",
            |s| s.server_frame_us.p99,
            tickpack_report::qos::frame_limit_us(q, l.tick_hz(settings)),
        ),
    ];
    figures
        .into_iter()
        .filter_map(|(name, figure, limit_us)| {
            crossing(p, f, figure, limit_us).map(|servers| Crossing {
                servers,
                passed_servers: p.servers,
                failed_servers: f.servers,
                figure: name,
                limit_us,
            })
        })
        .min_by(|a, b| a.servers.total_cmp(&b.servers))
}

/// The estimate over the first variant's `ladders` (each judged by its own
/// QoS limits under `settings`) on `server_cores` server cores; `None` on
/// more than [`FEW_SERVER_CORES`] or when no ladder gives one.
pub fn estimate(
    ladders: &[&Ladder],
    settings: &BenchSettings,
    server_cores: u32,
) -> Option<LimitEstimate> {
    if server_cores == 0 || server_cores > FEW_SERVER_CORES {
        return None;
    }
    let found: Vec<Crossing> = ladders
        .iter()
        .filter_map(|l| ladder_limit(l, settings))
        .collect();
    let servers = Spread::of(found.iter().map(|c| Some(c.servers)).collect()).median?;
    let servers = (servers * 10.0).round() / 10.0;
    // The ladder whose estimate is nearest the median names the steps and
    // the figure; every ladder's own is kept beside it.
    let nearest = found.iter().min_by(|a, b| {
        (a.servers - servers)
            .abs()
            .total_cmp(&(b.servers - servers).abs())
    })?;
    let per_ladder = if found.len() > 1 {
        found
            .iter()
            .map(|c| LadderEstimate {
                servers: (c.servers * 10.0).round() / 10.0,
                passed_servers: c.passed_servers,
                failed_servers: c.failed_servers,
                figure: c.figure.into(),
            })
            .collect()
    } else {
        vec![]
    };
    Some(LimitEstimate {
        servers,
        per_core: (servers / f64::from(server_cores) * 1000.0).round() / 1000.0,
        passed_servers: nearest.passed_servers,
        failed_servers: nearest.failed_servers,
        figure: nearest.figure.into(),
        limit_us: nearest.limit_us,
        ladders: found.len() as u32,
        per_ladder,
    })
}

#[cfg(test)]
mod tests;
