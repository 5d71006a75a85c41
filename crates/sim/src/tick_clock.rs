//! [`TickClock`]: when the next tick is due, pure arithmetic on a clock the
//! caller reads (ns), so the schedule is tested on a virtual clock.
//!
//! Ticks are numbered by schedule slots (`start + k * interval`): a tick
//! that runs late keeps its slot, and when the loop falls more than a whole
//! interval behind, the missed slots are skipped (not run back to back) and
//! the next tick is due at the first slot after "now". Players rely on that
//! numbering ([`crate::Server::tick`] derives the tick number from the due
//! time).

/// How many ticks' time a receive drain may take just before a tick: the
/// pre-tick drain takes at most `1 / PRE_TICK_SLICE` of the interval.
pub const PRE_TICK_SLICE: u64 = 10;

/// The tick schedule of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickClock {
    interval_ns: u64,
    due_ns: u64,
}

/// What [`TickClock::advance`] saw about the tick that just ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Advance {
    /// The tick ended after the next slot was due (it overran its slot).
    pub overran: bool,
    /// Schedule slots skipped because the loop fell more than a whole
    /// interval behind (0 when on time).
    pub skipped_slots: u64,
}

impl TickClock {
    /// A schedule that starts at `now_ns`: the first tick is due one
    /// interval later. `interval_ns` must be positive.
    pub fn new(now_ns: u64, interval_ns: u64) -> Self {
        let interval_ns = interval_ns.max(1);
        Self {
            interval_ns,
            due_ns: now_ns + interval_ns,
        }
    }

    /// A schedule of `tick_hz` ticks per second starting at `now_ns`.
    pub fn with_rate(now_ns: u64, tick_hz: tickpack_wire::TickRate) -> Self {
        Self::new(now_ns, tick_hz.interval_ns())
    }

    /// When the next tick is due (ns).
    pub fn due_ns(&self) -> u64 {
        self.due_ns
    }

    /// The time between two slots (ns).
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// Until when the receive drain just before a tick that started at
    /// `start_ns` may run (a short slice of the interval).
    pub fn pre_tick_deadline_ns(&self, start_ns: u64) -> u64 {
        start_ns + self.interval_ns / PRE_TICK_SLICE
    }

    /// Moves to the next slot after a tick that ended at `end_ns`; skips the
    /// missed slots when that is more than a whole interval late.
    pub fn advance(&mut self, end_ns: u64) -> Advance {
        let i = self.interval_ns;
        self.due_ns += i;
        let overran = end_ns > self.due_ns;
        let mut skipped_slots = 0;
        if end_ns > self.due_ns + i {
            // The first slot after end_ns, on the same grid.
            let next = end_ns + i - (end_ns - self.due_ns) % i;
            skipped_slots = (next - self.due_ns) / i;
            self.due_ns = next;
        }
        Advance {
            overran,
            skipped_slots,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hz(n: u16) -> tickpack_wire::TickRate {
        tickpack_wire::TickRate::new(n).unwrap()
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn ticks_on_time_are_due_one_interval_apart() {
        let mut c = TickClock::with_rate(5 * MS, hz(100));
        assert_eq!(c.interval_ns(), 10 * MS);
        assert_eq!(c.due_ns(), 15 * MS);
        for k in 1..=1000u64 {
            // Each tick starts on time and takes 3 ms.
            let end = c.due_ns() + 3 * MS;
            assert_eq!(c.advance(end), Advance::default());
            assert_eq!(c.due_ns(), 15 * MS + k * 10 * MS);
        }
    }

    #[test]
    fn a_late_tick_keeps_the_schedule_and_the_next_runs_at_its_slot() {
        let mut c = TickClock::new(0, 10 * MS);
        // Due at 10 ms, ends at 25 ms: past the next slot (20 ms) but less
        // than a whole interval behind it, so no slot is skipped.
        let a = c.advance(25 * MS);
        assert_eq!(
            a,
            Advance {
                overran: true,
                skipped_slots: 0
            }
        );
        assert_eq!(c.due_ns(), 20 * MS);
        // Exactly one interval behind is still not skipped.
        assert_eq!(c.advance(40 * MS).skipped_slots, 0);
        assert_eq!(c.due_ns(), 30 * MS);
    }

    #[test]
    fn a_stall_skips_the_missed_slots_and_stays_on_the_slot_grid() {
        let mut c = TickClock::new(0, 10 * MS);
        // The tick due at 10 ms ends at 57 ms (a 47 ms stall): the slots at
        // 20, 30, 40 and 50 ms are skipped; the next tick is due at 60 ms.
        let a = c.advance(57 * MS);
        assert_eq!(
            a,
            Advance {
                overran: true,
                skipped_slots: 4
            }
        );
        assert_eq!(c.due_ns(), 60 * MS);
        assert_eq!(c.due_ns() % c.interval_ns(), 0, "off the slot grid");
        // A stall that ends exactly on a slot: that slot is missed too.
        let a = c.advance(90 * MS);
        assert_eq!(a.skipped_slots, 3);
        assert_eq!(c.due_ns(), 100 * MS);
    }

    #[test]
    fn the_pre_tick_drain_gets_a_tenth_of_the_interval() {
        let c = TickClock::with_rate(0, hz(60));
        let i = 1_000_000_000 / 60;
        assert_eq!(c.pre_tick_deadline_ns(7), 7 + i / 10);
    }
}
