//! The supervisor's one driver: [`Supervisor::wait`] blocks until
//! something may need [`Supervisor::poll`] and returns; `host up` and the
//! bench loop `wait`, `poll`.
//!
//! What wakes it: an instance's process exits (its pidfd becomes
//! readable), a datagram reaches a check socket, a client connects to the
//! control socket, or the next moment something is due of itself: an
//! instance's restart or start limit ([`super::lifecycle::Lifecycle::deadline`]),
//! a check window's end, the next CPU and memory sample. A command waiting
//! on a console and batch work (reaped and guarded in `poll`) keep the
//! waits short (20 and 50 ms), as the fixed 50 ms sleeps were before.
//!
//! A tile step's several hosts wait together ([`Supervisor::wait_any`]:
//! one epoll set over each host's set).
//!
//! A server cannot make it spin: a wake-up comes at most every
//! [`MIN_GAP`] however much a hosted server sends its check socket (what a
//! poll reads from it is bounded too).

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use tickpack_sys::epoll::Epoll;

use super::Supervisor;

/// The token of every member of the driver's set (it only needs to know
/// that something is ready; `poll` looks at everything).
const TOKEN: u64 = 1;

/// The shortest time between two wake-ups.
pub const MIN_GAP: Duration = Duration::from_millis(10);

/// The longest wait while a console command waits for its answer.
const CONSOLE_WAIT: Duration = Duration::from_millis(20);

/// The longest wait while batch work runs.
const BATCH_WAIT: Duration = Duration::from_millis(50);

/// Adds `fd` to the driver's set `wake` (nothing without one); a closed
/// descriptor leaves it by itself.
pub(super) fn watch(wake: &Option<Epoll>, fd: &impl AsRawFd) {
    if let Some(w) = wake {
        // Not in the set: the driver wakes at its deadlines instead.
        let _ = w.add(fd.as_raw_fd(), TOKEN);
    }
}

impl Supervisor {
    /// Blocks until something may need [`Supervisor::poll`], or `max`
    /// passed (a caller's own deadline, e.g. the end of a measured
    /// window). Never returns sooner than [`MIN_GAP`] after the last
    /// wait returned.
    pub fn wait(&mut self, max: Duration) {
        after_gap(self.last_wake);
        let timeout = timeout_until(self.next_deadline(), max);
        block(self.wake.as_mut(), timeout);
        self.last_wake = Some(Instant::now());
    }

    /// [`Supervisor::wait`] over several hosts at once (a tile step's
    /// members, each a host of its own): blocks until something may need
    /// the [`Supervisor::poll`] of any of them, the earliest of their
    /// deadlines, or `max`. One epoll set holds each host's set (an epoll
    /// descriptor is readable while its set has something ready); never
    /// returns sooner than [`MIN_GAP`] after the last wait of any of them.
    pub fn wait_any(sups: &mut [&mut Supervisor], max: Duration) {
        after_gap(sups.iter().filter_map(|s| s.last_wake).max());
        let timeout = timeout_until(sups.iter().filter_map(|s| s.next_deadline()).min(), max);
        let outer = Epoll::new().and_then(|outer| {
            for s in sups.iter() {
                if let Some(w) = &s.wake {
                    outer.add(w.as_raw_fd(), TOKEN)?;
                }
            }
            Ok(outer)
        });
        block(outer.ok().as_mut(), timeout);
        let woke = Instant::now();
        for s in sups.iter_mut() {
            s.last_wake = Some(woke);
        }
    }

    /// The next moment something is due without an outside event.
    fn next_deadline(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut due = vec![self.next_usage];
        for i in &self.instances {
            due.extend(i.life.deadline());
            if i.child.is_some() && i.check.is_some() {
                due.push(self.started + i.liveness.window_end());
            }
            if i.console.as_ref().is_some_and(|c| c.waiting()) {
                due.push(now + CONSOLE_WAIT);
            }
        }
        if self.batch.is_some() {
            due.push(now + BATCH_WAIT);
        }
        due.into_iter().min()
    }
}

/// Sleeps until [`MIN_GAP`] after `last` (the last wake-up).
fn after_gap(last: Option<Instant>) {
    if let Some(last) = last {
        let early = (last + MIN_GAP).saturating_duration_since(Instant::now());
        if !early.is_zero() {
            std::thread::sleep(early);
        }
    }
}

/// How long to wait: until `deadline`, at most `max`.
fn timeout_until(deadline: Option<Instant>, max: Duration) -> Duration {
    deadline.map_or(max, |d| {
        d.saturating_duration_since(Instant::now()).min(max)
    })
}

/// Waits up to `timeout` for something in `set` to be ready; without a
/// set (or if waiting fails) sleeps, at most [`BATCH_WAIT`].
fn block(set: Option<&mut Epoll>, timeout: Duration) {
    let waited = set.map(|w| w.wait(&mut vec![], timeout));
    if !matches!(waited, Some(Ok(_))) {
        std::thread::sleep(timeout.min(BATCH_WAIT));
    }
}
