//! The report's charts, built from a [`BenchResult`]: x = servers per step
//! with one series per ladder, or the latency distribution of each step.
//!
//! A comparison or a repeated run gets one chart per measure with one
//! series per variant (the ladders sharing a label): the line is the median
//! over the repetitions that ran the step, the shaded band their range, and
//! the p99 latency chart comes first, alone (p50 and p99.9 of every ladder
//! in one box would be a dozen lines).

use crate::bench::{BenchResult, Ladder, PowerSourceKind, Step};
use crate::decode_histogram;

use super::svg::{Chart, Limit, Point, Series, YScale, FAIL_RED};
use super::{fmt_ms, fmt_num};

/// Ladder colours (no red: red marks failures and limits).
const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
];
/// Colour of the headroom target line.
pub(super) const TARGET: &str = "#b26a00";

pub(super) fn ladder_color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A chart and the sentence under it.
pub(super) struct Figure {
    pub chart: Chart,
    pub caption: String,
    /// What to say instead of an empty chart.
    pub empty: String,
}

fn tip(ladder: &Ladder, step: &Step, what: &str) -> String {
    let mut t = format!(
        "{}: step {}, {}, {what}",
        ladder.label,
        step.index,
        crate::words::servers(step.servers)
    );
    if step.verdict.is_fail() {
        t.push_str(" - FAIL");
        if !step.failures.is_empty() {
            t.push_str(": ");
            t.push_str(&step.failures.join("; "));
        }
    }
    t
}

pub(super) fn failed(step: &Step) -> bool {
    step.verdict.is_fail()
}

/// Series name: the ladder's label, or only `what` when there is one ladder.
fn name(r: &BenchResult, ladder: &Ladder, what: &str) -> String {
    match (r.ladders.len() > 1, what.is_empty()) {
        (true, true) => ladder.label.clone(),
        (true, false) => format!("{} {what}", ladder.label),
        (false, true) => ladder.label.clone(),
        (false, false) => what.to_string(),
    }
}

/// The series of ladder `li` of `r` against servers, named by `name(r,
/// ladder, what)`: a point for each step where `value` gives its y and the
/// words of its tooltip; a failed step's point is marked.
pub(super) fn ladder_series(
    r: &BenchResult,
    li: usize,
    ladder: &Ladder,
    what: &str,
    value: &dyn Fn(&Step) -> Option<(f64, String)>,
) -> Series {
    let mut s = Series::new(name(r, ladder, what), ladder_color(li));
    s.points = ladder
        .steps
        .iter()
        .filter_map(|st| {
            let (y, words) = value(st)?;
            Some(Point {
                x: f64::from(st.servers),
                y,
                failed: failed(st),
                tip: tip(ladder, st, &words),
            })
        })
        .collect();
    s
}

/// How one percentile is drawn: name, field, dash, width, opacity.
type PercentileStyle = (
    &'static str,
    fn(&Step) -> u64,
    Option<&'static str>,
    f64,
    f64,
);

/// The ladders of each variant (same label), in order of first
/// appearance: a comparison's variants, each with its repetitions.
pub(super) fn variants(r: &BenchResult) -> Vec<(&str, Vec<&Ladder>)> {
    let mut v: Vec<(&str, Vec<&Ladder>)> = Vec::new();
    for l in &r.ladders {
        match v.iter_mut().find(|(label, _)| *label == l.label) {
            Some((_, ls)) => ls.push(l),
            None => v.push((l.label.as_str(), vec![l])),
        }
    }
    v
}

/// True when the charts draw one series per variant with the repetitions
/// as bands: several variants, or one repeated.
pub(super) fn by_variant(r: &BenchResult) -> bool {
    let v = variants(r);
    v.len() > 1 || v.iter().any(|(_, ls)| ls.len() > 1)
}

