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
//! `198.18.0.0/16`, the RFC 2544 benchmarking range).
//!
//! Set-up uses the real `ip` command (iproute2): what operators know and can
//! rerun. Every error carries the step, the exact command line and `ip`'s
//! stderr.
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
//! use tickpack_host::netpath::{check_route, AddrPlan, HostNet, NetKind};
//! # fn main() -> Result<(), tickpack_host::netpath::NetError> {
//! let mut net = HostNet::setup("h1", NetKind::Bridge, AddrPlan::default(), &[1, 2, 3])?;
//! let record = serde_json::to_string(net.record()).unwrap(); // persist in the run dir
//! let ns = net.netns_path(1);        // the spawner setns()es into this file
//! let addr = net.instance_addr(1);   // the server binds addr:27015
//! net.check_route(addr)?;            // the load generator checks before sending
//! check_route(addr)?;                // (or, without the HostNet: any `tp` link)
//! net.add_instance(4)?;              // re-persist net.record() after changes
//! net.remove_instance(2)?;
//! net.teardown()?;
//! # let _ = (record, ns); Ok(()) }
//! ```

mod addr;
pub mod filter;
mod ip;
mod record;

use std::collections::BTreeSet;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use addr::{AddrPlan, Ipv4Net, MAX_PREFIX, MIN_PREFIX};
pub use filter::{FilterSpec, Nft};
pub use ip::{Ip, DEFAULT_TIMEOUT};
pub use record::NetRecord;

/// Prefix of every name this module creates.
pub const PREFIX: &str = "tp";
/// Where `ip netns` keeps its namespace files.
pub const NETNS_DIR: &str = "/run/netns";
/// Longest link name the kernel accepts (IFNAMSIZ - 1).
pub const MAX_LINK_NAME: usize = 15;
/// Longest host name accepted.
pub use tickpack_sys::MAX_HOST_NAME;
/// Metric of the guard route: the highest, so every real route of ours (even
/// a connected route of the same prefix) wins over it.
const GUARD_METRIC: &str = "4294967295";
/// Name of the instance's link inside its namespace.
const INSTANCE_LINK: &str = "eth0";

/// Network path set-up failures; each names the step and the object.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("unknown network path kind {0:?}: expected veth, bridge, macvlan or ipvlan")]
    UnknownKind(String),
    #[error("invalid address range {text:?}: {reason}")]
    InvalidRange { text: String, reason: String },
    #[error("address range {range} has room for {capacity} {kind} instance ids (0..{capacity}); instance {id} does not fit: use a wider range")]
    RangeTooSmall {
        range: Ipv4Net,
        kind: NetKind,
        capacity: u32,
        id: u32,
    },
    #[error("invalid host name {name:?}: {reason}")]
    InvalidHostName { name: String, reason: String },
    #[error("host {host}, instance {id}: link name {link:?} is longer than {MAX_LINK_NAME} bytes (IFNAMSIZ); use a shorter host name or a smaller id")]
    NameTooLong { host: String, id: u32, link: String },
    #[error("host {host}: instance {id} is already set up (or listed twice)")]
    DuplicateInstance { host: String, id: u32 },
    #[error("host {host} has no instance {id}")]
    NoSuchInstance { host: String, id: u32 },
    #[error("{what} {name:?} already exists: a leftover (remove it with cleanup_prefix) or another host with the same name")]
    NameInUse { what: &'static str, name: String },
    #[error("address range {range} overlaps the root namespace route `{route}`: pick another range, or remove the leftover")]
    RangeInUse { range: Ipv4Net, route: String },
    #[error("{step}: `{command}` failed ({status}): {stderr}")]
    Command {
        step: String,
        command: String,
        status: String,
        stderr: String,
    },
    #[error("the instance firewall needs `nft` (Debian package nftables; scripts/setup.sh installs it): could not run `{command}`: {source}")]
    NoNft {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{step}: could not run `{command}`: {source}")]
    Spawn {
        step: String,
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{step}: `{command}` did not finish within {timeout:?} and was killed")]
    Timeout {
        step: String,
        command: String,
        timeout: Duration,
    },
    #[error("{kind} links are not supported by this kernel: `{command}` said: {stderr}")]
    Unsupported {
        kind: NetKind,
        command: String,
        stderr: String,
    },
    #[error("traffic to {addr} would not stay on tickpack links: {reason}")]
    RouteNotOurs { addr: Ipv4Addr, reason: String },
    #[error("refusing to remove {name:?}: not something this module creates (names start with `{PREFIX}`, routes are `unreachable RANGE metric N`)")]
    ForeignName { name: String },
    #[error("cleanup left {} item(s) behind: {}", failures.len(), failures.join("; "))]
    Cleanup { failures: Vec<String> },
    #[error("{error}; removing what was already created also failed: {rollback}")]
    Rollback {
        error: Box<NetError>,
        rollback: Box<NetError>,
    },
}

/// How the instance namespaces are connected to the root namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetKind {
    /// Routed point-to-point veth pair per instance.
    Veth,
    /// Veth pairs enslaved to one software bridge.
    Bridge,
    /// Macvlan children (bridge mode) of a parent link of ours.
    Macvlan,
    /// Ipvlan children (L2 mode) of a parent link of ours.
    Ipvlan,
}

impl NetKind {
    /// All kinds, in the order of the docs.
    pub const ALL: [NetKind; 4] = [
        NetKind::Veth,
        NetKind::Bridge,
        NetKind::Macvlan,
        NetKind::Ipvlan,
    ];

    /// Whether instances are routed (a `/30` each) rather than sharing one
    /// L2 segment with the gateway.
    pub fn is_routed(self) -> bool {
        self == NetKind::Veth
    }

    /// Whether each instance has a veth pair whose host end sits in the
    /// root namespace (`tp<host>v<id>`).
    fn has_veth(self) -> bool {
        matches!(self, NetKind::Veth | NetKind::Bridge)
    }

    /// The word used in configs and `ip link add ... type WORD`.
    pub fn as_str(self) -> &'static str {
        match self {
            NetKind::Veth => "veth",
            NetKind::Bridge => "bridge",
            NetKind::Macvlan => "macvlan",
            NetKind::Ipvlan => "ipvlan",
        }
    }
}

