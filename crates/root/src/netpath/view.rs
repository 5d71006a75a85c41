//! [`NetView`]: what a supervisor knows of its host's network, which its
//! root process made ([`crate::service`]): the plan that gives each
//! instance its address, the names, the record. Reading it needs no
//! privilege.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use super::{netns_name, AddrPlan, Ip, NetError, NetKind, NetRecord, NETNS_DIR};

/// One host's network as its supervisor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetView {
    host: String,
    kind: NetKind,
    plan: AddrPlan,
    record: NetRecord,
}

impl NetView {
    pub fn new(host: &str, kind: NetKind, plan: AddrPlan, record: NetRecord) -> NetView {
        NetView {
            host: host.to_string(),
            kind,
            plan,
            record,
        }
    }

    /// The address instance `id` owns (ids the network was made for always
    /// fit its plan).
    ///
    /// # Panics
    ///
    /// If `id` does not fit the plan.
    pub fn instance_addr(&self, id: u32) -> Ipv4Addr {
        self.plan
            .instance_addr(self.kind, id)
            .unwrap_or_else(|e| panic!("host {}: {e}", self.host))
    }

    /// `/run/netns/tp<host>-<id>`.
    pub fn netns_path(&self, id: u32) -> PathBuf {
        PathBuf::from(NETNS_DIR).join(netns_name(&self.host, id))
    }

    /// Fails unless traffic to `addr` leaves through one of this host's
    /// links; returns the link.
    pub fn check_route(&self, addr: Ipv4Addr) -> Result<String, NetError> {
        route_through_own_link(&Ip::default(), &self.host, &self.record.links, addr)
    }

    pub fn plan(&self) -> &AddrPlan {
        &self.plan
    }

    pub fn record(&self) -> &NetRecord {
        &self.record
    }

    /// The record as its root process last answered it.
    pub fn set_record(&mut self, record: NetRecord) {
        self.record = record;
    }
}

/// Fails unless traffic to `addr` leaves through one of `links` (host
/// `host`'s); returns the link. [`NetView`] and `HostNet` both check so.
pub(super) fn route_through_own_link(
    ip: &Ip,
    host: &str,
    links: &[String],
    addr: Ipv4Addr,
) -> Result<String, NetError> {
    let dev = ip.check_route(addr)?;
    if links.contains(&dev) {
        Ok(dev)
    } else {
        Err(NetError::RouteNotOurs {
            addr,
            reason: format!(
                "it leaves through {dev:?}, which belongs to no instance of host {host}"
            ),
        })
    }
}
