//! One players result's section (`tickpack players --json`, or merged by
//! `tickpack report merge`): a "merged from N sources" mark if merged, the
//! run, the latency summaries, what the schedule promised against what
//! arrived, the traffic, one row per source of a merged result, and the
//! problems the players met.
//!
//! Shown as recorded: the summaries of a merged result were already
//! recomputed from its merged histograms by the merge.

use std::fmt::Write as _;

use tickpack_units::tick_rate::hz_or_zero;

use crate::{Percentiles, PlayersResult};

use super::format::{esc, fmt_int, fmt_ms, fmt_num, or_na, system, utc};

pub(super) fn players_section(out: &mut String, i: usize, label: &str, r: &PlayersResult) {
    w!(
        out,
        "<section class=\"result\" id=\"players-{}\">\n<h2>Players: {}</h2>\n",
        i + 1,
        esc(label)
    );
    let n = r.merged_from.len();
    if n > 0 {
        w!(
            out,
            "<p><span class=\"badge tag\">merged from {n} sources</span> \
             {n} load generators' results, their histograms added (the percentiles \
             are those of all samples) and their counts summed.</p>\n"
        );
    }
    if r.interrupted {
        out.push_str(
            "<div class=\"interrupted\"><strong>Interrupted run:</strong> \
             measured up to the interruption only.</div>\n",
        );
    }
    run(out, r);
    latency(out, r);
    counts(out, r);
    if n > 0 {
        sources(out, r);
    }
    if !r.errors.is_empty() {
        out.push_str("<h3>Problems</h3>\n<ul>\n");
        for e in &r.errors {
            w!(out, "<li>{}</li>\n", esc(e));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

fn run(out: &mut String, r: &PlayersResult) {
    out.push_str("<h3>Run</h3>\n<dl class=\"facts\">\n");
    w!(
        out,
        "<dt>tickpack</dt><dd>{}</dd>\n",
        or_na(&r.tickpack_version)
    );
    w!(out, "<dt>Ended</dt><dd>{}</dd>\n", utc(r.system.unix_time));
    w!(
        out,
        "<dt>Players</dt><dd>{} of {} connected, {} game, to {} server{}</dd>\n",
        fmt_int(r.connected.into()),
        fmt_int(r.players.into()),
        esc(&r.game),
        fmt_int(r.targets.len() as u64),
        if r.targets.len() == 1 { "" } else { "s" }
    );
    w!(
        out,
        "<dt>Schedule</dt><dd>{} s measured after {} s warm-up; commands at {} Hz, \
         server tick {} Hz; a command is lost if not reflected within {} s</dd>\n",
        fmt_num(r.duration_s),
        fmt_num(r.warmup_s),
        fmt_num(r.cmd_rate_hz),
        hz_or_zero(r.tick_hz),
        fmt_num(r.loss_deadline_s)
    );
    let shown: Vec<String> = r.targets.iter().take(8).map(|t| esc(t)).collect();
    let more = r.targets.len().saturating_sub(shown.len());
    w!(
        out,
        "<dt>Servers</dt><dd>{}{}</dd>\n",
        shown.join(", "),
        if more > 0 {
            format!(" and {} more", fmt_int(more as u64))
        } else {
            String::new()
        }
    );
    if r.merged_from.is_empty() {
        w!(out, "<dt>System</dt><dd>{}</dd>\n", system(&r.system));
    }
    w!(
        out,
        "<dt>Load generator{}</dt><dd>{} thread{}, {} CPU seconds</dd>\n",
        if r.merged_from.is_empty() { "" } else { "s" },
        r.load_generator_threads,
        if r.load_generator_threads == 1 {
            ""
        } else {
            "s"
        },
        fmt_num(r.load_generator_cpu_s)
    );
    out.push_str("</dl>\n");
}

fn latency(out: &mut String, r: &PlayersResult) {
    out.push_str(
        "<h3>Latency (ms)</h3>\n<div class=\"scroll\"><table>\n<tr><th></th>\
         <th class=\"num\">p50</th><th class=\"num\">p90</th><th class=\"num\">p99</th>\
         <th class=\"num\">p99.9</th><th class=\"num\">max</th><th class=\"num\">samples</th></tr>\n",
    );
    let mut row = |name: &str, p: &Percentiles| {
        if p.count == 0 {
            w!(
                out,
                "<tr><th>{name}</th><td colspan=\"6\" class=\"na\">no samples</td></tr>\n"
            );
            return;
        }
        w!(
            out,
            "<tr><th>{name}</th><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td></tr>\n",
            fmt_ms(p.p50),
            fmt_ms(p.p90),
            fmt_ms(p.p99),
            fmt_ms(p.p999),
            fmt_ms(p.max),
            fmt_int(p.count)
        );
    };
    row("transaction latency", &r.transaction_latency_us);
    row("network round trip", &r.rtt_us);
    if let Some(sp) = &r.server_ping_us {
        row("server's own ping", sp);
    }
    row("server frame time", &r.server_frame_us);
    row("tick lateness", &r.tick_lateness_us);
    row("snapshot jitter", &r.snapshot_jitter_us);
    out.push_str("</table></div>\n");
}

fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "0".into()
    } else {
        fmt_num(100.0 * a as f64 / b as f64)
    }
}

fn counts(out: &mut String, r: &PlayersResult) {
    let per_s = |v: u64| fmt_num(v as f64 / r.duration_s.max(1e-9));
    let kb_s = |v: u64| fmt_num(v as f64 / 1000.0 / r.duration_s.max(1e-9));
    out.push_str("<h3>Against the schedule</h3>\n<dl class=\"facts\">\n");
    w!(
        out,
        "<dt>Snapshots</dt><dd>{} expected, {} received, {} lost ({}%)</dd>\n",
        fmt_int(r.snapshots.expected),
        fmt_int(r.snapshots.received),
        fmt_int(r.snapshots.lost),
        pct(r.snapshots.lost, r.snapshots.expected)
    );
    w!(
        out,
        "<dt>Commands</dt><dd>{} due, {} sent, {} reflected, {} lost ({}%)</dd>\n",
        fmt_int(r.commands.due()),
        fmt_int(r.commands.sent),
        fmt_int(r.commands.reflected),
        fmt_int(r.commands.lost),
        pct(r.commands.lost, r.commands.due())
    );
    w!(
        out,
        "<dt>Outages</dt><dd>{} (no snapshot for 200 ms or more), {} ms in all, \
         longest {} ms; {} reconnect(s)</dd>\n",
        fmt_int(r.outages.count),
        fmt_ms(r.outages.total_us),
        fmt_ms(r.outages.longest_us),
        fmt_int(r.reconnects)
    );
    w!(
        out,
        "<dt>Traffic</dt><dd>in {} datagrams/s, {} kB/s; out {} datagrams/s, {} kB/s \
         (UDP payload)</dd>\n",
        per_s(r.traffic.datagrams_in),
        kb_s(r.traffic.bytes_in),
        per_s(r.traffic.datagrams_out),
        kb_s(r.traffic.bytes_out)
    );
    out.push_str("</dl>\n");
}

fn sources(out: &mut String, r: &PlayersResult) {
    w!(
        out,
        "<h3>Sources ({})</h3>\n<div class=\"scroll\"><table>\n<tr><th>source</th>\
         <th>machine</th><th>ended</th><th class=\"num\">servers</th>\
         <th class=\"num\">players</th><th class=\"num\">snapshots lost</th>\
         <th class=\"num\">commands lost</th><th class=\"num\">outages</th>\
         <th class=\"num\">transaction p50 (ms)</th><th class=\"num\">p99 (ms)</th>\
         <th class=\"num\">CPU s</th></tr>\n",
        r.merged_from.len()
    );
    for s in &r.merged_from {
        w!(
            out,
            "<tr><td>{}{}</td><td>{}, {} CPUs</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{} of {}</td><td class=\"num\">{} of {}</td>\
             <td class=\"num\">{} of {}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            esc(&s.source),
            if s.interrupted { " (interrupted)" } else { "" },
            or_na(&s.cpu_model),
            s.logical_cpus,
            utc(s.unix_time),
            fmt_int(s.targets as u64),
            fmt_int(s.connected.into()),
            fmt_int(s.players.into()),
            fmt_int(s.snapshots.lost),
            fmt_int(s.snapshots.expected),
            fmt_int(s.commands.lost),
            fmt_int(s.commands.due()),
            fmt_int(s.outages.count),
            fmt_ms(s.transaction_latency_us.p50),
            fmt_ms(s.transaction_latency_us.p99),
            fmt_num(s.load_generator_cpu_s)
        );
    }
    out.push_str("</table></div>\n");
}
