//! Waiting for "a socket is readable, or an absolute deadline has come".
//!
//! A game server sleeps between ticks and must wake on time: every µs it
//! wakes late is added to every player's latency. A plain `clock_nanosleep`
//! wakes late by the default 50 µs *timer slack* plus the wake-up path; on a
//! VM the wake-up path is the bigger part (measured on the 2-vCPU KVM guest
//! this was tuned on: ~45 µs for a 100 µs sleep, ~200 µs median for a 9 ms
//! sleep, because the host deschedules a vCPU that halts for long).
//!
//! [`WaitMode::Precise`] (the default):
//!
//! 1. sets the calling thread's timer slack to 1 ns. This stays in force for
//!    the thread after the waiter is dropped (and threads it spawns later
//!    inherit it); it changes when the thread's timers may fire, not how much
//!    CPU it uses;
//! 2. *coarse stage*: if the deadline is more than the lead
//!    ([`DEFAULT_LEAD_NS`], 1 ms) away, sleeps until `deadline - lead`;
//! 3. *fine stage*: sleeps until `deadline - spin margin`;
//! 4. spins with [`std::hint::spin_loop`] for the rest.
//!
//! Both sleeps arm one `timerfd` (`TFD_TIMER_ABSTIME`, `CLOCK_MONOTONIC`)
//! and `poll` it together with the caller's sockets, so data wakes the
//! thread at once. The coarse stage costs one extra wake-up per wait and
//! buys a short last sleep, which wakes much more promptly on a VM (median
//! lateness ~15 µs instead of ~180 µs with one sleep, same 50 µs spin cap).
//! Set the lead to 0 with [`Waiter::set_lead_ns`] for a single sleep.
//!
//! The spin margin adapts to how late the fine-stage timer fires: it doubles
//! right after a wake-up that overshot the deadline and otherwise decays
//! slowly towards 1.25x the latest lateness, between [`MIN_SPIN_NS`] and
//! [`MAX_SPIN_NS`]. So a wait burns at most 50 µs spinning, never a core.
//!
//! [`WaitMode::Plain`] is the baseline the benchmark compares against: a
//! bare `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` with the thread's
//! timer slack untouched. It does not watch sockets.
//!
//! When the deadline has passed, or is closer than the spin margin, `wait`
//! returns [`Wake::Deadline`] without looking at the sockets: the tick wins,
//! so a flood of datagrams cannot starve it; the caller drains its sockets
//! at the tick anyway.
//!
//! What no waiter fixes: a thread sharing its CPU with busy work (another
//! build, another server) waits for the scheduler, and a halted vCPU waits
//! for the host; both show up as millisecond tails. Those are placement
//! and scheduling-policy questions, not waiting ones.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::thread::ThreadId;

use crate::clock::{now_ns, timespec_from_ns};
use crate::cpu::set_timer_slack_ns;
use crate::NetError;

/// Smallest spin margin, ns: even a perfect timer needs the wake-up path
/// (interrupt, schedule, return from `poll`) covered, a few µs on bare metal.
pub const MIN_SPIN_NS: u64 = 5_000;
/// Largest spin margin, ns: the most CPU one wait may burn spinning. On the
/// VM it was tuned on, the fine-stage wake-up takes ~45-65 µs, so the margin
/// sits at this cap; raising it to 200 µs bought a median of 0.5 µs but not a
/// better p99 (that tail is ms-scale host delay), at +16 % CPU instead of +6 %.
pub const MAX_SPIN_NS: u64 = 50_000;
/// Spin margin before any wake-up has been observed, ns.
pub const INITIAL_SPIN_NS: u64 = 20_000;
/// Default coarse-sleep lead, ns; see [`Waiter::set_lead_ns`]. Larger than
/// the usual lateness of a long sleep (~200-450 µs p50-p90 on the VM
/// measured), so the fine stage almost always happens.
pub const DEFAULT_LEAD_NS: u64 = 1_000_000;

/// How a [`Waiter`] sleeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WaitMode {
    /// `clock_nanosleep` to the deadline; ignores sockets. The baseline.
    Plain,
    /// `timerfd` + `poll` on the sockets, then a short adaptive spin.
    #[default]
    Precise,
}

impl std::fmt::Display for WaitMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WaitMode::Plain => "plain",
            WaitMode::Precise => "precise",
        })
    }
}

