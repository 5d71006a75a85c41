//! Per-instance cgroups: a CPU set, a CPU quota and a memory limit for each
//! game server instance, on cgroup v1 or v2, whichever the machine mounts.
//!
//! Like firecracker's jailer, nothing here hard-codes `/sys/fs/cgroup` or
//! `/proc`: the cgroup root and the mount table are parameters, so the tests
//! run the same code on temporary directory trees (where control files are
//! created as they are written) and, as root, on the real filesystem.
//!
//! Order of calls:
//!
//! 1. [`CgroupVersion::detect`] (or [`CgroupVersion::detect_with_mounts`])
//!    reads the mount table and returns a [`CgroupLayout`]: the version and
//!    where the `cpu`, `cpuacct`, `cpuset` and `memory` controllers live;
//! 2. [`remove_stale`] clears what a crashed run left behind;
//! 3. [`Cgroup::create`] per instance, with its [`Limits`];
//! 4. the spawner calls [`Cgroup::open_procs`] before `fork` and
//!    [`join_from_child`] in `pre_exec`, so the instance never runs a single
//!    instruction outside its limits ([`Cgroup::add_pid`] for the plain case);
//! 5. [`Cgroup::usage`] while it runs (CPU time, memory, OOM kills;
//!    [`Cgroup::try_usage`] to see read errors);
//! 6. [`Cgroup::remove`]: SIGKILL whatever is left, then `rmdir`.
//!
//! Safety rails: every path component of a cgroup name must start with
//! [`NAME_PREFIX`] (`tp`), so tickpack can only ever create, kill or remove
//! its own cgroups. A failed [`Cgroup::create`] removes the directories it
//! made before returning.
//!
//! Version differences this module hides:
//!
//! - v1 has one hierarchy per controller mount (`cpu,cpuacct` may be
//!   co-mounted); a process joins by being written into the `cgroup.procs` of
//!   each. A new v1 cpuset cgroup starts with empty `cpuset.cpus` and
//!   `cpuset.mems` and refuses tasks until both are set, so intermediate
//!   parents copy them from their parent and the leaf copies `cpuset.mems`
//!   unless [`Cgroup::create_on_nodes`] names the nodes.
//! - v2 has one tree; controllers must be switched on in every ancestor's
//!   `cgroup.subtree_control`, and a cgroup with processes of its own may not
//!   do that (the "no internal processes" rule; the root is exempt). Use a
//!   nested name such as `tp-myhost/tp-3`: `tp-myhost` is created as the
//!   intermediate parent that holds no process.
//! - Memory limits also forbid swap (`memory.memsw.limit_in_bytes` equal to
//!   the limit on v1, `memory.swap.max` 0 on v2, where those files exist): an
//!   instance that runs out of memory is OOM-killed rather than slowed down
//!   by swapping, which a benchmark would otherwise misread as CPU trouble.
//!
//! Creating and removing cgroups that share a parent must not run
//! concurrently (the supervisor does it from one thread); [`Cgroup::remove`]
//! removes parents that are left empty.

mod detect;

use std::ffi::CString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::placement::format_cpu_list;

/// Where cgroup filesystems are mounted on current distributions.
pub const DEFAULT_ROOT: &str = "/sys/fs/cgroup";
/// The mount table read by [`CgroupVersion::detect`].
pub const DEFAULT_MOUNTS: &str = "/proc/self/mounts";
/// Every component of every cgroup name tickpack touches starts with this.
pub const NAME_PREFIX: &str = "tp";
/// The CFS period written with a CPU quota, in microseconds.
pub const CPU_PERIOD_US: u64 = 100_000;
/// The smallest CFS quota the kernel accepts, in microseconds.
pub const MIN_CPU_QUOTA_US: u64 = 1_000;

/// How many times [`Cgroup::kill_all`] sends SIGKILL and looks again.
const KILL_ROUNDS: u32 = 300;
/// The pause between two kill rounds (so at most 3 s in all).
const KILL_PAUSE: Duration = Duration::from_millis(10);
/// How many times `rmdir` is tried while the kernel answers EBUSY.
const RMDIR_ATTEMPTS: u32 = 100;
/// The pause between two `rmdir` attempts (so at most 2 s per directory).
const RMDIR_PAUSE: Duration = Duration::from_millis(20);

