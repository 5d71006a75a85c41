//! What consolidating saves: machines, energy and money per year.
//!
//! [`compute`] takes the inputs of `tickpack tco` (or of a finished benchmark)
//! as a [`TcoInputs`], validates every number, and returns a [`Tco`]: the
//! fleet before (one server group per machine), the fleet after (`ratio`
//! groups per machine), and the difference. It reads no files and no clock,
//! so the same inputs always give the same figures.
//!
//! It deliberately counts electricity only: no hardware prices, no cooling
//! overhead (PUE), no licences or staff. Multiply the watts by your PUE first
//! if you want the cooling in (e.g. `--before-watts 525` for 350 W at PUE 1.5).
//!
//! # The formulas
//!
//! ```text
//! after machines = ceil(machines / ratio)            (whole machines only)
//! annual_kwh     = machines × watts × hours_per_year / 1000
//! annual_cost    = annual_kwh × price_per_kwh × currency_rate
//! savings        = before − after (machines, kWh, cost); percent = savings / before cost × 100
//! ```
//!
//! Savings come out negative when the new machines draw more than the ones
//! they replace; that is reported, not refused. So is a ratio below 1 (one
//! new machine holds fewer servers than one of today's): it is no
//! consolidation, the fleet after has more machines than before, and
//! [`below_one_words`] says so beside the figures.
//!
//! `price_per_kwh` is in the currency the electricity bill is in;
//! `currency_rate` converts that currency into the one you report in
//! (1.0 when they are the same). `hours_per_year` is 8760 (24 × 365) for
//! machines that never sleep.
//!
//! # Worked example: the case study
//!
//! 1000 Core 2 Duo servers drawing 350 W each, consolidated 18:1 onto Xeon
//! 7400 servers drawing 710 W each, running 24×7×365, electricity at
//! 0.16 EUR/kWh, reported in USD at 1.49 USD per EUR:
//!
//! | | machines | watts each | kWh per year | EUR per year | USD per year |
//! |---|---:|---:|---:|---:|---:|
//! | before | 1000 | 350 | 1000 × 350 × 8760 / 1000 = 3,066,000 | 490,560.00 | 730,934.40 |
//! | after | ceil(1000 / 18) = 56 | 710 | 56 × 710 × 8760 / 1000 = 348,297.6 | 55,727.62 | 83,034.15 |
//! | savings | 944 | | 2,717,702.4 | 434,832.38 | **647,900.25** (88.64 %) |
//!
//! The case study rounds the savings to "$648,000 a year". Note the 56th
//! machine: 1000 / 18 = 55.6, and a fraction of a machine still draws full
//! power.
//!
//! ```
//! use tickpack_bench::tco::{compute, WATTS_GIVEN};
//! use tickpack_report::bench::TcoInputs;
//!
//! let tco = compute(
//!     &TcoInputs {
//!         before_watts: 350.0,
//!         after_watts: 710.0,
//!         ratio: 18.0,
//!         machines: 1000,
//!         price_per_kwh: 0.16,
//!         currency_rate: 1.49,
//!         hours_per_year: 8760.0,
//!     },
//!     WATTS_GIVEN,
//! )?;
//! assert_eq!(tco.after.machines, 56);
//! assert_eq!(format!("{:.2}", tco.before.annual_cost), "730934.40");
//! assert_eq!(format!("{:.2}", tco.after.annual_cost), "83034.15");
//! assert_eq!(format!("{:.2}", tco.savings.annual), "647900.25");
//! # Ok::<(), tickpack_bench::tco::TcoError>(())
//! ```

use tickpack_report::bench::{PowerSourceKind, Tco, TcoInputs, TcoSavings, TcoSide, WattsSource};

/// Hours in a year of 365 days, the default for `hours_per_year`.
pub const HOURS_PER_YEAR: f64 = 24.0 * 365.0;

/// The largest `hours_per_year` accepted: a leap year, 24 × 366.
pub const MAX_HOURS_PER_YEAR: f64 = 24.0 * 366.0;

/// The worked example above, as inputs: the case study's 1000 servers at
/// 350 W consolidated 18:1 onto 710 W machines, 0.16 EUR/kWh, 1.49 USD per
/// EUR, a year of 365 days.
pub const CASE_STUDY: TcoInputs = TcoInputs {
    before_watts: 350.0,
    after_watts: 710.0,
    ratio: 18.0,
    machines: 1000,
    price_per_kwh: 0.16,
    currency_rate: 1.49,
    hours_per_year: HOURS_PER_YEAR,
};

/// `watts_source` for watts the user typed in.
pub const WATTS_GIVEN: WattsSource = WattsSource::Given;

/// `watts_source` for watts from power source `source`: the model stays
/// "modeled", a measurement becomes "measured (rapl)", "measured (ipmi)", ...
pub fn watts_source_label(source: PowerSourceKind) -> WattsSource {
    WattsSource::Source(source)
}

