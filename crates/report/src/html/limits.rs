//! The QoS limits a result was judged by, listed from the verdict's own rule
//! table ([`crate::qos::RULES`]), so the page never restates a rule by hand.

use std::fmt::Write as _;

use crate::bench::QosLimits;
use crate::qos::{LimitText, RULES};

/// One `<dt>`/`<dd>` pair: every rule of the table with its limit.
pub(super) fn qos_limits(out: &mut String, q: &QosLimits, tick_hz: u32) {
    out.push_str("<dt>QoS limits</dt><dd>a step fails if it misses any of:<ul>");
    for rule in &RULES {
        match (rule.limit)(q, tick_hz) {
            // tickpack's own words and numbers, nothing from the file.
            LimitText::AtMost { measure, bound } => w!(out, "<li>{measure} &le; {bound}</li>"),
            LimitText::Must(words) => w!(out, "<li>{words}</li>"),
            LimitText::Off => {}
        }
    }
    out.push_str("</ul></dd>\n");
}
