//! `tickpack tco`: what consolidating saves in electricity, machines and
//! money per year, from watts and a consolidation ratio (typed in, or taken
//! from a `tickpack bench` result). The arithmetic and its worked example
//! live in `tickpack_bench::tco`.

use tickpack_bench::tco::{self, TcoError, HOURS_PER_YEAR, WATTS_GIVEN};
use tickpack_report::bench::{Tco, TcoInputs};

use crate::exit::{fail, Code, Failure};

const AFTER_HELP: &str = concat!(
    "\
Example (1000 servers at 350 W, 18:1 onto 710 W machines, 0.16 EUR/kWh, in USD):
  tickpack tco --before-watts 350 --after-watts 710 --ratio 18 --machines 1000 \\
    --price-per-kwh 0.16 --currency-rate 1.49 --currency USD
saves 647,900.25 USD a year. Electricity only: multiply the watts by your PUE
to include cooling. A ratio below 1 (one new machine holds fewer servers than
one of today's) is computed and said to be no consolidation: more machines
after than before, and a cost, not a saving.",
    "\n\n",
    exit_codes!()
);

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Watts one of today's machines draws, at the wall, under its usual
    /// load (e.g. 350).
    #[arg(long, allow_hyphen_values = true)]
    pub before_watts: f64,
    /// Watts one consolidated machine draws while running `--ratio`
    /// machines' worth of servers (e.g. 710).
    #[arg(long, allow_hyphen_values = true)]
    pub after_watts: f64,
    /// Consolidation ratio: how many of today's machines fit on one new
    /// machine (18 means 18:1). `tickpack bench` reports it as
    /// consolidation_ratio when given --before-servers. Below 1 is no
    /// consolidation: the figures are what it would cost, and say so.
    #[arg(long, allow_hyphen_values = true)]
    pub ratio: f64,
    /// How many machines you run today, one server group each (e.g. 1000).
    /// After consolidating you need ceil(machines / ratio).
    #[arg(long)]
    pub machines: u64,
    /// Electricity price per kWh, in the currency of the bill (e.g. 0.16
    /// for 0.16 EUR/kWh).
    #[arg(long, allow_hyphen_values = true)]
    pub price_per_kwh: f64,
    /// Converts the bill's currency into the one to report in (1.49 turns
    /// EUR into USD at 1.49 USD per EUR). 1 when they are the same.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub currency_rate: f64,
    /// The currency the costs are reported in, e.g. USD (the bill's, or
    /// the one --currency-rate converts to).
    #[arg(long, value_name = "CODE")]
    pub currency: String,
    /// Hours a year the machines run: 8760 is 24×7×365, at most 8784.
    #[arg(long, default_value_t = HOURS_PER_YEAR, allow_hyphen_values = true)]
    pub hours: f64,
    /// Print the result as JSON (the `tco` object of a bench result:
    /// inputs, before, after, savings) instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    fn inputs(&self) -> TcoInputs {
        TcoInputs {
            before_watts: self.before_watts,
            after_watts: self.after_watts,
            ratio: self.ratio,
            machines: self.machines,
            price_per_kwh: self.price_per_kwh,
            currency_rate: self.currency_rate,
            hours_per_year: self.hours,
        }
    }
}

/// The flag a [`TcoError`] is about, as the user typed it.
fn flag(e: &TcoError) -> String {
    match e.field() {
        "hours_per_year" => "--hours".to_string(),
        field => format!("--{}", field.replace('_', "-")),
    }
}

/// Validates the flags and computes; bad values are [`Code::Config`].
fn compute(a: &Args) -> Result<Tco, Failure> {
    let currency = a.currency.trim();
    if currency.is_empty() || currency.len() > 16 {
        return Err(fail(
            Code::Config,
            "--currency: name the currency, e.g. EUR (1-16 characters)",
        ));
    }
    let t = tco::compute(&a.inputs(), WATTS_GIVEN)
        .map_err(|e| fail(Code::Config, format!("{}: {e}", flag(&e))))?;
    Ok(Tco {
        currency: Some(currency.to_string()),
        ..t
    })
}

pub fn run(a: Args) -> Result<(), Failure> {
    let tco = compute(&a)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&tco)?);
    } else {
        print!("{}", render_table(&tco));
    }
    Ok(())
}

/// `1234567.891` with 2 decimals -> `1,234,567.89`.
fn grouped(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text.as_str(), None),
    };
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    // No "-0.00" for a value that rounds to zero.
    if value < 0.0 && out.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.insert(0, '-');
    }
    out
}

