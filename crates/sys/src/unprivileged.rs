//! A child of ours that holds no privilege: started as another user when
//! we are root, with nothing of ours but stdin, stdout and stderr, unable
//! to gain privileges by `exec`, and killed when its parent dies.
//!
//! This is how tickpack keeps root away from what it must not trust: the
//! processes that read a hosted server's datagrams (the bench's players
//! and prober) run as a user of their own, the root process beside them
//! only reading their bounded, typed answers (the way OpenSSH's
//! network-facing parser never holds root).

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The user a child runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct User {
    pub uid: u32,
    pub gid: u32,
}

/// `cmd` set to run as `user` (when we are root; otherwise as we are,
/// which is no privilege to drop), its supplementary groups dropped
/// (std does that when root sets a uid), every descriptor above stderr
/// closed at `exec`, `no_new_privs` set (no set-user-ID program or file
/// capability gives it back) and SIGKILL sent to it when the thread that
/// started it ends (the kernel's rule for the death signal: start it from
/// a thread that outlives it), so a parent killed with -9 leaves nothing
/// running as that user.
///
/// After `setuid` from root to another user the kernel clears the
/// permitted, effective and ambient capabilities; the child holds none.
pub fn as_user(cmd: &mut Command, user: User) -> &mut Command {
    if rustix::process::geteuid().is_root() {
        cmd.uid(user.uid).gid(user.gid);
    }
    let parent = rustix::process::getpid();
    // SAFETY: the closure makes system calls only (close_range, prctl,
    // getppid) and allocates nothing, as pre_exec requires. std runs it
    // after the uid and gid changes, so the death signal (which the kernel
    // clears at a credentials change) is set for the new user.
    unsafe {
        cmd.pre_exec(move || {
            crate::fds::cloexec_above_stderr()?;
            rustix::thread::set_no_new_privs(true)?;
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            // The parent died before the death signal was set: nobody
            // would ever kill this child.
            if rustix::process::getppid() != Some(parent) {
                return Err(io::Error::other("the parent ended while the child started"));
            }
            Ok(())
        })
    }
}

/// A command running `exe` as `user` ([`as_user`]), in `/` and a
/// process group of its own (the terminal's Ctrl-C reaches only us, who
/// tell it to stop). This very binary runs through `/proc/self/exe`,
/// which the kernel follows to the file without searching its
/// directories (`user` may not enter a checkout under a private home:
/// `sudo tickpack bench` from a 0700 `~/tickpack`), `argv[0]` `tickpack`;
/// another program by its path.
pub fn command(exe: &std::path::Path, user: User) -> Command {
    let own = std::env::current_exe().is_ok_and(|e| e == exe);
    let mut cmd = if own {
        let mut c = Command::new("/proc/self/exe");
        c.arg0("tickpack");
        c
    } else {
        Command::new(exe)
    };
    cmd.current_dir("/").process_group(0);
    as_user(&mut cmd, user);
    cmd
}

/// What `/proc/PID/task/TID/status` says of a thread's privilege: its
/// real, effective, saved and filesystem uids and its effective
/// capabilities (hex), `None` for a line it lacks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Privilege {
    pub uids: Option<[u32; 4]>,
    pub cap_eff: Option<u64>,
    pub cap_prm: Option<u64>,
    /// The `Seccomp:` mode: 0 none, 2 a filter.
    pub seccomp: Option<u32>,
}

impl Privilege {
    /// Parses a `status` file's text.
    pub fn parse(status: &str) -> Self {
        let mut p = Privilege::default();
        for line in status.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key {
                "Uid" => {
                    let ids: Vec<u32> = value
                        .split_whitespace()
                        .filter_map(|v| v.parse().ok())
                        .collect();
                    p.uids = <[u32; 4]>::try_from(ids).ok();
                }
                "CapEff" => p.cap_eff = u64::from_str_radix(value, 16).ok(),
                "CapPrm" => p.cap_prm = u64::from_str_radix(value, 16).ok(),
                "Seccomp" => p.seccomp = value.parse().ok(),
                _ => {}
            }
        }
        p
    }

    /// No uid is root's and no capability is held or permitted.
    pub fn is_unprivileged(&self) -> bool {
        self.uids.is_some_and(|u| u.iter().all(|&id| id != 0))
            && self.cap_eff == Some(0)
            && self.cap_prm == Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_file_tells_uids_and_capabilities() {
        let text = "Name:\tx\nUid:\t201999\t201999\t201999\t201999\nGid:\t1\t1\t1\t1\n\
                    CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n\
                    CapEff:\t0000000000000000\nCapBnd:\t000001ffffffffff\n";
        let p = Privilege::parse(text);
        assert_eq!(p.uids, Some([201_999; 4]));
        assert!(p.is_unprivileged());
        let root = text.replace("201999\t201999\t201999\t201999", "0\t0\t0\t0");
        assert!(!Privilege::parse(&root).is_unprivileged());
        let capable = text.replace("CapEff:\t0000000000000000", "CapEff:\t0000000000002000");
        assert!(!Privilege::parse(&capable).is_unprivileged());
        assert!(
            !Privilege::parse("Name:\tx\n").is_unprivileged(),
            "unknown is not unprivileged"
        );
    }

    /// The child (`cat` of its own status) runs as `nobody` with no
    /// capability when we are root; as we are otherwise.
    #[test]
    fn a_child_started_as_a_user_holds_no_privilege() {
        let root = rustix::process::geteuid().is_root();
        let mut cmd = Command::new("/bin/cat");
        cmd.arg("/proc/self/status");
        as_user(
            &mut cmd,
            User {
                uid: 65_534,
                gid: 65_534,
            },
        );
        let out = cmd.output().expect("cat runs");
        let p = Privilege::parse(&String::from_utf8_lossy(&out.stdout));
        if root {
            assert_eq!(p.uids, Some([65_534; 4]), "{p:?}");
            assert!(p.is_unprivileged(), "{p:?}");
            let groups = String::from_utf8_lossy(&out.stdout)
                .lines()
                .find(|l| l.starts_with("Groups:"))
                .map(|l| l["Groups:".len()..].trim().to_string());
            assert_eq!(groups.as_deref(), Some(""), "supplementary groups dropped");
        }
        let no_new_privs = String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with("NoNewPrivs:") && l.ends_with('1'));
        assert!(no_new_privs, "no_new_privs set");
    }
}
