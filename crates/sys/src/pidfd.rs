//! A process pinned by a descriptor (`pidfd_open`, Linux 5.3+): it names
//! the process it was opened for even after its PID is reused, and becomes
//! readable (in `poll`/`epoll`) when that process exits, so a waiter wakes
//! at the exit instead of polling for it.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// A pidfd for process `pid` (close-on-exec).
pub fn open(pid: u32) -> io::Result<OwnedFd> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: pidfd_open with a PID and no flags; returns a new descriptor
    // (close-on-exec) or -1, and has no memory arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    // SAFETY: `fd` was just returned by pidfd_open and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::epoll::Epoll;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    #[test]
    fn a_pidfd_wakes_its_waiter_when_the_process_exits() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let fd = open(child.id()).unwrap();
        let mut e = Epoll::new().unwrap();
        e.add(fd.as_raw_fd(), 1).unwrap();
        let mut out = vec![];
        e.wait(&mut out, Duration::ZERO).unwrap();
        assert!(out.is_empty(), "still running");
        e.wait(&mut out, Duration::from_secs(30)).unwrap();
        assert_eq!(out, [1], "woken by the exit");
        child.wait().unwrap();
        assert!(open(u32::MAX).is_err());
    }
}
