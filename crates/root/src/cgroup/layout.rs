//! What detection found: the cgroup version ([`CgroupVersion`]), the
//! controllers tickpack uses ([`Controller`]) and where each one's
//! hierarchy is ([`CgroupLayout`]). Detection itself is in `detect.rs`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{detect, CgroupError, DEFAULT_MOUNTS};

/// The cgroup version in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// One hierarchy per (group of) controller(s).
    V1,
    /// The unified hierarchy.
    V2,
}

impl CgroupVersion {
    /// Detects the layout under `root` (normally [`DEFAULT_ROOT`](super::DEFAULT_ROOT)) from the
    /// mount table [`DEFAULT_MOUNTS`].
    pub fn detect(root: &Path) -> Result<CgroupLayout, CgroupError> {
        detect::detect(root, Path::new(DEFAULT_MOUNTS))
    }

    /// Detects the layout under `root` from the mount table at `mounts`
    /// (same format as `/proc/self/mounts`); tests pass a fake one.
    pub fn detect_with_mounts(root: &Path, mounts: &Path) -> Result<CgroupLayout, CgroupError> {
        detect::detect(root, mounts)
    }
}

impl fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        })
    }
}

/// The controllers tickpack uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Controller {
    /// CPU quota (`cpu.cfs_quota_us` / `cpu.max`).
    Cpu,
    /// CPU time accounting (v1 `cpuacct.usage`; v2 `cpu.stat`, always there).
    Cpuacct,
    /// CPU and memory-node sets.
    Cpuset,
    /// Memory limit, usage and OOM kills.
    Memory,
    /// Process (and thread) count limit (`pids.max`, both versions).
    Pids,
}

impl Controller {
    /// Every controller, in the order they are set up.
    pub const ALL: [Controller; 5] = [
        Controller::Cpu,
        Controller::Cpuacct,
        Controller::Cpuset,
        Controller::Memory,
        Controller::Pids,
    ];

    /// The kernel's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Controller::Cpu => "cpu",
            Controller::Cpuacct => "cpuacct",
            Controller::Cpuset => "cpuset",
            Controller::Memory => "memory",
            Controller::Pids => "pids",
        }
    }

    pub(super) fn from_v1_option(option: &str) -> Option<Controller> {
        Controller::ALL.into_iter().find(|c| c.name() == option)
    }

    pub(super) fn from_v2_name(name: &str) -> Option<Controller> {
        match name {
            "cpu" => Some(Controller::Cpu),
            "cpuset" => Some(Controller::Cpuset),
            "memory" => Some(Controller::Memory),
            "pids" => Some(Controller::Pids),
            _ => None,
        }
    }

    /// The name to write into v2's `cgroup.subtree_control`, if it is a v2
    /// controller.
    pub(super) fn v2_name(self) -> Option<&'static str> {
        match self {
            Controller::Cpuacct => None,
            c => Some(c.name()),
        }
    }
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The cgroup filesystems of a machine (or of a test tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupLayout {
    pub(super) version: CgroupVersion,
    pub(super) root: PathBuf,
    /// Where each available controller's cgroups are made: the hierarchy's
    /// mount point on v1, the v2 root on v2.
    pub(super) controllers: std::collections::BTreeMap<Controller, PathBuf>,
    /// The hierarchies are plain directories, not a cgroup filesystem (a
    /// test tree): control files are created when written and nothing is
    /// ever signalled.
    pub(super) synthetic: bool,
}

impl CgroupLayout {
    /// Same as [`CgroupVersion::detect`].
    pub fn detect(root: &Path) -> Result<CgroupLayout, CgroupError> {
        CgroupVersion::detect(root)
    }

    /// Same as [`CgroupVersion::detect_with_mounts`].
    pub fn detect_with_mounts(root: &Path, mounts: &Path) -> Result<CgroupLayout, CgroupError> {
        CgroupVersion::detect_with_mounts(root, mounts)
    }

    /// The version in use.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The root: the directory given to detection on v1, the cgroup2 mount
    /// point on v2.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory under which cgroups using `controller` are created, if
    /// it is available.
    pub fn controller_dir(&self, controller: Controller) -> Option<&Path> {
        self.controllers.get(&controller).map(PathBuf::as_path)
    }

    /// The distinct hierarchy directories (one on v2).
    pub fn hierarchies(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.controllers.values().cloned().collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// Whether the hierarchies are plain directories rather than a cgroup
    /// filesystem (test trees).
    pub fn is_synthetic(&self) -> bool {
        self.synthetic
    }
}
