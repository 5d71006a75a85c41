//! The HTML report: one self-contained page for one or more `tickpack bench`
//! results (`result.json`, schema [`BENCH_SCHEMA`]).
//!
//! [`render`] turns parsed results into the page; [`render_file`] reads and
//! checks the files first ([`read_result`] for one file) and names the file
//! and what is wrong with it when it cannot.
//!
//! The page opens offline and forever: no script, no external stylesheet,
//! font or image, no URL at all. CSS sits in a `<style>` block, charts are
//! inline SVG drawn by this module (`svg`: a small line-chart helper;
//! `charts`: which charts, from which fields). Every string that came from a
//! result file is HTML-escaped.
//!
//! What the page shows, per result, top to bottom: an "interrupted" banner
//! if `complete` is false; the verdict in words (recommended and maximum
//! density, headroom target, consolidation ratio, comparison ratio); the run
//! (version, date, system, cores, settings, QoS limits); the ladders; the
//! charts (latency, CPU, power vs servers, and the first ladder's latency
//! distribution per step); one table of steps per ladder; the cost figures.
//! With two or more results a comparison table comes first.
//!
//! What it deliberately does not do: judge QoS or recompute densities. The
//! verdicts, densities and ratios are the bench's and are shown as recorded;
//! a missing one is "not reached" or "n/a", never 0. The only recomputation
//! is the latency distribution, drawn from the stored HdrHistograms. It
//! writes no file either: the caller decides where the page goes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::bench::{BenchResult, Ladder, Step, BENCH_SCHEMA};
use crate::qos::{LimitText, Verdict, RULES};
use crate::Outages;

mod charts;
mod svg;

pub use svg::linear_ticks;

/// Appends formatted text to a `String` (which cannot fail).
macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = write!($dst, $($arg)*);
    }};
}

/// Why a result file could not be turned into a report.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not JSON: {source}")]
    NotJson {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} is not a tickpack bench result: it has no \"schema\" field (expected \"{expected}\")", expected = BENCH_SCHEMA)]
    NoSchema { path: String },
    #[error("{path} has schema {found}, but the HTML report reads \"{expected}\" (the result.json of `tickpack bench`)", expected = BENCH_SCHEMA)]
    WrongSchema {
        path: String,
        /// The schema value as it appears in the file (JSON).
        found: String,
    },
    #[error("{path} says it is \"{expected}\" but does not match that schema: {source}", expected = BENCH_SCHEMA)]
    Invalid {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads one `result.json`, checking that it is JSON, that its `schema` is
/// [`BENCH_SCHEMA`], and that it matches that schema.
pub fn read_result(path: &Path) -> Result<BenchResult, InputError> {
    let p = || path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|source| InputError::Read { path: p(), source })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| InputError::NotJson { path: p(), source })?;
    match value.get("schema") {
        None => return Err(InputError::NoSchema { path: p() }),
        Some(serde_json::Value::String(s)) if s == BENCH_SCHEMA => {}
        Some(other) => {
            return Err(InputError::WrongSchema {
                path: p(),
                found: other.to_string(),
            })
        }
    }
    // Parse the text again (not the value) so errors carry line and column.
    serde_json::from_str(&text).map_err(|source| InputError::Invalid { path: p(), source })
}

