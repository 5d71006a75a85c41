//! The run's summary from its finished ladders, without I/O: the densities
//! of the first variant (tickpack's own settings; over repetitions, the
//! lower median, a value one repetition measured), the comparison over the
//! repetitions (per variant the median and range of its densities, every
//! ratio with its range and whether the variants can be told apart),
//! whether the ladders found their limit, the headline (servers per server
//! core, [`tickpack_report::headline`]) and, only against a "before" the
//! user gave, the consolidation ratio and the cost figures.

use tickpack_report::bench::{BenchResult, Ladder, Tco, TcoInputs};
use tickpack_report::comparison::{Comparison, DensityRatio, Separation, Spread, VariantSummary};

use crate::{tco, Before, Compare, ComparisonPlan};

/// What [`summarize`] fills into the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Every ladder of the first variant found its limit.
    pub limit_found: Option<bool>,
    pub recommended_servers: Option<u32>,
    pub max_servers: Option<u32>,
    pub comparison_ratio: Option<f64>,
    pub comparison: Option<Comparison>,
    pub consolidation_ratio: Option<f64>,
    pub tco: Option<Tco>,
}

impl Summary {
    /// Writes the summary's fields into `result`, with the headline over
    /// the result's server cores.
    pub fn apply(self, result: &mut BenchResult) {
        let server_cores = u32::try_from(result.cores.servers.len()).unwrap_or(0);
        result.servers_per_core = self
            .recommended_servers
            .and_then(|n| tickpack_report::headline::stored_per_core(n, server_cores));
        result.limit_found = self.limit_found;
        result.recommended_servers = self.recommended_servers;
        result.max_servers = self.max_servers;
        result.comparison_ratio = self.comparison_ratio;
        result.comparison = self.comparison;
        result.consolidation_ratio = self.consolidation_ratio;
        result.tco = self.tco;
    }
}

/// Rounds to two decimals, as every ratio in the result is shown.
fn two_decimals(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Rounds a stored ratio to four decimals (the JSON stays readable).
fn four_decimals(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The ladder of `label` in `repetition`.
fn ladder_of<'a>(ladders: &'a [Ladder], label: &str, repetition: u32) -> Option<&'a Ladder> {
    ladders
        .iter()
        .find(|l| l.label == label && l.repetition() == repetition)
}

/// A density a ladder found. A ladder that found its limit without
/// reaching the density (its first step failed, or no passing step kept
/// within the headroom) measured 0 servers: on a noisy machine that is
/// part of the spread, not a gap. `None` when the ladder never found its
/// limit (interrupted before it, or no step finished): its figure is only
/// a lower bound.
fn found(l: &Ladder, density: fn(&Ladder) -> Option<u32>) -> Option<f64> {
    if l.interrupted_before_limit() || l.steps.is_empty() {
        return None;
    }
    Some(density(l).map_or(0.0, f64::from))
}

/// One variant's densities over `repeat` repetitions.
fn variant(ladders: &[Ladder], label: &str, name: &str, repeat: u32) -> VariantSummary {
    let spread = |density: fn(&Ladder) -> Option<u32>| {
        Spread::of(
            (1..=repeat)
                .map(|r| ladder_of(ladders, label, r).and_then(|l| found(l, density)))
                .collect(),
        )
    };
    VariantSummary {
        label: label.into(),
        name: name.into(),
        max_servers: spread(|l| l.max_servers),
        recommended_servers: spread(|l| l.recommended_servers),
    }
}

