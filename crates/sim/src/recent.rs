//! [`RecentWindow`]: tick lateness and frame time over the last second or
//! two, beside the since-start histograms, so a reader polling once a second
//! (the QoS guard) judges what happened lately, not since the start.
//!
//! Two one-second buckets: the current one and the one before it. The
//! bucket turns over on the first tick a second or more after it began, so
//! the figures always cover the last completed bucket and the ticks since
//! (between one and two seconds while the server ticks). Sans-I/O: the
//! caller passes the time.

use hdrhistogram::Histogram;
use tickpack_wire::RecentStats;

/// How long one bucket spans, microseconds.
pub const BUCKET_US: u64 = 1_000_000;

#[derive(Debug, Clone)]
struct Bucket {
    start_us: u64,
    lateness: Histogram<u64>,
    frame: Histogram<u64>,
}

impl Bucket {
    fn new(start_us: u64) -> Bucket {
        // Two significant digits: 1 % is finer than any QoS limit.
        let hist = || Histogram::new_with_bounds(1, 60_000_000, 2).expect("valid bounds");
        Bucket {
            start_us,
            lateness: hist(),
            frame: hist(),
        }
    }

    fn reset(&mut self, start_us: u64) {
        self.start_us = start_us;
        self.lateness.reset();
        self.frame.reset();
    }
}

/// Lateness and frame time over the last completed second and the current.
#[derive(Debug, Clone)]
pub struct RecentWindow {
    current: Bucket,
    previous: Option<Bucket>,
}

impl Default for RecentWindow {
    fn default() -> Self {
        RecentWindow::new()
    }
}

impl RecentWindow {
    pub fn new() -> RecentWindow {
        RecentWindow {
            current: Bucket::new(0),
            previous: None,
        }
    }

    /// Records a tick that started at `now_us`, `lateness_us` late; turns
    /// the bucket over first when it is a second old.
    pub fn record_tick(&mut self, now_us: u64, lateness_us: u64) {
        if self.previous.is_none() && self.current.lateness.is_empty() {
            self.current.start_us = now_us;
        } else if now_us >= self.current.start_us.saturating_add(BUCKET_US) {
            let mut old = self.previous.take().unwrap_or_else(|| Bucket::new(now_us));
            old.reset(now_us);
            self.previous = Some(std::mem::replace(&mut self.current, old));
        }
        let _ = self.current.lateness.record(lateness_us.max(1));
    }

    /// Records the frame time of the tick recorded last.
    pub fn record_frame(&mut self, frame_us: u64) {
        let _ = self.current.frame.record(frame_us.max(1));
    }

    /// The figures at `now_us` (zeros before the first tick).
    pub fn stats(&self, now_us: u64) -> RecentStats {
        let clamp = |v: u64| v.min(u64::from(u32::MAX)) as u32;
        let mut lateness = self.current.lateness.clone();
        let mut frame = self.current.frame.clone();
        let mut start = self.current.start_us;
        if let Some(p) = &self.previous {
            let _ = lateness.add(&p.lateness);
            let _ = frame.add(&p.frame);
            start = p.start_us;
        }
        if lateness.is_empty() {
            return RecentStats::default();
        }
        RecentStats {
            window_ms: clamp(now_us.saturating_sub(start) / 1000),
            lateness_p99_us: clamp(lateness.value_at_quantile(0.99)),
            lateness_max_us: clamp(lateness.max()),
            frame_p99_us: clamp(frame.value_at_quantile(0.99)),
            frame_max_us: clamp(frame.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_tick_leaves_the_window_after_two_seconds() {
        let mut w = RecentWindow::new();
        let mut now = 10_000_000;
        // One 20 ms late tick among on-time 100 Hz ticks.
        w.record_tick(now, 20_000);
        w.record_frame(900);
        for _ in 0..99 {
            now += 10_000;
            w.record_tick(now, 50);
            w.record_frame(900);
        }
        assert_eq!(w.stats(now).lateness_max_us / 1000, 20);
        for _ in 0..250 {
            now += 10_000;
            w.record_tick(now, 50);
            w.record_frame(900);
        }
        let s = w.stats(now);
        assert!(s.lateness_max_us < 100, "{s:?}");
        assert!(s.lateness_p99_us < 100, "{s:?}");
        assert!((899..=910).contains(&s.frame_p99_us), "{s:?}");
        assert!((1_000..=2_000).contains(&s.window_ms), "{s:?}");
    }

    #[test]
    fn p99_over_the_window_sees_a_percent_of_late_ticks() {
        let mut w = RecentWindow::new();
        let mut now = 0;
        for k in 0..100u64 {
            now += 10_000;
            w.record_tick(now, if k % 50 == 0 { 5_000 } else { 100 });
        }
        assert!(w.stats(now).lateness_p99_us >= 4_900);
        assert_eq!(RecentWindow::new().stats(5), RecentStats::default());
    }
}
