//! One io_uring for the many connected UDP sockets of one thread.
//!
//! The emulated players keep a connected socket each. Reading and writing
//! them one system call at a time costs more than the datagrams do: a call
//! per send, a `recvmmsg` per socket that has something, an `epoll_wait`
//! and a wake-up per arrival. A [`UdpRing`] keeps a multishot `recvmsg`
//! armed on every socket, so the kernel takes each arriving datagram into a
//! buffer of one shared pool without a call per socket, and it queues
//! sends, which leave together in the next [`UdpRing::reap`].
//!
//! The ring runs its completions only inside `reap`
//! (`IORING_SETUP_DEFER_TASKRUN`): an arriving datagram does not wake the
//! thread, so a thread that sleeps until its next deadline pays one wake-up
//! per deadline however many datagrams came. Each datagram carries the time
//! the kernel received it (`SO_TIMESTAMPNS`, turned into the monotonic
//! clock), so reading it late does not make it look late. A new ring waits
//! (a few ms at most, usually) until the kernel stamps at receipt
//! ([`KernelStamps`]): on a machine where no socket asked for stamps yet,
//! the first datagrams would otherwise carry the time of their read.
//!
//! What one `reap` may report, besides datagrams: a send that failed
//! ([`RingEvent::SendFailed`], with its socket's token: the rest of the
//! batch still leaves), a datagram longer than the buffers
//! ([`RingEvent::Truncated`]: counted, not delivered), and a receive that
//! ended in an error ([`RingEvent::RecvFailed`], e.g. "port unreachable" on
//! one socket while the others deliver). A receive that ends, for an error
//! or because the pool ran dry, is armed again within the same `reap`; the
//! kernel keeps the socket's datagrams meanwhile, up to its buffer. Failures
//! come after the datagrams of the same `reap`.
//!
//! The ring belongs to the thread that made it (`IORING_SETUP_SINGLE_ISSUER`);
//! [`UdpRing`] is not `Send`.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::clock::now_ns;
use crate::stamps::{self, kernel_stamp_ns, wall_ns, KernelStamps};

/// How long a new ring waits for the kernel to stamp at receipt.
const STAMPS_LIVE_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);
/// The pool's buffer group id (any value; one group per ring).
const GROUP: u16 = 1;
/// `user_data` bit of a receive; a send has it clear.
const RECV: u64 = 1 << 63;
/// Room for one `SCM_TIMESTAMPNS` control message (`CMSG_SPACE(16)` on
/// 64-bit Linux: a 16-byte header and a 16-byte timespec).
const CONTROL: usize = 32;
/// The header multishot `recvmsg` writes before the payload
/// (`struct io_uring_recvmsg_out`).
const OUT_HEADER: usize = 16;
/// Most rounds of one `reap` (each: submit, run the arrivals, re-arm what
/// ended); bounds the work a flood on one socket can cause per call.
const MAX_ROUNDS: usize = 8;

/// What [`UdpRing::reap`] hands over, each naming the socket by the token
/// [`UdpRing::add`] gave it.
#[derive(Debug)]
pub enum RingEvent<'a> {
    /// A datagram and when the kernel received it (monotonic ns; the time
    /// of the `reap` if the kernel gave no stamp).
    Datagram {
        token: usize,
        data: &'a [u8],
        received_ns: u64,
    },
    /// A datagram longer than the buffers: taken off the socket, not delivered.
    Truncated { token: usize },
    /// The socket's receive ended in an error (it is armed again).
    RecvFailed { token: usize, error: io::Error },
    /// One queued send failed; the others of its batch are not affected.
    SendFailed { token: usize, error: io::Error },
}

/// Counters of what the ring did, for benchmarks and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RingStats {
    /// `io_uring_enter` calls.
    pub enters: u64,
    /// Receives armed again after they ended.
    pub rearms: u64,
    /// Times a receive ended because every buffer was taken.
    pub pool_empty: u64,
}

/// Sizes of a [`UdpRing`].
#[derive(Debug, Clone, Copy)]
pub struct RingSizes {
    /// Submission queue entries: sends and arms queued beyond it are
    /// submitted early, in more calls.
    pub submissions: u32,
    /// Receive buffers in the pool (a power of two, at most 32768): how
    /// many datagrams can wait between two `reap`s without a receive
    /// ending for want of a buffer.
    pub buffers: u16,
    /// Longest datagram delivered whole; longer ones are
    /// [`RingEvent::Truncated`].
    pub max_datagram: usize,
}

