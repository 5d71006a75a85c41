//! The seam between cgroup v1 and v2 (as firecracker's jailer has it): what
//! differs per version is behind [`Backend`], implemented by `v1::V1` and
//! `v2::V2`; [`Cgroup`](super::Cgroup) does the rest (names, directories it
//! made, roll-back, joining, removal) once for both, and picks the backend
//! of its version (so this file names neither version: they use it, not
//! it them).

use std::path::Path;

use super::{Cgroup, CgroupError, Limits, Usage};

/// What one cgroup version does its own way.
pub(super) trait Backend {
    /// Makes the cgroup's directories (recording each in
    /// `Cgroup::created`) and writes `limits` into them; `quota` is the
    /// validated CFS quota and `mems` the memory nodes, if given.
    fn set_up(
        &self,
        cg: &mut Cgroup,
        limits: &Limits,
        quota: Option<u64>,
        mems: Option<&[usize]>,
    ) -> Result<(), CgroupError>;

    /// Usage for periodic sampling: a counter that cannot be read reads as 0.
    fn sample_usage(&self, cpu_dir: &Path, mem_dir: &Path) -> Usage;

    /// Usage, or the first control file that could not be read or parsed.
    fn read_usage(
        &self,
        cpu_dir: &Path,
        mem_dir: &Path,
        synthetic: bool,
    ) -> Result<Usage, CgroupError>;

    /// Whatever the kernel offers to kill a whole cgroup at once, before
    /// the bounded SIGKILL loop (v2 `cgroup.kill`; nothing on v1).
    fn kill_first(&self, cg: &Cgroup) -> Result<(), CgroupError>;
}
