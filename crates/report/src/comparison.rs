//! A comparison judged over its repetitions (`tickpack bench --compare X
//! --repeat N`), as `result.json` stores it under `comparison`: per variant
//! the median and range of its maximum and recommended density, and each
//! ratio between two variants with its range and whether the two can be
//! told apart on this machine.
//!
//! The arithmetic on one figure ([`Spread::of`]: median and range) and the
//! judgement ([`Separation::judge`]: do the ranges overlap?) live here with
//! the words the terminal summary and the HTML report both print
//! ([`DensityRatio::sentence`], [`DensityRatio::judgement`]), so the two
//! never say different things. Which ladders make a variant and which
//! ratios a comparison has is the bench's business (`tickpack-bench`).

use serde::{Deserialize, Serialize};

/// The comparison over all its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// What was compared: `placement`, `backend`, `game`, ... (`none` for
    /// one variant repeated).
    pub kind: String,
    /// Repetitions asked for (`--repeat`).
    pub repetitions: u32,
    /// Repetitions whose every ladder finished (not interrupted).
    pub repetitions_finished: u32,
    pub variants: Vec<VariantSummary>,
    /// Each ratio the comparison asks about (none for a single variant).
    pub ratios: Vec<DensityRatio>,
}

/// One variant's densities over the repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantSummary {
    /// The ladders' label.
    pub label: String,
    /// How sentences name it ("plain processes", "netns/macvlan").
    pub name: String,
    pub max_servers: Spread,
    pub recommended_servers: Spread,
}

/// One figure over the repetitions: its value in each (0 servers when
/// the ladder found its limit without reaching it, e.g. its first step
/// failed; `None` when the ladder never found its limit: interrupted), and
/// the median and range of the found values.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Spread {
    pub per_repetition: Vec<Option<f64>>,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl Spread {
    /// Median (the mean of the two middle values for an even count) and
    /// range of the found values.
    pub fn of(per_repetition: Vec<Option<f64>>) -> Spread {
        let mut v: Vec<f64> = per_repetition
            .iter()
            .flatten()
            .copied()
            .filter(|x| x.is_finite())
            .collect();
        v.sort_by(f64::total_cmp);
        let median = match v.len() {
            0 => None,
            n if n % 2 == 1 => Some(v[n / 2]),
            n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        };
        Spread {
            median,
            min: v.first().copied(),
            max: v.last().copied(),
            per_repetition,
        }
    }

    /// How many repetitions found the figure.
    pub fn found(&self) -> usize {
        self.per_repetition.iter().flatten().count()
    }

    /// The lower median: a value one repetition actually measured (the
    /// smaller of the two middle ones for an even count).
    pub fn lower_median(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.per_repetition.iter().flatten().copied().collect();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[(v.len() - 1) / 2])
    }

    /// The range in words: `5-8`, or `7` when every repetition agrees.
    pub fn range_words(&self, decimals: usize) -> String {
        match (self.min, self.max) {
            (Some(a), Some(b)) if fmt(a, decimals) == fmt(b, decimals) => fmt(a, decimals),
            (Some(a), Some(b)) => format!("{}-{}", fmt(a, decimals), fmt(b, decimals)),
            _ => "n/a".into(),
        }
    }

    /// The median in words (`n/a` when nothing was found).
    pub fn median_words(&self, decimals: usize) -> String {
        self.median.map_or("n/a".into(), |m| fmt(m, decimals))
    }
}

/// `decimals` places, but whole numbers of servers without them.
fn fmt(v: f64, decimals: usize) -> String {
    if decimals == 0 && (v - v.round()).abs() > 1e-9 {
        return format!("{v:.1}");
    }
    format!("{v:.decimals$}")
}

/// One ratio of maximum densities: `numerator` over `denominator`, per
/// repetition (both ladders of a repetition ran interleaved, so they share
/// its drift), with its median and range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DensityRatio {
    /// Ladder labels.
    pub numerator: String,
    pub denominator: String,
    /// How sentences name them.
    pub numerator_name: String,
    pub denominator_name: String,
    pub ratio: Spread,
    /// Whether the two maximum densities can be told apart.
    pub separation: Separation,
}

/// Can two variants be told apart, judged on the ranges of their maximum
/// densities over the repetitions?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Separation {
    /// The numerator's lowest density is above the denominator's highest.
    Higher,
    /// The numerator's highest density is below the denominator's lowest.
    Lower,
    /// The ranges overlap: no winner on this machine.
    CannotTellApart,
    /// Fewer than two repetitions found both densities: no range to judge.
    TooFewRepetitions,
    /// One of the two found no maximum density at all.
    NotAvailable,
}

