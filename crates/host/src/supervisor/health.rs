//! Health: every running instance is asked on its own socket, the replies
//! read, and the liveness rule applied (`liveness.rs`); readiness by a log
//! line or a bound port is `ready.rs`'s.
//!
//! - `tickpack`: a stats request over the tickpack protocol every check
//!   interval (1 s by default); the replies also carry the tick and frame
//!   figures shown in the status.
//! - `q3`, `a2s`: the game's own query every interval (2 s by default)
//!   from each start (`probe.rs`, over the game query layer; servers
//!   rate-limit queries), its map, players and round trip in the status.
//! - At each window's end the instance's evidence is read (`usage.rs`:
//!   its cgroup's CPU time, the UDP datagrams read in its namespace; netns
//!   backend only): a window left unanswered while its server read others'
//!   datagrams and ran is not held against it (`liveness.rs`), and a
//!   starting server kept busy that way is not killed at its start limit
//!   (it stays `starting` until answered).
//! - Unanswered checks in a row make an instance `unresponsive` and then
//!   get it killed (and restarted by the restart policy): the spec's
//!   [`tickpack_game::launch::HealthTiming`] (`[health]` in a game's
//!   definition), by default `tickpack` at the 1st and the 4th (about 2 s and 5 s of silence),
//!   `q3`/`a2s` at the 2nd and the 4th (about 6 s and 10 s).
//! - An instance that is not ready yet (its check never answered, or its
//!   log line or port not seen) gets its start time limit,
//!   `start_timeout_s`: what its game's `[ready]` says, `timeout_s` +
//!   `per_server_s` x the servers started at once (a bench step's, a
//!   host's instances); then it is killed, reported with the last lines
//!   of its log.
//! - `none`: `running` once the process has lived 200 ms (or its log line
//!   or port was seen).
//!
//! One instance cannot starve the checks of another: every instance has
//! its own UDP socket, connected to its address, so the kernel drops
//! datagrams from any other source and a flood fills only the flooder's
//! own receive queue; each poll reads at most [`READ_BUDGET`] datagrams
//! per instance. The supervisor never blames an instance for its own full
//! buffer: the kernel counts what it dropped on each socket
//! (`SO_RXQ_OVFL`, a counter in every datagram's control message), and a
//! check window in which datagrams of that instance were dropped is not
//! judged (its answer may be among them): a restart needs evidence.
//!
//! Replies are only received here, never decoded: each goes to the
//! supervisor's decoder, an unprivileged child ([`super::decoder`]), whose
//! typed answer the query session and the liveness rule take; a decoder
//! that fails leaves those windows unjudged and is started again.
//!
//! Replies are read with the kernel's receive time stamp
//! (`SO_TIMESTAMPNS`, wall clock), turned into the supervisor's monotonic
//! clock the queries run on ([`Supervisor::query_clock`]), so round trips
//! do not depend on when the supervisor's loop gets to them.

use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tickpack_game::launch::Ready;
use tickpack_wire::Packet;

use super::decoder::{Ask, Decoded, Decoder, DecoderError};
use super::lifecycle::Input;
use super::{ready, usage, Supervisor};
use crate::event::{EventKind, NotReady};
use crate::launch::Health;

/// How many lines of an instance's log a message quotes.
pub(super) const LOG_LINES: usize = 3;
/// The most datagrams read from one instance's socket per poll: a flood
/// costs the supervisor this much and no more; the rest overflows that
/// instance's own queue (counted, never held against anyone).
pub const READ_BUDGET: usize = 64;
/// `SO_RXQ_OVFL` (asm-generic/socket.h; the same on x86 and arm).
const SO_RXQ_OVFL: libc::c_int = 40;

/// The wall clock in nanoseconds (what `SO_TIMESTAMPNS` stamps with).
fn wall_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

fn set_flag(sock: &UdpSocket, option: libc::c_int) -> std::io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt on a live socket with a c_int option value.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Asks the kernel to stamp every datagram `sock` receives, and to say in
/// each how many it dropped so far on that socket.
pub(super) fn enable_stamps_and_drops(sock: &UdpSocket) -> std::io::Result<()> {
    set_flag(sock, libc::SO_TIMESTAMPNS)?;
    set_flag(sock, SO_RXQ_OVFL)
}

/// One instance's check socket: non-blocking, connected to `addr` (the
/// kernel delivers only what `addr` sends to it), stamped, drops counted.
pub(super) fn check_socket(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind("0.0.0.0:0")?;
    s.connect(addr)?;
    s.set_nonblocking(true)?;
    enable_stamps_and_drops(&s)?;
    Ok(s)
}

