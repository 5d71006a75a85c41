//! The terminal's text for a bench result: the headline, one table of
//! steps per ladder, the comparison, the consolidation and the cost, as
//! `tickpack bench` prints them at the end; beside the HTML report
//! ([`crate::html`]), from the same rows ([`crate::step_row::StepRow`]).

use std::fmt::Write as _;

use crate::bench::{BenchResult, Ladder, Step};
use crate::step_row::StepRow;
use crate::words;

/// One ladder's table of steps: a heading line and one line a step.
/// "srv CPU%" is the servers' own CPU in % of one core (the figure the
/// step's line and the idle verdict read), "busy %" the server cores'
/// busy share (the figure the headroom target reads).
pub fn steps_table(l: &Ladder) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>9} {:>8} {:>7} {:>8}",
        "servers",
        "players",
        "verdict",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "tick p99",
        "srv CPU%",
        "busy %",
        "watts"
    );
    for s in &l.steps {
        let row = StepRow::of(s);
        // No players, no transaction latency: n/a, never 0.
        let ms =
            |v: Option<u64>| v.map_or("n/a".to_string(), |us| format!("{:.2}", us as f64 / 1000.0));
        let latency = |i: usize| ms(row.latency_us.map(|l| l[i]));
        let _ = writeln!(
            out,
            "{:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>9} {:>8} {:>7.1} {:>8}",
            row.servers,
            row.players,
            row.verdict,
            latency(0),
            latency(1),
            latency(2),
            // A real game server does not report its ticks' lateness.
            ms(row.tick_lateness_p99_us),
            // The servers' own, % of one core (n/a in older results).
            row.servers_cpu_percent
                .map_or("n/a".into(), crate::numbers::fmt_num),
            row.cpu_busy_percent,
            row.watts.map_or("-".into(), |(w, measured)| format!(
                "{w:.0}{}",
                if measured { "" } else { "*" }
            ))
        );
    }
    out
}

/// A step's line as a run prints it when the step ends: its servers,
/// verdict, the latency that leads (run delay for a game without
/// players), CPU, query latency and what disturbed it, and what it missed.
pub fn step_line(ladder: &Ladder, s: &Step, repeated: bool) -> String {
    let cpu = StepRow::of(s).cpu_words();
    let latency = match (&s.tile, &s.run_delay_us, s.players) {
        // A tile step's latencies are its members', a line each below.
        (Some(t), _, _) => format!("{} members judged per window, below", t.members.len()),
        (None, Some(rd), 0) => format!("run delay p99 {:.2} ms", rd.p99 as f64 / 1000.0),
        (None, None, 0) => "run delay not sampled".to_string(),
        _ => format!("p99 {:.2} ms", s.transaction_latency_us.p99 as f64 / 1000.0),
    };
    format!(
        "{}: {} {} ({latency}, servers' CPU {cpu}{}{}){}",
        ladder_title(ladder, repeated),
        words::servers(s.servers),
        s.verdict.as_str().to_uppercase(),
        s.query_latency_us.map_or(String::new(), |q| format!(
            ", query p99 {:.2} ms",
            q.p99 as f64 / 1000.0
        )),
        step_disturbance(s),
        if s.failures.is_empty() {
            String::new()
        } else {
            format!(": {}", s.failures.join("; "))
        }
    ) + &member_lines(s)
}