impl Separation {
    /// Judges two variants' maximum-density spreads.
    pub fn judge(numerator: &Spread, denominator: &Spread) -> Separation {
        let (Some(a_lo), Some(a_hi), Some(b_lo), Some(b_hi)) = (
            numerator.min,
            numerator.max,
            denominator.min,
            denominator.max,
        ) else {
            return Separation::NotAvailable;
        };
        if numerator.found() < 2 || denominator.found() < 2 {
            Separation::TooFewRepetitions
        } else if a_lo > b_hi {
            Separation::Higher
        } else if a_hi < b_lo {
            Separation::Lower
        } else {
            Separation::CannotTellApart
        }
    }
}

impl DensityRatio {
    /// "netns/macvlan reaches 0.97x the density of plain processes, range
    /// 0.86-1.10 over 5 repetitions".
    pub fn sentence(&self) -> String {
        let n = self.ratio.found();
        match self.ratio.median {
            None => format!(
                "{} against {}: no ratio (a maximum density is missing in every repetition)",
                self.numerator_name, self.denominator_name
            ),
            Some(m) if n == 1 => format!(
                "{} reaches {m:.2}x the density of {} (one repetition: no range)",
                self.numerator_name, self.denominator_name
            ),
            Some(m) => format!(
                "{} reaches {m:.2}x the density of {}, range {} over {n} repetitions",
                self.numerator_name,
                self.denominator_name,
                self.ratio.range_words(2)
            ),
        }
    }

    /// Whether the two can be told apart, in words, with the densities'
    /// ranges it is judged on (`num` and `den`: the two variants).
    pub fn judgement(&self, num: &Spread, den: &Spread) -> String {
        let ranges = format!(
            "maximum density {} vs {} servers",
            num.range_words(0),
            den.range_words(0)
        );
        let (a, b) = (&self.numerator_name, &self.denominator_name);
        match self.separation {
            Separation::Higher => {
                format!("{a} fits more servers than {b} on this machine ({ranges}: the ranges do not overlap)")
            }
            Separation::Lower => {
                format!("{a} fits fewer servers than {b} on this machine ({ranges}: the ranges do not overlap)")
            }
            Separation::CannotTellApart => format!(
                "{a} and {b} cannot be told apart on this machine ({ranges}: the ranges overlap)"
            ),
            Separation::TooFewRepetitions => format!(
                "fewer than two repetitions found both densities, too few to tell {a} and {b} \
                 apart from noise ({ranges}); run more repetitions (--repeat 3 or more)"
            ),
            Separation::NotAvailable => {
                format!("{a} and {b} cannot be compared ({ranges})")
            }
        }
    }
}

impl Comparison {
    /// The variant with this ladder label.
    pub fn variant(&self, label: &str) -> Option<&VariantSummary> {
        self.variants.iter().find(|v| v.label == label)
    }

    /// What the ratios answer, as a heading.
    pub fn question(&self) -> String {
        match self.kind.as_str() {
            "backend" => "The isolation cost (the case study's \"near native\" question): \
                          the density of each isolation path relative to plain processes"
                .into(),
            "placement" => "tickpack's placement against the kernel's scheduling".into(),
            "game" => "One game against another: the density of each relative to the first".into(),
            "none" => "One variant, repeated".into(),
            other => format!("Comparison ({other})"),
        }
    }

    /// Each ratio's sentence and judgement.
    pub fn statements(&self) -> Vec<(String, String)> {
        let none = Spread::default();
        self.ratios
            .iter()
            .map(|r| {
                let num = self.variant(&r.numerator).map_or(&none, |v| &v.max_servers);
                let den = self
                    .variant(&r.denominator)
                    .map_or(&none, |v| &v.max_servers);
                (r.sentence(), r.judgement(num, den))
            })
            .collect()
    }