/// Everything that can go wrong with cgroups; each message names the path
/// and the step.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// The mount table could not be read.
    #[error("cannot read the mount table {path}: {source}")]
    Mounts {
        /// The mount table, e.g. `/proc/self/mounts`.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// No cgroup filesystem is mounted at or under the root.
    #[error("no cgroup filesystem is mounted at or under {root} (according to {mounts})")]
    NoCgroupFs {
        /// The cgroup root looked at.
        root: PathBuf,
        /// The mount table read.
        mounts: PathBuf,
    },

    /// A controller the limits (or usage accounting) need is not mounted
    /// (v1) or not available in the root's `cgroup.controllers` (v2).
    #[error("cgroup controller {controller} is not available")]
    NotMounted {
        /// The missing controller.
        controller: Controller,
    },

    /// A cgroup name (or stale prefix) is refused.
    #[error("invalid cgroup name {name:?}: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },

    /// Limits that no kernel would accept.
    #[error("invalid cgroup limits: {reason}")]
    InvalidLimits {
        /// What is wrong.
        reason: String,
    },

    /// `mkdir` of a cgroup failed (`File exists` means a previous run left
    /// it: see [`remove_stale`]).
    #[error("cannot create {path}: {source}")]
    Create {
        /// The cgroup directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// A control file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The control file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// A control file does not hold what it should.
    #[error("cannot parse {path}: expected {expected}, found {found:?}")]
    Parse {
        /// The control file.
        path: PathBuf,
        /// What was expected, e.g. `"a line usage_usec N"`.
        expected: &'static str,
        /// What it holds.
        found: String,
    },

    /// Writing a control file failed, e.g. "cannot write 0-1 to
    /// /sys/fs/cgroup/cpuset/tp-x/cpuset.cpus: Invalid argument".
    #[error("cannot write {value} to {path}: {source}")]
    Write {
        /// The control file.
        path: PathBuf,
        /// What was written.
        value: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// v2: a cgroup with processes of its own cannot enable controllers for
    /// its children.
    #[error(
        "cannot enable {value} in {path}: this cgroup holds processes, and cgroup v2 \
         lets only cgroups without processes hand controllers to their children \
         (\"no internal processes\"); run tickpack from a leaf cgroup or with a cgroup \
         root whose processes live in a child: {source}"
    )]
    InternalProcesses {
        /// The `cgroup.subtree_control` file.
        path: PathBuf,
        /// The controllers asked for, e.g. `+cpu +memory`.
        value: String,
        /// The OS error (EBUSY).
        #[source]
        source: io::Error,
    },

    /// A `cgroup.procs` file could not be opened for joining.
    #[error("cannot open {path} to join the cgroup: {source}")]
    Open {
        /// The `cgroup.procs` file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// SIGKILL to a process of the cgroup failed (other than "no such process").
    #[error("cannot send SIGKILL to process {pid} in {path}: {source}")]
    Kill {
        /// The process.
        pid: u32,
        /// The cgroup it was listed in.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// Processes are still there after the bounded SIGKILL loop (or the
    /// calling process itself is in the cgroup).
    #[error("{path} still holds processes {pids:?} after {waited:?} of SIGKILL")]
    StillPopulated {
        /// The cgroup.
        path: PathBuf,
        /// What is left.
        pids: Vec<u32>,
        /// How long it was tried.
        waited: Duration,
    },

    /// `rmdir` of a cgroup failed (after retries on EBUSY).
    #[error("cannot remove {path}: {source}")]
    Remove {
        /// The cgroup directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

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
    /// Detects the layout under `root` (normally [`DEFAULT_ROOT`]) from the
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
}

impl Controller {
    /// Every controller, in the order they are set up.
    pub const ALL: [Controller; 4] = [
        Controller::Cpu,
        Controller::Cpuacct,
        Controller::Cpuset,
        Controller::Memory,
    ];

    /// The kernel's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Controller::Cpu => "cpu",
            Controller::Cpuacct => "cpuacct",
            Controller::Cpuset => "cpuset",
            Controller::Memory => "memory",
        }
    }

    fn from_v1_option(option: &str) -> Option<Controller> {
        Controller::ALL.into_iter().find(|c| c.name() == option)
    }

    fn from_v2_name(name: &str) -> Option<Controller> {
        match name {
            "cpu" => Some(Controller::Cpu),
            "cpuset" => Some(Controller::Cpuset),
            "memory" => Some(Controller::Memory),
            _ => None,
        }
    }

    /// The name to write into v2's `cgroup.subtree_control`, if it is a v2
    /// controller.
    fn v2_name(self) -> Option<&'static str> {
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
    version: CgroupVersion,
    root: PathBuf,
    /// Where each available controller's cgroups are made: the hierarchy's
    /// mount point on v1, the v2 root on v2.
    controllers: std::collections::BTreeMap<Controller, PathBuf>,
    /// The hierarchies are plain directories, not a cgroup filesystem (a
    /// test tree): control files are created when written and nothing is
    /// ever signalled.
    synthetic: bool,
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

/// What one instance may use. `None` means "no limit" (and, for `cpus`,
/// "do not join the cpuset hierarchy").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// CPUs it may run on (`cpuset.cpus`). The memory nodes
    /// (`cpuset.mems`) are copied from the parent, unless given to
    /// [`Cgroup::create_on_nodes`].
    pub cpus: Option<Vec<usize>>,
    /// CPU time as a number of cores, e.g. 0.5 is 50 ms every 100 ms.
    pub cpu_quota: Option<f64>,
    /// Memory limit in bytes; swap is forbidden too where the kernel allows.
    pub memory_bytes: Option<u64>,
}

impl Limits {
    /// The CFS quota in microseconds per [`CPU_PERIOD_US`] for
    /// [`Limits::cpu_quota`]: 0.5 cores gives 50000.
    pub fn quota_us(&self) -> Result<Option<u64>, CgroupError> {
        let Some(cores) = self.cpu_quota else {
            return Ok(None);
        };
        if !cores.is_finite() || cores <= 0.0 {
            return Err(CgroupError::InvalidLimits {
                reason: format!("a CPU quota of {cores} cores is not a positive number"),
            });
        }
        let quota = (cores * CPU_PERIOD_US as f64).round();
        if quota < MIN_CPU_QUOTA_US as f64 {
            return Err(CgroupError::InvalidLimits {
                reason: format!(
                    "a CPU quota of {cores} cores is below the kernel's minimum of {} cores",
                    MIN_CPU_QUOTA_US as f64 / CPU_PERIOD_US as f64
                ),
            });
        }
        Ok(Some(quota as u64))
    }

    fn validate(&self, mems: Option<&[usize]>) -> Result<Option<u64>, CgroupError> {
        let bad = |reason: &str| CgroupError::InvalidLimits {
            reason: reason.to_owned(),
        };
        if self.cpus.as_ref().is_some_and(Vec::is_empty) {
            return Err(bad("the CPU set is empty"));
        }
        if mems.is_some_and(<[usize]>::is_empty) {
            return Err(bad("the memory node set is empty"));
        }
        if self.memory_bytes == Some(0) {
            return Err(bad("a memory limit of 0 bytes"));
        }
        self.quota_us()
    }

    fn needs(&self, quota: Option<u64>, mems: Option<&[usize]>) -> Vec<Controller> {
        let mut needed = Vec::new();
        if quota.is_some() {
            needed.push(Controller::Cpu);
        }
        needed.push(Controller::Cpuacct);
        if self.cpus.is_some() || mems.is_some() {
            needed.push(Controller::Cpuset);
        }
        needed.push(Controller::Memory);
        needed
    }
}

/// What an instance has used so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// CPU time of all its processes, in nanoseconds.
    pub cpu_usage_ns: u64,
    /// Memory charged to it now, in bytes (page cache included).
    pub memory_bytes: u64,
    /// How many of its processes the OOM killer has killed.
    pub oom_kills: u64,
}

