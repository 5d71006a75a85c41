//! The run's summary from its finished ladders, without I/O: the densities
//! of the first ladder (tickpack's own settings), the placement comparison
//! ratio, the consolidation ratio and the cost figures.

use tickpack_report::bench::{BenchResult, Ladder, Tco, TcoInputs};

use crate::{tco, Compare, CostInputs};

/// What [`summarize`] fills into the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub recommended_servers: Option<u32>,
    pub max_servers: Option<u32>,
    pub comparison_ratio: Option<f64>,
    pub consolidation_ratio: Option<f64>,
    pub tco: Option<Tco>,
}

impl Summary {
    /// Writes the summary's fields into `result`.
    pub fn apply(self, result: &mut BenchResult) {
        result.recommended_servers = self.recommended_servers;
        result.max_servers = self.max_servers;
        result.comparison_ratio = self.comparison_ratio;
        result.consolidation_ratio = self.consolidation_ratio;
        result.tco = self.tco;
    }
}

/// Rounds to two decimals, as every ratio in the result is shown.
fn two_decimals(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The summary of a finished run.
pub fn summarize(ladders: &[Ladder], compare: Compare, cost: &CostInputs) -> Summary {
    let mut out = Summary {
        recommended_servers: None,
        max_servers: None,
        comparison_ratio: None,
        consolidation_ratio: None,
        tco: None,
    };
    let Some(first) = ladders.first() else {
        return out;
    };
    out.recommended_servers = first.recommended_servers;
    out.max_servers = first.max_servers;
    if compare == Compare::Placement && ladders.len() == 2 {
        if let (Some(a), Some(b)) = (ladders[0].max_servers, ladders[1].max_servers) {
            out.comparison_ratio = Some(two_decimals(f64::from(a) / f64::from(b)));
        }
    }
    if let Some(rec) = out.recommended_servers {
        let ratio = f64::from(rec) / f64::from(cost.before_servers.max(1));
        out.consolidation_ratio = Some(two_decimals(ratio));
        let step = first.steps.iter().find(|s| s.servers == rec);
        let after_watts = step
            .and_then(|s| s.power.as_ref())
            .map(|p| (p.watts, p.source));
        if let Some((watts, source)) = after_watts.filter(|_| ratio >= 1.0) {
            let inputs = TcoInputs {
                before_watts: cost.before_watts,
                after_watts: watts,
                ratio,
                machines: cost.machines,
                price_per_kwh: cost.price_per_kwh,
                currency_rate: cost.currency_rate,
                hours_per_year: cost.hours_per_year,
            };
            out.tco = tco::compute(&inputs, tco::watts_source_label(source)).ok();
        }
    }
    out
}

/// Puts `ladder` into `ladders`, replacing its earlier copy (same label).
pub fn upsert_ladder(ladders: &mut Vec<Ladder>, ladder: Ladder) {
    match ladders.iter_mut().find(|l| l.label == ladder.label) {
        Some(l) => *l = ladder,
        None => ladders.push(ladder),
    }
}

#[cfg(test)]
mod tests {
    use tickpack_report::bench::{Power, PowerSourceKind};

    use super::*;
    use crate::ladder::StepRequest;
    use crate::test_support::step;

    fn cost(before_servers: u32) -> CostInputs {
        CostInputs {
            before_watts: 300.0,
            before_servers,
            machines: 18,
            price_per_kwh: 0.2,
            currency_rate: 1.0,
            hours_per_year: 8760.0,
        }
    }

    /// A ladder whose passing steps have 6, 12, 18 servers; the recommended
    /// one is `rec`, the maximum `max`, each step drawing `watts`.
    fn ladder(
        label: &str,
        rec: Option<u32>,
        max: Option<u32>,
        watts: Option<(f64, &str)>,
    ) -> Ladder {
        let steps = (1..=3)
            .map(|index| {
                let req = StepRequest {
                    index,
                    servers: index * 6,
                    baseline: None,
                };
                let mut s = step(&req, "pass", vec![], 50.0, 1_000);
                s.power = watts.map(|(watts, source)| Power {
                    watts,
                    source: match source {
                        "rapl" => PowerSourceKind::Rapl,
                        "modeled" => PowerSourceKind::Modeled,
                        other => panic!("no test source {other:?}"),
                    },
                });
                s
            })
            .collect();
        Ladder {
            label: label.into(),
            backend: "process".into(),
            net: None,
            placement: "spread".into(),
            steps,
            max_servers: max,
            recommended_servers: rec,
            stopped: "x".into(),
        }
    }

    #[test]
    fn the_first_ladder_gives_the_densities_and_the_consolidation_ratio() {
        let s = summarize(
            &[
                ladder("a", Some(12), Some(18), None),
                ladder("b", Some(6), Some(6), None),
            ],
            Compare::None,
            &cost(6),
        );
        assert_eq!(s.recommended_servers, Some(12));
        assert_eq!(s.max_servers, Some(18));
        assert_eq!(s.consolidation_ratio, Some(2.0));
        assert_eq!(s.comparison_ratio, None, "only --compare placement has one");
        assert_eq!(s.tco, None, "no power reading, no cost figures");
    }

    #[test]
    fn placement_comparison_divides_the_maxima_to_two_decimals() {
        let s = summarize(
            &[
                ladder("a", None, Some(18), None),
                ladder("b", None, Some(12), None),
            ],
            Compare::Placement,
            &cost(6),
        );
        assert_eq!(s.comparison_ratio, Some(1.5));
        let s = summarize(
            &[
                ladder("a", None, Some(6), None),
                ladder("b", None, Some(18), None),
            ],
            Compare::Placement,
            &cost(6),
        );
        assert_eq!(s.comparison_ratio, Some(0.33));
        let s = summarize(
            &[
                ladder("a", None, Some(6), None),
                ladder("b", None, None, None),
            ],
            Compare::Placement,
            &cost(6),
        );
        assert_eq!(s.comparison_ratio, None);
    }

    #[test]
    fn cost_figures_use_the_recommended_steps_watts_and_name_their_source() {
        let s = summarize(
            &[ladder("a", Some(12), Some(18), Some((150.0, "rapl")))],
            Compare::None,
            &cost(6),
        );
        let tco = s.tco.expect("cost figures");
        assert_eq!(tco.inputs.after_watts, 150.0);
        assert_eq!(tco.inputs.ratio, 2.0);
        assert_eq!(tco.watts_source.to_string(), "measured (rapl)");
        let s = summarize(
            &[ladder("a", Some(12), Some(18), Some((150.0, "modeled")))],
            Compare::None,
            &cost(6),
        );
        assert_eq!(
            s.tco.expect("cost figures").watts_source.to_string(),
            "modeled"
        );
    }

    #[test]
    fn no_cost_figures_when_consolidation_would_need_more_machines() {
        // 6 recommended servers where 12 ran before: a ratio below 1.
        let s = summarize(
            &[ladder("a", Some(6), Some(18), Some((150.0, "rapl")))],
            Compare::None,
            &cost(12),
        );
        assert_eq!(s.consolidation_ratio, Some(0.5));
        assert_eq!(s.tco, None);
    }

    #[test]
    fn no_ladder_no_summary() {
        let s = summarize(&[], Compare::None, &cost(6));
        assert_eq!(s.recommended_servers, None);
        assert_eq!(s.max_servers, None);
    }

    #[test]
    fn a_ladder_run_again_replaces_its_earlier_copy() {
        let mut ls = vec![ladder("a", None, Some(6), None)];
        upsert_ladder(&mut ls, ladder("b", None, None, None));
        upsert_ladder(&mut ls, ladder("a", None, Some(12), None));
        assert_eq!(ls.len(), 2);
        assert_eq!(ls[0].max_servers, Some(12));
        assert_eq!(ls[1].label, "b");
    }
}
