//! The QoS limits a result was judged by, listed from the verdict's own rule
//! table ([`crate::qos::RULES`]), so the page never restates a rule by hand.

use std::fmt::Write as _;

use crate::bench::QosLimits;
use crate::qos::{LimitText, RULES};

/// One `<dt>`/`<dd>` pair: every rule of the table that judged the run,
/// with its limit; for a game without players (`with_players` false), a
/// second pair lists the player rules as not applicable.
pub(super) fn qos_limits(out: &mut String, q: &QosLimits, tick_hz: u32, with_players: bool) {
    out.push_str("<dt>QoS limits</dt><dd>a step fails if it misses any of:<ul>");
    for rule in RULES.iter().filter(|r| with_players || !r.players) {
        match (rule.limit)(q, tick_hz) {
            // tickpack's own words and numbers, nothing from the file.
            LimitText::AtMost { measure, bound } => w!(out, "<li>{measure} &le; {bound}</li>"),
            LimitText::Must(words) => w!(out, "<li>{words}</li>"),
            LimitText::Off => {}
        }
    }
    out.push_str("</ul></dd>\n");
    if !with_players {
        out.push_str(
            "<dt>not applicable</dt><dd>no players: tickpack cannot play this game, so it was judged on run delay and query latency, not on<ul>",
        );
        for rule in RULES.iter().filter(|r| r.players) {
            w!(out, "<li>{}</li>", rule.name);
        }
        out.push_str("</ul></dd>\n");
    }
}