/// One datagram read (non-blocking socket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Received {
    pub(super) len: usize,
    pub(super) from: SocketAddr,
    /// The kernel's receive stamp (the wall clock now if it has none).
    pub(super) at_ns: i128,
    /// The socket's drop counter when it was queued (`SO_RXQ_OVFL`; the
    /// kernel leaves it out while nothing was dropped).
    drops: Option<u32>,
}

pub(super) fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> Option<Received> {
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
    let (mut at, mut drops) = (None, None);
    // SAFETY: the CMSG macros walk the control buffer the kernel filled,
    // within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                at = Some(i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec));
            }
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_RXQ_OVFL {
                drops = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    // SAFETY: the kernel wrote the sender's address (the socket is IPv4).
    let from = unsafe { from.assume_init() };
    if i32::from(from.sin_family) != libc::AF_INET {
        return None;
    }
    let from = SocketAddr::V4(SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)),
        u16::from_be(from.sin_port),
    ));
    Some(Received {
        len: n as usize,
        from,
        at_ns: at.unwrap_or_else(wall_ns),
        drops,
    })
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

/// How long an instance may take to be ready (see the module header):
/// `start_timeout`, what its game's `[ready]` says (`timeout_s` +
/// `per_server_s` x the servers started at once), whatever its health
/// check's kill rule; `None`: no limit (no check, ready when the process
/// lived 200 ms).
pub(super) fn start_limit(
    health: Health,
    ready: &Ready,
    start_timeout: Duration,
) -> Option<Duration> {
    match (ready, health) {
        (Ready::Health, Health::None) => None,
        _ => Some(start_timeout),
    }
}

impl Supervisor {
    /// The clock the game queries run on: monotonic, since the supervisor
    /// started.
    pub(super) fn query_clock(&self) -> Duration {
        self.started.elapsed()
    }

    /// A kernel receive stamp (wall clock, ns) on [`Self::query_clock`]:
    /// as long ago as the wall clock says it was.
    pub(super) fn stamp_on_query_clock(&self, at_ns: i128) -> Duration {
        let now = self.query_clock();
        let age_ns = (wall_ns() - at_ns).clamp(0, i128::from(u64::MAX)) as u64;
        now.saturating_sub(Duration::from_nanos(age_ns))
    }

    /// Sends every running instance what is due on its own socket: the
    /// stats request of a new check window (`tickpack`), the game query
    /// datagrams (a query every interval, an A2S query again with its
    /// challenge at once); call after [`Self::read_health`] and
    /// [`Self::check_liveness`] at every poll (a window is judged before
    /// the next one's check goes out, so each check counts in its own).
    pub(super) fn send_checks(&mut self, now: Duration) {
        let health = self.cfg.health;
        if health == Health::None {
            return;
        }
        let mut out = Vec::with_capacity(64);
        for i in &mut self.instances {
            let (Some(_), Some(sock)) = (&i.child, &i.check) else {
                continue;
            };
            let due = i.liveness.check_due();
            if health == Health::TickpackStats {
                if due {
                    // Signed with the instance's key and numbered: the
                    // server answers it once, from its own budget for the
                    // host's checks, and refuses copies of it.
                    let (nonce, proof) = match &i.health_key {
                        Some(k) => {
                            i.health_seq += 1;
                            let (nonce, proof) = k.check(i.health_seq);
                            (nonce, Some(proof))
                        }
                        None => (1, None),
                    };
                    let _ = sock.send(&Packet::StatsRequest { nonce, proof }.to_vec());
                    i.liveness.sent();
                }
            } else {
                while i.probe.poll_transmit(now, &mut out) {
                    let _ = sock.send(&out);
                    i.liveness.sent();
                }
            }
        }
    }

    /// Starts the checks' decoder ([`super::decoder`]) as the host's
    /// readers user.
    pub(super) fn start_decoder(&mut self) -> Result<(), super::HostError> {
        let d = Decoder::start(&self.exe, self.readers_user())
            .map_err(|e| super::HostError::Isolation(format!("the health checks' decoder: {e}")))?;
        self.decoder = Some(d);
        Ok(())
    }

