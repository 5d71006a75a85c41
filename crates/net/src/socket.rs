//! Non-blocking UDP sockets with batched receive (`recvmmsg`) and send (`sendmmsg`).
//!
//! One syscall moves up to a batch of datagrams; with many small game packets
//! per tick that is the difference between a few and a few hundred syscalls.
//! Buffers are owned by [`RecvBatch`] and [`SendBatch`] and reused, so the hot
//! path does not allocate once they have grown to their working size.
//!
//! Nothing here fails on what a peer sends: a datagram larger than the receive
//! buffer is dropped and counted ([`RecvBatch::truncated`]), never a panic.

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};

use crate::NetError;

mod batch;

pub use batch::{RecvBatch, SendBatch};

/// Most datagrams one `recvmmsg`/`sendmmsg` call takes (the kernel's `UIO_MAXIOV`).
pub const MAX_BATCH: usize = 1024;

/// Options applied before `bind`. `None` keeps the kernel default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketOptions {
    /// `SO_RCVBUF` in bytes (the kernel doubles it and caps it at `net.core.rmem_max`).
    pub recv_buffer: Option<usize>,
    /// `SO_SNDBUF` in bytes (the kernel doubles it and caps it at `net.core.wmem_max`).
    pub send_buffer: Option<usize>,
    /// `SO_BUSY_POLL` in µs: a blocking receive polls the device queue this long.
    pub busy_poll_us: Option<u32>,
    /// `SO_REUSEPORT`: other sockets of the same user may bind the same
    /// address too. A connected one among them receives what its peer
    /// sends (the kernel prefers the most specific match), so a server can
    /// give each player a receive queue of its own beside its listening
    /// socket.
    pub reuse_port: bool,
}

/// A non-blocking UDP socket (IPv4 or IPv6).
#[derive(Debug)]
pub struct UdpSocket {
    inner: Socket,
    local: SocketAddr,
}

impl UdpSocket {
    /// Creates a non-blocking, close-on-exec UDP socket, applies `opts` and binds `addr`.
    ///
    /// A port already held by another socket gives [`NetError::AddrInUse`];
    /// any other failure gives [`NetError::Socket`] naming `addr` and the step.
    pub fn bind(addr: SocketAddr, opts: &SocketOptions) -> Result<Self, NetError> {
        let fail =
            |step: &'static str| move |source: io::Error| NetError::Socket { addr, step, source };
        let inner = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(fail("socket"))?;
        inner
            .set_nonblocking(true)
            .map_err(fail("set O_NONBLOCK"))?;
        if let Some(bytes) = opts.recv_buffer {
            inner
                .set_recv_buffer_size(bytes)
                .map_err(fail("set SO_RCVBUF"))?;
        }
        if let Some(bytes) = opts.send_buffer {
            inner
                .set_send_buffer_size(bytes)
                .map_err(fail("set SO_SNDBUF"))?;
        }
        if let Some(us) = opts.busy_poll_us {
            set_int_option(
                &inner,
                libc::SOL_SOCKET,
                libc::SO_BUSY_POLL,
                us as libc::c_int,
            )
            .map_err(fail("set SO_BUSY_POLL"))?;
        }
        if opts.reuse_port {
            inner
                .set_reuse_port(true)
                .map_err(fail("set SO_REUSEPORT"))?;
        }
        match inner.bind(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => {
                return Err(NetError::AddrInUse { addr })
            }
            Err(e) => return Err(fail("bind")(e)),
        }
        let local = inner
            .local_addr()
            .map_err(fail("getsockname"))?
            .as_socket()
            .ok_or_else(|| fail("getsockname")(io::Error::other("not an IP address")))?;
        Ok(UdpSocket { inner, local })
    }

    /// Connects the socket to `addr`: `send` goes there, and only datagrams
    /// from `addr` are received.
    ///
    /// On a connected socket the kernel reports ICMP port-unreachable from
    /// the peer: a later `send`, `recv_batch` or `flush` fails with
    /// [`io::ErrorKind::ConnectionRefused`] once, then works again.
    pub fn connect(&self, addr: SocketAddr) -> Result<(), NetError> {
        self.inner
            .connect(&addr.into())
            .map_err(|source| NetError::Socket {
                addr,
                step: "connect",
                source,
            })
    }