/// One hierarchy an instance is a member of.
#[derive(Debug, Clone)]
struct Joined {
    /// The hierarchy directory (v1 mount point, v2 root).
    base: PathBuf,
    /// The instance's cgroup in it.
    leaf: PathBuf,
    /// The controllers used in it.
    controllers: Vec<Controller>,
}

/// One instance's cgroup (one directory per v1 hierarchy, one on v2).
///
/// Dropping it leaves the cgroup in place; call [`Cgroup::remove`].
#[derive(Debug)]
pub struct Cgroup {
    name: String,
    version: CgroupVersion,
    synthetic: bool,
    dirs: Vec<Joined>,
    created: Vec<PathBuf>,
}

impl Cgroup {
    /// Creates the cgroup `name` (every `/`-separated component must start
    /// with [`NAME_PREFIX`]; parents are created as needed) and applies
    /// `limits`.
    ///
    /// It joins the `cpuacct` and `memory` hierarchies always (for
    /// [`Cgroup::usage`]), `cpuset` when `cpus` or `mems` is set, and `cpu`
    /// when `cpu_quota` is set; any of those missing is
    /// [`CgroupError::NotMounted`]. The leaf must not exist yet. On error,
    /// the directories made so far are removed again.
    pub fn create(
        layout: &CgroupLayout,
        name: &str,
        limits: &Limits,
    ) -> Result<Cgroup, CgroupError> {
        Cgroup::create_inner(layout, name, limits, None)
    }

    /// [`Cgroup::create`], with the instance's memory bound to NUMA `nodes`
    /// (`cpuset.mems`, e.g. the node [`crate::placement::plan`] gave it)
    /// instead of the parent's nodes.
    pub fn create_on_nodes(
        layout: &CgroupLayout,
        name: &str,
        limits: &Limits,
        nodes: &[usize],
    ) -> Result<Cgroup, CgroupError> {
        Cgroup::create_inner(layout, name, limits, Some(nodes))
    }