impl fmt::Display for NetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NetKind {
    type Err = NetError;
    fn from_str(s: &str) -> Result<Self, NetError> {
        NetKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| NetError::UnknownKind(s.to_string()))
    }
}

/// Fails unless `host` can prefix our names: 1..=8 of `a-z0-9` (the rule
/// is [`tickpack_sys::validate_host_name`]).
pub fn validate_host_name(host: &str) -> Result<(), NetError> {
    tickpack_sys::validate_host_name(host).map_err(|e| NetError::InvalidHostName {
        name: host.to_string(),
        reason: e.to_string(),
    })
}

/// The namespace name of instance `id` on `host`: `tp<host>-<id>`.
pub fn netns_name(host: &str, id: u32) -> String {
    format!("{PREFIX}{host}-{id}")
}

fn veth_name(host: &str, id: u32) -> String {
    format!("{PREFIX}{host}v{id}")
}

fn shared_name(host: &str, suffix: &str) -> String {
    format!("{PREFIX}{host}{suffix}")
}

/// Fails unless traffic to `addr` would leave the root namespace as plain
/// unicast through a link of ours (a name starting with `tp`): call it in a
/// load generator before sending to an instance address. Loopback and local
/// addresses are refused (`lo` is not ours), and so is every address of a
/// guarded range that no instance serves on a veth host (the `unreachable`
/// route answers). On the shared kinds every address of the range passes:
/// the whole range is our segment, and an address nobody holds just gets no
/// ARP answer, so nothing leaves the machine. Returns the output device.
/// Runs `ip route get ADDR`.
pub fn check_route(addr: Ipv4Addr) -> Result<String, NetError> {
    Ip::default().check_route(addr)
}

/// True if `name` is one of the names host `host` gives its namespaces and
/// links: `tp<host>-<id>` (namespace), `tp<host>v<id>` (veth), or
/// `tp<host>` + `br`, `d0`, `d1`, `gw` (shared links). Exact, not a prefix:
/// host `h`'s names never include host `h1`'s (`tph1-1` is `h1`'s
/// namespace, not a name of `h`).
pub fn is_host_name_of(host: &str, name: &str) -> bool {
    let Some(rest) = name.strip_prefix(PREFIX).and_then(|n| n.strip_prefix(host)) else {
        return false;
    };
    let id = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    match rest {
        "br" | "d0" | "d1" | "gw" => true,
        r => r.strip_prefix('-').is_some_and(id) || r.strip_prefix('v').is_some_and(id),
    }
}