/// One series per variant of `get` against servers: at each step, the
/// median over the repetitions that ran it, their range as a band; a
/// step that failed in any repetition is marked.
pub(super) fn variant_series(
    r: &BenchResult,
    what: &str,
    get: &dyn Fn(&Step) -> Option<f64>,
    fmt: &dyn Fn(f64) -> String,
) -> Vec<Series> {
    let mut out = Vec::new();
    for (vi, (label, ladders)) in variants(r).into_iter().enumerate() {
        let mut xs: Vec<u32> = ladders
            .iter()
            .flat_map(|l| l.steps.iter().map(|s| s.servers))
            .collect();
        xs.sort_unstable();
        xs.dedup();
        let mut s = Series::new(label, ladder_color(vi));
        for x in xs {
            let steps: Vec<&Step> = ladders
                .iter()
                .filter_map(|l| l.steps.iter().find(|s| s.servers == x))
                .collect();
            let values: Vec<Option<f64>> = steps.iter().map(|s| get(s)).collect();
            let spread = crate::comparison::Spread::of(values);
            let (Some(m), Some(lo), Some(hi)) = (spread.median, spread.min, spread.max) else {
                continue;
            };
            let n = spread.found();
            let fails = steps.iter().filter(|s| failed(s)).count();
            let mut tip = format!("{label}: {x} servers, {what} {}", fmt(m));
            if ladders.len() > 1 {
                tip.push_str(&format!(
                    " (median; range {}-{} over {n} repetition{})",
                    fmt(lo),
                    fmt(hi),
                    if n == 1 { "" } else { "s" }
                ));
            }
            if fails > 0 {
                tip.push_str(&format!(" - FAIL in {fails} of {}", steps.len()));
            }
            s.points.push(Point {
                x: f64::from(x),
                y: m,
                failed: fails > 0,
                tip,
            });
            if ladders.len() > 1 {
                s.band.push((f64::from(x), lo, hi));
            }
        }
        out.push(s);
    }
    out
}

/// The caption's words on the lines and bands of a by-variant chart.
pub(super) fn by_variant_words(r: &BenchResult) -> &'static str {
    if variants(r).iter().any(|(_, ls)| ls.len() > 1) {
        "One line per variant: the median over the repetitions that ran the step;          the shaded band is their range (lowest to highest). Red dots: a step that          failed in at least one repetition."
    } else {
        "One line per variant. Red dots: failed steps."
    }
}

/// p99 transaction latency against servers, one series per variant.
fn p99_by_variant(r: &BenchResult) -> Figure {
    let mut c = Chart::new(
        "p99 transaction latency vs servers",
        "servers",
        "p99 transaction latency (ms)",
    );
    c.y_scale = YScale::Auto;
    c.series = variant_series(
        r,
        "p99",
        &|s| {
            super::format::measured_latency(s).then(|| s.transaction_latency_us.p99 as f64 / 1000.0)
        },
        &|v| format!("{} ms", fmt_num(v)),
    );
    let limits = p99_limits(r);
    let words: Vec<String> = limits
        .iter()
        .map(|l| format!("{} ms", fmt_num(l.y)))
        .collect();
    c.limits = limits;
    Figure {
        chart: c,
        caption: format!(
            "p99 of the latency from the time a command was due to the first snapshot              reflecting it. {} Dashed red: the absolute QoS limit on p99 ({}); a step also              fails above {}x its ladder's first step.",
            by_variant_words(r),
            words.join(", "),
            fmt_num(r.settings.qos.p99_relative_to_baseline)
        ),
        empty: "No steps finished: no latency to show.".into(),
    }
}

