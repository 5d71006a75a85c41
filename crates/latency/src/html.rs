//! The HTML report: one self-contained page (inline CSS and SVG, no script,
//! no URL) with, per mode, a grouped bar chart like the case study's
//! figure (a group per size, a bar per path, the bar at the p50, a whisker
//! from the lowest to the highest round p50, the overhead against native
//! above each bar, in parentheses and grey when it rests on fewer than
//! [`MIN_ROUNDS_FOR_RATIO`] rounds: not a finding), then the full table.

use std::fmt::Write as _;

use crate::result::{LatencyResult, Row, MIN_ROUNDS_FOR_RATIO};
use crate::settings::{Mode, PathName};

const WIDTH: f64 = 720.0;
const LEFT: f64 = 62.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 44.0;
const PLOT_H: f64 = 260.0;

pub use tickpack_report::html::esc;

/// The colour of a path's bars.
fn color(p: PathName) -> &'static str {
    match p.as_str() {
        "native" => "#7f7f7f",
        "veth" => "#1f77b4",
        "bridge" => "#d62728",
        "macvlan" => "#2ca02c",
        _ => "#9467bd",
    }
}

/// A nice linear axis from 0 to at least `max`: (top, step).
fn axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let (_, top, step) = tickpack_report::html::linear_ticks(0.0, max, 5, 0.0);
    (top, step)
}

fn fmt_tick(v: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

/// One grouped bar chart for `mode`, or `None` without rows.
pub fn chart(doc: &LatencyResult, mode: Mode) -> Option<String> {
    let rows: Vec<&Row> = doc.results.iter().filter(|r| r.mode == mode).collect();
    if rows.is_empty() {
        return None;
    }
    let sizes: Vec<_> = doc
        .settings
        .sizes
        .iter()
        .filter(|s| rows.iter().any(|r| r.size == **s))
        .copied()
        .collect();
    let paths: Vec<PathName> = doc
        .settings
        .paths
        .iter()
        .filter(|p| rows.iter().any(|r| r.path == **p))
        .copied()
        .collect();
    let max = rows
        .iter()
        .map(|r| r.p50_max_us.max(r.p50_us))
        .fold(0.0, f64::max);
    let (top, step) = axis(max * 1.12);
    let plot_w = WIDTH - LEFT - RIGHT;
    let sy = |v: f64| TOP + PLOT_H - (v / top).clamp(0.0, 1.0) * PLOT_H;
    let group_w = plot_w / sizes.len() as f64;
    let bar_w = group_w * 0.8 / paths.len() as f64;
    let legend_y = TOP + PLOT_H + 48.0;
    let height = legend_y + 16.0;
    let title = format!(
        "{} mode: round-trip p50 by size and path (us)",
        mode.as_str()
    );

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" font-size="12"><title>{t}</title><text x="{LEFT}" y="24" font-size="15" font-weight="600">{t}</text>"#,
        t = esc(&title)
    );
    let mut v = 0.0;
    while v <= top * (1.0 + 1e-9) {
        let y = sy(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" x2="{r}" y1="{y:.1}" y2="{y:.1}" stroke="#e3e3e3"/><text x="{lx}" y="{ty:.1}" text-anchor="end" fill="#444">{l}</text>"##,
            r = LEFT + plot_w,
            lx = LEFT - 6.0,
            ty = y + 4.0,
            l = fmt_tick(v, step)
        );
        v += step;
    }
    let _ = write!(
        s,
        r##"<path d="M{LEFT} {TOP}V{b}H{r}" fill="none" stroke="#444"/><text transform="translate(16 {cy}) rotate(-90)" text-anchor="middle" fill="#222">p50 round trip (us)</text>"##,
        b = TOP + PLOT_H,
        r = LEFT + plot_w,
        cy = TOP + PLOT_H / 2.0
    );
    for (gi, size) in sizes.iter().enumerate() {
        let gx = LEFT + gi as f64 * group_w + group_w * 0.1;
        let label = match size {
            crate::settings::SizeSpec::Bytes(n) => format!("{n} B"),
            crate::settings::SizeSpec::Game => "game (40-200 B / 2000 B)".into(),
        };
        let _ = write!(
            s,
            r##"<text x="{x:.1}" y="{y}" text-anchor="middle" fill="#222">{l}</text>"##,
            x = LEFT + (gi as f64 + 0.5) * group_w,
            y = TOP + PLOT_H + 18.0,
            l = esc(&label)
        );
        for (pi, path) in paths.iter().enumerate() {
            let Some(r) = rows.iter().find(|r| r.size == *size && r.path == *path) else {
                continue;
            };
            let x = gx + pi as f64 * bar_w;
            let y = sy(r.p50_us);
            let tip = format!(
                "{} {} {}: p50 {:.1} us (rounds {:.1}-{:.1}), p99 {:.1} us, p99.9 {:.1} us{}",
                r.path,
                r.size.label(),
                r.mode,
                r.p50_us,
                r.p50_min_us,
                r.p50_max_us,
                r.p99_us,
                r.p999_us,
                match r.overhead_vs_native {
                    None => String::new(),
                    Some(o) if doc.ratio_is_finding(r) => format!(", {o:.2}x native"),
                    Some(o) => format!(
                        ", {o:.2}x native from fewer than {MIN_ROUNDS_FOR_RATIO} rounds: not a finding"
                    ),
                }
            );
            let _ = write!(
                s,
                r#"<rect class="bar" data-path="{p}" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"><title>{t}</title></rect>"#,
                p = r.path,
                w = (bar_w - 2.0).max(1.0),
                h = TOP + PLOT_H - y,
                c = color(r.path),
                t = esc(&tip)
            );
            let cx = x + (bar_w - 2.0).max(1.0) / 2.0;
            let (y0, y1) = (sy(r.p50_min_us), sy(r.p50_max_us));
            let _ = write!(
                s,
                r##"<path d="M{cx:.1} {y0:.1}V{y1:.1}M{a:.1} {y0:.1}H{b:.1}M{a:.1} {y1:.1}H{b:.1}" stroke="#222" fill="none"/>"##,
                a = cx - 3.0,
                b = cx + 3.0
            );
            if let Some(o) = r.overhead_vs_native {
                // Too few rounds: in parentheses and grey, not a finding.
                let (label, fill) = if doc.ratio_is_finding(r) {
                    (format!("{o:.2}x"), "#222")
                } else {
                    (format!("({o:.2}x)"), "#888")
                };
                let _ = write!(
                    s,
                    r##"<text class="ratio" x="{cx:.1}" y="{ty:.1}" text-anchor="middle" font-size="10" fill="{fill}">{label}</text>"##,
                    ty = y1.min(y) - 4.0
                );
            }
        }
    }
    let mut lx = LEFT;
    for p in &paths {
        let _ = write!(
            s,
            r##"<rect x="{lx:.1}" y="{ry:.1}" width="12" height="12" fill="{c}"/><text x="{tx:.1}" y="{ty:.1}" fill="#222">{p}</text>"##,
            ry = legend_y - 10.0,
            c = color(*p),
            tx = lx + 16.0,
            ty = legend_y
        );
        lx += 30.0 + p.as_str().len() as f64 * 7.0;
    }
    let rows_have_few_rounds = rows
        .iter()
        .any(|r| r.overhead_vs_native.is_some() && !doc.ratio_is_finding(r));
    let _ = write!(
        s,
        r##"<text x="{lx:.1}" y="{legend_y}" fill="#444">whiskers: lowest to highest round p50; labels: p50 / native p50{few}</text>"##,
        few = if rows_have_few_rounds {
            "; (in parentheses): too few rounds"
        } else {
            ""
        }
    );
    s.push_str("</svg>");
    Some(s)
}