/// The human summary: one line of inputs, then before / after / savings.
fn render_table(t: &Tco) -> String {
    let i = &t.inputs;
    let rate = if i.currency_rate == 1.0 {
        String::new()
    } else {
        format!(" × currency rate {}", i.currency_rate)
    };
    let cur = t.currency.as_deref().unwrap_or("");
    let mut s = String::new();
    if let Some(why) = tco::below_one_words(i) {
        s += &format!("{why}\n");
    }
    s += &format!(
        "electricity per year: {} h at {} per kWh{rate}; watts {}\n",
        i.hours_per_year, i.price_per_kwh, t.watts_source
    );
    s += &format!(
        "{:<8} {:>10} {:>11} {:>15} {:>15}\n",
        "",
        "machines",
        "watts each",
        "kWh per year",
        format!("{cur} per year").trim()
    );
    for (label, side) in [("before", &t.before), ("after", &t.after)] {
        s += &format!(
            "{:<8} {:>10} {:>11} {:>15} {:>15}\n",
            label,
            grouped(side.machines as f64, 0),
            grouped(side.watts_each, usize::from(side.watts_each.fract() != 0.0)),
            grouped(side.annual_kwh, 1),
            grouped(side.annual_cost, 2),
        );
    }
    s += &format!(
        "{:<8} {:>10} {:>11} {:>15} {:>15}  ({:.1} %)\n",
        if i.ratio < 1.0 { "extra" } else { "savings" },
        grouped(t.savings.machines as f64, 0),
        "",
        grouped(t.savings.annual_kwh, 1),
        grouped(t.savings.annual, 2),
        t.savings.percent,
    );
    s += &format!(
        "consolidating {}:1 needs ceil({} / {}) = {} machines\n",
        i.ratio, i.machines, i.ratio, t.after.machines
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case_study() -> Args {
        let c = tickpack_bench::tco::CASE_STUDY;
        Args {
            before_watts: c.before_watts,
            after_watts: c.after_watts,
            ratio: c.ratio,
            machines: c.machines,
            price_per_kwh: c.price_per_kwh,
            currency_rate: c.currency_rate,
            hours: c.hours_per_year,
            currency: "USD".into(),
            json: false,
        }
    }

    #[test]
    fn the_case_study_table_shows_647_900_25_saved() {
        let table = render_table(&compute(&case_study()).unwrap());
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].ends_with("USD per year"), "{table}");
        assert!(
            lines[0].contains("8760 h at 0.16 per kWh × currency rate 1.49"),
            "{table}"
        );
        assert!(lines[0].ends_with("watts given"), "{table}");
        let cells = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            cells(lines[2]),
            ["before", "1,000", "350", "3,066,000.0", "730,934.40"]
        );
        assert_eq!(
            cells(lines[3]),
            ["after", "56", "710", "348,297.6", "83,034.15"]
        );
        assert_eq!(
            cells(lines[4]),
            ["savings", "944", "2,717,702.4", "647,900.25", "(88.6", "%)"]
        );
        assert!(
            lines[5].contains("ceil(1000 / 18) = 56 machines"),
            "{table}"
        );
    }

    #[test]
    fn json_has_the_costs_reports_read() {
        let v = serde_json::to_value(compute(&case_study()).unwrap()).unwrap();
        let cost = |p: &str| v.pointer(p).and_then(|x| x.as_f64()).unwrap();
        assert_eq!(format!("{:.2}", cost("/before/annual_cost")), "730934.40");
        assert_eq!(format!("{:.2}", cost("/after/annual_cost")), "83034.15");
        assert_eq!(format!("{:.2}", cost("/savings/annual")), "647900.25");
        assert_eq!(v["watts_source"], "given");
    }

    #[test]
    fn bad_flags_are_config_errors_naming_the_flag() {
        let cases = [
            (
                Args {
                    ratio: 0.0,
                    ..case_study()
                },
                "--ratio: ratio must be a positive, finite number, got 0",
            ),
            (
                Args {
                    currency: " ".into(),
                    ..case_study()
                },
                "--currency: name the currency",
            ),
            (
                Args {
                    machines: 0,
                    ..case_study()
                },
                "--machines: machines must be at least 1",
            ),
            (
                Args {
                    hours: 9000.0,
                    ..case_study()
                },
                "--hours: hours_per_year must be",
            ),
            (
                Args {
                    before_watts: -350.0,
                    ..case_study()
                },
                "--before-watts: before_watts must be a positive, finite number, got -350",
            ),
            (
                Args {
                    price_per_kwh: 0.0,
                    ..case_study()
                },
                "--price-per-kwh: price_per_kwh must be a positive",
            ),
        ];
        for (args, want) in cases {
            let f = compute(&args).unwrap_err();
            assert_eq!(f.code, Code::Config);
            let msg = format!("{:#}", f.error);
            assert!(msg.starts_with(want), "{msg}");
        }
    }

    #[test]
    fn a_ratio_below_one_is_computed_and_said_to_be_no_consolidation() {
        // tco_refused_a_ratio_below_one: `tco --ratio 0.5` only said "ratio
        // must be at least 1" while bench printed 0.50:1.
        let table = render_table(
            &compute(&Args {
                ratio: 0.5,
                ..case_study()
            })
            .unwrap(),
        );
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("ratio 0.5 is below 1"), "{table}");
        assert!(
            lines[0].contains("need 2000 machines instead of 1000"),
            "{table}"
        );
        assert!(table.contains("\nextra "), "{table}");
        assert!(table.contains("-1,000"), "{table}");
        assert_eq!(
            serde_json::to_value(compute(&case_study()).unwrap()).unwrap()["currency"],
            "USD"
        );
    }

    #[test]
    fn thousands_are_grouped_and_signs_kept() {
        assert_eq!(grouped(1_234_567.891, 2), "1,234,567.89");
        assert_eq!(grouped(999.0, 0), "999");
        assert_eq!(grouped(1000.0, 1), "1,000.0");
        assert_eq!(grouped(-12_345.5, 1), "-12,345.5");
        assert_eq!(grouped(-0.001, 2), "0.00");
    }
}