/// Transaction latency p50/p99/p99.9 against servers (one ladder); a
/// comparison or repeated run gets the p99 per variant instead.
pub(super) fn latency(r: &BenchResult) -> Figure {
    if by_variant(r) {
        return p99_by_variant(r);
    }
    let mut c = Chart::new(
        "Transaction latency vs servers",
        "servers",
        "transaction latency (ms)",
    );
    c.y_scale = YScale::Auto;
    for (li, ladder) in r.ladders.iter().enumerate() {
        let styles: [PercentileStyle; 3] = [
            ("p50", |s| s.transaction_latency_us.p50, None, 1.5, 0.55),
            ("p99", |s| s.transaction_latency_us.p99, None, 2.5, 1.0),
            (
                "p99.9",
                |s| s.transaction_latency_us.p999,
                Some("2 3"),
                1.5,
                1.0,
            ),
        ];
        for (what, get, dash, width, opacity) in styles {
            let mut s = ladder_series(r, li, ladder, what, &|st| {
                let us = get(st);
                super::format::measured_latency(st)
                    .then(|| (us as f64 / 1000.0, format!("{what} {} ms", fmt_ms(us))))
            });
            s.dash = dash;
            s.width = width;
            s.opacity = opacity;
            c.series.push(s);
        }
    }
    let limit_ms = push_limit(&mut c, p99_limit(r));
    Figure {
        chart: c,
        caption: format!(
            "Latency from the time a command was due to the first snapshot reflecting it. \
             Solid thick: p99; thin: p50; dotted: p99.9. Dashed red: the absolute QoS limit \
             on p99 ({} ms); a step also fails above {}x its ladder's first step. \
             Red dots: failed steps.",
            fmt_num(limit_ms),
            fmt_num(r.settings.qos.p99_relative_to_baseline)
        ),
        empty: no_latency_words(r),
    }
}

/// What a latency chart says when it has nothing to draw.
fn no_latency_words(r: &BenchResult) -> String {
    let any_players = r
        .ladders
        .iter()
        .flat_map(|l| &l.steps)
        .any(|s| s.players > 0);
    if any_players || r.ladders.iter().all(|l| l.steps.is_empty()) {
        "No steps finished: no latency to show.".into()
    } else {
        "No players: no transaction latency was measured (the steps were judged without it).".into()
    }
}

/// Batch throughput (stress-ng bogo-ops/s) against servers, one series per
/// ladder that ran batch work: drawn beside the latency chart, so QoS and
/// what the batch got are read side by side (as in Heracles' figures).
/// `None` when no step ran batch work.
pub(super) fn batch(r: &BenchResult) -> Option<Figure> {
    if !r
        .ladders
        .iter()
        .flat_map(|l| &l.steps)
        .any(|s| s.batch.is_some())
    {
        return None;
    }
    let mut c = Chart::new("Batch throughput vs servers", "servers", "batch bogo-ops/s");
    for (li, ladder) in r.ladders.iter().enumerate() {
        let s = ladder_series(r, li, ladder, "", &|st| {
            let b = st.batch.as_ref()?;
            let ops = b.bogo_ops_per_s?;
            let words = format!(
                "{} bogo-ops/s, batch CPU {} %, {} % of the idle CPU",
                fmt_num(ops),
                b.cpu_percent.map_or("-".into(), fmt_num),
                b.idle_share_percent.map_or("-".into(), fmt_num)
            );
            Some((ops, words))
        });
        if !s.points.is_empty() {
            c.series.push(s);
        }
    }
    Some(Figure {
        chart: c,
        caption: "What the batch work got per step (stress-ng bogo-ops/s over its life in \
                  the step), beside the latency chart's QoS of the same steps: a variant \
                  is better when it keeps QoS and does more batch work. Red dots: steps \
                  that failed QoS."
            .into(),
        empty: "The batch reported no throughput (not stress-ng, or killed before it \
                printed its metrics)."
            .into(),
    })
}

/// Server-core CPU busy share against servers, with the headroom target.
pub(super) fn cpu(r: &BenchResult) -> Figure {
    let mut c = Chart::new(
        "CPU busy (server cores) vs servers",
        "servers",
        "server cores busy (%)",
    );
    c.y_max = Some(100.0);
    if by_variant(r) {
        c.series = variant_series(r, "busy", &|s| Some(s.cpu.servers_busy_percent), &|v| {
            format!("{} %", fmt_num(v))
        });
    }
    for (li, ladder) in r.ladders.iter().enumerate().filter(|_| !by_variant(r)) {
        c.series.push(ladder_series(r, li, ladder, "", &|st| {
            let busy = st.cpu.servers_busy_percent;
            Some((busy, format!("{} % busy", fmt_num(busy))))
        }));
    }
    let target = push_limit(&mut c, headroom_limit(r));
    Figure {
        chart: c,
        caption: format!(
            "Busy share of the cores the servers ran on. The recommended density is the \
             largest passing step at or under the headroom target ({} %, dashed). {}",
            fmt_num(target),
            if by_variant(r) {
                by_variant_words(r)
            } else {
                "Red dots: failed steps."
            }
        ),
        empty: "No steps finished: no CPU figures to show.".into(),
    }
}