/// Why [`Waiter::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// `fds[i]` is readable (or has a pending error, such as ICMP
    /// port-unreachable, which the next receive will report).
    Readable(usize),
    /// The deadline has come: `now_ns() >= deadline_ns`.
    Deadline,
}

/// Counters since the waiter was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitStats {
    /// Calls to `wait`.
    pub waits: u64,
    /// Calls that returned [`Wake::Readable`].
    pub readable: u64,
    /// Precise waits in which the timer fired.
    pub timer_wakes: u64,
    /// Of those, how many fired at or after the deadline itself (the spin
    /// margin was too small).
    pub overshoots: u64,
    /// Total ns spent spinning before deadlines.
    pub spin_ns: u64,
}

/// Waits for readable sockets or a deadline. Keep one per thread and reuse it.
#[derive(Debug)]
pub struct Waiter {
    mode: WaitMode,
    timer: Option<OwnedFd>,
    pollfds: Vec<libc::pollfd>,
    spin_margin_ns: u64,
    lead_ns: u64,
    /// The target the timerfd is armed for and has not fired at yet: a
    /// wait for the same target (after a datagram woke us) skips re-arming.
    armed_ns: Option<u64>,
    /// The thread whose timer slack was lowered (Precise only).
    slack_set_on: Option<ThreadId>,
    stats: WaitStats,
}

