//! A small inline-SVG line chart, written by hand so the report needs no
//! plotting crate and no network.
//!
//! One [`Chart`] renders to exactly one `<svg>` element: title, axes with
//! "nice" ticks (linear, or logarithmic for latencies spanning decades),
//! one polyline per [`Series`], red markers on failed points, dashed
//! horizontal [`Limit`] lines, and the legend inside the SVG. Tooltips are
//! SVG `<title>` elements, so nothing needs a script.
//!
//! The SVG has no `xmlns` attribute: the HTML parser puts inline `<svg>`
//! in the SVG namespace by itself, and the page stays free of any URL.

use std::fmt::Write as _;

use super::esc;

/// Colour of failed points.
pub(crate) const FAIL_RED: &str = "#d62728";

const WIDTH: f64 = 640.0;
const LEFT: f64 = 66.0;
const RIGHT: f64 = 22.0;
const TOP: f64 = 40.0;
const PLOT_H: f64 = 250.0;
/// Approximate width of one character of 12 px legend text.
const CHAR_W: f64 = 6.6;

/// How the y axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum YScale {
    Linear,
    /// Logarithmic when the values span more than a factor of 30.
    Auto,
}

/// A line chart.
pub(crate) struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub y_scale: YScale,
    /// Fixed y maximum for a linear axis (e.g. 100 for percentages).
    pub y_max: Option<f64>,
    /// Fixed x ticks (position, label); the x range spans them. Default:
    /// linear from 0 with integer-friendly nice ticks.
    pub x_ticks: Option<Vec<(f64, String)>>,
    pub series: Vec<Series>,
    pub limits: Vec<Limit>,
    /// What a red dot marks, in the legend ("failed step"; a tile's
    /// windows: "failed window").
    pub failed_label: &'static str,
}

/// One line of a chart.
pub(crate) struct Series {
    pub name: String,
    pub color: String,
    /// SVG `stroke-dasharray`, `None` for a solid line.
    pub dash: Option<&'static str>,
    pub width: f64,
    pub opacity: f64,
    /// Draw a dot at every point (failed points are always marked).
    pub markers: bool,
    pub points: Vec<Point>,
    /// A shaded band around the line: (x, low, high) per x, e.g. the
    /// range over a comparison's repetitions; empty: none.
    pub band: Vec<(f64, f64, f64)>,
}

/// One data point.
pub(crate) struct Point {
    pub x: f64,
    pub y: f64,
    /// Drawn as a large red dot.
    pub failed: bool,
    /// Tooltip text.
    pub tip: String,
}

/// A dashed horizontal line (a QoS limit or a target).
pub(crate) struct Limit {
    pub y: f64,
    pub label: String,
    pub color: &'static str,
}

impl Series {
    pub(crate) fn new(name: impl Into<String>, color: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            color: color.into(),
            dash: None,
            width: 2.0,
            opacity: 1.0,
            markers: true,
            points: Vec::new(),
            band: Vec::new(),
        }
    }
}