/// Draws `limit` on `c` and returns its value, for the caption's words.
fn push_limit(c: &mut Chart, limit: Limit) -> f64 {
    let y = limit.y;
    c.limits.push(limit);
    y
}

/// The dashed line of `r`'s headroom target on a CPU busy chart.
pub(super) fn headroom_limit(r: &BenchResult) -> Limit {
    let target = r.settings.headroom_target * 100.0;
    Limit {
        y: target,
        label: format!("headroom target {} %", fmt_num(target)),
        color: TARGET,
    }
}

/// The power sources of all steps, in order of appearance.
pub(super) fn power_sources(r: &BenchResult) -> Vec<PowerSourceKind> {
    let mut v: Vec<PowerSourceKind> = Vec::new();
    for st in r.ladders.iter().flat_map(|l| &l.steps) {
        if let Some(p) = &st.power {
            if !v.contains(&p.source) {
                v.push(p.source);
            }
        }
    }
    v
}

/// Source names joined with ", ".
pub(super) fn join_sources(sources: &[PowerSourceKind]) -> String {
    sources
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// "modeled, not measured", "measured (rapl)" or "sources: ...".
pub(super) fn power_source_words(sources: &[PowerSourceKind]) -> String {
    match sources {
        [] => "no power source".into(),
        [PowerSourceKind::Modeled] => "modeled, not measured".into(),
        [s] => format!("measured ({s})"),
        more => format!("sources: {}", join_sources(more)),
    }
}

/// Watts against servers; `None` when no step has a power figure.
pub(super) fn power(r: &BenchResult) -> Option<Figure> {
    let sources = power_sources(r);
    if sources.is_empty() {
        return None;
    }
    let words = power_source_words(&sources);
    let mut c = Chart::new(
        format!("Power vs servers ({words})"),
        "servers",
        if sources.iter().all(|s| !s.is_measured()) {
            "watts (modeled)"
        } else {
            "watts"
        },
    );
    if by_variant(r) {
        c.series = variant_series(r, "watts", &|s| s.power.as_ref().map(|p| p.watts), &|v| {
            format!("{} W", fmt_num(v))
        });
    }
    for (li, ladder) in r.ladders.iter().enumerate().filter(|_| !by_variant(r)) {
        c.series.push(ladder_series(r, li, ladder, "", &|st| {
            let p = st.power.as_ref()?;
            Some((p.watts, format!("{} W ({})", fmt_num(p.watts), p.source)))
        }));
    }
    let caption = if sources.iter().any(|s| !s.is_measured()) {
        "Watts per step. Modeled watts come from a power model of the CPU busy share, \
         not from a meter: treat them as an estimate. Red dots: failed steps."
            .to_string()
    } else {
        "Watts per step, as measured. Red dots: failed steps.".to_string()
    };
    Some(Figure {
        chart: c,
        caption,
        empty: "No step has a power figure.".into(),
    })
}

/// Colour of step `i` of `n`: light to dark blue for passing steps, light
/// to dark red for failing ones.
fn step_color(i: usize, n: usize, fail: bool) -> String {
    let t = if n > 1 {
        i as f64 / (n - 1) as f64
    } else {
        1.0
    };
    let (a, b) = if fail {
        ((0xfc, 0x8d, 0x59), (0x99, 0x00, 0x0d))
    } else {
        ((0x9e, 0xca, 0xe1), (0x08, 0x30, 0x6b))
    };
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// The percentile curve of every step of `ladder`, recomputed from the
/// serialized transaction-latency histograms. Steps whose histogram is
/// empty or unreadable are left out and named in `notes`.
pub(super) fn distribution(r: &BenchResult, ladder: &Ladder, notes: &mut Vec<String>) -> Figure {
    // x = log10(1 / (1 - q)): 0 -> 0 %, 1 -> 90 %, ..., 4 -> 99.99 %.
    const X_MAX: f64 = 4.0;
    const SAMPLES: usize = 80;
    let mut c = Chart::new(
        format!("Latency distribution per step: {}", ladder.label),
        "percentile",
        "transaction latency (ms)",
    );
    c.y_scale = YScale::Auto;
    c.x_ticks = Some(
        ["0%", "90%", "99%", "99.9%", "99.99%"]
            .iter()
            .enumerate()
            .map(|(i, l)| (i as f64, l.to_string()))
            .collect(),
    );
    let n = ladder.steps.len();
    let fails = ladder.steps.iter().filter(|s| failed(s)).count();
    let (mut pi, mut fi) = (0, 0);
    for st in ladder.steps.iter().filter(|st| st.players > 0) {
        let fail = failed(st);
        let color = if fail {
            fi += 1;
            step_color(fi - 1, fails, true)
        } else {
            pi += 1;
            step_color(pi - 1, n - fails, false)
        };
        let h = match decode_histogram(&st.histograms.transaction_latency_us) {
            Ok(h) if !h.is_empty() => h,
            Ok(_) => {
                notes.push(format!("step {}: no latency samples", st.index));
                continue;
            }
            Err(e) => {
                notes.push(format!("step {}: histogram unreadable ({e})", st.index));
                continue;
            }
        };
        let mut s = Series::new(
            format!(
                "{}{}",
                crate::words::servers(st.servers),
                if fail { " (fail)" } else { "" }
            ),
            color,
        );
        s.markers = false;
        s.width = if fail { 2.0 } else { 1.8 };
        s.dash = fail.then_some("6 3");
        s.points = (0..=SAMPLES)
            .map(|i| {
                let x = X_MAX * i as f64 / SAMPLES as f64;
                let q = 1.0 - 10f64.powf(-x);
                let v = h.value_at_quantile(q);
                Point {
                    x,
                    y: v as f64 / 1000.0,
                    failed: false,
                    tip: format!(
                        "step {}, {}: p{} = {} ms",
                        st.index,
                        crate::words::servers(st.servers),
                        super::fmt_quantile(q),
                        fmt_ms(v)
                    ),
                }
            })
            .collect();
        c.series.push(s);
    }
    c.limits.push(p99_limit(r));
    let samples: u64 = ladder
        .steps
        .iter()
        .map(|s| s.transaction_latency_us.count)
        .sum();
    Figure {
        chart: c,
        caption: format!(
            "Recomputed from the stored HdrHistograms ({} samples over {} steps). \
             x: percentile, stretched towards the tail (each tick is ten times rarer). \
             Blue, darker = more servers: passing steps; dashed red: failing steps. \
             The p99 limit applies where a curve crosses 99%.",
            super::fmt_int(samples),
            n
        ),
        empty: if ladder.steps.iter().any(|s| s.players > 0) {
            "No step has latency samples to plot.".into()
        } else {
            no_latency_words(r)
        },
    }
}

/// The absolute p99 limits of the ladders, one line per distinct limit
/// (the games of `--compare game` each have their own), named by game
/// when there are several.
fn p99_limits(r: &BenchResult) -> Vec<Limit> {
    let mut seen: Vec<(u64, &str)> = Vec::new();
    for l in &r.ladders {
        let us = l.qos(&r.settings).p99_transaction_us;
        if !seen.iter().any(|(v, _)| *v == us) {
            seen.push((us, l.game_name(&r.settings)));
        }
    }
    if seen.len() <= 1 {
        return vec![p99_limit(r)];
    }
    seen.into_iter()
        .map(|(us, game)| {
            let ms = us as f64 / 1000.0;
            Limit {
                y: ms,
                label: format!("QoS limit ({game}): p99 ≤ {} ms", fmt_num(ms)),
                color: FAIL_RED,
            }
        })
        .collect()
}

/// The absolute p99 transaction-latency QoS limit, as a dashed line.
fn p99_limit(r: &BenchResult) -> Limit {
    let limit_ms = r.settings.qos.p99_transaction_us as f64 / 1000.0;
    Limit {
        y: limit_ms,
        label: format!("QoS limit: p99 ≤ {} ms", fmt_num(limit_ms)),
        color: FAIL_RED,
    }
}
