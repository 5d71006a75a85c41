//! One instance's game query (`q3`, `a2s` health checks), sans-I/O: a
//! session of the game query layer (`tickpack_game::query`: what to send,
//! what an answer says, one query in flight, its timeout, the A2S
//! challenge round trip, answers matched to their query) and what the host
//! keeps of it: the map, players and bots for the status, and the round
//! trips in an HdrHistogram (microseconds) for the status and the guard.
//! The socket, the clock and the liveness rules are `health.rs`'s.
//!
//! - Queries are due every check interval from the instance's start
//!   ([`QUERY_INTERVAL`] unless its definition's `[health]` says
//!   otherwise; ioq3 answers one query a second per source address after
//!   a burst of 10, DarkPlaces one a second), and time out after as long.
//! - Time is the supervisor's monotonic clock since it started; replies
//!   are timed with the kernel's receive stamp (`health.rs` converts it),
//!   so the supervisor's 50 ms poll does not blur them.
//! - A sign of life is any answer of the instance's protocol (also one
//!   that came late or matches no query of ours) and an A2S challenge the
//!   query in flight was waiting for; a server that only ever sends
//!   challenges is asked again at most
//!   [`tickpack_game::query::MAX_CHALLENGES`] times per query.

use std::time::Duration;

use hdrhistogram::Histogram;
use tickpack_game::query::{Event, Facts, Heard, Query, Schedule, Session};

use crate::launch::Health;
use crate::status::LatencySummary;

/// How often an instance is asked (and how long a query waits) by default.
pub const QUERY_INTERVAL: Duration = Duration::from_secs(2);

/// One instance's query session and what it found.
#[derive(Debug)]
pub struct Probe {
    /// `None` for the health checks that are no game query.
    query: Option<Query>,
    /// How often it is asked (and how long a query waits).
    interval: Duration,
    /// The current run of the server's session (none before it started).
    session: Option<Session>,
    /// Round trips, microseconds.
    latency: Histogram<u64>,
    pub map: Option<String>,
    /// Humans and bots.
    pub players: Option<u8>,
    pub bots: Option<u8>,
    /// The longest round trip since the guard last asked.
    recent_max_us: Option<u64>,
    /// The last round trip.
    last_us: Option<u64>,
}

impl Probe {
    #[cfg(test)]
    pub fn new(kind: Health) -> Probe {
        Probe::with_interval(kind, QUERY_INTERVAL)
    }

    /// Asked every `interval` (the check's timing).
    pub fn with_interval(kind: Health, interval: Duration) -> Probe {
        Probe {
            query: kind.query().map(|p| p.info()),
            interval,
            session: None,
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
            map: None,
            players: None,
            bots: None,
            recent_max_us: None,
            last_us: None,
        }
    }

    /// The server (re)started at `now`: a new session whose first query is
    /// due at once, and what the last run told is forgotten (the round
    /// trips so far are kept).
    pub fn reset(&mut self, now: Duration) {
        let schedule = Schedule {
            interval: self.interval,
            timeout: self.interval,
        };
        self.session = self.query.map(|q| Session::new(q, schedule, now));
        self.map = None;
        self.players = None;
        self.bots = None;
        self.recent_max_us = None;
        self.last_us = None;
    }

    /// If a datagram is due at `now` (a query, or an A2S query again with
    /// its challenge), writes it to `out` and returns true; call again
    /// until false.
    pub fn poll_transmit(&mut self, now: Duration, out: &mut Vec<u8>) -> bool {
        let Some(s) = &mut self.session else {
            return false;
        };
        s.handle_timeout(now);
        s.poll_transmit(now, out)
    }

    /// Digests a datagram from the instance, received at `at`; true if it
    /// is a sign of life.
    #[cfg(test)]
    pub fn handle(&mut self, at: Duration, datagram: &[u8]) -> bool {
        match self.query {
            Some(q) => self.handle_heard(at, q.decode(datagram)),
            None => false,
        }
    }

    /// The query it asks, which its answers are decoded as (`None`: no
    /// game query).
    pub fn query(&self) -> Option<Query> {
        self.query
    }

    /// Digests what a datagram from the instance, received at `at`, was
    /// decoded as (by the supervisor's decoder, [`super::decoder`]); true
    /// if it is a sign of life.
    pub fn handle_heard(&mut self, at: Duration, heard: Heard) -> bool {
        let Some(s) = &mut self.session else {
            return false;
        };
        let Some(event) = s.handle_heard(at, heard) else {
            return false;
        };
        if let Event::Answered { rtt, .. } = &event {
            let us = (rtt.as_micros() as u64).max(1);
            let _ = self.latency.record(us);
            self.recent_max_us = Some(self.recent_max_us.map_or(us, |m| m.max(us)));
            self.last_us = Some(us);
        }
        if let Some(f) = event.facts() {
            self.learn(f);
        }
        true
    }

    fn learn(&mut self, f: &Facts) {
        let u8_sat = |n: u32| u8::try_from(n).unwrap_or(u8::MAX);
        self.map = Some(f.map.clone());
        self.players = Some(u8_sat(f.players));
        self.bots = f.bots.map(u8_sat);
    }

    /// The longest round trip since the last call (the guard's per-period
    /// query signal), else the last one measured.
    pub fn take_recent_max(&mut self) -> Option<u64> {
        self.recent_max_us.take().or(self.last_us)
    }

    /// The round trips so far (none before the first).
    pub fn latency(&self) -> Option<LatencySummary> {
        let h = &self.latency;
        (!h.is_empty()).then(|| LatencySummary {
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
            count: h.len(),
        })
    }
}

#[cfg(test)]
mod tests;
