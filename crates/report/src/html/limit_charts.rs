//! One chart per judged QoS limit that has a figure to draw: p99 tick
//! lateness, p99 server frame, loss (snapshots and commands), and p99 query
//! latency and p99 run delay where they were judged; each against servers,
//! with its limit as a dashed red line.
//!
//! Why: a step fails on whichever rule it misses, and the latency and CPU
//! charts alone can make a failing step look better than the passing ones
//! (its servers stalled, so they used less CPU; its transactions were fine
//! but its ticks were late). With a chart per limit, what failed is drawn
//! above its line. A rule that judged no step ([`crate::judged::judged_rules`])
//! gets no chart, as it gets no line in the list of limits.

use crate::bench::{BenchResult, QosLimits, Step};
use crate::judged::judged_rules;
use crate::qos::{frame_limit_us, RuleId};

use super::charts::{by_variant, by_variant_words, ladder_series, variant_series, Figure};
use super::fmt_num;
use super::svg::{Chart, Limit, YScale, FAIL_RED};

/// One line of a limit's chart: its name (empty for a chart of one
/// figure), how it is drawn, and its value in a step, in the chart's
/// units (`None`: not measured in that step).
struct Part {
    name: &'static str,
    dash: Option<&'static str>,
    get: fn(&Step) -> Option<f64>,
}

/// A chart for the rules in `rules`: drawn when any of them judged a step.
struct Measure {
    rules: &'static [RuleId],
    title: &'static str,
    y_label: &'static str,
    unit: &'static str,
    parts: &'static [Part],
    /// The limit in the chart's units for a ladder's limits and tick.
    limit: fn(&QosLimits, crate::bench::TickRate) -> Option<f64>,
    /// What the figure is, for the caption.
    about: &'static str,
}

fn p99_ms(p: &crate::Percentiles) -> Option<f64> {
    (p.count > 0).then(|| p.p99 as f64 / 1000.0)
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64 * 100.0)
}

const MEASURES: &[Measure] = &[
    Measure {
        rules: &[RuleId::P99TickLateness],
        title: "p99 tick lateness vs servers",
        y_label: "p99 tick lateness (ms)",
        unit: "ms",
        parts: &[Part {
            name: "",
            dash: None,
            get: |s| p99_ms(&s.tick_lateness_us),
        }],
        limit: |q, _| Some(q.p99_tick_lateness_us as f64 / 1000.0),
        about: "How late the servers started their ticks, as they report it.",
    },
    Measure {
        rules: &[RuleId::P99ServerFrame],
        title: "p99 server frame vs servers",
        y_label: "p99 server frame (ms)",
        unit: "ms",
        parts: &[Part {
            name: "",
            dash: None,
            get: |s| p99_ms(&s.server_frame_us),
        }],
        limit: |q, tick| Some(frame_limit_us(q, tick) as f64 / 1000.0),
        about: "The servers' processing time per tick, as they report it; the limit is a share of the tick.",
    },
    Measure {
        rules: &[RuleId::SnapshotLoss, RuleId::CommandLoss],
        title: "Loss vs servers",
        y_label: "lost (%)",
        unit: "%",
        parts: &[
            Part {
                name: "snapshots",
                dash: None,
                get: |s| share(s.snapshots.lost, s.snapshots.expected),
            },
            Part {
                name: "commands",
                dash: Some("5 3"),
                get: |s| share(s.commands.lost, s.commands.due()),
            },
        ],
        limit: |q, _| Some(q.max_snapshot_loss * 100.0),
        about: "Snapshots lost (solid) against those the schedule promised, and commands \
                lost (dashed) against every command due.",
    },
    Measure {
        rules: &[RuleId::P99Query],
        title: "p99 query latency vs servers",
        y_label: "p99 query latency (ms)",
        unit: "ms",
        parts: &[Part {
            name: "",
            dash: None,
            get: |s| s.query_latency_us.as_ref().and_then(p99_ms),
        }],
        limit: |q, _| q.p99_query_us.map(|us| us as f64 / 1000.0),
        about: "Round trips of the game's own query protocol (not transaction latency).",
    },
    Measure {
        rules: &[RuleId::P99RunDelay],
        title: "p99 run delay vs servers",
        y_label: "p99 run delay (ms)",
        unit: "ms",
        parts: &[Part {
            name: "",
            dash: None,
            get: |s| s.run_delay_us.as_ref().and_then(p99_ms),
        }],
        limit: |q, _| q.p99_run_delay_us.map(|us| us as f64 / 1000.0),
        about: "How long the servers' threads waited runnable for a CPU.",
    },
];

/// The charts of the limits that judged a step of `r`, in the rule
/// table's order.
pub(super) fn limit_charts(r: &BenchResult) -> Vec<Figure> {
    let judged = judged_rules(r);
    MEASURES
        .iter()
        .filter(|m| m.rules.iter().any(|id| judged.contains(id)))
        .map(|m| chart(r, m))
        .collect()
}

fn chart(r: &BenchResult, m: &Measure) -> Figure {
    let mut c = Chart::new(m.title, "servers", m.y_label);
    c.y_scale = if m.unit == "ms" {
        YScale::Auto
    } else {
        YScale::Linear
    };
    let fmt = |v: f64| format!("{} {}", fmt_num(v), m.unit);
    for part in m.parts {
        let what = if part.name.is_empty() {
            m.title.trim_end_matches(" vs servers")
        } else {
            part.name
        };
        if by_variant(r) {
            for mut s in variant_series(r, what, &|st| (part.get)(st), &fmt) {
                if !part.name.is_empty() {
                    s.name = format!("{} {}", s.name, part.name);
                }
                s.dash = part.dash;
                c.series.push(s);
            }
            continue;
        }
        for (li, ladder) in r.ladders.iter().enumerate() {
            let mut s = ladder_series(r, li, ladder, part.name, &|st| {
                let y = (part.get)(st)?;
                Some((y, format!("{what} {}", fmt(y))))
            });
            s.dash = part.dash;
            c.series.push(s);
        }
    }
    // One line per distinct limit (the games of `--compare game` each
    // judge by their own), named by game when there are several.
    let mut seen: Vec<(f64, &str)> = Vec::new();
    for l in &r.ladders {
        if let Some(v) = (m.limit)(l.qos(&r.settings), l.tick_hz(&r.settings)) {
            if !seen.iter().any(|(x, _)| (*x - v).abs() < 1e-9) {
                seen.push((v, l.game_name(&r.settings)));
            }
        }
    }
    if seen.is_empty() {
        if let Some(v) = (m.limit)(&r.settings.qos, r.settings.tick_hz) {
            seen.push((v, r.settings.game.as_str()));
        }
    }
    let several = seen.len() > 1;
    let words: Vec<String> = seen.iter().map(|(v, _)| fmt(*v)).collect();
    c.limits = seen
        .iter()
        .map(|(v, game)| Limit {
            y: *v,
            label: if several {
                format!("QoS limit ({game}): ≤ {}", fmt(*v))
            } else {
                format!("QoS limit: ≤ {}", fmt(*v))
            },
            color: FAIL_RED,
        })
        .collect();
    Figure {
        chart: c,
        caption: format!(
            "{} Dashed red: the QoS limit ({}); a step above it failed on this limit. {}",
            m.about,
            words.join(", "),
            if by_variant(r) {
                by_variant_words(r)
            } else {
                "Red dots: failed steps (on this limit or another; hover for why)."
            }
        ),
        empty: format!(
            "{}: no step measured it.",
            m.title.trim_end_matches(" vs servers")
        ),
    }
}