impl Waiter {
    /// Creates a waiter. `Precise` creates its timerfd and lowers the calling
    /// thread's timer slack to 1 ns (again on first `wait` from any other thread).
    pub fn new(mode: WaitMode) -> Result<Self, NetError> {
        let mut waiter = Waiter {
            mode,
            timer: None,
            pollfds: Vec::new(),
            spin_margin_ns: INITIAL_SPIN_NS,
            lead_ns: DEFAULT_LEAD_NS,
            armed_ns: None,
            slack_set_on: None,
            stats: WaitStats::default(),
        };
        if mode == WaitMode::Precise {
            // SAFETY: plain syscall with constant flags; the result is checked.
            let fd = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(NetError::last_os("timerfd_create"));
            }
            // SAFETY: `fd` was just returned by timerfd_create and is owned by no one else.
            waiter.timer = Some(unsafe { OwnedFd::from_raw_fd(fd) });
            waiter.lower_slack()?;
        }
        Ok(waiter)
    }

    /// The mode chosen at creation.
    pub fn mode(&self) -> WaitMode {
        self.mode
    }

    /// The current spin margin in ns (Precise; adapts between
    /// [`MIN_SPIN_NS`] and [`MAX_SPIN_NS`]).
    pub fn spin_margin_ns(&self) -> u64 {
        self.spin_margin_ns
    }

    /// How long before the deadline the coarse sleep ends, ns (Precise).
    pub fn lead_ns(&self) -> u64 {
        self.lead_ns
    }

    /// Sets the coarse-sleep lead (Precise). `0` (or anything not above the
    /// spin margin) disables the coarse stage: one sleep to the spin margin.
    pub fn set_lead_ns(&mut self, ns: u64) {
        self.lead_ns = ns;
    }

    /// Counters since creation.
    pub fn stats(&self) -> WaitStats {
        self.stats
    }

    /// Blocks until one of `fds` is readable or `now_ns() >= deadline_ns`
    /// (`CLOCK_MONOTONIC`, see [`crate::now_ns`]).
    ///
    /// Never returns [`Wake::Deadline`] early. Negative fds are ignored, as
    /// `poll` does; a closed fd gives [`NetError::BadFd`]. `Plain` ignores `fds`.
    pub fn wait(&mut self, fds: &[RawFd], deadline_ns: u64) -> Result<Wake, NetError> {
        self.stats.waits += 1;
        match self.mode {
            WaitMode::Plain => sleep_until(deadline_ns).map(|()| Wake::Deadline),
            WaitMode::Precise => {
                let wake = self.wait_precise(fds, deadline_ns)?;
                if let Wake::Readable(_) = wake {
                    self.stats.readable += 1;
                }
                Ok(wake)
            }
        }
    }

    fn lower_slack(&mut self) -> Result<(), NetError> {
        let me = std::thread::current().id();
        if self.slack_set_on != Some(me) {
            set_timer_slack_ns(1)?;
            self.slack_set_on = Some(me);
        }
        Ok(())
    }

    fn wait_precise(&mut self, fds: &[RawFd], deadline_ns: u64) -> Result<Wake, NetError> {
        self.lower_slack()?;
        loop {
            let now = now_ns();
            let fine = deadline_ns.saturating_sub(self.spin_margin_ns);
            if now >= fine {
                break;
            }
            // Far from the deadline: a coarse sleep to `lead` before it, so the
            // last sleep is short (short sleeps wake much faster on a VM).
            let coarse = deadline_ns.saturating_sub(self.lead_ns);
            let (target, is_fine) = if self.lead_ns > self.spin_margin_ns && now < coarse {
                (coarse, false)
            } else {
                (fine, true)
            };
            if let Some(index) = self.sleep_until(fds, target)? {
                return Ok(Wake::Readable(index));
            }
            let woke = now_ns();
            self.stats.timer_wakes += 1;
            if woke >= deadline_ns {
                self.stats.overshoots += 1;
            }
            if is_fine {
                self.adapt(woke.saturating_sub(target), woke >= deadline_ns);
            }
        }
        let spin_from = now_ns();
        let mut now = spin_from;
        while now < deadline_ns {
            std::hint::spin_loop();
            now = now_ns();
        }
        self.stats.spin_ns += now - spin_from;
        Ok(Wake::Deadline)
    }

    /// Sleeps in `poll` on `fds` + the timer armed at `target_ns`.
    /// Returns the index of a ready fd, or `None` when the timer fired.
    fn sleep_until(&mut self, fds: &[RawFd], target_ns: u64) -> Result<Option<usize>, NetError> {
        let timer = self.timer.as_ref().map_or(-1, |t| t.as_raw_fd());
        if self.armed_ns != Some(target_ns) {
            arm(timer, target_ns)?;
            self.armed_ns = Some(target_ns);
        }
        poll_in(&mut self.pollfds, fds.iter().chain([&timer]).copied(), -1)?;
        let (timer_entry, user) = self
            .pollfds
            .split_last()
            .expect("timer entry is always present");
        if let Some(index) = user.iter().position(|p| p.revents & libc::POLLNVAL != 0) {
            return Err(NetError::BadFd {
                index,
                fd: fds[index],
            });
        }
        if timer_entry.revents & libc::POLLIN != 0 {
            // No need to read the timerfd: the next `arm` resets its expiry count.
            self.armed_ns = None;
            return Ok(None);
        }
        let ready = libc::POLLIN | libc::POLLERR | libc::POLLHUP;
        // The timer stays armed; the next `arm` replaces it and clears its
        // expiry count, so it cannot wake a later wait early.
        Ok(user.iter().position(|p| p.revents & ready != 0))
    }

    /// Updates the spin margin after the timer fired `late_ns` after its target.
    ///
    /// Tracks a slowly decaying maximum of the observed lateness (+25 %), and
    /// doubles at once after an overshoot, so rare long wake-ups are covered
    /// for the next few hundred waits while quiet periods cost only a few µs.
    fn adapt(&mut self, late_ns: u64, overshot: bool) {
        let wanted = late_ns + late_ns / 4;
        let mut margin = self.spin_margin_ns;
        if overshot {
            margin = margin.saturating_mul(2).max(wanted);
        } else {
            margin = (margin - margin / 64).max(wanted);
        }
        self.spin_margin_ns = margin.clamp(MIN_SPIN_NS, MAX_SPIN_NS);
    }
}

/// Fills `pollfds` with `fds`, each watched for input, and polls them for
/// at most `timeout_ms` (-1: without end), again after a signal.
fn poll_in(
    pollfds: &mut Vec<libc::pollfd>,
    fds: impl Iterator<Item = RawFd>,
    timeout_ms: libc::c_int,
) -> Result<(), NetError> {
    pollfds.clear();
    pollfds.extend(fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }));
    loop {
        // SAFETY: `pollfds` holds `len()` initialized pollfd entries and is
        // not touched by anything else during the call.
        let rc = unsafe {
            libc::poll(
                pollfds.as_mut_ptr(),
                pollfds.len() as libc::nfds_t,
                timeout_ms,
            )
        };
        if rc >= 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(NetError::Os {
                step: "poll",
                source: err,
            });
        }
    }
}