/// The comparison over the repetitions: every variant's spread and every
/// ratio of maximum densities, paired per repetition.
pub fn comparison(
    ladders: &[Ladder],
    plan: &ComparisonPlan,
    compare: Compare,
    repeat: u32,
) -> Comparison {
    let variants: Vec<VariantSummary> = plan
        .specs
        .iter()
        .map(|s| variant(ladders, &s.label, &s.name, repeat))
        .collect();
    let ratios = plan
        .ratios
        .iter()
        .filter_map(|&(n, d)| {
            let (num, den) = (variants.get(n)?, variants.get(d)?);
            let per_repetition = num
                .max_servers
                .per_repetition
                .iter()
                .zip(&den.max_servers.per_repetition)
                .map(|(a, b)| match (a, b) {
                    // No ratio where the denominator held no server.
                    (Some(a), Some(b)) if *b > 0.0 => Some(four_decimals(a / b)),
                    _ => None,
                })
                .collect();
            Some(DensityRatio {
                numerator: num.label.clone(),
                denominator: den.label.clone(),
                numerator_name: num.name.clone(),
                denominator_name: den.name.clone(),
                ratio: Spread::of(per_repetition),
                separation: Separation::judge(&num.max_servers, &den.max_servers),
            })
        })
        .collect();
    let repetitions_finished = (1..=repeat)
        .filter(|&r| {
            plan.specs.iter().all(|s| {
                ladder_of(ladders, &s.label, r)
                    .is_some_and(|l| !l.stopped.starts_with("interrupted"))
            })
        })
        .count() as u32;
    Comparison {
        kind: compare.as_str().into(),
        repetitions: repeat,
        repetitions_finished,
        variants,
        ratios,
    }
}

/// The summary of a run.
pub fn summarize(
    ladders: &[Ladder],
    plan: &ComparisonPlan,
    compare: Compare,
    repeat: u32,
    before: Option<&Before>,
) -> Summary {
    let mut out = Summary {
        limit_found: None,
        recommended_servers: None,
        max_servers: None,
        comparison_ratio: None,
        comparison: None,
        consolidation_ratio: None,
        tco: None,
    };
    let Some(first) = ladders.first() else {
        return out;
    };
    let c = comparison(ladders, plan, compare, repeat);
    out.limit_found = Some(
        ladders
            .iter()
            .filter(|l| l.label == first.label)
            .all(Ladder::limit_found),
    );
    // The first variant's densities: over repetitions the lower median (a
    // value a repetition measured); run once, the ladder's own.
    let first_variant = c.variant(&first.label).filter(|_| repeat > 1);
    // (A median of 0 servers is "not reached", as for one ladder.)
    let servers = |x: f64| (x >= 1.0).then_some(x as u32);
    out.recommended_servers = match first_variant {
        Some(v) => v.recommended_servers.lower_median().and_then(servers),
        None => first.recommended_servers,
    };
    out.max_servers = match first_variant {
        Some(v) => v.max_servers.lower_median().and_then(servers),
        None => first.max_servers,
    };
    if compare == Compare::Placement {
        out.comparison_ratio = c
            .ratios
            .first()
            .and_then(|r| r.ratio.median)
            .map(two_decimals);
    }
    if repeat > 1 || !plan.ratios.is_empty() {
        out.comparison = Some(c);
    }
    // The ratio and the cost only against a "before" the user gave.
    if let (Some(rec), Some(before)) = (out.recommended_servers, before) {
        let ratio = f64::from(rec) / f64::from(before.servers.max(1));
        out.consolidation_ratio = Some(two_decimals(ratio));
        // The watts of the recommended step, from a ladder of the first
        // variant that recommended it.
        let step = ladders
            .iter()
            .filter(|l| l.label == first.label && l.recommended_servers == Some(rec))
            .find_map(|l| l.steps.iter().find(|s| s.servers == rec));
        let after_watts = step
            .and_then(|s| s.power.as_ref())
            .map(|p| (p.watts, p.source));
        // Below 1 there is no consolidation to cost (the summary says why;
        // `tickpack tco` computes it when asked).
        let cost = before.cost.as_ref().filter(|_| ratio >= 1.0);
        if let (Some((watts, source)), Some(cost)) = (after_watts, cost) {
            let inputs = TcoInputs {
                before_watts: cost.before_watts,
                after_watts: watts,
                ratio,
                machines: cost.machines,
                price_per_kwh: cost.price_per_kwh,
                currency_rate: cost.currency_rate,
                hours_per_year: cost.hours_per_year,
            };
            out.tco = tco::compute(&inputs, tco::watts_source_label(source))
                .ok()
                .map(|t| Tco {
                    currency: Some(cost.currency.clone()),
                    ..t
                });
        }
    }
    out
}

