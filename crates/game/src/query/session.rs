//! [`Session`]: one target's queries as a state machine, in quinn's shape:
//! no socket, no clock. The caller passes the time in and pulls datagrams
//! out.
//!
//! Time is a [`Duration`] since an epoch the caller picks and keeps (its
//! monotonic clock's reading, a run's start, a test's virtual zero): the
//! prober keeps its microsecond clock, the host converts the kernel's
//! receive stamps, tests count in plain milliseconds. A time earlier than
//! one already seen is taken as it is, never a panic (a round trip is then
//! 0).
//!
//! Rules (the prober's, kept as they were):
//! - Queries are due on a fixed schedule, [`Schedule::interval`] apart
//!   from the first due time; a caller that fell behind sends once at
//!   once and the schedule starts again from there (no catch-up burst, so
//!   servers' rate limits hold). None starts at or after [`Session::stop_at`].
//! - At most one query in flight. Its timeout is capped at the interval, so
//!   a query is answered or timed out before the next is due: A2S answers
//!   carry no id, and an A2S answer is the answer to the query in flight.
//!   q3 answers echo the query's id ([`query_id`]) and must match it.
//! - The round trip runs from the time passed to the
//!   [`Session::poll_transmit`] that sent the query (for A2S, from the
//!   re-send with the challenge) to the time passed to [`Session::handle`].
//!   An answer at or after the timeout is never a sample: it is
//!   [`Event::Late`] if it answers the query that timed out last, else
//!   [`Event::Unmatched`] (a duplicate, an older query's), counted stray.
//! - A2S: `S2C_CHALLENGE` to the query in flight makes it go again at once
//!   with that challenge, which is kept for later queries; at most
//!   [`MAX_CHALLENGES`] per query (a server that only ever sends
//!   challenges cannot keep the asker busy), then it is left to time out.
//!
//! Order at every wake-up: [`Session::handle`] each datagram from the
//! target (with its receive time), [`Session::handle_timeout`], then
//! [`Session::poll_transmit`] until it returns false and send each
//! datagram; sleep until [`Session::next_timeout`] or a datagram. The
//! counts ([`Counts`]) are complete whichever call noticed a timeout first.

use std::time::Duration;

use super::facts::Facts;
use super::heard::Heard;
use super::protocol::{Protocol, Query};

/// `S2C_CHALLENGE` answers one query may get before it is left to time out.
pub const MAX_CHALLENGES: u32 = 2;

/// The id a session's query number `seq` carries (q3 servers echo it).
pub fn query_id(seq: u64) -> String {
    format!("tp{seq}")
}

/// How often and how patiently to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Between two queries' due times.
    pub interval: Duration,
    /// An answer this late or later is not a sample (capped at `interval`).
    pub timeout: Duration,
}

impl Schedule {
    /// The timeout applied: at most the interval, at least 1 µs.
    pub fn effective_timeout(&self) -> Duration {
        self.timeout
            .min(self.interval)
            .max(Duration::from_micros(1))
    }

    /// The due time after a query due at `due` went out at `now`: one
    /// interval later, or one interval after `now` when that has passed
    /// already (no catch-up burst, so servers' rate limits hold).
    pub fn next_due(&self, due: Duration, now: Duration) -> Duration {
        let next = due.saturating_add(self.interval);
        if next <= now {
            now.saturating_add(self.interval)
        } else {
            next
        }
    }
}

/// What happened to one target's queries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Queries sent (an A2S re-send with the challenge is the same query).
    pub sent: u64,
    /// Answered before the timeout: a round trip each.
    pub answered: u64,
    /// Not answered before the timeout, `late` ones included.
    pub timed_out: u64,
    /// Of the timed out, those whose answer came after all.
    pub late: u64,
    /// A2S `S2C_CHALLENGE`s that made a query go again.
    pub challenges: u64,
    /// Datagrams that answered no query: junk, other protocols, answers
    /// with another id, duplicates, challenges nobody waited for.
    pub stray: u64,
}

/// What a call observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The query in flight was answered.
    Answered { rtt: Duration, facts: Facts },
    /// A2S asked for a challenge: the query goes again at once
    /// ([`Session::poll_transmit`]).
    Challenged,
    /// The answer to the query that timed out last: the server lives, but
    /// this is no round trip.
    Late { facts: Facts },
    /// An answer that matches no query (a duplicate, an older query's): the
    /// server lives; counted stray.
    Unmatched { facts: Facts },
    /// The query in flight timed out.
    TimedOut,
}

impl Event {
    /// What the server said, for the events that carry an answer.
    pub fn facts(&self) -> Option<&Facts> {
        match self {
            Event::Answered { facts, .. } | Event::Late { facts } | Event::Unmatched { facts } => {
                Some(facts)
            }
            Event::Challenged | Event::TimedOut => None,
        }
    }
}

#[derive(Debug, Clone)]
struct InFlight {
    seq: u64,
    sent: Duration,
    challenges: u32,
    /// A2S: the challenge came; send again now.
    resend: bool,
}

/// One target's queries: schedule, the query in flight, timeout, the A2S
/// challenge, counts.
#[derive(Debug, Clone)]
pub struct Session {
    query: Query,
    schedule: Schedule,
    next_due: Duration,
    /// No query starts at or after this.
    stop: Duration,
    /// The number of the last query sent (0: none yet).
    seq: u64,
    in_flight: Option<InFlight>,
    /// The last query that timed out (its answer would be late).
    expired: Option<u64>,
    /// A timeout noticed outside `handle_timeout`, not yet reported.
    unreported_timeout: bool,
    a2s_challenge: Option<u32>,
    counts: Counts,
}

