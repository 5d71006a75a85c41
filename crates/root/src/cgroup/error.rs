//! [`CgroupError`]: everything that can go wrong with cgroups, on either
//! version; each message names the path and the step.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use super::Controller;

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
    /// it: see [`remove_stale`](super::remove_stale)).
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
