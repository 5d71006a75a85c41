//! A lock named by a file: an exclusive `flock` on `DIR/NAME.lock`, which
//! the kernel drops when its holder dies (`kill -9` included), and whose
//! file the holder removes when it lets go, still locked. Whoever opened
//! the file before that finds, once it has the lock, that the path names
//! no file or another one, and takes the lock again on a new file.
//! A host name's lock (`tickpack_host`) and a root process's lock of its
//! host (`tickpack_root::service`) are both this.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};
use rustix::io::Errno;

/// How many times a lock is taken again when its file went between
/// opening and locking it.
const RELOCK_TRIES: u32 = 16;

/// A held lock; its file is removed when it is dropped.
#[derive(Debug)]
pub struct LockFile {
    file: File,
    path: PathBuf,
}

impl LockFile {
    /// The locked file (its holder may write who it is into it: `&File`
    /// writes and seeks).
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Removed while still locked; the lock goes with the file.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What [`take`] found.
#[derive(Debug)]
pub enum Taken {
    Held(LockFile),
    /// Another process holds it: its file, open for reading (its holder
    /// may have written who it is).
    Busy(File),
}

/// Takes the lock of `path` (made mode 0600, never through a link).
pub fn take(path: &Path) -> std::io::Result<Taken> {
    for _ in 0..RELOCK_TRIES {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        // flock on a descriptor we own; released when it closes.
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => return Ok(Taken::Busy(file)),
            Err(e) => return Err(e.into()),
        }
        // A holder that let go removed the file after we opened it: this
        // lock is on a file no one else can find. Again.
        if names_file(path, &file) {
            return Ok(Taken::Held(LockFile {
                file,
                path: path.to_path_buf(),
            }));
        }
    }
    Err(std::io::Error::other(format!(
        "{}: removed under us {RELOCK_TRIES} times in a row",
        path.display()
    )))
}

/// Whether `path` (not followed if a link) is the file `file` has open.
pub fn names_file(path: &Path, file: &File) -> bool {
    match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(p), Ok(f)) => p.dev() == f.dev() && p.ino() == f.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_held_once_and_its_file_goes_with_it() {
        let dir = std::env::temp_dir().join(format!("tp-sys-lock-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("h.lock");
        let Taken::Held(held) = take(&path).unwrap() else {
            panic!("a free lock is taken")
        };
        assert!(matches!(take(&path).unwrap(), Taken::Busy(_)));
        drop(held);
        assert!(!path.exists(), "its file goes with it");
        assert!(matches!(take(&path).unwrap(), Taken::Held(_)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
