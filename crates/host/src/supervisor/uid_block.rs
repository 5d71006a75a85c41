//! A block of uids per host, so two hosts on one machine (or a host and a
//! bench run) never share an instance uid: the kernel counts processes
//! (RLIMIT_NPROC) per uid, so a shared uid let one host's instance take
//! another's process budget.
//!
//! Block K holds uids `BLOCKS_BASE + K * BLOCK_SIZE + 1 ..= + 250`
//! (instance N is the block's base + N, the host's batch work the base). Blocks are handed out from records
//! in [`BLOCK_DIR`], one file per block naming its run dir and supervisor
//! PID, under an exclusive `flock` on a lock file there. A block is free
//! when it has no record, when its supervisor is gone, or when the record
//! names our own run dir (a run killed with -9). The record is removed at
//! teardown.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where block records are kept (root's own).
pub const BLOCK_DIR: &str = "/run/tickpack/uid-blocks";
/// The first block's base (above the process backend's 200000).
pub const BLOCKS_BASE: u32 = 201_000;
/// uids per block (instances are 1..=250).
pub const BLOCK_SIZE: u32 = 1_000;
/// How many blocks there are (uids up to 201000 + 1000 * 4000, below 2^32).
pub const BLOCKS: u32 = 4_000;

/// A block held by this supervisor.
#[derive(Debug)]
pub struct UidBlock {
    pub base: u32,
    record: PathBuf,
}

impl UidBlock {
    /// The uid (and gid) of instance `id`.
    #[cfg(test)]
    fn uid(&self, id: u32) -> u32 {
        self.base + id
    }

    /// Takes a free block for the host whose run dir is `run_dir`.
    pub fn take(run_dir: &Path) -> std::io::Result<UidBlock> {
        Self::take_in(Path::new(BLOCK_DIR), run_dir)
    }

    pub(crate) fn take_in(dir: &Path, run_dir: &Path) -> std::io::Result<UidBlock> {
        std::fs::create_dir_all(dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir.join(".lock"))?;
        // SAFETY: flock on a descriptor we own; released when `lock` closes.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let me = format!("{}\n{}\n", run_dir.display(), std::process::id());
        for k in 0..BLOCKS {
            let record = dir.join(k.to_string());
            let free = match std::fs::read_to_string(&record) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
                Err(e) => return Err(e),
                Ok(text) => {
                    let mut lines = text.lines();
                    let dir_of = lines.next().unwrap_or("");
                    let pid: u32 = lines.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                    dir_of == run_dir.display().to_string()
                        || !(super::run_dir::pid_alive(pid) && super::run_dir::is_tickpack(pid))
                }
            };
            if free {
                let _ = std::fs::remove_file(&record);
                let mut f = std::fs::OpenOptions::new()
                    .create_new(true)
                    .write(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(&record)?;
                f.write_all(me.as_bytes())?;
                return Ok(UidBlock {
                    base: BLOCKS_BASE + k * BLOCK_SIZE,
                    record,
                });
            }
        }
        Err(std::io::Error::other(format!(
            "all {BLOCKS} uid blocks in {} are taken",
            dir.display()
        )))
    }

    /// Gives the block back (its record is removed if still ours).
    pub fn release(&self) {
        let ours = std::fs::read_to_string(&self.record)
            .is_ok_and(|t| t.lines().nth(1) == Some(std::process::id().to_string().as_str()));
        if ours {
            let _ = std::fs::remove_file(&self.record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_live_holders_get_different_blocks_and_a_released_one_is_reused() {
        let dir = std::env::temp_dir().join(format!("tp-uidblock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // Our own process (a test binary named tickpack-host-...) holds both.
        let a = UidBlock::take_in(&dir, Path::new("/run/a")).unwrap();
        let b = UidBlock::take_in(&dir, Path::new("/run/b")).unwrap();
        assert_ne!(a.base, b.base);
        assert!(a.uid(250) < b.base || b.uid(250) < a.base);
        let again = UidBlock::take_in(&dir, Path::new("/run/a")).unwrap();
        assert_eq!(again.base, a.base, "a run dir's own block is taken back");
        b.release();
        let c = UidBlock::take_in(&dir, Path::new("/run/c")).unwrap();
        assert_eq!(c.base, b.base, "a released block is free");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
