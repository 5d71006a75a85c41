//! How fast the measured machine was while it measured: a fixed
//! calibration run on every server core before the first ladder, between
//! repetitions and after the last ([`MachineSpeed`]), with the CPU's
//! reported frequency and the steal it saw.
//!
//! The same binary and command gave 3 servers per server core one day and
//! 9 the next on the same kind of virtual machine: the hypervisor's other
//! guests change how fast a core is. A density means little without the
//! speed of the core that reached it, so every bench records one, the
//! headline says it, and `tickpack report --compare` uses it to say how
//! much of a difference between two results the machines explain
//! ([`attribute`]).
//!
//! The calibration is the reference server's own tick (its world with
//! bots, no sockets, a virtual clock) run a fixed number of times on one
//! core: the same work every time, so its time per tick is the core's
//! speed at that moment, in the unit the servers spend.

use serde::{Deserialize, Serialize};

/// A calibration drifting more than this share (percent of its fastest)
/// over one run marks the run's machine unstable.
pub const DRIFT_LIMIT_PERCENT: f64 = 10.0;

/// One calibration of one core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// When in the run: "before the first ladder", "after repetition 1",
    /// "after the last ladder".
    pub when: String,
    pub cpu: usize,
    /// The median wall time of one calibration tick, microseconds.
    pub tick_us: f64,
    /// Its 10th and 90th percentiles.
    pub tick_p10_us: f64,
    pub tick_p90_us: f64,
    pub ticks: u32,
    /// The core's steal over the calibration, percent.
    pub steal_percent: f64,
    /// The core's frequency the kernel reported after it, MHz (`None`:
    /// not reported, as on many virtual machines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mhz: Option<f64>,
    /// A load generator's core, not a server core: the players' speed,
    /// not the servers'.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub load_generator: bool,
    /// CPU time other work took on the core during the calibration, percent
    /// of its wall time (`None`: written before tickpack measured it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_percent: Option<f64>,
}

/// Every calibration of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MachineSpeed {
    /// What the calibration ran ("the reference server's tick, 24 bots,
    /// cost default, 300 ticks").
    pub workload: String,
    pub calibrations: Vec<Calibration>,
}

impl MachineSpeed {
    /// The server cores' calibration ticks, sorted.
    fn ticks(&self) -> Vec<f64> {
        self.ticks_of(false)
    }

    fn ticks_of(&self, load_generator: bool) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .calibrations
            .iter()
            .filter(|c| c.load_generator == load_generator)
            .map(|c| c.tick_us)
            .filter(|t| t.is_finite() && *t > 0.0)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The median server core calibration tick over the run, microseconds.
    pub fn median_tick_us(&self) -> Option<f64> {
        lower_median(&self.ticks())
    }

    /// The median calibration tick of the load generator's cores.
    pub fn load_generator_tick_us(&self) -> Option<f64> {
        lower_median(&self.ticks_of(true))
    }

    /// The most CPU time other work took on a load generator's core
    /// during its calibrations, percent.
    pub fn load_generator_foreign_percent(&self) -> Option<f64> {
        self.calibrations
            .iter()
            .filter(|c| c.load_generator)
            .filter_map(|c| c.foreign_percent)
            .reduce(f64::max)
    }

    /// The fastest and slowest server core calibration tick.
    pub fn range_us(&self) -> Option<(f64, f64)> {
        let v = self.ticks();
        Some((*v.first()?, *v.last()?))
    }

    /// How far the slowest calibration was from the fastest, percent of
    /// the fastest.
    pub fn drift_percent(&self) -> Option<f64> {
        let (lo, hi) = self.range_us()?;
        Some((hi - lo) / lo * 100.0)
    }

    /// The run's machine changed speed more than [`DRIFT_LIMIT_PERCENT`].
    pub fn unstable(&self) -> bool {
        self.drift_percent()
            .is_some_and(|d| d > DRIFT_LIMIT_PERCENT)
    }

