//! The verdict in words at the top of a result: recommended and maximum
//! density, consolidation and comparison ratios, as the bench recorded
//! them. A comparison's ratios, each with its range over the repetitions
//! and whether the variants can be told apart, come right under the
//! headline.

use std::fmt::Write as _;

use crate::bench::BenchResult;

use super::format::{esc, fmt_ms, fmt_num, fmt_ratio, max_density, recommended_step, servers};

pub(super) fn verdict(out: &mut String, r: &BenchResult) {
    let s = &r.settings;
    let target = fmt_num(s.headroom_target * 100.0);
    let first = r.ladders.first();
    let no_steps = match first {
        Some(l) => l.steps.is_empty(),
        None => true,
    };
    out.push_str("<div class=\"verdict\">\n");
    w!(
        out,
        "<p class=\"headline\">Recommended density: <strong>{}</strong> per machine &middot; \
         maximum density: <strong>{}</strong></p>\n",
        servers(r.recommended_servers),
        max_density(r)
    );
    if let Some(c) = r.comparison.as_ref() {
        comparison_headline(out, c, r.ladders.first().map(|l| l.label.as_str()));
    }
    // Recommended.
    match (r.recommended_servers, recommended_step(r)) {
        (Some(n), step) => {
            w!(
                out,
                "<p><strong>Recommended: {n} servers</strong>{}: the largest passing step whose \
                 server cores stay within the headroom target of <strong>{target} %</strong> busy",
                tiles_of(n, s.tile_servers)
            );
            if let Some(st) = step {
                w!(
                    out,
                    " (measured: {} % busy, p99 transaction latency {} ms)",
                    fmt_num(st.cpu.servers_busy_percent),
                    fmt_ms(st.transaction_latency_us.p99)
                );
            }
            out.push_str(".</p>\n");
        }
        (None, _) => w!(
            out,
            "<p><strong>Recommended: not reached</strong>: {}</p>\n",
            if no_steps {
                "no step finished.".to_string()
            } else {
                format!(
                    "no passing step kept the server cores within the headroom target of \
                     <strong>{target} %</strong> busy."
                )
            }
        ),
    }
    // Maximum.
    let unfound = first.filter(|l| l.interrupted_before_limit());
    match r.max_servers {
        _ if unfound.is_some() => w!(
            out,
            "<p><strong>Maximum: not found</strong>: the run was interrupted before the ladder \
             found its limit{}.</p>\n",
            unfound
                .and_then(|l| l.max_servers)
                .map_or(String::new(), |n| format!(
                    "; at least <strong>{n} servers</strong> met every QoS limit"
                ))
        ),
        Some(n) => w!(
            out,
            "<p><strong>Maximum: {n} servers</strong>{}: the largest step that met every QoS \
             limit before the first failure.</p>\n",
            tiles_of(n, s.tile_servers)
        ),
        None => w!(
            out,
            "<p><strong>Maximum: not reached</strong>: {}</p>\n",
            if no_steps {
                "no step finished."
            } else {
                "no step met the QoS limits before the first failure."
            }
        ),
    }
    // Consolidation.
    match r.consolidation_ratio {
        Some(c) => w!(
            out,
            "<p>Consolidation ratio: <strong>{}</strong>: servers per machine at the recommended \
             density, against {} per machine before consolidating (<code>--before-servers</code>).</p>\n",
            fmt_ratio(c),
            r.before_servers.map_or("the servers".to_string(), |n| format!(
                "<strong>{n} server{}</strong>",
                if n == 1 { "" } else { "s" }
            ))
        ),
        None => out.push_str(
            "<p>Consolidation ratio: <span class=\"na\">n/a</span> (no recommended density).</p>\n",
        ),
    }
    // Comparison (results written before `comparison` existed).
    let l0 = r.ladders.first().map(|l| esc(&l.label));
    let l1 = r.ladders.get(1).map(|l| esc(&l.label));
    match (r.comparison_ratio, l0, l1) {
        _ if r.comparison.is_some() => {}
        (Some(v), Some(a), Some(b)) if s.compare == "placement" => w!(
            out,
            "<p class=\"comparison-sentence\">tickpack's placement ({a}) fits <strong>{}</strong> \
             the servers the kernel's scheduling ({b}) fits at the same QoS.</p>\n",
            fmt_ratio(v)
        ),
        (Some(v), Some(a), Some(b)) => w!(
            out,
            "<p class=\"comparison-sentence\">{a} fits <strong>{}</strong> the servers {b} \
             fits at the same QoS.</p>\n",
            fmt_ratio(v)
        ),
        (Some(v), _, _) => w!(
            out,
            "<p>Comparison ratio: <strong>{}</strong>.</p>\n",
            fmt_ratio(v)
        ),
        (None, _, _) if s.compare == "none" => out.push_str(
            "<p class=\"muted\">Comparison: none asked for (<code>--compare none</code>).</p>\n",
        ),
        (None, _, _) => {
            let missing: Vec<String> = r
                .ladders
                .iter()
                .take(2)
                .filter(|l| l.max_servers.is_none())
                .map(|l| esc(&l.label))
                .collect();
            w!(
                out,
                "<p>Comparison ratio ({}): <span class=\"na\">n/a</span>{}.</p>\n",
                esc(&s.compare),
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(": no maximum density for {}", missing.join(" and "))
                }
            );
        }
    }
    if !r.complete {
        out.push_str(
            "<p><strong>Interrupted run:</strong> these figures cover only the finished steps.</p>\n",
        );
    }
    out.push_str("</div>\n");
}

/// The comparison's ratios with their ranges and judgements, and which
/// variant's densities the headline shows.
fn comparison_headline(out: &mut String, c: &crate::comparison::Comparison, first: Option<&str>) {
    if c.repetitions > 1 {
        w!(
            out,
            "<p class=\"muted\">Densities above: {}, the lower median over {} of {} \
             repetitions (a value one repetition measured); every variant's median and \
             range are in the table of variants below.</p>\n",
            first.map_or("the first variant".into(), esc),
            c.repetitions_finished,
            c.repetitions
        );
    }
    if c.ratios.is_empty() {
        return;
    }
    w!(
        out,
        "<p class=\"comparison-sentence\"><strong>{}</strong> (maximum density, paired per \
         repetition; steps interleaved):</p>\n<ul class=\"ratios\">\n",
        esc(&c.question())
    );
    for (sentence, judgement) in c.statements() {
        w!(
            out,
            "<li><strong>{}</strong>: {}.</li>\n",
            esc(&sentence),
            esc(&judgement)
        );
    }
    out.push_str("</ul>\n");
}

pub(super) fn tiles_of(n: u32, tile: u32) -> String {
    if n.checked_rem(tile) == Some(0) {
        let t = n / tile;
        format!(" ({t} tile{} of {tile})", if t == 1 { "" } else { "s" })
    } else {
        String::new()
    }
}