/// Why a set of TCO inputs was refused. Each names the field and the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TcoError {
    /// A number that must be positive and finite was not.
    #[error("{field} must be a positive, finite number, got {value}")]
    NotPositive { field: &'static str, value: f64 },
    /// `machines` is 0.
    #[error("machines must be at least 1 (today's machine count), got {value}")]
    NoMachines { value: u64 },
    /// `hours_per_year` outside (0, 8784].
    #[error(
        "hours_per_year must be more than 0 and at most 8784 (24 × 366), got {value}; \
         use 8760 for machines that run all year"
    )]
    Hours { value: f64 },
}

impl TcoError {
    /// The [`TcoInputs`] field the error is about (e.g. `"before_watts"`).
    pub fn field(&self) -> &'static str {
        match self {
            TcoError::NotPositive { field, .. } => field,
            TcoError::NoMachines { .. } => "machines",
            TcoError::Hours { .. } => "hours_per_year",
        }
    }
}

/// Checks every input; the first problem found is returned.
pub fn validate(inputs: &TcoInputs) -> Result<(), TcoError> {
    let positive = [
        ("before_watts", inputs.before_watts),
        ("after_watts", inputs.after_watts),
        ("ratio", inputs.ratio),
        ("price_per_kwh", inputs.price_per_kwh),
        ("currency_rate", inputs.currency_rate),
        ("hours_per_year", inputs.hours_per_year),
    ];
    for (field, value) in positive {
        if !(value.is_finite() && value > 0.0) {
            return Err(TcoError::NotPositive { field, value });
        }
    }
    if inputs.machines == 0 {
        return Err(TcoError::NoMachines {
            value: inputs.machines,
        });
    }
    if inputs.hours_per_year > MAX_HOURS_PER_YEAR {
        return Err(TcoError::Hours {
            value: inputs.hours_per_year,
        });
    }
    Ok(())
}

/// What a ratio below 1 means, in words (`None` from 1 up): one new machine
/// holds fewer server groups than one of today's, so the same servers need
/// more machines; the figures are what that would cost, not a saving.
pub fn below_one_words(inputs: &TcoInputs) -> Option<String> {
    (inputs.ratio < 1.0).then(|| {
        format!(
            "ratio {} is below 1: one new machine holds fewer servers than one of today's, so \
             the same servers need {} machines instead of {}; this is no consolidation, and the \
             figures below are what it would cost, not a saving",
            inputs.ratio,
            machines_after(inputs.machines, inputs.ratio),
            inputs.machines
        )
    })
}

/// Machines needed after consolidating: `ceil(machines / ratio)`, never
/// rounding an exact quotient up because of floating-point noise
/// (e.g. 3 / 1.5 is 2 machines, not 3). More than `machines` for a ratio
/// below 1.
pub fn machines_after(machines: u64, ratio: f64) -> u64 {
    let q = machines as f64 / ratio;
    let nearest = q.round();
    let whole = if (q - nearest).abs() <= 1e-9 * nearest.max(1.0) {
        nearest
    } else {
        q.ceil()
    };
    // `as` saturates: a tiny ratio cannot wrap around.
    (whole as u64).max(1)
}

/// Validates `inputs` and computes the before, after and savings figures.
///
/// `watts_source` is stored as is in [`Tco::watts_source`]: [`WATTS_GIVEN`]
/// for typed-in watts, or [`watts_source_label`] of a power source.
pub fn compute(inputs: &TcoInputs, watts_source: WattsSource) -> Result<Tco, TcoError> {
    validate(inputs)?;
    let side = |machines: u64, watts_each: f64| {
        let annual_kwh = machines as f64 * watts_each * inputs.hours_per_year / 1000.0;
        TcoSide {
            machines,
            watts_each,
            annual_kwh,
            annual_cost: annual_kwh * inputs.price_per_kwh * inputs.currency_rate,
        }
    };
    let before = side(inputs.machines, inputs.before_watts);
    let after = side(
        machines_after(inputs.machines, inputs.ratio),
        inputs.after_watts,
    );
    let annual = before.annual_cost - after.annual_cost;
    let savings = TcoSavings {
        machines: i64::try_from(before.machines)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(after.machines).unwrap_or(i64::MAX)),
        annual_kwh: before.annual_kwh - after.annual_kwh,
        annual,
        percent: annual / before.annual_cost * 100.0,
    };
    Ok(Tco {
        inputs: inputs.clone(),
        before,
        after,
        savings,
        watts_source,
        currency: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_quotients_are_not_rounded_up() {
        assert_eq!(machines_after(3, 1.5), 2);
        assert_eq!(machines_after(100, 10.0), 10);
        assert_eq!(machines_after(1000, 18.0), 56);
        assert_eq!(machines_after(1, 18.0), 1);
        assert_eq!(machines_after(7, 1.0), 7);
        assert_eq!(machines_after(10, 0.1 * 30.0), 4);
        assert_eq!(
            machines_after(1000, 0.5),
            2000,
            "a ratio below 1 needs more"
        );
        assert_eq!(machines_after(3, 1e-300), u64::MAX, "saturates");
    }
}
