//! A size-limited file system for each tenant's files: as root (netns
//! backend) every instance's directory `RUN_DIR/instances/N`, every
//! batch command's `RUN_DIR/batch/K` and every load command's
//! `RUN_DIR/batch/load-N` is a tmpfs of its own, mounted by the host's
//! root process ([`make`]) in the host's mount namespace before anything is written
//! into it (so config files written before the start are on it), owned by
//! the tenant's uid, mode 0700, nosuid and nodev. Its size is `--disk`
//! (`disk =`), [`DEFAULT_DISK_BYTES`] without one. A tenant that fills it
//! gets ENOSPC; the host's disk never sees its files. The kernel charges
//! its pages to the memory cgroup of whoever wrote them, so an instance's
//! files count against its memory limit too.
//!
//! The tenant's sandbox mounts this directory again at the same path
//! (spawn's `open_tree` of the working directory, which clones the tmpfs),
//! so the files live across restarts of one `host up` and are gone at
//! `down` ([`empty`]: [`unmount`], then the directory removed; also after
//! a `kill -9` of the supervisor, from the recovery).
//!
//! Their parents, `instances/` and `batch/`, are root's, mode 0700: no
//! tenant (nor the supervisor, once it runs unprivileged) can swap a
//! tenant's directory for a link.

use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The size of a tenant's files without `--disk`: enough for a game
/// server's configuration, logs and downloads, far below a host's disk.
pub const DEFAULT_DISK_BYTES: u64 = 256 << 20;

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a path"))
}

/// Mounts a fresh tmpfs of `bytes` at `dir` (an existing directory of
/// root's tree), owned by `owner` (uid and gid), mode 0700; anything
/// mounted there before is detached first.
pub fn mount(dir: &Path, bytes: u64, owner: u32) -> std::io::Result<()> {
    unmount(dir)?;
    let target = c_path(dir)?;
    let fstype = CString::new("tmpfs").expect("static");
    let opts = CString::new(format!("mode=0700,uid={owner},gid={owner},size={bytes}"))
        .expect("no NUL in numbers");
    rustix::mount::mount(
        fstype.as_c_str(),
        target.as_c_str(),
        fstype.as_c_str(),
        MountFlags::NOSUID | MountFlags::NODEV,
        opts.as_c_str(),
    )?;
    Ok(())
}

/// Makes `RUN_DIR/PARENT/NAME` (`rel`, two components) a tenant's own:
/// `PARENT` made if missing (root's, mode 0700; an existing one must be
/// root's and closed to others), `NAME` made if missing, both checked to
/// be directories reached without a link, then `NAME` a fresh tmpfs of
/// `bytes` owned by `owner`, mode 0700 (the mount options set both).
pub fn make(run_dir: &Path, rel: &Path, bytes: u64, owner: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let mut parts = rel.components();
    let (Some(parent), Some(_), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(std::io::Error::other(format!(
            "{} is not PARENT/NAME",
            rel.display()
        )));
    };
    let refuse = |what: String| Err(std::io::Error::other(what));
    for (dir, private) in [(run_dir.join(parent), true), (run_dir.join(rel), false)] {
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let m = std::fs::symlink_metadata(&dir)?;
        if !m.file_type().is_dir() {
            return refuse(format!(
                "{} is not a directory (a link or a file); refusing to use it",
                dir.display()
            ));
        }
        if private && (m.uid() != 0 || m.mode() & 0o077 != 0) {
            return refuse(format!(
                "{} is not root's alone (uid {}, mode {:o}); refusing to use it",
                dir.display(),
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    mount(&run_dir.join(rel), bytes, owner)
}

/// Removes every tenant directory under `RUN_DIR/instances/` and
/// `RUN_DIR/batch/` (what a tenant left there must never reach the next
/// one), unmounting its tmpfs first. Removal never follows a link: both
/// parents are root's (mode 0700, so no tenant can swap its directory for
/// a link), the unmount is UMOUNT_NOFOLLOW, and
/// [`std::fs::remove_dir_all`] walks each tree with `openat`/`unlinkat`
/// and O_NOFOLLOW, removing a link itself rather than what it names (the
/// fix of CVE-2022-21658). Returns the directories removed, and what could
/// not be removed.
pub fn empty(run_dir: &Path) -> (Vec<String>, Vec<String>) {
    let (mut removed, mut problems) = (vec![], vec![]);
    for parent in ["instances", "batch"] {
        let Ok(entries) = std::fs::read_dir(run_dir.join(parent)) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let gone = match e.file_type() {
                Ok(t) if t.is_dir() => unmount(&path).and_then(|()| std::fs::remove_dir_all(&path)),
                _ => std::fs::remove_file(&path),
            };
            match gone {
                Ok(()) => removed.push(path.display().to_string()),
                Err(err) => problems.push(format!("removing {}: {err}", path.display())),
            }
        }
    }
    (removed, problems)
}

/// Detaches every file system mounted at `dir` (none: nothing happens).
/// Never follows a link at `dir`.
pub fn unmount(dir: &Path) -> std::io::Result<()> {
    let target = c_path(dir)?;
    // Stacked mounts (a supervisor killed between two mounts) come off one
    // by one; the bound keeps a kernel that always answers 0 from looping.
    for _ in 0..16 {
        let flags = UnmountFlags::DETACH | UnmountFlags::NOFOLLOW;
        if let Err(e) = rustix::mount::unmount(target.as_c_str(), flags) {
            return match e {
                // Not a mount point, or no such directory: done.
                Errno::INVAL | Errno::NOENT => Ok(()),
                _ => Err(e.into()),
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmount_of_a_plain_directory_is_nothing() {
        let dir = std::env::temp_dir().join(format!("tp-disk-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = unmount(&dir);
        std::fs::remove_dir(&dir).unwrap();
        // As root: EINVAL (not a mount point) is nothing; as a user: EPERM.
        if tickpack_sys::is_root() {
            r.unwrap();
        } else {
            assert!(r.is_err());
        }
    }

    #[test]
    fn unmount_of_a_missing_directory_is_nothing() {
        let dir = std::env::temp_dir().join(format!("tp-disk-none-{}", std::process::id()));
        if tickpack_sys::is_root() {
            unmount(&dir).unwrap();
        }
    }
}