    fn create_inner(
        layout: &CgroupLayout,
        name: &str,
        limits: &Limits,
        mems: Option<&[usize]>,
    ) -> Result<Cgroup, CgroupError> {
        validate_name(name)?;
        let quota = limits.validate(mems)?;
        let mut dirs: Vec<Joined> = Vec::new();
        for controller in limits.needs(quota, mems) {
            let base = layout
                .controller_dir(controller)
                .ok_or(CgroupError::NotMounted { controller })?;
            match dirs.iter_mut().find(|j| j.base == base) {
                Some(j) => j.controllers.push(controller),
                None => dirs.push(Joined {
                    base: base.to_owned(),
                    leaf: base.join(name),
                    controllers: vec![controller],
                }),
            }
        }
        let mut cgroup = Cgroup {
            name: name.to_owned(),
            version: layout.version,
            synthetic: layout.synthetic,
            dirs,
            created: Vec::new(),
        };
        let set_up = match layout.version {
            CgroupVersion::V1 => cgroup.set_up_v1(limits, quota, mems),
            CgroupVersion::V2 => cgroup.set_up_v2(limits, quota, mems),
        };
        match set_up {
            Ok(()) => Ok(cgroup),
            Err(e) => {
                cgroup.roll_back();
                Err(e)
            }
        }
    }

