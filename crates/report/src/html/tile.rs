//! A tile run's time charts: the deciding step over its windows (the
//! first ladder's first failing step, or its last step when none failed):
//! players present per member, each member's p99 transaction latency (or
//! its servers' run delay where it has no players) with the failing window
//! in red, and the server cores' busy share beside the batch work; then a
//! table of each member's windows.

use std::fmt::Write as _;

use crate::bench::{BenchResult, Step};
use crate::tile::{MemberStep, TileStep};

use super::charts::{ladder_color, Figure};
use super::format::esc;
use super::svg::{Chart, Point, Series};
use super::{fmt_ms, fmt_num};

/// The step whose windows the report draws, with its ladder's label.
pub(super) fn deciding_step(r: &BenchResult) -> Option<(&str, &Step, &TileStep)> {
    let ladder = r.ladders.first()?;
    let step = ladder
        .steps
        .iter()
        .find(|s| s.verdict.is_fail())
        .or_else(|| ladder.steps.last())?;
    Some((ladder.label.as_str(), step, step.tile.as_ref()?))
}

/// The tile's section: nothing for a one-game result.
pub(super) fn tile_section(out: &mut String, r: &BenchResult) {
    let Some((label, step, tile)) = deciding_step(r) else {
        return;
    };
    let t = r.settings.tile.as_ref();
    w!(
        out,
        "<h3 id=\"over-time\">Over time: step {} ({} tiles, {} servers) of {}</h3>\n",
        step.index,
        step.tiles,
        step.servers,
        esc(label)
    );
    w!(
        out,
        "<p>Time is compressed: {}. Each member is judged on its own limits in every {} s window; {}</p>\n",
        esc(t.map_or("not recorded", |t| t.compression.as_str())),
        fmt_num(tile.window_s),
        match &tile.failure {
            Some(f) => format!("the step failed: {}.", esc(&f.to_string())),
            None => "every member passed every window.".to_string(),
        }
    );
    if let Some(p) = tile.peak_to_mean_cpu {
        w!(
            out,
            "<p>The server cores' busiest window was {}x their mean over the step.</p>\n",
            fmt_num(p)
        );
    }
    out.push_str("<div class=\"charts\">\n");
    for f in [players(tile), latency(tile), host(tile)] {
        super::section::figure(out, f);
    }
    out.push_str("</div>\n");
    members_table(out, tile);
}

fn x_of(start_s: f64, end_s: f64) -> f64 {
    (start_s + end_s) / 2.0
}

fn players(tile: &TileStep) -> Figure {
    let mut c = Chart::new(
        "Players present per member",
        "time in the step (s)",
        "players",
    );
    for (i, m) in tile.members.iter().enumerate() {
        let mut s = Series::new(m.name.clone(), ladder_color(i));
        s.points = m
            .windows
            .iter()
            .map(|w| Point {
                x: x_of(w.start_s, w.end_s),
                y: w.players_present,
                failed: false,
                tip: format!(
                    "{}: {}-{} s, {} players, {} joins, {} failed",
                    m.name,
                    fmt_num(w.start_s),
                    fmt_num(w.end_s),
                    fmt_num(w.players_present),
                    w.joins,
                    w.failed_joins
                ),
            })
            .collect();
        c.series.push(s);
    }
    Figure {
        chart: c,
        caption:
            "Players present in each window (time-weighted), every server of a member together: \
                  the curves the step ran."
                .into(),
        empty: "No windows were recorded.".into(),
    }
}

/// A member's judged latency in a window: its players' p99 transaction
/// latency, else its servers' p99 run delay.
fn member_latency(m: &MemberStep) -> (bool, Vec<Point>) {
    let players = m.windows.iter().any(|w| w.transaction_p99_us.is_some());
    let points = m
        .windows
        .iter()
        .filter_map(|w| {
            let v = if players {
                w.transaction_p99_us
            } else {
                w.run_delay_p99_us
            }?;
            Some(Point {
                x: x_of(w.start_s, w.end_s),
                y: v as f64 / 1000.0,
                failed: !w.passed(),
                tip: format!(
                    "{}: {}-{} s, {} {} ms{}",
                    m.name,
                    fmt_num(w.start_s),
                    fmt_num(w.end_s),
                    if players {
                        "p99 transaction"
                    } else {
                        "p99 run delay"
                    },
                    fmt_ms(v),
                    if w.passed() {
                        String::new()
                    } else {
                        format!("; failed: {}", w.failures.join("; "))
                    }
                ),
            })
        })
        .collect();
    (players, points)
}

