//! The tick rate: how often a server simulates and sends snapshots, and the
//! interval that follows from it. The protocol carries it as a `u16`
//! (`Accepted`, `Stats`); everything that needs the interval asks this type.

use std::time::Duration;

/// Snapshots a sender keeps as delta baselines and a receiver keeps to
/// decode against (a delta may refer to any of the last this many).
pub const DELTA_HISTORY: usize = 32;

/// Ticks per second, 1..=65535 as the protocol carries it (the reference
/// server runs at most [`TickRate::SERVER_MAX_HZ`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TickRate(u16);

impl TickRate {
    /// The highest tick rate the reference server accepts (`--tick-hz`).
    pub const SERVER_MAX_HZ: u16 = 1000;
    /// The reference server's default.
    pub const DEFAULT: TickRate = TickRate(100);

    /// `None` for 0.
    pub const fn new(hz: u16) -> Option<TickRate> {
        if hz >= 1 {
            Some(TickRate(hz))
        } else {
            None
        }
    }

    /// What a peer announced; 0 (never sent by a server) counts as 1.
    pub const fn from_wire(hz: u16) -> TickRate {
        TickRate(if hz == 0 { 1 } else { hz })
    }

    /// A rate the reference server runs: 1..=[`TickRate::SERVER_MAX_HZ`].
    pub fn for_server(hz: u32) -> Option<TickRate> {
        Self::from_u32(hz).filter(|t| t.0 <= Self::SERVER_MAX_HZ)
    }

    /// From a wider integer (settings files keep it as `u32`).
    pub fn from_u32(hz: u32) -> Option<TickRate> {
        u16::try_from(hz).ok().and_then(TickRate::new)
    }

    pub const fn hz(self) -> u16 {
        self.0
    }

    /// One tick, in nanoseconds (rounded down).
    pub const fn interval_ns(self) -> u64 {
        1_000_000_000 / self.0 as u64
    }

    /// One tick, in microseconds (rounded down).
    pub const fn interval_us(self) -> u64 {
        1_000_000 / self.0 as u64
    }

    pub const fn interval(self) -> Duration {
        Duration::from_nanos(self.interval_ns())
    }
}

impl std::fmt::Display for TickRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_rate_knows_its_interval() {
        let r = TickRate::new(64).unwrap();
        assert_eq!(r.interval_us(), 15_625);
        assert_eq!(r.interval_ns(), 15_625_000);
        assert_eq!(r.interval(), Duration::from_micros(15_625));
        assert_eq!(TickRate::DEFAULT.interval_us(), 10_000);
    }

    #[test]
    fn zero_and_rates_beyond_the_protocol_are_refused() {
        assert_eq!(TickRate::new(0), None);
        assert_eq!(TickRate::from_u32(70_000), None);
        assert_eq!(TickRate::from_wire(0).hz(), 1);
        assert_eq!(TickRate::from_wire(5000).interval_us(), 200);
    }

    #[test]
    fn the_reference_server_runs_1_to_1000_hz() {
        assert_eq!(TickRate::for_server(1001), None);
        assert_eq!(TickRate::for_server(0), None);
        assert_eq!(TickRate::for_server(1000).map(TickRate::hz), Some(1000));
    }
}