/// A tile step's members, one line each (nothing for a one-game step):
/// its servers, the windows it passed, its worst p99 and its first miss.
pub fn member_lines(s: &Step) -> String {
    let Some(t) = &s.tile else {
        return String::new();
    };
    let mut out = String::new();
    for m in &t.members {
        let passed = m.windows.iter().filter(|w| w.passed()).count();
        let players = m.windows.iter().any(|w| w.transaction_p99_us.is_some());
        let worst = m
            .windows
            .iter()
            .filter_map(|w| {
                if players {
                    w.transaction_p99_us
                } else {
                    w.run_delay_p99_us
                }
            })
            .max();
        let joins: u64 = m.windows.iter().map(|w| w.joins).sum();
        let failed: u64 = m.windows.iter().map(|w| w.failed_joins).sum();
        out.push_str(&format!(
            "\n    {}: {} servers, {passed} of {} windows passed, {} {}, {joins} joins ({failed} failed)",
            m.name,
            m.servers,
            m.windows.len(),
            if players { "worst p99" } else { "worst run delay p99" },
            worst.map_or("n/a".to_string(), |v| format!("{:.2} ms", v as f64 / 1000.0)),
        ));
        if let Some((i, w)) = m.windows.iter().enumerate().find(|(_, w)| !w.passed()) {
            out.push_str(&format!(
                "; window {} ({:.0}-{:.0} s): {}",
                i + 1,
                w.start_s,
                w.end_s,
                w.failures.join("; ")
            ));
        }
    }
    out
}

/// The consolidation ratio and what it is computed against, in words
/// below 1; what to pass when the result has none.
pub fn consolidation_line(
    ratio: Option<f64>,
    recommended: Option<u32>,
    before: Option<u32>,
) -> String {
    match (ratio, recommended, before) {
        (Some(_), Some(rec), Some(before)) => crate::headline::consolidation_words(rec, before),
        (Some(c), _, _) => format!("consolidation ratio {c:.2}:1 (its baseline was not recorded)"),
        (None, None, _) => "consolidation ratio: n/a (no recommended density)".into(),
        (None, Some(_), _) => "consolidation ratio: not computed; give the servers one of your \
             machines runs today (--before-servers N)"
            .into(),
    }
}

/// The headline: servers per server core, what it means for this machine
/// and the projected one, and its assumptions.
pub fn headline_lines(r: &BenchResult) -> String {
    let mut s = headline_only(r);
    if let Some(w) = r.machine_speed.as_ref().and_then(|m| m.words()) {
        s += &format!("  {w}\n");
    }
    s
}

fn headline_only(r: &BenchResult) -> String {
    match crate::headline::Headline::of(r) {
        Some(h) => {
            let mut s = format!(
                "{} at QoS within the headroom target\n",
                h.answer_words().to_uppercase()
            );
            for line in h.trust_lines() {
                s += &format!("  {line}\n");
            }
            if let Some(d) = h.disturbed_words() {
                s += &format!("  {d}\n");
            }
            for line in h.machine_lines() {
                s += &format!("  {line}\n");
            }
            s += &format!("  assumptions: {}\n", h.assumptions());
            s
        }
        None => match crate::headline::idle_words(r) {
            Some(idle) => format!("NO DENSITY, THE SERVERS WERE IDLE\n  {idle}\n"),
            None => {
                "servers per server core: not reached (no step passed within the headroom target)\n"
                    .into()
            }
        },
    }
}

/// A ladder's heading: its label, and its repetition when the run had
/// several.
pub fn ladder_title(l: &Ladder, repeated: bool) -> String {
    match l.repetition {
        Some(n) if repeated => format!("{}, repetition {n}", l.label),
        _ => l.label.clone(),
    }
}

