//! One table of steps per ladder: verdict, latency, lateness, frame, loss,
//! outages and reconnects, CPU, foreign load, watts and what each failing
//! step missed (and what disturbed it);
//! the query latency (`bench --probe`) when the ladder's steps have it.

use std::fmt::Write as _;

use crate::bench::{BenchResult, Ladder};
use crate::step_row::StepRow;
use crate::verdict::Verdict;
use crate::Outages;

use super::charts;
use super::format::{esc, fmt_int, fmt_ms, fmt_num, is_fail, percent_of, NA};

/// What the CPU column holds, as the header's title.
const CPU_TITLE: &str = "The servers' own CPU: their threads' time on a CPU over the measured \
window (schedstat, ns), summed over the servers, % of one core; in brackets the server cores' \
busy share (mean over them, less foreign load), which the headroom target reads";

/// Why the two CPU figures of a step differ, under the table: they are
/// not one measure of the same cores, so the servers' own can read above
/// the busy share and a reader must not take that for an error.
pub(crate) const CPU_NOTE: &str = "Servers' CPU, % of a core: the servers' own time on a CPU \
over the measured window, exact in nanoseconds (schedstat of every thread), summed over the \
servers: the figure the step's line and the idle verdict read, and it grows with the servers. \
In brackets the server cores' busy share, the mean over them, whatever ran there less the \
foreign load, from clock ticks: the headroom target reads it. The servers' own counts their \
time on any core, so with one server core it can read above the busy share, and with several \
it is not bounded by 100";

