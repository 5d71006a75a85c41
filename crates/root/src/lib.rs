//! What needs root on a host, and nothing else: the mechanisms, no policy
//! and no game knowledge (which instance goes where, when to restart it,
//! what a game is: `tickpack-host` and `tickpack-game` decide; this crate
//! does what they ask).
//!
//! - [`netpath`]: network namespaces and the links that reach them (veth,
//!   bridge, macvlan), named with the `tp` prefix, recorded, removed; the
//!   instance firewall (nftables).
//! - [`cgroup`]: per-instance cgroups (cpuset, CPU quota, memory limit) on
//!   cgroup v1 or v2, detected; roots are parameters so tests use temp trees.
//! - [`spawn`]: starts one instance in its namespaces (mounts, hostname,
//!   PIDs) through the instance init; [`confine`]: what the command may
//!   still do there (no capabilities, no new privileges, seccomp).
//! - [`files`]: a config file written into an instance's directory, never
//!   through a link.
//! - [`uid_block`]: a block of uids per host, handed out under a lock
//!   from records in root's directory, never while its uids still run.
//! - [`tenant_dir`]: a tenant's directory as a size-limited tmpfs of its
//!   user's, and their removal.
//! - [`service`]: the root process (`tickpack __root`): one host's
//!   requests, checked as untrusted input, done with the above; its
//!   broker; [`privilege`]: giving root up under `sudo` once the broker
//!   runs.

pub mod cgroup;
pub mod confine;
pub mod files;
pub mod netpath;
pub mod privilege;
pub mod service;
pub mod spawn;
pub mod tenant_dir;
pub mod uid_block;
