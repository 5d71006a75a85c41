//! One server's timeline over a step: when each of its seats holds a
//! player, when a seat waits for its next player, how many the envelope
//! wants, and its rounds and map changes. Built by [`crate::Curve::timeline`]
//! from a seed (no clock, no threads), read by whoever drives the players
//! and the server.
//!
//! How seats fill (an event simulation in the step's time):
//! - when the envelope wants more players, the seats empty longest join
//!   (lowest first at a tie); when it wants fewer, seats waiting for a
//!   player give up first, then the players who joined last leave;
//! - with churn, a player's session ends on its own ([`crate::Churn`]): it
//!   leaves, its seat waits for the gap, then a new player joins there;
//!   so at every moment `present + waiting == wanted`;
//! - with churn the simulation starts before the step (a burn-in of four
//!   scales, at most [`MAX_BURN_IN`]), so each server's players are
//!   already at different points of their sessions when it begins.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::Rng;

use crate::churn::Churn;
use crate::rounds::Round;

/// The longest burn-in before a step with churn.
pub const MAX_BURN_IN: Duration = Duration::from_secs(600);

/// A stretch of the step, `[from, until)` from the step's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub from: Duration,
    pub until: Duration,
}

impl Span {
    pub fn contains(&self, t: Duration) -> bool {
        self.from <= t && t < self.until
    }

    pub fn len(&self) -> Duration {
        self.until.saturating_sub(self.from)
    }

    pub fn is_empty(&self) -> bool {
        self.until <= self.from
    }
}

/// A player joining or leaving a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// Listed first at a tie: a seat's leave comes before another's join.
    Leave,
    Join,
}

/// One join or leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeatEvent {
    pub at: Duration,
    pub seat: u16,
    pub change: Change,
}

/// One server's players and rounds over a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    pub step_len: Duration,
    /// For each seat, when a player is in it, sorted and apart. A span
    /// from 0 is a player present when the step starts (connected during
    /// the warm-up); a span until `step_len` is one present at its end.
    pub seats: Vec<Vec<Span>>,
    /// For each seat, when it waits for a new player after one left on
    /// its own (churn's gap).
    pub waiting: Vec<Vec<Span>>,
    /// The players the envelope wants: `(from, count)`, the first at 0.
    pub wanted: Vec<(Duration, u16)>,
    /// The rounds that start within the step (none without rounds).
    pub rounds: Vec<Round>,
}

impl Timeline {
    /// Players present at `t`.
    pub fn present_at(&self, t: Duration) -> u16 {
        count_at(&self.seats, t)
    }

    /// Seats waiting for their next player at `t`.
    pub fn waiting_at(&self, t: Duration) -> u16 {
        count_at(&self.waiting, t)
    }

    /// Players the envelope wants at `t`.
    pub fn wanted_at(&self, t: Duration) -> u16 {
        let i = self.wanted.partition_point(|(from, _)| *from <= t);
        self.wanted[i.saturating_sub(1)].1
    }

    /// The most players present at once.
    pub fn peak(&self) -> u16 {
        let mut at: Vec<Duration> = self.seats.iter().flatten().map(|s| s.from).collect();
        at.push(Duration::ZERO);
        at.into_iter()
            .map(|t| self.present_at(t))
            .max()
            .unwrap_or(0)
    }

    /// When the server is told to change its map.
    pub fn map_changes(&self) -> Vec<Duration> {
        self.rounds
            .iter()
            .filter(|r| r.map_change)
            .map(|r| r.start)
            .collect()
    }

    /// Every join after the step's start and every leave before its end,
    /// in time order (leaves first at a tie, then by seat). Players
    /// present at 0 joined before the step; those present at its end
    /// leave when the step's players stop.
    pub fn events(&self) -> Vec<SeatEvent> {
        let mut out = vec![];
        for (seat, spans) in self.seats.iter().enumerate() {
            let seat = seat as u16;
            for s in spans {
                if !s.from.is_zero() {
                    out.push(SeatEvent {
                        at: s.from,
                        seat,
                        change: Change::Join,
                    });
                }
                if s.until < self.step_len {
                    out.push(SeatEvent {
                        at: s.until,
                        seat,
                        change: Change::Leave,
                    });
                }
            }
        }
        out.sort_by_key(|e| (e.at, e.change, e.seat));
        out
    }
}

fn count_at(spans: &[Vec<Span>], t: Duration) -> u16 {
    spans
        .iter()
        .filter(|s| s.iter().any(|s| s.contains(t)))
        .count() as u16
}

/// What a seat is doing, since when (seconds in the step's time).
#[derive(Debug, Clone, Copy)]
enum State {
    Absent { since: f64 },
    Present { from: f64 },
    Waiting { from: f64 },
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    SessionEnd,
    GapEnd,
}

/// A session's or gap's end, due at `at`; stale when the seat's token
/// moved on.
struct Due {
    at: f64,
    seq: u64,
    seat: usize,
    token: u64,
    kind: Kind,
}

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    /// Reversed: the heap pops the earliest first (then the first pushed).
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.total_cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

/// The seats' spans, in seconds, before clipping to the step.
struct Sim<'a, R: Rng> {
    state: Vec<State>,
    token: Vec<u64>,
    present: Vec<Vec<(f64, f64)>>,
    waiting: Vec<Vec<(f64, f64)>>,
    heap: BinaryHeap<Due>,
    seq: u64,
    churn: Option<(&'a Churn, R)>,
}

