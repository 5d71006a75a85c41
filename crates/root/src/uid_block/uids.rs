//! Which processes run as which uids: a scan of `/proc`, and ending one
//! of them without ever signalling a process that took its PID since.
//!
//! A process is counted when any of its four uids (real, effective, saved,
//! file system: the `Uid:` line of `/proc/PID/status`) is in the range
//! asked for and it is not dead (a zombie runs nothing, signals nothing,
//! and is gone once its parent reaps it). The scan is bounded: at most [`MAX_PIDS`] entries,
//! at most [`STATUS_MAX`] bytes of each status; a process that exits
//! while it is read (its directory gone, `ESRCH`) is skipped, as is any
//! entry that is not a PID.
//!
//! What the scan cannot see: a process started after its directory's turn
//! came. A process that forks and exits to stay ahead of the scan still
//! leaves one process in place for as long as it lives: an instance's
//! command is PID 1 of its own PID namespace, and that namespace dies
//! with it, so a running instance is always seen by its PID 1.

use std::io::Read;
use std::ops::Range;
use std::path::Path;

/// The most `/proc` entries one scan reads (the kernel's largest
/// `pid_max`, 2^22).
pub const MAX_PIDS: usize = 1 << 22;

/// The most bytes read of one `/proc/PID/status` (the `Uid:` line is its
/// ninth, a few hundred bytes in).
pub const STATUS_MAX: u64 = 4096;

/// A process one of whose uids is in the range scanned for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidProcess {
    pub pid: u32,
    /// Real, effective, saved and file system uid.
    pub uids: [u32; 4],
}

impl UidProcess {
    /// Whether any of its uids is in `range`.
    pub fn runs_in(&self, range: &Range<u32>) -> bool {
        self.uids.iter().any(|u| range.contains(u))
    }
}

/// Every process under `proc_root` (`/proc`, or a tree of the same shape
/// in tests) one of whose uids is in `range`, by ascending PID. Fails only
/// when `proc_root` itself cannot be read.
pub fn processes_with_uids(
    proc_root: &Path,
    range: &Range<u32>,
) -> std::io::Result<Vec<UidProcess>> {
    let mut found = vec![];
    for entry in std::fs::read_dir(proc_root)?.take(MAX_PIDS) {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(uids) = live_uids_at(proc_root, pid) {
            let p = UidProcess { pid, uids };
            if p.runs_in(range) {
                found.push(p);
            }
        }
    }
    found.sort_by_key(|p| p.pid);
    Ok(found)
}

/// The four uids of `pid` under `proc_root`, if it runs (a zombie does not).
pub fn live_uids_at(proc_root: &Path, pid: u32) -> Option<[u32; 4]> {
    let f = std::fs::File::open(proc_root.join(pid.to_string()).join("status")).ok()?;
    let mut text = String::new();
    f.take(STATUS_MAX).read_to_string(&mut text).ok()?;
    let state = text.lines().find_map(|l| l.strip_prefix("State:"))?;
    if matches!(state.trim_start().chars().next(), Some('Z' | 'X') | None) {
        return None;
    }
    parse_uid_line(&text)
}

/// The `Uid:` line of a `/proc/PID/status` text: four decimal uids.
pub fn parse_uid_line(status: &str) -> Option<[u32; 4]> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut it = line.split_whitespace().map(|u| u.parse::<u32>());
    let mut uids = [0; 4];
    for u in &mut uids {
        *u = it.next()?.ok()?;
    }
    Some(uids)
}

