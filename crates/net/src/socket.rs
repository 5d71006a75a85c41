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

/// Most datagrams one `recvmmsg`/`sendmmsg` call takes (the kernel's `UIO_MAXIOV`).
pub const MAX_BATCH: usize = 1024;

/// How many `sendmmsg` calls one [`SendBatch::flush`] makes at most.
const MAX_SEND_CALLS: usize = 8;

/// Options applied before `bind`. `None` keeps the kernel default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketOptions {
    /// `SO_RCVBUF` in bytes (the kernel doubles it and caps it at `net.core.rmem_max`).
    pub recv_buffer: Option<usize>,
    /// `SO_SNDBUF` in bytes (the kernel doubles it and caps it at `net.core.wmem_max`).
    pub send_buffer: Option<usize>,
    /// `SO_BUSY_POLL` in µs: a blocking receive polls the device queue this long.
    pub busy_poll_us: Option<u32>,
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

/// Buffers for one [`UdpSocket::recv_batch`] call, reused across calls.
///
/// ```no_run
/// # use tickpack_net::{RecvBatch, SocketOptions, UdpSocket};
/// let sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), &SocketOptions::default()).unwrap();
/// let mut batch = RecvBatch::new(64, 1500);
/// while sock.recv_batch(&mut batch).unwrap() > 0 {
///     for (from, bytes) in batch.iter() {
///         println!("{from}: {} bytes", bytes.len());
///     }
/// }
/// ```
pub struct RecvBatch {
    buf_size: usize,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    /// (source, slot, length) of each complete datagram of the last call.
    got: Vec<(SocketAddr, usize, usize)>,
    truncated: usize,
    truncated_total: u64,
}

// SAFETY: the raw pointers in `iovs` and `hdrs` only ever point into this
// struct's own heap buffers; they are rewritten before each syscall and never
// dereferenced otherwise, so moving the batch to another thread is sound.
unsafe impl Send for RecvBatch {}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch")
            .field("capacity", &self.capacity())
            .field("buf_size", &self.buf_size)
            .field("len", &self.got.len())
            .field("truncated", &self.truncated)
            .finish()
    }
}

impl RecvBatch {
    /// Room for `count` datagrams (clamped to `1..=`[`MAX_BATCH`]) of up to
    /// `buf_size` bytes each (at least 1). Larger datagrams are dropped and counted.
    pub fn new(count: usize, buf_size: usize) -> Self {
        let count = count.clamp(1, MAX_BATCH);
        let buf_size = buf_size.max(1);
        // SAFETY: these libc structs are plain data; all-zero is valid
        // (null pointers, zero lengths) and everything is rewritten in `prepare`.
        let (addr, iov, hdr) = unsafe { (mem::zeroed(), mem::zeroed(), mem::zeroed()) };
        RecvBatch {
            buf_size,
            bufs: vec![0; count * buf_size],
            addrs: vec![addr; count],
            iovs: vec![iov; count],
            hdrs: vec![hdr; count],
            got: Vec::with_capacity(count),
            truncated: 0,
            truncated_total: 0,
        }
    }

    /// How many datagrams one call can receive.
    pub fn capacity(&self) -> usize {
        self.hdrs.len()
    }

    /// Complete datagrams received by the last call.
    pub fn len(&self) -> usize {
        self.got.len()
    }

    /// True when the last call received no complete datagram.
    pub fn is_empty(&self) -> bool {
        self.got.is_empty()
    }

    /// Datagrams the last call dropped because they did not fit `buf_size`
    /// (or came from an address family other than IPv4/IPv6).
    pub fn truncated(&self) -> usize {
        self.truncated
    }

    /// Datagrams dropped as in [`RecvBatch::truncated`] over the batch's life.
    pub fn truncated_total(&self) -> u64 {
        self.truncated_total
    }

    /// The complete datagrams of the last call: source address and payload.
    pub fn iter(&self) -> impl Iterator<Item = (SocketAddr, &[u8])> + '_ {
        self.got
            .iter()
            .map(|&(from, slot, len)| (from, &self.bufs[slot * self.buf_size..][..len]))
    }

    /// Points every header at its buffer and address slot, resets results.
    fn prepare(&mut self) {
        self.got.clear();
        self.truncated = 0;
        let base = self.bufs.as_mut_ptr();
        for i in 0..self.hdrs.len() {
            self.iovs[i] = libc::iovec {
                // SAFETY: `i * buf_size` is within `bufs` (count * buf_size long).
                iov_base: unsafe { base.add(i * self.buf_size) }.cast(),
                iov_len: self.buf_size,
            };
            let hdr = &mut self.hdrs[i];
            hdr.msg_len = 0;
            hdr.msg_hdr.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            hdr.msg_hdr.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            hdr.msg_hdr.msg_iov = &mut self.iovs[i];
            hdr.msg_hdr.msg_iovlen = 1;
            hdr.msg_hdr.msg_control = std::ptr::null_mut();
            hdr.msg_hdr.msg_controllen = 0;
            hdr.msg_hdr.msg_flags = 0;
        }
    }

    /// Records the first `n` headers the kernel filled.
    fn collect(&mut self, n: usize) {
        for (slot, hdr) in self.hdrs[..n].iter().enumerate() {
            let from = from_sockaddr(&self.addrs[slot], hdr.msg_hdr.msg_namelen);
            match from {
                Some(from) if hdr.msg_hdr.msg_flags & libc::MSG_TRUNC == 0 => {
                    self.got
                        .push((from, slot, (hdr.msg_len as usize).min(self.buf_size)));
                }
                _ => self.truncated += 1,
            }
        }
        self.truncated_total += self.truncated as u64;
    }
}

