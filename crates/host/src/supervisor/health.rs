//! Health: every running instance is asked, the replies read, and the
//! liveness rule applied.
//!
//! - `tickpack`: a stats request over the tickpack protocol once a second;
//!   the replies also carry the tick and frame figures shown in the status.
//!   Silent for 2 s is `unresponsive`; silent for `unresponsive_s` (5 s by
//!   default) is killed (and restarted by the restart policy).
//! - `q3`, `a2s`: the game's own query every 2 s from each start
//!   (`probe.rs`, over the game query layer; servers rate-limit queries),
//!   its map, players and round trip in the status.
//!   Silent for 5 s (one lost reply is tolerated) is `unresponsive`;
//!   silent for 10 s (or `unresponsive_s` if longer) is killed. An
//!   instance that has not answered since it started gets `start_timeout_s`
//!   (15 s by default) before it is killed, reported with the last lines
//!   of its log.
//! - `none`: `running` once the process has lived 200 ms.
//!
//! Replies are read with the kernel's receive time stamp
//! (`SO_TIMESTAMPNS`, wall clock), turned into the supervisor's monotonic
//! clock the queries run on ([`Supervisor::query_clock`]), so round trips
//! do not depend on when the supervisor's loop gets to them.

use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tickpack_wire::Packet;

use super::{log_path, Supervisor};
use crate::launch::Health;
use crate::status::InstanceState;

/// A game query unanswered this long makes an instance `unresponsive`.
pub const QUERY_UNRESPONSIVE: Duration = Duration::from_secs(5);
/// ...and this long (or `unresponsive_s` if longer) gets it killed.
pub const QUERY_KILL: Duration = Duration::from_secs(10);
/// How many lines of an instance's log a message quotes.
const LOG_LINES: usize = 3;

/// The wall clock in nanoseconds (what `SO_TIMESTAMPNS` stamps with).
fn wall_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Asks the kernel to stamp every datagram `sock` receives.
pub(super) fn enable_timestamps(sock: &UdpSocket) -> std::io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt on a live socket with a c_int option value.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// One datagram (non-blocking socket): its length, sender (IPv4) and
/// receive time (the kernel's stamp; the wall clock now if it has none).
fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> Option<(usize, SocketAddr, i128)> {
    let mut from = MaybeUninit::<libc::sockaddr_in>::zeroed();
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: an all-zero msghdr is valid; the fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = from.as_mut_ptr().cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: every pointer in `msg` points at live buffers of the given sizes.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return None;
    }
    let mut at = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled,
    // within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                at = Some(i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    // SAFETY: the kernel wrote the sender's address (the socket is IPv4).
    let from = unsafe { from.assume_init() };
    if i32::from(from.sin_family) != libc::AF_INET {
        return None;
    }
    let addr = SocketAddr::V4(SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)),
        u16::from_be(from.sin_port),
    ));
    Some((n as usize, addr, at.unwrap_or_else(wall_ns)))
}

/// The last `n` non-empty lines of `text`, joined with ` | `.
pub(super) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

impl Supervisor {
    /// The clock the game queries run on: monotonic, since the supervisor
    /// started.
    pub(super) fn query_clock(&self) -> Duration {
        self.started.elapsed()
    }

    /// A kernel receive stamp (wall clock, ns) on [`Self::query_clock`]:
    /// as long ago as the wall clock says it was.
    fn stamp_on_query_clock(&self, at_ns: i128) -> Duration {
        let now = self.query_clock();
        let age_ns = (wall_ns() - at_ns).clamp(0, i128::from(u64::MAX)) as u64;
        now.saturating_sub(Duration::from_nanos(age_ns))
    }

    /// Asks every running instance for its stats (`tickpack` health; call
    /// every second).
    pub(super) fn send_health(&mut self) {
        let Some(sock) = &self.health else { return };
        if self.cfg.health == Health::TickpackStats {
            let req = Packet::StatsRequest { nonce: 1 }.to_vec();
            for i in &self.instances {
                if i.child.is_some() {
                    let _ = sock.send_to(&req, i.addr);
                }
            }
        }
    }

    /// Sends every running instance's game query datagrams that are due
    /// (a query every 2 s, an A2S query again with its challenge at once);
    /// call after [`Self::read_health`] at every poll.
    pub(super) fn send_queries(&mut self) {
        let Some(sock) = &self.health else { return };
        if !self.cfg.health.is_query() {
            return;
        }
        let now = self.query_clock();
        let mut out = Vec::with_capacity(64);
        for i in &mut self.instances {
            if i.child.is_some() {
                while i.probe.poll_transmit(now, &mut out) {
                    let _ = sock.send_to(&out, i.addr);
                }
            }
        }
    }

