//! The measured window cut into windows of a fixed length, each with its
//! own figures: what a run whose players come and go is judged on, window
//! by window ([`tickpack_report::windows`] is the result's side).
//!
//! Each figure goes to the window of its time: a command's to the window
//! it was due in, a snapshot's to its tick's nominal arrival
//! ([`crate::coverage`]), a join's to its first packet, a frame time to
//! the snapshot that carried it; presence is time-weighted (the time each
//! player spent in a session, cut at the windows' edges).
//!
//! Memory is bounded: at most [`MAX_WINDOWS`] windows (more are refused
//! when the settings are checked); the counters of every window are made
//! with the recorder, and a window's histograms when it first records a
//! value (a few allocations per window and thread, none per datagram).
//! Threads keep their own and [`Windows::merge`] adds them up.

use hdrhistogram::Histogram;
use tickpack_report::{
    encode_histogram, record, CommandCounts, Percentiles, PlayersWindow, SnapshotCounts,
    WindowHistograms,
};

/// The most windows a run may keep.
pub const MAX_WINDOWS: usize = 1_000;

/// A window's histograms: 1 µs to 60 s at 2 significant digits (1 %), a
/// tenth of the whole run's size, as many windows are kept.
fn window_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 2).expect("static bounds are valid")
}

fn add_to(h: &mut Option<Histogram<u64>>, v: u64) {
    record(h.get_or_insert_with(window_histogram), v);
}

/// One window's figures.
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub transaction: Option<Histogram<u64>>,
    pub join: Option<Histogram<u64>>,
    pub frame: Option<Histogram<u64>>,
    pub snapshots_received: u64,
    pub snapshots_lost: u64,
    pub commands_sent: u64,
    pub commands_reflected: u64,
    pub commands_lost: u64,
    pub joins: u64,
    pub failed_joins: u64,
    /// Microseconds players spent in a session in this window, summed.
    pub present_us: u64,
}

/// Every window of a run (none when the run keeps none).
#[derive(Debug, Clone, Default)]
pub struct Windows {
    /// The measured window, `[start, end)` (µs).
    span: (u64, u64),
    /// Each window's length (µs); 0: no windows.
    len_us: u64,
    rows: Vec<Window>,
}

impl Windows {
    /// No windows: every call records nothing.
    pub fn off() -> Self {
        Self::default()
    }

    /// The measured window `span` cut into windows of `len_us` (the last
    /// one may be shorter), at most [`MAX_WINDOWS`].
    pub fn new(span: (u64, u64), len_us: u64) -> Self {
        if len_us == 0 || span.1 <= span.0 {
            return Self::off();
        }
        let n = ((span.1 - span.0).div_ceil(len_us) as usize).min(MAX_WINDOWS);
        Self {
            span,
            len_us,
            rows: vec![Window::default(); n],
        }
    }

    /// The windows, in order.
    pub fn rows(&self) -> &[Window] {
        &self.rows
    }

    /// The window holding time `t_us`, if any.
    pub fn at(&mut self, t_us: u64) -> Option<&mut Window> {
        if self.rows.is_empty() || t_us < self.span.0 || t_us >= self.span.1 {
            return None;
        }
        let i = ((t_us - self.span.0) / self.len_us) as usize;
        self.rows.get_mut(i)
    }

    /// Window `i`'s `[start, end)`.
    fn bounds(&self, i: usize) -> (u64, u64) {
        let a = self.span.0 + i as u64 * self.len_us;
        (a, (a + self.len_us).min(self.span.1))
    }

    /// The windows `[from, to)` overlaps, by index.
    fn overlapped(&self, from_us: u64, to_us: u64) -> std::ops::Range<usize> {
        let (from, to) = (from_us.max(self.span.0), to_us.min(self.span.1));
        if to <= from || self.rows.is_empty() {
            return 0..0;
        }
        let first = ((from - self.span.0) / self.len_us) as usize;
        let last = ((to - 1 - self.span.0) / self.len_us) as usize;
        first..last.min(self.rows.len() - 1) + 1
    }

    pub fn transaction(&mut self, due_us: u64, latency_us: u64) {
        if let Some(w) = self.at(due_us) {
            add_to(&mut w.transaction, latency_us);
            w.commands_reflected += 1;
        }
    }

    pub fn command_sent(&mut self, due_us: u64) {
        if let Some(w) = self.at(due_us) {
            w.commands_sent += 1;
        }
    }

    pub fn command_lost(&mut self, due_us: u64) {
        if let Some(w) = self.at(due_us) {
            w.commands_lost += 1;
        }
    }

