//! Network paths: one network namespace per game server instance, each with
//! its own IPv4 address, so every instance binds the game's usual port, and
//! the links that connect the namespaces to the host's root namespace (where
//! the load generators run).
//!
//! # What it is
//!
//! Set-up and teardown of four kinds of path ([`NetKind`]), to compare what
//! each costs in latency:
//!
//! - **veth** (routed point-to-point): per instance a veth pair; the host end
//!   stays in the root namespace with its own `/30`, the other end is `eth0`
//!   in the instance namespace with a default route via the host end.
//! - **bridge** (the software switch): one bridge `tp<host>br` holds the
//!   gateway address; every instance's veth host end is a bridge port.
//! - **macvlan** (instances bypass the bridge, like per-VM NIC queues):
//!   macvlan children in bridge mode on a parent link we create ourselves
//!   (`tp<host>d0`, never a real NIC), one per instance namespace, plus one
//!   in the root namespace (`tp<host>gw`) holding the gateway address so the
//!   host reaches the instances. The parent is a `dummy` link; on kernels
//!   built without `dummy` it is one end of a veth pair (`tp<host>d0` and
//!   `tp<host>d1`, the latter up with ARP off so it never answers for the
//!   gateway).
//! - **ipvlan** (L2 mode): the same shape with ipvlan children. A kernel
//!   without ipvlan gives [`NetError::Unsupported`].
//!
//! Addresses come from an [`AddrPlan`] over a range (default
//! `198.18.0.0/16`, the RFC 2544 benchmarking range). A plan may set
//! aside source addresses at the top of the range
//! ([`AddrPlan::with_sources`]): each is added (as a `/32`) to the host
//! side of every path (the bridge, the host-side macvlan/ipvlan, every
//! veth host end), so load generators in the root namespace can bind them
//! and reach every instance from several addresses; they go with the
//! links.
//!
//! Set-up asks the kernel directly, through route netlink, and keeps
//! namespaces the way iproute2 does (bind-mounted files under /run/netns),
//! so `ip netns` and `ip link` show what it made. Every error carries the
//! step, the request in `ip`'s words (what an operator would rerun as
//! `ip ...`) and the errno the kernel answered.
//!
//! # Safety of the traffic
//!
//! - Before anything else, set-up adds `unreachable <range>` at the highest
//!   metric to the root namespace: any address of the range not (or no
//!   longer) served by one of our links fails locally instead of leaving the
//!   machine through the default route. Teardown removes it last.
//! - A range already routed in the root namespace (a real subnet, another
//!   host's range, a leftover) is refused before anything is created.
//! - [`check_route`] lets a load generator verify, before sending, that the
//!   kernel would send to an address through one of our (`tp`) links.
//!
//! # Names and records
//!
//! Everything is named with the `tp` prefix: namespaces `tp<host>-<id>`,
//! links `tp<host>v<id>` (veth host ends), `tp<host>br`, `tp<host>d0`,
//! `tp<host>d1`, `tp<host>gw`. Link names must fit IFNAMSIZ (15 bytes);
//! this is checked before anything is created. Everything created is listed
//! in a [`NetRecord`] (serde) that the caller persists in its run directory.
//!
//! Nothing is ever left behind by this module on its own: a set-up that
//! fails halfway removes what it created before returning the error, and
//! dropping a [`HostNet`] without [`HostNet::teardown`] removes everything
//! too (best effort). After `kill -9`, [`NetRecord::cleanup`] on the
//! persisted record, or [`cleanup_prefix`], recovers.
//!
//! # The instance firewall
//!
//! [`HostNet::install_filter`] loads one nftables table per host
//! (`inet tp<host>`, see [`filter`]): packets from the host's links to the
//! host's own addresses, or forwarded through it, are dropped unless they
//! answer a flow the host started, go to a port the operator allowed, or
//! (forwarded) are UDP to another instance's game port. The table is in the
//! [`NetRecord`] before it exists and is removed first on teardown.
//!
//! # What it does not do
//!
//! It starts no process and enters no namespace: the spawner `setns`es into
//! [`HostNet::netns_path`]. It sends no traffic. It does not touch real
//! NICs, iptables, other nftables tables or sysctls.
//!
//! # Order of calls
//!
//! ```no_run
//! use tickpack_root::netpath::{check_route, AddrPlan, HostNet, NetKind};
//! # fn main() -> Result<(), tickpack_root::netpath::NetError> {
//! let mut net = HostNet::setup("h1", NetKind::Bridge, AddrPlan::default(), &[1, 2, 3])?;
//! let record = serde_json::to_string(net.record()).unwrap(); // persist in the run dir
//! let ns = net.netns_path(1);        // the spawner setns()es into this file
//! let addr = net.instance_addr(1);   // the server binds addr:PORT
//! net.check_route(addr)?;            // the load generator checks before sending
//! check_route(addr)?;                // (or, without the HostNet: any `tp` link)
//! net.add_instance(4)?;              // re-persist net.record() after changes
//! net.remove_instance(2)?;
//! net.teardown()?;
//! # let _ = (record, ns); Ok(()) }
//! ```

mod addr;
mod bounded;
mod error;
pub mod filter;
mod hostnet;
mod ip;
mod links;
mod names;
mod netlink;
mod netns;
mod record;
mod routes;
mod rtnl;
mod view;

pub use addr::{AddrPlan, Ipv4Net, MAX_PREFIX, MAX_SOURCES, MIN_PREFIX};
pub use bounded::DEFAULT_TIMEOUT;
pub use error::NetError;
pub use filter::{FilterSpec, Nft};
pub use hostnet::{HostNet, ParentLink};
pub use ip::Ip;
pub use names::{is_host_name_of, netns_name, validate_host_name, NetKind};
pub use record::{cleanup_host, cleanup_prefix, NetRecord};
pub use routes::{check_route, remove_guard_route};
pub use view::NetView;

/// Prefix of every name this module creates.
pub const PREFIX: &str = "tp";
/// Where namespace files are kept (iproute2's place: `ip netns` sees them).
pub const NETNS_DIR: &str = "/run/netns";
/// Longest link name the kernel accepts (IFNAMSIZ - 1).
pub const MAX_LINK_NAME: usize = 15;
/// Longest host name accepted.
pub use tickpack_sys::MAX_HOST_NAME;
/// Name of the instance's link inside its namespace.
const INSTANCE_LINK: &str = "eth0";