/// The whole page.
pub fn render(doc: &LatencyResult) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>tickpack latency</title><style>");
    h.push_str("body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:60em}table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}td:nth-child(-n+3),th:nth-child(-n+3){text-align:left}.note{color:#555;font-size:13px}");
    h.push_str("</style></head><body>");
    h.push_str("<h1>What each isolation path adds to a round trip</h1>");
    let s = &doc.settings;
    let _ = write!(
        h,
        "<p>UDP request/response, closed loop per stream: {} stream(s), {} round(s) of {:.0} ms per measurement (after {:.0} ms warm-up), paths and sizes in rotated order.{}</p>",
        s.streams,
        s.rounds,
        s.duration_ms,
        s.warmup_ms,
        if doc.complete {
            ""
        } else {
            " <strong>Incomplete run</strong>: interrupted; the rounds finished are shown."
        }
    );
    let sy = &doc.system;
    let load = |l: &Option<crate::result::LoadAvg>| {
        l.as_ref()
            .map_or("-".to_string(), |l| format!("{:.2}", l.load1))
    };
    let _ = write!(
        h,
        "<p class=\"note\">{} ({} CPUs), Linux {}, tickpack {}. Load (1 min) before {}, after {}.<br>Blocking: {}.<br>Busy: {}.</p>",
        esc(&sy.cpu_model),
        sy.logical_cpus,
        esc(&sy.kernel),
        esc(&doc.tickpack_version),
        load(&doc.load.before),
        load(&doc.load.after),
        esc(&doc.cores.blocking),
        esc(&doc.cores.busy),
    );
    for mode in &s.modes {
        if let Some(c) = chart(doc, *mode) {
            h.push_str("<figure>");
            h.push_str(&c);
            h.push_str("</figure>");
        }
    }
    h.push_str("<h2>All figures (us)</h2><table><tr><th>mode</th><th>size</th><th>path</th><th>p50</th><th>p99</th><th>p99.9</th><th>p50 min</th><th>p50 max</th><th>x native</th><th>rounds</th><th>round trips/s</th><th>lost</th></tr>");
    for mode in &s.modes {
        for size in &s.sizes {
            for r in doc
                .results
                .iter()
                .filter(|r| r.mode == *mode && r.size == *size)
            {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td></tr>",
                    r.mode,
                    esc(&r.size.label()),
                    r.path,
                    r.p50_us,
                    r.p99_us,
                    r.p999_us,
                    r.p50_min_us,
                    r.p50_max_us,
                    doc.ratio_words(r),
                    r.rounds,
                    r.round_trips_per_s,
                    r.lost
                );
            }
        }
    }
    h.push_str("</table>");
    if let Some(note) = doc.few_rounds_note() {
        let _ = write!(h, "<p class=\"note few-rounds\">{}.</p>", esc(&note));
    }
    if !doc.unavailable.is_empty() {
        h.push_str("<h2>Unavailable paths</h2><ul>");
        for u in &doc.unavailable {
            let _ = write!(h, "<li><b>{}</b>: {}</li>", u.path, esc(&u.reason));
        }
        h.push_str("</ul>");
    }
    h.push_str("<h2>Paths</h2><ul>");
    for p in &doc.paths {
        let _ = write!(
            h,
            "<li><b>{}</b>: echo servers at {}; via {}{}</li>",
            p.path,
            esc(&p.echo_addresses.join(", ")),
            esc(&p.devices.join(", ")),
            p.parent
                .as_ref()
                .map_or(String::new(), |x| format!(" (parent link: {})", esc(x)))
        );
    }
    h.push_str("</ul></body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{AllRounds, Cores, Load, SettingsDoc, LATENCY_SCHEMA};
    use crate::settings::{Settings, SizeSpec};
    use tickpack_host::netpath::NetKind;

    fn row(path: PathName, size: SizeSpec, mode: Mode, p50: f64) -> Row {
        Row {
            path,
            size,
            mode,
            p50_us: p50,
            p99_us: p50 * 2.0,
            p999_us: p50 * 3.0,
            p50_min_us: p50 * 0.9,
            p50_max_us: p50 * 1.1,
            overhead_vs_native: Some(p50 / 10.0),
            rounds: 1,
            round_p50_us: vec![p50],
            round_p99_us: vec![p50 * 2.0],
            all_rounds: AllRounds {
                p50_us: p50,
                p99_us: p50,
                p999_us: p50,
                max_us: p50,
                mean_us: p50,
                count: 1,
            },
            sent: 1,
            lost: 0,
            stale: 0,
            round_trips_per_s: 1.0,
            histogram_ns: String::new(),
        }
    }

    fn doc() -> LatencyResult {
        let s = Settings {
            sizes: vec![SizeSpec::Bytes(64), SizeSpec::Game],
            ..Settings::default()
        };
        let bridge = PathName::Net(NetKind::Bridge);
        LatencyResult {
            schema: LATENCY_SCHEMA.into(),
            tickpack_version: "0".into(),
            complete: true,
            system: Default::default(),
            settings: SettingsDoc::new(&s),
            cores: Cores::new(&s),
            load: Load::default(),
            paths: vec![],
            unavailable: vec![crate::paths::Unavailable {
                path: PathName::Net(NetKind::Ipvlan),
                reason: "no <ipvlan> here".into(),
            }],
            results: vec![
                row(PathName::Native, SizeSpec::Bytes(64), Mode::Blocking, 10.0),
                row(bridge, SizeSpec::Bytes(64), Mode::Blocking, 20.0),
                row(PathName::Native, SizeSpec::Game, Mode::Blocking, 12.0),
                row(bridge, SizeSpec::Game, Mode::Blocking, 25.0),
                row(PathName::Native, SizeSpec::Bytes(64), Mode::Busy, 5.0),
            ],
        }
    }

    #[test]
    fn one_chart_per_mode_with_a_bar_per_row_and_no_urls() {
        let page = render(&doc());
        assert_eq!(page.matches("<svg").count(), 2);
        assert_eq!(page.matches("<rect class=\"bar\"").count(), 5);
        assert!(page.contains("2.00x"), "bridge's overhead label");
        assert!(page.contains("no &lt;ipvlan&gt; here"));
        assert!(!page.contains("http") && !page.contains("<script"));
        assert!(page.contains("game (40-200 B / 2000 B)"));
    }

    /// A bug: `latency --quick` showed one-round ratios ("0.56x" native) as
    /// findings. Below three rounds they are in parentheses, and the page
    /// and the table say why.
    #[test]
    fn a_one_round_ratio_is_marked_not_a_finding() {
        let one = doc();
        let page = render(&one);
        assert!(page.contains(">(2.00x)</text>"), "the bar's label");
        assert!(page.contains("<td>(2.00)</td>"), "the table's");
        assert!(page.contains("class=\"note few-rounds\""), "{page}");
        assert!(page.contains("not a finding"));
        let table = one.table();
        assert!(
            table.contains("(2.00)") && table.contains("not a finding"),
            "{table}"
        );
        let mut five = doc();
        for r in &mut five.results {
            r.rounds = 5;
        }
        let page = render(&five);
        assert!(page.contains(">2.00x</text>") && !page.contains("(2.00x)"));
        assert!(!page.contains("few-rounds") && !page.contains("too few rounds"));
        assert!(!five.table().contains("not a finding"));
    }

    #[test]
    fn axes_are_round() {
        assert_eq!(axis(37.0), (40.0, 10.0));
        assert_eq!(axis(0.0), (1.0, 0.2));
        assert_eq!(fmt_tick(0.4, 0.2), "0.4");
    }
}
