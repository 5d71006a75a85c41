//! Building the links of each kind of path: the guard route and the links
//! every instance shares (bridge, macvlan/ipvlan parent and host side),
//! then each instance's namespace, link, address and routes.

use std::net::Ipv4Addr;

use super::hostnet::{HostNet, ParentLink};
use super::ip::{self, Link};
use super::names::{shared_name, veth_name};
use super::routes::{guard_route, GUARD_METRIC};
use super::{netns_name, NetError, NetKind, NetRecord, INSTANCE_LINK};

impl HostNet {
    /// Guard route (journaled before it is added), then the links every
    /// instance shares.
    pub(super) fn build_shared(
        &mut self,
        journal: &mut dyn FnMut(&NetRecord),
    ) -> Result<(), NetError> {
        let range = self.plan.range();
        let route = guard_route(range);
        let mut planned = self.record.clone();
        planned.routes.push(route.clone());
        journal(&planned);
        self.ip.unreachable_add(
            &format!("host {}: add the unreachable guard route", self.host),
            range,
            GUARD_METRIC,
        )?;
        self.record.routes.push(route);

        let gw = self.plan.gateway(self.kind, 0)?;
        let prefix = self.plan.subnet_prefix(self.kind);
        match self.kind {
            NetKind::Veth => Ok(()),
            NetKind::Bridge => {
                let br = shared_name(&self.host, "br");
                self.create_link("create the bridge", &br, Link::Bridge)?;
                self.up_with_addr("bridge", &br, gw, prefix)?;
                self.add_sources(&br)
            }
            NetKind::Macvlan | NetKind::Ipvlan => {
                let d0 = shared_name(&self.host, "d0");
                self.create_parent(&d0)?;
                let gwl = shared_name(&self.host, "gw");
                let child = self.child(&d0, None);
                self.create_link(&format!("create the host-side {}", self.kind), &gwl, child)?;
                self.up_with_addr(self.kind.as_str(), &gwl, gw, prefix)?;
                self.add_sources(&gwl)
            }
        }
    }

    /// A macvlan child in bridge mode or an ipvlan child in L2 mode of
    /// `parent`, in namespace `netns` if given.
    fn child<'a>(&self, parent: &'a str, netns: Option<&'a str>) -> Link<'a> {
        Link::Child {
            kind: self.kind,
            parent,
            netns,
        }
    }

    /// Turns the kernel's "no such link type" into [`NetError::Unsupported`].
    fn unsupported(&self, e: NetError) -> NetError {
        match e {
            NetError::Netlink {
                request, source, ..
            } if ip::is_unknown_type(&e) => NetError::Unsupported {
                kind: self.kind,
                request,
                source,
            },
            e => e,
        }
    }

    /// Creates link `name` and records it once it exists. A kernel
    /// without the link type gives [`NetError::Unsupported`].
    fn create_link(&mut self, what: &str, name: &str, link: Link<'_>) -> Result<(), NetError> {
        let step = format!("host {}: {what} {name}", self.host);
        self.ip
            .link_add(&step, name, link)
            .map_err(|e| self.unsupported(e))?;
        self.record.links.push(name.to_string());
        Ok(())
    }

    /// Adds `addr/prefix` to root-namespace link `name` and brings it up.
    fn up_with_addr(
        &self,
        what: &str,
        name: &str,
        addr: Ipv4Addr,
        prefix: u8,
    ) -> Result<(), NetError> {
        let h = &self.host;
        self.ip.addr_add(
            &format!("host {h}: give the {what} {name} the gateway address"),
            None,
            name,
            addr,
            prefix,
        )?;
        self.ip.link_up(
            &format!("host {h}: bring up {name}"),
            None,
            name,
            false,
            None,
        )
    }

    /// Adds the plan's source addresses ([`super::AddrPlan::source_addrs`])
    /// to root-namespace link `name`, each as a `/32`: local addresses the
    /// instances answer through their gateway (veth) or on their segment
    /// (the shared kinds). They go when the link is deleted.
    fn add_sources(&self, name: &str) -> Result<(), NetError> {
        for a in self.plan.source_addrs() {
            self.ip.addr_add(
                &format!(
                    "host {}: add the load generators' source address {a}/32 to {name}",
                    self.host
                ),
                None,
                name,
                a,
                32,
            )?;
        }
        Ok(())
    }