    /// Sets `SO_REUSEPORT` on a socket already bound, so sockets of the
    /// same user bound with [`SocketOptions::reuse_port`] may share its
    /// address (a server's per-player sockets). Bound first without it, the
    /// socket took its port alone: a port in use is refused, and port 0
    /// never picks one another socket holds.
    pub fn share_port(&self) -> Result<(), NetError> {
        self.inner
            .set_reuse_port(true)
            .map_err(|source| NetError::Socket {
                addr: self.local,
                step: "set SO_REUSEPORT",
                source,
            })
    }

    /// The bound address, with the port the kernel picked for port 0.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The actual `SO_RCVBUF` in bytes (what the kernel granted, already doubled).
    pub fn recv_buffer_size(&self) -> io::Result<usize> {
        self.inner.recv_buffer_size()
    }

    /// The actual `SO_SNDBUF` in bytes (what the kernel granted, already doubled).
    pub fn send_buffer_size(&self) -> io::Result<usize> {
        self.inner.send_buffer_size()
    }

    /// Datagrams the kernel dropped on this socket since it was created,
    /// mostly because the receive buffer was full (`SO_MEMINFO`'s drop
    /// counter; it wraps at 2^32). One cheap syscall: fine once a second.
    pub fn drops(&self) -> io::Result<u64> {
        // Not in the libc crate; the same value on every Linux architecture.
        const SO_MEMINFO: libc::c_int = 55;
        let mut info = [0u32; 16];
        let mut len = mem::size_of_val(&info) as libc::socklen_t;
        // SAFETY: `info` is a live, writable buffer of `len` bytes and `len`
        // a live socklen_t; the kernel writes at most `len` bytes into it.
        let rc = unsafe {
            libc::getsockopt(
                self.inner.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_MEMINFO,
                info.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let i = libc::SK_MEMINFO_DROPS as usize;
        if (len as usize) < (i + 1) * mem::size_of::<u32>() {
            return Err(io::Error::other("SO_MEMINFO without a drop counter"));
        }
        Ok(u64::from(info[i]))
    }

    /// Sends one datagram to `to`. A full send buffer gives `WouldBlock`.
    pub fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<usize> {
        self.inner.send_to(buf, &to.into())
    }

    /// Sends one datagram to the connected peer. A full send buffer gives `WouldBlock`.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.send(buf)
    }

    /// Receives up to `batch.capacity()` datagrams with one `recvmmsg(MSG_DONTWAIT)`.
    ///
    /// Returns how many datagrams were taken off the socket, `Ok(0)` when none
    /// was waiting. Those that fit the buffers are then in `batch.iter()`;
    /// those that did not are dropped and counted in `batch.truncated()`, so
    /// `n == batch.len() + batch.truncated()`. Call again until `Ok(0)` to drain.
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.prepare();
        // SAFETY: `prepare` pointed every header at this batch's own buffers,
        // address slots and iovecs, which stay alive and unmoved for the call;
        // `hdrs.len()` headers are initialized; a null timeout is allowed.
        let n = unsafe {
            libc::recvmmsg(
                self.inner.as_raw_fd(),
                batch.hdrs.as_mut_ptr(),
                batch.hdrs.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(err),
            };
        }
        let n = n as usize;
        batch.collect(n);
        Ok(n)
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

fn set_int_option(
    sock: &Socket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` is a live c_int and its size is passed; the fd is open.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Encodes `addr` as a `sockaddr_storage` and its length.
fn to_sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is valid.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Decodes a `sockaddr_storage` the kernel filled; `None` for other families.
fn from_sockaddr(storage: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    let len = len as usize;
    match storage.ss_family as libc::c_int {
        libc::AF_INET if len >= mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, the
            // length covers it, and sockaddr_storage is aligned for it.
            let sin =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len >= mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                u32::from_be(sin6.sin6_flowinfo),
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn localhost() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap()
    }

    fn bind() -> UdpSocket {
        UdpSocket::bind(localhost(), &SocketOptions::default()).unwrap()
    }

    /// Receives until `want` datagrams arrived or 2 s passed.
    fn recv_all(
        sock: &UdpSocket,
        batch: &mut RecvBatch,
        want: usize,
    ) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut out = Vec::new();
        let give_up = crate::now_ns() + 2_000_000_000;
        while out.len() < want && crate::now_ns() < give_up {
            if sock.recv_batch(batch).unwrap() == 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            out.extend(batch.iter().map(|(a, b)| (a, b.to_vec())));
        }
        out
    }

    #[test]
    fn drops_count_what_a_full_receive_buffer_turned_away() {
        let small = SocketOptions {
            recv_buffer: Some(4096),
            ..Default::default()
        };
        let rx = UdpSocket::bind(localhost(), &small).unwrap();
        assert_eq!(rx.drops().unwrap(), 0);
        let tx = bind();
        // Far more than a 4 KiB buffer holds; nobody reads.
        for _ in 0..200 {
            let _ = tx.send_to(&[7; 1000], rx.local_addr());
        }
        let drops = rx.drops().unwrap();
        assert!((100..=200).contains(&drops), "drops {drops}");
    }

    #[test]
    fn second_bind_on_same_address_is_addr_in_use_naming_it() {
        let first = bind();
        let addr = first.local_addr();
        assert_ne!(addr.port(), 0, "port 0 was not resolved");
        match UdpSocket::bind(addr, &SocketOptions::default()) {
            Err(e @ NetError::AddrInUse { .. }) => {
                assert!(e.to_string().contains(&addr.to_string()), "{e}")
            }
            other => panic!("expected AddrInUse, got {other:?}"),
        }
    }

    #[test]
    fn bind_failure_names_the_address() {
        // 192.0.2.1 (TEST-NET-1) is not configured on this machine.
        let addr: SocketAddr = "192.0.2.1:9".parse().unwrap();
        let err = UdpSocket::bind(addr, &SocketOptions::default()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("192.0.2.1:9") && msg.contains("bind"), "{msg}");
    }

    #[test]
    fn options_are_applied() {
        let opts = SocketOptions {
            recv_buffer: Some(256 * 1024),
            send_buffer: Some(128 * 1024),
            busy_poll_us: Some(0),
            reuse_port: false,
        };
        let sock = UdpSocket::bind(localhost(), &opts).unwrap();
        // Linux doubles the request (bookkeeping overhead); rmem_max may cap it.
        assert!(sock.recv_buffer_size().unwrap() >= 200 * 1024);
        assert!(sock.send_buffer_size().unwrap() >= 128 * 1024);
    }

    #[test]
    fn recv_batch_returns_every_datagram_with_source_and_bytes() {
        let server = bind();
        let client = bind();
        let sent: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 1 + i as usize * 100]).collect();
        for d in &sent {
            client.send_to(d, server.local_addr()).unwrap();
        }
        let mut batch = RecvBatch::new(4, 2048);
        let got = recv_all(&server, &mut batch, sent.len());
        assert_eq!(got.len(), sent.len());
        for ((from, bytes), want) in got.iter().zip(&sent) {
            assert_eq!(*from, client.local_addr());
            assert_eq!(bytes, want);
        }
        assert_eq!(
            server.recv_batch(&mut batch).unwrap(),
            0,
            "socket not drained"
        );
        assert!(batch.is_empty());
    }

    #[test]
    fn recv_batch_handles_ipv6() {
        let Ok(server) = UdpSocket::bind("[::1]:0".parse().unwrap(), &SocketOptions::default())
        else {
            eprintln!("skipping: no IPv6 loopback on this machine");
            return;
        };
        let client =
            UdpSocket::bind("[::1]:0".parse().unwrap(), &SocketOptions::default()).unwrap();
        client.send_to(b"six", server.local_addr()).unwrap();
        let mut batch = RecvBatch::new(8, 64);
        let got = recv_all(&server, &mut batch, 1);
        assert_eq!(got, vec![(client.local_addr(), b"six".to_vec())]);
    }

    #[test]
    fn oversized_datagrams_are_dropped_and_counted_not_returned_cut() {
        let server = bind();
        let client = bind();
        client.send_to(&[1; 10], server.local_addr()).unwrap();
        client.send_to(&[2; 100], server.local_addr()).unwrap();
        client.send_to(&[3; 5], server.local_addr()).unwrap();
        let mut batch = RecvBatch::new(8, 16);
        let mut taken = 0;
        let mut got = Vec::new();
        let give_up = crate::now_ns() + 2_000_000_000;
        while taken < 3 && crate::now_ns() < give_up {
            taken += server.recv_batch(&mut batch).unwrap();
            got.extend(batch.iter().map(|(_, b)| b.to_vec()));
        }
        assert_eq!(got, vec![vec![1; 10], vec![3; 5]]);
        assert_eq!(batch.truncated_total(), 1);
    }

    #[test]
    fn send_batch_flush_delivers_every_datagram() {
        let server = bind();
        let client = bind();
        let n = 50;
        let mut out = SendBatch::new();
        for i in 0..n {
            out.push(server.local_addr(), format!("datagram {i}").as_bytes());
        }
        assert_eq!(out.len(), n);
        assert_eq!(out.flush(&client).unwrap(), n);
        assert!(out.is_empty());
        let mut batch = RecvBatch::new(16, 64);
        let got = recv_all(&server, &mut batch, n);
        let want: Vec<_> = (0..n)
            .map(|i| (client.local_addr(), format!("datagram {i}").into_bytes()))
            .collect();
        assert_eq!(got, want);
        // The batch is reusable after a flush.
        out.push(server.local_addr(), b"again");
        assert_eq!(out.flush(&client).unwrap(), 1);
        assert_eq!(recv_all(&server, &mut batch, 1)[0].1, b"again");
    }

    #[test]
    fn send_batch_stops_at_full_buffer_and_keeps_the_rest() {
        let server = UdpSocket::bind(
            localhost(),
            &SocketOptions {
                recv_buffer: Some(4096),
                ..Default::default()
            },
        )
        .unwrap();
        let client = UdpSocket::bind(
            localhost(),
            &SocketOptions {
                send_buffer: Some(4096),
                ..Default::default()
            },
        )
        .unwrap();
        let mut out = SendBatch::new();
        for _ in 0..5000 {
            out.push(server.local_addr(), &[0; 1200]);
        }
        // Must return (not spin) whatever the kernel does with the overflow.
        let sent = out.flush(&client).unwrap();
        assert_eq!(sent + out.len(), 5000);
        out.clear();
        assert!(out.is_empty());
        assert_eq!(out.dropped() as usize, 5000 - sent);
    }

    #[test]
    fn port_unreachable_on_connected_socket_is_an_error_not_a_panic() {
        // Find a port nobody listens on: bind, note it, close.
        let closed = bind().local_addr();
        let client = bind();
        client.connect(closed).unwrap();
        client.send(b"anyone?").unwrap();
        let mut batch = RecvBatch::new(4, 64);
        // The ICMP error arrives asynchronously; it shows on a later call.
        let give_up = crate::now_ns() + 2_000_000_000;
        let err = loop {
            match client.recv_batch(&mut batch) {
                Err(e) => break e,
                Ok(_) if crate::now_ns() > give_up => panic!("no ECONNREFUSED within 2 s"),
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        // Reported once; the socket keeps working.
        assert_eq!(client.recv_batch(&mut batch).unwrap(), 0);
        // The same through a batched send.
        let mut out = SendBatch::new();
        client.send(b"again?").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        out.push(closed, b"x");
        let err = out.flush(&client).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        assert_eq!(out.dropped(), 1);
    }

    #[test]
    fn sockaddr_round_trips() {
        for s in [
            "127.0.0.1:80",
            "10.1.2.3:65535",
            "[::1]:5000",
            "[fe80::1%2]:9",
        ] {
            let addr: SocketAddr = s.parse().unwrap();
            let (storage, len) = to_sockaddr(addr);
            assert_eq!(from_sockaddr(&storage, len), Some(addr), "{s}");
        }
    }
}