impl Chart {
    pub(crate) fn new(title: impl Into<String>, x_label: &str, y_label: &str) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            y_scale: YScale::Linear,
            y_max: None,
            x_ticks: None,
            series: Vec::new(),
            limits: Vec::new(),
            failed_label: "failed step",
        }
    }

    /// True when no series has a point to draw.
    pub(crate) fn is_empty(&self) -> bool {
        self.points().next().is_none()
    }

    fn points(&self) -> impl Iterator<Item = &Point> {
        self.series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.x.is_finite() && p.y.is_finite())
    }

    /// The chart as one `<svg>` element.
    pub(crate) fn to_svg(&self) -> String {
        let plot_w = WIDTH - LEFT - RIGHT;
        let (x0, x1, xticks) = self.x_axis();
        let y = self.y_axis();
        let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * plot_w;
        let sy = |v: f64| TOP + PLOT_H - y.frac(v) * PLOT_H;

        let legend = self.legend_items();
        let (rows, placed) = layout_legend(&legend, WIDTH - LEFT - RIGHT);
        let legend_top = TOP + PLOT_H + 52.0;
        let height = legend_top + rows as f64 * 18.0 + 6.0;

        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" font-size="12"><title>{t}</title>"#,
            t = esc(&self.title)
        );
        let _ = write!(
            s,
            r#"<text x="{LEFT}" y="22" font-size="15" font-weight="600">{}</text>"#,
            esc(&self.title)
        );
        // Grid and y ticks.
        for (v, label) in &y.ticks {
            let py = sy(*v);
            let _ = write!(
                s,
                r##"<line x1="{LEFT}" x2="{r}" y1="{py:.1}" y2="{py:.1}" stroke="#e3e3e3"/><text x="{lx}" y="{ty:.1}" text-anchor="end" fill="#444">{label}</text>"##,
                r = LEFT + plot_w,
                lx = LEFT - 6.0,
                ty = py + 4.0,
            );
        }
        // x ticks.
        for (v, label) in &xticks {
            let px = sx(*v);
            let _ = write!(
                s,
                r##"<line x1="{px:.1}" x2="{px:.1}" y1="{b}" y2="{b2}" stroke="#444"/><text x="{px:.1}" y="{ty}" text-anchor="middle" fill="#444">{label}</text>"##,
                b = TOP + PLOT_H,
                b2 = TOP + PLOT_H + 5.0,
                ty = TOP + PLOT_H + 18.0,
                label = esc(label),
            );
        }
        // Axes.
        let _ = write!(
            s,
            r##"<path d="M{LEFT} {TOP}V{b}H{r}" fill="none" stroke="#444"/>"##,
            b = TOP + PLOT_H,
            r = LEFT + plot_w
        );
        let _ = write!(
            s,
            r##"<text x="{cx}" y="{ty}" text-anchor="middle" fill="#222">{}</text>"##,
            esc(&self.x_label),
            cx = LEFT + plot_w / 2.0,
            ty = TOP + PLOT_H + 38.0,
        );
        let y_label = if y.log {
            format!("{} (log scale)", self.y_label)
        } else {
            self.y_label.clone()
        };
        let _ = write!(
            s,
            r##"<text transform="translate(16 {cy}) rotate(-90)" text-anchor="middle" fill="#222">{}</text>"##,
            esc(&y_label),
            cy = TOP + PLOT_H / 2.0,
        );
        // Limits.
        for l in &self.limits {
            if !l.y.is_finite() {
                continue;
            }
            let py = sy(l.y);
            let _ = write!(
                s,
                r##"<line class="limit" x1="{LEFT}" x2="{r}" y1="{py:.1}" y2="{py:.1}" stroke="{c}" stroke-width="1.5" stroke-dasharray="7 5"/><text x="{tx}" y="{ty:.1}" fill="{c}" stroke="#fff" stroke-width="3" paint-order="stroke">{}</text>"##,
                esc(&l.label),
                r = LEFT + plot_w,
                c = l.color,
                tx = LEFT + 6.0,
                ty = py - 5.0,
            );
        }
        // Bands under the lines.
        for se in &self.series {
            let band: Vec<&(f64, f64, f64)> = se
                .band
                .iter()
                .filter(|(x, lo, hi)| x.is_finite() && lo.is_finite() && hi.is_finite())
                .collect();
            if band.len() >= 2 {
                let mut d = String::new();
                for (i, (x, _, hi)) in band.iter().enumerate() {
                    let _ = write!(
                        d,
                        "{}{:.1} {:.1}",
                        if i == 0 { "M" } else { "L" },
                        sx(*x),
                        sy(*hi)
                    );
                }
                for (x, lo, _) in band.iter().rev() {
                    let _ = write!(d, "L{:.1} {:.1}", sx(*x), sy(*lo));
                }
                let _ = write!(
                    s,
                    r#"<path class="band" d="{d}Z" fill="{c}" fill-opacity="0.15" stroke="none"/>"#,
                    c = esc(&se.color),
                );
            }
        }
        // Series lines, then markers on top.
        for se in &self.series {
            let pts: Vec<(f64, f64)> = se
                .points
                .iter()
                .filter(|p| p.x.is_finite() && p.y.is_finite())
                .map(|p| (sx(p.x), sy(p.y)))
                .collect();
            if pts.len() >= 2 {
                let mut d = String::new();
                for (i, (px, py)) in pts.iter().enumerate() {
                    let _ = write!(d, "{}{px:.1} {py:.1}", if i == 0 { "M" } else { "L" });
                }
                let _ = write!(
                    s,
                    r#"<path d="{d}" fill="none" stroke="{c}" stroke-width="{w}" stroke-opacity="{o}" stroke-linejoin="round"{dash}/>"#,
                    c = esc(&se.color),
                    w = se.width,
                    o = se.opacity,
                    dash = se
                        .dash
                        .map(|d| format!(r#" stroke-dasharray="{d}""#))
                        .unwrap_or_default(),
                );
            }
        }
        for se in &self.series {
            for p in se
                .points
                .iter()
                .filter(|p| p.x.is_finite() && p.y.is_finite())
            {
                let (px, py) = (sx(p.x), sy(p.y));
                if p.failed {
                    let _ = write!(
                        s,
                        r##"<circle class="failed-point" cx="{px:.1}" cy="{py:.1}" r="5" fill="{FAIL_RED}" stroke="#fff" stroke-width="1.5"><title>{}</title></circle>"##,
                        esc(&p.tip)
                    );
                } else if se.markers {
                    let _ = write!(
                        s,
                        r#"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="{}" fill-opacity="{o}"><title>{}</title></circle>"#,
                        esc(&se.color),
                        esc(&p.tip),
                        o = se.opacity,
                    );
                }
            }
        }
        // Legend.
        for (item, (row, lx)) in legend.iter().zip(placed) {
            let ly = legend_top + row as f64 * 18.0;
            match item {
                LegendItem::Line {
                    name,
                    color,
                    dash,
                    width,
                    opacity,
                } => {
                    let _ = write!(
                        s,
                        r#"<line x1="{lx:.1}" x2="{x2:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="{width}" stroke-opacity="{opacity}"{dash}/>"#,
                        x2 = lx + 22.0,
                        c = esc(color),
                        dash = dash
                            .map(|d| format!(r#" stroke-dasharray="{d}""#))
                            .unwrap_or_default(),
                    );
                    let _ = write!(
                        s,
                        r##"<text x="{tx:.1}" y="{ty:.1}" fill="#222">{}</text>"##,
                        esc(name),
                        tx = lx + 27.0,
                        ty = ly + 4.0,
                    );
                }
                LegendItem::Failed(label) => {
                    let _ = write!(
                        s,
                        r##"<circle cx="{cx:.1}" cy="{ly:.1}" r="5" fill="{FAIL_RED}"/><text x="{tx:.1}" y="{ty:.1}" fill="#222">{label}</text>"##,
                        cx = lx + 11.0,
                        tx = lx + 27.0,
                        ty = ly + 4.0,
                    );
                }
            }
        }
        s.push_str("</svg>");
        s
    }

    fn x_axis(&self) -> (f64, f64, Vec<(f64, String)>) {
        if let Some(t) = self.x_ticks.as_ref().filter(|t| t.len() >= 2) {
            let lo = t.iter().map(|(v, _)| *v).fold(f64::INFINITY, f64::min);
            let hi = t.iter().map(|(v, _)| *v).fold(f64::NEG_INFINITY, f64::max);
            if hi > lo {
                return (lo, hi, t.clone());
            }
        }
        let hi = self.points().map(|p| p.x).fold(0.0, f64::max);
        let (lo, hi, step) = linear_ticks(0.0, hi.max(1.0), 8, 1.0);
        let ticks = tick_values(lo, hi, step)
            .into_iter()
            .map(|v| (v, fmt_tick(v, step)))
            .collect();
        (lo, hi, ticks)
    }

    fn y_axis(&self) -> YAxis {
        let values: Vec<f64> = self
            .points()
            .map(|p| p.y)
            .chain(self.limits.iter().map(|l| l.y).filter(|v| v.is_finite()))
            .chain(
                self.series
                    .iter()
                    .flat_map(|s| s.band.iter().flat_map(|b| [b.1, b.2]))
                    .filter(|v| v.is_finite()),
            )
            .collect();
        let max = values.iter().copied().fold(0.0, f64::max);
        let min_pos = values
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let log = self.y_scale == YScale::Auto && min_pos.is_finite() && max / min_pos > 30.0;
        if log {
            let (lo, hi) = log_bounds(min_pos, max);
            YAxis {
                log: true,
                lo,
                hi,
                ticks: log_ticks(lo, hi),
            }
        } else {
            let top = self.y_max.map_or(max * 1.08, |m| m.max(max));
            let top = if top > 0.0 && top.is_finite() {
                top
            } else {
                1.0
            };
            let (lo, hi, step) = linear_ticks(0.0, top, 6, 0.0);
            let ticks = tick_values(lo, hi, step)
                .into_iter()
                .map(|v| (v, fmt_tick(v, step)))
                .collect();
            YAxis {
                log: false,
                lo,
                hi,
                ticks,
            }
        }
    }

    fn legend_items(&self) -> Vec<LegendItem> {
        let mut items: Vec<LegendItem> = self
            .series
            .iter()
            .filter(|s| !s.name.is_empty())
            .map(|s| LegendItem::Line {
                name: s.name.clone(),
                color: s.color.clone(),
                dash: s.dash,
                width: s.width,
                opacity: s.opacity,
            })
            .collect();
        if self.points().any(|p| p.failed) {
            items.push(LegendItem::Failed(self.failed_label));
        }
        items
    }
}

struct YAxis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl YAxis {
    /// Position of `v` on the axis, 0 (bottom) to 1 (top), clamped.
    fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            let v = v.max(self.lo);
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        f.clamp(0.0, 1.0)
    }
}

enum LegendItem {
    Line {
        name: String,
        color: String,
        dash: Option<&'static str>,
        width: f64,
        opacity: f64,
    },
    Failed(&'static str),
}

impl LegendItem {
    fn width(&self) -> f64 {
        let chars = match self {
            LegendItem::Line { name, .. } => name.chars().count(),
            LegendItem::Failed(label) => label.chars().count(),
        };
        27.0 + chars as f64 * CHAR_W + 18.0
    }
}

/// Places legend items left to right, wrapping at `width`: returns the
/// number of rows and each item's (row, x).
fn layout_legend(items: &[LegendItem], width: f64) -> (usize, Vec<(usize, f64)>) {
    let mut placed = Vec::with_capacity(items.len());
    let (mut row, mut x) = (0usize, 0.0f64);
    for item in items {
        let w = item.width();
        if x > 0.0 && x + w > width {
            row += 1;
            x = 0.0;
        }
        placed.push((row, LEFT + x));
        x += w;
    }
    let rows = if items.is_empty() { 0 } else { row + 1 };
    (rows, placed)
}

/// A nice axis covering `lo..=hi` with about `target` ticks, steps of 1, 2
/// or 5 times a power of ten, at least `min_step`: (lo, hi, step).
pub fn linear_ticks(lo: f64, hi: f64, target: usize, min_step: f64) -> (f64, f64, f64) {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    let step = (nice * mag).max(min_step);
    let lo = (lo / step).floor() * step;
    let hi = ((hi / step).ceil() * step).max(lo + step);
    (lo, hi, step)
}

/// Bounds of a log axis: the nearest 1, 2 or 5 times a power of ten below
/// `min` and above `max`.
fn log_bounds(min: f64, max: f64) -> (f64, f64) {
    let e = min.log10().floor() as i32;
    let p = 10f64.powi(e);
    let lo = [5.0, 2.0, 1.0]
        .iter()
        .map(|m| m * p)
        .find(|v| *v <= min * (1.0 + 1e-9))
        .unwrap_or(p);
    let e = max.log10().floor() as i32;
    let p = 10f64.powi(e);
    let hi = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|v| *v >= max * (1.0 - 1e-9) && *v > lo)
        .unwrap_or(p * 10.0);
    (lo, hi)
}

/// Ticks at 1, 2 and 5 times powers of ten within `lo..=hi`; only the
/// powers of ten (and the ends) when the axis spans more than 3 decades.
fn log_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let dense = (hi / lo).log10() <= 3.0;
    let mut v = Vec::new();
    for e in (lo.log10().floor() as i32)..=(hi.log10().ceil() as i32) {
        let mults: &[f64] = if dense { &[1.0, 2.0, 5.0] } else { &[1.0] };
        for m in mults {
            let t = m * 10f64.powi(e);
            if t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9) {
                v.push(t);
            }
        }
    }
    for end in [lo, hi] {
        if !v.iter().any(|t| (t / end - 1.0).abs() < 1e-6) {
            v.push(end);
        }
    }
    v.sort_by(f64::total_cmp);
    v.into_iter().map(|t| (t, fmt_log_tick(t))).collect()
}