impl<R: Rng> Sim<'_, R> {
    fn push(&mut self, at: f64, seat: usize, kind: Kind) {
        self.seq += 1;
        self.heap.push(Due {
            at,
            seq: self.seq,
            seat,
            token: self.token[seat],
            kind,
        });
    }

    fn join(&mut self, seat: usize, t: f64) {
        self.state[seat] = State::Present { from: t };
        self.token[seat] += 1;
        if let Some((c, rng)) = &mut self.churn {
            let end = t + c.draw_s(rng);
            self.push(end, seat, Kind::SessionEnd);
        }
    }

    /// Leaves or stops waiting because the envelope wants fewer.
    fn drop_seat(&mut self, seat: usize, t: f64) {
        match self.state[seat] {
            State::Present { from } => self.present[seat].push((from, t)),
            State::Waiting { from } => self.waiting[seat].push((from, t)),
            State::Absent { .. } => return,
        }
        self.state[seat] = State::Absent { since: t };
        self.token[seat] += 1;
    }

    fn due(&mut self, d: Due) {
        if d.token != self.token[d.seat] {
            return;
        }
        match (d.kind, self.state[d.seat]) {
            (Kind::SessionEnd, State::Present { from }) => {
                self.present[d.seat].push((from, d.at));
                self.state[d.seat] = State::Waiting { from: d.at };
                self.token[d.seat] += 1;
                let gap = self.churn.as_ref().map_or(0.0, |(c, _)| c.gap_s());
                self.push(d.at + gap, d.seat, Kind::GapEnd);
            }
            (Kind::GapEnd, State::Waiting { from }) => {
                self.waiting[d.seat].push((from, d.at));
                self.join(d.seat, d.at);
            }
            _ => {}
        }
    }

    /// The envelope wants `n` players from `t`.
    fn want(&mut self, n: usize, t: f64) {
        let occupied: Vec<usize> = (0..self.state.len())
            .filter(|&s| !matches!(self.state[s], State::Absent { .. }))
            .collect();
        if n > occupied.len() {
            let mut absent: Vec<(f64, usize)> = (0..self.state.len())
                .filter_map(|s| match self.state[s] {
                    State::Absent { since } => Some((since, s)),
                    _ => None,
                })
                .collect();
            absent.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for &(_, s) in absent.iter().take(n - occupied.len()) {
                self.join(s, t);
            }
        } else if n < occupied.len() {
            // Waiting seats first, then the latest to join; the latest
            // (then the highest seat) first within each.
            let mut order: Vec<(u8, f64, usize)> = occupied
                .iter()
                .map(|&s| match self.state[s] {
                    State::Waiting { from } => (0, from, s),
                    State::Present { from } => (1, from, s),
                    State::Absent { .. } => unreachable!("occupied"),
                })
                .collect();
            order.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(b.2.cmp(&a.2)));
            for &(_, _, s) in order.iter().take(occupied.len() - n) {
                self.drop_seat(s, t);
            }
        }
    }
}

/// The seats' spans over `[0, len)` seconds: `wanted` as `(from, count)`
/// in seconds (the first at 0), with churn's sessions drawn from `rng`.
/// Returns the present and waiting spans of each seat.
pub(crate) fn simulate<R: Rng>(
    seats: u16,
    wanted: &[(f64, u16)],
    churn: Option<(&Churn, R)>,
    len: f64,
) -> (Vec<Vec<Span>>, Vec<Vec<Span>>) {
    let n = usize::from(seats);
    let burn_in = churn.as_ref().map_or(0.0, |(c, _)| {
        (4.0 * c.scale_s()).min(MAX_BURN_IN.as_secs_f64())
    });
    let mut sim = Sim {
        state: vec![
            State::Absent {
                since: f64::NEG_INFINITY
            };
            n
        ],
        token: vec![0; n],
        present: vec![vec![]; n],
        waiting: vec![vec![]; n],
        heap: BinaryHeap::new(),
        seq: 0,
        churn,
    };
    let mut changes = wanted.iter().copied().peekable();
    // The count at 0 holds through the burn-in.
    if let Some((_, first)) = changes.next() {
        sim.want(usize::from(first.min(seats)), -burn_in);
    }
    loop {
        let next_due = sim.heap.peek().map_or(f64::INFINITY, |d| d.at);
        let next_want = changes.peek().map_or(f64::INFINITY, |c| c.0);
        if next_due.min(next_want) >= len {
            break;
        }
        if next_due <= next_want {
            let d = sim.heap.pop().expect("peeked");
            sim.due(d);
        } else {
            let (t, c) = changes.next().expect("peeked");
            sim.want(usize::from(c.min(seats)), t);
        }
    }
    // Close what is open at the end.
    for s in 0..n {
        match sim.state[s] {
            State::Present { from } => sim.present[s].push((from, len)),
            State::Waiting { from } => sim.waiting[s].push((from, len)),
            State::Absent { .. } => {}
        }
    }
    let clip = |spans: Vec<Vec<(f64, f64)>>| -> Vec<Vec<Span>> {
        spans
            .into_iter()
            .map(|seat| {
                seat.into_iter()
                    .filter_map(|(a, b)| {
                        let (a, b) = (a.clamp(0.0, len), b.clamp(0.0, len));
                        let span = Span {
                            from: Duration::from_secs_f64(a),
                            until: Duration::from_secs_f64(b),
                        };
                        (!span.is_empty()).then_some(span)
                    })
                    .collect()
            })
            .collect()
    };
    (clip(sim.present), clip(sim.waiting))
}
