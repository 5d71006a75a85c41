//! How a players' thread moves its datagrams: one io_uring for all its
//! sockets ([`IoMode::Ring`], the default where the kernel has it), or
//! `epoll` with a system call per send and per readable socket
//! ([`IoMode::Epoll`], the fallback and the baseline it is measured
//! against).
//!
//! Both hand the I/O loop ([`crate::run`]) the same [`Incoming`] events.
//! They differ in when a thread wakes: with `epoll` every arrival can wake
//! it (and is stamped when read); with the ring arrivals wait in the kernel
//! until the thread wakes for its next deadline, at most
//! [`RING_MAX_SLEEP_NS`] later, and each carries the time the kernel
//! received it, so the later reading changes no latency figure.

use std::io;
use std::os::fd::AsRawFd;

use tickpack_net::clock::now_us;
use tickpack_net::socket::{RecvBatch, UdpSocket};
use tickpack_net::wait::{WaitMode, Waiter, Wake};
use tickpack_net::{Epoll, RingEvent, RingSizes, UdpRing};

/// Which I/O a players' thread uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum IoMode {
    /// The ring if the kernel allows it, else `epoll`.
    #[default]
    Auto,
    /// One io_uring per thread; an error if the kernel does not allow it.
    Ring,
    /// `epoll`, one `send` per datagram and one `recvmmsg` per readable socket.
    Epoll,
}

impl IoMode {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "ring" => Ok(Self::Ring),
            "epoll" => Ok(Self::Epoll),
            _ => Err(format!("--io must be auto, ring or epoll, got {s:?}")),
        }
    }
}

/// The longest a ring thread sleeps without reading: replies that need an
/// answer (a handshake's next step) wait at most this long.
pub const RING_MAX_SLEEP_NS: u64 = 1_000_000;

/// What arrived for player `i`.
pub(crate) enum Incoming<'a> {
    /// A datagram, and when it was received (monotonic µs).
    Datagram { at_us: u64, data: &'a [u8] },
    /// The socket said "port unreachable".
    Refused,
}

/// A thread's I/O, over its players' sockets (player `i` owns socket `i`).
pub(crate) enum PlayerIo {
    Epoll {
        epoll: Epoll,
        ready: Vec<u64>,
        batch: RecvBatch,
        waiter: Waiter,
    },
    Ring {
        ring: Box<UdpRing>,
        waiter: Waiter,
    },
}

impl PlayerIo {
    /// The I/O for `sockets` (datagrams up to `max_datagram` bytes) in
    /// `mode`; `Auto` falls back to `epoll` when the ring cannot be made.
    pub fn new(mode: IoMode, sockets: &[UdpSocket], max_datagram: usize) -> Result<Self, String> {
        let waiter = || Waiter::new(WaitMode::Precise).map_err(|e| e.to_string());
        if mode != IoMode::Epoll {
            // Room for a few datagrams per socket between two reads.
            let sizes = RingSizes::for_sockets(sockets.len(), 4, max_datagram);
            let made = UdpRing::new(sizes).and_then(|mut ring| {
                for s in sockets {
                    ring.add(s.as_raw_fd())?;
                }
                Ok(ring)
            });
            match made {
                Ok(ring) => {
                    return Ok(Self::Ring {
                        ring: Box::new(ring),
                        waiter: waiter()?,
                    })
                }
                Err(e) if mode == IoMode::Ring => {
                    return Err(format!(
                        "io_uring: {e} (the kernel needs io_uring with deferred task work, \
                         Linux 6.1, and kernel.io_uring_disabled = 0; --io epoll works everywhere)"
                    ))
                }
                Err(_) => {}
            }
        }
        let epoll = Epoll::new().map_err(|e| format!("epoll: {e}"))?;
        for (i, s) in sockets.iter().enumerate() {
            epoll
                .add(s.as_raw_fd(), i as u64)
                .map_err(|e| format!("epoll add: {e}"))?;
        }
        Ok(Self::Epoll {
            epoll,
            ready: Vec::with_capacity(256),
            batch: RecvBatch::new(16, max_datagram),
            waiter: waiter()?,
        })
    }

