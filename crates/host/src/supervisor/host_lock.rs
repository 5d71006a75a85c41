//! One lock per host name, held by its supervisor for as long as it runs.
//!
//! Everything a host creates carries its name (`tp<name>`: namespaces,
//! links, the nftables table, cgroups), and clean-up after a crash removes
//! by that name. Two run dirs can name the same host, so the run dir's own
//! record is not enough to tell whether a name is in use: `host down
//! --run-dir STALE --name OTHER` once removed a running host's network and
//! cgroups. The lock is an exclusive `flock` on
//! `/run/tickpack/host-locks/<name>.lock`; the kernel releases it when the
//! holder dies, `kill -9` included, so a lock that can be taken belongs to
//! no live host. Whoever removes a host's things by name (the supervisor
//! starting, `down` of a dead host, a bench recovering) holds it first.
//!
//! Without root nothing is created by name outside the run dir, and the
//! lock directory (root's) cannot be written: [`HostLock::acquire`] then
//! returns a lock that holds nothing.

use std::io::{Read, Seek, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use tickpack_sys::lock_file::{self, LockFile, Taken};

/// Where the lock files are (root's own).
pub const LOCK_DIR: &str = "/run/tickpack/host-locks";

/// Who holds a host name's lock, as its file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub run_dir: String,
}

/// A held lock (released when dropped, or when the process dies). Its
/// file is removed when it is dropped, still locked
/// ([`tickpack_sys::lock_file`]).
#[derive(Debug)]
pub struct HostLock {
    /// The locked file; only held, never read.
    _file: Option<LockFile>,
}

impl HostLock {
    /// Takes host `name`'s lock for the host whose run dir is `run_dir`;
    /// `Err(holder)` when a live process holds it. As non-root, a lock
    /// that holds nothing.
    pub fn acquire(name: &str, run_dir: &Path) -> std::io::Result<Result<HostLock, Holder>> {
        if !tickpack_sys::is_root() {
            return Ok(Ok(HostLock { _file: None }));
        }
        Self::acquire_in(Path::new(LOCK_DIR), name, run_dir)
    }

    pub(crate) fn acquire_in(
        dir: &Path,
        name: &str,
        run_dir: &Path,
    ) -> std::io::Result<Result<HostLock, Holder>> {
        // Its parent as any other directory (`/run/tickpack` holds run
        // dirs whose tenants must reach their own `{dir}`); only the lock
        // directory itself is root's alone.
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let file = match lock_file::take(&lock_path(dir, name))? {
            Taken::Held(file) => file,
            Taken::Busy(mut file) => {
                let mut text = String::new();
                let _ = (&mut file).take(4096).read_to_string(&mut text);
                let mut lines = text.lines();
                let pid = lines.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                let run_dir = lines.next().unwrap_or("(unknown)").to_string();
                return Ok(Err(Holder { pid, run_dir }));
            }
        };
        let mut f = file.file();
        f.set_len(0)?;
        f.rewind()?;
        f.write_all(format!("{}\n{}\n", std::process::id(), run_dir.display()).as_bytes())?;
        Ok(Ok(HostLock { _file: Some(file) }))
    }

    /// Whether this lock holds anything (false without root).
    #[cfg(test)]
    fn is_held(&self) -> bool {
        self._file.is_some()
    }
}

fn lock_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.lock"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_sys::lock_file::names_file;

    /// A bug of this change, caught before it landed: the lock directory
    /// was made with its parents at mode 0700, so a first host made
    /// `/run/tickpack` itself 0700 and no tenant could reach its `{dir}`.
    #[test]
    fn the_lock_directory_made_its_parents_private_too() {
        use std::os::unix::fs::PermissionsExt;
        let top = std::env::temp_dir().join(format!("tp-hostlock-top-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        let dir = top.join("host-locks");
        let lock = HostLock::acquire_in(&dir, "h", Path::new("/run/a")).unwrap();
        assert!(lock.is_ok());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_ne!(
            mode(&top) & 0o011,
            0,
            "others may still traverse the parent"
        );
        std::fs::remove_dir_all(&top).unwrap();
    }

    #[test]
    fn a_held_name_cannot_be_taken_until_its_holder_lets_go() {
        let dir = std::env::temp_dir().join(format!("tp-hostlock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = HostLock::acquire_in(&dir, "h", Path::new("/run/a"))
            .unwrap()
            .unwrap();
        assert!(a.is_held());
        // flock locks belong to the open file: a second open is refused
        // even in the same process.
        let held = HostLock::acquire_in(&dir, "h", Path::new("/run/b"))
            .unwrap()
            .unwrap_err();
        assert_eq!(
            held,
            Holder {
                pid: std::process::id(),
                run_dir: "/run/a".into()
            }
        );
        let other = HostLock::acquire_in(&dir, "g", Path::new("/run/b")).unwrap();
        assert!(other.is_ok(), "another name is free");
        drop(a);
        let again = HostLock::acquire_in(&dir, "h", Path::new("/run/b")).unwrap();
        assert!(again.is_ok(), "free once released");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 41: lock files piled up under /run/tickpack/host-locks, one
    /// per host name ever run. A released lock removes its file; one
    /// opened before that removal is not trusted once locked.
    #[test]
    fn lock_files_piled_up_after_their_hosts_went_down() {
        let dir = std::env::temp_dir().join(format!("tp-hostlock-pile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = HostLock::acquire_in(&dir, "h", Path::new("/run/a"))
            .unwrap()
            .unwrap();
        assert!(dir.join("h.lock").exists());
        // Another opens the file while a holds it, then a lets go (and
        // removes it): the stale open names no file any more.
        let stale = std::fs::File::open(dir.join("h.lock")).unwrap();
        drop(a);
        assert!(!dir.join("h.lock").exists(), "removed on release");
        assert!(!names_file(&dir.join("h.lock"), &stale));
        let b = HostLock::acquire_in(&dir, "h", Path::new("/run/b"))
            .unwrap()
            .unwrap();
        assert!(names_file(
            &dir.join("h.lock"),
            b._file.as_ref().unwrap().file()
        ));
        // Still exclusive.
        assert!(HostLock::acquire_in(&dir, "h", Path::new("/run/c"))
            .unwrap()
            .is_err());
        drop(b);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
