//! What a killed supervisor leaves behind, and how the next run finds it.
//!
//! A supervisor killed with `-9` cannot clean up. Everything it creates is
//! therefore listed in `RUN_DIR/state.json` before it is created (see
//! [`crate::supervisor`]); the run dir is stable per host name
//! (`/run/tickpack/<name>` unless told otherwise), so `host down`, the next
//! `host up` and the next `bench` of the same name find the records.
//!
//! This module holds the two pieces of that recovery that are not about
//! links or cgroups:
//!
//! - [`RecordedProcess`]: a PID with its start time (`/proc/PID/stat` field
//!   22, clock ticks since boot), so a recorded PID that the kernel has since
//!   given to another program is never signalled.
//! - [`remove_firewall`]: the host's nftables table, by its exact name.
//! - [`uids`]: which processes still run as a uid block's uids (a host
//!   killed with `-9` leaves its instances running), and ending one by
//!   PID without signalling a process that took the PID since.
//!
//! Processes inside the host's cgroups are killed with the cgroups
//! ([`crate::cgroup::remove_stale`]).

use rustix::process::{kill_process, Pid, Signal};
use serde::{Deserialize, Serialize};

pub use tickpack_root::uid_block::uids;

/// A process the supervisor started, identified beyond its PID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedProcess {
    pub pid: u32,
    /// Start time in clock ticks after boot (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
}

impl RecordedProcess {
    /// Reads `pid`'s start time now; `None` if it is gone.
    pub fn of(pid: u32) -> Option<RecordedProcess> {
        start_ticks(pid).map(|start_ticks| RecordedProcess { pid, start_ticks })
    }

    /// Whether the PID still names the process that was recorded.
    pub fn is_same_process(&self) -> bool {
        start_ticks(self.pid) == Some(self.start_ticks)
    }

    /// SIGKILLs the process if it is still the recorded one; returns whether
    /// it was signalled.
    pub fn kill_if_same(&self) -> bool {
        if self.pid <= 1 || self.pid == std::process::id() || !self.is_same_process() {
            return false;
        }
        let Some(pid) = libc::pid_t::try_from(self.pid).ok().and_then(Pid::from_raw) else {
            return false;
        };
        // kill(2) on one positive PID, checked above to be the process we
        // recorded (same start time).
        kill_process(pid, Signal::KILL).is_ok()
    }
}

/// `/proc/PID/stat` field 22; the command name (field 2) may hold spaces
/// and parentheses, so fields are counted after the last `)`.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    // After ")" come field 3 (state) onwards: field 22 is the 20th.
    let f = rest.split_whitespace().nth(19)?;
    // A zombie is already dead: nothing to kill.
    if rest.split_whitespace().next() == Some("Z") {
        return None;
    }
    f.parse().ok()
}

pub use crate::netpath::filter::remove_firewall;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_process_is_recognised_by_its_start_time() {
        let me = RecordedProcess::of(std::process::id()).expect("we exist");
        assert!(me.is_same_process());
        let reused = RecordedProcess {
            start_ticks: me.start_ticks + 1,
            ..me
        };
        assert!(!reused.is_same_process(), "a reused PID is not ours");
        assert!(!reused.kill_if_same(), "and is never signalled");
        // We never signal ourselves, even when recorded.
        assert!(!me.kill_if_same());
    }

    #[test]
    fn a_process_that_is_gone_is_not_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        let rec = RecordedProcess::of(child.id()).expect("just started");
        assert!(rec.is_same_process());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!rec.is_same_process());
        assert!(!rec.kill_if_same());
    }
}