impl Session {
    /// A session asking `query`, the first time at `first_due`.
    pub fn new(query: Query, schedule: Schedule, first_due: Duration) -> Session {
        Session {
            query,
            schedule,
            next_due: first_due,
            stop: Duration::MAX,
            seq: 0,
            in_flight: None,
            expired: None,
            unreported_timeout: false,
            a2s_challenge: None,
            counts: Counts::default(),
        }
    }

    /// If a datagram is due at `now` (a query, or an A2S query again with
    /// its challenge), writes it to `out` (cleared first) and returns true;
    /// call again until false.
    pub fn poll_transmit(&mut self, now: Duration, out: &mut Vec<u8>) -> bool {
        out.clear();
        self.expire(now);
        if let Some(f) = &mut self.in_flight {
            if !f.resend {
                return false;
            }
            f.resend = false;
            f.sent = now;
            let id = query_id(f.seq);
            self.query.encode(&id, self.a2s_challenge, out);
            return true;
        }
        if now < self.next_due || self.next_due >= self.stop {
            return false;
        }
        self.seq += 1;
        self.counts.sent += 1;
        self.in_flight = Some(InFlight {
            seq: self.seq,
            sent: now,
            challenges: 0,
            resend: false,
        });
        self.next_due = self.schedule.next_due(self.next_due, now);
        self.query
            .encode(&query_id(self.seq), self.a2s_challenge, out);
        true
    }

    /// A datagram from the target, received at `now`. `None`: it meant
    /// nothing to this session (counted stray).
    pub fn handle(&mut self, now: Duration, datagram: &[u8]) -> Option<Event> {
        self.handle_heard(now, self.query.decode(datagram))
    }

    /// What a datagram from the target, received at `now`, was decoded
    /// as ([`Query::decode`], which may run elsewhere: the host decodes
    /// its checks' answers in a process without privilege). `None`: it
    /// meant nothing to this session (counted stray).
    pub fn handle_heard(&mut self, now: Duration, heard: Heard) -> Option<Event> {
        self.expire(now);
        match heard {
            Heard::Answer { id, facts } => {
                let protocol = self.query.protocol();
                let answers = |seq: u64| match &id {
                    Some(id) => *id == query_id(seq),
                    None => protocol == Protocol::A2s,
                };
                match &self.in_flight {
                    Some(f) if !f.resend && answers(f.seq) => {
                        let rtt = now.saturating_sub(f.sent);
                        self.counts.answered += 1;
                        self.in_flight = None;
                        Some(Event::Answered { rtt, facts })
                    }
                    _ => match self.expired {
                        Some(seq) if answers(seq) => {
                            self.counts.late += 1;
                            self.expired = None;
                            Some(Event::Late { facts })
                        }
                        _ => {
                            self.counts.stray += 1;
                            Some(Event::Unmatched { facts })
                        }
                    },
                }
            }
            Heard::Challenge(c) => match &mut self.in_flight {
                Some(f)
                    if self.query.protocol() == Protocol::A2s
                        && !f.resend
                        && f.challenges < MAX_CHALLENGES =>
                {
                    f.challenges += 1;
                    f.resend = true;
                    self.a2s_challenge = Some(c);
                    self.counts.challenges += 1;
                    Some(Event::Challenged)
                }
                _ => {
                    self.counts.stray += 1;
                    None
                }
            },
            Heard::NotOurs => {
                self.counts.stray += 1;
                None
            }
        }
    }

    /// Times out the query in flight if its time is up at `now`; reports
    /// a timeout noticed earlier by another call too.
    pub fn handle_timeout(&mut self, now: Duration) -> Option<Event> {
        self.expire(now);
        std::mem::take(&mut self.unreported_timeout).then_some(Event::TimedOut)
    }

    /// When `poll_transmit` or `handle_timeout` next has something to do:
    /// `Duration::ZERO` when a re-send is due at once, `None` when nothing
    /// ever will (stopped, nothing in flight).
    pub fn next_timeout(&self) -> Option<Duration> {
        match &self.in_flight {
            Some(f) if f.resend => Some(Duration::ZERO),
            Some(f) => Some(f.sent.saturating_add(self.schedule.effective_timeout())),
            None if self.next_due < self.stop => Some(self.next_due),
            None => None,
        }
    }

    /// No query starts at or after `at` (the end of a run, an interruption).
    pub fn stop_at(&mut self, at: Duration) {
        self.stop = self.stop.min(at);
    }

    /// Forgets the query in flight as if it had never been sent (an
    /// interrupted run does not count a query it did not wait for).
    /// Returns whether there was one.
    pub fn abandon(&mut self) -> bool {
        let had = self.in_flight.take().is_some();
        if had {
            self.counts.sent -= 1;
        }
        had
    }

    /// True when no query is in flight.
    pub fn idle(&self) -> bool {
        self.in_flight.is_none()
    }

    /// The number of the last query sent (0 before the first); its id is
    /// [`query_id`] of it.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    pub fn query(&self) -> Query {
        self.query
    }

    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// Counts the query in flight as timed out if its time is up at `now`.
    fn expire(&mut self, now: Duration) {
        if let Some(f) = &self.in_flight {
            let deadline = f.sent.saturating_add(self.schedule.effective_timeout());
            if !f.resend && now >= deadline {
                self.counts.timed_out += 1;
                self.expired = Some(f.seq);
                self.in_flight = None;
                self.unreported_timeout = true;
            }
        }
    }
}

#[cfg(test)]
mod tests;
