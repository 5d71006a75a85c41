//! Merging players results of several load generators into one
//! (`tickpack report merge`): load from many machines, one result.
//!
//! What a merge does, field by field:
//! - histograms: decoded, added bucket by bucket (`Histogram::add`) and
//!   re-encoded, so the merged percentiles are exactly those of one
//!   histogram holding every sample; never an average of percentiles.
//! - summaries (`transaction_latency_us`, ...): recomputed from the merged
//!   histograms.
//! - counts summed: players, connected, snapshots, commands, outages'
//!   count and total, reconnects, decode errors, traffic, load generator
//!   threads and CPU seconds; the longest outage is the maximum.
//! - targets: each once, in the order first seen; errors and referee rows
//!   kept, each error prefixed with its source.
//! - joins and windows ([`crate::windows`]): counts and presence summed,
//!   histograms added, window by window (the window length must agree).
//! - `merged_from`: one [`MergedSource`] row per source (a merged input
//!   contributes its own rows, so merging merges is the same as merging
//!   all the runs at once).
//!
//! What must agree, or the merge is refused ([`MergeError`]): the schema,
//! the game, the servers' tick rate, the command rate, the loss deadline,
//! the window length and the measured duration (per-second figures divide by it). Sources
//! whose end times lie further apart than a run lasts did not run at the
//! same time and are refused too: their sum is no load any server saw.
//! The warm-up may differ (it grows with players per server); the merged
//! document keeps the longest.
//!
//! Sans-I/O: results in, result out; reading and writing files is the
//! caller's.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tickpack_units::tick_rate::hz_or_zero;

use crate::{
    decode_histogram, encode_histogram, CommandCounts, Measurements, Outages, Percentiles,
    PlayersHistograms, PlayersResult, SnapshotCounts, PLAYERS_SCHEMA,
};

/// One of the results a merged result was made of: where it came from and
/// what it counted (the per-source breakdown).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MergedSource {
    /// The label the merge was given for it (the file name).
    pub source: String,
    pub tickpack_version: String,
    pub cpu_model: String,
    pub logical_cpus: usize,
    /// Unix time (seconds) the source was made (its run's end).
    pub unix_time: u64,
    pub targets: usize,
    pub players: u32,
    pub connected: u32,
    pub duration_s: f64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    pub load_generator_cpu_s: f64,
    pub snapshots: SnapshotCounts,
    pub commands: CommandCounts,
    pub outages: Outages,
    pub transaction_latency_us: Percentiles,
}

/// Why results cannot be merged into one.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error("nothing to merge")]
    Empty,
    #[error("{label}: schema {found:?}, but only players results (\"{PLAYERS_SCHEMA}\", from `tickpack players --json`) can be merged")]
    Schema { label: String, found: String },
    #[error("{label}: {field} is {value}, but {first} has {first_value}: only runs with the same {field} can be merged")]
    Differs {
        field: &'static str,
        first: String,
        first_value: String,
        label: String,
        value: String,
    },
    #[error("{label}: its {field} histogram is unreadable: {why}")]
    Histogram {
        label: String,
        field: &'static str,
        why: String,
    },
    #[error("{first} and {label} ended {apart_s} s apart, more than the {run_s} s a run lasts: they did not run at the same time, and their sum is no load a server saw")]
    NotTogether {
        first: String,
        label: String,
        apart_s: u64,
        run_s: u64,
    },
}

