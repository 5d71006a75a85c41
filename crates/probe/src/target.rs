//! One target's queries, sans-I/O: when the next query is due, which query
//! is in flight, when it times out, the A2S challenge round trip, and the
//! figures (an HdrHistogram of round trips in µs, sent/answered/lost).
//!
//! Rules:
//! - One query in flight per target. The timeout is capped at the
//!   interval, so a query is answered or lost before the next is sent, and
//!   a reply can only belong to the query in flight.
//! - A reply at or after the timeout is lost (counted in `late` too), never
//!   a sample.
//! - A2S: a query answered with `S2C_CHALLENGE` is sent again at once with
//!   that challenge; its round trip (and its timeout) runs from the re-send,
//!   and the challenge is kept for the next queries (a server that wants a
//!   new one says so again). At most [`MAX_CHALLENGES`] per query.
//! - Queries are sent on a fixed schedule (`interval` apart) from the first
//!   one; a loop that fell behind sends at once and starts the schedule
//!   again from there (no catch-up burst, so rate limits hold).

use std::net::SocketAddr;

use hdrhistogram::Histogram;
use tickpack_report::probe::{QueryCounts, ServerFacts};

use crate::protocol::{decode_answer, encode_request, q3_id, Answer, Protocol};

/// `S2C_CHALLENGE` answers one query may get before it is left to time out.
pub const MAX_CHALLENGES: u32 = 2;

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
        self.timeout_us.min(self.interval_us).max(1)
    }
}

#[derive(Debug, Clone)]
struct InFlight {
    seq: u64,
    sent_us: u64,
    challenges: u32,
    /// A2S: the challenge came; send again now.
    resend: bool,
}

/// One target: its schedule, its query in flight and its figures.
#[derive(Debug, Clone)]
pub struct QueryTarget {
    pub addr: SocketAddr,
    protocol: Protocol,
    settings: ProbeSettings,
    next_send_us: u64,
    /// No query starts at or after this time.
    stop_us: u64,
    seq: u64,
    in_flight: Option<InFlight>,
    /// The last query that timed out (a late reply to it is `late`).
    expired: Option<u64>,
    a2s_challenge: Option<u32>,
    hist: Histogram<u64>,
    counts: QueryCounts,
    facts: Option<ServerFacts>,
    /// Datagrams that answered no query of ours.
    stray: u64,
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
        QueryTarget {
            addr,
            protocol,
            settings,
            next_send_us: first_us,
            stop_us,
            seq: 0,
            in_flight: None,
            expired: None,
            a2s_challenge: None,
            hist: tickpack_report::new_histogram(),
            counts: QueryCounts::default(),
            facts: None,
            stray: 0,
        }
    }

    fn timeout_us(&self) -> u64 {
        self.settings.effective_timeout_us()
    }

    /// Counts the query in flight as lost if its time is up at `now`.
    fn expire(&mut self, now_us: u64) {
        if let Some(f) = &self.in_flight {
            if !f.resend && now_us >= f.sent_us + self.timeout_us() {
                self.counts.lost += 1;
                self.expired = Some(f.seq);
                self.in_flight = None;
            }
        }
    }

    /// If a datagram is due at `now`, writes it to `out` (cleared first)
    /// and returns true; call again until false. Also times out the query
    /// in flight.
    pub fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool {
        out.clear();
        self.expire(now_us);
        if let Some(f) = &mut self.in_flight {
            if !f.resend {
                return false;
            }
            f.resend = false;
            f.sent_us = now_us;
            encode_request(self.protocol, f.seq, self.a2s_challenge, out);
            return true;
        }
        if now_us < self.next_send_us || self.next_send_us >= self.stop_us {
            return false;
        }
        self.seq += 1;
        self.counts.sent += 1;
        self.in_flight = Some(InFlight {
            seq: self.seq,
            sent_us: now_us,
            challenges: 0,
            resend: false,
        });
        self.next_send_us += self.settings.interval_us;
        if self.next_send_us <= now_us {
            self.next_send_us = now_us + self.settings.interval_us;
        }
        encode_request(self.protocol, self.seq, self.a2s_challenge, out);
        true
    }

    /// A datagram from the target arrived at `now`.
    pub fn handle(&mut self, now_us: u64, datagram: &[u8]) {
        self.expire(now_us);
        match decode_answer(self.protocol, datagram) {
            Answer::Info { id, facts } => {
                let seq = |id: &Option<String>, s: u64| match id {
                    Some(id) => *id == q3_id(s),
                    None => self.protocol == Protocol::A2s,
                };
                match &self.in_flight {
                    Some(f) if !f.resend && seq(&id, f.seq) => {
                        tickpack_report::record(&mut self.hist, now_us - f.sent_us);
                        self.counts.answered += 1;
                        self.facts = Some(facts);
                        self.in_flight = None;
                    }
                    _ => match self.expired {
                        Some(s) if seq(&id, s) => {
                            self.counts.late += 1;
                            self.expired = None;
                        }
                        _ => self.stray += 1,
                    },
                }
            }
            Answer::Challenge(c) => match &mut self.in_flight {
                Some(f)
                    if self.protocol == Protocol::A2s
                        && !f.resend
                        && f.challenges < MAX_CHALLENGES =>
                {
                    f.challenges += 1;
                    f.resend = true;
                    self.a2s_challenge = Some(c);
                    self.counts.challenges += 1;
                }
                _ => self.stray += 1,
            },
            Answer::Other => self.stray += 1,
        }
    }

    /// When `poll_transmit` next has something to do (`u64::MAX`: never;
    /// 0: now).
    pub fn next_deadline(&self) -> u64 {
        match &self.in_flight {
            Some(f) if f.resend => 0,
            Some(f) => f.sent_us + self.timeout_us(),
            None if self.next_send_us < self.stop_us => self.next_send_us,
            None => u64::MAX,
        }
    }

    /// No query will start at or after `at` (an interrupted run).
    pub fn stop_at(&mut self, at_us: u64) {
        self.stop_us = self.stop_us.min(at_us);
    }

    /// True when no query is in flight.
    pub fn idle(&self) -> bool {
        self.in_flight.is_none()
    }

    /// Ends the run at `now`: a query whose time is up is lost; one still
    /// in flight (an interrupted run) is not counted at all.
    pub fn finish(&mut self, now_us: u64) {
        self.expire(now_us);
        if self.in_flight.take().is_some() {
            self.counts.sent -= 1;
        }
        self.stop_us = 0;
    }

    pub fn counts(&self) -> QueryCounts {
        self.counts
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
        self.stray
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
}

#[cfg(test)]
mod tests;