    /// The commands of a schedule of one every `interval_us` from
    /// `from_us`, due before `to_us`, all lost (none could be sent), by
    /// the window each was due in: as many in all as `(to - from) /
    /// interval`.
    pub fn commands_lost_between(&mut self, from_us: u64, to_us: u64, interval_us: u64) {
        let step = interval_us.max(1);
        let count_to = |t: u64| (t.saturating_sub(from_us)) / step;
        for i in self.overlapped(from_us, to_us) {
            let (a, b) = self.bounds(i);
            let n = count_to(b.min(to_us)) - count_to(a.max(from_us));
            self.rows[i].commands_lost += n;
        }
    }

    /// `n` ticks, the first due at `first_us` and one every `step_us`,
    /// received or lost. A tick due before the first window counts in it,
    /// one due after the last in the last (the player's span, which
    /// decides what is counted at all, lies within the measured window),
    /// so the windows sum to the whole.
    pub fn ticks(&mut self, first_us: f64, n: u64, step_us: f64, received: bool) {
        if self.rows.is_empty() || n == 0 || step_us <= 0.0 {
            return;
        }
        // Ticks `k` in `[0, n)` with `first + k step` in a window `[a, b)`:
        // `k` from `ceil((a - first) / step)` to `ceil((b - first) / step)`.
        let k_at = |t: f64| (((t - first_us) / step_us).ceil().max(0.0) as u64).min(n);
        let last_us = first_us + (n - 1) as f64 * step_us;
        let (lo, hi) = (self.span.0, self.span.1 - 1);
        let clamp = |t: f64| (t.max(0.0) as u64).clamp(lo, hi);
        let last_row = self.rows.len() - 1;
        for i in self.overlapped(clamp(first_us), clamp(last_us) + 1) {
            let (a, b) = self.bounds(i);
            let from = if i == 0 { 0 } else { k_at(a as f64) };
            let to = if i == last_row { n } else { k_at(b as f64) };
            let w = &mut self.rows[i];
            if received {
                w.snapshots_received += to - from;
            } else {
                w.snapshots_lost += to - from;
            }
        }
    }

    pub fn join_done(&mut self, since_us: u64, took_us: u64) {
        if let Some(w) = self.at(since_us) {
            w.joins += 1;
            add_to(&mut w.join, took_us);
        }
    }

    pub fn join_failed(&mut self, since_us: u64) {
        if let Some(w) = self.at(since_us) {
            w.failed_joins += 1;
        }
    }

    pub fn frame(&mut self, at_us: u64, frame_us: u64) {
        if let Some(w) = self.at(at_us) {
            add_to(&mut w.frame, frame_us);
        }
    }

    /// A player was in a session over `[from, to)`.
    pub fn presence(&mut self, from_us: u64, to_us: u64) {
        for i in self.overlapped(from_us, to_us) {
            let (a, b) = self.bounds(i);
            self.rows[i].present_us += to_us.min(b) - from_us.max(a);
        }
    }

    /// Adds `o`'s windows (the same cut: another thread of the run) into
    /// these.
    pub fn merge(&mut self, o: &Windows) {
        if self.rows.is_empty() {
            *self = o.clone();
            return;
        }
        for (w, x) in self.rows.iter_mut().zip(&o.rows) {
            for (a, b) in [
                (&mut w.transaction, &x.transaction),
                (&mut w.join, &x.join),
                (&mut w.frame, &x.frame),
            ] {
                if let Some(b) = b {
                    a.get_or_insert_with(window_histogram)
                        .add(b)
                        .expect("histograms share bounds");
                }
            }
            w.snapshots_received += x.snapshots_received;
            w.snapshots_lost += x.snapshots_lost;
            w.commands_sent += x.commands_sent;
            w.commands_reflected += x.commands_reflected;
            w.commands_lost += x.commands_lost;
            w.joins += x.joins;
            w.failed_joins += x.failed_joins;
            w.present_us += x.present_us;
        }
    }

