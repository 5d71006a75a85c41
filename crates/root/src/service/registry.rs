//! The root process's own records, in a directory only root may read or
//! write ([`DIR`]): per host, a lock its serving process holds
//! (`<host>.lock`, an exclusive `flock` the kernel drops when the process
//! dies) and what it made for the host (`<host>.json`: its run dir and
//! network record), written before each object is made and removed when
//! the host's network is gone. This record, never the run dir's
//! `state.json`, says what the root process may remove for a host.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tickpack_sys::lock_file::{self, LockFile, Taken};

use crate::netpath::NetRecord;

/// Where the records are.
pub const DIR: &str = "/run/tickpack/root";
/// The largest record read (250 instances' names are far less).
const RECORD_MAX: u64 = 1 << 20;
/// The most records scanned for a run dir's claimant.
const SCAN_MAX: usize = 4096;

/// What the root process made for one host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRecord {
    pub run_dir: PathBuf,
    pub net: NetRecord,
}

/// The records' directory.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
}

/// A host's lock, held while its session lives; its file goes with it
/// ([`tickpack_sys::lock_file`]).
#[derive(Debug)]
pub struct HostLock {
    _file: LockFile,
}

impl Registry {
    /// Opens (makes, mode 0700) the directory; refuses one that is a link,
    /// not ours or open to others.
    pub fn open(dir: &Path) -> std::io::Result<Registry> {
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let m = std::fs::symlink_metadata(dir)?;
        if !m.is_dir() || m.uid() != rustix::process::geteuid().as_raw() || m.mode() & 0o077 != 0 {
            return Err(std::io::Error::other(format!(
                "{} is not a directory of ours closed to others",
                dir.display()
            )));
        }
        Ok(Registry {
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self, host: &str, ext: &str) -> PathBuf {
        self.dir.join(format!("{host}.{ext}"))
    }

    /// Takes `host`'s lock; `Ok(None)` while another process holds it.
    pub fn lock(&self, host: &str) -> std::io::Result<Option<HostLock>> {
        Ok(match lock_file::take(&self.path(host, "lock"))? {
            Taken::Held(file) => Some(HostLock { _file: file }),
            Taken::Busy(_) => None,
        })
    }

    /// `host`'s record, if there is one that reads.
    pub fn read(&self, host: &str) -> Option<HostRecord> {
        read_record(&self.path(host, "json"))
    }

    /// Writes `host`'s record (whole, then renamed into place).
    pub fn write(&self, host: &str, rec: &HostRecord) -> std::io::Result<()> {
        let tmp = self.path(host, "json.tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        f.write_all(&serde_json::to_vec(rec).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.path(host, "json"))
    }

    /// Removes `host`'s record.
    pub fn remove(&self, host: &str) {
        let _ = std::fs::remove_file(self.path(host, "json"));
    }

    /// The host (other than `host`) whose record names `run_dir`, if any.
    pub fn claimant(&self, run_dir: &Path, host: &str) -> Option<String> {
        let entries = std::fs::read_dir(&self.dir).ok()?;
        for e in entries.flatten().take(SCAN_MAX) {
            let name = e.file_name();
            let Some(other) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if other == host {
                continue;
            }
            if read_record(&e.path()).is_some_and(|r| r.run_dir == run_dir) {
                return Some(other.to_string());
            }
        }
        None
    }
}

fn read_record(path: &Path) -> Option<HostRecord> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let mut text = String::new();
    f.take(RECORD_MAX).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Why `dir` cannot be a run dir root acts in for a supervisor running as
/// `caller`, if so: it must be absolute and canonical (no link on the
/// way), a directory, root's or the caller's, and closed to group and
/// others. One that is gone (its host's leftovers
/// are being removed) is named by a canonical parent; nothing is written
/// there.
pub fn untrusted_run_dir(dir: &Path, caller: u32) -> Option<String> {
    if !dir.is_absolute() {
        return Some("not an absolute path".into());
    }
    if let Err(e) = std::fs::symlink_metadata(dir) {
        let parent = dir.parent().and_then(|p| std::fs::canonicalize(p).ok());
        let canonical =
            parent.is_some_and(|p| Some(p.as_path()) == dir.parent()) && dir.file_name().is_some();
        return match e.kind() {
            std::io::ErrorKind::NotFound if canonical => None,
            _ => Some(format!("cannot be read: {e}")),
        };
    }
    match std::fs::canonicalize(dir) {
        Ok(c) if c == dir => {}
        Ok(c) => return Some(format!("goes through a link (it is {})", c.display())),
        Err(e) => return Some(format!("cannot be read: {e}")),
    }
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot be read: {e}")),
    };
    if !m.is_dir() {
        return Some("not a directory".into());
    }
    if m.uid() != 0 && m.uid() != caller {
        return Some(format!(
            "owned by uid {}, neither root's nor its supervisor's (uid {caller})",
            m.uid()
        ));
    }
    if m.permissions().mode() & 0o022 != 0 {
        return Some("writable by others".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_found_by_its_run_dir_and_a_lock_is_held_once() {
        let t = tempfile::tempdir().unwrap();
        let reg = Registry::open(&t.path().join("root")).unwrap();
        let rec = HostRecord {
            run_dir: "/run/b".into(),
            net: NetRecord {
                namespaces: vec!["tpb-1".into()],
                ..NetRecord::default()
            },
        };
        reg.write("b", &rec).unwrap();
        assert_eq!(reg.read("b"), Some(rec));
        assert_eq!(reg.claimant(Path::new("/run/b"), "a"), Some("b".into()));
        assert_eq!(reg.claimant(Path::new("/run/b"), "b"), None);
        assert_eq!(reg.claimant(Path::new("/run/c"), "a"), None);
        let held = reg.lock("b").unwrap();
        assert!(held.is_some());
        // flock is per open file: a second open of the same file waits.
        assert!(reg.lock("b").unwrap().is_none());
        drop(held);
        assert!(
            !t.path().join("root/b.lock").exists(),
            "its file goes with it"
        );
        assert!(reg.lock("b").unwrap().is_some());
        reg.remove("b");
        assert_eq!(reg.read("b"), None);
    }

    #[test]
    fn a_run_dir_open_to_others_or_through_a_link_is_untrusted() {
        let t = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(t.path()).unwrap();
        let run = dir.join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        let me = rustix::process::geteuid().as_raw();
        assert_eq!(untrusted_run_dir(&run, me), None);
        if me == 0 {
            // Another user's: only that user's supervisor acts in it.
            rustix::fs::chown(&run, Some(rustix::fs::Uid::from_raw(54_321)), None).unwrap();
            let why = untrusted_run_dir(&run, 54_320).unwrap();
            assert!(why.contains("owned by uid 54321, neither root's"), "{why}");
            assert_eq!(untrusted_run_dir(&run, 54_321), None);
            rustix::fs::chown(&run, Some(rustix::fs::Uid::from_raw(0)), None).unwrap();
        }
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(
            untrusted_run_dir(&run, me).as_deref(),
            Some("writable by others")
        );
        std::os::unix::fs::symlink(&run, dir.join("link")).unwrap();
        assert!(untrusted_run_dir(&dir.join("link"), me)
            .unwrap()
            .contains("through a link"));
        assert!(untrusted_run_dir(Path::new("relative"), me).is_some());
    }
}
