//! An instance's output, capped and rotated: the instance writes into a
//! pipe, and a thread of the supervisor copies it into `RUN_DIR/logs/ID.log`,
//! never letting that file grow past the cap. When the next write would
//! pass it, `ID.log` becomes `ID.log.1` (replacing the older one) and a new
//! `ID.log` starts, so an instance's output never takes more than twice the
//! cap on the host's disk, however fast it prints.
//!
//! Both files are opened by root with O_NOFOLLOW in `logs/`, a directory
//! the instance cannot write (nor see: the run dir is hidden inside it). A
//! fast writer is slowed by the pipe, not by the host's disk filling.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The default cap of one log file (`--log-size`, `log_size =`).
pub const DEFAULT_LOG_BYTES: u64 = 8 << 20;

/// The smallest and largest cap accepted.
pub const MIN_LOG_BYTES: u64 = 4 << 20;
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// `ID.log.1` beside `ID.log`: the one rotated file kept.
pub fn rotated_path(log: &Path) -> PathBuf {
    let mut p = log.as_os_str().to_owned();
    p.push(".1");
    PathBuf::from(p)
}

fn open(path: &Path, truncate: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(!truncate)
        .write(true)
        .truncate(truncate)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// A log file that rotates at `cap` bytes.
pub struct CappedLog {
    path: PathBuf,
    cap: u64,
    file: File,
    len: u64,
}

impl CappedLog {
    /// Opens `path` for appending (its current length counts).
    pub fn open(path: &Path, cap: u64) -> std::io::Result<CappedLog> {
        let file = open(path, false)?;
        let len = file.metadata()?.len();
        Ok(CappedLog {
            path: path.to_path_buf(),
            cap: cap.max(1),
            file,
            len,
        })
    }

    /// Writes `buf`, rotating whenever the current file is full.
    pub fn write(&mut self, mut buf: &[u8]) -> std::io::Result<()> {
        while !buf.is_empty() {
            if self.len >= self.cap {
                self.rotate()?;
            }
            let room = (self.cap - self.len).min(buf.len() as u64) as usize;
            self.file.write_all(&buf[..room])?;
            self.len += room as u64;
            buf = &buf[room..];
        }
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        std::fs::rename(&self.path, rotated_path(&self.path))?;
        self.file = open(&self.path, true)?;
        self.len = 0;
        Ok(())
    }
}

/// Copies everything read from `from` into `log` until end of file (every
/// writer gone) or an error, on a thread of its own.
pub fn copy_in_background(
    mut from: impl Read + Send + 'static,
    mut log: CappedLog,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("instance-log".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 << 10];
            loop {
                match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if log.write(&buf[..n]).is_err() {
                            // Keep draining so the instance is not blocked
                            // by a log the host cannot write.
                            continue;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_never_passes_its_cap_and_keeps_one_rotated_file() {
        let dir = std::env::temp_dir().join(format!("tp-caplog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("1.log");
        let mut log = CappedLog::open(&path, 1000).unwrap();
        for _ in 0..50 {
            log.write(&[b'x'; 333]).unwrap();
        }
        let cur = std::fs::metadata(&path).unwrap().len();
        let old = std::fs::metadata(rotated_path(&path)).unwrap().len();
        assert!(cur <= 1000 && old == 1000, "{cur} {old}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