/// SIGKILLs `pid` if, at the moment it is signalled, it is still a process
/// running as a uid in `range`; returns whether it was signalled.
///
/// The process is pinned first with a pidfd (`pidfd_open`), then its uids
/// are read: if the PID was given to another process in between, the pidfd
/// names the old one, which is gone, and the signal fails with ESRCH. So
/// no process that took the PID since is ever signalled. Without pidfds
/// (kernels before 5.3) nothing is signalled.
pub fn kill_if_uid_in(pid: u32, range: &Range<u32>) -> bool {
    if pid <= 1 || pid == std::process::id() {
        return false;
    }
    let Ok(fd) = tickpack_sys::pidfd::open(pid) else {
        return false;
    };
    let runs_in = live_uids_at(Path::new("/proc"), pid)
        .is_some_and(|uids| UidProcess { pid, uids }.runs_in(range));
    if !runs_in {
        return false;
    }
    // pidfd_send_signal on the pidfd we own, no siginfo, no flags.
    rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(name: &str, uids: &str) -> String {
        format!("Name:\t{name}\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t7\nPid:\t7\nPPid:\t1\nUid:\t{uids}\nGid:\t0\t0\t0\t0\n")
    }

    /// A temp tree shaped like /proc.
    struct FakeProc(std::path::PathBuf);

    impl FakeProc {
        fn new(tag: &str) -> FakeProc {
            let d = std::env::temp_dir().join(format!("tp-uids-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            FakeProc(d)
        }
        fn process(&self, pid: &str, status: &str) {
            let d = self.0.join(pid);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("status"), status).unwrap();
        }
    }

    impl Drop for FakeProc {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn every_one_of_the_four_uids_counts() {
        let p = FakeProc::new("four");
        p.process("10", &status("real", "201001\t201001\t201001\t201001"));
        p.process("11", &status("saved", "0\t0\t201002\t0"));
        p.process("12", &status("fsuid", "0\t0\t0\t201999"));
        p.process("13", &status("other", "1000\t1000\t1000\t1000"));
        p.process(
            "14",
            &status("next-block", "202000\t202000\t202000\t202000"),
        );
        let found = processes_with_uids(&p.0, &(201_000..202_000)).unwrap();
        let pids: Vec<u32> = found.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [10, 11, 12]);
    }

    #[test]
    fn what_is_not_a_readable_process_is_skipped() {
        let p = FakeProc::new("odd");
        p.process("20", &status("ok", "201001\t201001\t201001\t201001"));
        // Gone between the listing and the read: a directory without status.
        std::fs::create_dir_all(p.0.join("21")).unwrap();
        // Not a PID.
        p.process("self", &status("self", "201001\t201001\t201001\t201001"));
        std::fs::write(p.0.join("uptime"), "1.0 1.0\n").unwrap();
        // No Uid line, a short one, a garbled one, no State line.
        p.process("22", "Name:\tx\nState:\tS (sleeping)\n");
        p.process("23", "State:\tS (sleeping)\nUid:\t201001\t201001\n");
        p.process(
            "24",
            "State:\tS (sleeping)\nUid:\t201001\tx\t201001\t201001\n",
        );
        p.process("26", "Uid:\t201001\t201001\t201001\t201001\n");
        // A zombie, a dead one.
        p.process(
            "27",
            &status("z", "201001\t201001\t201001\t201001").replace("S (sleeping)", "Z (zombie)"),
        );
        p.process(
            "28",
            &status("x", "201001\t201001\t201001\t201001").replace("S (sleeping)", "X (dead)"),
        );
        // The Uid line past the bytes read is not seen.
        p.process(
            "25",
            &format!(
                "Name:\t{}\nState:\tS\nUid:\t201001\t201001\t201001\t201001\n",
                "x".repeat(STATUS_MAX as usize)
            ),
        );
        let found = processes_with_uids(&p.0, &(201_000..202_000)).unwrap();
        assert_eq!(found.iter().map(|p| p.pid).collect::<Vec<_>>(), [20]);
        assert!(processes_with_uids(&p.0.join("none"), &(0..1)).is_err());
    }

    #[test]
    fn the_real_proc_shows_this_process_under_its_uid() {
        let me = rustix::process::getuid().as_raw();
        let found = processes_with_uids(Path::new("/proc"), &(me..me + 1)).unwrap();
        assert!(found.iter().any(|p| p.pid == std::process::id()));
    }

    #[test]
    fn only_a_process_running_in_the_range_is_killed() {
        let me = rustix::process::getuid().as_raw();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let elsewhere = if me == 0 { 1..2 } else { 0..1 };
        assert!(!kill_if_uid_in(pid, &elsewhere), "not its uid");
        assert!(child.try_wait().unwrap().is_none(), "still runs");
        assert!(
            !kill_if_uid_in(std::process::id(), &(me..me + 1)),
            "never ourselves"
        );
        assert!(kill_if_uid_in(pid, &(me..me + 1)));
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
