//! The QoS limits a result was judged by, listed from the verdict's own rule
//! table ([`crate::qos::RULES`]), so the page never restates a rule by hand.
//!
//! Only the rules that judged a step are listed as limits: a rule whose
//! figure no step measured (a third-party game's servers report no tick lateness or
//! frame time) passed every step without looking at anything, and listing
//! it would claim a check that never happened. Such rules are named apart,
//! as "not judged", and a game's player rules as "not applicable".

use std::fmt::Write as _;

use crate::bench::BenchResult;
use crate::judged::judged_rules;
use crate::qos::{LimitText, RULES};

/// The `<dt>`/`<dd>` pairs of the limits: every rule of the table that
/// judged a step of `r`, with its limit; for a game without players, the
/// player rules as not applicable; rules set but never judged apart.
pub(super) fn qos_limits(out: &mut String, r: &BenchResult) {
    let (q, tick_hz) = (&r.settings.qos, r.settings.tick_hz);
    let with_players = r.settings.players_per_server > 0;
    let any_step = r.ladders.iter().any(|l| !l.steps.is_empty());
    let judged = judged_rules(r);
    let applies = |players: bool| with_players || !players;
    let set = |rule: &crate::qos::Rule| (rule.limit)(q, tick_hz) != LimitText::Off;
    if any_step {
        out.push_str("<dt>QoS limits</dt><dd>a step fails if it misses any of:<ul>");
    } else {
        out.push_str(
            "<dt>QoS limits</dt><dd>no step ran; a step would have failed if it missed any of:<ul>",
        );
    }
    for rule in RULES.iter().filter(|r| applies(r.players)) {
        if any_step && !judged.contains(&rule.id) {
            continue;
        }
        match (rule.limit)(q, tick_hz) {
            // tickpack's own words and numbers, nothing from the file.
            LimitText::AtMost { measure, bound } => w!(out, "<li>{measure} &le; {bound}</li>"),
            LimitText::Must(words) => w!(out, "<li>{words}</li>"),
            LimitText::Off => {}
        }
    }
    out.push_str("</ul></dd>\n");
    let unjudged: Vec<&str> = RULES
        .iter()
        .filter(|r| any_step && applies(r.players) && set(r) && !judged.contains(&r.id))
        .map(|r| r.name)
        .collect();
    if !unjudged.is_empty() {
        out.push_str(
            "<dt>not judged</dt><dd>no step measured what these rules read (the game's servers \
             do not report it), so no step was judged on<ul>",
        );
        for name in unjudged {
            w!(out, "<li>{name}</li>");
        }
        out.push_str("</ul></dd>\n");
    }
    if !with_players {
        // Name the rules that did judge it, not the ones that could have:
        // a game without a query was judged on its run delay alone.
        let on: Vec<&str> = RULES
            .iter()
            .filter(|r| !r.players && (!any_step || judged.contains(&r.id)))
            .map(|r| r.name)
            .collect();
        let on = if on.is_empty() {
            "nothing (no step measured a figure these rules read)".to_string()
        } else {
            on.join(" and ")
        };
        w!(
            out,
            "<dt>not applicable</dt><dd>no players: tickpack did not play this game, so it was judged on {on}, not on<ul>"
        );
        for rule in RULES.iter().filter(|r| r.players) {
            w!(out, "<li>{}</li>", rule.name);
        }
        out.push_str("</ul></dd>\n");
    }
}
