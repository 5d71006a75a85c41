//! The root process: the one process of a host that holds root, doing the
//! mechanisms it is asked for, each request checked as untrusted input.
//!
//! A supervisor (`host up`, each host of a bench step) starts one
//! (`tickpack __root`, [`Root::start`]) and talks to it over a
//! `SOCK_SEQPACKET` pair: one JSON request per datagram, one answer each,
//! in order ([`protocol`]: the schema `tickpack.root/1`, every request and
//! answer). The first request names the host and its run dir
//! ([`Request::Hello`](protocol::Request::Hello)); from then on the process
//! serves that host alone ([`session`], sans-I/O: what a request may touch)
//! and refuses, with a sentence and nothing changed:
//!
//! - another host's run dir, a run dir it cannot trust (not a real
//!   directory, not root's, open to others), a second process for the same
//!   host (each holds its host's lock in [`registry`]);
//! - a path that is not beneath the run dir's instance directories, or that
//!   goes through a link (`openat2` with `RESOLVE_BENEATH` and
//!   `RESOLVE_NO_SYMLINKS` from the run dir's descriptor);
//! - a namespace, link, route or table it did not make: what it removes
//!   for a host is what its own record of that host lists ([`registry`],
//!   root's directory), never what a run dir's `state.json` (which the
//!   supervisor writes) says;
//! - a message that is not one request (malformed, of an unknown kind,
//!   over [`protocol::MAX_MESSAGE`]), and a schema it does not speak.
//!
//! It decides nothing: which instances, which addresses, which files are
//! the supervisor's policy; it checks that what is asked is the host's own
//! and does it with [`crate::netpath`]. When its supervisor goes away
//! (`kill -9` included) it ends; its record lets the next process for the
//! host remove what was left ([`Request::RemoveLeftovers`](protocol::Request::RemoveLeftovers)).
//!
//! What is asked of it: the host's uid block, its network (namespaces,
//! links, addresses, routes, the firewall table) and the removal of a
//! crashed run's, its cgroup (delegated to the supervisor's user), the
//! tenants' directories, the config files written into an instance's
//! directory as the instance's user, and the commands started in the
//! walls ([`Request::Spawn`](protocol::Request::Spawn)): it is their
//! parent, signals and reaps them on request, and hands the supervisor
//! their output pipe ([`Proc`] is the supervisor's handle). Under `sudo`
//! the supervisor runs as the invoking user and each root process comes
//! from the [`broker`] started before root was given up.

pub mod broker;
mod children;
mod client;
mod proc;
pub mod protocol;
pub mod registry;
mod serve;
pub mod session;

pub use children::WalledCommand;
pub use client::{Root, RootError};
pub use proc::Proc;
pub use serve::{serve, Config};

/// The hidden subcommand the root process runs.
pub const SUBCOMMAND: &str = "__root";