/// Removes every network namespace and root-namespace link that host
/// `host` names (see [`is_host_name_of`]), for recovery after `kill -9` when
/// no record is at hand; other hosts' names, even ones that start with
/// the same letters, are never touched. Returns what was removed. Guard
/// routes are not found this way: remove one with [`remove_guard_route`].
pub fn cleanup_host(host: &str) -> Result<Vec<String>, NetError> {
    validate_host_name(host)?;
    Ip::default().cleanup_matching(|n| is_host_name_of(host, n))
}

/// Removes every network namespace and root-namespace link whose name
/// starts with `prefix`, for recovery after `kill -9` when no record is at
/// hand. `prefix` must itself start with `tp`; names without it are never
/// touched. Returns what was removed. Guard routes are not found this way:
/// remove one with [`remove_guard_route`].
///
/// Prefixes match textually: `tph1` also matches host `h10`'s names.
pub fn cleanup_prefix(prefix: &str) -> Result<Vec<String>, NetError> {
    Ip::default().cleanup_prefix(prefix)
}

/// The `ip route` arguments of the guard route for `range`.
fn guard_route(range: Ipv4Net) -> String {
    format!("unreachable {range} metric {GUARD_METRIC}")
}

/// Removes the `unreachable` guard route for `range` if present.
pub fn remove_guard_route(range: Ipv4Net) -> Result<(), NetError> {
    NetRecord {
        routes: vec![guard_route(range)],
        ..NetRecord::default()
    }
    .cleanup()
}

/// The parent link of macvlan/ipvlan children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParentLink {
    /// A `dummy` link.
    Dummy,
    /// One end of a veth pair (kernels without `dummy`).
    VethPair,
}

/// One host's network paths: the namespaces of its instances and the links
/// that reach them. Created by [`HostNet::setup`]; removed by
/// [`HostNet::teardown`] or, best effort, on drop.
#[derive(Debug)]
pub struct HostNet {
    ip: Ip,
    host: String,
    kind: NetKind,
    plan: AddrPlan,
    parent: Option<ParentLink>,
    instances: BTreeSet<u32>,
    record: NetRecord,
    /// Set once the record has been cleaned up or handed over.
    released: bool,
}

impl HostNet {
    /// Sets up `host`'s paths of `kind` for `instances` with the default
    /// [`Ip`]; see [`HostNet::setup_with`].
    pub fn setup(
        host: &str,
        kind: NetKind,
        plan: AddrPlan,
        instances: &[u32],
    ) -> Result<HostNet, NetError> {
        Self::setup_with(Ip::default(), host, kind, plan, instances)
    }

    /// Validates everything (host name, ids, link name lengths, room in the
    /// range, no existing namespace or link of the same name, range not
    /// routed yet), then adds the guard route, the shared links of `kind`
    /// and each instance in turn. On failure, removes what it created and
    /// returns the error.
    pub fn setup_with(
        ip: Ip,
        host: &str,
        kind: NetKind,
        plan: AddrPlan,
        instances: &[u32],
    ) -> Result<HostNet, NetError> {
        Self::setup_journaled(ip, host, kind, plan, instances, &mut |_| {})
    }