    /// "the server core ran the calibration tick in 410 µs, 395-430 over
    /// the run (4 calibrations)", and a warning when it drifted.
    pub fn words(&self) -> Option<String> {
        let median = self.median_tick_us()?;
        let (lo, hi) = self.range_us()?;
        let n = self
            .calibrations
            .iter()
            .filter(|c| !c.load_generator)
            .count();
        let mut s = format!(
            "machine speed: the server cores ran the calibration tick in {median:.0} µs, {lo:.0}-{hi:.0} over the run ({n} calibration{})",
            if n == 1 { "" } else { "s" }
        );
        let load = self.ticks_of(true);
        if let (Some(m), Some(l), Some(h)) = (lower_median(&load), load.first(), load.last()) {
            s.push_str(&format!(
                "; the load generator's cores in {m:.0} µs, {l:.0}-{h:.0}"
            ));
            if let Some(f) = self.load_generator_foreign_percent() {
                s.push_str(&format!(" (other work took up to {f:.0} % of them)"));
            }
        }
        if self.unstable() {
            s.push_str(&format!(
                "; UNSTABLE MACHINE: its speed drifted {:.0} % (more than {DRIFT_LIMIT_PERCENT:.0} %) during the run, so its densities mix a faster and a slower machine",
                self.drift_percent().unwrap_or(0.0)
            ));
        }
        Some(s)
    }
}

/// The lower median of sorted `v`.
fn lower_median(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v[(v.len() - 1) / 2])
}

/// How much of the difference between two results their machines explain.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribution {
    /// B's density over A's.
    pub density_ratio: f64,
    /// A's calibration tick over B's: above 1, B's machine was faster.
    pub speed_ratio: f64,
    /// The density ratio once the speed ratio is divided out.
    pub adjusted_ratio: f64,
    /// The machines' speeds differ at least as much as the densities do:
    /// neither result can be called faster.
    pub machines_explain_it: bool,
}

/// Attributes B's density against A's, given each run's density and
/// calibration tick; `None` when either is missing.
pub fn attribute(
    a_density: f64,
    a_tick_us: f64,
    b_density: f64,
    b_tick_us: f64,
) -> Option<Attribution> {
    if !(a_density > 0.0 && b_density > 0.0 && a_tick_us > 0.0 && b_tick_us > 0.0) {
        return None;
    }
    let density_ratio = b_density / a_density;
    let speed_ratio = a_tick_us / b_tick_us;
    let adjusted_ratio = density_ratio / speed_ratio;
    let density_change = (density_ratio.ln()).abs();
    let speed_change = (speed_ratio.ln()).abs();
    Some(Attribution {
        density_ratio,
        speed_ratio,
        adjusted_ratio,
        machines_explain_it: speed_change >= density_change,
    })
}

impl Attribution {
    /// The verdict in words.
    pub fn words(&self, a: &str, b: &str) -> String {
        let speed = if (self.speed_ratio - 1.0).abs() < 0.005 {
            "the machines ran the calibration at the same speed".to_string()
        } else if self.speed_ratio > 1.0 {
            format!(
                "{b}'s machine was {:.2}x as fast as {a}'s",
                self.speed_ratio
            )
        } else {
            format!(
                "{a}'s machine was {:.2}x as fast as {b}'s",
                1.0 / self.speed_ratio
            )
        };
        if self.machines_explain_it {
            format!(
                "{b} reached {:.2}x the density of {a}; {speed}, which explains at least that much: \
                 neither is faster, the machines differ (compare interleaved on one machine: --compare)",
                self.density_ratio
            )
        } else {
            format!(
                "{b} reached {:.2}x the density of {a}; {speed}; with that divided out, {:.2}x remains \
                 that the machines do not explain",
                self.density_ratio, self.adjusted_ratio
            )
        }
    }
}

