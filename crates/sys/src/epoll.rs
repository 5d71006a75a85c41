//! A level-triggered `epoll` set: many sockets, one fd to wait on, and the
//! ready ones named by token without a look at the others.
//!
//! A `poll` over N sockets costs N every call (the server's players'
//! sockets made it a third of the server's CPU); an `epoll` set costs what
//! is ready. A socket closed while in the set leaves it by itself.

use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::event::Timespec;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// An `epoll` set watching its members for input.
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<Event>,
}

impl std::fmt::Debug for Epoll {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epoll").field("fd", &self.fd).finish()
    }
}

/// What [`Epoll::ctl`] does to a member.
enum Op {
    Add,
    Modify,
}

/// Members named by one [`Epoll::ready`] call at most.
const EVENTS: usize = 256;

impl Epoll {
    pub fn new() -> io::Result<Self> {
        let fd = epoll::create(CreateFlags::CLOEXEC)?;
        let none = Event {
            flags: EventFlags::empty(),
            data: EventData::new_u64(0),
        };
        Ok(Self {
            fd,
            events: vec![none; EVENTS],
        })
    }

    /// Watches `fd`; [`Epoll::ready`] names it by `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(Op::Add, fd, token)
    }

    /// Gives the watched `fd` a new token.
    pub fn set_token(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(Op::Modify, fd, token)
    }

    fn ctl(&self, op: Op, fd: RawFd, token: u64) -> io::Result<()> {
        // SAFETY: the borrow lasts for this one epoll_ctl call, during which
        // the caller holds `fd` open (the API names members by number; a
        // number that is not open is EBADF from the kernel, nothing more).
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let data = EventData::new_u64(token);
        match op {
            Op::Add => epoll::add(&self.fd, fd, data, EventFlags::IN)?,
            Op::Modify => epoll::modify(&self.fd, fd, data, EventFlags::IN)?,
        }
        Ok(())
    }

    /// Appends the tokens of members ready now to `out`, without blocking.
    /// Returns `true` if one call could not name them all (then more may
    /// be ready than `out` got).
    pub fn ready(&mut self, out: &mut Vec<u64>) -> io::Result<bool> {
        self.wait(out, std::time::Duration::ZERO)
    }

    /// As [`Epoll::ready`], but waits up to `timeout` (to the millisecond,
    /// rounded up) for a first member to be ready; a signal ends the wait
    /// early with nothing named.
    pub fn wait(&mut self, out: &mut Vec<u64>, timeout: std::time::Duration) -> io::Result<bool> {
        let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i64;
        // Whole milliseconds, so the kernel waits as long as epoll_wait's
        // millisecond timeout did.
        let timeout = Timespec {
            tv_sec: ms / 1000,
            tv_nsec: (ms % 1000) * 1_000_000,
        };
        let n = match epoll::wait(&self.fd, &mut self.events[..], Some(&timeout)) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        out.extend(self.events[..n].iter().map(|e| e.data.u64()));
        Ok(n == self.events.len())
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    fn bind() -> UdpSocket {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_nonblocking(true).unwrap();
        s
    }

    fn tokens(e: &mut Epoll) -> Vec<u64> {
        let mut t = vec![];
        assert!(!e.ready(&mut t).unwrap(), "two members fit one call");
        t.sort_unstable();
        t
    }

    #[test]
    fn names_the_ready_members_by_token_and_follows_a_new_token() {
        let mut e = Epoll::new().unwrap();
        let (a, b, tx) = (bind(), bind(), bind());
        e.add(a.as_raw_fd(), 10).unwrap();
        e.add(b.as_raw_fd(), 20).unwrap();
        assert!(tokens(&mut e).is_empty(), "nothing yet, and no wait");
        tx.send_to(b"x", b.local_addr().unwrap()).unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while tokens(&mut e).is_empty() && std::time::Instant::now() < end {}
        assert_eq!(tokens(&mut e), vec![20], "level-triggered: still ready");
        e.set_token(b.as_raw_fd(), 21).unwrap();
        assert_eq!(tokens(&mut e), vec![21]);
        drop(b);
        assert!(tokens(&mut e).is_empty(), "a closed member leaves the set");
        assert!(e.add(a.as_raw_fd(), 1).is_err(), "added twice");
    }

    #[test]
    fn a_wait_ends_when_a_member_is_ready() {
        let mut e = Epoll::new().unwrap();
        let (a, tx) = (bind(), bind());
        e.add(a.as_raw_fd(), 7).unwrap();
        let mut t = vec![];
        // Nothing comes: the wait returns empty after its timeout.
        e.wait(&mut t, std::time::Duration::from_millis(1)).unwrap();
        assert!(t.is_empty());
        tx.send_to(b"x", a.local_addr().unwrap()).unwrap();
        // A datagram came: named, however long the wait could have been.
        e.wait(&mut t, std::time::Duration::from_secs(3600))
            .unwrap();
        assert_eq!(t, vec![7]);
    }

    /// What a tile step's wait over several hosts stands on: a set that
    /// holds other sets wakes when a member of one of them is ready.
    #[test]
    fn a_set_of_sets_wakes_when_a_member_of_one_is_ready() {
        let (inner_a, inner_b) = (Epoll::new().unwrap(), Epoll::new().unwrap());
        let (a, b, tx) = (bind(), bind(), bind());
        inner_a.add(a.as_raw_fd(), 1).unwrap();
        inner_b.add(b.as_raw_fd(), 1).unwrap();
        let mut outer = Epoll::new().unwrap();
        outer.add(inner_a.as_raw_fd(), 10).unwrap();
        outer.add(inner_b.as_raw_fd(), 20).unwrap();
        let mut t = vec![];
        outer
            .wait(&mut t, std::time::Duration::from_millis(1))
            .unwrap();
        assert!(t.is_empty());
        tx.send_to(b"x", b.local_addr().unwrap()).unwrap();
        outer
            .wait(&mut t, std::time::Duration::from_secs(3600))
            .unwrap();
        assert_eq!(t, vec![20]);
    }
}
