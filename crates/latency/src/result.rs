//! The result document (`tickpack.latency/1`) and how measurements become
//! its rows. Pure: no I/O, so the statistics are tested on made-up
//! histograms.
//!
//! A row is one (path, size, mode). Its `p50_us`, `p99_us` and `p999_us`
//! are the medians over the rounds of each round's percentile (a round
//! that hit a noisy moment cannot drag the figure), `p50_min_us` and
//! `p50_max_us` the spread of the rounds' medians, `all_rounds` the
//! percentiles of all round trips together, and `histogram_ns` that merged
//! histogram (HdrHistogram V2, base64, nanoseconds) so anything can be
//! recomputed. `overhead_vs_native` is the row's `p50_us` over native's for
//! the same size and mode. A ratio from fewer than [`MIN_ROUNDS_FOR_RATIO`]
//! rounds (of the row or of native's) is one moment, not a finding: the
//! table and the page show it in parentheses and say so
//! ([`LatencyResult::ratio_is_finding`]).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use tickpack_report::system::SystemInfo;

use crate::measure::{new_ns_histogram, ns_to_us, Measurement};
use crate::paths::{PathInfo, Unavailable};
use crate::settings::{Mode, PathName, Settings, SizeSpec};

/// Rounds a path and native both need before their ratio is a finding:
/// with fewer (`--quick` runs one), one noisy moment of either sets it (a
/// one-round macvlan read 0.56x native on a quiet machine).
pub const MIN_ROUNDS_FOR_RATIO: u32 = 3;

/// Schema id of `tickpack latency --json`.
pub const LATENCY_SCHEMA: &str = "tickpack.latency/1";

/// The whole document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyResult {
    pub schema: String,
    pub tickpack_version: String,
    /// False while running and after an interruption.
    pub complete: bool,
    pub system: SystemInfo,
    pub settings: SettingsDoc,
    pub cores: Cores,
    pub load: Load,
    /// The paths measured, as built.
    pub paths: Vec<PathInfo>,
    /// Paths this machine cannot build, with the reason.
    pub unavailable: Vec<Unavailable>,
    /// One row per (path, size, mode), in the order of the settings.
    pub results: Vec<Row>,
}

/// The settings, as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingsDoc {
    pub paths: Vec<PathName>,
    pub sizes: Vec<SizeSpec>,
    pub modes: Vec<Mode>,
    pub streams: u32,
    pub rounds: u32,
    pub duration_ms: f64,
    pub warmup_ms: f64,
    pub timeout_ms: f64,
    pub name: String,
    pub range: String,
    pub port: u16,
    /// Request and response sizes of `"game"`.
    pub game: GameSizes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameSizes {
    pub request_min: usize,
    pub request_max: usize,
    pub response: usize,
}

impl SettingsDoc {
    pub fn new(s: &Settings) -> Self {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        SettingsDoc {
            paths: s.paths.clone(),
            sizes: s.sizes.clone(),
            modes: s.modes.clone(),
            streams: s.streams,
            rounds: s.rounds,
            duration_ms: ms(s.duration),
            warmup_ms: ms(s.warmup),
            timeout_ms: ms(s.timeout),
            name: s.name.clone(),
            range: s.range.to_string(),
            port: s.port,
            game: GameSizes {
                request_min: crate::settings::GAME_REQUEST_MIN,
                request_max: crate::settings::GAME_REQUEST_MAX,
                response: crate::settings::GAME_RESPONSE,
            },
        }
    }
}

/// Which cores did what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cores {
    /// CPUs of the client threads (empty: not pinned).
    pub clients: Vec<usize>,
    /// CPUs of the echo threads (empty: not pinned).
    pub echo_servers: Vec<usize>,
    /// The threads of a blocking measurement.
    pub blocking: String,
    /// The threads of a busy-poll measurement.
    pub busy: String,
}

impl Cores {
    pub fn new(s: &Settings) -> Self {
        let cpu = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
        let (cc, ec) = (cpu(s.client_cpu), cpu(s.echo_cpu));
        let n = s.streams;
        Cores {
            clients: s.client_cpu.into_iter().collect(),
            echo_servers: s.echo_cpu.into_iter().collect(),
            blocking: format!(
                "{n} client thread(s) on {cc}, one per stream, blocking recv; {n} echo thread(s) on {ec}, one per echo server, blocking recv (they share the CPU)"
            ),
            busy: format!(
                "1 client thread on {cc} spinning over its {n} stream(s); 1 echo thread per path on {ec} polling its {n} socket(s) round robin (non-blocking recv)"
            ),
        }
    }
}