/// Two bench results side by side (`tickpack report --compare A B`): each
/// one's density, its machine and its calibration, then how much of the
/// difference the calibrations explain. One line each.
pub fn compare_results(
    a_label: &str,
    a: &crate::bench::BenchResult,
    b_label: &str,
    b: &crate::bench::BenchResult,
) -> Vec<String> {
    let density = |r: &crate::bench::BenchResult| {
        r.servers_per_core_spread
            .as_ref()
            .map(|s| s.median)
            .or(r.servers_per_core)
    };
    let side = |label: &str, r: &crate::bench::BenchResult| {
        let d = match (density(r), crate::headline::Headline::of(r)) {
            (Some(_), Some(h)) => h.answer_words(),
            (Some(d), None) => format!("{d:.2} servers per server core"),
            _ => "no density".to_string(),
        };
        let speed = r
            .machine_speed
            .as_ref()
            .and_then(MachineSpeed::words)
            .unwrap_or_else(|| "no calibration (written before tickpack recorded one)".into());
        format!(
            "{label}: {d}, game {}; {} ({} logical CPUs, kernel {}); {speed}",
            r.settings.game, r.system.cpu_model, r.system.logical_cpus, r.system.kernel
        )
    };
    let mut lines = vec![side(a_label, a), side(b_label, b)];
    let tick = |r: &crate::bench::BenchResult| r.machine_speed.as_ref()?.median_tick_us();
    match (density(a), tick(a), density(b), tick(b)) {
        (Some(da), Some(ta), Some(db), Some(tb)) => match attribute(da, ta, db, tb) {
            Some(at) => lines.push(at.words(a_label, b_label)),
            None => lines.push("no comparison: a density is 0".into()),
        },
        (Some(_), _, Some(_), _) => lines.push(
            "the machines' share of the difference is unknown: a result has no calibration; \
             compare only runs interleaved on one machine (--compare)"
                .into(),
        ),
        _ => lines.push("no comparison: a result has no density".into()),
    }
    if let Some(line) = load_generator_words(
        a_label,
        a.machine_speed.as_ref(),
        b_label,
        b.machine_speed.as_ref(),
    ) {
        lines.push(line);
    }
    let range = |r: &crate::bench::BenchResult| {
        let s = r.servers_per_core_spread.as_ref()?;
        Some((s.min, s.max))
    };
    if let (Some((alo, ahi)), Some((blo, bhi))) = (range(a), range(b)) {
        if alo <= bhi && blo <= ahi && (alo, ahi) != (blo, bhi) {
            lines.push(format!(
                "their ranges over ladders overlap ({a_label} {}, {b_label} {}): \
                 the difference is within each run's own spread",
                span(alo, ahi),
                span(blo, bhi)
            ));
        }
    }
    if a.settings.game != b.settings.game {
        lines.push(format!(
            "note: they ran different games ({} and {})",
            a.settings.game, b.settings.game
        ));
    }
    lines
}

fn span(lo: f64, hi: f64) -> String {
    if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo}-{hi}")
    }
}

