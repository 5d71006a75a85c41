//! One target's queries for the prober: a [`Session`] of the game query
//! layer (`tickpack_game::query`: schedule, the query in flight, timeout,
//! the A2S challenge round trip, counts) on the prober's microsecond clock,
//! and the prober's own figures (an HdrHistogram of round trips in µs, the
//! server's facts from its last answer, counts as the result schema keeps
//! them). Sans-I/O, driven with the time passed in (tested on a virtual
//! clock).
//!
//! The rules are the session's: one query in flight, its timeout capped at
//! the interval; an answer at or after the timeout is lost (counted in
//! `late` too), never a sample; A2S's challenge makes the query go again at
//! once, timed from the re-send, at most
//! [`tickpack_game::query::MAX_CHALLENGES`] times; queries on a fixed
//! schedule with no catch-up burst. On top, the prober's: no query starts
//! at or after the stop time, and [`QueryTarget::finish`] leaves a query
//! still in flight at an interrupted run's end uncounted.

use std::net::SocketAddr;
use std::time::Duration;

use hdrhistogram::Histogram;
use tickpack_game::query::{Event, Facts, Protocol, Schedule, Session};
use tickpack_report::probe::{QueryCounts, ServerFacts};

/// How often and how patiently to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeSettings {
    /// Between two queries to one target, µs.
    pub interval_us: u64,
    /// A reply later than this is lost, µs (capped at `interval_us`).
    pub timeout_us: u64,
}

impl ProbeSettings {
    /// 2 s between queries (ioq3 allows one a second per source address
    /// after a burst, shared with the host's own health checks), 1 s timeout.
    pub const DEFAULT: ProbeSettings = ProbeSettings {
        interval_us: 2_000_000,
        timeout_us: 1_000_000,
    };

    /// The timeout actually applied.
    pub fn effective_timeout_us(&self) -> u64 {
        self.schedule().effective_timeout().as_micros() as u64
    }

    /// As the query layer takes it.
    pub fn schedule(&self) -> Schedule {
        Schedule {
            interval: us(self.interval_us),
            timeout: us(self.timeout_us),
        }
    }
}

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

/// What a server said, as the result schema keeps it (bots 0 when the
/// answer does not say).
pub fn server_facts(f: &Facts) -> ServerFacts {
    ServerFacts {
        name: f.name.clone(),
        map: f.map.clone(),
        players: Some(f.players),
        max_players: f.max_players,
        bots: f.bots.unwrap_or(0),
    }
}

/// One target: its session and its figures.
#[derive(Debug, Clone)]
pub struct QueryTarget {
    pub addr: SocketAddr,
    protocol: Protocol,
    session: Session,
    hist: Histogram<u64>,
    facts: Option<ServerFacts>,
}

impl QueryTarget {
    /// A target whose first query is due at `first_us`; none starts at or
    /// after `stop_us`.
    pub fn new(
        addr: SocketAddr,
        protocol: Protocol,
        settings: ProbeSettings,
        first_us: u64,
        stop_us: u64,
    ) -> Self {
        let mut session = Session::new(protocol.info(), settings.schedule(), us(first_us));
        session.stop_at(us(stop_us));
        QueryTarget {
            addr,
            protocol,
            session,
            hist: tickpack_report::new_histogram(),
            facts: None,
        }
    }

    /// If a datagram is due at `now` (µs), writes it to `out` (cleared
    /// first) and returns true; call again until false. Also times out the
    /// query in flight.
    pub fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool {
        self.session.handle_timeout(us(now_us));
        self.session.poll_transmit(us(now_us), out)
    }

    /// A datagram from the target arrived at `now` (µs).
    pub fn handle(&mut self, now_us: u64, datagram: &[u8]) {
        if let Some(Event::Answered { rtt, facts }) = self.session.handle(us(now_us), datagram) {
            tickpack_report::record(&mut self.hist, rtt.as_micros() as u64);
            self.facts = Some(server_facts(&facts));
        }
    }

    /// When `poll_transmit` next has something to do (`u64::MAX`: never;
    /// 0: now).
    pub fn next_deadline(&self) -> u64 {
        self.session
            .next_timeout()
            .map_or(u64::MAX, |t| t.as_micros().min(u128::from(u64::MAX)) as u64)
    }

    /// No query will start at or after `at` (an interrupted run).
    pub fn stop_at(&mut self, at_us: u64) {
        self.session.stop_at(us(at_us));
    }

    /// True when no query is in flight.
    pub fn idle(&self) -> bool {
        self.session.idle()
    }

    /// Ends the run at `now`: a query whose time is up is lost; one still
    /// in flight (an interrupted run) is not counted at all.
    pub fn finish(&mut self, now_us: u64) {
        self.session.handle_timeout(us(now_us));
        self.session.abandon();
        self.session.stop_at(Duration::ZERO);
    }

    pub fn counts(&self) -> QueryCounts {
        let c = self.session.counts();
        QueryCounts {
            sent: c.sent,
            answered: c.answered,
            lost: c.timed_out,
            late: c.late,
            challenges: c.challenges,
        }
    }

    /// Round trips of answered queries, µs.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// What the server said in its last reply.
    pub fn facts(&self) -> Option<&ServerFacts> {
        self.facts.as_ref()
    }

    /// Datagrams that answered no query of ours.
    pub fn stray(&self) -> u64 {
        self.session.counts().stray
    }

    /// Its figures as a run hands them back.
    pub fn figures(&self) -> crate::TargetFigures {
        crate::TargetFigures {
            addr: self.addr,
            hist: self.hist.clone(),
            counts: self.counts(),
            facts: self.facts.clone(),
            last_error: None,
        }
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
}

#[cfg(test)]
mod tests;