    /// Like [`HostNet::setup_with`], but calls `journal` with the record
    /// right before the guard route is added, so a caller that persists it
    /// there can remove the route after a `kill -9` in the middle of
    /// set-up (namespaces and links are found by name; a route is not).
    pub fn setup_journaled(
        ip: Ip,
        host: &str,
        kind: NetKind,
        plan: AddrPlan,
        instances: &[u32],
        journal: &mut dyn FnMut(&NetRecord),
    ) -> Result<HostNet, NetError> {
        validate_host_name(host)?;
        let mut seen = BTreeSet::new();
        for &id in instances {
            if !seen.insert(id) {
                return Err(NetError::DuplicateInstance {
                    host: host.to_string(),
                    id,
                });
            }
            check_instance(host, kind, &plan, id)?;
        }
        let mut links: Vec<String> = match kind {
            NetKind::Veth => vec![],
            NetKind::Bridge => vec![shared_name(host, "br")],
            NetKind::Macvlan | NetKind::Ipvlan => ["d0", "d1", "gw"]
                .iter()
                .map(|s| shared_name(host, s))
                .collect(),
        };
        if kind.has_veth() {
            links.extend(instances.iter().map(|&id| veth_name(host, id)));
        }
        let namespaces: Vec<String> = instances.iter().map(|&id| netns_name(host, id)).collect();
        check_names_free(&ip, &namespaces, &links)?;
        if let Some(route) = ip.route_overlapping(plan.range())? {
            return Err(NetError::RangeInUse {
                range: plan.range(),
                route,
            });
        }

        let mut net = HostNet {
            ip,
            host: host.to_string(),
            kind,
            plan,
            parent: None,
            instances: BTreeSet::new(),
            record: NetRecord::default(),
            released: false,
        };
        let built = net
            .build_shared(journal)
            .and_then(|()| instances.iter().try_for_each(|&id| net.build_instance(id)));
        match built {
            Ok(()) => Ok(net),
            Err(error) => {
                net.released = true;
                Err(match net.record.cleanup_with(&net.ip) {
                    Ok(()) => error,
                    Err(rollback) => NetError::Rollback {
                        error: Box::new(error),
                        rollback: Box::new(rollback),
                    },
                })
            }
        }
    }

    /// Adds one instance (validated first). On failure, removes what was
    /// created for it and leaves the other instances as they were.
    pub fn add_instance(&mut self, id: u32) -> Result<(), NetError> {
        if self.instances.contains(&id) {
            return Err(NetError::DuplicateInstance {
                host: self.host.clone(),
                id,
            });
        }
        check_instance(&self.host, self.kind, &self.plan, id)?;
        let links: Vec<String> = if self.kind.has_veth() {
            vec![veth_name(&self.host, id)]
        } else {
            vec![]
        };
        check_names_free(&self.ip, &[netns_name(&self.host, id)], &links)?;
        self.build_instance(id)
    }

    /// Removes one instance: its links, then its namespace.
    pub fn remove_instance(&mut self, id: u32) -> Result<(), NetError> {
        if !self.instances.contains(&id) {
            return Err(NetError::NoSuchInstance {
                host: self.host.clone(),
                id,
            });
        }
        let netns = netns_name(&self.host, id);
        let step = format!("host {}, instance {id}: delete its link", self.host);
        match self.kind {
            NetKind::Veth | NetKind::Bridge => {
                let link = veth_name(&self.host, id);
                self.ip.remove(&step, &["link", "del", "dev", &link])?;
                self.record.links.retain(|l| *l != link);
            }
            NetKind::Macvlan | NetKind::Ipvlan => {
                // Deleted explicitly so it is gone now, not whenever the
                // kernel frees the namespace.
                self.ip
                    .remove(&step, &["-n", &netns, "link", "del", "dev", INSTANCE_LINK])?;
            }
        }
        let step = format!("host {}, instance {id}: delete namespace", self.host);
        self.ip.remove(&step, &["netns", "del", &netns])?;
        self.record.namespaces.retain(|n| *n != netns);
        self.instances.remove(&id);
        Ok(())
    }

    /// The address instance `id` owns; its servers bind it. For an id not
    /// set up (yet), the address it would get.
    ///
    /// # Panics
    ///
    /// If `id` does not fit the address plan; ids given to
    /// [`HostNet::setup`] and [`HostNet::add_instance`] always do (checked
    /// there). Use [`AddrPlan::instance_addr`] for untrusted ids.
    pub fn instance_addr(&self, id: u32) -> Ipv4Addr {
        self.plan
            .instance_addr(self.kind, id)
            .unwrap_or_else(|e| panic!("host {}: {e}", self.host))
    }

    /// The host-side address instance `id` routes through (the source of
    /// the host's traffic to it). Panics like [`HostNet::instance_addr`].
    pub fn gateway(&self, id: u32) -> Ipv4Addr {
        self.plan
            .gateway(self.kind, id)
            .unwrap_or_else(|e| panic!("host {}: {e}", self.host))
    }