fn latency(tile: &TileStep) -> Figure {
    let mut c = Chart::new("p99 per member per window", "time in the step (s)", "ms");
    c.failed_label = "failed window";
    for (i, m) in tile.members.iter().enumerate() {
        let (players, points) = member_latency(m);
        let mut s = Series::new(
            format!(
                "{} ({})",
                m.name,
                if players { "transaction" } else { "run delay" }
            ),
            ladder_color(i),
        );
        s.points = points;
        c.series.push(s);
    }
    Figure {
        chart: c,
        caption: "Each member's p99 transaction latency per window (its servers' run delay where \
                  it has no players). Red dots: windows that failed a limit of their member."
            .into(),
        empty: "No member recorded a latency per window.".into(),
    }
}

fn host(tile: &TileStep) -> Figure {
    let mut c = Chart::new("Server cores and batch work", "time in the step (s)", "%");
    let mut busy = Series::new("server cores busy", ladder_color(0));
    busy.points = tile
        .windows
        .iter()
        .filter_map(|w| {
            let b = w.servers_busy_percent?;
            Some(Point {
                x: x_of(w.start_s, w.end_s),
                y: b,
                failed: false,
                tip: format!(
                    "{}-{} s: {} % busy",
                    fmt_num(w.start_s),
                    fmt_num(w.end_s),
                    fmt_num(b)
                ),
            })
        })
        .collect();
    c.series.push(busy);
    let mut batch = Series::new("batch work (% of a core)", ladder_color(1));
    batch.points = tile
        .windows
        .iter()
        .filter_map(|w| {
            let b = w.batch_cpu_percent?;
            Some(Point {
                x: x_of(w.start_s, w.end_s),
                y: b,
                failed: false,
                tip: format!(
                    "{}-{} s: batch {} %",
                    fmt_num(w.start_s),
                    fmt_num(w.end_s),
                    fmt_num(b)
                ),
            })
        })
        .collect();
    if !batch.points.is_empty() {
        c.series.push(batch);
    }
    Figure {
        chart: c,
        caption: "The server cores' busy share per window, and the batch work's CPU where the run \
                  had --batch: the guard should give batch work the valleys."
            .into(),
        empty: "The server cores were not sampled per window.".into(),
    }
}

fn members_table(out: &mut String, tile: &TileStep) {
    out.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>Member</th><th>Servers</th>\
         <th>Windows passed</th><th>Joins (failed)</th><th>Worst p99</th><th>First failure</th>\
         </tr></thead><tbody>\n",
    );
    for m in &tile.members {
        let passed = m.windows.iter().filter(|w| w.passed()).count();
        let joins: u64 = m.windows.iter().map(|w| w.joins).sum();
        let failed: u64 = m.windows.iter().map(|w| w.failed_joins).sum();
        let (_, points) = member_latency(m);
        let worst = points
            .iter()
            .map(|p| p.y)
            .fold(None, |a: Option<f64>, y| Some(a.map_or(y, |a| a.max(y))));
        let first = m
            .windows
            .iter()
            .find(|w| !w.passed())
            .map(|w| {
                format!(
                    "{}-{} s: {}",
                    fmt_num(w.start_s),
                    fmt_num(w.end_s),
                    w.failures.join("; ")
                )
            })
            .or_else(|| m.events.first().cloned())
            .unwrap_or_else(|| "none".into());
        w!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{passed} of {}</td><td>{joins} ({failed})</td><td>{}</td><td>{}</td></tr>\n",
            esc(&m.name),
            m.servers,
            m.windows.len(),
            worst.map_or("n/a".into(), |v| format!("{} ms", fmt_num(v))),
            esc(&first)
        );
    }
    out.push_str("</tbody></table></div>\n");
}
