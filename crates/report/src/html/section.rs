//! One result's section, top to bottom: interrupted banner, summary, run
//! facts, ladders, charts, steps, cost.

use std::fmt::Write as _;

use crate::bench::BenchResult;

use super::charts;
use super::cost::cost;
use super::format::esc;
use super::ladders::ladders_table;
use super::run::run_facts;
use super::steps::steps_table;
use super::summary::verdict;

/// A result's title, naming the run rather than its file: its game(s)
/// (or its tile), when it started and its answer ("sleepy, 2026-11-28 04:41:05 UTC: no
/// density, the servers were idle").
pub(super) fn run_title(r: &BenchResult) -> String {
    let mut games: Vec<&str> = vec![];
    for l in &r.ladders {
        let g = l.game_name(&r.settings);
        if !games.contains(&g) {
            games.push(g);
        }
    }
    let tile = r.settings.tile.as_ref().map(|t| format!("tile {}", t.name));
    if let Some(t) = &tile {
        games = vec![t.as_str()];
    }
    if games.is_empty() {
        games.push(&r.settings.game);
    }
    let answer = match crate::headline::Headline::of(r) {
        Some(h) => h.answer_words(),
        None if crate::headline::idle_words(r).is_some() => {
            "no density, the servers were idle".into()
        }
        None => "no density reached".into(),
    };
    format!(
        "{}, {}: {answer}{}",
        games.join(" vs "),
        super::format::utc(r.started_unix),
        if r.complete { "" } else { " (interrupted)" }
    )
}

pub(super) fn result_section(out: &mut String, i: usize, n: usize, label: &str, r: &BenchResult) {
    w!(out, "<section class=\"result\" id=\"result-{}\">\n", i + 1);
    let title = esc(&run_title(r));
    if n > 1 {
        w!(out, "<h2>Result {}: {title}</h2>\n", i + 1);
    } else {
        w!(out, "<h2>{title}</h2>\n");
    }
    w!(out, "<p class=\"muted\">From {}.</p>\n", esc(label));
    let steps: usize = r.ladders.iter().map(|l| l.steps.len()).sum();
    if !r.complete {
        w!(
            out,
            "<div class=\"interrupted\"><strong>Interrupted run: this result is incomplete.</strong> \
             The run did not finish; this page shows the {steps} step{} that did. \
             The densities below may be lower than the machine can reach.</div>\n",
            if steps == 1 { "" } else { "s" }
        );
    }
    verdict(out, r);
    run_facts(out, r);
    super::variants::variants_table(out, r);
    ladders_table(out, r);

    out.push_str("<h3>Charts</h3>\n<div class=\"charts\">\n");
    figure(out, charts::latency(r));
    for f in super::limit_charts::limit_charts(r) {
        figure(out, f);
    }
    if let Some(f) = charts::batch(r) {
        figure(out, f);
    }
    figure(out, charts::cpu(r));
    match charts::power(r) {
        Some(f) => figure(out, f),
        None => out.push_str(
            "<p class=\"na\">Power: no power source (neither measured nor modeled in this run).</p>\n",
        ),
    }
    let mut notes = Vec::new();
    if let Some(first) = r.ladders.first() {
        figure(out, charts::distribution(r, first, &mut notes));
    }
    out.push_str("</div>\n");
    for note in notes {
        w!(
            out,
            "<p class=\"na\">Latency distribution: {}</p>\n",
            esc(&note)
        );
    }

    super::tile::tile_section(out, r);

    out.push_str("<h3>Steps</h3>\n");
    if r.ladders.is_empty() {
        out.push_str("<p class=\"na\">No ladder ran.</p>\n");
    }
    for ladder in &r.ladders {
        steps_table(out, r, ladder);
    }
    cost(out, r);
    out.push_str("</section>\n");
}

pub(super) fn figure(out: &mut String, f: charts::Figure) {
    if f.chart.is_empty() {
        w!(out, "<p class=\"na\">{}</p>\n", esc(&f.empty));
        return;
    }
    w!(
        out,
        "<figure>{}<figcaption>{}</figcaption></figure>\n",
        f.chart.to_svg(),
        esc(&f.caption)
    );
}