    fn set_up_v1(
        &mut self,
        limits: &Limits,
        quota: Option<u64>,
        mems: Option<&[usize]>,
    ) -> Result<(), CgroupError> {
        let components: Vec<String> = self.name.split('/').map(str::to_owned).collect();
        for joined in self.dirs.clone() {
            let cpuset = joined.controllers.contains(&Controller::Cpuset);
            let mut dir = joined.base.clone();
            for (i, component) in components.iter().enumerate() {
                let parent = dir.clone();
                dir.push(component);
                let leaf = i + 1 == components.len();
                if self.mkdir(&dir, leaf)? && cpuset && !leaf {
                    // A new v1 cpuset cgroup has no CPUs and no memory nodes.
                    self.copy(&parent, &dir, "cpuset.cpus")?;
                    self.copy(&parent, &dir, "cpuset.mems")?;
                }
            }
            let parent = dir.parent().unwrap_or(&joined.base).to_owned();
            for controller in &joined.controllers {
                match controller {
                    Controller::Cpuset => {
                        match &limits.cpus {
                            Some(cpus) => {
                                self.write(&dir.join("cpuset.cpus"), &format_cpu_list(cpus))?
                            }
                            None => self.copy(&parent, &dir, "cpuset.cpus")?,
                        }
                        match mems {
                            Some(mems) => {
                                self.write(&dir.join("cpuset.mems"), &format_cpu_list(mems))?
                            }
                            None => self.copy(&parent, &dir, "cpuset.mems")?,
                        }
                    }
                    Controller::Cpu => {
                        if let Some(quota) = quota {
                            self.write(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                            self.write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                        }
                    }
                    Controller::Memory => {
                        if let Some(bytes) = limits.memory_bytes {
                            let value = bytes.to_string();
                            self.write(&dir.join("memory.limit_in_bytes"), &value)?;
                            let memsw = dir.join("memory.memsw.limit_in_bytes");
                            if memsw.exists() {
                                self.write(&memsw, &value)?;
                            }
                        }
                    }
                    Controller::Cpuacct => {}
                }
            }
        }
        Ok(())
    }

    fn set_up_v2(
        &mut self,
        limits: &Limits,
        quota: Option<u64>,
        mems: Option<&[usize]>,
    ) -> Result<(), CgroupError> {
        let joined = self.dirs[0].clone();
        let enable: Vec<&str> = joined
            .controllers
            .iter()
            .filter_map(|c| c.v2_name())
            .collect();
        let components: Vec<String> = self.name.split('/').map(str::to_owned).collect();
        let mut dir = joined.base.clone();
        for (i, component) in components.iter().enumerate() {
            self.enable_v2(&dir, &enable)?;
            dir.push(component);
            self.mkdir(&dir, i + 1 == components.len())?;
        }
        if let Some(cpus) = &limits.cpus {
            self.write(&dir.join("cpuset.cpus"), &format_cpu_list(cpus))?;
        }
        if let Some(mems) = mems {
            self.write(&dir.join("cpuset.mems"), &format_cpu_list(mems))?;
        }
        if let Some(quota) = quota {
            self.write(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
        }
        if let Some(bytes) = limits.memory_bytes {
            self.write(&dir.join("memory.max"), &bytes.to_string())?;
            let swap = dir.join("memory.swap.max");
            if swap.exists() {
                self.write(&swap, "0")?;
            }
        }
        Ok(())
    }

    /// Switches on `controllers` for the children of `dir` (v2).
    fn enable_v2(&self, dir: &Path, controllers: &[&str]) -> Result<(), CgroupError> {
        let path = dir.join("cgroup.subtree_control");
        let current = read_control(&path, self.synthetic)?;
        let on: Vec<&str> = current
            .split_whitespace()
            .map(|c| c.trim_start_matches('+'))
            .collect();
        let missing: Vec<String> = controllers
            .iter()
            .filter(|c| !on.contains(c))
            .map(|c| format!("+{c}"))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let value = missing.join(" ");
        match write_control(&path, &value, self.synthetic) {
            Err(CgroupError::Write {
                path,
                value,
                source,
            }) if source.raw_os_error() == Some(libc::EBUSY) => {
                Err(CgroupError::InternalProcesses {
                    path,
                    value,
                    source,
                })
            }
            other => other,
        }
    }

    /// `mkdir`; returns whether it was created. An existing intermediate
    /// parent is fine, an existing leaf is not.
    fn mkdir(&mut self, dir: &Path, leaf: bool) -> Result<bool, CgroupError> {
        match fs::create_dir(dir) {
            Ok(()) => {
                self.created.push(dir.to_owned());
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && !leaf => Ok(false),
            Err(source) => Err(CgroupError::Create {
                path: dir.to_owned(),
                source,
            }),
        }
    }

    fn write(&self, path: &Path, value: &str) -> Result<(), CgroupError> {
        write_control(path, value, self.synthetic)
    }

    /// Copies control file `file` from `from` to `to` (cpuset.cpus/mems).
    fn copy(&self, from: &Path, to: &Path, file: &str) -> Result<(), CgroupError> {
        let value = read_control(&from.join(file), false)?;
        self.write(&to.join(file), value.trim())
    }

    /// Removes what a failed `create` made, newest first.
    fn roll_back(&mut self) {
        for dir in self.created.drain(..).rev() {
            let _ = if self.synthetic {
                fs::remove_dir_all(&dir)
            } else {
                fs::remove_dir(&dir)
            };
        }
    }

    /// The name given to [`Cgroup::create`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cgroup version.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The instance's cgroup directories, one per hierarchy joined.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|j| j.leaf.clone()).collect()
    }

    /// The directories [`Cgroup::create`] made (parents before children).
    pub fn created(&self) -> &[PathBuf] {
        &self.created
    }

    /// The `cgroup.procs` files a process must be written into to join
    /// (one per v1 hierarchy, one on v2).
    pub fn procs_path(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .map(|j| j.leaf.join("cgroup.procs"))
            .collect()
    }

    /// Opens every [`Cgroup::procs_path`] for writing, before `fork`; give
    /// their raw descriptors to [`join_from_child`] in `pre_exec`. They are
    /// close-on-exec.
    pub fn open_procs(&self) -> Result<Vec<File>, CgroupError> {
        self.procs_path()
            .into_iter()
            .map(|path| {
                OpenOptions::new()
                    .write(true)
                    .create(self.synthetic)
                    .truncate(self.synthetic)
                    .open(&path)
                    .map_err(|source| CgroupError::Open { path, source })
            })
            .collect()
    }

    /// Moves process `pid` (all its threads) into the cgroup.
    pub fn add_pid(&self, pid: u32) -> Result<(), CgroupError> {
        for path in self.procs_path() {
            write_control(&path, &pid.to_string(), self.synthetic)?;
        }
        Ok(())
    }

    /// The processes in the cgroup, ascending.
    pub fn pids(&self) -> Result<Vec<u32>, CgroupError> {
        let mut pids = Vec::new();
        for path in self.procs_path() {
            pids.extend(read_pids(&path)?);
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }

    /// CPU time, memory and OOM kills so far, for periodic sampling: a
    /// counter that cannot be read (the cgroup is being removed) reads as 0.
    /// [`Cgroup::try_usage`] says why instead.
    pub fn usage(&self) -> Usage {
        let dir = |c: Controller| {
            self.dirs
                .iter()
                .find(|j| j.controllers.contains(&c))
                .map(|j| j.leaf.clone())
        };
        let (Some(cpu_dir), Some(mem_dir)) = (dir(Controller::Cpuacct), dir(Controller::Memory))
        else {
            return Usage::default();
        };
        let cpu_usage_ns = match self.version {
            CgroupVersion::V1 => read_u64(&cpu_dir.join("cpuacct.usage")).ok(),
            CgroupVersion::V2 => read_keyed(&cpu_dir.join("cpu.stat"), "usage_usec")
                .map(|us| us.saturating_mul(1000)),
        };
        let (memory_bytes, oom_kills) = match self.version {
            CgroupVersion::V1 => (
                read_u64(&mem_dir.join("memory.usage_in_bytes")).ok(),
                read_keyed(&mem_dir.join("memory.oom_control"), "oom_kill"),
            ),
            CgroupVersion::V2 => (
                read_u64(&mem_dir.join("memory.current")).ok(),
                read_keyed(&mem_dir.join("memory.events"), "oom_kill"),
            ),
        };
        Usage {
            cpu_usage_ns: cpu_usage_ns.unwrap_or(0),
            memory_bytes: memory_bytes.unwrap_or(0),
            oom_kills: oom_kills.unwrap_or(0),
        }
    }

    /// CPU time, memory and OOM kills so far (v1: `cpuacct.usage`,
    /// `memory.usage_in_bytes`, `memory.oom_control`; v2: `cpu.stat`,
    /// `memory.current`, `memory.events`), or the first file that could not
    /// be read or parsed.
    pub fn try_usage(&self) -> Result<Usage, CgroupError> {
        let dir = |c: Controller| {
            self.dirs
                .iter()
                .find(|j| j.controllers.contains(&c))
                .map(|j| j.leaf.clone())
                .ok_or(CgroupError::NotMounted { controller: c })
        };
        let cpu_dir = dir(Controller::Cpuacct)?;
        let mem_dir = dir(Controller::Memory)?;
        Ok(match self.version {
            CgroupVersion::V1 => {
                let oom = mem_dir.join("memory.oom_control");
                let oom_text = read_control(&oom, self.synthetic)?;
                Usage {
                    cpu_usage_ns: read_u64(&cpu_dir.join("cpuacct.usage"))?,
                    memory_bytes: read_u64(&mem_dir.join("memory.usage_in_bytes"))?,
                    // Kernels before 4.13 have no oom_kill line.
                    oom_kills: keyed(&oom, &oom_text, "oom_kill")?.unwrap_or(0),
                }
            }
            CgroupVersion::V2 => {
                let stat = cpu_dir.join("cpu.stat");
                let stat_text = read_control(&stat, false)?;
                let usec =
                    keyed(&stat, &stat_text, "usage_usec")?.ok_or_else(|| CgroupError::Parse {
                        path: stat.clone(),
                        expected: "a line \"usage_usec N\"",
                        found: stat_text.clone(),
                    })?;
                let events = mem_dir.join("memory.events");
                let events_text = read_control(&events, self.synthetic)?;
                Usage {
                    cpu_usage_ns: usec.saturating_mul(1000),
                    memory_bytes: read_u64(&mem_dir.join("memory.current"))?,
                    oom_kills: keyed(&events, &events_text, "oom_kill")?.unwrap_or(0),
                }
            }
        })
    }

    /// SIGKILLs every process in the cgroup and waits until it is empty
    /// (bounded: [`CgroupError::StillPopulated`] after about 3 s). On v2
    /// `cgroup.kill` is used first where the kernel has it (5.14+), which
    /// also catches processes forking while being killed. Does nothing on a
    /// synthetic tree. The caller still has to reap its own children.
    pub fn kill_all(&self) -> Result<(), CgroupError> {
        if self.synthetic {
            return Ok(());
        }
        if self.version == CgroupVersion::V2 {
            for joined in &self.dirs {
                let kill = joined.leaf.join("cgroup.kill");
                if kill.exists() {
                    write_control(&kill, "1", false)?;
                }
            }
        }
        kill_until_empty(&self.paths())
    }

    /// Kills what is left ([`Cgroup::kill_all`]), then removes the cgroup
    /// leaf-first, retrying while the kernel says EBUSY, and then every
    /// parent that is left without child cgroups. Tries every hierarchy and
    /// returns the first error.
    pub fn remove(self) -> Result<(), CgroupError> {
        self.kill_all()?;
        let mut first_error = None;
        for joined in &self.dirs {
            if let Err(e) = rmdir_retry(&joined.leaf, self.synthetic) {
                first_error.get_or_insert(e);
                continue;
            }
            let mut parent = joined.leaf.parent();
            while let Some(dir) = parent {
                if dir == joined.base || !dir.starts_with(&joined.base) {
                    break;
                }
                match has_child_dirs(dir) {
                    Ok(false) => {}
                    _ => break,
                }
                let result = if self.synthetic {
                    fs::remove_dir_all(dir)
                } else {
                    fs::remove_dir(dir)
                };
                match result {
                    Ok(()) => {}
                    Err(e)
                        if e.kind() == io::ErrorKind::NotFound
                            || matches!(
                                e.raw_os_error(),
                                Some(libc::EBUSY) | Some(libc::ENOTEMPTY)
                            ) =>
                    {
                        // Someone else's sibling appeared or the parent went.
                        break;
                    }
                    Err(source) => {
                        first_error.get_or_insert(CgroupError::Remove {
                            path: dir.to_owned(),
                            source,
                        });
                        break;
                    }
                }
                parent = dir.parent();
            }
        }
        match first_error {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

/// Joins the calling process to the cgroups whose `cgroup.procs` files are
/// open as `files`, by writing `0` (meaning "myself") into each.
///
/// Meant for `pre_exec`, between `fork` and `exec`: it is async-signal-safe
/// (only `write(2)`, no allocation, no lock). Returns the `errno` of the
/// first failed write (EINTR is retried).
pub fn join_from_child(files: &[RawFd]) -> Result<(), i32> {
    const ME: &[u8] = b"0";
    for &fd in files {
        loop {
            // SAFETY: write(2) reads ME.len() bytes from a static buffer; a
            // bad descriptor is reported as EBADF, not undefined behaviour.
            let written = unsafe { libc::write(fd, ME.as_ptr().cast(), ME.len()) };
            if written >= 0 {
                break;
            }
            // Reading errno allocates nothing.
            let errno = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            if errno != libc::EINTR {
                return Err(errno);
            }
        }
    }
    Ok(())
}

/// Removes every cgroup directly under each hierarchy whose name starts with
/// `prefix` (which must itself start with [`NAME_PREFIX`]), with everything
/// below it: processes are SIGKILLed, directories removed deepest first.
/// Returns the top-level directories removed. For `host up` after a crash.
pub fn remove_stale(layout: &CgroupLayout, prefix: &str) -> Result<Vec<PathBuf>, CgroupError> {
    if !prefix.starts_with(NAME_PREFIX) || prefix.contains('/') {
        return Err(CgroupError::InvalidName {
            name: prefix.to_owned(),
            reason: "a stale prefix must start with \"tp\" and contain no '/'",
        });
    }
    let mut removed = Vec::new();
    for base in layout.hierarchies() {
        let entries = match fs::read_dir(&base) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(CgroupError::Read { path: base, source }),
        };
        let mut stale = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| CgroupError::Read {
                path: base.clone(),
                source,
            })?;
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && entry.file_name().as_bytes().starts_with(prefix.as_bytes()) {
                stale.push(entry.path());
            }
        }
        stale.sort();
        for dir in stale {
            if !layout.synthetic {
                kill_until_empty(std::slice::from_ref(&dir))?;
            }
            remove_tree(&dir, layout.synthetic)?;
            removed.push(dir);
        }
    }
    Ok(removed)
}

fn validate_name(name: &str) -> Result<(), CgroupError> {
    let refuse = |reason| CgroupError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(refuse("the name is empty"));
    }
    for component in name.split('/') {
        if component.is_empty() {
            return Err(refuse(
                "empty path component (leading, trailing or double '/')",
            ));
        }
        if !component.starts_with(NAME_PREFIX) {
            return Err(refuse(
                "every path component must start with \"tp\" (tickpack only touches its own cgroups)",
            ));
        }
        if !component
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(refuse(
                "only ASCII letters, digits, '-', '_' and '.' are allowed",
            ));
        }
    }
    Ok(())
}

/// Whether `path` is on a cgroup (v1 or v2) filesystem.
fn is_cgroup_fs(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain old data; all-zero is a valid value.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c_path is a NUL-terminated string and stat a valid, writable
    // statfs that outlives the call.
    let rc = unsafe { libc::statfs(c_path.as_ptr(), &mut stat) };
    // f_type is signed or unsigned depending on the libc; compare as u64.
    #[allow(clippy::unnecessary_cast)]
    let fs_type = stat.f_type as u64;
    #[allow(clippy::unnecessary_cast)]
    let magic = [
        libc::CGROUP_SUPER_MAGIC as u64,
        libc::CGROUP2_SUPER_MAGIC as u64,
    ];
    rc == 0 && magic.contains(&fs_type)
}

/// Writes `value` into a control file. On a real cgroup filesystem the file
/// must exist; on a synthetic tree it is created (and replaced).
fn write_control(path: &Path, value: &str, synthetic: bool) -> Result<(), CgroupError> {
    let fail = |source| CgroupError::Write {
        path: path.to_owned(),
        value: value.to_owned(),
        source,
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create(synthetic)
        .truncate(synthetic)
        .open(path)
        .map_err(fail)?;
    file.write_all(value.as_bytes()).map_err(fail)
}

/// Reads a control file; on a synthetic tree a missing file reads as empty
/// when `missing_ok` is set.
fn read_control(path: &Path, missing_ok: bool) -> Result<String, CgroupError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if missing_ok && e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(CgroupError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

fn read_u64(path: &Path) -> Result<u64, CgroupError> {
    let text = read_control(path, false)?;
    text.trim().parse().map_err(|_| CgroupError::Parse {
        path: path.to_owned(),
        expected: "a number",
        found: text.trim().to_owned(),
    })
}

/// The value of the line `key N` in a flat-keyed file, if it can be read.
fn read_keyed(path: &Path, key: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    keyed(path, &text, key).ok().flatten()
}

/// The value of the line `key N` in a flat-keyed file, if present.
fn keyed(path: &Path, text: &str, key: &str) -> Result<Option<u64>, CgroupError> {
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        if fields.next() == Some(key) {
            let value = fields.next().unwrap_or("");
            return value.parse().map(Some).map_err(|_| CgroupError::Parse {
                path: path.to_owned(),
                expected: "a number after the key",
                found: line.to_owned(),
            });
        }
    }
    Ok(None)
}

fn read_pids(procs: &Path) -> Result<Vec<u32>, CgroupError> {
    let text = match fs::read_to_string(procs) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(CgroupError::Read {
                path: procs.to_owned(),
                source,
            })
        }
    };
    text.split_whitespace()
        .map(|p| {
            p.parse().map_err(|_| CgroupError::Parse {
                path: procs.to_owned(),
                expected: "process ids",
                found: p.to_owned(),
            })
        })
        .collect()
}

