//! The time-resolved half of a players result: how the players' joins
//! went ([`Joins`]) and what they measured in each window of the measured
//! span ([`PlayersWindow`]), for runs whose players come and go
//! (`tickpack_players`' presence plan) and are judged window by window
//! rather than on the whole step's figures.
//!
//! A window's figures are attributed by time: a command by the time it was
//! due, a snapshot by its tick's nominal arrival, a join by its first
//! packet, a server frame time by the arrival of the snapshot carrying it;
//! presence is time-weighted (player-seconds in a session over the
//! window's seconds). Every latency summary comes with its histogram, so
//! windows of several load generators merge exactly ([`merge_windows`]).
//!
//! Results written before these existed read with no joins and no windows.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::{decode_histogram, encode_histogram, CommandCounts, Percentiles, SnapshotCounts};

/// How the players' joins went: a join is a handshake from its first packet
/// to the first snapshot of the session it makes (a player's first, and one
/// at each span of a presence plan; a reconnect after a lost session is
/// not one).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Joins {
    /// Joins that reached their first snapshot.
    pub done: u64,
    /// Joins that did not within [`Joins::timeout_s`] (or before the
    /// player's presence ended): players who could not get in.
    pub failed: u64,
    /// The limit a join had (seconds).
    pub timeout_s: f64,
    /// From a join's first packet to its first snapshot (µs).
    pub join_us: Percentiles,
    /// `join_us`' HdrHistogram (V2 deflate, base64); empty with no join
    /// done.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub histogram: String,
}

impl Joins {
    /// No join was done or failed (a result from before joins were
    /// counted reads so).
    pub fn is_empty(&self) -> bool {
        self.done == 0 && self.failed == 0
    }
}

/// The serialized histograms of one window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WindowHistograms {
    pub transaction_latency_us: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub join_us: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_frame_us: String,
}

/// What the players measured in one window of the measured span.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlayersWindow {
    /// Seconds from the measured span's start to the window's.
    pub start_s: f64,
    /// Its length in seconds (the last window may be shorter).
    pub length_s: f64,
    /// Players in a session, averaged over the window's time.
    pub players_present: f64,
    /// Commands due in the window, from their due time to the first
    /// snapshot reflecting them.
    pub transaction_latency_us: Percentiles,
    /// Snapshots whose tick falls in the window, against the schedule.
    pub snapshots: SnapshotCounts,
    /// Commands due in the window.
    pub commands: CommandCounts,
    /// Joins whose first packet went out in the window, done and failed.
    pub joins: u64,
    pub failed_joins: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_us: Option<Percentiles>,
    /// The servers' frame time, where the protocol carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_frame_us: Option<Percentiles>,
    pub histograms: WindowHistograms,
}

/// Why two results' windows cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowMergeError {
    #[error("window {index} starts at {a} s in one result and {b} s in the other")]
    Start { index: usize, a: String, b: String },
    #[error("window {index}: its {field} histogram is unreadable: {why}")]
    Histogram {
        index: usize,
        field: &'static str,
        why: String,
    },
}

/// Adds the windows of `from` into `into`, window by window (the same
/// index is the same time: both runs had the same window length); a
/// window only one side has is kept as it is. Counts and presence are
/// summed, histograms added and the summaries recomputed from them.
pub fn merge_windows(
    into: &mut Vec<PlayersWindow>,
    from: &[PlayersWindow],
) -> Result<(), WindowMergeError> {
    for (index, w) in from.iter().enumerate() {
        let Some(m) = into.get_mut(index) else {
            into.push(w.clone());
            continue;
        };
        if (m.start_s - w.start_s).abs() > 1e-6 {
            return Err(WindowMergeError::Start {
                index,
                a: m.start_s.to_string(),
                b: w.start_s.to_string(),
            });
        }
        m.length_s = m.length_s.max(w.length_s);
        m.players_present += w.players_present;
        m.snapshots.expected += w.snapshots.expected;
        m.snapshots.received += w.snapshots.received;
        m.snapshots.lost += w.snapshots.lost;
        m.commands.sent += w.commands.sent;
        m.commands.reflected += w.commands.reflected;
        m.commands.lost += w.commands.lost;
        m.joins += w.joins;
        m.failed_joins += w.failed_joins;
        let h = &mut m.histograms;
        for (field, sum, add) in [
            (
                "transaction_latency_us",
                &mut h.transaction_latency_us,
                &w.histograms.transaction_latency_us,
            ),
            ("join_us", &mut h.join_us, &w.histograms.join_us),
            (
                "server_frame_us",
                &mut h.server_frame_us,
                &w.histograms.server_frame_us,
            ),
        ] {
            add_encoded(sum, add).map_err(|why| WindowMergeError::Histogram {
                index,
                field,
                why,
            })?;
        }
        let summary = |s: &str| -> Option<Percentiles> {
            let h = decode_histogram(s).ok()?;
            (!h.is_empty()).then(|| Percentiles::from_histogram(&h))
        };
        m.transaction_latency_us =
            summary(&m.histograms.transaction_latency_us).unwrap_or_default();
        m.join_us = summary(&m.histograms.join_us);
        m.server_frame_us = summary(&m.histograms.server_frame_us);
    }
    Ok(())
}

