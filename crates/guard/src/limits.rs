//! The QoS limits the guard keeps ([`QosLimits`]): the bench verdict's
//! limits from the one rule table (`tickpack_report::qos`), so the guard
//! and the verdict can never judge a server by different lines, plus the
//! guard's own extras (how far behind its schedule a server without the
//! recent window may fall, a LAN query's round trip, the PSI emergency).

use serde::{Deserialize, Serialize};
use tickpack_report::qos::TickRate;

/// The QoS limits the guard keeps, per instance and period (and
/// system-wide PSI).
///
/// The reference server reports its tick lateness and frame time over the
/// last second or two (its stats' recent window): those are judged against
/// the same limits as the bench's verdict ([`QosLimits::for_tick_hz`]). A
/// server that predates the window is judged on how far it fell behind its
/// schedule in the period (`behind_us`), a coarser figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QosLimits {
    /// p99 tick lateness over the recent window, microseconds (the
    /// verdict's p99 tick lateness limit).
    pub tick_lag_us: u32,
    /// p99 frame time over the recent window, microseconds (the verdict's
    /// frame budget share of the tick).
    pub frame_us: u32,
    /// How far a server without the recent window fell behind its tick
    /// schedule in the period (missed ticks and overruns, as time),
    /// microseconds. The guard's own.
    #[serde(default = "default_behind_us")]
    pub behind_us: u32,
    /// Longest game query round trip (q3/a2s probe) in the period,
    /// microseconds. The guard's own: 5 ms, a query on a LAN.
    pub query_us: u32,
    /// The players' p99 transaction latency over the period, microseconds
    /// (the verdict's limit: a tick + 5 ms), when players report it.
    #[serde(default = "default_transaction_us")]
    pub transaction_us: u32,
    /// CPU pressure (`some avg10`, percent) at or above which the batch is
    /// cut to zero whatever the servers say. The guard's own. The default,
    /// 100, never triggers: system-wide `some` pressure counts the batch's
    /// own waiting (its SCHED_IDLE tasks wait behind the servers whenever
    /// both run), so it rises with a well-behaved batch and cannot tell who
    /// suffers; a host that runs other latency work can lower it. PSI must
    /// still be readable (its absence cuts the batch): the guard was
    /// validated on kernels that have it.
    pub psi_emergency: f64,
}

/// The reference server's tick rate, whose limits are the default ones.
const DEFAULT_TICK_HZ: TickRate = TickRate::DEFAULT;

/// The guard's query limit: a query round trip on a LAN.
const QUERY_US: u32 = 5_000;

/// The PSI level that cuts the batch: 100 %, never.
const PSI_EMERGENCY: f64 = 100.0;

fn default_transaction_us() -> u32 {
    QosLimits::for_tick_hz(DEFAULT_TICK_HZ).transaction_us
}

fn default_behind_us() -> u32 {
    // Three ticks of 100 Hz behind (one is the sampling's own rounding).
    30_000
}

/// A microsecond figure of the rule table as the guard's `u32`.
fn us(v: u64) -> u32 {
    v.min(u64::from(u32::MAX)) as u32
}

impl QosLimits {
    /// The bench verdict's default limits at `tick_hz`, read from the rule
    /// table ([`tickpack_report::qos::default_limits`]: p99 tick lateness,
    /// p99 frame within the frame budget, p99 transaction latency), with
    /// the guard's own extras.
    pub fn for_tick_hz(tick_hz: TickRate) -> QosLimits {
        let verdict = tickpack_report::qos::default_limits(tick_hz);
        QosLimits {
            tick_lag_us: us(verdict.p99_tick_lateness_us),
            frame_us: us(tickpack_report::qos::frame_limit_us(&verdict, tick_hz)),
            behind_us: default_behind_us(),
            query_us: QUERY_US,
            transaction_us: us(verdict.p99_transaction_us),
            psi_emergency: PSI_EMERGENCY,
        }
    }
}

impl Default for QosLimits {
    /// The limits at the reference server's 100 Hz.
    fn default() -> Self {
        QosLimits::for_tick_hz(DEFAULT_TICK_HZ)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guards_limits_are_the_verdicts_at_every_tick_rate() {
        for hz in [1, 20, 30, 50, 60, 64, 66, 100, 128, 144, 1000] {
            let hz = TickRate::new(hz).unwrap();
            let verdict = tickpack_report::qos::default_limits(hz);
            let guard = QosLimits::for_tick_hz(hz);
            assert_eq!(
                u64::from(guard.tick_lag_us),
                verdict.p99_tick_lateness_us,
                "{hz} Hz"
            );
            assert_eq!(
                u64::from(guard.frame_us),
                tickpack_report::qos::frame_limit_us(&verdict, hz),
                "{hz} Hz"
            );
            assert_eq!(
                u64::from(guard.transaction_us),
                verdict.p99_transaction_us,
                "{hz} Hz"
            );
        }
    }

    #[test]
    fn the_limits_are_those_the_guard_always_kept() {
        // 100 Hz: a quarter tick of lateness, half a tick of frame, a tick
        // + 5 ms of transaction latency; the guard's extras unchanged.
        let l = QosLimits::default();
        assert_eq!(
            (l.tick_lag_us, l.frame_us, l.transaction_us),
            (2_500, 5_000, 15_000)
        );
        assert_eq!((l.behind_us, l.query_us), (30_000, 5_000));
        assert_eq!(l.psi_emergency, 100.0);
        let l = QosLimits::for_tick_hz(TickRate::new(60).unwrap());
        assert_eq!(
            (l.tick_lag_us, l.frame_us, l.transaction_us),
            (4_166, 8_333, 21_666)
        );
    }

    #[test]
    fn limits_written_before_the_extras_had_defaults_still_read() {
        let old = r#"{"tick_lag_us":2500,"frame_us":5000,"query_us":5000,"psi_emergency":100.0}"#;
        let l: QosLimits = serde_json::from_str(old).unwrap();
        assert_eq!(l, QosLimits::default());
    }
}
