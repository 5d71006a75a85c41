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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_first_value_and_stops_polling() {
        let mut calls = 0;
        let got = wait_until(Duration::from_secs(5), Duration::ZERO, || {
            calls += 1;
            (calls == 3).then_some(calls)
        });
        assert_eq!(got, Some(3));
        assert_eq!(calls, 3);
    }

    #[test]
    fn gives_up_after_the_deadline_having_polled_at_least_once() {
        let mut calls = 0;
        let got: Option<()> = wait_until(Duration::ZERO, Duration::ZERO, || {
            calls += 1;
            None
        });
        assert_eq!(got, None);
        assert_eq!(calls, 1);
    }
}