/// Arms `timer` to fire once at `at_ns` on `CLOCK_MONOTONIC`.
fn arm(timer: RawFd, at_ns: u64) -> Result<(), NetError> {
    let spec = libc::itimerspec {
        it_interval: timespec_from_ns(0),
        it_value: timespec_from_ns(at_ns),
    };
    // SAFETY: `timer` is this waiter's open timerfd; `spec` is a valid
    // itimerspec; the old value is not requested (null is allowed).
    let rc = unsafe {
        libc::timerfd_settime(timer, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(NetError::last_os("timerfd_settime"));
    }
    Ok(())
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until `deadline_ns`.
fn sleep_until(deadline_ns: u64) -> Result<(), NetError> {
    let ts = timespec_from_ns(deadline_ns);
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be
        // null with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            errno => {
                return Err(NetError::Os {
                    step: "clock_nanosleep",
                    source: std::io::Error::from_raw_os_error(errno),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SocketOptions, UdpSocket};

    fn bind() -> UdpSocket {
        UdpSocket::bind("127.0.0.1:0".parse().unwrap(), &SocketOptions::default()).unwrap()
    }

    #[test]
    fn deadline_is_never_early() {
        // Plain, Precise with the coarse stage, Precise with one sleep.
        for (mode, lead_ns) in [
            (WaitMode::Plain, 0),
            (WaitMode::Precise, DEFAULT_LEAD_NS),
            (WaitMode::Precise, 0),
        ] {
            let sock = bind();
            let mut waiter = Waiter::new(mode).unwrap();
            waiter.set_lead_ns(lead_ns);
            for step_us in [0u64, 1, 30, 200, 2_000, 10_000] {
                let deadline = now_ns() + step_us * 1_000;
                let wake = waiter.wait(&[sock.as_raw_fd()], deadline).unwrap();
                let now = now_ns();
                assert_eq!(
                    wake,
                    Wake::Deadline,
                    "{mode} lead {lead_ns}: no data was sent"
                );
                assert!(
                    now >= deadline,
                    "{mode} lead {lead_ns}: woke {} ns early",
                    deadline - now
                );
            }
            // A deadline in the past returns at once.
            assert_eq!(waiter.wait(&[], 0).unwrap(), Wake::Deadline);
        }
    }

    #[test]
    fn readable_socket_wakes_before_the_deadline() {
        let idle = bind();
        let busy = bind();
        bind().send_to(b"hi", busy.local_addr()).unwrap();
        let mut waiter = Waiter::new(WaitMode::Precise).unwrap();
        let deadline = now_ns() + 5_000_000_000;
        let wake = waiter
            .wait(&[idle.as_raw_fd(), busy.as_raw_fd()], deadline)
            .unwrap();
        assert_eq!(wake, Wake::Readable(1));
        assert!(now_ns() < deadline);
        assert_eq!(waiter.stats().readable, 1);
    }

    #[test]
    fn data_arriving_during_the_wait_wakes_it() {
        let server = bind();
        let addr = server.local_addr();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            bind().send_to(b"late", addr).unwrap();
        });
        let mut waiter = Waiter::new(WaitMode::Precise).unwrap();
        let deadline = now_ns() + 5_000_000_000;
        assert_eq!(
            waiter.wait(&[server.as_raw_fd()], deadline).unwrap(),
            Wake::Readable(0)
        );
        sender.join().unwrap();
    }

    #[test]
    fn precise_lowers_timer_slack_and_keeps_the_spin_bounded() {
        let mut waiter = Waiter::new(WaitMode::Precise).unwrap();
        assert_eq!(crate::cpu::timer_slack_ns(), 1);
        for _ in 0..20 {
            waiter.wait(&[], now_ns() + 1_000_000).unwrap();
            let m = waiter.spin_margin_ns();
            assert!(
                (MIN_SPIN_NS..=MAX_SPIN_NS).contains(&m),
                "spin margin {m} ns"
            );
        }
        let stats = waiter.stats();
        assert_eq!(stats.waits, 20);
        assert!(stats.timer_wakes > 0);
    }

    #[test]
    fn closed_fd_is_an_error() {
        let mut waiter = Waiter::new(WaitMode::Precise).unwrap();
        // Far above anything this process opens, so never reused by a parallel test.
        let fd = 999_999;
        let err = waiter.wait(&[fd], now_ns() + 1_000_000_000).unwrap_err();
        assert!(matches!(err, NetError::BadFd { index: 0, .. }), "{err}");
    }
}