impl RingSizes {
    /// Sizes for `sockets` sockets receiving about `per_socket` datagrams
    /// each between two reaps.
    pub fn for_sockets(sockets: usize, per_socket: usize, max_datagram: usize) -> Self {
        let want = (sockets.max(1) * per_socket.max(1)).next_power_of_two();
        Self {
            submissions: 256,
            buffers: want.clamp(64, 1 << 15) as u16,
            max_datagram,
        }
    }
}

/// Many connected UDP sockets served by one io_uring (see the module docs).
pub struct UdpRing {
    // Dropped first: the kernel must be done with the buffers below before
    // they go (see `Drop`).
    ring: IoUring,
    pool: BufPool,
    /// The template every multishot `recvmsg` was armed with (the kernel
    /// lays each buffer out by it; parsing needs it too).
    msg: Box<libc::msghdr>,
    fds: Vec<RawFd>,
    armed: Vec<bool>,
    /// Send buffers; a slot is reused once its send completed.
    sends: Vec<Vec<u8>>,
    free_sends: Vec<u32>,
    cqes: Vec<cqueue::Entry>,
    rearm: Vec<usize>,
    /// Failures of this reap, handed over after its datagrams.
    failed: Vec<(usize, bool, i32)>,
    stats: RingStats,
    /// Not `Send`: the ring serves the thread that made it.
    _thread: std::marker::PhantomData<*const ()>,
    /// Keeps the kernel stamping receipts while the ring lives.
    stamps: KernelStamps,
}

