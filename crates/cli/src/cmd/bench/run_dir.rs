//! The steps' hosts' run dir: where `host down --name NAME` and the next
//! bench look, and the guard that removes it when the run ends.

use std::path::PathBuf;

/// Where the steps' hosts keep their records: the same place `host down
/// --name NAME` and the next bench look, so a bench killed with -9 is found.
pub fn default_run_dir(name: &str) -> PathBuf {
    if tickpack_sys::has_root() {
        return PathBuf::from(crate::cmd::host::RUN_ROOT).join(name);
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("tickpack").join(name),
        None => std::env::temp_dir().join(format!("tickpack-bench-{}", std::process::id())),
    }
}

/// Removes the bench's run dir when the run ends (finished, failed or
/// interrupted), unless a host could not be cleaned up: then its
/// `state.json` stays for `host down` or the next bench.
pub struct RunDirGuard {
    pub dir: PathBuf,
    /// Cleared when the dir turned out to belong to a bench still running.
    pub armed: bool,
}

impl Drop for RunDirGuard {
    fn drop(&mut self) {
        if self.armed && !self.dir.join("state.json").exists() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
