//! The table of a comparison's variants over its repetitions: per variant
//! the median and range of the maximum and recommended density and the
//! maximum of each repetition, as the bench recorded them.

use std::fmt::Write as _;

use crate::bench::BenchResult;
use crate::comparison::Spread;

use super::charts;
use super::format::{esc, NA};

/// Nothing for a result without a comparison (one ladder run once, or a
/// result written before comparisons were repeated), nor for one whose
/// servers were idle (no density to spread: its zeros would read as one).
pub(super) fn variants_table(out: &mut String, r: &BenchResult) {
    let Some(c) = &r.comparison else {
        return;
    };
    if crate::headline::idle_words(r).is_some() {
        return;
    }
    w!(
        out,
        "<h3>Variants over {} repetition{}</h3>\n",
        c.repetitions,
        if c.repetitions == 1 { "" } else { "s" }
    );
    if c.repetitions_finished < c.repetitions {
        w!(
            out,
            "<p class=\"na\">Only {} of {} repetitions finished: the figures cover what ran.</p>\n",
            c.repetitions_finished,
            c.repetitions
        );
    }
    out.push_str(
        "<div class=\"scroll\"><table class=\"variants\">\n<tr><th rowspan=\"2\">Variant</th>\
         <th colspan=\"2\">Maximum density (servers)</th><th colspan=\"2\">Recommended density (servers)</th>\
         <th rowspan=\"2\">Maximum per repetition</th></tr>\n<tr><th class=\"num\">median</th>\
         <th class=\"num\">range</th><th class=\"num\">median</th><th class=\"num\">range</th></tr>\n",
    );
    let cell = |s: &Spread, f: fn(&Spread, usize) -> String| {
        if s.median.is_none() {
            format!("<span class=\"na\">{NA}</span>")
        } else {
            esc(&f(s, 0))
        }
    };
    for (vi, v) in c.variants.iter().enumerate() {
        let per: Vec<String> = v
            .max_servers
            .per_repetition
            .iter()
            .map(|x| x.map_or("&ndash;".into(), |x| format!("{x:.0}")))
            .collect();
        w!(
            out,
            "<tr><td><span style=\"color:{}\">&#9632;</span> {}</td><td class=\"num\"><strong>{}</strong></td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
            charts::ladder_color(vi),
            esc(&v.label),
            cell(&v.max_servers, Spread::median_words),
            cell(&v.max_servers, Spread::range_words),
            cell(&v.recommended_servers, Spread::median_words),
            cell(&v.recommended_servers, Spread::range_words),
            per.join(", ")
        );
    }
    out.push_str(
        "</table></div>\n<p class=\"muted\">A repetition whose first step failed counts as \
         0 servers (a noisy repetition widens the range); &ndash;: the ladder never found its \
         limit (interrupted) and is left out of the medians and ranges.</p>\n",
    );
}
