//! What the tick schedule promised one player against what arrived: expected
//! and lost snapshots and outages, counted from the schedule rather than
//! from the snapshots that happened to arrive.
//!
//! The server numbers its ticks by the slots of its schedule (a skipped slot
//! leaves a gap), so within one server's run the lost snapshots are exactly
//! the tick numbers the player never saw. Time between server runs (a
//! restart) and at the edges of the player's measured span, where no tick
//! numbers exist, is converted into ticks at the tick rate.
//!
//! A *piece* is one unbroken tick numbering: everything received from one
//! server process. Each piece keeps the smallest `arrival - tick * interval`
//! seen, the tick's *nominal* arrival (the earliest it could arrive): a tick
//! belongs to the span when its nominal arrival does, so a load generator
//! that read late, or a snapshot delayed by jitter, moves nothing across the
//! span's edges. Ticks are counted from the first that arrived in the span.

use std::collections::VecDeque;

use tickpack_wire::TickRate;

use crate::windows::Windows;

/// The step between the frames (or ticks) of the first snapshots a player
/// saw, each `(arrival_us, number)`: the smallest positive difference of
/// consecutive numbers (a gap is a lost one, never a smaller step); `None`
/// when no two differ.
pub fn smallest_step(learning: &[(u64, i32)]) -> Option<i32> {
    learning
        .windows(2)
        .map(|w| w[1].1 - w[0].1)
        .filter(|d| *d > 0)
        .min()
}

/// A stretch without snapshots at least this long is an outage (a player
/// notices a freeze of a tenth of a second; this is twice that). The time
/// between two server processes (a restart) is an outage however short.
pub const OUTAGE_MIN_US: u64 = 200_000;
/// Ranges of received ticks kept per piece before the oldest are settled.
const MAX_RANGES: usize = 256;

/// Counters of one player (or, summed, of many).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub received: u64,
    pub lost: u64,
    pub outages: u64,
    pub outage_total_us: u64,
    pub outage_longest_us: u64,
}

impl Tally {
    fn outage(&mut self, us: u64) {
        self.outages += 1;
        self.outage_total_us += us;
        self.outage_longest_us = self.outage_longest_us.max(us);
    }

    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &Tally) {
        self.received += o.received;
        self.lost += o.lost;
        self.outages += o.outages;
        self.outage_total_us += o.outage_total_us;
        self.outage_longest_us = self.outage_longest_us.max(o.outage_longest_us);
    }
}

struct Piece {
    id: u64,
    offset_us: f64,
    /// Inclusive ranges of ticks received at or after the span's start.
    ranges: VecDeque<(u32, u32)>,
}

#[derive(Clone, Copy)]
struct Last {
    piece: u64,
    tick: u32,
    nominal_us: f64,
}

/// The schedule's account of one player's snapshots over its span.
pub struct Coverage {
    span: (u64, u64),
    tick_us: f64,
    piece: Option<Piece>,
    pieces: u64,
    last: Option<Last>,
    pub tally: Tally,
}

impl Coverage {
    /// Counts snapshots over `span` (`[start, end)`, microseconds).
    pub fn new(span: (u64, u64)) -> Self {
        Self {
            span,
            tick_us: 0.0,
            piece: None,
            pieces: 0,
            last: None,
            tally: Tally::default(),
        }
    }

    pub fn span(&self) -> (u64, u64) {
        self.span
    }

    /// Ends the span at `end_us` if it would end later: a player made to
    /// leave before its planned end (a level change makes it join again).
    pub fn end_at(&mut self, end_us: u64) {
        self.span.1 = self.span.1.min(end_us.max(self.span.0));
    }

    /// Starts counting afresh over `span` (a player's next presence), with
    /// the tick interval learned so far; what was counted before must have
    /// been taken with [`Coverage::finish`].
    pub fn reopen(&mut self, span: (u64, u64)) {
        let tick_us = self.tick_us;
        *self = Self::new(span);
        self.tick_us = tick_us;
    }

