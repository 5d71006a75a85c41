//! Polling with a deadline.

use std::time::{Duration, Instant};

/// Calls `poll` every `every` until it returns `Some`, for at most `limit`;
/// `None` if the deadline passed first. `poll` runs at least once.
pub fn wait_until<T>(
    limit: Duration,
    every: Duration,
    mut poll: impl FnMut() -> Option<T>,
) -> Option<T> {
    let t0 = Instant::now();
    loop {
        if let Some(v) = poll() {
            return Some(v);
        }
        if t0.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(every);
    }
}
