//! Config files of a game server, written by root into an instance's
//! directory before the instance starts (the root process's `write_file`,
//! and the supervisor's own without root).
//!
//! The directory is the instance's own (it can write there, and may have
//! left links behind from an earlier run), so nothing here follows a link:
//! each directory on the way is opened with `O_DIRECTORY | O_NOFOLLOW`
//! relative to the one before, the old file is unlinked (which removes a
//! link, never its target) and the new one is created with
//! `O_CREAT | O_EXCL | O_NOFOLLOW`, then given to the instance's user.

use rustix::fs::{AtFlags, Gid, Mode, OFlags, Uid, CWD};
use rustix::io::Errno;
use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

fn c_name(s: &std::ffi::OsStr) -> std::io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

fn open_dir_at(dir: Option<&OwnedFd>, name: &CString) -> std::io::Result<OwnedFd> {
    let at = dir.map_or(CWD, AsFd::as_fd);
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(
        at,
        name.as_c_str(),
        flags,
        Mode::empty(),
    )?)
}

fn chown_fd(fd: &impl AsFd, owner: Option<u32>) -> std::io::Result<()> {
    if let Some(uid) = owner {
        rustix::fs::fchown(fd, Some(Uid::from_raw(uid)), Some(Gid::from_raw(uid)))?;
    }
    Ok(())
}

/// A directory held open to act beneath (`O_PATH`): what is done
/// through it stays in the directory it was when opened, whatever its
/// owner renames or links in its place since.
pub fn open_dir(dir: &Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The path of `name` in the directory `fd` holds open, through
/// `/proc/self/fd` (the kernel resolves the descriptor itself, not the
/// directory's path): for the system calls that take a path only.
pub fn fd_path(fd: &impl AsRawFd, name: &std::ffi::OsStr) -> std::path::PathBuf {
    proc_fd(fd).join(name)
}

/// The directory `fd` holds open, through `/proc/self/fd` ([`fd_path`]).
pub fn proc_fd(fd: &impl AsRawFd) -> std::path::PathBuf {
    Path::new("/proc/self/fd").join(fd.as_raw_fd().to_string())
}

/// Opens `rel` beneath the directory `dir` holds open, with `flags`,
/// reached without a link (`openat2` with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`).
pub fn open_beneath(dir: &impl AsFd, rel: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
    use rustix::fs::ResolveFlags;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    Ok(rustix::fs::openat2(
        dir,
        rel,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        resolve,
    )?)
}

/// Refuses `file` unless it is a regular file (not a directory, FIFO,
/// device or socket).
pub fn regular_file(file: &impl AsFd) -> std::io::Result<()> {
    let mode = rustix::fs::fstat(file)?.st_mode;
    if mode & libc::S_IFMT != libc::S_IFREG {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(())
}

/// Writes `contents` to `dir/rel` (directories on the way created, mode
/// 0700), mode 0600, owned by `owner` (uid = gid) when given. Refuses any
/// link on the way or in place of the file.
pub fn write_file(
    dir: &Path,
    rel: &Path,
    contents: &str,
    owner: Option<u32>,
) -> std::io::Result<()> {
    let at = open_dir_at(None, &c_name(dir.as_os_str())?)?;
    write_file_at(&at, rel, contents, owner)
}

/// [`write_file`] beneath the directory `dir` holds open.
pub fn write_file_at(
    dir: &impl AsFd,
    rel: &Path,
    contents: &str,
    owner: Option<u32>,
) -> std::io::Result<()> {
    let mut names = vec![];
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(c_name(n)?),
            _ => return Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }
    let Some(file) = names.pop() else {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    };
    let mut at = rustix::io::fcntl_dupfd_cloexec(dir, 0)?;
    for name in &names {
        let made = match rustix::fs::mkdirat(&at, name.as_c_str(), Mode::from_raw_mode(0o700)) {
            Ok(()) => true,
            Err(Errno::EXIST) => false,
            Err(e) => return Err(e.into()),
        };
        let next = open_dir_at(Some(&at), name)?;
        if made {
            chown_fd(&next, owner)?;
        }
        at = next;
    }
    // unlinkat removes a link itself, never what it points to. A missing
    // file is fine.
    match rustix::fs::unlinkat(&at, file.as_c_str(), AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&at, file.as_c_str(), flags, Mode::from_raw_mode(0o600))?;
    let mut f = File::from(fd);
    chown_fd(&f, owner)?;
    f.write_all(contents.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The root process's `open_file` handed over a directory (or a FIFO)
    /// as a load command's file: its regular-file check was
    /// `!mode & S_IFMT == S_IFREG`, which no mode satisfies.
    #[test]
    fn open_file_handed_over_what_is_not_a_regular_file() {
        use rustix::fs::OFlags;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        let at = open_dir(dir.path()).unwrap();
        let d = open_beneath(&at, Path::new("d"), OFlags::RDONLY).unwrap();
        assert!(regular_file(&d).is_err(), "a directory passed");
        let f = open_beneath(&at, Path::new("f"), OFlags::RDONLY).unwrap();
        regular_file(&f).unwrap();
        std::os::unix::fs::symlink("f", dir.path().join("l")).unwrap();
        assert!(open_beneath(&at, Path::new("l"), OFlags::RDONLY).is_err());
        assert!(open_beneath(&at, Path::new("../x"), OFlags::RDONLY).is_err());
    }

    fn temp(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tp-cfgfile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_config_file_is_written_and_rewritten_with_its_directories() {
        let d = temp("w");
        write_file(&d, Path::new("baseq3/server.cfg"), "set a 1\n", None).unwrap();
        write_file(&d, Path::new("baseq3/server.cfg"), "set a 2\n", None).unwrap();
        let text = std::fs::read_to_string(d.join("baseq3/server.cfg")).unwrap();
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(text, "set a 2\n");
    }

    #[test]
    fn config_files_are_never_written_through_a_link() {
        let d = temp("l");
        let outside = d.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("victim"), "keep").unwrap();
        let inst = d.join("inst");
        std::fs::create_dir_all(&inst).unwrap();
        // A link in place of the file: replaced by a file, target untouched.
        std::os::unix::fs::symlink(outside.join("victim"), inst.join("server.cfg")).unwrap();
        write_file(&inst, Path::new("server.cfg"), "new", None).unwrap();
        let file_is_plain = !std::fs::symlink_metadata(inst.join("server.cfg"))
            .unwrap()
            .file_type()
            .is_symlink();
        // A link in place of a directory on the way: refused.
        std::os::unix::fs::symlink(&outside, inst.join("baseq3")).unwrap();
        let through_dir = write_file(&inst, Path::new("baseq3/victim"), "new", None);
        let victim = std::fs::read_to_string(outside.join("victim")).unwrap();
        let _ = std::fs::remove_dir_all(&d);
        assert!(file_is_plain);
        assert_eq!(victim, "keep", "the link's target was not written");
        let e = through_dir.expect_err("a linked directory is refused");
        assert!(
            matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)),
            "{e}"
        );
    }
}
