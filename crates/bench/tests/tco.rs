//! `tco::compute` against the case study's own table, worked by hand, and
//! the refusals a user sees for bad inputs.

use tickpack_bench::tco::{compute, watts_source_label, TcoError, CASE_STUDY, WATTS_GIVEN};
use tickpack_report::bench::PowerSourceKind;
use tickpack_report::bench::TcoInputs;

fn case_study() -> TcoInputs {
    CASE_STUDY
}

/// Equal to the cent (half a cent either way).
fn assert_cents(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() < 0.005,
        "{what}: got {got:.4}, the hand-worked figure is {want:.2}"
    );
}

#[test]
fn case_study_1000_core2_servers_18_to_1_saves_647_900_25_usd_a_year() {
    let tco = compute(&case_study(), WATTS_GIVEN).unwrap();

    // Before: 1000 × 350 W × 8760 h = 3,066,000 kWh -> 490,560 EUR -> 730,934.40 USD.
    // After: ceil(1000 / 18) = 56 machines × 710 W × 8760 h = 348,297.6 kWh
    // -> 55,727.62 EUR -> 83,034.15 USD.
    let price = tco.inputs.price_per_kwh;
    // Side, machines, watts each, kWh, EUR (kWh × price), USD.
    #[rustfmt::skip]
    let sides = [
        ("before", &tco.before, 1000, 350.0, 3_066_000.0, 490_560.00, 730_934.40),
        ("after",  &tco.after,    56, 710.0,   348_297.6,  55_727.62,  83_034.15),
    ];
    for (which, side, machines, watts_each, kwh, eur, usd) in sides {
        assert_eq!(side.machines, machines, "{which} machines");
        assert_eq!(side.watts_each, watts_each, "{which} watts each");
        assert_cents(&format!("{which} kWh"), side.annual_kwh, kwh);
        assert_cents(&format!("{which} EUR"), side.annual_kwh * price, eur);
        assert_cents(&format!("{which} USD"), side.annual_cost, usd);
    }

    // Savings: 944 machines, 2,717,702.4 kWh, 647,900.25 USD (the case
    // study's "$648,000"), 88.64 % of the bill.
    assert_eq!(tco.savings.machines, 944);
    assert_cents("kWh saved", tco.savings.annual_kwh, 2_717_702.4);
    assert_cents("USD saved", tco.savings.annual, 647_900.25);
    assert_eq!(format!("{:.2}", tco.savings.percent), "88.64");
    assert_eq!((tco.savings.annual / 1000.0).round() * 1000.0, 648_000.0);

    assert_eq!(tco.inputs, case_study());
    assert_eq!(tco.watts_source.to_string(), "given");
}

#[test]
fn json_carries_the_fields_reports_read() {
    let tco = compute(&case_study(), watts_source_label(PowerSourceKind::Rapl)).unwrap();
    let v = serde_json::to_value(&tco).unwrap();
    assert_cents(
        "before.annual_cost",
        v["before"]["annual_cost"].as_f64().unwrap(),
        730_934.40,
    );
    assert_cents(
        "after.annual_cost",
        v["after"]["annual_cost"].as_f64().unwrap(),
        83_034.15,
    );
    assert_cents(
        "savings.annual",
        v["savings"]["annual"].as_f64().unwrap(),
        647_900.25,
    );
    assert_eq!(v["watts_source"], "measured (rapl)");
    assert_eq!(
        watts_source_label(PowerSourceKind::Modeled).to_string(),
        "modeled"
    );
}

#[test]
fn same_currency_and_a_ratio_that_divides_exactly() {
    // 100 machines at 200 W, 4:1 onto 400 W machines, 0.25 per kWh, no
    // conversion: before 100 × 200 × 8760 / 1000 = 175,200 kWh = 43,800;
    // after 25 × 400 × 8760 / 1000 = 87,600 kWh = 21,900; saves 21,900 (50 %).
    let tco = compute(
        &TcoInputs {
            before_watts: 200.0,
            after_watts: 400.0,
            ratio: 4.0,
            machines: 100,
            price_per_kwh: 0.25,
            currency_rate: 1.0,
            hours_per_year: 8760.0,
        },
        WATTS_GIVEN,
    )
    .unwrap();
    assert_eq!(tco.after.machines, 25);
    assert_cents("before", tco.before.annual_cost, 43_800.0);
    assert_cents("after", tco.after.annual_cost, 21_900.0);
    assert_cents("saved", tco.savings.annual, 21_900.0);
    assert_cents("percent", tco.savings.percent, 50.0);
}