/// `/proc/loadavg` before and after the run. The load average is a
/// decaying mean over the last minutes that counts runnable threads, the
/// run's own included: `after` shows this run's clients and echo servers
/// too (with 8 streams, 16 threads waking all the time in blocking mode);
/// `before` is the figure that says whether something else was running.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Load {
    pub before: Option<LoadAvg>,
    pub after: Option<LoadAvg>,
}

/// One reading of `/proc/loadavg`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadAvg {
    pub load1: f64,
    pub load5: f64,
    pub load15: f64,
    /// The whole line, e.g. `0.52 0.40 0.33 2/180 12345`.
    pub raw: String,
}

impl LoadAvg {
    /// Parses a `/proc/loadavg` line.
    pub fn parse(line: &str) -> Option<LoadAvg> {
        let mut it = line.split_whitespace().map(|v| v.parse::<f64>());
        let (Some(Ok(load1)), Some(Ok(load5)), Some(Ok(load15))) =
            (it.next(), it.next(), it.next())
        else {
            return None;
        };
        Some(LoadAvg {
            load1,
            load5,
            load15,
            raw: line.trim().to_string(),
        })
    }

    /// Reads `/proc/loadavg` (`None` where there is none).
    pub fn read() -> Option<LoadAvg> {
        std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| LoadAvg::parse(&s))
    }
}

/// One (path, size, mode).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub path: PathName,
    /// Bytes, or `"game"`.
    pub size: SizeSpec,
    pub mode: Mode,
    /// Median over the rounds of each round's p50, in microseconds.
    pub p50_us: f64,
    /// Median over the rounds of each round's p99.
    pub p99_us: f64,
    /// Median over the rounds of each round's p99.9.
    pub p999_us: f64,
    /// Lowest and highest round p50.
    pub p50_min_us: f64,
    pub p50_max_us: f64,
    /// `p50_us` over native's `p50_us` (same size and mode); absent when
    /// native has no figure.
    pub overhead_vs_native: Option<f64>,
    /// Rounds measured.
    pub rounds: u32,
    /// Each round's p50 and p99, in the order measured.
    pub round_p50_us: Vec<f64>,
    pub round_p99_us: Vec<f64>,
    /// All rounds' round trips together.
    pub all_rounds: AllRounds,
    /// Requests sent in the measured windows, and of those unanswered.
    pub sent: u64,
    pub lost: u64,
    /// Replies that arrived after their request timed out.
    pub stale: u64,
    /// Round trips per second, all streams together (measured windows).
    pub round_trips_per_s: f64,
    /// The merged histogram, nanoseconds, HdrHistogram V2 base64.
    pub histogram_ns: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllRounds {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
    pub count: u64,
}

/// One measurement, tagged with where it belongs.
#[derive(Clone, Debug)]
pub struct Sample {
    pub path: PathName,
    pub round: u32,
    pub m: Measurement,
}

/// The median of `v` (the mean of the two middle values for an even count).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The rows for `samples`: one per (path, size, mode) with at least one
/// sample, in the order of `paths` x `sizes` x `modes`.
pub fn rows(
    paths: &[PathName],
    sizes: &[SizeSpec],
    modes: &[Mode],
    samples: &[Sample],
) -> Vec<Row> {
    let mut out = Vec::new();
    for &path in paths {
        for &size in sizes {
            for &mode in modes {
                let mut mine: Vec<&Sample> = samples
                    .iter()
                    .filter(|s| s.path == path && s.m.size == size && s.m.mode == mode)
                    .filter(|s| !s.m.histogram.is_empty())
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                mine.sort_by_key(|s| s.round);
                out.push(row(path, size, mode, &mine));
            }
        }
    }
    let native: Vec<(SizeSpec, Mode, f64)> = out
        .iter()
        .filter(|r| r.path == PathName::Native)
        .map(|r| (r.size, r.mode, r.p50_us))
        .collect();
    for r in &mut out {
        r.overhead_vs_native = native
            .iter()
            .find(|(s, m, _)| *s == r.size && *m == r.mode)
            .filter(|(_, _, p)| *p > 0.0)
            .map(|(_, _, p)| (r.p50_us / p * 100.0).round() / 100.0);
    }
    out
}

