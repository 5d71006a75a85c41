//! The HTML report: one self-contained page for one or more `tickpack bench`
//! results (`result.json`, schema [`crate::bench::BENCH_SCHEMA`]) and
//! `tickpack players` results (schema [`crate::PLAYERS_SCHEMA`]; a result
//! merged from several load generators is marked so, with its sources).
//!
//! [`render`] turns parsed bench results into the page, [`render_all`]
//! bench and players results; [`render_file`] reads and checks the files
//! first ([`read_result`], [`read_players`], [`read_any`] for one file) and
//! names the file and what is wrong with it when it cannot.
//!
//! The page opens offline and forever: no script, no external stylesheet,
//! font or image, no URL at all. CSS sits in a `<style>` block, charts are
//! inline SVG drawn by this module (`svg`: a small line-chart helper;
//! `charts`: which charts, from which fields). Every string that came from a
//! result file is HTML-escaped.
//!
//! What the page shows, per result, top to bottom: a heading that names the
//! run (its game or tile, when it started, its answer; the file it came
//! from under it), an "interrupted" banner
//! if `complete` is false; the verdict in words (recommended and maximum
//! density, headroom target, consolidation ratio, comparison ratios with
//! their ranges and whether the variants can be told apart); the run
//! (version, date, system, cores, settings, QoS limits: every rule of
//! [`crate::qos::RULES`] that judged a step, and apart those set but never
//! judged); the variants' medians and ranges (comparisons); the ladders;
//! the charts (latency; one per judged limit with its line, so what a step
//! failed on is drawn above it; CPU, power vs servers; the first ladder's
//! latency distribution per step); one table of steps per ladder (with
//! outages and reconnects beside loss); the cost figures. With two or more
//! results a comparison comes first: a table naming each result's game,
//! and one chart of every result on one axis.
//! A players result (`players`): its run, latency summaries, what the
//! schedule promised against what arrived, traffic, and, if merged, a
//! "merged from N sources" mark and one row per source.
//!
//! One file per section: `input` (reading files), `style`, `format` (how
//! values read), `comparison`, `section` (one result), `summary` (the
//! verdict in words), `run`, `limits`, `limit_charts` (a chart per judged
//! limit), `variants` (a comparison over its repetitions), `ladders`,
//! `steps`, `cost`, `players`.
//!
//! What it deliberately does not do: judge QoS or recompute densities. The
//! verdicts, densities and ratios are the bench's and are shown as recorded;
//! a missing one is "not reached" or "n/a", never 0. The only recomputation
//! is the latency distribution, drawn from the stored HdrHistograms. It
//! writes no file either: the caller decides where the page goes.

use std::fmt::Write as _;

use crate::bench::BenchResult;
use crate::PlayersResult;

/// Appends formatted text to a `String` (which cannot fail).
macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = write!($dst, $($arg)*);
    }};
}

mod charts;
mod comparison;
mod cost;
mod format;
mod input;
mod ladders;
mod limit_charts;
mod limits;
mod players;
mod run;
mod section;
mod steps;
mod style;
mod summary;
mod svg;
mod tile;
mod variants;

pub use format::esc;
pub(crate) use format::{fmt_int, fmt_ms, fmt_num, fmt_quantile};
pub use input::{read_any, read_players, read_result, render_file, InputError, ResultFile};
pub use svg::linear_ticks;

use style::CSS;

/// The whole report page for `results` (label, result), in that order.
pub fn render(results: &[(String, BenchResult)]) -> String {
    render_all(results, &[])
}

/// The whole page for bench `results` (label, result), in that order, then
/// `players` results.
pub fn render_all(
    results: &[(String, BenchResult)],
    players: &[(String, PlayersResult)],
) -> String {
    let mut out = String::with_capacity(128 * 1024);
    let kind = if results.is_empty() && !players.is_empty() {
        "players"
    } else {
        "bench"
    };
    // One bench result: its run by name (game, date, answer), not its file.
    let title = match (results, players) {
        ([(_, r)], []) => format!("tickpack {kind} report: {}", section::run_title(r)),
        ([], [(label, _)]) => format!("tickpack {kind} report: {label}"),
        _ => format!("tickpack {kind} report"),
    };
    w!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(&title)
    );
    w!(out, "<h1>tickpack {kind} report</h1>\n");
    match results.len() {
        0 if !players.is_empty() => {}
        0 => out.push_str("<p class=\"na\">No results to show.</p>\n"),
        1 => {}
        n => {
            w!(
                out,
                "<p class=\"muted\">{n} results, compared first, then one after the other: "
            );
            for (i, (label, _)) in results.iter().enumerate() {
                w!(
                    out,
                    "{}<a href=\"#result-{}\">{}</a>",
                    if i > 0 { ", " } else { "" },
                    i + 1,
                    esc(label)
                );
            }
            out.push_str(".</p>\n");
            comparison::comparison(&mut out, results);
        }
    }
    for (i, (label, r)) in results.iter().enumerate() {
        section::result_section(&mut out, i, results.len(), label, r);
    }
    for (i, (label, r)) in players.iter().enumerate() {
        players::players_section(&mut out, i, label, r);
    }
    w!(
        out,
        "<footer>Made by tickpack-report {} from the result file{} alone; \
         the latency distributions are recomputed from the stored histograms.</footer>\n\
         </main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        if results.len() + players.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    out
}
