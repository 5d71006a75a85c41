//! A process pinned by a descriptor (`pidfd_open`, Linux 5.3+): it names
//! the process it was opened for even after its PID is reused, and becomes
//! readable (in `poll`/`epoll`) when that process exits, so a waiter wakes
//! at the exit instead of polling for it.

use rustix::process::{pidfd_open, Pid, PidfdFlags};
use std::io;
use std::os::fd::OwnedFd;

/// A pidfd for process `pid` (close-on-exec).
pub fn open(pid: u32) -> io::Result<OwnedFd> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // PID 0 names no process: EINVAL, as the kernel answers it.
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(pidfd_open(pid, PidfdFlags::empty())?)
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