    /// `ring` or `epoll`, for the results.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Epoll { .. } => "epoll",
            Self::Ring { .. } => "ring",
        }
    }

    /// Sends `data` on player `i`'s socket (the ring: queues it, to leave
    /// with the next read). `Err(())`: the socket said "port unreachable".
    /// Other failures (a full buffer) lose the datagram, which the players'
    /// counters then show.
    pub fn send(&mut self, i: usize, sock: &UdpSocket, data: &[u8]) -> Result<(), ()> {
        match self {
            Self::Epoll { .. } => match sock.send(data) {
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Err(()),
                _ => Ok(()),
            },
            Self::Ring { ring, .. } => {
                let _ = ring.send(i, data);
                Ok(())
            }
        }
    }

    /// Waits until `deadline_us` (not at all if `busy`) or, with `epoll`,
    /// until a socket is readable, and hands what arrived to `f`. The ring
    /// first sends what is queued and reads; it sleeps only if nothing came,
    /// and then for at most [`RING_MAX_SLEEP_NS`].
    pub fn wait_and_read(
        &mut self,
        sockets: &[UdpSocket],
        deadline_us: u64,
        busy: bool,
        f: &mut dyn FnMut(usize, Incoming<'_>),
    ) -> Result<(), String> {
        match self {
            Self::Epoll {
                epoll,
                ready,
                batch,
                waiter,
            } => {
                if !busy {
                    let fds = [epoll.as_raw_fd()];
                    match waiter.wait(&fds, deadline_us.saturating_mul(1000)) {
                        Ok(Wake::Deadline) => return Ok(()),
                        Ok(Wake::Readable(_)) => {}
                        Err(e) => return Err(format!("wait: {e}")),
                    }
                }
                ready.clear();
                // Those left out of a full call are named by the next.
                epoll.ready(ready).map_err(|e| format!("epoll: {e}"))?;
                for &i in ready.iter() {
                    let i = i as usize;
                    drain(&sockets[i], batch, &mut |inc| f(i, inc));
                }
                Ok(())
            }
            Self::Ring { ring, waiter } => {
                let got = ring
                    .reap(|ev| match ev {
                        RingEvent::Datagram {
                            token,
                            data,
                            received_ns,
                        } => f(
                            token,
                            Incoming::Datagram {
                                at_us: received_ns / 1000,
                                data,
                            },
                        ),
                        RingEvent::RecvFailed { token, error }
                        | RingEvent::SendFailed { token, error }
                            if error.kind() == io::ErrorKind::ConnectionRefused =>
                        {
                            f(token, Incoming::Refused)
                        }
                        // Cut datagrams and other failures lose what they
                        // carried, which the players' counters show.
                        _ => {}
                    })
                    .map_err(|e| format!("io_uring: {e}"))?;
                if got == 0 && !busy {
                    let cap = now_us() * 1000 + RING_MAX_SLEEP_NS;
                    waiter
                        .wait(&[], deadline_us.saturating_mul(1000).min(cap))
                        .map_err(|e| format!("wait: {e}"))?;
                }
                Ok(())
            }
        }
    }
}

/// Reads `sock` until it is empty.
fn drain(sock: &UdpSocket, batch: &mut RecvBatch, f: &mut dyn FnMut(Incoming<'_>)) {
    loop {
        match sock.recv_batch(batch) {
            Ok(0) => break,
            Ok(n) => {
                let at_us = now_us();
                for (_, data) in batch.iter() {
                    f(Incoming::Datagram { at_us, data });
                }
                // A short batch means the socket is empty now.
                if n < batch.capacity() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                f(Incoming::Refused);
                break;
            }
            Err(_) => break,
        }
    }
}