impl UdpRing {
    /// A ring of the given sizes. Fails on kernels without io_uring (or
    /// with it disabled, `kernel.io_uring_disabled`), multishot `recvmsg`
    /// or deferred task work (Linux 6.1): callers then fall back to
    /// `epoll` and batched system calls.
    pub fn new(sizes: RingSizes) -> io::Result<Self> {
        if !sizes.buffers.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the ring's buffer count must be a power of two",
            ));
        }
        let cq = (u32::from(sizes.buffers) * 2).max(sizes.submissions * 2);
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_submit_all()
            .setup_cqsize(cq)
            .build(sizes.submissions)?;
        // Bounded: a kernel that never turns stamping on leaves the ring
        // with read times for stamps, no worse than epoll's.
        let stamps = KernelStamps::wait_live(STAMPS_LIVE_WITHIN)?;
        let pool = BufPool::new(sizes.buffers, OUT_HEADER + CONTROL + sizes.max_datagram)?;
        // SAFETY: `io_uring_buf_reg` takes the ring's address and size; the
        // mapping stays until the pool is dropped, after the ring (field order).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                pool.ring as u64,
                sizes.buffers,
                GROUP,
                0,
            )?;
        }
        // SAFETY: an all-zero msghdr is valid: no name, no iovec.
        let mut msg: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msg.msg_controllen = CONTROL;
        let completions = ring.params().cq_entries() as usize;
        Ok(Self {
            ring,
            pool,
            msg,
            fds: vec![],
            armed: vec![],
            sends: vec![],
            free_sends: vec![],
            // As many as one look at the completion queue can give: no
            // reap allocates.
            cqes: Vec::with_capacity(completions),
            rearm: vec![],
            failed: vec![],
            stats: RingStats::default(),
            _thread: std::marker::PhantomData,
            stamps,
        })
    }

    /// Serves `fd` (a connected UDP socket, which the caller keeps open for
    /// the ring's life) from now on: asks the kernel to stamp what it
    /// receives and arms its receive. Returns the socket's token: indices
    /// 0, 1, 2... in the order of the calls.
    pub fn add(&mut self, fd: RawFd) -> io::Result<usize> {
        stamps::enable(fd)?;
        let token = self.fds.len();
        self.fds.push(fd);
        self.armed.push(false);
        // Every socket may need re-arming (and may fail) in one reap.
        self.rearm.reserve(self.fds.len() - self.rearm.len());
        self.failed.reserve(self.fds.len() - self.failed.len());
        self.arm(token)?;
        Ok(token)
    }

    /// Queues one datagram on socket `token`; it leaves with the next
    /// [`UdpRing::reap`] (or earlier, when the submission queue is full).
    /// A failure is reported there as [`RingEvent::SendFailed`].
    pub fn send(&mut self, token: usize, data: &[u8]) -> io::Result<()> {
        let fd = *self
            .fds
            .get(token)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no such socket token"))?;
        let slot = match self.free_sends.pop() {
            Some(s) => s,
            None => {
                self.sends.push(Vec::with_capacity(data.len().max(256)));
                // Room for every slot to come back in one reap.
                self.free_sends.reserve(self.sends.len());
                (self.sends.len() - 1) as u32
            }
        };
        let buf = &mut self.sends[slot as usize];
        buf.clear();
        buf.extend_from_slice(data);
        let sqe = opcode::Send::new(types::Fd(fd), buf.as_ptr(), buf.len() as u32)
            .flags(libc::MSG_DONTWAIT)
            .build()
            .user_data((u64::from(slot) << 32) | token as u64);
        // The slot's buffer is neither touched nor freed until its
        // completion is reaped (the slot is free only then).
        self.push(sqe)
    }

    /// Submits what is queued, lets the kernel run the receives that are
    /// ready, and hands every completion to `f`. Never waits. Returns how
    /// many events `f` got.
    pub fn reap<F: FnMut(RingEvent<'_>)>(&mut self, mut f: F) -> io::Result<usize> {
        let mut events = 0;
        for _ in 0..MAX_ROUNDS {
            self.enter(0)?;
            self.cqes.clear();
            self.cqes.extend(self.ring.completion());
            if self.cqes.is_empty() {
                break;
            }
            let mono = now_ns();
            let wall_to_mono = i128::from(mono) - wall_ns();
            for i in 0..self.cqes.len() {
                let (data, res, flags) = {
                    let c = &self.cqes[i];
                    (c.user_data(), c.result(), c.flags())
                };
                let token = (data & 0xffff_ffff) as usize;
                if data & RECV == 0 {
                    self.free_sends.push(((data >> 32) & 0x7fff_ffff) as u32);
                    if res < 0 {
                        self.failed.push((token, true, -res));
                    }
                    continue;
                }
                if !cqueue::more(flags) && token < self.armed.len() {
                    self.armed[token] = false;
                    self.rearm.push(token);
                }
                if res < 0 {
                    if res == -libc::ENOBUFS {
                        self.stats.pool_empty += 1;
                    } else if res != -libc::ECANCELED {
                        self.failed.push((token, false, -res));
                    }
                    continue;
                }
                let Some(bid) = cqueue::buffer_select(flags) else {
                    continue;
                };
                let buf = self.pool.filled(bid, res as usize);
                events += 1;
                match types::RecvMsgOut::parse(buf, &self.msg) {
                    Ok(out) if !out.is_payload_truncated() => {
                        let received_ns = kernel_stamp_ns(out.control_data())
                            .map(|wall| (wall + wall_to_mono).clamp(0, i128::from(mono)) as u64)
                            .unwrap_or(mono);
                        f(RingEvent::Datagram {
                            token,
                            data: out.payload_data(),
                            received_ns,
                        });
                    }
                    _ => f(RingEvent::Truncated { token }),
                }
                self.pool.give_back(bid);
            }
            self.pool.publish();
            if self.rearm.is_empty() {
                break;
            }
            while let Some(token) = self.rearm.pop() {
                self.stats.rearms += 1;
                self.arm(token)?;
            }
        }
        // Failures last: the kernel reports a socket's pending error (an
        // ICMP "port unreachable") before the datagrams queued ahead of it,
        // which the receive armed again then reads; handing the error over
        // first would have a player give up its session before it reads,
        // say, the server's goodbye that came before the error.
        for (token, send, errno) in self.failed.drain(..) {
            events += 1;
            let error = io::Error::from_raw_os_error(errno);
            f(if send {
                RingEvent::SendFailed { token, error }
            } else {
                RingEvent::RecvFailed { token, error }
            });
        }
        Ok(events)
    }

    /// Whether the kernel was seen stamping at receipt when the ring was
    /// made (see [`KernelStamps`]).
    pub fn stamps_live(&self) -> bool {
        self.stamps.live()
    }

    /// What the ring did so far.
    pub fn stats(&self) -> RingStats {
        self.stats
    }

    /// Sockets served.
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// No socket served yet.
    pub fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }

    fn arm(&mut self, token: usize) -> io::Result<()> {
        let sqe = opcode::RecvMsgMulti::new(types::Fd(self.fds[token]), &*self.msg, GROUP)
            .build()
            .user_data(RECV | token as u64);
        self.armed[token] = true;
        self.push(sqe)
    }

    fn push(&mut self, sqe: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer an entry points at (a send slot, the
            // msghdr template, the pool) lives until its completion is
            // reaped or the ring is gone.
            if unsafe { self.ring.submission().push(&sqe) }.is_ok() {
                return Ok(());
            }
            // Full: submit what is queued, then there is room.
            self.enter(0)?;
        }
    }

    /// One `io_uring_enter`: submits the queue and runs the ready work
    /// (`GETEVENTS`), waiting for `wait` completions.
    fn enter(&mut self, wait: u32) -> io::Result<()> {
        self.stats.enters += 1;
        let queued = self.ring.submission().len() as u32;
        loop {
            // SAFETY: no argument; the flags are the kernel's.
            let r = unsafe {
                self.ring.submitter().enter::<libc::sigset_t>(
                    queued,
                    wait,
                    io_uring::EnterFlags::GETEVENTS.bits(),
                    None,
                )
            };
            match r {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Completions are backed up: they are read in this reap.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for UdpRing {
    fn drop(&mut self) {
        // Cancel every receive and wait (bounded) until the kernel says they
        // ended, so no buffer is written after it is unmapped. If it does
        // not say so in time the pool is leaked instead of unmapped.
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(0xffff_ffff);
        let _ = self.push(cancel);
        for _ in 0..100 {
            if !self.armed.iter().any(|&a| a) {
                break;
            }
            let _ = self.enter(0);
            for c in self.ring.completion() {
                let token = (c.user_data() & 0xffff_ffff) as usize;
                if c.user_data() & RECV != 0 && !cqueue::more(c.flags()) {
                    if let Some(a) = self.armed.get_mut(token) {
                        *a = false;
                    }
                }
            }
            if self.armed.iter().any(|&a| a) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        if self.armed.iter().any(|&a| a) {
            self.pool.leak = true;
        } else {
            let _ = self.ring.submitter().unregister_buf_ring(GROUP);
        }
    }
}

/// The receive buffers: a provided-buffer ring (the kernel takes one per
/// datagram) over one slab, both mapped anonymously.
struct BufPool {
    /// `entries` × `io_uring_buf`, page aligned; the kernel reads the tail
    /// from the first entry's last field.
    ring: *mut types::BufRingEntry,
    ring_bytes: usize,
    slab: *mut u8,
    slab_bytes: usize,
    buf_size: usize,
    mask: u16,
    tail: u16,
    /// The kernel may still hold buffers: never unmap.
    leak: bool,
}

impl BufPool {
    fn new(entries: u16, buf_size: usize) -> io::Result<Self> {
        let ring_bytes = usize::from(entries) * std::mem::size_of::<types::BufRingEntry>();
        let slab_bytes = usize::from(entries) * buf_size;
        let ring = map(ring_bytes)?.cast::<types::BufRingEntry>();
        let slab = match map(slab_bytes) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: `ring` was just mapped with `ring_bytes`.
                unsafe { libc::munmap(ring.cast(), ring_bytes) };
                return Err(e);
            }
        };
        let mut pool = Self {
            ring,
            ring_bytes,
            slab,
            slab_bytes,
            buf_size,
            mask: entries - 1,
            tail: 0,
            leak: false,
        };
        for bid in 0..entries {
            pool.give_back(bid);
        }
        pool.publish();
        Ok(pool)
    }

    /// Buffer `bid` as the kernel filled it (`len` bytes).
    fn filled(&self, bid: u16, len: usize) -> &[u8] {
        let bid = usize::from(bid & self.mask);
        let len = len.min(self.buf_size);
        // SAFETY: the buffer lies inside the slab; the kernel handed it to us
        // with this completion and takes it again only after `give_back`.
        unsafe { std::slice::from_raw_parts(self.slab.add(bid * self.buf_size), len) }
    }

    /// Returns buffer `bid` to the kernel (seen after [`BufPool::publish`]).
    fn give_back(&mut self, bid: u16) {
        let bid = bid & self.mask;
        // SAFETY: the index is masked into the ring's `mask + 1` entries.
        let e = unsafe { &mut *self.ring.add(usize::from(self.tail & self.mask)) };
        // SAFETY: inside the slab (bid <= mask).
        e.set_addr(unsafe { self.slab.add(usize::from(bid) * self.buf_size) } as u64);
        e.set_len(self.buf_size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field lies in the first entry, which is mapped;
        // the kernel reads it with acquire semantics.
        unsafe {
            let tail = types::BufRingEntry::tail(self.ring).cast::<AtomicU16>();
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for BufPool {
    fn drop(&mut self) {
        if self.leak {
            return;
        }
        // SAFETY: both were mapped in `new` with these sizes; the ring that
        // used them is gone (it is dropped before the pool).
        unsafe {
            libc::munmap(self.ring.cast(), self.ring_bytes);
            libc::munmap(self.slab.cast(), self.slab_bytes);
        }
    }
}

fn map(bytes: usize) -> io::Result<*mut u8> {
    // SAFETY: an anonymous private mapping; no file, no fixed address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes.max(1),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p.cast())
}

#[cfg(test)]
mod tests;