    /// `/run/netns/tp<host>-<id>`: the file to `setns(fd, CLONE_NEWNET)`
    /// into. It exists while instance `id` is set up.
    pub fn netns_path(&self, id: u32) -> PathBuf {
        PathBuf::from(NETNS_DIR).join(netns_name(&self.host, id))
    }

    /// Like [`check_route`], but the output device must also be one of
    /// *this* host's links (a veth host end, the bridge or the host-side
    /// macvlan/ipvlan). Returns the device.
    pub fn check_route(&self, addr: Ipv4Addr) -> Result<String, NetError> {
        let dev = self.ip.check_route(addr)?;
        if self.record.links.contains(&dev) {
            Ok(dev)
        } else {
            Err(NetError::RouteNotOurs {
                addr,
                reason: format!(
                    "it leaves through {dev:?}, which belongs to no instance of host {}",
                    self.host
                ),
            })
        }
    }

    /// The instance ids, ascending.
    pub fn instances(&self) -> impl Iterator<Item = u32> + '_ {
        self.instances.iter().copied()
    }

    /// The host name given to set-up.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The kind of path.
    pub fn kind(&self) -> NetKind {
        self.kind
    }

    /// The address plan.
    pub fn plan(&self) -> &AddrPlan {
        &self.plan
    }

    /// For macvlan/ipvlan, what the children hang off.
    pub fn parent_link(&self) -> Option<ParentLink> {
        self.parent
    }

    /// Everything created so far; persist it after every change.
    pub fn record(&self) -> &NetRecord {
        &self.record
    }

    /// Removes everything created (links, namespaces, then the guard route).
    pub fn teardown(mut self) -> Result<(), NetError> {
        self.released = true;
        self.record.cleanup_with(&self.ip)
    }

    /// Loads the instance firewall (an nftables table `inet tp<host>`, see
    /// [`filter`]) over this host's links. The table is added to the record
    /// and `journal` called with it *before* the table is created, so a
    /// caller that persists the record can remove it after a `kill -9`.
    /// Teardown removes it first.
    pub fn install_filter(
        &mut self,
        game_port: u16,
        allow_host_ports: &[u16],
        journal: &mut dyn FnMut(&NetRecord),
    ) -> Result<(), NetError> {
        let table = filter::table_name(&self.host);
        let spec = FilterSpec {
            links: self.record.links.clone(),
            game_port,
            allow_host_ports: allow_host_ports.to_vec(),
        };
        if !self.record.tables.contains(&table) {
            self.record.tables.push(table.clone());
        }
        journal(&self.record);
        Nft::default().install(&table, &spec)
    }

    /// Gives up ownership without removing anything: the caller keeps the
    /// record and must clean up later (e.g. a supervisor handing over).
    pub fn into_record(mut self) -> NetRecord {
        self.released = true;
        std::mem::take(&mut self.record)
    }

    /// Guard route (journaled before it is added), then the links every
    /// instance shares.
    fn build_shared(&mut self, journal: &mut dyn FnMut(&NetRecord)) -> Result<(), NetError> {
        let range = self.plan.range();
        let route = guard_route(range);
        let mut args = vec!["route", "add"];
        args.extend(route.split_whitespace());
        let mut planned = self.record.clone();
        planned.routes.push(route.clone());
        journal(&planned);
        self.ip.run(
            &format!("host {}: add the unreachable guard route", self.host),
            &args,
        )?;
        self.record.routes.push(route);

        let gw = format!(
            "{}/{}",
            self.plan.gateway(self.kind, 0)?,
            self.plan.subnet_prefix(self.kind)
        );
        match self.kind {
            NetKind::Veth => Ok(()),
            NetKind::Bridge => {
                let br = shared_name(&self.host, "br");
                self.create_link(
                    "create the bridge",
                    &br,
                    &["link", "add", "name", &br, "type", "bridge"],
                )?;
                self.up_with_addr("bridge", &br, &gw)
            }
            NetKind::Macvlan | NetKind::Ipvlan => {
                let d0 = shared_name(&self.host, "d0");
                self.create_parent(&d0)?;
                let gwl = shared_name(&self.host, "gw");
                let mut args = vec!["link", "add", "name", &gwl, "link", &d0];
                args.extend(self.child_type());
                self.create_link(&format!("create the host-side {}", self.kind), &gwl, &args)?;
                self.up_with_addr(self.kind.as_str(), &gwl, &gw)
            }
        }
    }

    /// `ip link add ... type macvlan mode bridge` or `type ipvlan mode l2`.
    fn child_type(&self) -> [&'static str; 4] {
        match self.kind {
            NetKind::Ipvlan => ["type", "ipvlan", "mode", "l2"],
            _ => ["type", "macvlan", "mode", "bridge"],
        }
    }

    /// Runs a link-creating command and records `name` once it exists.
    /// A kernel without the link type gives [`NetError::Unsupported`].
    fn create_link(&mut self, what: &str, name: &str, args: &[&str]) -> Result<(), NetError> {
        let step = format!("host {}: {what} {name}", self.host);
        match self.ip.run(&step, args) {
            Ok(_) => {
                self.record.links.push(name.to_string());
                Ok(())
            }
            Err(NetError::Command {
                command, stderr, ..
            }) if ip::is_unknown_type(&stderr) => Err(NetError::Unsupported {
                kind: self.kind,
                command,
                stderr,
            }),
            Err(e) => Err(e),
        }
    }

    /// Adds `addr` to root-namespace link `name` and brings it up.
    fn up_with_addr(&self, what: &str, name: &str, addr: &str) -> Result<(), NetError> {
        let h = &self.host;
        self.ip.run(
            &format!("host {h}: give the {what} {name} the gateway address"),
            &["addr", "add", addr, "dev", name],
        )?;
        self.ip.run(
            &format!("host {h}: bring up {name}"),
            &["link", "set", "dev", name, "up"],
        )?;
        Ok(())
    }

    /// The macvlan/ipvlan parent: a dummy link, or a veth pair where the
    /// kernel has no `dummy`.
    fn create_parent(&mut self, d0: &str) -> Result<(), NetError> {
        let h = self.host.clone();
        let step = format!("host {h}: create the dummy parent link {d0}");
        match self
            .ip
            .run(&step, &["link", "add", "name", d0, "type", "dummy"])
        {
            Ok(_) => {
                self.record.links.push(d0.to_string());
                self.parent = Some(ParentLink::Dummy);
            }
            Err(NetError::Command { ref stderr, .. }) if ip::is_unknown_type(stderr) => {
                let d1 = shared_name(&h, "d1");
                let step = format!(
                    "host {h}: create the veth parent pair {d0}/{d1} (no dummy in this kernel)"
                );
                self.ip.run(
                    &step,
                    &[
                        "link", "add", "name", d0, "type", "veth", "peer", "name", &d1,
                    ],
                )?;
                self.record.links.push(d0.to_string());
                self.record.links.push(d1.clone());
                self.parent = Some(ParentLink::VethPair);
                // The far end must be up for the parent to have carrier; with
                // ARP off it never answers for the gateway address.
                self.ip.run(
                    &format!("host {h}: set up the far end {d1} of the parent"),
                    &["link", "set", "dev", &d1, "arp", "off", "up"],
                )?;
            }
            Err(e) => return Err(e),
        }
        self.ip.run(
            &format!("host {h}: bring up the parent link {d0}"),
            &["link", "set", "dev", d0, "up"],
        )?;
        Ok(())
    }

    /// Creates instance `id`; on failure removes what it created for it.
    fn build_instance(&mut self, id: u32) -> Result<(), NetError> {
        let mut created = NetRecord::default();
        match self.build_instance_into(id, &mut created) {
            Ok(()) => {
                self.record.extend(created);
                self.instances.insert(id);
                Ok(())
            }
            Err(error) => match created.cleanup_with(&self.ip) {
                Ok(()) => Err(error),
                Err(rollback) => {
                    // Keep what could not be removed so teardown retries.
                    self.record.extend(created);
                    Err(NetError::Rollback {
                        error: Box::new(error),
                        rollback: Box::new(rollback),
                    })
                }
            },
        }
    }

    fn build_instance_into(&self, id: u32, created: &mut NetRecord) -> Result<(), NetError> {
        let h = &self.host;
        let ns = netns_name(h, id);
        let step = |what: &str| format!("host {h}, instance {id}: {what}");
        let addr = format!(
            "{}/{}",
            self.plan.instance_addr(self.kind, id)?,
            self.plan.subnet_prefix(self.kind)
        );
        let gw = self.plan.gateway(self.kind, id)?.to_string();

        self.ip
            .run(&step("create namespace"), &["netns", "add", &ns])?;
        created.namespaces.push(ns.clone());
        self.ip.run(
            &step("bring up lo"),
            &["-n", &ns, "link", "set", "dev", "lo", "up"],
        )?;

        match self.kind {
            NetKind::Veth | NetKind::Bridge => {
                let v = veth_name(h, id);
                self.ip.run(
                    &step("create the veth pair"),
                    &[
                        "link",
                        "add",
                        "name",
                        &v,
                        "type",
                        "veth",
                        "peer",
                        "name",
                        INSTANCE_LINK,
                        "netns",
                        &ns,
                    ],
                )?;
                created.links.push(v.clone());
                if self.kind == NetKind::Veth {
                    let host_end = format!("{gw}/30");
                    self.ip.run(
                        &step("address the host end"),
                        &["addr", "add", &host_end, "dev", &v],
                    )?;
                    self.ip.run(
                        &step("bring up the host end"),
                        &["link", "set", "dev", &v, "up"],
                    )?;
                } else {
                    let br = shared_name(h, "br");
                    self.ip.run(
                        &step("attach the host end to the bridge and bring it up"),
                        &["link", "set", "dev", &v, "master", &br, "up"],
                    )?;
                }
            }
            NetKind::Macvlan | NetKind::Ipvlan => {
                let d0 = shared_name(h, "d0");
                let mut args = vec![
                    "link",
                    "add",
                    "name",
                    INSTANCE_LINK,
                    "link",
                    &d0,
                    "netns",
                    &ns,
                ];
                args.extend(self.child_type());
                match self
                    .ip
                    .run(&step(&format!("create the {} child", self.kind)), &args)
                {
                    Ok(_) => {}
                    Err(NetError::Command {
                        command, stderr, ..
                    }) if ip::is_unknown_type(&stderr) => {
                        return Err(NetError::Unsupported {
                            kind: self.kind,
                            command,
                            stderr,
                        })
                    }
                    Err(e) => return Err(e),
                }
            }
        }

        self.ip.run(
            &step("address eth0"),
            &["-n", &ns, "addr", "add", &addr, "dev", INSTANCE_LINK],
        )?;
        self.ip.run(
            &step("bring up eth0"),
            &["-n", &ns, "link", "set", "dev", INSTANCE_LINK, "up"],
        )?;
        self.ip.run(
            &step("add the default route"),
            &[
                "-n",
                &ns,
                "route",
                "add",
                "default",
                "via",
                &gw,
                "dev",
                INSTANCE_LINK,
            ],
        )?;
        Ok(())
    }
}

