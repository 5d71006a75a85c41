//! A size-limited file system for each tenant's files: as root (netns
//! backend) every instance's directory `RUN_DIR/instances/N` and every
//! batch command's `RUN_DIR/batch/K` is a tmpfs of its own, mounted by the
//! supervisor in the host's mount namespace before anything is written
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
//! `down` ([`unmount`], called before the directory is removed; also after
//! a `kill -9` of the supervisor, from the recovery).

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

/// Makes `dir` (created by the caller below a root-only parent) a tenant's
/// own: checked to be a directory, not a link, then a fresh tmpfs of
/// `bytes` owned by `owner`, mode 0700 (the mount options set both).
pub(super) fn tenant_dir(dir: &Path, bytes: u64, owner: u32) -> Result<(), super::HostError> {
    super::real_dir(dir)?;
    mount(dir, bytes, owner).map_err(super::io(format!(
        "mounting a {bytes}-byte tmpfs on {}",
        dir.display()
    )))
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
