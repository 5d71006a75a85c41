//! Giving root up: under `sudo`, `tickpack bench` and `tickpack host up`
//! start the root processes' broker ([`crate::service::broker`]) and then
//! run as the user who typed the command, with no capability; every
//! mechanism that needs root is asked of a host's root process from then
//! on. Without `sudo` (root itself logged in, a CI job) nothing changes:
//! there is no user to become, and the datagram readers still run as
//! users of their own ([`tickpack_sys::unprivileged`]).

use std::path::Path;

use rustix::fs::{Gid, Uid};
use tickpack_sys::unprivileged::User;

/// The user `sudo` ran us for (`SUDO_UID`, `SUDO_GID`), when we are root
/// and that user is not.
pub fn sudo_user() -> Option<User> {
    if !tickpack_sys::is_root() {
        return None;
    }
    let id = |k: &str| std::env::var(k).ok()?.trim().parse::<u32>().ok();
    let (uid, gid) = (id("SUDO_UID")?, id("SUDO_GID")?);
    (uid != 0 && uid != u32::MAX && gid != u32::MAX).then_some(User { uid, gid })
}

/// Starts the broker (`exe`; at its end it removes `remove_empty` if that
/// is an empty directory), then becomes `user`: no supplementary group,
/// its gid and uid as real, effective and saved ids (the kernel clears
/// every capability with the uid), dumpable again (so its own `/proc`
/// files are its own). Only while the process has one thread: a thread
/// started before would keep root.
pub fn give_up_root(exe: &Path, user: User, remove_empty: Option<&Path>) -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let threads = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .map(str::trim);
    if threads != Some("1") {
        return Err(format!(
            "root is given up before any thread starts ({} threads run)",
            threads.unwrap_or("?")
        ));
    }
    crate::service::broker::start(exe, remove_empty)
        .map_err(|e| format!("starting the root broker: {e}"))?;
    let (uid, gid) = (Uid::from_raw(user.uid), Gid::from_raw(user.gid));
    let done = rustix::thread::set_thread_groups(&[])
        .and_then(|()| rustix::thread::set_thread_res_gid(gid, gid, gid))
        .and_then(|()| rustix::thread::set_thread_res_uid(uid, uid, uid));
    done.map_err(|e| format!("becoming uid {} gid {}: {e}", user.uid, user.gid))?;
    if rustix::process::geteuid().is_root() || rustix::process::getuid().is_root() {
        return Err("still root after giving it up".into());
    }
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::Dumpable);
    Ok(())
}