fn row(path: PathName, size: SizeSpec, mode: Mode, mine: &[&Sample]) -> Row {
    let q = |q: f64| -> Vec<f64> { mine.iter().map(|s| s.m.quantile_us(q)).collect() };
    let (p50s, p99s, p999s) = (q(0.5), q(0.99), q(0.999));
    let mut all = new_ns_histogram();
    let (mut sent, mut lost, mut stale, mut secs) = (0, 0, 0, 0.0);
    for s in mine {
        all.add(&s.m.histogram)
            .expect("histograms of the same bounds add");
        sent += s.m.sent;
        lost += s.m.lost;
        stale += s.m.stale;
        secs += s.m.elapsed.as_secs_f64();
    }
    let fold = |f: fn(f64, f64) -> f64, init: f64| p50s.iter().copied().fold(init, f);
    Row {
        path,
        size,
        mode,
        p50_us: round1(median(&p50s)),
        p99_us: round1(median(&p99s)),
        p999_us: round1(median(&p999s)),
        p50_min_us: fold(f64::min, f64::INFINITY),
        p50_max_us: fold(f64::max, 0.0),
        overhead_vs_native: None,
        rounds: mine.len() as u32,
        round_p50_us: p50s,
        round_p99_us: p99s,
        all_rounds: AllRounds {
            p50_us: ns_to_us(all.value_at_quantile(0.5)),
            p99_us: ns_to_us(all.value_at_quantile(0.99)),
            p999_us: ns_to_us(all.value_at_quantile(0.999)),
            max_us: ns_to_us(all.max()),
            mean_us: round1(all.mean() / 1000.0),
            count: all.len(),
        },
        sent,
        lost,
        stale,
        round_trips_per_s: if secs > 0.0 {
            (all.len() as f64 / secs).round()
        } else {
            0.0
        },
        histogram_ns: tickpack_report::encode_histogram(&all),
    }
}

impl LatencyResult {
    /// True when `r`'s ratio to native rests on at least
    /// [`MIN_ROUNDS_FOR_RATIO`] rounds of both.
    pub fn ratio_is_finding(&self, r: &Row) -> bool {
        let native_rounds = self
            .results
            .iter()
            .find(|n| n.path == PathName::Native && n.size == r.size && n.mode == r.mode)
            .map_or(0, |n| n.rounds);
        r.rounds.min(native_rounds) >= MIN_ROUNDS_FOR_RATIO
    }

    /// `r`'s ratio to native as the table and the page write it: `1.23`,
    /// `(1.23)` from too few rounds to be a finding, `-` without one.
    pub fn ratio_words(&self, r: &Row) -> String {
        match r.overhead_vs_native {
            None => "-".into(),
            Some(o) if self.ratio_is_finding(r) => format!("{o:.2}"),
            Some(o) => format!("({o:.2})"),
        }
    }

    /// The sentence that says why some ratios are in parentheses, when
    /// some are.
    pub fn few_rounds_note(&self) -> Option<String> {
        let few = self
            .results
            .iter()
            .filter(|r| r.path != PathName::Native && r.overhead_vs_native.is_some())
            .filter(|r| !self.ratio_is_finding(r))
            .count();
        (few > 0).then(|| {
            format!(
                "x native in (parentheses): from fewer than {MIN_ROUNDS_FOR_RATIO} rounds, one \
                 moment of the machine, not a finding; compare paths over {MIN_ROUNDS_FOR_RATIO} \
                 rounds or more (the default is 5; --quick runs 1)"
            )
        })
    }

