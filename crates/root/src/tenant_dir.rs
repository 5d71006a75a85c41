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

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags};
use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// The size of a tenant's files without `--disk`: enough for a game
/// server's configuration, logs and downloads, far below a host's disk.
pub const DEFAULT_DISK_BYTES: u64 = 256 << 20;

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a path"))
}

/// Mounts a fresh tmpfs of `bytes` at `dir` (an existing directory of
/// root's tree, named through its descriptor: [`make`] detached what was
/// mounted there before), owned by `owner` (uid and gid), mode 0700.
fn mount(dir: &Path, bytes: u64, owner: u32) -> std::io::Result<()> {
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

/// Makes `RUN_DIR/PARENT/NAME` (`rel`, two components, beneath the run
/// dir `run_dir` holds open) a tenant's own: `PARENT` made if missing
/// (root's, mode 0700; an existing one must be root's and closed to
/// others), `NAME` made if missing, each opened without following a
/// link, then `NAME` a fresh tmpfs of `bytes` owned by `owner`, mode
/// 0700 (the mount options set both), mounted on the directory opened
/// (through its descriptor: never a path its owner could change since).
pub fn make(run_dir: &impl AsFd, rel: &Path, bytes: u64, owner: u32) -> std::io::Result<()> {
    let mut parts = rel.components();
    let (Some(Component::Normal(parent)), Some(Component::Normal(name)), None) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(std::io::Error::other(format!(
            "{} is not PARENT/NAME",
            rel.display()
        )));
    };
    let parent_fd = private_dir(run_dir, parent, true)?;
    let mut dir = sub_dir(&parent_fd, name, true)?;
    if mounted_at(&dir)? {
        // What was mounted there before is detached first, and the
        // directory opened again (its descriptor held the old mount).
        unmount(&crate::files::fd_path(&parent_fd, name))?;
        dir = sub_dir(&parent_fd, name, false)?;
        if mounted_at(&dir)? {
            return Err(std::io::Error::other("a mount there does not come off"));
        }
    }
    mount(&crate::files::proc_fd(&dir), bytes, owner)
}

/// `PARENT` (`instances` or `batch`) beneath `run_dir`: made ours (root's
/// in the root process), mode 0700, when missing and `create`; opened
/// without following a link and, as root, refused unless a directory of
/// root's closed to others.
fn private_dir(run_dir: &impl AsFd, parent: &OsStr, create: bool) -> std::io::Result<OwnedFd> {
    let fd = sub_dir(run_dir, parent, create)?;
    let st = rustix::fs::fstat(&fd)?;
    let root = rustix::process::geteuid().is_root();
    if root && (st.st_uid != 0 || st.st_mode & 0o077 != 0) {
        return Err(std::io::Error::other(format!(
            "{} is not root's alone (uid {}, mode {:o}); refusing to use it",
            Path::new(parent).display(),
            st.st_uid,
            st.st_mode & 0o7777
        )));
    }
    Ok(fd)
}