/// Puts `ladder` into `ladders`, replacing its earlier copy (same label
/// and repetition).
pub fn upsert_ladder(ladders: &mut Vec<Ladder>, ladder: Ladder) {
    match ladders
        .iter_mut()
        .find(|l| l.label == ladder.label && l.repetition == ladder.repetition)
    {
        Some(l) => *l = ladder,
        None => ladders.push(ladder),
    }
}

#[cfg(test)]
mod tests {
    use tickpack_report::bench::{Power, PowerSourceKind};

    use tickpack_host::fleet::Backend;
    use tickpack_host::netpath::NetKind;
    use tickpack_host::placement::Policy;

    use super::*;
    use crate::ladder::StepRequest;
    use crate::test_support::step;
    use crate::LadderSpec;

    /// A plan of the ladders' labels (in order of first appearance); a
    /// placement comparison's ratio is the first over the second.
    fn plan(ladders: &[Ladder], compare: Compare) -> ComparisonPlan {
        let mut specs: Vec<LadderSpec> = vec![];
        for l in ladders {
            if !specs.iter().any(|s| s.label == l.label) {
                specs.push(LadderSpec {
                    label: l.label.clone(),
                    name: format!("variant {}", l.label),
                    backend: Backend::Process,
                    net: NetKind::Veth,
                    placement: Policy::Spread,
                    batch: None,
                    game: None,
                });
            }
        }
        let ratios = match compare {
            Compare::None => vec![],
            Compare::Placement => vec![(0, 1)],
            _ => (1..specs.len()).map(|i| (i, 0)).collect(),
        };
        ComparisonPlan { specs, ratios }
    }

    /// The summary of ladders run once.
    fn once(ladders: &[Ladder], compare: Compare, before: &Before) -> Summary {
        summarize(ladders, &plan(ladders, compare), compare, 1, Some(before))
    }

    /// The summary of ladders over `repeat` repetitions.
    fn repeated(ladders: &[Ladder], compare: Compare, repeat: u32) -> Summary {
        summarize(
            ladders,
            &plan(ladders, compare),
            compare,
            repeat,
            Some(&cost(6)),
        )
    }

    /// A ladder of `label` in repetition `rep` with maximum `max`.
    fn rep(label: &str, rep: u32, rec: Option<u32>, max: Option<u32>) -> Ladder {
        Ladder {
            repetition: Some(rep),
            stopped: "step 4 (24 servers) failed QoS".into(),
            ..ladder(label, rec, max, None)
        }
    }

    #[test]
    fn every_variant_gets_the_median_and_range_of_its_densities() {
        let ls = [
            rep("p", 1, Some(6), Some(18)),
            rep("n", 1, Some(6), Some(12)),
            rep("p", 2, Some(12), Some(12)),
            rep("n", 2, Some(6), Some(12)),
            rep("p", 3, Some(6), Some(18)),
            rep("n", 3, None, Some(18)),
        ];
        let s = repeated(&ls, Compare::Backend, 3);
        let c = s.comparison.expect("a comparison");
        assert_eq!(
            (c.kind.as_str(), c.repetitions, c.repetitions_finished),
            ("backend", 3, 3)
        );
        let p = &c.variants[0];
        assert_eq!(
            p.max_servers.per_repetition,
            vec![Some(18.0), Some(12.0), Some(18.0)]
        );
        assert_eq!(p.max_servers.median, Some(18.0));
        assert_eq!(
            (p.max_servers.min, p.max_servers.max),
            (Some(12.0), Some(18.0))
        );
        assert_eq!(p.recommended_servers.median, Some(6.0));
        let n = &c.variants[1];
        // No step within the headroom: 0 servers recommended.
        assert_eq!(
            n.recommended_servers.per_repetition,
            vec![Some(6.0), Some(6.0), Some(0.0)]
        );
        assert_eq!(n.recommended_servers.median, Some(6.0));
        // The ratio is paired per repetition: 12/18, 12/12, 18/18.
        let r = &c.ratios[0];
        assert_eq!((r.numerator.as_str(), r.denominator.as_str()), ("n", "p"));
        assert_eq!(
            r.ratio.per_repetition,
            vec![Some(0.6667), Some(1.0), Some(1.0)]
        );
        assert_eq!(r.ratio.median, Some(1.0));
        assert_eq!((r.ratio.min, r.ratio.max), (Some(0.6667), Some(1.0)));
        assert_eq!(r.separation, Separation::CannotTellApart);
        // The headline densities: the first variant's lower medians.
        assert_eq!((s.recommended_servers, s.max_servers), (Some(6), Some(18)));
        assert_eq!(
            s.comparison_ratio, None,
            "only placement keeps the old field"
        );
    }