/// Merges `sources` (label, result), in that order, into one result; see
/// the module header for what is summed, recomputed and refused.
pub fn merge_players(sources: &[(String, PlayersResult)]) -> Result<PlayersResult, MergeError> {
    let ((first_label, first), rest) = sources.split_first().ok_or(MergeError::Empty)?;
    for (label, r) in sources {
        if r.schema != PLAYERS_SCHEMA {
            return Err(MergeError::Schema {
                label: label.clone(),
                found: r.schema.clone(),
            });
        }
    }
    for (label, r) in rest {
        check_same(first_label, first, label, r)?;
    }

    let mut out = first.clone();
    out.tickpack_version = env!("CARGO_PKG_VERSION").into();
    out.targets = vec![];
    out.players = 0;
    out.connected = 0;
    out.interrupted = false;
    out.load_generator_cpus = vec![];
    out.load_generator_threads = 0;
    out.load_generator_cpu_s = 0.0;
    out.load_generator_io = String::new();
    out.decode_errors = 0;
    out.errors = vec![];
    out.referee = vec![];
    out.traffic = Default::default();
    out.merged_from = vec![];
    out.joins = Default::default();
    out.windows = vec![];
    let mut counts = Measurements::default();
    let mut hists = Hists::default();

    for (label, r) in sources {
        for t in &r.targets {
            if !out.targets.contains(t) {
                out.targets.push(t.clone());
            }
        }
        out.players += r.players;
        out.connected += r.connected;
        out.interrupted |= r.interrupted;
        out.warmup_s = out.warmup_s.max(r.warmup_s);
        out.load_generator_threads += r.load_generator_threads;
        out.load_generator_cpu_s += r.load_generator_cpu_s;
        // The sources' I/O paths, each named once: `ring`, or `ring+epoll`.
        if !r.load_generator_io.is_empty()
            && !out
                .load_generator_io
                .split('+')
                .any(|io| io == r.load_generator_io)
        {
            if !out.load_generator_io.is_empty() {
                out.load_generator_io.push('+');
            }
            out.load_generator_io.push_str(&r.load_generator_io);
        }
        out.decode_errors += r.decode_errors;
        out.errors
            .extend(r.errors.iter().map(|e| format!("{label}: {e}")));
        out.referee.extend(r.referee.iter().cloned());
        out.traffic.merge(&r.traffic);
        add_counts(&mut counts, r);
        hists.add(label, &r.histograms)?;
        let unreadable = |field: &'static str, why: String| MergeError::Histogram {
            label: label.clone(),
            field,
            why,
        };
        crate::windows::merge_joins(&mut out.joins, &r.joins)
            .map_err(|why| unreadable("join_us", why))?;
        crate::windows::merge_windows(&mut out.windows, &r.windows)
            .map_err(|e| unreadable("windows", e.to_string()))?;
        if r.merged_from.is_empty() {
            out.merged_from.push(source_row(label, r));
        } else {
            out.merged_from.extend(r.merged_from.iter().cloned());
        }
    }
    // The machine that made the first source stands for the run's context;
    // each source's own is in `merged_from`. The time is the latest end.
    out.system.unix_time = sources
        .iter()
        .map(|(_, r)| r.system.unix_time)
        .max()
        .unwrap_or(0);
    out.measured = hists.summaries(counts);
    out.histograms = hists.encode();
    Ok(out)
}