    pub(super) fn read_health(&mut self, now: Instant) {
        let Some(sock) = &self.health else {
            // No health checks: running once the process has lived a moment.
            for i in &mut self.instances {
                if i.state == InstanceState::Starting
                    && i.child.is_some()
                    && i.started.elapsed() > Duration::from_millis(200)
                {
                    i.state = InstanceState::Running;
                }
            }
            return;
        };
        let mut buf = [0u8; 2048];
        for _ in 0..1024 {
            let Some((n, from, at)) = recv_stamped(sock, &mut buf) else {
                break;
            };
            let Some(&k) = self.health_by_addr.get(&from) else {
                continue;
            };
            let at = self.stamp_on_query_clock(at);
            let i = &mut self.instances[k];
            let alive = match self.cfg.health {
                Health::TickpackStats => match Packet::decode(&buf[..n]) {
                    Ok(Packet::Stats(s)) => {
                        i.stats = Some(s);
                        true
                    }
                    _ => false,
                },
                // A challenge's query goes again in `send_queries`.
                _ => i.probe.handle(at, &buf[..n]),
            };
            if alive {
                i.last_heard = Some(now);
                if matches!(
                    i.state,
                    InstanceState::Starting | InstanceState::Unresponsive
                ) && i.child.is_some()
                {
                    i.state = InstanceState::Running;
                }
            }
        }
    }

    pub(super) fn check_liveness(&mut self, now: Instant) {
        if self.health.is_none() {
            return;
        }
        let configured = Duration::from_secs_f64(self.cfg.restart.unresponsive_s);
        let (unresponsive, limit, first) = if self.cfg.health.is_query() {
            let limit = configured.max(QUERY_KILL);
            let start = Duration::from_secs_f64(self.cfg.restart.start_timeout_s);
            (QUERY_UNRESPONSIVE, limit, limit.max(start))
        } else {
            (Duration::from_secs(2), configured, configured)
        };
        let what = match self.cfg.health {
            Health::TickpackStats => "health checks".to_string(),
            h => format!("its {h} query"),
        };
        let mut events = vec![];
        for i in &mut self.instances {
            let Some(child) = i.child.as_mut() else {
                continue;
            };
            let since = i.last_heard.unwrap_or(i.started);
            if now.duration_since(since) > unresponsive && i.state == InstanceState::Running {
                i.state = InstanceState::Unresponsive;
                events.push(format!("instance {} stopped answering {what}", i.spec.id));
            }
            let limit = if i.last_heard.is_none() { first } else { limit };
            if now.duration_since(since) > limit {
                let _ = child.kill();
                let secs = limit.as_secs_f64();
                events.push(if i.last_heard.is_none() {
                    let log = std::fs::read_to_string(log_path(&self.cfg.run_dir, i.spec.id))
                        .unwrap_or_default();
                    format!(
                        "instance {} never answered {what} within {secs:.0} s of starting: killed, will restart; its last output: {}",
                        i.spec.id,
                        last_lines(&log, LOG_LINES)
                    )
                } else {
                    format!(
                        "instance {} silent for {secs:.0} s: killed, will restart",
                        i.spec.id
                    )
                });
                i.last_heard = Some(now);
            }
        }
        for e in events {
            self.event(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_of_a_log_skip_blank_ones() {
        assert_eq!(last_lines("a\n\nb\n c \n\n", 2), "b | c");
        assert_eq!(last_lines("only", 3), "only");
        assert_eq!(last_lines("", 3), "");
    }

    #[test]
    fn a_received_datagram_carries_the_kernels_time_stamp() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_timestamps(&rx).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = wall_ns();
        tx.send_to(b"hello", rx.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 16];
        let t0 = Instant::now();
        let got = loop {
            if let Some(r) = recv_stamped(&rx, &mut buf) {
                break r;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "nothing arrived");
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(&buf[..got.0], b"hello");
        assert_eq!(got.1, tx.local_addr().unwrap());
        assert!(got.2 >= before - 1_000_000_000, "a stamp near now");
        assert!(recv_stamped(&rx, &mut buf).is_none(), "nothing more");
    }
}
