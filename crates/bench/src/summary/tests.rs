//! The summary over scripted ladders: medians and ranges, ratios, the
//! headline with its spread, the consolidation and cost figures.

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
                load: None,
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
fn ladder(label: &str, rec: Option<u32>, max: Option<u32>, watts: Option<(f64, &str)>) -> Ladder {
    let steps = (1..=3)
        .map(|index| {
            let req = StepRequest {
                index,
                tiles: index,
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
        load: None,
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
    let mut r: BenchResult = serde_json::from_str(include_str!(
        "../../../report/tests/fixtures/result-v1.json"
    ))
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

#[test]
fn repeated_ladders_give_the_headline_its_spread() {
    // One server core, steps of one server: ladders recommending 2, 3, 3.
    let ls = [
        rep("a", 1, Some(2), Some(2)),
        rep("a", 2, Some(3), Some(3)),
        rep("a", 3, Some(3), Some(3)),
    ];
    let mut r: BenchResult = serde_json::from_str(include_str!(
        "../../../report/tests/fixtures/result-v1.json"
    ))
    .unwrap();
    r.cores.servers = vec![1];
    r.settings.tile_servers = 1;
    r.ladders = ls.to_vec();
    repeated(&ls, Compare::None, 3).apply(&mut r);
    assert_eq!(r.servers_per_core, Some(3.0));
    let spread = r.servers_per_core_spread.clone().expect("a spread");
    assert_eq!(
        spread.words(),
        "3 servers per server core, 2-3 over 3 ladders"
    );
    assert!(!spread.unstable());
    let h = tickpack_report::headline::Headline::of(&r).unwrap();
    assert_eq!(
        h.answer_words(),
        "3 servers per server core, 2-3 over 3 ladders"
    );
    // The same answer from a result.json written and read again.
    let back: BenchResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back.servers_per_core_spread, Some(spread));
    // 2, 3, 4: more than one step apart, unstable.
    let ls = [
        rep("a", 1, Some(2), Some(2)),
        rep("a", 2, Some(3), Some(3)),
        rep("a", 3, Some(4), Some(4)),
    ];
    repeated(&ls, Compare::None, 3).apply(&mut r);
    assert!(r.servers_per_core_spread.as_ref().unwrap().unstable());
    // One ladder has no spread.
    let ls = [ladder("a", Some(3), Some(3), None)];
    summarize(&ls, &plan(&ls, Compare::None), Compare::None, 1, None).apply(&mut r);
    assert_eq!(r.servers_per_core_spread, None);
}

#[test]
fn on_few_server_cores_the_limit_is_estimated_between_two_steps() {
    let mut r: BenchResult = serde_json::from_str(include_str!(
        "../../../report/tests/fixtures/result-v1.json"
    ))
    .unwrap();
    // Tick lateness 1.0 ms at 3 servers (pass), 5.0 ms at 6 (fail); the
    // fixture's limit is 2.0 ms: a quarter of the way, 3.75 servers.
    let l = &mut r.ladders[0];
    l.steps.truncate(2);
    l.steps[0].measured.tick_lateness_us.p99 = 1_000;
    l.steps[1].measured.tick_lateness_us.p99 = 5_000;
    l.steps[1].verdict = tickpack_report::verdict::Verdict::Fail;
    let only_first = vec![r.ladders[0].clone()];
    r.ladders = only_first;
    r.cores.servers = vec![1, 2];
    let ls = r.ladders.clone();
    summarize(&ls, &plan(&ls, Compare::None), Compare::None, 1, None).apply(&mut r);
    let e = r.limit_estimate.clone().expect("an estimate");
    assert_eq!((e.servers, e.per_core), (3.8, 1.9));
    assert_eq!((e.passed_servers, e.failed_servers), (3, 6));
    // Many server cores: no estimate.
    r.cores.servers = (1..=8).collect();
    summarize(&ls, &plan(&ls, Compare::None), Compare::None, 1, None).apply(&mut r);
    assert_eq!(r.limit_estimate, None);
}
