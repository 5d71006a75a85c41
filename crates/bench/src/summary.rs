//! The run's summary from its finished ladders, without I/O: the densities
//! of the first variant (tickpack's own settings; over repetitions, the
//! lower median, a value one repetition measured), the comparison over the
//! repetitions (per variant the median and range of its densities, every
//! ratio with its range and whether the variants can be told apart),
//! whether the ladders found their limit, the headline (servers per server
//! core, [`tickpack_report::headline`]) with its spread over the ladders
//! ([`tickpack_report::spread`]) and, on few server cores, the limit
//! estimated between two steps ([`crate::estimate`]) and, only against a "before" the
//! user gave, the consolidation ratio and the cost figures.

use tickpack_report::bench::{BenchResult, Ladder, Tco, TcoInputs};
use tickpack_report::comparison::{Comparison, DensityRatio, Separation, Spread, VariantSummary};
use tickpack_report::spread::HeadlineSpread;

use crate::estimate::estimate;
use crate::{tco, Before, Compare, ComparisonPlan};

/// What [`summarize`] fills into the result; the default summarizes
/// nothing (no ladder).
#[derive(Debug, Clone, Default, PartialEq)]
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
        // Over repeated ladders, the headline's spread: the first variant's
        // recommended densities, whose lower median the headline is.
        result.servers_per_core_spread = self
            .comparison
            .as_ref()
            .filter(|c| c.repetitions > 1)
            .and_then(|c| c.variants.first())
            .and_then(|v| {
                HeadlineSpread::of(
                    &v.recommended_servers,
                    server_cores,
                    result.settings.tile_servers,
                )
            });
        // On few server cores, where between two steps the limit lies.
        let first_variant: Vec<&Ladder> = match result.ladders.first() {
            Some(first) => result
                .ladders
                .iter()
                .filter(|l| l.label == first.label)
                .collect(),
            None => vec![],
        };
        result.limit_estimate = estimate(&first_variant, &result.settings, server_cores);
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
    let mut out = Summary::default();
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
mod tests;
