//! [`Live`]: what the running server shows another thread (the Agones
//! reporter) without slowing its tick: a tick counter stored every tick
//! (one relaxed atomic store), and once a second the players' names and the
//! recent tick p99 behind a mutex the tick loop only ever `try_lock`s.
//!
//! A stalled tick loop stops the counter, which is what stops the health
//! pings (see `tickpack_agones::reporter`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Shared between the driver (writer) and a reader thread.
#[derive(Debug, Default)]
pub struct Live {
    ticks: AtomicU64,
    listening: AtomicBool,
    ended: AtomicBool,
    slow: Mutex<Slow>,
}

/// What changes slowly, refreshed once a second.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slow {
    /// Connected human players.
    pub players: Vec<String>,
    /// Tick lateness p99 over the last second or two, microseconds (the
    /// tick p99 the host and the QoS guard use).
    pub tick_p99_us: Option<u32>,
}

/// A reader's copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub listening: bool,
    pub ticks: u64,
    pub ended: bool,
    pub slow: Slow,
}

impl Live {
    /// The server's socket is bound.
    pub fn set_listening(&self) {
        self.listening.store(true, Ordering::Release);
    }

    /// Ticks run so far.
    pub fn set_ticks(&self, ticks: u64) {
        self.ticks.store(ticks, Ordering::Relaxed);
    }

    /// Publishes the slow part; skipped (next second) if a reader holds it.
    pub fn publish(&self, slow: Slow) {
        if let Ok(mut s) = self.slow.try_lock() {
            *s = slow;
        }
    }

    /// The server stopped (its match ended, it was told to stop, or it
    /// failed).
    pub fn set_ended(&self) {
        self.ended.store(true, Ordering::Release);
    }

    pub fn read(&self) -> Seen {
        Seen {
            listening: self.listening.load(Ordering::Acquire),
            ticks: self.ticks.load(Ordering::Relaxed),
            ended: self.ended.load(Ordering::Acquire),
            slow: self.slow.lock().map(|s| s.clone()).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_sees_what_was_published() {
        let live = Live::default();
        assert_eq!(live.read(), Seen::default());
        live.set_listening();
        live.set_ticks(42);
        let slow = Slow {
            players: vec!["a".into()],
            tick_p99_us: Some(120),
        };
        live.publish(slow.clone());
        live.set_ended();
        assert_eq!(
            live.read(),
            Seen {
                listening: true,
                ticks: 42,
                ended: true,
                slow
            }
        );
    }
}
