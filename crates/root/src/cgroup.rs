//! Per-instance cgroups: a CPU set, a CPU quota, a memory limit and a pids
//! limit for each game server instance, on cgroup v1 or v2, whichever the
//! machine mounts.
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
//!    where the `cpu`, `cpuacct`, `cpuset`, `memory` and `pids` controllers
//!    live;
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

//!
//! Files: `layout.rs` (versions, controllers, where they live), `detect.rs`
//! (reading the mount table), `limits.rs` (limits and usage), `tune.rs`
//! (changing a running cgroup's CPU share, reading pressure and
//! throttling: the guard's actuators and signals), `backend.rs`
//! (the trait the two versions implement), `v1.rs` and `v2.rs`, `control.rs`
//! (control files, the kill loop, `rmdir`); this file holds [`Cgroup`], which
//! is the same for both versions.

mod backend;
mod control;
mod delegate;
mod detect;
mod error;
mod layout;
mod limits;
mod tune;
mod v1;
mod v2;

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use delegate::delegate;
pub use error::CgroupError;
pub use layout::{CgroupLayout, CgroupVersion, Controller};
pub use limits::{Limits, Usage};
pub use tune::{parse_psi_some_avg10, set_sched_idle, system_cpu_pressure, Throttling};

#[cfg(test)]
use control::walk;
use control::{
    has_child_dirs, kill_until_empty, read_control, read_pids, remove_tree, rmdir_retry,
    write_control,
};

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
    /// [`Cgroup::usage`]), `cpuset` when `cpus` or `mems` is set, `cpu`
    /// when `cpu_quota` is set and `pids` when `pids_max` is set; any of
    /// those missing is [`CgroupError::NotMounted`]. The leaf must not exist
    /// yet. On error, the directories made so far are removed again.
    pub fn create(
        layout: &CgroupLayout,
        name: &str,
        limits: &Limits,
    ) -> Result<Cgroup, CgroupError> {
        Cgroup::create_inner(layout, name, limits, None)
    }

    /// [`Cgroup::create`], with the instance's memory bound to NUMA `nodes`
    /// (`cpuset.mems`, e.g. the node placement gave it)
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
        let settings = backend::Settings {
            limits,
            quota,
            mems,
        };
        let set_up = backend_for(layout.version).set_up(&mut cgroup, &settings);
        match set_up {
            Ok(()) => Ok(cgroup),
            Err(e) => {
                cgroup.roll_back();
                Err(e)
            }
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

    /// The leaves holding the CPU-accounting and memory controllers.
    fn usage_dirs(&self) -> Result<backend::UsageDirs, CgroupError> {
        let dir = |c: Controller| {
            self.dirs
                .iter()
                .find(|j| j.controllers.contains(&c))
                .map(|j| j.leaf.clone())
                .ok_or(CgroupError::NotMounted { controller: c })
        };
        Ok(backend::UsageDirs {
            cpu: dir(Controller::Cpuacct)?,
            memory: dir(Controller::Memory)?,
        })
    }

    /// CPU time, memory and OOM kills so far, for periodic sampling: a
    /// counter that cannot be read (the cgroup is being removed) reads as 0.
    /// [`Cgroup::try_usage`] says why instead.
    pub fn usage(&self) -> Usage {
        match self.usage_dirs() {
            Ok(dirs) => self.backend().sample_usage(&dirs),
            Err(_) => Usage::default(),
        }
    }

    /// CPU time, memory and OOM kills so far (v1: `cpuacct.usage`,
    /// `memory.usage_in_bytes`, `memory.oom_control`; v2: `cpu.stat`,
    /// `memory.current`, `memory.events`), or the first file that could not
    /// be read or parsed.
    pub fn try_usage(&self) -> Result<Usage, CgroupError> {
        let dirs = self.usage_dirs()?;
        self.backend().read_usage(&dirs, self.synthetic)
    }

    fn backend(&self) -> &'static dyn backend::Backend {
        backend_for(self.version)
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
        self.backend().kill_first(self)?;
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
                                Some(libc::EBUSY)
                                    | Some(libc::ENOTEMPTY)
                                    | Some(libc::EACCES)
                                    | Some(libc::EPERM)
                            ) =>
                    {
                        // Someone else's sibling appeared, the parent went,
                        // or it is not ours to remove (a host's delegated
                        // cgroup: its root process removes it).
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

/// Removes the cgroup directly under each hierarchy named exactly `prefix`
/// (a host's top-level cgroup `tp<host>`; it must start with
/// [`NAME_PREFIX`]; an exact name, so host `h` never removes host `h1`'s
/// `tph1`), with everything below it: processes are SIGKILLed, directories removed deepest first.
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
            if is_dir && entry.file_name().as_bytes() == prefix.as_bytes() {
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

/// The backend for `version` (here, above both: `backend.rs` is the
/// seam the versions implement and names neither).
fn backend_for(version: CgroupVersion) -> &'static dyn backend::Backend {
    match version {
        CgroupVersion::V1 => &v1::V1,
        CgroupVersion::V2 => &v2::V2,
    }
}

#[cfg(test)]
mod tests;