    /// Reads what every instance sent its check socket (at most
    /// [`READ_BUDGET`] datagrams each) and the drops the kernel counted,
    /// has the decoder say what each datagram is, and takes its answers.
    pub(super) fn read_health(&mut self, now: Instant) {
        let health = self.cfg.health;
        let mut buf = [0u8; super::decoder::MAX_DATAGRAM];
        let mut events = vec![];
        // (instance, received at, what to decode it as, its bytes)
        let mut got: Vec<(usize, Duration, Ask, Vec<u8>)> = vec![];
        for k in 0..self.instances.len() {
            for _ in 0..READ_BUDGET {
                let i = &self.instances[k];
                let Some(sock) = &i.check else { break };
                let Some(r) = recv_stamped(sock, &mut buf) else {
                    break;
                };
                let at = self.stamp_on_query_clock(r.at_ns);
                let i = &mut self.instances[k];
                if let Some(d) = r.drops.filter(|&d| d != i.check_drops) {
                    // A counter that moved: the supervisor lost datagrams
                    // of this instance in this window.
                    i.liveness.overflowed();
                    if i.check_drops == 0 {
                        events.push(EventKind::CheckSocketOverflowed {
                            instance: i.spec.id,
                            dropped: d,
                        });
                    }
                    i.check_drops = d;
                }
                if r.from != i.addr {
                    continue;
                }
                let ask = match health {
                    Health::TickpackStats => Ask::Stats,
                    Health::None => continue,
                    // A challenge's query goes again in `send_checks`.
                    _ => match i.probe.query() {
                        Some(q) => Ask::Query(q),
                        None => continue,
                    },
                };
                got.push((k, at, ask, buf[..r.len].to_vec()));
            }
        }
        if !got.is_empty() {
            self.take_decoded(now, &got, &mut events);
        }
        for e in events {
            self.event(e);
        }
    }

    /// Has the decoder say what the datagrams `got` are and takes its
    /// answers; if it fails, none of those instances' windows is judged,
    /// and it is started again (at most once a second).
    fn take_decoded(
        &mut self,
        now: Instant,
        got: &[(usize, Duration, Ask, Vec<u8>)],
        events: &mut Vec<EventKind>,
    ) {
        if self.decoder.is_none() && self.decoder_retry.is_none_or(|t| now >= t) {
            self.decoder_retry = Some(now + Duration::from_secs(1));
            if let Err(e) = self.start_decoder() {
                events.push(EventKind::DecoderFailed {
                    error: e.to_string(),
                });
            }
        }
        let items: Vec<(Ask, &[u8])> = got.iter().map(|(_, _, a, d)| (*a, &d[..])).collect();
        let decoded = match self.decoder.as_mut() {
            Some(d) => d.decode_all(&items),
            None => Err(DecoderError::Ended),
        };
        let decoded = match decoded {
            Ok(d) => d,
            Err(e) => {
                // Kept only when it was running: a decoder that could not
                // start said so above.
                if self.decoder.take().is_some() {
                    events.push(EventKind::DecoderFailed {
                        error: e.to_string(),
                    });
                }
                for (k, ..) in got {
                    self.instances[*k].liveness.overflowed();
                }
                return;
            }
        };
        for ((k, at, _, _), d) in got.iter().zip(decoded) {
            let i = &mut self.instances[*k];
            let alive = match d {
                // An answer to one of our checks, not any stats.
                Decoded::Stats(Some(s))
                    if i.health_key.as_ref().is_none_or(|key| key.answers(s.nonce)) =>
                {
                    i.stats = Some(s);
                    true
                }
                Decoded::Stats(_) => false,
                Decoded::Query(heard) => i.probe.handle_heard(*at, heard),
            };
            if alive {
                i.last_heard = Some(now);
                i.liveness.heard();
                // Counted only while its process runs.
                i.life.handle(now, Input::Answered);
            }
        }
    }

    /// Marks instances ready whose readiness shows: the process lived
    /// 200 ms (no check), their log line, their port.
    pub(super) fn check_readiness(&mut self) {
        let health = self.cfg.health;
        let now = Instant::now();
        for i in &mut self.instances {
            let Some(child) = &i.child else { continue };
            if i.life.ready() {
                continue;
            }
            let ready = match &i.spec.server.ready {
                Ready::Health => {
                    health == Health::None
                        && now.duration_since(i.life.started()) > Duration::from_millis(200)
                }
                Ready::Log(_) => i.log_watch.as_mut().is_some_and(|w| w.poll()),
                Ready::Port(t) => {
                    ready::port_bound(std::path::Path::new("/proc"), child.id(), *t, i.addr.port())
                }
            };
            if ready {
                i.life.handle(now, Input::Ready);
            }
        }
    }