impl Drop for HostNet {
    fn drop(&mut self) {
        if !self.released {
            // Best effort: a panic or an early return must not leave
            // namespaces, links or routes behind.
            let _ = self.record.cleanup_with(&self.ip);
        }
    }
}

/// Name and room checks for one instance, no side effects.
fn check_instance(host: &str, kind: NetKind, plan: &AddrPlan, id: u32) -> Result<(), NetError> {
    plan.check(kind, id)?;
    let link = veth_name(host, id);
    if link.len() > MAX_LINK_NAME {
        return Err(NetError::NameTooLong {
            host: host.to_string(),
            id,
            link,
        });
    }
    Ok(())
}

/// Fails if any of the namespaces or root-namespace links already exists.
fn check_names_free(ip: &Ip, namespaces: &[String], links: &[String]) -> Result<(), NetError> {
    if !namespaces.is_empty() {
        let existing = ip.netns_names("list existing namespaces")?;
        if let Some(n) = namespaces.iter().find(|n| existing.contains(n)) {
            return Err(NetError::NameInUse {
                what: "network namespace",
                name: n.clone(),
            });
        }
    }
    if !links.is_empty() {
        let existing = ip.link_names("list existing links")?;
        if let Some(l) = links.iter().find(|l| existing.contains(l)) {
            return Err(NetError::NameInUse {
                what: "link",
                name: l.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_print_as_config_words() {
        for k in NetKind::ALL {
            assert_eq!(k.to_string().parse::<NetKind>().unwrap(), k);
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
        let e = "vlan".parse::<NetKind>().unwrap_err().to_string();
        assert!(e.contains("\"vlan\"") && e.contains("macvlan"), "{e}");
    }

    #[test]
    fn host_names_are_short_lowercase_alphanumerics() {
        assert!(validate_host_name("h1").is_ok());
        assert!(validate_host_name("abcdefgh").is_ok());
        for bad in ["", "abcdefghi", "H1", "h-1", "h 1", "h/1"] {
            let e = validate_host_name(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn a_hosts_names_are_its_own_and_never_a_longer_named_hosts() {
        assert!(is_host_name_of("h", &netns_name("h", 1)));
        assert!(is_host_name_of("h", &veth_name("h", 12)));
        for s in ["br", "d0", "d1", "gw"] {
            assert!(is_host_name_of("h", &shared_name("h", s)));
        }
        // Host h1's (and hv1's, hd0's...) names are not h's.
        for other in ["h1", "hv1", "hd0", "hbr", "h10"] {
            let names = [
                netns_name(other, 1),
                veth_name(other, 3),
                shared_name(other, "br"),
                shared_name(other, "d0"),
                shared_name(other, "gw"),
            ];
            for n in names {
                assert!(!is_host_name_of("h", &n), "{n} belongs to {other}, not h");
                assert!(is_host_name_of(other, &n), "{n} belongs to {other}");
            }
        }
        for n in ["tph", "tph-", "tphv", "tph-01", "tph-1x", "eth0", "tpbr"] {
            assert!(!is_host_name_of("h", n), "{n}");
        }
    }

    #[test]
    fn names_follow_the_documented_pattern() {
        assert_eq!(netns_name("h1", 7), "tph1-7");
        assert_eq!(veth_name("h1", 7), "tph1v7");
        assert_eq!(shared_name("h1", "br"), "tph1br");
    }

    #[test]
    fn link_names_longer_than_ifnamsiz_are_refused_before_anything_runs() {
        let plan = AddrPlan::new("10.0.0.0/8".parse().unwrap()).unwrap();
        // tp + 8 + v + 5 digits = 16 bytes
        let e = check_instance("abcdefgh", NetKind::Bridge, &plan, 12345).unwrap_err();
        assert!(matches!(e, NetError::NameTooLong { .. }), "{e}");
        assert!(e.to_string().contains("tpabcdefghv12345"), "{e}");
        assert!(check_instance("abcdefgh", NetKind::Bridge, &plan, 1234).is_ok());
    }

    #[test]
    fn the_longest_host_name_fits_every_link_of_the_largest_fleet() {
        // A host runs at most 250 instances (the fleet's limit).
        let plan = AddrPlan::new("10.0.0.0/8".parse().unwrap()).unwrap();
        let host = "a".repeat(MAX_HOST_NAME);
        validate_host_name(&host).unwrap();
        for kind in NetKind::ALL {
            check_instance(&host, kind, &plan, 250).unwrap();
        }
        for suffix in ["br", "d0", "d1", "gw"] {
            assert!(shared_name(&host, suffix).len() <= MAX_LINK_NAME);
        }
    }

    #[test]
    fn setup_validates_before_running_anything() {
        // A program that does not exist: any attempt to run it would
        // surface as a Spawn error instead of the validation error.
        let ip = || Ip::new("/nonexistent/ip");
        let plan = AddrPlan::new("198.18.0.0/24".parse().unwrap()).unwrap();
        let e = HostNet::setup_with(ip(), "H", NetKind::Veth, plan, &[1]).unwrap_err();
        assert!(matches!(e, NetError::InvalidHostName { .. }), "{e}");
        let e = HostNet::setup_with(ip(), "h", NetKind::Veth, plan, &[1, 2, 1]).unwrap_err();
        assert!(
            matches!(e, NetError::DuplicateInstance { id: 1, .. }),
            "{e}"
        );
        let e = HostNet::setup_with(ip(), "h", NetKind::Veth, plan, &[1, 64]).unwrap_err();
        assert!(
            matches!(
                e,
                NetError::RangeTooSmall {
                    id: 64,
                    capacity: 64,
                    ..
                }
            ),
            "{e}"
        );
    }
}
