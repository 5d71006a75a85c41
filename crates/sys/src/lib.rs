//! Small system helpers that several tickpack crates need, kept in one place
//! (as firecracker keeps its `utils`): nothing here knows a game, a socket or
//! a cgroup.
//!
//! - [`cpu_list`]: Linux CPU lists (`0-3,8`), parsed ([`parse_cpu_list`])
//!   and formatted ([`format_cpu_list`]) the way sysfs and `cpuset.cpus`
//!   write them.
//! - [`is_root`]: whether the process runs as root (namespaces, cgroups and
//!   nftables need it).
//! - [`host_name`]: the rule for a host's name, which prefixes every name
//!   tickpack creates (`tp<name>...`), so it must leave room in the kernel's
//!   15-byte link names ([`validate_host_name`]).
//!
//! - [`proc_stat`]: per-CPU idle, steal, interrupt and total time from
//!   `/proc/stat`'s text ([`cpu_jiffies`]).
//! - [`proc_tree`]: the threads of process trees in `/proc`, walked within
//!   bounds (what the two samplers below read).
//! - [`proc_memory`]: the peak resident memory of a process tree
//!   ([`tree_peak_rss_bytes`], from `VmHWM`).
//! - [`schedstat`]: how long the threads of process trees waited runnable
//!   for a CPU (run delay, from `/proc/PID/task/TID/schedstat`): the text
//!   parsed ([`parse_schedstat`]), the wait per timeslice between two
//!   readings ([`SchedStatDelta`]), and a sampler recording it per thread
//!   and interval in a histogram ([`RunDelaySampler`]).
//! - [`task_stat`]: a thread's CPU time and the CPU it last ran on, from
//!   `/proc/PID/task/TID/stat` ([`parse_task_stat`], [`task_stat::read_trees`]).
//!
//! - [`text`]: text someone else wrote, safe to print: control and bidi
//!   characters escaped, length capped ([`text::escape`]).
//! - [`user_file`]: a file a user named, read only if it is a regular file
//!   of bounded size ([`user_file::read_text`]).
//! - [`rel_path`]: the rule for files written below an instance's
//!   directory, one path and a set ([`rel_path::check_file_set`]).
//! - [`fds`]: a child gets stdin, stdout, stderr and the descriptors it is
//!   named, never what our parent left open ([`fds::cloexec_above_stderr`]
//!   by range before every `exec`, [`fds::only_stdio`]).
//! - [`epoll`]: a level-triggered `epoll` set, waited on without blocking
//!   (the players' and servers' I/O) or up to a timeout (the host's
//!   driver) ([`epoll::Epoll`]).
//! - [`unprivileged`]: a child started as another user, with no
//!   capability, nothing of ours but stdio, no way to regain privilege,
//!   killed when we die ([`unprivileged::as_user`]); a thread's privilege
//!   as `/proc` says it ([`unprivileged::Privilege`]).
//! - [`pidfd`]: a process pinned by a descriptor that wakes its waiter
//!   when it exits ([`pidfd::open`]).
//!
//! It depends on nothing of ours; every other crate may depend on it.

pub mod cpu_list;
pub mod epoll;
pub mod fds;
pub mod host_name;
pub mod lock_file;
pub mod pidfd;
pub mod proc_memory;
pub mod proc_stat;
pub mod proc_tree;
pub mod process;
pub mod rel_path;
pub mod schedstat;
pub mod task_stat;
pub mod text;
pub mod unprivileged;
pub mod user_file;

pub use cpu_list::{format_cpu_list, parse_cpu_list, CpuListError};
pub use host_name::{validate_host_name, HostNameError, MAX_HOST_NAME};
pub use proc_memory::tree_peak_rss_bytes;
pub use proc_stat::{cpu_jiffies, CpuJiffies};
pub use schedstat::{parse_schedstat, RunDelaySampler, SchedStat, SchedStatDelta};
pub use task_stat::{parse_task_stat, TaskCpu};

/// True when the process runs as root (effective uid 0).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Set once a root helper serves this process (`sudo tickpack bench`:
/// the process dropped to the invoking user after starting it).
static ROOT_HELPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that a root helper does what needs root for this process.
pub fn set_root_helper() {
    ROOT_HELPER.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether what needs root can be done: as root, or through a root
/// helper started before this process gave root up.
pub fn has_root() -> bool {
    is_root() || ROOT_HELPER.load(std::sync::atomic::Ordering::SeqCst)
}

/// A connected `SOCK_SEQPACKET` pair of Unix sockets (message boundaries
/// kept), both ends close-on-exec: how tickpack talks to a child of its own
/// (the root process, its broker, the decoder).
pub fn seqpacket_pair() -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    Ok(rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}
