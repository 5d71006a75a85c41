//! The cost figures (`tickpack tco`) of a result.

use std::fmt::Write as _;

use crate::bench::BenchResult;

use super::format::{fmt_int, fmt_num, fmt_ratio};

pub(super) fn cost(out: &mut String, r: &BenchResult) {
    out.push_str("<h3>Cost</h3>\n");
    let Some(t) = &r.tco else {
        out.push_str("<p class=\"na\">No cost figures in this result (n/a).</p>\n");
        return;
    };
    let modeled = t.watts_source.is_modeled();
    w!(
        out,
        "<p>Watts: <strong>{}</strong>{}</p>\n",
        t.watts_source,
        if modeled {
            " &mdash; an estimate from a power model, not a measurement."
        } else {
            "."
        }
    );
    out.push_str(
        "<table class=\"cost\">\n<tr><th></th><th class=\"num\">Machines</th>\
         <th class=\"num\">Watts each</th><th class=\"num\">Annual kWh</th>\
         <th class=\"num\">Annual cost</th></tr>\n",
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
         <td class=\"num\">{}</td><td class=\"num\"><strong>{}</strong> ({} %)</td></tr>\n\
         </table>\n",
        fmt_int(t.savings.machines),
        fmt_num(t.savings.annual_kwh),
        fmt_num(t.savings.annual),
        fmt_num(t.savings.percent)
    );
    let i = &t.inputs;
    w!(
        out,
        "<p class=\"muted\">Inputs: {} machines before; {} W before, {} W after per machine; \
         ratio {}; price {} per kWh; currency rate {}; {} hours per year.</p>\n",
        fmt_int(i.machines),
        fmt_num(i.before_watts),
        fmt_num(i.after_watts),
        fmt_ratio(i.ratio),
        fmt_num(i.price_per_kwh),
        fmt_num(i.currency_rate),
        fmt_num(i.hours_per_year)
    );
}