fn tick_values(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let n = ((hi - lo) / step).round() as usize;
    (0..=n).map(|i| lo + i as f64 * step).collect()
}

fn fmt_tick(v: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

fn fmt_log_tick(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let decimals = (-v.log10()).ceil().max(0.0) as usize;
        format!("{v:.decimals$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers() {
        let (lo, hi, step) = linear_ticks(0.0, 37.0, 8, 1.0);
        assert_eq!((lo, hi, step), (0.0, 40.0, 5.0));
        let v = tick_values(lo, hi, step);
        assert_eq!(v.len(), 9);
        assert_eq!(fmt_tick(0.5, 0.5), "0.5");
        assert_eq!(fmt_tick(40.0, 5.0), "40");
        assert_eq!(fmt_log_tick(0.05), "0.05");
        assert_eq!(fmt_log_tick(200.0), "200");
        assert_eq!(log_bounds(4.2, 241.0), (2.0, 500.0));
        assert_eq!(log_bounds(0.5, 0.5 * 40.0), (0.5, 20.0));
        let t: Vec<String> = log_ticks(2.0, 500.0).into_iter().map(|(_, l)| l).collect();
        assert_eq!(t, ["2", "5", "10", "20", "50", "100", "200", "500"]);
        let t: Vec<String> = log_ticks(0.2, 5000.0).into_iter().map(|(_, l)| l).collect();
        assert_eq!(t, ["0.2", "1", "10", "100", "1000", "5000"]);
    }

    #[test]
    fn wide_latencies_get_a_log_axis_and_narrow_ones_do_not() {
        let mut c = Chart::new("t", "x", "ms");
        c.y_scale = YScale::Auto;
        let mut s = Series::new("a", "#000");
        s.points = [(1.0, 0.5), (2.0, 400.0)]
            .iter()
            .map(|&(x, y)| Point {
                x,
                y,
                failed: false,
                tip: String::new(),
            })
            .collect();
        c.series.push(s);
        assert!(c.to_svg().contains("(log scale)"));
        c.series[0].points[1].y = 2.0;
        assert!(!c.to_svg().contains("(log scale)"));
    }

    #[test]
    fn one_chart_is_one_svg_without_urls() {
        let mut c = Chart::new("a <b>", "x", "y");
        let mut s = Series::new("s & t", "#123456");
        s.points.push(Point {
            x: 1.0,
            y: 2.0,
            failed: true,
            tip: "fail".into(),
        });
        c.series.push(s);
        let svg = c.to_svg();
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(!svg.contains("http"));
        assert!(svg.contains("a &lt;b&gt;") && svg.contains("s &amp; t"));
        assert!(svg.contains("failed step"));
    }
}