    /// The windows as the result's rows, up to `end_us` (the measured
    /// span's end, earlier if the run was interrupted).
    pub fn to_result(&self, end_us: u64) -> Vec<PlayersWindow> {
        let summary = |h: &Option<Histogram<u64>>| {
            h.as_ref()
                .filter(|h| !h.is_empty())
                .map(Percentiles::from_histogram)
        };
        let encoded = |h: &Option<Histogram<u64>>| {
            h.as_ref()
                .filter(|h| !h.is_empty())
                .map(encode_histogram)
                .unwrap_or_default()
        };
        let empty = window_histogram();
        self.rows
            .iter()
            .enumerate()
            .map(|(i, w)| (self.bounds(i), w))
            .take_while(|((a, _), _)| *a < end_us)
            .map(|((a, b), w)| {
                let b = b.min(end_us);
                let length_us = (b - a).max(1);
                PlayersWindow {
                    start_s: (a - self.span.0) as f64 / 1e6,
                    length_s: length_us as f64 / 1e6,
                    players_present: w.present_us as f64 / length_us as f64,
                    transaction_latency_us: summary(&w.transaction).unwrap_or_default(),
                    snapshots: SnapshotCounts {
                        expected: w.snapshots_received + w.snapshots_lost,
                        received: w.snapshots_received,
                        lost: w.snapshots_lost,
                    },
                    commands: CommandCounts {
                        sent: w.commands_sent,
                        reflected: w.commands_reflected,
                        lost: w.commands_lost,
                    },
                    joins: w.joins,
                    failed_joins: w.failed_joins,
                    join_us: summary(&w.join),
                    server_frame_us: summary(&w.frame),
                    histograms: WindowHistograms {
                        transaction_latency_us: match &w.transaction {
                            Some(h) => encode_histogram(h),
                            None => encode_histogram(&empty),
                        },
                        join_us: encoded(&w.join),
                        server_frame_us: encoded(&w.frame),
                    },
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_go_to_the_window_of_their_time() {
        // 10 s measured from t = 1 s, windows of 3 s: 3, 3, 3 and 1 s.
        let mut w = Windows::new((1_000_000, 11_000_000), 3_000_000);
        assert_eq!(w.rows().len(), 4);
        w.command_sent(999_999); // before the span: nowhere
        w.command_sent(1_000_000);
        w.command_sent(3_999_999);
        w.command_sent(4_000_000);
        w.transaction(10_999_999, 5_000);
        w.join_done(7_500_000, 80_000);
        w.join_failed(7_600_000);
        let r = w.rows();
        assert_eq!(
            [r[0].commands_sent, r[1].commands_sent, r[3].commands_sent],
            [2, 1, 0]
        );
        assert_eq!(r[3].commands_reflected, 1);
        assert_eq!((r[2].joins, r[2].failed_joins), (1, 1));
        let rows = w.to_result(11_000_000);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[3].length_s, 1.0);
        assert_eq!(rows[2].start_s, 6.0);
        assert_eq!(rows[2].join_us.unwrap().count, 1);
        assert_eq!(rows[3].transaction_latency_us.count, 1);
        // Interrupted at 5 s into the span: the windows before it.
        assert_eq!(w.to_result(6_000_000).len(), 2);
    }

    #[test]
    fn ticks_and_unsent_commands_split_at_the_edges_and_sum_to_the_whole() {
        let mut w = Windows::new((0, 1_000_000), 100_000);
        // 250 ticks 4 ms apart from 10 ms: 10..=1006 ms, the last outside.
        w.ticks(10_000.0, 250, 4_000.0, true);
        let got: Vec<u64> = w.rows().iter().map(|r| r.snapshots_received).collect();
        assert_eq!(got[0], 23, "10, 14, ..., 98 ms");
        assert_eq!(got[1], 25);
        assert_eq!(got[9], 25 + 2, "1002 and 1006 ms count in the last");
        assert_eq!(got.iter().sum::<u64>(), 250);
        w.commands_lost_between(50_000, 950_000, 10_000);
        let lost: u64 = w.rows().iter().map(|r| r.commands_lost).sum();
        assert_eq!(lost, 90);
        assert_eq!(w.rows()[0].commands_lost, 5);
        w.presence(50_000, 2_000_000);
        assert_eq!(w.rows()[0].present_us, 50_000);
        assert_eq!(w.rows()[9].present_us, 100_000);
        let rows = w.to_result(1_000_000);
        assert_eq!(rows[0].players_present, 0.5);
        assert_eq!(rows[5].players_present, 1.0);
    }

    #[test]
    fn threads_merge_window_by_window() {
        let mut a = Windows::new((0, 2_000), 1_000);
        let mut b = Windows::new((0, 2_000), 1_000);
        a.transaction(10, 100);
        b.transaction(1_500, 200);
        b.presence(0, 2_000);
        a.merge(&b);
        assert_eq!(a.rows()[0].transaction.as_ref().unwrap().len(), 1);
        assert_eq!(a.rows()[1].transaction.as_ref().unwrap().len(), 1);
        assert_eq!(a.rows()[1].present_us, 1_000);
        let mut off = Windows::off();
        off.command_sent(5);
        assert!(off.rows().is_empty());
        assert!(off.to_result(10).is_empty());
    }
}