    /// Whether `t_us` lies in the span (a command due then is measured).
    pub fn contains(&self, t_us: u64) -> bool {
        t_us >= self.span.0 && t_us < self.span.1
    }

    /// Drops from the front of `outstanding` (oldest first) every command
    /// whose loss deadline passed by `now_us` unreflected; returns how
    /// many of them were due in the span (lost, for the caller to count).
    pub fn expire<T>(
        &self,
        outstanding: &mut std::collections::VecDeque<T>,
        due_us: impl Fn(&T) -> u64,
        deadline_us: u64,
        now_us: u64,
    ) -> u64 {
        let mut lost = 0;
        self.expire_each(outstanding, due_us, deadline_us, now_us, |_| lost += 1);
        lost
    }

    /// [`Coverage::expire`], calling `lost` with the due time of each
    /// command lost.
    pub fn expire_each<T>(
        &self,
        outstanding: &mut std::collections::VecDeque<T>,
        due_us: impl Fn(&T) -> u64,
        deadline_us: u64,
        now_us: u64,
        mut lost: impl FnMut(u64),
    ) {
        while let Some(due) = outstanding.front().map(&due_us) {
            if due + deadline_us > now_us {
                break;
            }
            outstanding.pop_front();
            if self.contains(due) {
                lost(due);
            }
        }
    }

    /// `[from, to)` clipped to the span, if anything is left.
    pub fn clip(&self, from_us: u64, to_us: u64) -> Option<(u64, u64)> {
        let (a, b) = self.span;
        let (from, to) = (from_us.max(a), to_us.min(b));
        (to > from).then_some((from, to))
    }

    /// How many commands, one every `interval_us`, fall due in `[from,
    /// to)` within the span (those due while a player had no session: none
    /// could be sent, all are lost).
    pub fn due_in_span(&self, from_us: u64, to_us: u64, interval_us: u64) -> u64 {
        let (a, b) = self.span;
        let (from, to) = (from_us.max(a), to_us.min(b));
        if to <= from {
            return 0;
        }
        (to - from) / interval_us.max(1)
    }

    /// The server's tick rate, once known.
    pub fn set_tick_hz(&mut self, tick: TickRate) {
        self.tick_us = tick.interval_ns() as f64 / 1e3;
    }

    /// The server's tick interval, once known, when it is not a whole
    /// number of ticks per second (a Quake III server's frame is a whole
    /// number of milliseconds).
    pub fn set_tick_interval_us(&mut self, us: f64) {
        self.tick_us = us.max(1.0);
    }

    /// A new tick (greater than any before in this piece) arrived at
    /// `now_us`; what is settled goes to `w` too, by time.
    pub fn tick(&mut self, now_us: u64, tick: u32, w: &mut Windows) {
        if self.tick_us == 0.0 {
            return;
        }
        let id = self.pieces;
        let t_us = self.tick_us;
        let p = self.piece.get_or_insert_with(|| Piece {
            id,
            offset_us: f64::INFINITY,
            ranges: VecDeque::new(),
        });
        p.offset_us = p.offset_us.min(now_us as f64 - f64::from(tick) * t_us);
        if now_us < self.span.0 {
            return;
        }
        match p.ranges.back_mut() {
            Some((_, hi)) if tick == hi.wrapping_add(1) => *hi = tick,
            _ => p.ranges.push_back((tick, tick)),
        }
        if p.ranges.len() > MAX_RANGES {
            let (lo, hi) = p.ranges.pop_front().expect("non-empty");
            let (id, off) = (p.id, p.offset_us);
            self.settle(id, off, lo, hi, self.span.1, w);
        }
    }

    /// The server changed (a restart): what follows is a new numbering.
    pub fn new_piece(&mut self, w: &mut Windows) {
        self.close_piece(self.span.1, w);
        self.pieces += 1;
    }

    fn close_piece(&mut self, end_us: u64, w: &mut Windows) {
        if let Some(p) = self.piece.take() {
            for (lo, hi) in p.ranges {
                self.settle(p.id, p.offset_us, lo, hi, end_us, w);
            }
        }
    }