    #[test]
    fn ranges_that_do_not_overlap_name_the_denser_variant() {
        let ls = [
            rep("p", 1, None, Some(18)),
            rep("n", 1, None, Some(6)),
            rep("p", 2, None, Some(12)),
            rep("n", 2, None, Some(6)),
        ];
        let c = repeated(&ls, Compare::Backend, 2).comparison.unwrap();
        assert_eq!(c.ratios[0].separation, Separation::Lower);
        assert_eq!(c.ratios[0].ratio.range_words(2), "0.33-0.50");
        assert_eq!(c.ratios[0].ratio.median_words(2), "0.42");
    }

    #[test]
    fn a_failed_first_step_counts_as_zero_and_an_interruption_drops_out() {
        let mut interrupted = rep("n", 2, Some(6), Some(6));
        interrupted.stopped = "interrupted before its limit: at least 6 servers passed".into();
        let ls = [
            rep("p", 1, None, Some(12)),
            rep("n", 1, None, Some(6)),
            rep("p", 2, None, Some(12)),
            interrupted,
            rep("p", 3, None, None),
            rep("n", 3, None, Some(6)),
        ];
        let c = repeated(&ls, Compare::Placement, 3).comparison.unwrap();
        assert_eq!(c.repetitions_finished, 2);
        assert_eq!(
            c.variants[1].max_servers.per_repetition,
            vec![Some(6.0), None, Some(6.0)]
        );
        // p's third ladder found its limit at the first step: 0 servers.
        assert_eq!(
            c.variants[0].max_servers.per_repetition,
            vec![Some(12.0), Some(12.0), Some(0.0)]
        );
        // Repetition 2 has no ratio (n was interrupted); 0/6 is 0.
        assert_eq!(
            c.ratios[0].ratio.per_repetition,
            vec![Some(2.0), None, Some(0.0)]
        );
        // 0-12 against 6: the zero makes the ranges overlap.
        assert_eq!(c.ratios[0].separation, Separation::CannotTellApart);
        // The other way round there is no ratio where nothing fitted.
        let flipped = repeated(&ls, Compare::Backend, 3).comparison.unwrap();
        assert_eq!(
            flipped.ratios[0].ratio.per_repetition,
            vec![Some(0.5), None, None]
        );
        let c = repeated(&ls[..2], Compare::Placement, 1)
            .comparison
            .unwrap();
        assert_eq!(c.ratios[0].separation, Separation::TooFewRepetitions);
    }

    #[test]
    fn a_single_variant_run_once_has_no_comparison() {
        let s = once(
            &[ladder("a", Some(6), Some(6), None)],
            Compare::None,
            &cost(6),
        );
        assert_eq!(s.comparison, None);
        let s = repeated(
            &[
                rep("a", 1, Some(6), Some(6)),
                rep("a", 2, Some(12), Some(12)),
            ],
            Compare::None,
            2,
        );
        let c = s.comparison.expect("a repeated run has its spread");
        assert!(c.ratios.is_empty());
        assert_eq!(c.variants[0].max_servers.range_words(0), "6-12");
        assert_eq!(s.max_servers, Some(6), "the lower median");
    }

