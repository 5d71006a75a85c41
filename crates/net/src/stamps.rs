//! The kernel's receive stamps (`SO_TIMESTAMPNS`), made certain from the
//! first datagram.
//!
//! Linux stamps arriving packets only while some socket on the machine asks
//! for stamps. The first such socket turns stamping on through a deferred
//! work item (`net_enable_timestamp`), so packets that arrive before that
//! work has run carry no stamp, and `recvmsg` fills in the time of the read
//! instead ("race occurred between timestamp enabling and packet
//! receiving"). On a machine where nothing else asks for stamps, a process
//! that reads late by design (the players' ring reads once a send slot)
//! would then see its first answers as late as its reads.
//!
//! [`KernelStamps::wait_live`] asks for stamps on a socket of its own and
//! returns once a probe proves them live: a probe is sent over loopback, the
//! wall clock is read, and only then the probe is read. A stamp taken at
//! receipt is earlier than that reading; a stamp filled in by the read is
//! later. The guard keeps its socket (and so the machine's stamping) on for
//! as long as it lives.

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Holds stamping on for its life; says whether a probe proved it live.
#[derive(Debug)]
pub struct KernelStamps {
    _socket: UdpSocket,
    live: bool,
}

impl KernelStamps {
    /// Asks for stamps and waits, at most `limit`, until the kernel stamps
    /// at receipt. Errors only if loopback sockets cannot be made; a kernel
    /// that has not turned stamping on within `limit` gives a guard with
    /// [`Self::live`] false (stamps may then be read times for a while).
    pub fn wait_live(limit: Duration) -> io::Result<Self> {
        let rx = UdpSocket::bind("127.0.0.1:0")?;
        enable(rx.as_raw_fd())?;
        let tx = UdpSocket::bind("127.0.0.1:0")?;
        tx.connect(rx.local_addr()?)?;
        rx.set_read_timeout(Some(Duration::from_millis(100)))?;
        let end = Instant::now() + limit;
        loop {
            tx.send(b"stamp probe")?;
            let before_read = wall_ns();
            if let Some(stamp) = recv_stamp(rx.as_raw_fd())? {
                if stamp < before_read {
                    return Ok(Self {
                        _socket: rx,
                        live: true,
                    });
                }
            }
            if Instant::now() >= end {
                return Ok(Self {
                    _socket: rx,
                    live: false,
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Whether a probe was stamped at receipt before [`Self::wait_live`]
    /// returned.
    pub fn live(&self) -> bool {
        self.live
    }
}

/// Asks the kernel to stamp what `fd` receives.
pub(crate) fn enable(fd: std::os::fd::RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt with a live c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads one datagram from `fd` (blocking within its read timeout) and
/// returns its stamp; `None` on a timeout or a datagram without one.
fn recv_stamp(fd: std::os::fd::RawFd) -> io::Result<Option<i128>> {
    let mut buf = [0u8; 64];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; the fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: every pointer in `msg` points at live buffers of the given sizes.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted => {
                Ok(None)
            }
            _ => Err(e),
        };
    }
    let len = (msg.msg_controllen as usize).min(std::mem::size_of_val(&control));
    // SAFETY: `control` is a live u64 array; `len` bytes of it are in bounds.
    let bytes = unsafe { std::slice::from_raw_parts(control.as_ptr().cast::<u8>(), len) };
    Ok(kernel_stamp_ns(bytes))
}

/// The wall clock in ns (what `SO_TIMESTAMPNS` stamps with).
pub(crate) fn wall_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The `SCM_TIMESTAMPNS` stamp among the control messages in `control`
/// (wall-clock ns), if the kernel wrote one.
pub(crate) fn kernel_stamp_ns(control: &[u8]) -> Option<i128> {
    const HDR: usize = std::mem::size_of::<libc::cmsghdr>();
    let field = |at: usize, n: usize| control.get(at..at + n);
    let mut at = 0;
    while let Some(len) = field(at, 8) {
        let len = u64::from_ne_bytes(len.try_into().ok()?) as usize;
        let level = i32::from_ne_bytes(field(at + 8, 4)?.try_into().ok()?);
        let kind = i32::from_ne_bytes(field(at + 12, 4)?.try_into().ok()?);
        if len < HDR || at + len > control.len() {
            return None;
        }
        if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS && len >= HDR + 16 {
            let sec = i64::from_ne_bytes(field(at + HDR, 8)?.try_into().ok()?);
            let nsec = i64::from_ne_bytes(field(at + HDR + 8, 8)?.try_into().ok()?);
            return Some(i128::from(sec) * 1_000_000_000 + i128::from(nsec));
        }
        at += len.div_ceil(8) * 8;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_a_guard_is_live_a_datagram_is_stamped_before_it_is_read() {
        let guard = KernelStamps::wait_live(Duration::from_secs(10)).unwrap();
        assert!(guard.live(), "the kernel never stamped a probe at receipt");
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable(rx.as_raw_fd()).unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let before_read = wall_ns();
        let stamp = recv_stamp(rx.as_raw_fd()).unwrap().expect("stamped");
        assert!(stamp < before_read, "{stamp} vs {before_read}");
    }
}
