//! The server loop's receive drain, bounded so that no flood can keep the
//! tick from running: it takes batches until the socket is empty, a budget
//! of datagrams is spent, or the clock reaches a deadline (the next tick's
//! due time), whichever comes first. The clock is read after every batch, so
//! the tick starts at most one batch late.
//!
//! [`verdict`] is the pure decision; [`drain`] runs it over any batch source
//! and clock, so both are tested without sockets or timing.

use std::io;

/// When a drain must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainLimit {
    /// Most datagrams taken in one drain.
    pub max_datagrams: usize,
    /// The drain stops once the clock reaches this (ns).
    pub deadline_ns: u64,
}

/// Why a drain stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrainEnd {
    /// A short batch: the socket had nothing more.
    Empty,
    /// [`DrainLimit::max_datagrams`] were taken.
    Budget,
    /// The clock reached [`DrainLimit::deadline_ns`].
    Deadline,
    /// The socket reported an error (the caller goes on with its tick).
    Error,
}

/// After a batch of `batch` datagrams out of `capacity`, `taken` in all so
/// far, at `now_ns`: `None` to take another batch, or why to stop.
pub fn verdict(
    limit: &DrainLimit,
    batch: usize,
    capacity: usize,
    taken: usize,
    now_ns: u64,
) -> Option<DrainEnd> {
    if batch < capacity {
        // A short batch means the socket is empty: skip the extra call.
        Some(DrainEnd::Empty)
    } else if now_ns >= limit.deadline_ns {
        Some(DrainEnd::Deadline)
    } else if taken >= limit.max_datagrams {
        Some(DrainEnd::Budget)
    } else {
        None
    }
}

/// Calls `recv_batch` (which receives and handles one batch of at most
/// `capacity` datagrams, returning how many it took) until [`verdict`] says
/// stop; returns the datagrams taken and why it stopped.
pub fn drain(
    limit: &DrainLimit,
    capacity: usize,
    mut recv_batch: impl FnMut() -> io::Result<usize>,
    mut now_ns: impl FnMut() -> u64,
) -> (usize, DrainEnd) {
    let mut taken = 0;
    loop {
        let n = match recv_batch() {
            Ok(n) => n,
            Err(_) => return (taken, DrainEnd::Error),
        };
        taken += n;
        if let Some(end) = verdict(limit, n, capacity, taken, now_ns()) {
            return (taken, end);
        }
    }
}

/// How often drains stopped for each reason, for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainCounters {
    /// Drains cut short because the tick was due.
    pub deadline: u64,
    /// Drains cut short by the datagram budget.
    pub budget: u64,
}

impl DrainCounters {
    pub fn count(&mut self, end: DrainEnd) {
        match end {
            DrainEnd::Deadline => self.deadline += 1,
            DrainEnd::Budget => self.budget += 1,
            DrainEnd::Empty | DrainEnd::Error => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const CAP: usize = 32;

    #[test]
    fn drain_of_a_socket_that_never_empties_stops_at_its_budget() {
        let limit = DrainLimit {
            max_datagrams: 1_000,
            deadline_ns: u64::MAX,
        };
        let calls = Cell::new(0);
        // A flood: every batch comes back full, and the clock stands still.
        let (taken, end) = drain(
            &limit,
            CAP,
            || {
                calls.set(calls.get() + 1);
                assert!(calls.get() < 1_000, "the drain never stopped");
                Ok(CAP)
            },
            || 0,
        );
        assert_eq!(end, DrainEnd::Budget);
        assert!((1_000..1_000 + CAP).contains(&taken), "took {taken}");
    }

    #[test]
    fn drain_of_a_socket_that_never_empties_stops_at_the_tick_deadline() {
        let limit = DrainLimit {
            max_datagrams: usize::MAX,
            deadline_ns: 1_000_000,
        };
        // Each batch takes 30 us of a virtual clock.
        let clock = Cell::new(0u64);
        let (taken, end) = drain(
            &limit,
            CAP,
            || {
                clock.set(clock.get() + 30_000);
                assert!(clock.get() < 10_000_000, "the drain ran past its deadline");
                Ok(CAP)
            },
            || clock.get(),
        );
        assert_eq!(end, DrainEnd::Deadline);
        // It stopped on the first batch that ended at or after the deadline.
        assert_eq!(clock.get(), 1_020_000);
        assert_eq!(taken, 34 * CAP);
    }

    #[test]
    fn drain_stops_at_a_short_batch_or_an_error() {
        let limit = DrainLimit {
            max_datagrams: usize::MAX,
            deadline_ns: u64::MAX,
        };
        let mut batches = [CAP, CAP, 5].into_iter();
        let r = drain(&limit, CAP, || Ok(batches.next().unwrap()), || 0);
        assert_eq!(r, (2 * CAP + 5, DrainEnd::Empty));
        let r = drain(&limit, CAP, || Err(io::Error::other("boom")), || 0);
        assert_eq!(r, (0, DrainEnd::Error));
    }

    #[test]
    fn verdict_takes_one_batch_even_past_the_deadline_and_counts_the_reason() {
        let limit = DrainLimit {
            max_datagrams: 64,
            deadline_ns: 100,
        };
        assert_eq!(verdict(&limit, CAP, CAP, CAP, 99), None);
        assert_eq!(
            verdict(&limit, CAP, CAP, CAP, 100),
            Some(DrainEnd::Deadline)
        );
        assert_eq!(verdict(&limit, CAP, CAP, 64, 0), Some(DrainEnd::Budget));
        assert_eq!(verdict(&limit, 3, CAP, 1_000, 1_000), Some(DrainEnd::Empty));
        let mut c = DrainCounters::default();
        for e in [
            DrainEnd::Deadline,
            DrainEnd::Budget,
            DrainEnd::Empty,
            DrainEnd::Deadline,
        ] {
            c.count(e);
        }
        assert_eq!((c.deadline, c.budget), (2, 1));
    }
}
