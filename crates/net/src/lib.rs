//! tickpack's socket and timing layer: batched UDP, CPU placement, clocks and
//! precise deadline waits.
//!
//! # What it is
//!
//! The thin I/O layer under the game server and the emulated players. It
//! moves datagrams in batches (`recvmmsg`/`sendmmsg`), pins threads to CPUs,
//! reads the project clock, and sleeps until "a socket is readable or the
//! next tick is due" with microsecond-level lateness at a tiny CPU cost.
//!
//! # What it does not do
//!
//! It knows no game, no packet format and no player: bytes in, bytes out.
//! It starts no threads, keeps no global state and never logs. Per-datagram
//! problems are returned or counted, never panicked on.
//!
//! # Main types
//!
//! - [`now_ns`] / [`now_us`]: `CLOCK_MONOTONIC`, the one clock of the project
//!   (game logic uses µs).
//! - [`cpu`]: [`parse_cpu_list`], [`pin_current_thread`], [`online_cpus`],
//!   per-thread and per-process CPU time, timer slack, peak RSS.
//! - [`UdpSocket`] + [`SocketOptions`]: a non-blocking UDP socket;
//!   [`RecvBatch`] and [`SendBatch`] own the buffers for batched I/O.
//! - [`Waiter`] ([`WaitMode::Precise`] by default, [`WaitMode::Plain`] as the
//!   baseline) returns [`Wake::Readable`] or [`Wake::Deadline`].
//! - [`UdpRing`]: one io_uring for a thread's many connected sockets
//!   (multishot receives into one buffer pool, sends batched, kernel
//!   receive stamps); [`Epoll`]: one readiness set, the fallback.
//! - [`KernelStamps`]: holds the kernel's receive stamps on, and waits until
//!   they are taken at receipt rather than at the read.
//! - [`NetError`]: set-up failures, each naming the address, CPUs or step.
//!
//! # Order of calls
//!
//! ```no_run
//! use std::os::fd::AsRawFd;
//! use tickpack_net::*;
//!
//! # fn main() -> Result<(), NetError> {
//! pin_current_thread(&parse_cpu_list("1")?)?;              // 1. place the thread
//! let sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), &SocketOptions::default())?;
//! let mut waiter = Waiter::new(WaitMode::Precise)?;        // 2. on the thread that waits
//! let (mut rx, mut tx) = (RecvBatch::new(64, 1500), SendBatch::new());
//! let period_ns = 1_000_000_000 / 60;
//! let mut next_tick = now_ns() + period_ns;
//! loop {
//!     match waiter.wait(&[sock.as_raw_fd()], next_tick)? {  // 3. sleep
//!         Wake::Readable(_) => {
//!             while sock.recv_batch(&mut rx).unwrap_or(0) > 0 {   // 4. drain
//!                 for (from, bytes) in rx.iter() { tx.push(from, bytes); }
//!             }
//!         }
//!         Wake::Deadline => {
//!             // 5. tick the game at `next_tick` (not at now), then send
//!             let _ = tx.flush(&sock);
//!             next_tick += period_ns;
//!         }
//!     }
//! }
//! # }
//! ```
//!
//! The `tick_precision` example measures [`WaitMode::Precise`] against
//! [`WaitMode::Plain`] in one process and prints the ratios.

pub mod clock;
pub mod cpu;
/// The `epoll` set lives in `tickpack-sys` (one place for it).
pub use tickpack_sys::epoll;
mod error;
pub mod ring;
pub mod socket;
pub mod stamps;
pub mod wait;

pub use clock::{now_ns, now_us};
pub use cpu::{
    allowed_cpus, max_rss_bytes, online_cpus, parse_cpu_list, pin_current_thread,
    process_cpu_time_ns, set_timer_slack_ns, thread_cpu_time_ns, timer_slack_ns,
};
pub use epoll::Epoll;
pub use error::NetError;
pub use ring::{RingEvent, RingSizes, RingStats, UdpRing};
pub use socket::{RecvBatch, SendBatch, SocketOptions, UdpSocket, MAX_BATCH};
pub use stamps::KernelStamps;
pub use wait::{WaitMode, WaitStats, Waiter, Wake};