    /// Counts the ticks `lo..=hi` of piece `id` whose nominal arrival is
    /// before `end_us`, and the gap since the previous counted tick.
    fn settle(&mut self, id: u64, offset_us: f64, lo: u32, hi: u32, end_us: u64, w: &mut Windows) {
        let t = self.tick_us;
        let nominal = |tick: u32| f64::from(tick) * t + offset_us;
        if nominal(lo) >= end_us as f64 {
            return;
        }
        // The last tick whose nominal arrival is before the end.
        let last_in = ((end_us as f64 - offset_us) / t).ceil() - 1.0;
        let hi_in = if last_in < f64::from(hi) {
            (last_in as u32).max(lo)
        } else {
            hi
        };
        let first = nominal(lo);
        match self.last {
            // Same numbering: exactly the tick numbers never seen.
            Some(l) if l.piece == id => {
                let m = u64::from(lo.wrapping_sub(l.tick).wrapping_sub(1));
                self.lost(m, ((m + 1) as f64 * t) as u64);
                w.ticks(l.nominal_us + t, m, t, false);
            }
            // Another server process: the time between, in ticks; always
            // an outage.
            Some(l) => {
                let gap = (first - l.nominal_us).max(0.0);
                let m = ((gap / t).round() as u64).saturating_sub(1);
                self.tally.lost += m;
                self.tally.outage(gap as u64);
                w.ticks(l.nominal_us + t, m, t, false);
            }
            // The span's start to the first tick: slots of this grid in it.
            None => {
                let gap = (first - self.span.0 as f64).max(0.0);
                let m = (gap / t).floor() as u64;
                self.lost(m, gap as u64);
                w.ticks(self.span.0 as f64, m, t, false);
            }
        }
        self.tally.received += u64::from(hi_in - lo) + 1;
        w.ticks(first, u64::from(hi_in - lo) + 1, t, true);
        self.last = Some(Last {
            piece: id,
            tick: hi_in,
            nominal_us: nominal(hi_in),
        });
    }

    fn lost(&mut self, missing: u64, without_us: u64) {
        self.tally.lost += missing;
        if missing > 0 && without_us >= OUTAGE_MIN_US {
            self.tally.outage(without_us);
        }
    }

    /// Settles the account: the span ends at `end_us` (its planned end, or
    /// earlier if the run was interrupted). `hint` is the tick rate to
    /// assume if this player never learned the server's.
    pub fn finish(&mut self, end_us: u64, hint: TickRate, w: &mut Windows) -> Tally {
        let end_us = end_us.min(self.span.1);
        if self.tick_us == 0.0 {
            self.set_tick_hz(hint);
        }
        self.close_piece(end_us, w);
        let t = self.tick_us;
        match self.last {
            Some(l) => {
                let gap = (end_us as f64 - l.nominal_us).max(0.0);
                let missing = ((gap / t).ceil() as u64).saturating_sub(1);
                self.lost(missing, gap as u64);
                w.ticks(l.nominal_us + t, missing, t, false);
            }
            None if end_us > self.span.0 => {
                let gap = (end_us - self.span.0) as f64;
                let missing = (gap / t).round() as u64;
                self.lost(missing, gap as u64);
                w.ticks(self.span.0 as f64, missing, t, false);
            }
            None => {}
        }
        std::mem::take(&mut self.tally)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_commands_are_lost_only_when_due_in_the_span() {
        let c = Coverage::new((1_000, 5_000));
        let mut q: std::collections::VecDeque<u64> = [500, 1_500, 4_000, 9_000].into();
        // Deadline 1 000 at 6 000: the first three expired, two in the span.
        assert_eq!(c.expire(&mut q, |d| *d, 1_000, 6_000), 2);
        assert_eq!(q, [9_000]);
        assert!(c.contains(1_000) && !c.contains(5_000));
    }
}
