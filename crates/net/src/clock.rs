//! The project clock: `CLOCK_MONOTONIC`.
//!
//! Every process of tickpack (servers, emulated players, the bench driver)
//! reads this clock, so timestamps taken in different processes on one machine
//! can be subtracted. Game logic works in microseconds ([`now_us`]); the socket
//! and timer layer works in nanoseconds ([`now_ns`]). The epoch is arbitrary
//! (boot), so only differences mean anything.

/// Reads `clock` as nanoseconds. The clocks used here cannot fail on Linux.
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; `clock` is one of the
    // constant clock ids this crate passes, all supported since Linux 2.6.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime({clock}) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds on `CLOCK_MONOTONIC` (a vDSO call, about 20 ns).
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Microseconds on `CLOCK_MONOTONIC`, the time unit of the game logic.
pub fn now_us() -> u64 {
    now_ns() / 1_000
}

/// Splits nanoseconds into a `timespec`.
pub(crate) fn timespec_from_ns(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_units_agree() {
        let a = now_ns();
        let us = now_us();
        let b = now_ns();
        assert!(b >= a, "CLOCK_MONOTONIC went backwards: {a} then {b}");
        assert!(
            us >= a / 1_000 && us <= b / 1_000,
            "now_us is not now_ns/1000"
        );
    }

    #[test]
    fn timespec_round_trip() {
        let ts = timespec_from_ns(3_000_000_123);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (3, 123));
    }
}
