//! The cost figures (`tickpack tco`) of a result, every input with where it
//! came from; without them, why there are none and what to pass.

use std::fmt::Write as _;

use crate::bench::BenchResult;
use crate::headline::why_no_cost;

use super::format::{esc, fmt_int, fmt_num, fmt_ratio};

pub(super) fn cost(out: &mut String, r: &BenchResult) {
    out.push_str("<h3>Cost</h3>\n");
    let Some(t) = &r.tco else {
        w!(
            out,
            "<p class=\"na\">No cost figures: {}.</p>\n",
            esc(&why_no_cost(r))
        );
        return;
    };
    let modeled = t.watts_source.is_modeled();
    let currency = t
        .currency
        .as_deref()
        .map_or("(currency not recorded)".to_string(), esc);
    w!(
        out,
        "<p>Watts after: <strong>{}</strong>{}</p>\n",
        t.watts_source,
        if modeled {
            " &mdash; an estimate from a power model, not a measurement."
        } else {
            "."
        }
    );
    w!(
        out,
        "<table class=\"cost\">\n<tr><th></th><th class=\"num\">Machines</th>\
         <th class=\"num\">Watts each</th><th class=\"num\">Annual kWh</th>\
         <th class=\"num\">Annual cost ({currency})</th></tr>\n"
    );
    for (name, side) in [("Before", &t.before), ("After", &t.after)] {
        w!(
            out,
            "<tr><th>{name}</th><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            fmt_int(side.machines),
            fmt_num(side.watts_each),
            fmt_num(side.annual_kwh),
            fmt_num(side.annual_cost)
        );
    }
    w!(
        out,
        "<tr><th>Savings</th><td class=\"num\">{}</td><td class=\"num\"></td>\
         <td class=\"num\">{}</td><td class=\"num\"><strong>{} {currency}</strong> ({} %)</td></tr>\n\
         </table>\n",
        t.savings.machines,
        fmt_num(t.savings.annual_kwh),
        fmt_num(t.savings.annual),
        fmt_num(t.savings.percent)
    );
    let i = &t.inputs;
    w!(
        out,
        "<p class=\"muted\">Where each number came from: {} machines before \
         (given, <code>--machines</code>); {} W each before (given, <code>--before-watts</code>); \
         {} W each after ({} at the recommended step); ratio {} (measured: recommended servers \
         here / <code>--before-servers</code>); {} {currency} per kWh (given, \
         <code>--price-per-kwh</code>); currency rate {} (<code>--currency-rate</code>); {} hours \
         per year (all year). Electricity only: no hardware, cooling or staff.</p>\n",
        fmt_int(i.machines),
        fmt_num(i.before_watts),
        fmt_num(i.after_watts),
        t.watts_source,
        fmt_ratio(i.ratio),
        fmt_num(i.price_per_kwh),
        fmt_num(i.currency_rate),
        fmt_num(i.hours_per_year)
    );
}
