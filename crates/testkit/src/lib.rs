//! Test support shared by tickpack's end-to-end and root tests; a
//! dev-dependency only, never linked into the binary.
//!
//! What it holds, one concern per module:
//! - [`alloc`]: a counting global allocator, for tests that show a steady
//!   state allocates nothing;
//! - [`root`]: [`require_root`], the check that makes a root test fail with
//!   a clear message instead of passing silently, and [`root_or_skip`] for
//!   a test skipped without root (failed under CI);
//! - [`leftovers`]: [`Leftovers`], the scanner for what a host named
//!   `tp<name>` may leave behind (namespaces, links, routes, nftables tables,
//!   cgroups, processes), in the words an operator would see;
//! - [`skip`]: [`skip_unless_ci`], for a test whose outside part (the
//!   third-party game server, the Agones SDK server or manifest) is missing:
//!   skipped on a developer's machine, failed under CI;
//! - [`wait`]: [`wait_until`], polling with a deadline;
//! - [`ports`]: free UDP/TCP ports on 127.0.0.1;
//! - [`procs`]: whether a PID is alive, its children;
//! - [`q3_server`]: a real ioquake3 server (the shipped game whose players
//!   speak Quake III) on 127.0.0.1, killed on drop;
//! - [`tw_server`]: a real server of the game whose players speak tw7,
//!   the same way;
//! - `shipped`: the shipped game definitions both take their program from;
//! - [`results`]: bench settings with every default, for tests that name
//!   only the settings they look at;
//! - [`agones_crds`]: Agones' Fleet and FleetAutoscaler CRD schemas, to
//!   validate generated manifests offline.
//!
//! What it does not do: start the `tickpack` binary (that needs the binary's
//! path, which only the cli crate's tests know: `crates/cli/tests/support`).
//! It sends no traffic (but [`q3_server`]'s queries to its own server on
//! loopback) and removes nothing it did not create.

pub mod agones_crds;
pub mod alloc;
pub mod leftovers;
pub mod ports;
pub mod procs;
pub mod q3_server;
pub mod results;
pub mod root;
mod shipped;
pub mod skip;
pub mod tw_server;
pub mod wait;

pub use agones_crds::AgonesCrds;
pub use leftovers::Leftovers;
pub use ports::{free_tcp_port, free_tcp_ports, free_udp_ports};
pub use procs::{alive, children};
pub use q3_server::Q3Server;
pub use root::{require_root, root_or_skip};
pub use skip::skip_unless_ci;
pub use tw_server::TwServer;
pub use wait::wait_until;