    /// Each ratio's sentence and judgement, one line each, as printed.
    pub fn lines(&self) -> Vec<String> {
        self.statements()
            .into_iter()
            .map(|(s, j)| format!("{s}: {j}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(v: &[Option<f64>]) -> Spread {
        Spread::of(v.to_vec())
    }

    #[test]
    fn median_and_range_of_the_found_values() {
        let s = spread(&[Some(7.0), Some(5.0), None, Some(8.0)]);
        assert_eq!(s.median, Some(7.0));
        assert_eq!((s.min, s.max), (Some(5.0), Some(8.0)));
        assert_eq!(s.found(), 3);
        assert_eq!(s.range_words(0), "5-8");
        let even = spread(&[Some(4.0), Some(7.0), Some(5.0), Some(8.0)]);
        assert_eq!(even.median, Some(6.0));
        assert_eq!(even.lower_median(), Some(5.0));
        assert_eq!(spread(&[Some(6.0), Some(7.0)]).median_words(0), "6.5");
        assert_eq!(spread(&[Some(6.0), Some(6.0)]).range_words(0), "6");
        let none = spread(&[None, None]);
        assert_eq!(
            (none.median, none.min, none.lower_median()),
            (None, None, None)
        );
        assert_eq!(none.range_words(0), "n/a");
    }

    #[test]
    fn overlapping_ranges_cannot_be_told_apart() {
        let a = spread(&[Some(5.0), Some(8.0), Some(6.0)]);
        let b = spread(&[Some(7.0), Some(7.0), Some(8.0)]);
        assert_eq!(Separation::judge(&a, &b), Separation::CannotTellApart);
        // Touching ranges overlap too.
        let c = spread(&[Some(8.0), Some(9.0)]);
        assert_eq!(Separation::judge(&c, &b), Separation::CannotTellApart);
        let d = spread(&[Some(9.0), Some(10.0)]);
        assert_eq!(Separation::judge(&d, &b), Separation::Higher);
        assert_eq!(Separation::judge(&b, &d), Separation::Lower);
        assert_eq!(
            Separation::judge(&spread(&[Some(9.0)]), &spread(&[Some(2.0)])),
            Separation::TooFewRepetitions
        );
        assert_eq!(
            Separation::judge(&spread(&[None, None]), &b),
            Separation::NotAvailable
        );
    }

    fn ratio(values: &[Option<f64>], separation: Separation) -> DensityRatio {
        DensityRatio {
            numerator: "netns/macvlan, placement spread".into(),
            denominator: "process, placement spread".into(),
            numerator_name: "netns/macvlan".into(),
            denominator_name: "plain processes".into(),
            ratio: spread(values),
            separation,
        }
    }

    #[test]
    fn a_ratio_says_its_median_and_range_over_the_repetitions() {
        let r = ratio(
            &[Some(0.97), Some(0.86), Some(1.1), Some(1.0), Some(0.9)],
            Separation::CannotTellApart,
        );
        assert_eq!(
            r.sentence(),
            "netns/macvlan reaches 0.97x the density of plain processes, range 0.86-1.10 over 5 repetitions"
        );
        let one = ratio(&[Some(0.625)], Separation::TooFewRepetitions);
        assert_eq!(
            one.sentence(),
            "netns/macvlan reaches 0.62x the density of plain processes (one repetition: no range)"
        );
        assert!(ratio(&[None], Separation::NotAvailable)
            .sentence()
            .contains("no ratio"));
    }

    #[test]
    fn overlapping_variants_are_said_to_be_indistinguishable_not_ranked() {
        let r = ratio(&[Some(1.0)], Separation::CannotTellApart);
        let j = r.judgement(
            &spread(&[Some(6.0), Some(8.0)]),
            &spread(&[Some(5.0), Some(8.0)]),
        );
        assert_eq!(
            j,
            "netns/macvlan and plain processes cannot be told apart on this machine \
             (maximum density 6-8 vs 5-8 servers: the ranges overlap)"
        );
        assert!(!j.contains("more") && !j.contains("fewer"));
        let r = ratio(&[Some(0.6)], Separation::Lower);
        assert!(r
            .judgement(
                &spread(&[Some(4.0), Some(5.0)]),
                &spread(&[Some(7.0), Some(8.0)])
            )
            .starts_with("netns/macvlan fits fewer servers than plain processes on this machine"));
    }

    #[test]
    fn a_comparison_prints_one_line_per_ratio() {
        let c = Comparison {
            kind: "backend".into(),
            repetitions: 2,
            repetitions_finished: 2,
            variants: vec![
                VariantSummary {
                    label: "process, placement spread".into(),
                    name: "plain processes".into(),
                    max_servers: spread(&[Some(7.0), Some(8.0)]),
                    recommended_servers: spread(&[Some(5.0), Some(5.0)]),
                },
                VariantSummary {
                    label: "netns/macvlan, placement spread".into(),
                    name: "netns/macvlan".into(),
                    max_servers: spread(&[Some(7.0), Some(7.0)]),
                    recommended_servers: spread(&[Some(5.0), Some(4.0)]),
                },
            ],
            ratios: vec![ratio(
                &[Some(1.0), Some(0.875)],
                Separation::CannotTellApart,
            )],
        };
        assert_eq!(
            c.lines(),
            vec![
                "netns/macvlan reaches 0.94x the density of plain processes, range 0.88-1.00 \
                  over 2 repetitions: netns/macvlan and plain processes cannot be told apart on \
                  this machine (maximum density 7 vs 7-8 servers: the ranges overlap)"
            ]
        );
        assert!(c.question().contains("near native"));
    }
}