/// The comparison over the repetitions: per variant the median and range
/// of its densities, then every ratio with its range and whether the
/// variants can be told apart.
pub fn comparison_lines(c: &crate::comparison::Comparison) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if c.kind == "none" {
        // One variant repeated: the ladders behind the headline's spread.
        let _ = writeln!(
            out,
            "\nrepeated ladders: {} of {} finished, one after the other",
            c.repetitions_finished, c.repetitions
        );
    } else {
        let _ = writeln!(
            out,
            "\ncomparison ({}): {} of {} repetition{} finished, steps interleaved",
            c.kind,
            c.repetitions_finished,
            c.repetitions,
            if c.repetitions == 1 { "" } else { "s" }
        );
    }
    let width = c
        .variants
        .iter()
        .map(|v| v.label.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let _ = writeln!(
        out,
        "  {:<width$}  {:>14} {:>9}  {:>14} {:>9}  per repetition (maximum)",
        "variant", "maximum median", "range", "recomm. median", "range"
    );
    for v in &c.variants {
        let per: Vec<String> = v
            .max_servers
            .per_repetition
            .iter()
            .map(|x| x.map_or("-".into(), |x| format!("{x:.0}")))
            .collect();
        let _ = writeln!(
            out,
            "  {:<width$}  {:>14} {:>9}  {:>14} {:>9}  {}",
            v.label,
            v.max_servers.median_words(0),
            v.max_servers.range_words(0),
            v.recommended_servers.median_words(0),
            v.recommended_servers.range_words(0),
            per.join(" ")
        );
    }
    if !c.ratios.is_empty() {
        let _ = writeln!(out, "{}:", c.question());
        for line in c.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// Writes a step's line for a distribution measured in µs, in ms:
/// "  N servers: `what` p50 A ms, p99 B ms, max C ms" followed by `tail`.
fn percentiles_ms_line(out: &mut String, s: &Step, what: &str, p: &crate::Percentiles, tail: &str) {
    let ms = |us: u64| us as f64 / 1000.0;
    let _ = writeln!(
        out,
        "  {}: {what} p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms{tail}",
        words::servers(s.servers),
        ms(p.p50),
        ms(p.p99),
        ms(p.max)
    );
}

/// The terminal summary: the headline first, then the ladders, the
/// comparison, the consolidation and the cost, the headline again last
/// (under a long table of steps).
pub fn bench_summary(r: &BenchResult) -> String {
    let mut out = String::new();
    let _ = write!(out, "{}", headline_lines(r));
    let repeated = r.comparison.as_ref().is_some_and(|c| c.repetitions > 1);
    for l in &r.ladders {
        let _ = writeln!(out, "\n{} ({})", ladder_title(l, repeated), l.stopped);
        let _ = write!(out, "{}", steps_table(l));
        for s in &l.steps {
            if let Some(p) = &s.run_delay_us {
                let tail = format!(" over {} samples", p.count);
                let what = "run delay (threads waiting for a CPU)";
                percentiles_ms_line(&mut out, s, what, p, &tail);
            }
            if let (Some(p), Some(q)) = (&s.query_latency_us, &s.queries) {
                let tail = format!("; {} of {} queries answered", q.answered, q.sent);
                let what = "query latency (not transaction latency)";
                percentiles_ms_line(&mut out, s, what, p, &tail);
            }
        }
        for s in l
            .steps
            .iter()
            .filter(|s| !s.first_attempt_failures.is_empty())
        {
            let _ = writeln!(
                out,
                "  {}: first attempt failed ({}); {}",
                words::servers(s.servers),
                s.first_attempt_failures.join("; "),
                confirmation_words(s)
            );
        }
        let _ = writeln!(
            out,
            "maximum density {}; recommended (server cores busy <= {:.0}%) {}",
            l.max_density_words(),
            r.settings.headroom_target * 100.0,
            l.recommended_servers
                .map_or("not reached".to_string(), words::servers)
        );
    }
    match &r.comparison {
        Some(c) => out.push_str(&comparison_lines(c)),
        None => {
            if let Some(ratio) = r.comparison_ratio {
                let _ = writeln!(out, "\ntickpack's placement fits {ratio:.2}x the servers the kernel's scheduling fits at the same QoS");
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{}",
        consolidation_line(
            r.consolidation_ratio,
            r.recommended_servers,
            r.before_servers
        )
    );
    match &r.tco {
        Some(t) => {
            let cur = t.currency.as_deref().unwrap_or("(currency not recorded)");
            let i = &t.inputs;
            let _ = writeln!(out,
                "cost per year: {} machines -> {}, {:.0} -> {:.0} {cur}, saving {:.0} {cur} ({:.0}%)",
                t.before.machines,
                t.after.machines,
                t.before.annual_cost,
                t.after.annual_cost,
                t.savings.annual,
                t.savings.percent
            );
            let _ = writeln!(
                out,
                "  from: {} machines, {:.0} W each before, {:.2} {cur}/kWh x rate {} (given); \
                 {:.0} W each after ({} at the recommended step); ratio {:.2} (measured); \
                 8760 h a year; electricity only",
                i.machines,
                i.before_watts,
                i.price_per_kwh,
                i.currency_rate,
                i.after_watts,
                t.watts_source,
                i.ratio
            );
        }
        None => {
            let _ = writeln!(out, "no cost figures: {}", crate::headline::why_no_cost(r));
        }
    }
    if crate::headline::Headline::of(r).is_some() {
        let _ = write!(out, "\n{}", headline_lines(r));
    }
    if r.ladders
        .iter()
        .flat_map(|l| &l.steps)
        .any(|s| s.power.as_ref().is_some_and(|p| !p.source.is_measured()))
    {
        let _ = writeln!(
            out,
            "* modeled watts (no power meter found); see docs/methodology.md"
        );
    }
    out
}

/// What a step line says of the machine beside the servers: the worst
/// server core's foreign load (when recorded), the steal (from 1 %), and
/// whether the attempt that stands was disturbed past a limit.
pub fn step_disturbance(s: &Step) -> String {
    let mut out = String::new();
    if let Some(f) = &s.cpu.foreign_percent {
        out.push_str(&format!(", foreign {:.1}%", f.worst));
    }
    if let Some(n) = s.cpu.steal_note() {
        out.push_str(&format!(", {n}"));
    }
    if let Some(d) = &s.disturbed {
        out.push_str(&format!(", DISTURBED: {d}"));
    }
    out
}

/// What a failed first step means and what to try next: the settings that
/// made the tile, and the flags that shrink it, in the order worth trying.
pub fn first_step_failed_words(r: &BenchResult) -> String {
    let s = &r.settings;
    let first = r.ladders.first().and_then(|l| l.steps.first());
    let mut tries = vec![];
    if s.tile_servers > 1 {
        tries.push(format!(
            "--tile-servers 1 (the first step ran {} servers at once)",
            s.tile_servers
        ));
    }
    if first.is_some_and(|st| st.cpu.worst_steal() >= 1.0) {
        tries.push("a quieter machine: the hypervisor ran other guests during the step".into());
    } else {
        tries.push(
            "a quieter machine: stop other work on it (a package install, a build) and run again"
                .into(),
        );
    }
    if s.players_per_server > 1 {
        tries.push(format!(
            "fewer players (--players-per-server {})",
            (s.players_per_server / 2).max(1)
        ));
    }
    tries.push("looser limits, if yours allow it (--qos-p99-ms, --qos-tick-lateness-ms)".into());
    let missed = first
        .map(|st| st.failures.join("; "))
        .filter(|f| !f.is_empty())
        .map_or(String::new(), |f| format!(" ({f})"));
    format!(
        "QoS failed already at the first step, {} server{}{missed}: this machine could not hold \
         one tile at these limits. Try: {}",
        s.tile_servers,
        if s.tile_servers == 1 { "" } else { "s" },
        tries.join("; ")
    )
}

/// The first variant's first step failed in every repetition: the machine
/// cannot hold one tile (one noisy repetition among passing ones is noise,
/// and the comparison says so).
pub fn first_step_always_failed(r: &BenchResult) -> bool {
    let Some(first) = r.ladders.first() else {
        return false;
    };
    r.ladders
        .iter()
        .filter(|l| l.label == first.label)
        .all(|l| l.steps.first().is_some_and(|s| s.verdict.is_fail()))
}

/// How a confirmed step's attempts went: "attempts fail, pass, pass: pass",
/// or, in results from before every attempt was recorded, "second attempt
/// pass".
fn confirmation_words(s: &crate::bench::Step) -> String {
    if s.attempts.is_empty() {
        return format!("second attempt {}", s.verdict);
    }
    let each: Vec<&str> = s.attempts.iter().map(|a| a.verdict.as_str()).collect();
    format!("attempts {}: {}", each.join(", "), s.verdict)
}

#[cfg(test)]
mod tests;
