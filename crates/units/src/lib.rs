//! The units tickpack's schemas share, typed once.
//!
//! [`TickRate`] is a game server's tick rate: how many times a second it
//! runs its game loop and sends its snapshots. Every crate and every schema
//! (a game definition's `[tick]`, the bench's settings, `result.json`, the
//! Agones manifest, the host's run dir) holds one, and [`TickRate::interval`]
//! is the one place a rate becomes the time between two ticks.
//!
//! On the wire (serde, command lines) a rate is a whole number of hertz,
//! as it always was (`"tick_hz": 100`), so files written before the type
//! existed still read; zero is refused when read.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A tick rate, in whole hertz (at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TickRate(NonZeroU32);

impl TickRate {
    /// The highest rate any tickpack part accepts: a tick of 1 ms.
    pub const MAX_HZ: u32 = 1_000;

    /// `hz` ticks a second; `None` for 0.
    pub const fn new(hz: u32) -> Option<TickRate> {
        match NonZeroU32::new(hz) {
            Some(n) => Some(TickRate(n)),
            None => None,
        }
    }

    /// `hz` ticks a second, for constants: panics on 0 (at compile time in
    /// a `const`).
    pub const fn hz_const(hz: u32) -> TickRate {
        match TickRate::new(hz) {
            Some(r) => r,
            None => panic!("a tick rate is at least 1 Hz"),
        }
    }

    /// Ticks a second.
    pub const fn hz(self) -> u32 {
        self.0.get()
    }

    /// The time between two ticks, to the nanosecond (rounded down:
    /// 60 Hz is 16 666 666 ns).
    pub const fn interval(self) -> Duration {
        Duration::from_nanos(1_000_000_000 / self.0.get() as u64)
    }

    /// [`TickRate::interval`] in whole microseconds (rounded down), for the
    /// limits and histograms kept in microseconds.
    pub const fn interval_us(self) -> u64 {
        1_000_000 / self.0.get() as u64
    }

    /// [`TickRate::interval`] in milliseconds, for reports.
    pub fn interval_ms(self) -> f64 {
        1_000.0 / f64::from(self.0.get())
    }

    /// How many ticks fit in `span` (a fraction where it does not divide).
    pub fn ticks_in(self, span: Duration) -> f64 {
        span.as_secs_f64() * f64::from(self.0.get())
    }
}

impl fmt::Display for TickRate {
    /// The bare number of hertz, as command lines and files write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a text is not a tick rate.
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
        TickRate::new(hz).ok_or_else(|| BadTickRate("a tick rate is at least 1 Hz, got 0".into()))
    }
}

impl From<TickRate> for u32 {
    fn from(r: TickRate) -> u32 {
        r.hz()
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
        s.serialize_u32(self.hz())
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
    fn a_rate_becomes_its_interval_in_one_place() {
        let r = TickRate::hz_const(60);
        assert_eq!(r.interval(), Duration::from_nanos(16_666_666));
        assert_eq!(r.interval_us(), 16_666);
        assert_eq!(TickRate::hz_const(100).interval(), Duration::from_millis(10));
        assert!((TickRate::hz_const(20).interval_ms() - 50.0).abs() < 1e-9);
        assert!((TickRate::hz_const(30).ticks_in(Duration::from_secs(2)) - 60.0).abs() < 1e-9);
    }

    #[test]
    fn a_rate_reads_and_writes_as_a_bare_number_of_hertz() {
        let r: TickRate = serde_json::from_str("100").unwrap();
        assert_eq!(r.hz(), 100);
        assert_eq!(serde_json::to_string(&r).unwrap(), "100");
        assert!(serde_json::from_str::<TickRate>("0").is_err());
        assert!(serde_json::from_str::<TickRate>("-3").is_err());
        assert_eq!("60".parse::<TickRate>().unwrap().hz(), 60);
        assert_eq!("60 Hz".parse::<TickRate>().unwrap().hz(), 60);
        assert!("0".parse::<TickRate>().is_err());
        assert!("fast".parse::<TickRate>().unwrap_err().to_string().contains("fast"));
        assert_eq!(TickRate::hz_const(25).to_string(), "25");
    }
}