/// `dir` and every cgroup below it, parents first.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_owned());
    if let Ok(entries) = fs::read_dir(dir) {
        let mut children: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        children.sort();
        for child in children {
            walk(&child, out);
        }
    }
}

fn has_child_dirs(dir: &Path) -> io::Result<bool> {
    for entry in fs::read_dir(dir)? {
        if entry?.file_type()?.is_dir() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// SIGKILLs every process in `dirs` and below until none is left (bounded).
/// Only ever called on a real cgroup filesystem.
fn kill_until_empty(dirs: &[PathBuf]) -> Result<(), CgroupError> {
    let me = std::process::id();
    let started = Instant::now();
    let mut left: Vec<(u32, PathBuf)> = Vec::new();
    for _ in 0..KILL_ROUNDS {
        left.clear();
        let mut all = Vec::new();
        for dir in dirs {
            walk(dir, &mut all);
        }
        for dir in &all {
            for pid in read_pids(&dir.join("cgroup.procs"))? {
                left.push((pid, dir.clone()));
            }
        }
        if left.is_empty() {
            return Ok(());
        }
        if left.iter().any(|&(pid, _)| pid == me || pid <= 1) {
            // Never signal ourselves or init; this cannot become empty.
            break;
        }
        for (pid, dir) in &left {
            let Ok(raw) = libc::pid_t::try_from(*pid) else {
                continue;
            };
            // SAFETY: kill(2) with a positive pid read from cgroup.procs
            // signals that one process only.
            if unsafe { libc::kill(raw, libc::SIGKILL) } < 0 {
                let source = io::Error::last_os_error();
                if source.raw_os_error() != Some(libc::ESRCH) {
                    return Err(CgroupError::Kill {
                        pid: *pid,
                        path: dir.clone(),
                        source,
                    });
                }
            }
        }
        std::thread::sleep(KILL_PAUSE);
    }
    let mut pids: Vec<u32> = left.iter().map(|&(pid, _)| pid).collect();
    pids.sort_unstable();
    pids.dedup();
    Err(CgroupError::StillPopulated {
        path: left
            .first()
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| dirs[0].clone()),
        pids,
        waited: started.elapsed(),
    })
}

/// `rmdir`, retried while the kernel says EBUSY (tasks still exiting). A
/// directory that is already gone counts as removed.
fn rmdir_retry(dir: &Path, synthetic: bool) -> Result<(), CgroupError> {
    let mut attempt = 0;
    loop {
        let result = if synthetic {
            fs::remove_dir_all(dir)
        } else {
            fs::remove_dir(dir)
        };
        match result {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt + 1 < RMDIR_ATTEMPTS => {
                attempt += 1;
                std::thread::sleep(RMDIR_PAUSE);
            }
            Err(source) => {
                return Err(CgroupError::Remove {
                    path: dir.to_owned(),
                    source,
                })
            }
        }
    }
}

/// Removes `dir` and every cgroup below it, deepest first.
fn remove_tree(dir: &Path, synthetic: bool) -> Result<(), CgroupError> {
    let mut all = Vec::new();
    walk(dir, &mut all);
    for d in all.iter().rev() {
        rmdir_retry(d, synthetic)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