/// The directory `name` in `at`, made (mode 0700) if missing and
/// `create`, opened without following a link (a link or a file there:
/// refused).
fn sub_dir(at: &impl AsFd, name: &OsStr, create: bool) -> std::io::Result<OwnedFd> {
    if create {
        match rustix::fs::mkdirat(at, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(at, name, flags, Mode::empty()).map_err(|e| match e {
        Errno::NOTDIR | Errno::LOOP => std::io::Error::other(format!(
            "{} is not a directory (a link or a file); refusing to use it",
            Path::new(name).display()
        )),
        e => e.into(),
    })
}

/// Whether the directory `dir` is the root of a mount (a tmpfs made
/// there): its mount id differs from its parent's.
fn mounted_at(dir: &impl AsFd) -> std::io::Result<bool> {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    let own = statx(dir, "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID)?;
    let up = statx(dir, "..", AtFlags::empty(), StatxFlags::MNT_ID)?;
    Ok(own.stx_mnt_id != up.stx_mnt_id)
}

/// Removes every tenant directory under `RUN_DIR/instances/` and
/// `RUN_DIR/batch/` (what a tenant left there must never reach the next
/// one), unmounting its tmpfs first. Everything is done beneath the run
/// dir `run_dir` holds open, and never follows a link: both parents are
/// opened without following one and must be root's (mode 0700, so no
/// tenant can swap its directory for a link, and the run dir's owner can
/// swap only the parent, which is then not root's or not opened), each
/// entry is named through the parent's descriptor (`/proc/self/fd/N/NAME`),
/// the unmount is UMOUNT_NOFOLLOW, and [`std::fs::remove_dir_all`] walks
/// each tree with `openat`/`unlinkat` and O_NOFOLLOW, removing a link
/// itself rather than what it names (the fix of CVE-2022-21658). Returns
/// the directories removed (`shown`: the run dir's path, for the words),
/// and what could not be removed.
pub fn empty(run_dir: &impl AsFd, shown: &Path) -> (Vec<String>, Vec<String>) {
    let (mut removed, mut problems) = (vec![], vec![]);
    for parent in ["instances", "batch"] {
        let parent_fd = match private_dir(run_dir, parent.as_ref(), false) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                problems.push(format!("{}: {e}", shown.join(parent).display()));
                continue;
            }
        };
        let names = match list(&parent_fd) {
            Ok(names) => names,
            Err(e) => {
                problems.push(format!("reading {}: {e}", shown.join(parent).display()));
                continue;
            }
        };
        for (name, is_dir) in names {
            let path = crate::files::fd_path(&parent_fd, &name);
            let gone = match is_dir {
                true => unmount(&path).and_then(|()| std::fs::remove_dir_all(&path)),
                false => rustix::fs::unlinkat(&parent_fd, name.as_os_str(), AtFlags::empty())
                    .map_err(Into::into),
            };
            let shown = shown.join(parent).join(&name);
            match gone {
                Ok(()) => removed.push(shown.display().to_string()),
                Err(err) => problems.push(format!("removing {}: {err}", shown.display())),
            }
        }
    }
    (removed, problems)
}

/// [`empty`] for the run dir at `dir` (the supervisor's own, without a
/// root process).
pub fn empty_path(dir: &Path) -> (Vec<String>, Vec<String>) {
    match crate::files::open_dir(dir) {
        Ok(fd) => empty(&fd, dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (vec![], vec![]),
        Err(e) => (vec![], vec![format!("{}: {e}", dir.display())]),
    }
}

/// The entries of the directory `dir` holds open (not `.` and `..`), and
/// whether each is a directory (not a link to one).
fn list(dir: &impl AsFd) -> std::io::Result<Vec<(std::ffi::OsString, bool)>> {
    use rustix::fs::{Dir, FileType};
    let mut out = vec![];
    for entry in Dir::read_from(dir)? {
        let entry = entry?;
        let name = std::ffi::OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string();
        if name == "." || name == ".." {
            continue;
        }
        let is_dir = match entry.file_type() {
            FileType::Unknown => {
                let st = rustix::fs::statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                FileType::from_raw_mode(st.st_mode) == FileType::Directory
            }
            t => t == FileType::Directory,
        };
        out.push((name, is_dir));
    }
    Ok(out)
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

    /// Review of issue 40: under sudo the run dir is its user's, who could
    /// put a link in place of root's `instances/`; emptying the tenants'
    /// directories then read and removed what the link named, as root.
    #[test]
    fn the_run_dirs_owner_swapped_instances_for_a_link_and_root_emptied_what_it_named() {
        let t = tempfile::tempdir().unwrap();
        let (run, victim) = (t.path().join("run"), t.path().join("victim"));
        std::fs::create_dir_all(run.join("instances/1")).unwrap();
        std::fs::create_dir_all(victim.join("keep")).unwrap();
        std::fs::write(victim.join("keep/file"), "x").unwrap();
        std::fs::rename(run.join("instances"), run.join("moved")).unwrap();
        std::os::unix::fs::symlink(&victim, run.join("instances")).unwrap();
        let fd = crate::files::open_dir(&run).unwrap();
        let (removed, problems) = empty(&fd, &run);
        assert!(removed.is_empty(), "{removed:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.contains("not a directory (a link")),
            "{problems:?}"
        );
        assert!(
            victim.join("keep/file").exists(),
            "removed through the link"
        );
        // Its own tenants' directories go as before.
        std::fs::remove_file(run.join("instances")).unwrap();
        std::fs::rename(run.join("moved"), run.join("instances")).unwrap();
        if !tickpack_sys::is_root() {
            let (removed, problems) = empty(&fd, &run);
            assert_eq!(removed.len(), 1, "{removed:?} {problems:?}");
            assert!(!run.join("instances/1").exists());
        }
    }

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