    /// The terminal table: one line per row, grouped by mode and size.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "{:<9} {:<5} {:<8} {:>9} {:>9} {:>9} {:>15} {:>9} {:>6}",
            "mode",
            "size",
            "path",
            "p50 us",
            "p99 us",
            "p99.9 us",
            "p50 min-max",
            "x native",
            "lost"
        );
        for mode in &self.settings.modes {
            for size in &self.settings.sizes {
                for r in self
                    .results
                    .iter()
                    .filter(|r| r.mode == *mode && r.size == *size)
                {
                    let _ = writeln!(
                        t,
                        "{:<9} {:<5} {:<8} {:>9.1} {:>9.1} {:>9.1} {:>15} {:>9} {:>6}",
                        r.mode.as_str(),
                        r.size.label(),
                        r.path.as_str(),
                        r.p50_us,
                        r.p99_us,
                        r.p999_us,
                        format!("{:.1}-{:.1}", r.p50_min_us, r.p50_max_us),
                        self.ratio_words(r),
                        r.lost
                    );
                }
            }
        }
        if let Some(note) = self.few_rounds_note() {
            let _ = writeln!(t, "{note}");
        }
        for u in &self.unavailable {
            let _ = writeln!(t, "{}: unavailable: {}", u.path, u.reason);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn sample(path: PathName, round: u32, mode: Mode, values_ns: &[u64]) -> Sample {
        let mut h = new_ns_histogram();
        for v in values_ns {
            h.record(*v).unwrap();
        }
        Sample {
            path,
            round,
            m: Measurement {
                size: SizeSpec::Bytes(64),
                mode,
                sent: values_ns.len() as u64 + 1,
                lost: 1,
                stale: 0,
                echo_dropped: 0,
                elapsed: Duration::from_secs(1),
                histogram: h,
            },
        }
    }

    #[test]
    fn medians_over_rounds_resist_one_bad_round() {
        let veth = PathName::Net(tickpack_host::netpath::NetKind::Veth);
        let samples = vec![
            sample(PathName::Native, 0, Mode::Busy, &[10_000; 100]),
            sample(PathName::Native, 1, Mode::Busy, &[12_000; 100]),
            sample(PathName::Native, 2, Mode::Busy, &[11_000; 100]),
            sample(veth, 0, Mode::Busy, &[20_000; 100]),
            sample(veth, 1, Mode::Busy, &[900_000; 100]), // a noisy round
            sample(veth, 2, Mode::Busy, &[22_000; 100]),
        ];
        let rows = rows(
            &[PathName::Native, veth],
            &[SizeSpec::Bytes(64)],
            &[Mode::Blocking, Mode::Busy],
            &samples,
        );
        // No blocking samples: no blocking rows.
        assert_eq!(rows.len(), 2);
        let (n, v) = (&rows[0], &rows[1]);
        assert_eq!(n.p50_us, 11.0);
        assert_eq!((n.p50_min_us, n.p50_max_us), (10.0, 12.0));
        assert_eq!(n.overhead_vs_native, Some(1.0));
        assert_eq!(v.p50_us, 22.0);
        assert_eq!(v.p50_max_us, 900.1);
        assert_eq!(v.overhead_vs_native, Some(2.0));
        assert_eq!(v.rounds, 3);
        assert_eq!((v.sent, v.lost), (303, 3));
        assert_eq!(v.all_rounds.count, 300);
        assert_eq!(v.round_trips_per_s, 100.0);
        let h = tickpack_report::decode_histogram(&v.histogram_ns).unwrap();
        assert_eq!(h.len(), 300);
    }

    #[test]
    fn percentiles_are_ordered_and_in_tenths_of_a_microsecond() {
        let values: Vec<u64> = (1..=10_000u64).map(|i| 5_000 + i * 7).collect();
        let rows = rows(
            &[PathName::Native],
            &[SizeSpec::Bytes(64)],
            &[Mode::Blocking],
            &[sample(PathName::Native, 0, Mode::Blocking, &values)],
        );
        let r = &rows[0];
        assert!(r.p50_us > 0.0 && r.p50_us <= r.p99_us && r.p99_us <= r.p999_us);
        for v in [r.p50_us, r.p99_us, r.p999_us] {
            assert_eq!((v * 10.0).round() / 10.0, v);
        }
        let json = serde_json::to_value(r).unwrap();
        assert_eq!(json["path"], "native");
        assert_eq!(json["size"], 64);
        assert_eq!(json["mode"], "blocking");
        assert!(json["p50_us"].is_f64());
    }

    #[test]
    fn loadavg_lines_parse() {
        let l = LoadAvg::parse("0.52 0.40 0.33 2/180 12345\n").unwrap();
        assert_eq!((l.load1, l.load5, l.load15), (0.52, 0.40, 0.33));
        assert_eq!(l.raw, "0.52 0.40 0.33 2/180 12345");
        assert!(LoadAvg::parse("").is_none());
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
