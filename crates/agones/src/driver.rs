//! [`drive`]: the thin I/O loop around [`Reporter`]: observe the game,
//! perform what the reporter says with an [`SdkClient`], sleep, until
//! Shutdown was said.
//!
//! It runs on its own thread, never in the tick loop: an SDK call that
//! hangs for its timeout delays the next ping, not a tick.

use std::time::{Duration, Instant};

use crate::client::{SdkClient, SdkError};
use crate::reporter::{Action, Observation, Reporter, Settings};

/// How often the driver looks at the game (the reporter decides what of
/// it to say).
pub const OBSERVE_EVERY: Duration = Duration::from_millis(200);

/// What the driver did, once Shutdown was said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Done {
    /// SDK calls made and calls that failed.
    pub calls: u64,
    pub failures: u64,
}

/// Observes with `observe` every `every` and performs the reporter's
/// actions until it said Shutdown (observe reports `ending` to get there).
/// A failed call goes to `on_error` and the loop goes on: the next ping or
/// change is the retry. `on_action` sees each action before it is sent.
pub fn drive(
    client: &SdkClient,
    settings: Settings,
    every: Duration,
    mut observe: impl FnMut() -> Observation,
    mut on_action: impl FnMut(&Action),
    mut on_error: impl FnMut(&SdkError),
) -> Done {
    let t0 = Instant::now();
    let mut reporter = Reporter::new(settings);
    let mut done = Done::default();
    loop {
        let o = observe();
        let now_us = t0.elapsed().as_micros() as u64;
        for a in reporter.observe(now_us, &o) {
            on_action(&a);
            done.calls += 1;
            if let Err(e) = client.perform(&a) {
                done.failures += 1;
                on_error(&e);
            }
        }
        if reporter.is_shut_down() {
            return done;
        }
        std::thread::sleep(every);
    }
}