/// A load generator's core whose speed or other work differs between the
/// two runs by more than [`DRIFT_LIMIT_PERCENT`] (or 5 points of other
/// work): the players ran on a different core, which the server cores'
/// calibration does not see.
fn load_generator_words(
    a_label: &str,
    sa: Option<&MachineSpeed>,
    b_label: &str,
    sb: Option<&MachineSpeed>,
) -> Option<String> {
    let (sa, sb) = (sa?, sb?);
    let (ta, tb) = (sa.load_generator_tick_us()?, sb.load_generator_tick_us()?);
    let (fa, fb) = (
        sa.load_generator_foreign_percent().unwrap_or(0.0),
        sb.load_generator_foreign_percent().unwrap_or(0.0),
    );
    let ratio = tb / ta;
    let slower = (ratio - 1.0).abs() * 100.0 > DRIFT_LIMIT_PERCENT;
    let busier = (fb - fa).abs() > 5.0;
    if !(slower || busier) {
        return Some(format!(
            "the load generator's cores ran the calibration at about the same speed ({ta:.0} and {tb:.0} µs)"
        ));
    }
    let (slow, fast, r, f_slow, f_fast) = if ratio > 1.0 || (!slower && fb > fa) {
        (b_label, a_label, ratio, fb, fa)
    } else {
        (a_label, b_label, 1.0 / ratio, fa, fb)
    };
    Some(format!(
        "{slow}'s load generator's cores were {r:.2}x as slow as {fast}'s (other work took {f_slow:.0} % of them, {f_fast:.0} % in {fast}): \
         its players measured on a busier core, which the server cores' calibration does not see; \
         part of the difference may be the players', not the servers'"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal(tick: f64) -> Calibration {
        Calibration {
            when: "before the first ladder".into(),
            cpu: 1,
            tick_us: tick,
            tick_p10_us: tick,
            tick_p90_us: tick,
            ticks: 300,
            steal_percent: 0.0,
            mhz: None,
            load_generator: false,
            foreign_percent: None,
        }
    }

    #[test]
    fn a_run_whose_calibration_drifted_is_unstable() {
        let mut m = MachineSpeed {
            workload: "x".into(),
            calibrations: vec![cal(400.0), cal(410.0), cal(420.0)],
        };
        assert_eq!(m.median_tick_us(), Some(410.0));
        assert!(!m.unstable());
        assert!(m.words().unwrap().contains("410 µs, 400-420"));
        m.calibrations.push(cal(600.0));
        assert!(m.unstable());
        assert!(m
            .words()
            .unwrap()
            .contains("UNSTABLE MACHINE: its speed drifted 50 %"));
        assert!(MachineSpeed::default().words().is_none());
    }

    #[test]
    fn a_density_difference_the_calibrations_explain_names_no_winner() {
        // 3 servers per core on a slow day, 9 on a fast one three times
        // as fast: the machines explain it all.
        let a = attribute(3.0, 1200.0, 9.0, 400.0).unwrap();
        assert!(a.machines_explain_it);
        assert!((a.adjusted_ratio - 1.0).abs() < 1e-9);
        assert!(a.words("A", "B").contains("neither is faster"));
        // Same speed, more density: the difference is the runs'.
        let b = attribute(3.0, 400.0, 4.0, 400.0).unwrap();
        assert!(!b.machines_explain_it);
        assert!(b.words("A", "B").contains("1.33x remains"));
        assert!(attribute(0.0, 1.0, 1.0, 1.0).is_none());
    }

    #[test]
    fn a_hog_on_the_load_generators_core_went_unseen_by_the_comparison() {
        // 2026-11-28: a stream hog pinned to the load generator's core;
        // the server cores ran the calibration 1.02x slower, the density
        // fell 0.86x, and the comparison blamed none of it on the machine.
        let speed = |server: f64, load: f64, foreign: f64| MachineSpeed {
            workload: "x".into(),
            calibrations: vec![
                cal(server),
                Calibration {
                    cpu: 0,
                    load_generator: true,
                    foreign_percent: Some(foreign),
                    ..cal(load)
                },
            ],
        };
        let quiet = speed(1040.0, 1030.0, 0.5);
        let hog = speed(1056.0, 1900.0, 48.0);
        assert_eq!(hog.median_tick_us(), Some(1056.0), "server cores only");
        assert!(hog.words().unwrap().contains(
            "the load generator's cores in 1900 µs, 1900-1900 (other work took up to 48 % of them)"
        ));
        let line = load_generator_words("A", Some(&quiet), "B", Some(&hog)).unwrap();
        assert!(
            line.starts_with(
                "B's load generator's cores were 1.84x as slow as A's (other work took 48 %"
            ),
            "{line}"
        );
        let same = load_generator_words("A", Some(&quiet), "A2", Some(&quiet)).unwrap();
        assert!(same.contains("about the same speed"), "{same}");
    }
}