    fn cost(before_servers: u32) -> Before {
        Before {
            servers: before_servers,
            cost: Some(crate::CostInputs {
                before_watts: 300.0,
                machines: 18,
                price_per_kwh: 0.2,
                currency: "EUR".into(),
                currency_rate: 1.0,
                hours_per_year: 8760.0,
            }),
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
            limit_found: Some(true),
            repetition: None,
            game: None,
        }
    }

    #[test]
    fn the_first_ladder_gives_the_densities_and_the_consolidation_ratio() {
        let s = once(
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
        let s = once(
            &[
                ladder("a", None, Some(18), None),
                ladder("b", None, Some(12), None),
            ],
            Compare::Placement,
            &cost(6),
        );
        assert_eq!(s.comparison_ratio, Some(1.5));
        let s = once(
            &[
                ladder("a", None, Some(6), None),
                ladder("b", None, Some(18), None),
            ],
            Compare::Placement,
            &cost(6),
        );
        assert_eq!(s.comparison_ratio, Some(0.33));
        let s = once(
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
        let s = once(
            &[ladder("a", Some(12), Some(18), Some((150.0, "rapl")))],
            Compare::None,
            &cost(6),
        );
        let tco = s.tco.expect("cost figures");
        assert_eq!(tco.inputs.after_watts, 150.0);
        assert_eq!(tco.inputs.ratio, 2.0);
        assert_eq!(tco.watts_source.to_string(), "measured (rapl)");
        let s = once(
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
        let s = once(
            &[ladder("a", Some(6), Some(18), Some((150.0, "rapl")))],
            Compare::None,
            &cost(12),
        );
        assert_eq!(s.consolidation_ratio, Some(0.5));
        assert_eq!(s.tco, None);
    }

    #[test]
    fn no_ratio_and_no_cost_without_a_before() {
        // bench_invented_a_before_of_6_servers: with no --before-servers the
        // ratio was computed against a hidden default of 6.
        let ls = [ladder("a", Some(12), Some(18), Some((150.0, "rapl")))];
        let s = summarize(&ls, &plan(&ls, Compare::None), Compare::None, 1, None);
        assert_eq!(s.recommended_servers, Some(12));
        assert_eq!((s.consolidation_ratio, s.tco), (None, None));
        // The servers before alone: a ratio, no cost.
        let servers_only = Before {
            servers: 6,
            cost: None,
        };
        let s = once(&ls, Compare::None, &servers_only);
        assert_eq!((s.consolidation_ratio, s.tco), (Some(2.0), None));
        // Everything given: the cost names its currency.
        let s = once(&ls, Compare::None, &cost(6));
        assert_eq!(s.tco.unwrap().currency.as_deref(), Some("EUR"));
    }

    #[test]
    fn the_headline_is_the_recommended_density_over_the_server_cores() {
        let ls = [ladder("a", Some(3), Some(6), None)];
        let s = summarize(&ls, &plan(&ls, Compare::None), Compare::None, 1, None);
        let mut r: BenchResult =
            serde_json::from_str(include_str!("../../report/tests/fixtures/result-v1.json"))
                .unwrap();
        r.cores.servers = vec![1, 2];
        r.cores.load_generator = vec![0];
        s.apply(&mut r);
        assert_eq!(r.servers_per_core, Some(1.5));
        assert_eq!(r.limit_found, Some(true));
        // A ladder that never failed: a lower bound, said so.
        let mut l = ladder("a", Some(6), Some(6), None);
        l.limit_found = Some(false);
        let ls = [l];
        summarize(&ls, &plan(&ls, Compare::None), Compare::None, 1, None).apply(&mut r);
        assert_eq!(r.limit_found, Some(false));
        assert!(r.recommended_is_lower_bound());
        let h = tickpack_report::headline::Headline::of(&r).unwrap();
        assert_eq!(h.per_core_words(), "at least 3.00 servers per server core");
    }

    #[test]
    fn no_ladder_no_summary() {
        let s = once(&[], Compare::None, &cost(6));
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
