//! The root process's own records, in a directory only root may read or
//! write ([`DIR`]): per host, a lock its serving process holds
//! (`<host>.lock`, an exclusive `flock` the kernel drops when the process
//! dies) and what it made for the host (`<host>.json`: its run dir and
//! network record), written before each object is made and removed when
//! the host's network is gone. This record, never the run dir's
//! `state.json`, says what the root process may remove for a host.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

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
    /// The uid of the supervisor it was made for (root's: 0).
    #[serde(default)]
    pub caller: u32,
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

/// The run dir root acts in for a supervisor running as `caller`, held
/// open (`O_PATH`) so that all it does there stays beneath it, or why it
/// cannot be one: it must be absolute with no `.` or `..`, reached
/// without a link (`openat2` with `RESOLVE_NO_SYMLINKS`), a directory,
/// the caller's own (root's for root: a supervisor without root never
/// has root act in a directory it does not own, such as `/etc` or another
/// host's), and closed to group and others. One that is gone (its host's
/// leftovers are being removed) is `None` when its parent is there;
/// nothing is then done in it.
pub fn open_run_dir(dir: &Path, caller: u32) -> Result<Option<OwnedFd>, String> {
    use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};
    use rustix::io::Errno;
    let plain = dir
        .components()
        .skip(1)
        .all(|c| matches!(c, Component::Normal(_)));
    if !dir.is_absolute() || !plain {
        return Err("not an absolute path without `.` or `..`".into());
    }
    let open = |p: &Path| {
        rustix::fs::openat2(
            CWD,
            p,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
    };
    let why = |e: Errno| match e {
        Errno::LOOP | Errno::XDEV => "goes through a link".to_string(),
        Errno::NOTDIR => "not a directory".to_string(),
        e => format!("cannot be read: {}", std::io::Error::from(e)),
    };
    let fd = match open(dir) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => {
            return match dir.parent().map(open) {
                Some(Ok(_)) if dir.file_name().is_some() => Ok(None),
                Some(Err(e)) => Err(why(e)),
                _ => Err("has no parent".into()),
            }
        }
        Err(e) => return Err(why(e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(why)?;
    if st.st_uid != caller {
        return Err(format!(
            "owned by uid {}, not its supervisor's (uid {caller})",
            st.st_uid
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Err("writable by others".into());
    }
    Ok(Some(fd))
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
            caller: 0,
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
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(t.path()).unwrap();
        let run = dir.join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        let me = rustix::process::geteuid().as_raw();
        let why = |dir: &Path, caller| open_run_dir(dir, caller).err().unwrap_or_default();
        assert!(open_run_dir(&run, me).unwrap().is_some());
        if me == 0 {
            // Another user's: only that user's supervisor acts in it.
            rustix::fs::chown(&run, Some(rustix::fs::Uid::from_raw(54_321)), None).unwrap();
            let w = why(&run, 54_320);
            assert!(
                w.contains("owned by uid 54321, not its supervisor's"),
                "{w}"
            );
            assert!(open_run_dir(&run, 54_321).unwrap().is_some());
            rustix::fs::chown(&run, Some(rustix::fs::Uid::from_raw(0)), None).unwrap();
        }
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(why(&run, me), "writable by others");
        std::os::unix::fs::symlink(&run, dir.join("link")).unwrap();
        assert!(why(&dir.join("link"), me).contains("through a link"));
        assert!(why(&dir.join("link/x"), me).contains("through a link"));
        assert!(open_run_dir(Path::new("relative"), me).is_err());
        assert!(open_run_dir(&run.join("../run"), me).is_err());
        // Gone, with its parent there: no directory to act in.
        assert!(open_run_dir(&dir.join("gone"), me).unwrap().is_none());
        assert!(open_run_dir(&dir.join("gone/deeper"), me).is_err());
    }

    /// Review of issue 40: a supervisor without root had its root process
    /// act in a run dir of root's (`/`, `/etc`, another host's), since a
    /// run dir could be "root's or the caller's".
    #[test]
    fn a_supervisor_without_root_had_root_act_in_a_run_dir_of_roots() {
        for dir in ["/", "/etc"] {
            let why = open_run_dir(Path::new(dir), 61_234)
                .err()
                .unwrap_or_default();
            assert!(
                why.contains("owned by uid 0, not its supervisor's"),
                "{dir}: {why}"
            );
        }
    }
}
