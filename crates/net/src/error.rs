//! The one error type of this crate.
//!
//! Set-up steps (bind, pin, create a timer) return [`NetError`], whose message
//! names what failed and on what (address, CPU list, step); print it with its
//! cause chain (`{:#}` with anyhow). Messages do not repeat the OS error: it is
//! the [`std::error::Error::source`].
//!
//! Per-datagram I/O ([`crate::UdpSocket::send_to`],
//! [`crate::UdpSocket::recv_batch`], [`crate::SendBatch::flush`]) returns plain
//! [`std::io::Error`] so hot loops can match on [`std::io::ErrorKind`] without
//! unwrapping a wrapper.

use std::io;
use std::net::SocketAddr;

/// Everything that can go wrong while setting up sockets, CPUs and timers.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A CPU list such as `0-2,5` could not be parsed.
    #[error("invalid CPU list {input:?}: {reason}")]
    CpuList {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// `sched_setaffinity` / `sched_getaffinity` failed.
    #[error("cannot pin thread to CPUs {cpus:?}")]
    Pin {
        /// The CPUs asked for (empty for a query).
        cpus: Vec<usize>,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// Another socket already holds this address.
    #[error("address {addr} is already in use (another server on this port?)")]
    AddrInUse {
        /// The address we tried to bind.
        addr: SocketAddr,
    },

    /// Creating, configuring, binding or connecting a socket failed.
    #[error("socket {addr}: {step} failed")]
    Socket {
        /// The address being bound or connected to.
        addr: SocketAddr,
        /// Which step failed, e.g. `"bind"`, `"set SO_RCVBUF"`.
        step: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// A clock, timer, `poll` or `prctl` call failed.
    #[error("{step} failed")]
    Os {
        /// Which call failed, e.g. `"timerfd_create"`.
        step: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// A file descriptor given to [`crate::Waiter::wait`] is not open.
    #[error("wait: file descriptor {fd} (index {index}) is not open")]
    BadFd {
        /// Position in the slice passed to `wait`.
        index: usize,
        /// The descriptor.
        fd: i32,
    },
}

impl NetError {
    /// Wraps the current `errno` for `step`.
    pub(crate) fn last_os(step: &'static str) -> Self {
        NetError::Os {
            step,
            source: io::Error::last_os_error(),
        }
    }
}
