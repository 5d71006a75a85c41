//! A tick rate that may not be known yet, written down as it always was.
//!
//! Emulated players learn their server's rate from what it sends; until
//! then, and in a result of a run where no player ever connected, there is
//! none. In memory that is `Option<TickRate>`; in files it is the whole
//! number of hertz, `0` for "not known", as `tickpack.players/1` has
//! always written it (`"tick_hz": 0`). [`zero_is_none`] is the serde
//! helper for such a field.

use crate::TickRate;

/// Serde helper for an `Option<TickRate>` field written as a whole number
/// of hertz, `0` for `None`:
///
/// ```text
/// #[serde(with = "tickpack_units::tick_rate::zero_is_none")]
/// pub tick_hz: Option<TickRate>,
/// ```
///
/// Written as an unsigned integer (the `u32` such fields were before they
/// were typed); read from any whole number, `0` as `None`, above 65535 or
/// negative refused.
pub mod zero_is_none {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::TickRate;

    /// `None` as `0`, a rate as its hertz.
    pub fn serialize<S: Serializer>(rate: &Option<TickRate>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(super::hz_or_zero(*rate).into())
    }

    /// `0` as `None`, 1..=65535 as a rate.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TickRate>, D::Error> {
        match u32::deserialize(d)? {
            0 => Ok(None),
            hz => TickRate::try_from(hz)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// The rate in hertz, `0` when not known: how files and summaries have
/// always written an unknown rate (`server tick 0 Hz`).
pub const fn hz_or_zero(rate: Option<TickRate>) -> u16 {
    match rate {
        Some(r) => r.hz(),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use crate::TickRate;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Doc {
        players: u32,
        #[serde(with = "super::zero_is_none")]
        tick_hz: Option<TickRate>,
        duration_s: f64,
    }

    fn read(json: &str) -> Result<Doc, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn zero_reads_as_none_and_none_writes_as_zero() {
        let d = read(r#"{"players": 2, "tick_hz": 0, "duration_s": 2.0}"#).unwrap();
        assert_eq!(d.tick_hz, None);
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"players":2,"tick_hz":0,"duration_s":2.0}"#
        );
    }

    #[test]
    fn a_rate_reads_and_writes_as_its_hertz() {
        let d = read(r#"{"players": 4, "tick_hz": 100, "duration_s": 2.0}"#).unwrap();
        assert_eq!(d.tick_hz, TickRate::new(100));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"players":4,"tick_hz":100,"duration_s":2.0}"#
        );
        let max = read(r#"{"players": 1, "tick_hz": 65535, "duration_s": 1.0}"#).unwrap();
        assert_eq!(max.tick_hz.map(TickRate::hz), Some(65535));
    }

    #[test]
    fn what_is_not_a_rate_is_refused() {
        for bad in ["70000", "-1", "1.5", "\"60\"", "null"] {
            let json = format!(r#"{{"players": 1, "tick_hz": {bad}, "duration_s": 1.0}}"#);
            assert!(read(&json).is_err(), "{bad} was read");
        }
        let e = read(r#"{"players": 1, "tick_hz": 70000, "duration_s": 1.0}"#).unwrap_err();
        assert!(e.to_string().contains("70000"), "{e}");
    }

    #[test]
    fn an_old_players_result_reads_and_writes_back_the_same() {
        // The start of a `tickpack.players/1` document the players wrote
        // while the field was a bare `u32` (a run whose players never
        // connected, then one against a 60 Hz server), pretty-printed as
        // results are written.
        for (json, rate) in [(OLD_UNREACHABLE, None), (OLD_60_HZ, TickRate::new(60))] {
            let d = read(json).unwrap();
            assert_eq!(d.tick_hz, rate);
            assert_eq!(serde_json::to_string_pretty(&d).unwrap(), json);
        }
    }

    const OLD_UNREACHABLE: &str =
        "{\n  \"players\": 2,\n  \"tick_hz\": 0,\n  \"duration_s\": 2.0\n}";
    const OLD_60_HZ: &str = "{\n  \"players\": 4,\n  \"tick_hz\": 60,\n  \"duration_s\": 2.0\n}";

    #[test]
    fn hz_or_zero_is_the_number_files_hold() {
        assert_eq!(super::hz_or_zero(None), 0);
        assert_eq!(super::hz_or_zero(TickRate::new(50)), 50);
    }
}