pub(super) fn steps_table(out: &mut String, r: &BenchResult, ladder: &Ladder) {
    let variants = charts::variants(r);
    let vi = variants
        .iter()
        .position(|(label, _)| *label == ladder.label)
        .unwrap_or(0);
    let repeated = variants.iter().any(|(_, ls)| ls.len() > 1);
    w!(
        out,
        "<h4><span style=\"color:{}\">&#9632;</span> {}{}</h4>\n",
        charts::ladder_color(vi),
        esc(&ladder.label),
        if repeated {
            format!(", repetition {}", ladder.repetition())
        } else {
            String::new()
        }
    );
    if ladder.steps.is_empty() {
        out.push_str("<p class=\"na\">No step finished.</p>\n");
        return;
    }
    let sources = charts::power_sources(r);
    let watts_head = if sources.is_empty() {
        "Watts".to_string()
    } else {
        format!("Watts ({})", esc(&charts::join_sources(&sources)))
    };
    let has_query = ladder.steps.iter().any(|s| s.query_latency_us.is_some());
    let query_head = if has_query {
        "<th class=\"num\" rowspan=\"2\">Query latency p99, ms</th>"
    } else {
        ""
    };
    let has_run_delay = ladder.steps.iter().any(|s| s.run_delay_us.is_some());
    let run_delay_head = if has_run_delay {
        "<th class=\"num\" rowspan=\"2\">Run delay p99, ms</th>"
    } else {
        ""
    };
    let has_foreign = ladder.steps.iter().any(|s| s.cpu.foreign_percent.is_some());
    let foreign_head = if has_foreign {
        "<th class=\"num\" rowspan=\"2\">Foreign, %</th>"
    } else {
        ""
    };
    let has_batch = ladder.steps.iter().any(|s| s.batch.is_some());
    let batch_head = if has_batch {
        "<th class=\"num\" rowspan=\"2\">Batch bogo-ops/s (CPU %, % of idle)</th>\
         <th class=\"num\" rowspan=\"2\">Machine busy, %</th>"
    } else {
        ""
    };
    // Step, servers, players, verdict, 3 latencies, lateness, frame,
    // lost, outages, reconnects, CPU, watts; and the optional ones.
    let columns = 14
        + usize::from(has_query)
        + usize::from(has_run_delay)
        + usize::from(has_foreign)
        + 2 * usize::from(has_batch);
    w!(
        out,
        "<div class=\"scroll\"><table class=\"steps\">\n\
         <tr><th class=\"num\" rowspan=\"2\">Step</th><th class=\"num\" rowspan=\"2\">Servers</th>\
         <th class=\"num\" rowspan=\"2\">Players</th><th rowspan=\"2\">Verdict</th>\
         <th colspan=\"3\" style=\"text-align:center\">Transaction latency, ms</th>\
         <th class=\"num\" rowspan=\"2\">Tick late&shy;ness p99, ms</th>\
         <th class=\"num\" rowspan=\"2\">Server frame p99, ms</th>{query_head}{run_delay_head}\
         <th class=\"num\" rowspan=\"2\">Snap&shy;shots lost</th>\
         <th class=\"num\" rowspan=\"2\">Out&shy;ages</th>\
         <th class=\"num\" rowspan=\"2\">Re&shy;con&shy;nects</th>\
         <th class=\"num\" rowspan=\"2\" title=\"{CPU_TITLE}\">Servers' CPU, % of a core (cores busy)</th>{foreign_head}{batch_head}\
         <th class=\"num\" rowspan=\"2\">{watts_head}</th></tr>\n\
         <tr><th class=\"num\">p50</th><th class=\"num\">p99</th><th class=\"num\">p99.9</th></tr>\n"
    );
    for st in &ladder.steps {
        let row = StepRow::of(st);
        let fail = is_fail(st);
        let mut verdict = match st.verdict {
            Verdict::Pass => "<span class=\"badge pass\">pass</span>".to_string(),
            Verdict::Fail => "<span class=\"badge fail\">FAIL</span>".to_string(),
            Verdict::Idle => "<span class=\"badge fail\">IDLE</span>".to_string(),
        };
        if ladder.recommended_servers == Some(st.servers) && !fail {
            verdict.push_str(" <span class=\"badge tag\">recommended</span>");
        }
        if ladder.max_servers == Some(st.servers) && !fail {
            verdict.push_str(" <span class=\"badge tag\">max</span>");
        }
        let mut failures = st
            .failures
            .iter()
            .map(|f| esc(f))
            .collect::<Vec<_>>()
            .join("<br>");
        if !st.first_attempt_failures.is_empty() {
            // A retried step is never hidden: say what its first attempt missed.
            if !failures.is_empty() {
                failures.push_str("<br>");
            }
            failures.push_str(&format!(
                "<em>first attempt failed: {}; run again to confirm</em>",
                st.first_attempt_failures
                    .iter()
                    .map(|f| esc(f))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        if !st.disturbed_attempts.is_empty() {
            if !failures.is_empty() {
                failures.push_str("<br>");
            }
            failures.push_str(&format!(
                "<em>run again, the machine disturbed: {}</em>",
                esc(&st.disturbed_attempts.join("; "))
            ));
        }
        if let Some(d) = &st.disturbed {
            if !failures.is_empty() {
                failures.push_str("<br>");
            }
            failures.push_str(&format!(
                "<em>disturbed, the reruns ran out: {}</em>",
                esc(d)
            ));
        }
        if let Some(steal) = st.cpu.steal_note() {
            if !failures.is_empty() {
                failures.push_str("<br>");
            }
            failures.push_str(&format!("<em>{}</em>", esc(&steal)));
        }
        let watts = row.watts.map_or(NA.into(), |(w, _)| fmt_num(w));
        let query = match (&st.query_latency_us, &st.queries) {
            (Some(p), Some(q)) if has_query && p.count > 0 => format!(
                "<td class=\"num\">{} ({} of {} answered)</td>",
                fmt_ms(p.p99),
                fmt_int(q.answered),
                fmt_int(q.sent)
            ),
            _ if has_query => format!("<td class=\"num\">{NA}</td>"),
            _ => String::new(),
        };
        let run_delay = match &st.run_delay_us {
            Some(p) if p.count > 0 => format!("<td class=\"num\">{}</td>", fmt_ms(p.p99)),
            _ if has_run_delay => format!("<td class=\"num\">{NA}</td>"),
            _ => String::new(),
        };
        let foreign = match &st.cpu.foreign_percent {
            Some(f) => format!("<td class=\"num\">{:.1}</td>", f.worst),
            None if has_foreign => format!("<td class=\"num\">{NA}</td>"),
            None => String::new(),
        };
        let batch = match &st.batch {
            _ if !has_batch => String::new(),
            None => format!(
                "<td class=\"num\">{NA}</td><td class=\"num\">{}</td>",
                fmt_num(st.cpu.machine_busy_percent)
            ),
            Some(b) => format!(
                "<td class=\"num\">{} ({}, {})</td><td class=\"num\">{}</td>",
                b.bogo_ops_per_s.map_or(NA.into(), fmt_num),
                b.cpu_percent.map_or(NA.into(), fmt_num),
                b.idle_share_percent.map_or(NA.into(), fmt_num),
                fmt_num(st.cpu.machine_busy_percent)
            ),
        };
        w!(
            out,
            "<tr{}><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td>{verdict}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>{query}{run_delay}\
             <td class=\"num\">{} ({})</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}{}</td>{foreign}{batch}<td class=\"num\">{watts}</td></tr>\n{}",
            if fail { " class=\"fail\"" } else { "" },
            row.index,
            row.servers,
            row.players,
            or_na_ms(row.latency_us.map(|l| l[0])),
            or_na_ms(row.latency_us.map(|l| l[1])),
            or_na_ms(row.latency_us.map(|l| l[2])),
            or_na_ms(row.tick_lateness_p99_us),
            or_na_ms(row.server_frame_p99_us),
            fmt_int(st.snapshots.lost),
            percent_of(st.snapshots.lost, st.snapshots.expected),
            outages(&st.outages),
            fmt_int(st.reconnects),
            // The servers' own (n/a in results from before it was
            // recorded), then the cores' busy share.
            row.servers_cpu_percent.map_or(NA.into(), fmt_num),
            format_args!(" (busy {})", fmt_num(row.cpu_busy_percent)),
            // What the step missed and what disturbed it: a row of its own
            // under the step, the whole table wide, so it is read where the
            // step is and the table stays narrow.
            if failures.is_empty() {
                String::new()
            } else {
                format!(
                    "<tr{}><td></td><td class=\"failures\" colspan=\"{}\">{failures}</td></tr>\n",
                    if fail { " class=\"fail\"" } else { "" },
                    columns - 1
                )
            },
        );
    }
    out.push_str("</table></div>\n");
    // What the short headings mean, once under the table.
    let mut notes = vec![CPU_NOTE.to_string()];
    if has_run_delay {
        notes.push("Run delay: the servers' threads waiting for a CPU".into());
    }
    if has_foreign {
        notes.push(
            "Foreign load, % of a server core: processes other than the servers \
             and tickpack, on the worst server core"
                .into(),
        );
    }
    if has_query {
        notes.push(
            "Query latency p99, ms (not transaction latency): round trips of \
             the game's own query protocol"
                .into(),
        );
    }
    w!(out, "<p class=\"tablenote\">{}.</p>\n", notes.join(". "));
    // How an adaptive ladder chose each step's size.
    let chosen: Vec<String> = ladder
        .steps
        .iter()
        .filter_map(|s| {
            s.chosen
                .as_ref()
                .map(|c| format!("step {} ({} tiles): {}", s.index, s.tiles, esc(c)))
        })
        .collect();
    if !chosen.is_empty() {
        w!(
            out,
            "<p class=\"tablenote\">How the steps were sized (the ladder grows faster while the servers \
             are far from the limit, then bisects a failure): {}.</p>\n",
            chosen.join("; ")
        );
    }
}

/// A step's outages: "0", or the count and the longest one.
pub(super) fn outages(o: &Outages) -> String {
    if o.count == 0 {
        "0".into()
    } else {
        format!("{} (longest {} ms)", fmt_int(o.count), fmt_ms(o.longest_us))
    }
}

/// A figure of the row in ms, or n/a where the step has none (no
/// players; a real game server reports no lateness or frame time).
fn or_na_ms(us: Option<u64>) -> String {
    us.map_or(NA.into(), fmt_ms)
}