/// The settings every source must share with the first.
fn check_same(
    first_label: &str,
    first: &PlayersResult,
    label: &str,
    r: &PlayersResult,
) -> Result<(), MergeError> {
    let differs = |field, a: String, b: String| MergeError::Differs {
        field,
        first: first_label.into(),
        first_value: a,
        label: label.into(),
        value: b,
    };
    if r.game != first.game {
        return Err(differs("game", first.game.clone(), r.game.clone()));
    }
    if r.tick_hz != first.tick_hz {
        return Err(differs(
            "tick rate",
            format!("{} Hz", hz_or_zero(first.tick_hz)),
            format!("{} Hz", hz_or_zero(r.tick_hz)),
        ));
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
    if !close(r.cmd_rate_hz, first.cmd_rate_hz) {
        return Err(differs(
            "command rate",
            format!("{} Hz", first.cmd_rate_hz),
            format!("{} Hz", r.cmd_rate_hz),
        ));
    }
    if !close(r.loss_deadline_s, first.loss_deadline_s) {
        return Err(differs(
            "loss deadline",
            format!("{} s", first.loss_deadline_s),
            format!("{} s", r.loss_deadline_s),
        ));
    }
    // Durations are written to the microsecond; an interrupted run's is
    // shorter, and per-second figures cannot be summed over unequal spans.
    if (r.duration_s - first.duration_s).abs() > 1e-3 {
        let d = |r: &PlayersResult| {
            format!(
                "{} s{}",
                r.duration_s,
                if r.interrupted { " (interrupted)" } else { "" }
            )
        };
        return Err(differs("measured duration", d(first), d(r)));
    }
    if r.window_s != first.window_s {
        let w = |w: Option<f64>| w.map_or("none".to_string(), |s| format!("{s} s"));
        return Err(differs("window length", w(first.window_s), w(r.window_s)));
    }
    let (a, b) = (first.system.unix_time, r.system.unix_time);
    if a != 0 && b != 0 {
        let run_s = (first.warmup_s.max(r.warmup_s) + first.duration_s + first.loss_deadline_s)
            .ceil() as u64;
        let apart_s = a.abs_diff(b);
        if apart_s > run_s {
            return Err(MergeError::NotTogether {
                first: first_label.into(),
                label: label.into(),
                apart_s,
                run_s,
            });
        }
    }
    Ok(())
}

fn add_counts(m: &mut Measurements, r: &PlayersResult) {
    m.snapshots.expected += r.snapshots.expected;
    m.snapshots.received += r.snapshots.received;
    m.snapshots.lost += r.snapshots.lost;
    m.commands.sent += r.commands.sent;
    m.commands.reflected += r.commands.reflected;
    m.commands.lost += r.commands.lost;
    m.outages.count += r.outages.count;
    m.outages.total_us += r.outages.total_us;
    m.outages.longest_us = m.outages.longest_us.max(r.outages.longest_us);
    m.reconnects += r.reconnects;
}

fn source_row(label: &str, r: &PlayersResult) -> MergedSource {
    MergedSource {
        source: label.into(),
        tickpack_version: r.tickpack_version.clone(),
        cpu_model: r.system.cpu_model.clone(),
        logical_cpus: r.system.logical_cpus,
        unix_time: r.system.unix_time,
        targets: r.targets.len(),
        players: r.players,
        connected: r.connected,
        duration_s: r.duration_s,
        interrupted: r.interrupted,
        load_generator_cpu_s: r.load_generator_cpu_s,
        snapshots: r.snapshots,
        commands: r.commands,
        outages: r.outages,
        transaction_latency_us: r.transaction_latency_us,
    }
}

/// The running sums of every histogram of [`PlayersHistograms`]; `None`
/// until a source has one (the optional ones stay absent if none has).
#[derive(Default)]
struct Hists {
    transaction: Option<Histogram<u64>>,
    rtt: Option<Histogram<u64>>,
    frame: Option<Histogram<u64>>,
    lateness: Option<Histogram<u64>>,
    jitter: Option<Histogram<u64>>,
    server_ping: Option<Histogram<u64>>,
    query: Option<Histogram<u64>>,
}

impl Hists {
    fn add(&mut self, label: &str, h: &PlayersHistograms) -> Result<(), MergeError> {
        let pairs: [(&'static str, &mut Option<Histogram<u64>>, &str); 7] = [
            (
                "transaction_latency_us",
                &mut self.transaction,
                &h.transaction_latency_us,
            ),
            ("rtt_us", &mut self.rtt, &h.rtt_us),
            ("server_frame_us", &mut self.frame, &h.server_frame_us),
            ("tick_lateness_us", &mut self.lateness, &h.tick_lateness_us),
            (
                "snapshot_jitter_us",
                &mut self.jitter,
                &h.snapshot_jitter_us,
            ),
            ("server_ping_us", &mut self.server_ping, &h.server_ping_us),
            ("query_latency_us", &mut self.query, &h.query_latency_us),
        ];
        for (field, sum, encoded) in pairs {
            if encoded.is_empty() {
                continue;
            }
            let bad = |why: String| MergeError::Histogram {
                label: label.into(),
                field,
                why,
            };
            let h = decode_histogram(encoded).map_err(|e| bad(e.to_string()))?;
            match sum {
                None => *sum = Some(h),
                Some(s) => s.add(&h).map_err(|e| bad(format!("{e:?}")))?,
            }
        }
        Ok(())
    }

    /// `counts` with every summary recomputed from the merged histograms.
    fn summaries(&self, counts: Measurements) -> Measurements {
        let p = |h: &Option<Histogram<u64>>| h.as_ref().map(Percentiles::from_histogram);
        Measurements {
            transaction_latency_us: p(&self.transaction).unwrap_or_default(),
            rtt_us: p(&self.rtt).unwrap_or_default(),
            server_frame_us: p(&self.frame).unwrap_or_default(),
            tick_lateness_us: p(&self.lateness).unwrap_or_default(),
            snapshot_jitter_us: p(&self.jitter).unwrap_or_default(),
            server_ping_us: self
                .server_ping
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(Percentiles::from_histogram),
            ..counts
        }
    }

    fn encode(&self) -> PlayersHistograms {
        let e = |h: &Option<Histogram<u64>>| h.as_ref().map(encode_histogram).unwrap_or_default();
        PlayersHistograms {
            transaction_latency_us: e(&self.transaction),
            rtt_us: e(&self.rtt),
            server_frame_us: e(&self.frame),
            tick_lateness_us: e(&self.lateness),
            snapshot_jitter_us: e(&self.jitter),
            server_ping_us: e(&self.server_ping),
            query_latency_us: e(&self.query),
            run_delay_us: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{new_histogram, record};
    use tickpack_units::TickRate;

    /// A players result whose transaction and rtt histograms hold
    /// `samples`, with counts derived from `n`.
    fn result(samples: &[u64], n: u64, unix_time: u64) -> PlayersResult {
        let mut h = new_histogram();
        for &v in samples {
            record(&mut h, v);
        }
        let empty = new_histogram();
        let p = Percentiles::from_histogram(&h);
        PlayersResult {
            schema: PLAYERS_SCHEMA.into(),
            tickpack_version: "0.0.1".into(),
            game: "reference".into(),
            system: crate::system::SystemInfo {
                cpu_model: format!("cpu{n}"),
                logical_cpus: 2,
                kernel: "6".into(),
                unix_time,
            },
            targets: vec![format!("127.0.0.1:{}", 27000 + n), "127.0.0.1:1".into()],
            players: n as u32,
            connected: n as u32,
            cmd_rate_hz: 60.0,
            tick_hz: TickRate::new(60),
            duration_s: 10.0,
            warmup_s: n as f64,
            interrupted: false,
            load_generator_cpus: vec![0],
            load_generator_threads: 1,
            load_generator_cpu_s: 0.5,
            load_generator_io: "ring".into(),
            measured: Measurements {
                transaction_latency_us: p,
                rtt_us: p,
                snapshots: SnapshotCounts {
                    expected: 100 * n,
                    received: 100 * n - n,
                    lost: n,
                },
                commands: CommandCounts {
                    sent: 50 * n,
                    reflected: 50 * n - 1,
                    lost: 1,
                },
                outages: Outages {
                    count: n,
                    total_us: 300_000 * n,
                    longest_us: 200_000 + n,
                },
                reconnects: n,
                ..Default::default()
            },
            loss_deadline_s: 1.0,
            decode_errors: n,
            errors: vec![format!("problem {n}")],
            histograms: PlayersHistograms {
                transaction_latency_us: encode_histogram(&h),
                rtt_us: encode_histogram(&h),
                server_frame_us: encode_histogram(&empty),
                tick_lateness_us: encode_histogram(&empty),
                snapshot_jitter_us: encode_histogram(&empty),
                ..Default::default()
            },
            traffic: crate::Traffic {
                datagrams_out: n,
                bytes_out: 10 * n,
                datagrams_in: 2 * n,
                bytes_in: 20 * n,
            },
            referee: vec![],
            merged_from: vec![],
            joins: Default::default(),
            window_s: None,
            windows: vec![],
        }
    }

    fn samples(from: u64, step: u64, n: u64) -> Vec<u64> {
        (0..n).map(|i| from + i * step).collect()
    }

    #[test]
    fn merged_percentiles_are_those_of_all_samples_in_one_histogram() {
        let a = samples(1_000, 3, 5_000); // 1 ms .. 16 ms
        let b = samples(40_000, 97, 500); // a slow machine: 40 ms .. 88 ms
        let merged = merge_players(&[
            ("a.json".into(), result(&a, 1, 1000)),
            ("b.json".into(), result(&b, 2, 1001)),
        ])
        .unwrap();
        let mut all = new_histogram();
        for &v in a.iter().chain(&b) {
            record(&mut all, v);
        }
        let want = Percentiles::from_histogram(&all);
        assert_eq!(merged.transaction_latency_us, want);
        assert_eq!(merged.transaction_latency_us.count, 5_500);
        // Averaging the two p99s would say about 48 ms; all samples say
        // the 5445th of 5500, in the slow machine's range.
        assert!(merged.transaction_latency_us.p99 > 80_000, "{want:?}");
        let h = decode_histogram(&merged.histograms.transaction_latency_us).unwrap();
        assert_eq!(h, all);
        assert_eq!(merged.rtt_us, want);
        assert_eq!(merged.server_ping_us, None);
        assert!(merged.histograms.server_ping_us.is_empty());
        assert_eq!(merged.server_frame_us.count, 0);
    }

    #[test]
    fn joins_and_windows_merge_and_unequal_windows_are_refused() {
        let with = |n: u64| {
            let mut r = result(&[5], n, 1000);
            let mut h = new_histogram();
            record(&mut h, 1_000 * n);
            r.joins = crate::Joins {
                done: n,
                failed: 1,
                timeout_s: n as f64,
                join_us: Percentiles::from_histogram(&h),
                histogram: encode_histogram(&h),
            };
            r.window_s = Some(5.0);
            r.windows = vec![crate::PlayersWindow {
                length_s: 5.0,
                players_present: n as f64,
                joins: n,
                ..Default::default()
            }];
            r
        };
        let m = merge_players(&[("a".into(), with(1)), ("b".into(), with(2))]).unwrap();
        assert_eq!((m.joins.done, m.joins.failed), (3, 2));
        assert_eq!(m.joins.join_us.count, 2);
        assert_eq!(m.joins.timeout_s, 2.0);
        assert_eq!(m.windows.len(), 1);
        assert_eq!(m.windows[0].players_present, 3.0);
        assert_eq!(m.windows[0].joins, 3);
        let mut other = with(2);
        other.window_s = Some(1.0);
        let e = merge_players(&[("a".into(), with(1)), ("b".into(), other)]).unwrap_err();
        assert!(e.to_string().contains("window length is 1 s"), "{e}");
    }

    #[test]
    fn merged_counts_are_sums_and_the_longest_outage_the_maximum() {
        let m = merge_players(&[
            ("a.json".into(), result(&[5], 1, 1000)),
            ("b.json".into(), result(&[7], 2, 1003)),
            ("c.json".into(), result(&[9], 4, 1002)),
        ])
        .unwrap();
        assert_eq!((m.players, m.connected), (7, 7));
        assert_eq!(
            m.snapshots,
            SnapshotCounts {
                expected: 700,
                received: 693,
                lost: 7
            }
        );
        assert_eq!(
            m.commands,
            CommandCounts {
                sent: 350,
                reflected: 347,
                lost: 3
            }
        );
        assert_eq!(
            m.outages,
            Outages {
                count: 7,
                total_us: 2_100_000,
                longest_us: 200_004
            }
        );
        assert_eq!(m.reconnects, 7);
        assert_eq!(m.decode_errors, 7);
        assert_eq!(m.traffic.bytes_in, 140);
        assert_eq!(m.load_generator_threads, 3);
        assert_eq!(m.load_generator_io, "ring", "one path, named once");
        assert!((m.load_generator_cpu_s - 1.5).abs() < 1e-9);
        assert_eq!(m.warmup_s, 4.0);
        assert_eq!(m.system.unix_time, 1003);
        assert_eq!(
            m.targets,
            [
                "127.0.0.1:27001",
                "127.0.0.1:1",
                "127.0.0.1:27002",
                "127.0.0.1:27004"
            ]
        );
        assert_eq!(m.errors[1], "b.json: problem 2");
        let rows: Vec<_> = m.merged_from.iter().map(|s| s.source.as_str()).collect();
        assert_eq!(rows, ["a.json", "b.json", "c.json"]);
        assert_eq!(m.merged_from[1].snapshots.expected, 200);
        assert_eq!(m.merged_from[2].cpu_model, "cpu4");
    }

    #[test]
    fn merging_merges_equals_merging_all_runs_at_once() {
        let (a, b, c) = (
            result(&samples(100, 7, 300), 1, 1000),
            result(&samples(900, 11, 200), 2, 1000),
            result(&samples(5_000, 13, 100), 3, 1000),
        );
        let ab = merge_players(&[("a".into(), a.clone()), ("b".into(), b.clone())]).unwrap();
        let nested = merge_players(&[("ab".into(), ab), ("c".into(), c.clone())]).unwrap();
        let flat = merge_players(&[("a".into(), a), ("b".into(), b), ("c".into(), c)]).unwrap();
        assert_eq!(nested.measured, flat.measured);
        assert_eq!(nested.histograms, flat.histograms);
        assert_eq!(nested.merged_from, flat.merged_from);
        assert_eq!(nested.merged_from.len(), 3);
    }

    #[test]
    fn mismatched_settings_are_refused_naming_both_sources() {
        let a = result(&[5], 1, 1000);
        let mut cases = vec![];
        let mut b = result(&[5], 2, 1000);
        b.game = "openarena".into();
        cases.push((b, "game is openarena, but a.json has reference"));
        let mut b = result(&[5], 2, 1000);
        b.tick_hz = TickRate::new(30);
        cases.push((b, "tick rate is 30 Hz, but a.json has 60 Hz"));
        let mut b = result(&[5], 2, 1000);
        b.cmd_rate_hz = 30.0;
        cases.push((b, "command rate is 30 Hz"));
        let mut b = result(&[5], 2, 1000);
        b.loss_deadline_s = 0.5;
        cases.push((b, "loss deadline is 0.5 s"));
        let mut b = result(&[5], 2, 1000);
        b.duration_s = 4.2;
        b.interrupted = true;
        cases.push((b, "measured duration is 4.2 s (interrupted)"));
        let mut b = result(&[5], 2, 1000);
        b.schema = "tickpack.bench/1".into();
        cases.push((b, "b.json: schema \"tickpack.bench/1\""));
        let b = result(&[5], 2, 1000 + 3600);
        cases.push((b, "ended 3600 s apart"));
        let mut b = result(&[5], 2, 1000);
        b.histograms.rtt_us = "not a histogram".into();
        cases.push((b, "b.json: its rtt_us histogram is unreadable"));
        for (b, want) in cases {
            let e = merge_players(&[("a.json".into(), a.clone()), ("b.json".into(), b)])
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
            assert!(e.starts_with("b.json") || e.starts_with("a.json"), "{e}");
        }
        assert_eq!(merge_players(&[]).unwrap_err(), MergeError::Empty);
    }

    #[test]
    fn a_merged_result_renders_marked_with_its_sources() {
        let one = result(&[5, 6], 1, 1000);
        let m = merge_players(&[
            ("lg<1>.json".into(), one.clone()),
            ("lg2.json".into(), result(&[7], 2, 1000)),
        ])
        .unwrap();
        let page = crate::html::render_all(&[], &[("all.json".into(), m)]);
        assert!(page.contains("merged from 2 sources"), "marked");
        assert!(page.contains("lg&lt;1&gt;.json") && page.contains("lg2.json"));
        assert!(page.contains("<title>tickpack players report: all.json</title>"));
        let single = crate::html::render_all(&[], &[("p.json".into(), one)]);
        assert!(
            !single.contains("merged from"),
            "a single run is not marked"
        );
        assert!(single.contains("transaction latency"));
    }

    #[test]
    fn a_merged_result_survives_json() {
        let m = merge_players(&[
            ("a.json".into(), result(&[5, 6], 1, 1000)),
            ("b.json".into(), result(&[7], 2, 1000)),
        ])
        .unwrap();
        let back: PlayersResult =
            serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        // A single run's document has no merged_from field at all.
        let one = serde_json::to_value(result(&[5], 1, 1000)).unwrap();
        assert!(one.get("merged_from").is_none());
    }
}
