//! Which rules of the table judged a result's steps: what the report lists
//! as the limits a step had to meet and draws a chart for.

use crate::bench::BenchResult;
use crate::qos::{RuleId, RULES};

/// The rules that judged at least one step of `r` (each ladder by its own
/// limits and tick), in [`RULES`] order: what the report lists as the
/// limits a step had to meet and draws a chart for.
pub fn judged_rules(r: &BenchResult) -> Vec<RuleId> {
    RULES
        .iter()
        .filter(|rule| {
            r.ladders.iter().any(|l| {
                let (q, tick) = (l.qos(&r.settings), l.tick_hz(&r.settings));
                l.steps.iter().any(|s| rule.judges(&s.figures(tick), q))
            })
        })
        .map(|rule| rule.id)
        .collect()
}
