//! The units tickpack's schemas share, typed once.
//!
//! [`TickRate`] is a game server's tick rate: how many times a second it
//! runs its game loop and sends its snapshots. Every crate and schema that
//! holds a rate holds this type (a game definition's `[tick]`, the game
//! settings, the bench's settings and `result.json`, the guard's limits, the
//! Agones manifest, the protocol's `Accepted` and `Stats`), and its
//! `interval*` methods are the one place a rate becomes the time between
//! two ticks.
//!
//! Written down (serde, command lines, the protocol) a rate is a whole
//! number of hertz, as it always was (`"tick_hz": 100`), so files written
//! before the type existed still read; zero is refused when read.
//!
//! A rate that may not be known yet (the emulated players learn it from
//! their server) is an `Option<TickRate>`, written `0` when `None` as
//! before: see [`tick_rate`] and its serde helper
//! [`tick_rate::zero_is_none`].

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub mod tick_rate;

/// Ticks per second, 1..=65535 (the protocol carries a `u16`; the
/// reference server runs at most [`TickRate::SERVER_MAX_HZ`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TickRate(u16);

impl TickRate {
    /// The highest tick rate the reference server and the definitions
    /// accept: a tick of 1 ms.
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

    /// From a wider integer; `None` for 0 or above 65535.
    pub fn from_u32(hz: u32) -> Option<TickRate> {
        u16::try_from(hz).ok().and_then(TickRate::new)
    }

    /// Ticks a second.
    pub const fn hz(self) -> u16 {
        self.0
    }

    /// Ticks a second, widened for arithmetic.
    pub const fn hz_u32(self) -> u32 {
        self.0 as u32
    }

    /// One tick, in nanoseconds (rounded down: 60 Hz is 16 666 666 ns).
    pub const fn interval_ns(self) -> u64 {
        1_000_000_000 / self.0 as u64
    }

    /// One tick, in microseconds (rounded down), for the limits and
    /// histograms kept in microseconds.
    pub const fn interval_us(self) -> u64 {
        1_000_000 / self.0 as u64
    }

    /// One tick, in milliseconds, for reports.
    pub fn interval_ms(self) -> f64 {
        1_000.0 / f64::from(self.0)
    }

    /// One tick, in seconds, for command lines that take it so
    /// (`{tick_interval_s}`).
    pub fn interval_s(self) -> f64 {
        1.0 / f64::from(self.0)
    }

    /// One tick.
    pub const fn interval(self) -> Duration {
        Duration::from_nanos(self.interval_ns())
    }

    /// How many ticks fit in `span` (a fraction where it does not divide).
    pub fn ticks_in(self, span: Duration) -> f64 {
        span.as_secs_f64() * f64::from(self.0)
    }
}

impl Default for TickRate {
    fn default() -> Self {
        TickRate::DEFAULT
    }
}

impl fmt::Display for TickRate {
    /// The bare number of hertz, as command lines and files write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a number or a text is not a tick rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadTickRate(String);

impl fmt::Display for BadTickRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadTickRate {}

impl TryFrom<u32> for TickRate {
    type Error = BadTickRate;

    fn try_from(hz: u32) -> Result<Self, Self::Error> {
        TickRate::from_u32(hz)
            .ok_or_else(|| BadTickRate(format!("a tick rate is 1..=65535 Hz, got {hz}")))
    }
}

impl From<TickRate> for u32 {
    fn from(r: TickRate) -> u32 {
        r.hz_u32()
    }
}

impl FromStr for TickRate {
    type Err = BadTickRate;

    /// A whole number of hertz, `100` (a trailing `Hz` is allowed).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let t = t
            .strip_suffix("Hz")
            .or_else(|| t.strip_suffix("hz"))
            .unwrap_or(t)
            .trim();
        let hz: u32 = t.parse().map_err(|_| {
            BadTickRate(format!(
                "{s:?} is not a tick rate: a whole number of ticks a second, e.g. 100"
            ))
        })?;
        TickRate::try_from(hz)
    }
}

impl Serialize for TickRate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.0)
    }
}

impl<'de> Deserialize<'de> for TickRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let hz = u32::deserialize(d)?;
        TickRate::try_from(hz).map_err(serde::de::Error::custom)
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
        let r = TickRate::new(60).unwrap();
        assert_eq!(r.interval(), Duration::from_nanos(16_666_666));
        assert!((TickRate::new(20).unwrap().interval_ms() - 50.0).abs() < 1e-9);
        assert!((TickRate::new(20).unwrap().interval_s() - 0.05).abs() < 1e-12);
        assert!((TickRate::new(30).unwrap().ticks_in(Duration::from_secs(2)) - 60.0).abs() < 1e-9);
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

    #[test]
    fn a_rate_reads_and_writes_as_a_bare_number_of_hertz() {
        let r: TickRate = serde_json::from_str("100").unwrap();
        assert_eq!(r.hz(), 100);
        assert_eq!(serde_json::to_string(&r).unwrap(), "100");
        assert!(serde_json::from_str::<TickRate>("0").is_err());
        assert!(serde_json::from_str::<TickRate>("-3").is_err());
        assert!(serde_json::from_str::<TickRate>("70000").is_err());
        assert_eq!("60".parse::<TickRate>().unwrap().hz(), 60);
        assert_eq!("60 Hz".parse::<TickRate>().unwrap().hz(), 60);
        assert!("0".parse::<TickRate>().is_err());
        assert!("fast"
            .parse::<TickRate>()
            .unwrap_err()
            .to_string()
            .contains("fast"));
        assert_eq!(TickRate::new(25).unwrap().to_string(), "25");
    }
}
