//! The seam between cgroup v1 and v2 (as firecracker's jailer has it): what
//! differs per version is behind [`Backend`], implemented by `v1::V1` and
//! `v2::V2`; [`Cgroup`](super::Cgroup) does the rest (names, directories it
//! made, roll-back, joining, removal) once for both, and picks the backend
//! of its version (so this file names neither version: they use it, not
//! it them).

use std::path::{Path, PathBuf};

use super::control::{keyed, read_control, read_keyed, read_u64};
use super::{Cgroup, CgroupError, Limits, Usage};

/// What [`Backend::set_up`] writes into a new cgroup.
#[derive(Debug, Clone, Copy)]
pub(super) struct Settings<'a> {
    /// The limits as asked.
    pub limits: &'a Limits,
    /// The validated CFS quota for `limits.cpu_quota`, in microseconds.
    pub quota: Option<u64>,
    /// The memory nodes (`cpuset.mems`), if given; else the parent's.
    pub mems: Option<&'a [usize]>,
}

/// The leaves [`Usage`] is read from (the same directory on v2).
#[derive(Debug, Clone)]
pub(super) struct UsageDirs {
    /// The leaf holding the CPU-accounting controller.
    pub cpu: PathBuf,
    /// The leaf holding the memory controller.
    pub memory: PathBuf,
}

/// The memory controller's counters of one version, in its leaf.
pub(super) struct MemoryFiles {
    /// Memory charged now: one number, in bytes.
    pub current: &'static str,
    /// The flat-keyed file whose `oom_kill` line counts OOM kills.
    pub events: &'static str,
}

/// What one cgroup version does its own way.
pub(super) trait Backend {
    /// Makes the cgroup's directories (recording each in
    /// `Cgroup::created`) and writes `settings` into them.
    fn set_up(&self, cg: &mut Cgroup, settings: &Settings<'_>) -> Result<(), CgroupError>;

    /// CPU time used so far by the cgroup whose CPU-accounting leaf is
    /// `cpu_dir`, in nanoseconds, or why it could not be read.
    fn cpu_usage_ns(&self, cpu_dir: &Path) -> Result<u64, CgroupError>;

    /// Where this version keeps the memory counters.
    fn memory_files(&self) -> MemoryFiles;

    /// Whatever the kernel offers to kill a whole cgroup at once, before
    /// the bounded SIGKILL loop (v2 `cgroup.kill`; nothing on v1).
    fn kill_first(&self, cg: &Cgroup) -> Result<(), CgroupError>;

    /// Usage for periodic sampling: a counter that cannot be read reads as 0.
    fn sample_usage(&self, dirs: &UsageDirs) -> Usage {
        let memory = self.memory_files();
        Usage {
            cpu_usage_ns: self.cpu_usage_ns(&dirs.cpu).unwrap_or(0),
            memory_bytes: read_u64(&dirs.memory.join(memory.current)).unwrap_or(0),
            oom_kills: read_keyed(&dirs.memory.join(memory.events), "oom_kill").unwrap_or(0),
        }
    }

    /// Usage, or the first control file that could not be read or parsed
    /// (on a `synthetic` tree a missing OOM events file reads as no kills).
    fn read_usage(&self, dirs: &UsageDirs, synthetic: bool) -> Result<Usage, CgroupError> {
        let memory = self.memory_files();
        let cpu_usage_ns = self.cpu_usage_ns(&dirs.cpu)?;
        let events = dirs.memory.join(memory.events);
        let events_text = read_control(&events, synthetic)?;
        Ok(Usage {
            cpu_usage_ns,
            memory_bytes: read_u64(&dirs.memory.join(memory.current))?,
            // v1 kernels before 4.13 have no oom_kill line.
            oom_kills: keyed(&events, &events_text, "oom_kill")?.unwrap_or(0),
        })
    }
}
