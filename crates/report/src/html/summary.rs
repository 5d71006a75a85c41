//! The verdict in words at the top of a result: first the headline,
//! servers per server core with what it means for this machine and the
//! projected one and its assumptions ([`crate::headline`]); then the
//! recommended and maximum density ("at least" when no step failed), the
//! consolidation ratio (only against a "before" the user gave; below 1 in
//! words) and the comparison ratios, as the bench recorded them. A comparison's ratios, each with its range over the repetitions
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
    headline(out, r);
    w!(
        out,
        "<p>Recommended density: <strong>{}</strong> on this machine &middot; \
         maximum density: <strong>{}</strong></p>\n",
        if r.recommended_is_lower_bound() {
            format!("at least {}", servers(r.recommended_servers))
        } else {
            servers(r.recommended_servers)
        },
        max_density(r)
    );
    if let Some(c) = r.comparison.as_ref() {
        // "Densities above" only when there are some to speak of.
        let densities = r.recommended_servers.is_some() || r.max_servers.is_some();
        let first = r.ladders.first().map(|l| l.label.as_str());
        comparison_headline(out, c, first.filter(|_| densities), densities);
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
                if super::format::measured_latency(st) {
                    w!(
                        out,
                        " (measured: {} % busy, p99 transaction latency {} ms)",
                        fmt_num(st.cpu.servers_busy_percent),
                        fmt_ms(st.transaction_latency_us.p99)
                    );
                } else {
                    w!(
                        out,
                        " (measured: {} % busy)",
                        fmt_num(st.cpu.servers_busy_percent)
                    );
                }
            }
            out.push_str(".</p>\n");
        }
        (None, _) => w!(
            out,
            "<p><strong>Recommended: not reached</strong>: {}</p>\n",
            if no_steps {
                "no step finished.".to_string()
            } else if crate::headline::idle_words(r).is_some() {
                "the servers were idle, so there is no density to recommend.".to_string()
            } else {
                format!(
                    "no passing step kept the server cores within the headroom target of \
                     <strong>{target} %</strong> busy."
                )
            }
        ),
    }
    // Maximum.
    let unfound = first.filter(|l| !l.limit_found() && !l.steps.is_empty());
    let idle = first.and_then(|l| l.steps.iter().find(|s| s.verdict.is_idle()));
    match r.max_servers {
        _ if idle.is_some() => w!(
            out,
            "<p><strong>Maximum: none</strong>: at {} the servers were idle, so the ladder \
             stopped with no density.</p>\n",
            crate::words::servers(idle.map_or(0, |s| s.servers))
        ),
        _ if unfound.is_some() => w!(
            out,
            "<p><strong>Maximum: {}</strong>: no step failed, so the ladder did not find its \
             limit ({}){}.</p>\n",
            unfound
                .and_then(|l| l.max_servers)
                .or(r.max_servers)
                .map_or("not found".to_string(), |n| format!(
                    "at least {}",
                    crate::words::servers(n)
                )),
            if unfound.is_some_and(|l| l.stopped.starts_with("interrupted")) {
                "the run was interrupted"
            } else {
                "it stopped at the last step, <code>--max-steps</code>; raise it to find the limit"
            },
            unfound
                .and_then(|l| l.max_servers)
                .map_or(String::new(), |n| format!(
                    "; <strong>{n} servers</strong> met every QoS limit"
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
                "the first step already failed QoS."
            }
        ),
    }
    // Consolidation: only against a "before" the user gave.
    match (
        r.consolidation_ratio,
        r.recommended_servers,
        r.before_servers,
    ) {
        (Some(_), Some(rec), Some(before)) => {
            let words = crate::headline::consolidation_words(rec, before);
            match words.split_once(" (") {
                Some((head, rest)) if head.starts_with("consolidation ratio") => w!(
                    out,
                    "<p>Consolidation ratio: <strong>{}</strong> ({}</p>\n",
                    esc(head.trim_start_matches("consolidation ratio ")),
                    esc(rest)
                ),
                _ => w!(
                    out,
                    "<p><strong>No consolidation</strong>: {}.</p>\n",
                    esc(words.trim_start_matches("no consolidation: "))
                ),
            }
        }
        (Some(c), _, _) => w!(
            out,
            "<p>Consolidation ratio: <strong>{}</strong> (its baseline was not recorded).</p>\n",
            fmt_ratio(c)
        ),
        (None, None, _) => out.push_str(
            "<p>Consolidation ratio: <span class=\"na\">n/a</span> (no recommended density).</p>\n",
        ),
        (None, Some(_), _) => out.push_str(
            "<p class=\"muted\">Consolidation ratio: not computed: it needs the servers one of \
             your machines runs today (<code>--before-servers N</code>).</p>\n",
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
fn comparison_headline(
    out: &mut String,
    c: &crate::comparison::Comparison,
    first: Option<&str>,
    densities: bool,
) {
    if c.repetitions > 1 && densities {
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

/// The headline: servers per server core, what it means for this machine
/// and the projected one, and what it assumes.
fn headline(out: &mut String, r: &BenchResult) {
    let Some(h) = crate::headline::Headline::of(r) else {
        match crate::headline::idle_words(r) {
            Some(idle) => w!(
                out,
                "<p class=\"headline\">Servers per server core: <strong>none, the servers were idle</strong></p>\n<p>{}.</p>\n",
                esc(&idle)
            ),
            None => out.push_str(
                "<p class=\"headline\">Servers per server core: <strong>not reached</strong> \
                 (no step passed within the headroom target).</p>\n",
            ),
        }
        return;
    };
    w!(
        out,
        "<p class=\"headline\"><strong>{}</strong> at QoS within the headroom target</p>\n",
        esc(&h.answer_words())
    );
    for line in h.trust_lines() {
        let class = if line.starts_with("UNSTABLE") {
            "fail"
        } else {
            "muted estimate"
        };
        w!(out, "<p class=\"{class}\">{}</p>\n", esc(&line));
    }
    if let Some(d) = h.disturbed_words() {
        w!(out, "<p class=\"fail\"><strong>{}</strong></p>\n", esc(&d));
    }
    out.push_str("<ul class=\"machines\">\n");
    for line in h.machine_lines() {
        w!(out, "<li>{}</li>\n", esc(&line));
    }
    w!(
        out,
        "</ul>\n<p class=\"muted assumptions\">Assumptions: {}.</p>\n",
        esc(&h.assumptions())
    );
    machine_speed(out, r);
}

/// The machine's speed through the run, beside the headline.
pub(super) fn machine_speed(out: &mut String, r: &BenchResult) {
    if let Some(m) = &r.machine_speed {
        if let Some(words) = m.words() {
            let class = if m.unstable() { "fail" } else { "muted" };
            w!(
                out,
                "<p class=\"{class} machine-speed\">{}</p>\n",
                esc(&words)
            );
        }
    }
}

pub(super) fn tiles_of(n: u32, tile: u32) -> String {
    if n.checked_rem(tile) == Some(0) {
        let t = n / tile;
        format!(" ({t} tile{} of {tile})", if t == 1 { "" } else { "s" })
    } else {
        String::new()
    }
}