#[test]
fn new_machines_that_draw_more_than_they_replace_show_a_negative_saving() {
    let tco = compute(
        &TcoInputs {
            after_watts: 20_000.0,
            ..case_study()
        },
        WATTS_GIVEN,
    )
    .unwrap();
    assert!(tco.savings.annual < 0.0, "{:?}", tco.savings);
    assert!(tco.savings.percent < 0.0);
}

fn refused(inputs: TcoInputs) -> (TcoError, String) {
    let e = compute(&inputs, WATTS_GIVEN).expect_err("inputs should be refused");
    let msg = e.to_string();
    (e, msg)
}

#[test]
fn every_watt_price_and_rate_must_be_positive_and_finite() {
    type Set = fn(&mut TcoInputs, f64);
    let cases: [(&str, Set, f64); 6] = [
        ("before_watts", |i, v| i.before_watts = v, -350.0),
        ("after_watts", |i, v| i.after_watts = v, 0.0),
        ("price_per_kwh", |i, v| i.price_per_kwh = v, f64::NAN),
        ("currency_rate", |i, v| i.currency_rate = v, f64::INFINITY),
        ("ratio", |i, v| i.ratio = v, 0.0),
        ("hours_per_year", |i, v| i.hours_per_year = v, -1.0),
    ];
    for (field, set, value) in cases {
        let mut inputs = case_study();
        set(&mut inputs, value);
        let (e, msg) = refused(inputs);
        assert_eq!(e.field(), field);
        assert!(
            msg.starts_with(&format!(
                "{field} must be a positive, finite number, got {value}"
            )),
            "{msg}"
        );
    }
}

#[test]
fn a_ratio_below_one_is_computed_and_explained_not_refused() {
    // tickpack_tco_refused_a_ratio_below_one: `tco --ratio 0.5` said only
    // "ratio must be at least 1".
    let inputs = TcoInputs {
        ratio: 0.5,
        ..case_study()
    };
    let tco = compute(&inputs, WATTS_GIVEN).unwrap();
    assert_eq!(tco.after.machines, 2000);
    assert_eq!(tco.savings.machines, -1000);
    assert!(tco.savings.annual < 0.0);
    let words = tickpack_bench::tco::below_one_words(&inputs).unwrap();
    assert!(words.contains("ratio 0.5 is below 1"), "{words}");
    assert!(
        words.contains("need 2000 machines instead of 1000"),
        "{words}"
    );
    assert!(words.contains("not a saving"), "{words}");
    // Exactly 1 is a ratio: nothing consolidated, only the watts change.
    let one = TcoInputs {
        ratio: 1.0,
        ..case_study()
    };
    assert_eq!(tickpack_bench::tco::below_one_words(&one), None);
    assert_eq!(compute(&one, WATTS_GIVEN).unwrap().after.machines, 1000);
    // 0 and below are still refused.
    let (e, _) = refused(TcoInputs {
        ratio: 0.0,
        ..case_study()
    });
    assert_eq!(e.field(), "ratio");
}

#[test]
fn zero_machines_is_refused() {
    let (e, msg) = refused(TcoInputs {
        machines: 0,
        ..case_study()
    });
    assert_eq!(e.field(), "machines");
    assert_eq!(
        msg,
        "machines must be at least 1 (today's machine count), got 0"
    );
}

#[test]
fn hours_must_fit_in_a_leap_year() {
    let (e, msg) = refused(TcoInputs {
        hours_per_year: 8785.0,
        ..case_study()
    });
    assert_eq!(e, TcoError::Hours { value: 8785.0 });
    assert!(msg.contains("at most 8784"), "{msg}");
    assert!(msg.contains("got 8785"), "{msg}");
    // A leap year's 8784 hours and a working week's 2080 are fine.
    for hours in [8784.0, 2080.0] {
        compute(
            &TcoInputs {
                hours_per_year: hours,
                ..case_study()
            },
            WATTS_GIVEN,
        )
        .unwrap();
    }
}