/// Reads every file (see [`read_result`]) and renders them on one page,
/// each labelled with its path.
pub fn render_file(paths: &[PathBuf]) -> Result<String, InputError> {
    let results = paths
        .iter()
        .map(|p| Ok((p.display().to_string(), read_result(p)?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    Ok(render(&results))
}

/// The whole report page for `results` (label, result), in that order.
pub fn render(results: &[(String, BenchResult)]) -> String {
    let mut out = String::with_capacity(128 * 1024);
    let title = match results {
        [(label, _)] => format!("tickpack bench report: {label}"),
        _ => "tickpack bench report".to_string(),
    };
    w!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(&title)
    );
    w!(out, "<h1>tickpack bench report</h1>\n");
    match results.len() {
        0 => out.push_str("<p class=\"na\">No results to show.</p>\n"),
        1 => {}
        n => {
            w!(
                out,
                "<p class=\"muted\">{n} results, compared first, then one after the other: "
            );
            for (i, (label, _)) in results.iter().enumerate() {
                w!(
                    out,
                    "{}<a href=\"#result-{}\">{}</a>",
                    if i > 0 { ", " } else { "" },
                    i + 1,
                    esc(label)
                );
            }
            out.push_str(".</p>\n");
            comparison(&mut out, results);
        }
    }
    for (i, (label, r)) in results.iter().enumerate() {
        result_section(&mut out, i, results.len(), label, r);
    }
    w!(
        out,
        "<footer>Made by tickpack-report {} from the result file{} alone; \
         the latency distributions are recomputed from the stored histograms.</footer>\n\
         </main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        if results.len() == 1 { "" } else { "s" }
    );
    out
}

const CSS: &str = "
:root { --fail: #c62828; --pass: #2e7d32; --muted: #5a5a5a; --border: #c9ccd1; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f7f9; color: #1b1b1b;
  font: 15px/1.5 system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 1.7em; margin: 0 0 6px; }
h2 { font-size: 1.4em; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid #30343a; }
h3 { font-size: 1.15em; margin: 26px 0 8px; }
h4 { font-size: 1em; margin: 18px 0 6px; }
a { color: #1557a0; }
table { border-collapse: collapse; margin: 6px 0 14px; background: #fff; font-size: 14px; }
th, td { border: 1px solid var(--border); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eceff3; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
table.steps th { vertical-align: bottom; }
table.steps { width: 100%; }
td.failures { min-width: 11em; }
tr.fail td { background: #fdecea; }
.scroll { overflow-x: auto; }
.verdict { background: #fff; border: 1px solid var(--border); border-left: 6px solid #1f77b4;
  padding: 10px 18px; margin: 12px 0 8px; }
.verdict p { margin: 6px 0; }
.verdict .headline { font-size: 1.3em; }
.interrupted { background: #fff3e0; border: 1px solid #f0a020; border-left: 6px solid #e65100;
  padding: 10px 16px; margin: 12px 0; }
.badge { display: inline-block; white-space: nowrap; margin: 1px 0; padding: 0 6px; border-radius: 3px; font-size: .85em; font-weight: 600; }
.badge.pass { background: #e3f1e4; color: var(--pass); }
.badge.fail { background: var(--fail); color: #fff; }
.badge.tag { background: #e6eef8; color: #1557a0; }
.na { color: var(--muted); font-style: italic; }
.muted { color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 18px; margin: 6px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
dl.facts ul { margin: 0; padding-left: 18px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(520px, 100%), 1fr)); gap: 14px; }
figure { margin: 0; background: #fff; border: 1px solid var(--border); padding: 8px 10px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; }
footer { margin-top: 40px; font-size: 13px; color: var(--muted); }
";

/// HTML-escapes text for element content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Microseconds as milliseconds with three significant-ish digits.
pub(crate) fn fmt_ms(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    if ms < 1.0 {
        format!("{ms:.3}")
    } else if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 100.0 {
        format!("{ms:.1}")
    } else {
        fmt_int(ms.round() as u64)
    }
}

/// A number with at most two decimals, trailing zeros dropped; "n/a" when
/// not finite.
pub(crate) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v.abs() >= 1000.0 {
        let s = fmt_int(v.abs().round() as u64);
        return if v < 0.0 { format!("-{s}") } else { s };
    }
    let s = if v != 0.0 && v.abs() < 0.1 {
        format!("{v:.3}")
    } else {
        format!("{v:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A quantile (0..1) as a percentile label: 0.999 -> "99.9".
pub(crate) fn fmt_quantile(q: f64) -> String {
    let s = format!("{:.4}", q * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// An integer with thousands separators.
pub(crate) fn fmt_int(v: u64) -> String {
    let d = v.to_string();
    let lead = (d.len() - 1) % 3 + 1;
    let mut o = String::with_capacity(d.len() + d.len() / 3);
    o.push_str(&d[..lead]);
    for group in d.as_bytes()[lead..].chunks(3) {
        o.push(',');
        o.extend(group.iter().map(|&b| char::from(b)));
    }
    o
}

fn fmt_ratio(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if (v - v.round()).abs() < 0.005 && v.abs() >= 1.0 {
        format!("{:.0}x", v.round())
    } else {
        format!("{v:.2}x")
    }
}

/// `part / whole` in percent, "0 %" when `whole` is 0.
fn percent_of(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0 %".into()
    } else {
        format!("{} %", fmt_num(part as f64 * 100.0 / whole as f64))
    }
}

const NA: &str = "<span class=\"na\">n/a</span>";
const NOT_REACHED: &str = "<span class=\"na\">not reached</span>";

fn or_na(s: &str) -> String {
    if s.trim().is_empty() {
        "<span class=\"na\">unknown</span>".into()
    } else {
        esc(s)
    }
}

/// Unix seconds as "YYYY-MM-DD HH:MM:SS UTC" (0: unknown).
fn utc(unix: u64) -> String {
    if unix == 0 {
        return "unknown".into();
    }
    // Howard Hinnant's civil_from_days.
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn fmt_duration(s: u64) -> String {
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s / 60 % 60),
    }
}

/// CPU numbers as ranges: [0,1,2,5] -> "0-2, 5"; empty -> "not pinned".
fn cpu_list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "not pinned".into();
    }
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    format!("{} ({})", parts.join(", "), v.len())
}

fn servers(n: Option<u32>) -> String {
    match n {
        Some(n) => format!("{n} servers"),
        None => NOT_REACHED.into(),
    }
}

/// A ladder's maximum density; "not found" when it was interrupted before
/// its limit (its largest passing step is only a lower bound).
fn ladder_max(l: &Ladder) -> String {
    if l.interrupted_before_limit() {
        return format!("<span class=\"na\">{}</span>", esc(&l.max_density_words()));
    }
    servers(l.max_servers)
}

/// A result's maximum density, from its first ladder when that one was
/// interrupted before its limit.
fn max_density(r: &BenchResult) -> String {
    match r.ladders.first() {
        Some(l) if l.interrupted_before_limit() => ladder_max(l),
        _ => servers(r.max_servers),
    }
}

fn step_at(ladder: Option<&Ladder>, servers: Option<u32>) -> Option<&Step> {
    let s = servers?;
    ladder?.steps.iter().find(|st| st.servers == s)
}

fn is_fail(step: &Step) -> bool {
    step.verdict.is_fail()
}

/// The comparison table: one column per result.
fn comparison(out: &mut String, results: &[(String, BenchResult)]) {
    out.push_str(
        "<h2>Comparison</h2>\n<div class=\"scroll\"><table class=\"comparison\">\n<tr><th></th>",
    );
    for (i, (label, _)) in results.iter().enumerate() {
        w!(
            out,
            "<th><a href=\"#result-{}\">{}</a></th>",
            i + 1,
            esc(label)
        );
    }
    out.push_str("</tr>\n");
    let row = |out: &mut String, name: &str, cell: &dyn Fn(&BenchResult) -> String| {
        w!(out, "<tr><th>{name}</th>");
        for (_, r) in results {
            w!(out, "<td>{}</td>", cell(r));
        }
        out.push_str("</tr>\n");
    };
    row(out, "Run", &|r| {
        if r.complete {
            "complete".into()
        } else {
            "<strong>interrupted (incomplete)</strong>".into()
        }
    });
    row(out, "Started", &|r| utc(r.started_unix));
    row(out, "tickpack", &|r| or_na(&r.tickpack_version));
    row(out, "CPU", &|r| {
        format!(
            "{}, {} logical CPUs",
            or_na(&r.system.cpu_model),
            r.system.logical_cpus
        )
    });
    row(out, "Kernel", &|r| or_na(&r.system.kernel));
    row(out, "Cores: load generator / servers", &|r| {
        format!(
            "{} / {}",
            cpu_list(&r.cores.load_generator),
            cpu_list(&r.cores.servers)
        )
    });
    row(out, "Tile, players, tick", &|r| {
        format!(
            "{} servers per tile, {} players per server, {} Hz, cost {}",
            r.settings.tile_servers,
            r.settings.players_per_server,
            r.settings.tick_hz,
            or_na(&r.settings.cost)
        )
    });
    row(out, "Ladders", &|r| {
        if r.ladders.is_empty() {
            return NA.into();
        }
        r.ladders
            .iter()
            .map(|l| esc(&l.label))
            .collect::<Vec<_>>()
            .join("<br>")
    });
    row(out, "<strong>Recommended density</strong>", &|r| {
        format!("<strong>{}</strong>", servers(r.recommended_servers))
    });
    row(out, "Maximum density", &max_density);
    row(out, "Headroom target", &|r| {
        format!(
            "{} % server-core busy",
            fmt_num(r.settings.headroom_target * 100.0)
        )
    });
    row(out, "Consolidation ratio", &|r| {
        r.consolidation_ratio.map_or(NA.into(), fmt_ratio)
    });
    row(
        out,
        "Comparison ratio",
        &|r| match (r.comparison_ratio, r.settings.compare.as_str()) {
            (Some(v), c) => format!("{} ({})", fmt_ratio(v), esc(c)),
            (None, _) => NA.into(),
        },
    );
    row(
        out,
        "p99 transaction latency at the recommended density",
        &|r| {
            step_at(r.ladders.first(), r.recommended_servers).map_or(NA.into(), |s| {
                format!("{} ms", fmt_ms(s.transaction_latency_us.p99))
            })
        },
    );
    row(out, "Watts at the recommended density", &|r| {
        step_at(r.ladders.first(), r.recommended_servers)
            .and_then(|s| s.power.as_ref())
            .map_or(NA.into(), |p| {
                format!("{} W ({})", fmt_num(p.watts), p.source)
            })
    });
    row(out, "Annual savings", &|r| {
        r.tco.as_ref().map_or(NA.into(), |t| {
            format!(
                "{} ({} %), {} kWh",
                fmt_num(t.savings.annual),
                fmt_num(t.savings.percent),
                fmt_num(t.savings.annual_kwh)
            )
        })
    });
    out.push_str("</table></div>\n");
}

fn result_section(out: &mut String, i: usize, n: usize, label: &str, r: &BenchResult) {
    w!(out, "<section class=\"result\" id=\"result-{}\">\n", i + 1);
    if n > 1 {
        w!(out, "<h2>Result {}: {}</h2>\n", i + 1, esc(label));
    } else {
        w!(out, "<h2>{}</h2>\n", esc(label));
    }
    let steps: usize = r.ladders.iter().map(|l| l.steps.len()).sum();
    if !r.complete {
        w!(
            out,
            "<div class=\"interrupted\"><strong>Interrupted run: this result is incomplete.</strong> \
             The run did not finish; this page shows the {steps} step{} that did. \
             The densities below may be lower than the machine can reach.</div>\n",
            if steps == 1 { "" } else { "s" }
        );
    }
    verdict(out, r);
    run_facts(out, r);
    ladders_table(out, r);

    out.push_str("<h3>Charts</h3>\n<div class=\"charts\">\n");
    figure(out, charts::latency(r));
    figure(out, charts::cpu(r));
    match charts::power(r) {
        Some(f) => figure(out, f),
        None => out.push_str(
            "<p class=\"na\">Power: no power source (neither measured nor modeled in this run).</p>\n",
        ),
    }
    let mut notes = Vec::new();
    if let Some(first) = r.ladders.first() {
        figure(out, charts::distribution(r, first, &mut notes));
    }
    out.push_str("</div>\n");
    for note in notes {
        w!(
            out,
            "<p class=\"na\">Latency distribution: {}</p>\n",
            esc(&note)
        );
    }

    out.push_str("<h3>Steps</h3>\n");
    if r.ladders.is_empty() {
        out.push_str("<p class=\"na\">No ladder ran.</p>\n");
    }
    for (li, ladder) in r.ladders.iter().enumerate() {
        steps_table(out, r, li, ladder);
    }
    cost(out, r);
    out.push_str("</section>\n");
}

fn figure(out: &mut String, f: charts::Figure) {
    if f.chart.is_empty() {
        w!(out, "<p class=\"na\">{}</p>\n", esc(&f.empty));
        return;
    }
    w!(
        out,
        "<figure>{}<figcaption>{}</figcaption></figure>\n",
        f.chart.to_svg(),
        esc(&f.caption)
    );
}

fn verdict(out: &mut String, r: &BenchResult) {
    let s = &r.settings;
    let target = fmt_num(s.headroom_target * 100.0);
    let first = r.ladders.first();
    let no_steps = match first {
        Some(l) => l.steps.is_empty(),
        None => true,
    };
    out.push_str("<div class=\"verdict\">\n");
    w!(
        out,
        "<p class=\"headline\">Recommended density: <strong>{}</strong> per machine &middot; \
         maximum density: <strong>{}</strong></p>\n",
        servers(r.recommended_servers),
        max_density(r)
    );
    // Recommended.
    match (r.recommended_servers, step_at(first, r.recommended_servers)) {
        (Some(n), step) => {
            w!(
                out,
                "<p><strong>Recommended: {n} servers</strong>{}: the largest passing step whose \
                 server cores stay within the headroom target of <strong>{target} %</strong> busy",
                tiles_of(n, s.tile_servers)
            );
            if let Some(st) = step {
                w!(
                    out,
                    " (measured: {} % busy, p99 transaction latency {} ms)",
                    fmt_num(st.cpu.servers_busy_percent),
                    fmt_ms(st.transaction_latency_us.p99)
                );
            }
            out.push_str(".</p>\n");
        }
        (None, _) => w!(
            out,
            "<p><strong>Recommended: not reached</strong>: {}</p>\n",
            if no_steps {
                "no step finished.".to_string()
            } else {
                format!(
                    "no passing step kept the server cores within the headroom target of \
                     <strong>{target} %</strong> busy."
                )
            }
        ),
    }
    // Maximum.
    let unfound = first.filter(|l| l.interrupted_before_limit());
    match r.max_servers {
        _ if unfound.is_some() => w!(
            out,
            "<p><strong>Maximum: not found</strong>: the run was interrupted before the ladder \
             found its limit{}.</p>\n",
            unfound
                .and_then(|l| l.max_servers)
                .map_or(String::new(), |n| format!(
                    "; at least <strong>{n} servers</strong> met every QoS limit"
                ))
        ),
        Some(n) => w!(
            out,
            "<p><strong>Maximum: {n} servers</strong>{}: the largest step that met every QoS \
             limit before the first failure.</p>\n",
            tiles_of(n, s.tile_servers)
        ),
        None => w!(
            out,
            "<p><strong>Maximum: not reached</strong>: {}</p>\n",
            if no_steps {
                "no step finished."
            } else {
                "no step met the QoS limits before the first failure."
            }
        ),
    }
    // Consolidation.
    match r.consolidation_ratio {
        Some(c) => w!(
            out,
            "<p>Consolidation ratio: <strong>{}</strong>: servers per machine at the recommended \
             density, against {} per machine before consolidating (<code>--before-servers</code>).</p>\n",
            fmt_ratio(c),
            r.before_servers.map_or("the servers".to_string(), |n| format!(
                "<strong>{n} server{}</strong>",
                if n == 1 { "" } else { "s" }
            ))
        ),
        None => out.push_str(
            "<p>Consolidation ratio: <span class=\"na\">n/a</span> (no recommended density).</p>\n",
        ),
    }
    // Comparison.
    let l0 = r.ladders.first().map(|l| esc(&l.label));
    let l1 = r.ladders.get(1).map(|l| esc(&l.label));
    match (r.comparison_ratio, l0, l1) {
        (Some(v), Some(a), Some(b)) if s.compare == "placement" => w!(
            out,
            "<p class=\"comparison-sentence\">tickpack's placement ({a}) fits <strong>{}</strong> \
             the servers the kernel's scheduling ({b}) fits at the same QoS.</p>\n",
            fmt_ratio(v)
        ),
        (Some(v), Some(a), Some(b)) => w!(
            out,
            "<p class=\"comparison-sentence\">{a} fits <strong>{}</strong> the servers {b} \
             fits at the same QoS.</p>\n",
            fmt_ratio(v)
        ),
        (Some(v), _, _) => w!(
            out,
            "<p>Comparison ratio: <strong>{}</strong>.</p>\n",
            fmt_ratio(v)
        ),
        (None, _, _) if s.compare == "none" => out.push_str(
            "<p class=\"muted\">Comparison: none asked for (<code>--compare none</code>).</p>\n",
        ),
        (None, _, _) => {
            let missing: Vec<String> = r
                .ladders
                .iter()
                .take(2)
                .filter(|l| l.max_servers.is_none())
                .map(|l| esc(&l.label))
                .collect();
            w!(
                out,
                "<p>Comparison ratio ({}): <span class=\"na\">n/a</span>{}.</p>\n",
                esc(&s.compare),
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(": no maximum density for {}", missing.join(" and "))
                }
            );
        }
    }
    if !r.complete {
        out.push_str(
            "<p><strong>Interrupted run:</strong> these figures cover only the finished steps.</p>\n",
        );
    }
    out.push_str("</div>\n");
}

fn tiles_of(n: u32, tile: u32) -> String {
    if n.checked_rem(tile) == Some(0) {
        let t = n / tile;
        format!(" ({t} tile{} of {tile})", if t == 1 { "" } else { "s" })
    } else {
        String::new()
    }
}

fn run_facts(out: &mut String, r: &BenchResult) {
    let s = &r.settings;
    let q = &s.qos;
    out.push_str("<h3>Run</h3>\n<dl class=\"facts\">\n");
    w!(
        out,
        "<dt>tickpack</dt><dd>{}</dd>\n",
        or_na(&r.tickpack_version)
    );
    w!(out, "<dt>Started</dt><dd>{}</dd>\n", utc(r.started_unix));
    let finished = match (r.complete, r.finished_unix) {
        (_, Some(f)) if f >= r.started_unix && r.started_unix > 0 => {
            format!("{} (took {})", utc(f), fmt_duration(f - r.started_unix))
        }
        (_, Some(f)) => utc(f),
        (false, None) => "<strong>did not finish: interrupted, incomplete</strong>".into(),
        (true, None) => NA.into(),
    };
    w!(out, "<dt>Finished</dt><dd>{finished}</dd>\n");
    w!(
        out,
        "<dt>Status</dt><dd>{}</dd>\n",
        if r.complete {
            "complete"
        } else {
            "<strong>interrupted (incomplete)</strong>"
        }
    );
    w!(
        out,
        "<dt>System</dt><dd>{}, {} logical CPUs, kernel {}</dd>\n",
        or_na(&r.system.cpu_model),
        r.system.logical_cpus,
        or_na(&r.system.kernel)
    );
    w!(
        out,
        "<dt>Cores</dt><dd>{} in total; load generator: {}; servers: {}</dd>\n",
        r.cores.total,
        cpu_list(&r.cores.load_generator),
        cpu_list(&r.cores.servers)
    );
    w!(
        out,
        "<dt>Servers</dt><dd>tiles of {} server{}; {} players per server (+{} bots); \
         {} Hz tick; cost profile {}</dd>\n",
        s.tile_servers,
        if s.tile_servers == 1 { "" } else { "s" },
        s.players_per_server,
        s.bots_per_server,
        s.tick_hz,
        or_na(&s.cost)
    );
    w!(
        out,
        "<dt>Steps</dt><dd>{} s measured after {} s warm-up; at most {} steps, {} past the \
         first failure</dd>\n",
        fmt_num(s.step_duration_s),
        fmt_num(s.warmup_s),
        s.max_steps,
        s.steps_past_failure
    );
    w!(
        out,
        "<dt>Headroom target</dt><dd>{} % server-core busy</dd>\n",
        fmt_num(s.headroom_target * 100.0)
    );
    w!(out, "<dt>Compare</dt><dd>{}</dd>\n", or_na(&s.compare));
    out.push_str("<dt>QoS limits</dt><dd>a step fails if it misses any of:<ul>");
    for rule in &RULES {
        match (rule.limit)(q, s.tick_hz) {
            // tickpack's own words and numbers, nothing from the file.
            LimitText::AtMost { measure, bound } => w!(out, "<li>{measure} &le; {bound}</li>"),
            LimitText::Must(words) => w!(out, "<li>{words}</li>"),
        }
    }
    out.push_str("</ul></dd>\n");
    out.push_str("</dl>\n");
}

fn ladders_table(out: &mut String, r: &BenchResult) {
    out.push_str("<h3>Ladders</h3>\n");
    if r.ladders.is_empty() {
        out.push_str("<p class=\"na\">No ladder ran.</p>\n");
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table>\n<tr><th>Ladder</th><th>Backend</th><th>Network</th>\
         <th>Placement</th><th class=\"num\">Steps</th><th class=\"num\">Recommended</th>\
         <th class=\"num\">Maximum</th><th>Stopped because</th></tr>\n",
    );
    for ladder in &r.ladders {
        w!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
            esc(&ladder.label),
            or_na(&ladder.backend),
            ladder.net.as_deref().map_or(NA.into(), esc),
            or_na(&ladder.placement),
            ladder.steps.len(),
            servers(ladder.recommended_servers),
            ladder_max(ladder),
            or_na(&ladder.stopped)
        );
    }
    out.push_str("</table></div>\n");
}

fn steps_table(out: &mut String, r: &BenchResult, li: usize, ladder: &Ladder) {
    w!(
        out,
        "<h4><span style=\"color:{}\">&#9632;</span> {}</h4>\n",
        charts::ladder_color(li),
        esc(&ladder.label)
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
    w!(
        out,
        "<div class=\"scroll\"><table class=\"steps\">\n\
         <tr><th class=\"num\" rowspan=\"2\">Step</th><th class=\"num\" rowspan=\"2\">Servers</th>\
         <th class=\"num\" rowspan=\"2\">Players</th><th rowspan=\"2\">Verdict</th>\
         <th colspan=\"3\" style=\"text-align:center\">Transaction latency, ms</th>\
         <th class=\"num\" rowspan=\"2\">Tick lateness p99, ms</th>\
         <th class=\"num\" rowspan=\"2\">Server frame p99, ms</th>\
         <th class=\"num\" rowspan=\"2\">Snapshots lost</th>\
         <th class=\"num\" rowspan=\"2\">Outages</th>\
         <th class=\"num\" rowspan=\"2\">Reconnects</th>\
         <th class=\"num\" rowspan=\"2\">CPU busy, %</th>\
         <th class=\"num\" rowspan=\"2\">{watts_head}</th><th rowspan=\"2\">Failures</th></tr>\n\
         <tr><th class=\"num\">p50</th><th class=\"num\">p99</th><th class=\"num\">p99.9</th></tr>\n"
    );
    for st in &ladder.steps {
        let fail = is_fail(st);
        let mut verdict = match st.verdict {
            Verdict::Pass => "<span class=\"badge pass\">pass</span>".to_string(),
            Verdict::Fail => "<span class=\"badge fail\">FAIL</span>".to_string(),
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
        let watts = st.power.as_ref().map_or(NA.into(), |p| fmt_num(p.watts));
        w!(
            out,
            "<tr{}><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td>{verdict}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{} ({})</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{watts}</td>\
             <td class=\"failures\">{failures}</td></tr>\n",
            if fail { " class=\"fail\"" } else { "" },
            st.index,
            st.servers,
            st.players,
            fmt_ms(st.transaction_latency_us.p50),
            fmt_ms(st.transaction_latency_us.p99),
            fmt_ms(st.transaction_latency_us.p999),
            fmt_ms(st.tick_lateness_us.p99),
            fmt_ms(st.server_frame_us.p99),
            fmt_int(st.snapshots.lost),
            percent_of(st.snapshots.lost, st.snapshots.expected),
            outages(&st.outages),
            fmt_int(st.reconnects),
            fmt_num(st.cpu.servers_busy_percent),
        );
    }
    out.push_str("</table></div>\n");
}

/// A step's outages: "0", or the count and the longest one.
fn outages(o: &Outages) -> String {
    if o.count == 0 {
        "0".into()
    } else {
        format!("{} (longest {} ms)", fmt_int(o.count), fmt_ms(o.longest_us))
    }
}

fn cost(out: &mut String, r: &BenchResult) {
    out.push_str("<h3>Cost</h3>\n");
    let Some(t) = &r.tco else {
        out.push_str("<p class=\"na\">No cost figures in this result (n/a).</p>\n");
        return;
    };
    let modeled = t.watts_source.contains("model");
    w!(
        out,
        "<p>Watts: <strong>{}</strong>{}</p>\n",
        or_na(&t.watts_source),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_numbers_read_like_a_person_wrote_them() {
        assert_eq!(utc(0), "unknown");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_735_689_599), "2024-12-31 23:59:59 UTC");
        assert_eq!(fmt_int(1_234_567), "1,234,567");
        assert_eq!(fmt_int(123_456), "123,456");
        assert_eq!(fmt_int(0), "0");
        assert_eq!(tiles_of(9, 3), " (3 tiles of 3)");
        assert_eq!(tiles_of(9, 0), "");
        assert_eq!(fmt_num(75.0), "75");
        assert_eq!(fmt_num(0.1), "0.1");
        assert_eq!(fmt_num(f64::NAN), "n/a");
        assert_eq!(fmt_ms(450), "0.450");
        assert_eq!(fmt_ms(12_345), "12.3");
        assert_eq!(fmt_ratio(1.3333), "1.33x");
        assert_eq!(fmt_ratio(24.0), "24x");
        assert_eq!(fmt_quantile(0.999), "99.9");
        assert_eq!(cpu_list(&[5, 0, 1, 2]), "0-2, 5 (4)");
        assert_eq!(cpu_list(&[]), "not pinned");
    }

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
