//! [`HostNet`]: one host's network paths as an owned value: validated
//! set-up, instances added and removed, accessors, the firewall, and
//! teardown (explicit or on drop). The links of each kind are built in
//! `links.rs`.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use super::names::{check_instance, shared_name, veth_name};
use super::{
    filter, netns_name, validate_host_name, AddrPlan, FilterSpec, Ip, NetError, NetKind, NetRecord,
    Nft, INSTANCE_LINK, NETNS_DIR,
};

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
    pub(super) ip: Ip,
    pub(super) host: String,
    pub(super) kind: NetKind,
    pub(super) plan: AddrPlan,
    pub(super) parent: Option<ParentLink>,
    pub(super) instances: BTreeSet<u32>,
    pub(super) record: NetRecord,
    /// Set once the record has been cleaned up or handed over.
    pub(super) released: bool,
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
                self.ip.link_del(&step, None, &link)?;
                self.record.links.retain(|l| *l != link);
            }
            NetKind::Macvlan | NetKind::Ipvlan => {
                // Deleted explicitly so it is gone now, not whenever the
                // kernel frees the namespace.
                self.ip.link_del(&step, Some(&netns), INSTANCE_LINK)?;
            }
        }
        let step = format!("host {}, instance {id}: delete namespace", self.host);
        self.ip.netns_del(&step, &netns)?;
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
        super::view::route_through_own_link(&self.ip, &self.host, &self.record.links, addr)
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
    fn setup_validates_before_running_anything() {
        // Every request fails: any attempt to ask the kernel would
        // surface as that failure instead of the validation error.
        let ip = || Ip::default().failing_on("");
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
