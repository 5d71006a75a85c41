//! The reusable buffers of batched I/O: [`RecvBatch`] (what one
//! `recvmmsg` fills) and [`SendBatch`] (what `sendmmsg` sends, kept queued
//! when the kernel will not take it all). Their `mmsghdr` arrays point into
//! their own heap buffers and are rewritten before every call.

use std::io;
use std::mem;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use super::{from_sockaddr, to_sockaddr, UdpSocket, MAX_BATCH};

/// How many `sendmmsg` calls one [`SendBatch::flush`] makes at most.
const MAX_SEND_CALLS: usize = 8;

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
    pub(super) hdrs: Vec<libc::mmsghdr>,
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
    pub(super) fn prepare(&mut self) {
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
    pub(super) fn collect(&mut self, n: usize) {
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