    /// Judges the check windows over by `clock` (the query clock), with
    /// the evidence read at their end, and hands each verdict to the
    /// instance's lifecycle (which asks for kills in [`Supervisor::poll`]).
    pub(super) fn check_liveness(&mut self, clock: Duration) {
        let health = self.cfg.health;
        let own_netns = self.cfg.backend == crate::fleet::Backend::Netns;
        let now = Instant::now();
        for i in &mut self.instances {
            let Some(child) = i.child.as_mut().filter(|_| !i.life.killed()) else {
                continue;
            };
            if health != Health::None && i.liveness.window_over(clock) {
                // Read at the window's end, so its evidence is its own.
                let e = usage::evidence(i.cgroup.as_ref(), child.id(), own_netns);
                i.liveness.evidence(e);
            }
            for j in i.liveness.judge(clock) {
                i.life.handle(now, Input::Window(j));
            }
        }
    }
}

/// Why instance `i` was not running at its start limit (`ready`: its
/// readiness had shown).
pub(super) fn not_ready(i: &super::Instance, ready: bool) -> NotReady {
    match (&i.spec.server.ready, ready) {
        (Ready::Log(l), false) => NotReady::Printed {
            line: i.log_watch.as_ref().map_or(l.clone(), |w| w.needle()),
        },
        (Ready::Port(t), false) => NotReady::Bound {
            transport: format!("{t:?}").to_uppercase(),
            port: i.addr.port(),
        },
        _ => NotReady::Answered,
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
        enable_stamps_and_drops(&rx).unwrap();
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
        assert_eq!(&buf[..got.len], b"hello");
        assert_eq!(got.from, tx.local_addr().unwrap());
        assert!(got.at_ns >= before - 1_000_000_000, "a stamp near now");
        assert_eq!(got.drops, None, "nothing dropped yet");
        assert!(recv_stamped(&rx, &mut buf).is_none(), "nothing more");
    }

    #[test]
    fn a_full_receive_queue_shows_its_drops_in_the_next_datagram() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_stamps_and_drops(&rx).unwrap();
        rustix::net::sockopt::set_socket_recv_buffer_size(&rx, 4096).unwrap();
        let tx = check_socket(rx.local_addr().unwrap()).unwrap();
        // Far more than a 4 KiB queue holds: the kernel drops the rest.
        for _ in 0..200 {
            let _ = tx.send(&[7u8; 200]);
        }
        let mut buf = [0u8; 512];
        let first = recv_stamped(&rx, &mut buf).expect("the queue holds some");
        assert_eq!(first.len, 200);
        let mut last = first.drops;
        while let Some(r) = recv_stamped(&rx, &mut buf) {
            last = r.drops.or(last);
        }
        // Drained: what arrives now carries the count of what was lost.
        tx.send(b"after").unwrap();
        let t0 = Instant::now();
        let after = loop {
            if let Some(r) = recv_stamped(&rx, &mut buf) {
                break r;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "nothing arrived");
            std::thread::sleep(Duration::from_millis(1));
        };
        assert!(after.drops.is_some_and(|d| d > 0), "{after:?} {last:?}");
    }

    #[test]
    fn a_connected_check_socket_takes_datagrams_only_from_its_instance() {
        let instance = UdpSocket::bind("127.0.0.1:0").unwrap();
        let other = UdpSocket::bind("127.0.0.1:0").unwrap();
        let check = check_socket(instance.local_addr().unwrap()).unwrap();
        // The check socket's own address as the instance would learn it.
        check.send(b"ask").unwrap();
        let mut buf = [0u8; 64];
        let (_, sup) = instance.recv_from(&mut buf).unwrap();
        let sup = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), sup.port());
        other.send_to(b"flood", sup).unwrap();
        instance.send_to(b"answer", sup).unwrap();
        let t0 = Instant::now();
        let got = loop {
            if let Some(r) = recv_stamped(&check, &mut buf) {
                break r;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "nothing arrived");
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(
            &buf[..got.len],
            b"answer",
            "the other sender's datagram was dropped"
        );
        assert!(recv_stamped(&check, &mut buf).is_none());
    }

    /// Issue 41: with `[ready] timeout_s = 4` and `per_server_s = 2` a
    /// server that never printed its line was killed after 15 s (the
    /// host's default won over the definition's 6 s for one server, and a
    /// query's kill rule over both). The limit is what `[ready]` says.
    #[test]
    fn the_start_limit_was_15_s_whatever_ready_said() {
        let ready = Duration::from_secs(6);
        for h in [Health::TickpackStats, Health::Q3, Health::A2s, Health::None] {
            assert_eq!(start_limit(h, &Ready::Log("up".into()), ready), Some(ready));
            if h != Health::None {
                assert_eq!(start_limit(h, &Ready::Health, ready), Some(ready), "{h}");
            }
        }
        assert_eq!(start_limit(Health::None, &Ready::Health, ready), None);
    }
}