    /// The macvlan/ipvlan parent: a dummy link, or a veth pair where the
    /// kernel has no `dummy`.
    fn create_parent(&mut self, d0: &str) -> Result<(), NetError> {
        let h = self.host.clone();
        let step = format!("host {h}: create the dummy parent link {d0}");
        match self.ip.link_add(&step, d0, Link::Dummy) {
            Ok(()) => {
                self.record.links.push(d0.to_string());
                self.parent = Some(ParentLink::Dummy);
            }
            Err(e) if ip::is_unknown_type(&e) => {
                let d1 = shared_name(&h, "d1");
                let step = format!(
                    "host {h}: create the veth parent pair {d0}/{d1} (no dummy in this kernel)"
                );
                let pair = Link::Veth {
                    peer: &d1,
                    netns: None,
                };
                self.ip.link_add(&step, d0, pair)?;
                self.record.links.push(d0.to_string());
                self.record.links.push(d1.clone());
                self.parent = Some(ParentLink::VethPair);
                // The far end must be up for the parent to have carrier; with
                // ARP off it never answers for the gateway address.
                self.ip.link_up(
                    &format!("host {h}: set up the far end {d1} of the parent"),
                    None,
                    &d1,
                    true,
                    None,
                )?;
            }
            Err(e) => return Err(e),
        }
        self.ip.link_up(
            &format!("host {h}: bring up the parent link {d0}"),
            None,
            d0,
            false,
            None,
        )
    }

    /// Creates instance `id`; on failure removes what it created for it.
    pub(super) fn build_instance(&mut self, id: u32) -> Result<(), NetError> {
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
        let addr = self.plan.instance_addr(self.kind, id)?;
        let prefix = self.plan.subnet_prefix(self.kind);
        let gw = self.plan.gateway(self.kind, id)?;

        self.ip.netns_add(&step("create namespace"), &ns)?;
        created.namespaces.push(ns.clone());
        self.ip
            .link_up(&step("bring up lo"), Some(&ns), "lo", false, None)?;

        match self.kind {
            NetKind::Veth | NetKind::Bridge => {
                let v = veth_name(h, id);
                let pair = Link::Veth {
                    peer: INSTANCE_LINK,
                    netns: Some(&ns),
                };
                self.ip.link_add(&step("create the veth pair"), &v, pair)?;
                created.links.push(v.clone());
                if self.kind == NetKind::Veth {
                    self.ip
                        .addr_add(&step("address the host end"), None, &v, gw, 30)?;
                    // On every host end: the addresses stay while any
                    // instance does, and go with the last link.
                    self.add_sources(&v)?;
                    self.ip
                        .link_up(&step("bring up the host end"), None, &v, false, None)?;
                } else {
                    let br = shared_name(h, "br");
                    self.ip.link_up(
                        &step("attach the host end to the bridge and bring it up"),
                        None,
                        &v,
                        false,
                        Some(&br),
                    )?;
                }
            }
            NetKind::Macvlan | NetKind::Ipvlan => {
                let d0 = shared_name(h, "d0");
                self.ip
                    .link_add(
                        &step(&format!("create the {} child", self.kind)),
                        INSTANCE_LINK,
                        self.child(&d0, Some(&ns)),
                    )
                    .map_err(|e| self.unsupported(e))?;
            }
        }

        self.ip.addr_add(
            &step("address eth0"),
            Some(&ns),
            INSTANCE_LINK,
            addr,
            prefix,
        )?;
        self.ip.link_up(
            &step("bring up eth0"),
            Some(&ns),
            INSTANCE_LINK,
            false,
            None,
        )?;
        self.ip
            .default_route_add(&step("add the default route"), &ns, gw, INSTANCE_LINK)?;
        Ok(())
    }
}
