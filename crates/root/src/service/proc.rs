//! A process the supervisor started, by itself or through its host's root
//! process: one handle for both, with what the supervisor asks of a child
//! (its PID, whether it ended and what CPU it took, a signal, SIGKILL).

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::time::Duration;

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use super::Root;

/// How a process ended: its status and the CPU time of it and the
/// children it reaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    pub status: ExitStatus,
    pub cpu: Duration,
}

/// A child of the supervisor, or of its root process.
#[derive(Debug)]
pub enum Proc {
    /// Started by the supervisor itself (no walls: the `process` backend).
    Local { child: Child, ended: Option<Ended> },
    /// Started in walls by the host's root process, which alone reaps it.
    Walled {
        root: Arc<Root>,
        pid: u32,
        ended: Option<Ended>,
    },
}

impl Proc {
    pub fn local(child: Child) -> Proc {
        Proc::Local { child, ended: None }
    }

    /// The root process that started it, if one did.
    pub fn root(&self) -> Option<&Arc<Root>> {
        match self {
            Proc::Local { .. } => None,
            Proc::Walled { root, .. } => Some(root),
        }
    }

    pub fn id(&self) -> u32 {
        match self {
            Proc::Local { child, .. } => child.id(),
            Proc::Walled { pid, .. } => *pid,
        }
    }

    /// How it ended, if it has (then reaped).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        Ok(self.try_ended()?.map(|e| e.status))
    }

    /// How it ended and what CPU it took, if it has ended (then reaped).
    pub fn try_ended(&mut self) -> io::Result<Option<Ended>> {
        match self {
            Proc::Local { child, ended } => {
                if ended.is_none() {
                    *ended = reap(child.id(), false)?.map(ended_of);
                }
                Ok(*ended)
            }
            Proc::Walled { root, pid, ended } => {
                if ended.is_none() {
                    *ended = root.wait(*pid).map_err(io::Error::other)?.map(ended_of);
                }
                Ok(*ended)
            }
        }
    }

    /// Waits until it ends (polling every 10 ms).
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(s) = self.try_wait()? {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL (nothing once it was reaped).
    pub fn kill(&mut self) -> io::Result<()> {
        self.signal(Signal::KILL)
    }

    /// Sends `sig` (nothing once it was reaped).
    pub fn signal(&mut self, sig: Signal) -> io::Result<()> {
        self.send(sig, false)
    }

    /// Sends `sig` to the process group it leads (nothing once it was
    /// reaped).
    pub fn signal_group(&mut self, sig: Signal) -> io::Result<()> {
        self.send(sig, true)
    }

    fn send(&mut self, sig: Signal, group: bool) -> io::Result<()> {
        match self {
            Proc::Local { child, ended } => {
                if ended.is_some() {
                    return Ok(());
                }
                // A child of ours not reaped yet: its PID is its own.
                let pid = Pid::from_child(child);
                if group {
                    kill_process_group(pid, sig)?;
                } else {
                    kill_process(pid, sig)?;
                }
                Ok(())
            }
            Proc::Walled { root, pid, ended } => match ended {
                Some(_) => Ok(()),
                None => root
                    .signal(*pid, sig.as_raw(), group)
                    .map_err(io::Error::other),
            },
        }
    }
}

fn ended_of((status, cpu_us): (i32, u64)) -> Ended {
    Ended {
        status: ExitStatus::from_raw(status),
        cpu: Duration::from_micros(cpu_us),
    }
}

/// Reaps child `pid` if it has exited (waits for it when `block`): its
/// wait status and the CPU time of it and its reaped children (µs).
pub(crate) fn reap(pid: u32, block: bool) -> io::Result<Option<(i32, u64)>> {
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid output buffer.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    let r = loop {
        // SAFETY: wait4 on a child of ours with valid pointers.
        let r = unsafe { libc::wait4(pid as i32, &mut status, flags, &mut ru) };
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break r;
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if r == 0 {
        return Ok(None);
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok(Some((status, us(ru.ru_utime) + us(ru.ru_stime))))
}