/// `sum` (an encoded histogram, or empty) plus `add` (the same), encoded.
pub(crate) fn add_encoded(sum: &mut String, add: &str) -> Result<(), String> {
    if add.is_empty() {
        return Ok(());
    }
    let b = decode_histogram(add).map_err(|e| e.to_string())?;
    if sum.is_empty() {
        *sum = encode_histogram(&b);
        return Ok(());
    }
    let mut a: Histogram<u64> = decode_histogram(sum).map_err(|e| e.to_string())?;
    a.add(&b).map_err(|e| format!("{e:?}"))?;
    *sum = encode_histogram(&a);
    Ok(())
}

/// Adds the joins of `from` into `into`: counts summed, the histogram
/// added and its summary recomputed; the limit is the larger.
pub fn merge_joins(into: &mut Joins, from: &Joins) -> Result<(), String> {
    into.done += from.done;
    into.failed += from.failed;
    into.timeout_s = into.timeout_s.max(from.timeout_s);
    add_encoded(&mut into.histogram, &from.histogram)?;
    if !into.histogram.is_empty() {
        let h = decode_histogram(&into.histogram).map_err(|e| e.to_string())?;
        into.join_us = Percentiles::from_histogram(&h);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{new_histogram, record};

    fn window(start_s: f64, latencies: &[u64], present: f64) -> PlayersWindow {
        let mut h = new_histogram();
        for &v in latencies {
            record(&mut h, v);
        }
        PlayersWindow {
            start_s,
            length_s: 5.0,
            players_present: present,
            transaction_latency_us: Percentiles::from_histogram(&h),
            commands: CommandCounts {
                sent: latencies.len() as u64,
                reflected: latencies.len() as u64,
                lost: 0,
            },
            joins: 1,
            histograms: WindowHistograms {
                transaction_latency_us: encode_histogram(&h),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn windows_merge_by_time_with_percentiles_of_all_samples() {
        let mut a = vec![window(0.0, &[1_000, 2_000], 3.0), window(5.0, &[10], 2.5)];
        let b = [
            window(0.0, &[90_000], 1.0),
            window(5.0, &[20], 0.5),
            window(10.0, &[30], 1.0),
        ];
        merge_windows(&mut a, &b).unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].players_present, 4.0);
        assert_eq!(a[0].commands.sent, 3);
        assert_eq!(a[0].joins, 2);
        assert_eq!(a[0].transaction_latency_us.count, 3);
        assert!(a[0].transaction_latency_us.max >= 89_000);
        assert_eq!(a[2].start_s, 10.0);
        let shifted = [window(1.0, &[5], 1.0)];
        assert!(matches!(
            merge_windows(&mut a, &shifted),
            Err(WindowMergeError::Start { index: 0, .. })
        ));
    }

    #[test]
    fn results_without_joins_or_windows_read_as_none() {
        let j: Joins = serde_json::from_str("{\"done\":2,\"failed\":1,\"timeout_s\":3.0,\"join_us\":{\"p50\":1,\"p90\":1,\"p99\":1,\"p999\":1,\"max\":1,\"mean\":1.0,\"count\":2}}").unwrap();
        assert!(j.histogram.is_empty());
        assert!(!j.is_empty());
        assert!(Joins::default().is_empty());
    }
}