/// Datagrams queued for one `sendmmsg` call; reused across flushes.
///
/// `push` copies the payload into one internal buffer. `flush` sends from the
/// oldest; what the kernel would not take right now stays queued (see
/// [`SendBatch::flush`]).
pub struct SendBatch {
    data: Vec<u8>,
    /// (destination, start in `data`, length) per queued datagram.
    queued: Vec<(libc::sockaddr_storage, libc::socklen_t, usize, usize)>,
    /// Index of the first datagram not sent yet.
    head: usize,
    dropped: u64,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers in `iovs` and `hdrs` only ever point into this
// struct's own buffers; they are rewritten before each syscall and never
// dereferenced otherwise, so moving the batch to another thread is sound.
unsafe impl Send for SendBatch {}

impl std::fmt::Debug for SendBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendBatch")
            .field("pending", &self.len())
            .field("bytes", &self.data.len())
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl Default for SendBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl SendBatch {
    /// An empty batch; buffers grow on first use and are then reused.
    pub fn new() -> Self {
        SendBatch {
            data: Vec::new(),
            queued: Vec::new(),
            head: 0,
            dropped: 0,
            iovs: Vec::new(),
            hdrs: Vec::new(),
        }
    }

    /// Queues a copy of `bytes` for `to`.
    pub fn push(&mut self, to: SocketAddr, bytes: &[u8]) {
        let (addr, len) = to_sockaddr(to);
        self.queued.push((addr, len, self.data.len(), bytes.len()));
        self.data.extend_from_slice(bytes);
    }

    /// Datagrams queued and not sent yet.
    pub fn len(&self) -> usize {
        self.queued.len() - self.head
    }

    /// True when nothing is waiting to be sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops everything not sent yet (counted in [`SendBatch::dropped`]).
    pub fn clear(&mut self) {
        self.dropped += self.len() as u64;
        self.reset();
    }

    /// Datagrams dropped over the batch's life: by [`SendBatch::clear`], or
    /// refused outright by the kernel in [`SendBatch::flush`].
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn reset(&mut self) {
        self.data.clear();
        self.queued.clear();
        self.head = 0;
    }

    /// Sends queued datagrams with `sendmmsg`, oldest first; returns how many
    /// were sent by this call.
    ///
    /// Never blocks and never loops unboundedly: a partial send is retried
    /// for the rest, at most a few calls. When the socket buffer is full
    /// (`EAGAIN`) it stops, returns what was sent, and leaves the rest queued
    /// ([`SendBatch::len`]) for the next flush or for [`SendBatch::clear`].
    ///
    /// If the kernel refuses the oldest datagram outright (e.g. `EMSGSIZE`,
    /// or `ECONNREFUSED` pending on a connected socket) and nothing was sent
    /// yet, that datagram is dropped (counted in [`SendBatch::dropped`]) and
    /// the error returned, so one bad datagram cannot wedge the queue. If some
    /// were sent first, `Ok(sent)` is returned and the error shows on the next flush.
    pub fn flush(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        let mut sent = 0;
        let mut calls = 0;
        while self.head < self.queued.len() && calls < MAX_SEND_CALLS {
            calls += 1;
            let count = self.prepare();
            // SAFETY: `prepare` pointed `count` headers at this batch's own
            // addresses, payload bytes and iovecs, which are neither moved nor
            // freed during the call; sendmmsg only reads them.
            let rc = unsafe {
                libc::sendmmsg(
                    sock.as_raw_fd(),
                    self.hdrs.as_mut_ptr(),
                    count as libc::c_uint,
                    0,
                )
            };
            if rc >= 0 {
                self.head += rc as usize;
                sent += rc as usize;
                continue;
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => break,
                _ if sent > 0 => break,
                _ => {
                    self.head += 1;
                    self.dropped += 1;
                    self.compact();
                    return Err(err);
                }
            }
        }
        self.compact();
        Ok(sent)
    }

    /// Fills headers for up to [`MAX_BATCH`] datagrams from `head`; returns the count.
    fn prepare(&mut self) -> usize {
        let count = (self.queued.len() - self.head).min(MAX_BATCH);
        if self.hdrs.len() < count {
            // SAFETY: plain data; all-zero is valid and every field used is set below.
            let (iov, hdr) = unsafe { (mem::zeroed(), mem::zeroed()) };
            self.iovs.resize(count, iov);
            self.hdrs.resize(count, hdr);
        }
        let base = self.data.as_mut_ptr();
        for i in 0..count {
            let (ref mut addr, addr_len, start, len) = self.queued[self.head + i];
            self.iovs[i] = libc::iovec {
                // SAFETY: `start..start + len` lies within `data` (set by `push`).
                iov_base: unsafe { base.add(start) }.cast(),
                iov_len: len,
            };
            let hdr = &mut self.hdrs[i];
            hdr.msg_len = 0;
            hdr.msg_hdr.msg_name = (addr as *mut libc::sockaddr_storage).cast();
            hdr.msg_hdr.msg_namelen = addr_len;
            hdr.msg_hdr.msg_iov = &mut self.iovs[i];
            hdr.msg_hdr.msg_iovlen = 1;
            hdr.msg_hdr.msg_control = std::ptr::null_mut();
            hdr.msg_hdr.msg_controllen = 0;
            hdr.msg_hdr.msg_flags = 0;
        }
        count
    }

    /// Forgets sent datagrams once all are gone (cheap, keeps capacity).
    fn compact(&mut self) {
        if self.head >= self.queued.len() {
            self.reset();
        }
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
