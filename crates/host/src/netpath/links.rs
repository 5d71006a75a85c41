//! Building the links of each kind of path: the guard route and the links
//! every instance shares (bridge, macvlan/ipvlan parent and host side),
//! then each instance's namespace, link, address and routes.

use super::hostnet::{HostNet, ParentLink};
use super::names::{shared_name, veth_name};
use super::routes::guard_route;
use super::{ip, netns_name, NetError, NetKind, NetRecord, INSTANCE_LINK};

impl HostNet {
    /// Guard route (journaled before it is added), then the links every
    /// instance shares.
    pub(super) fn build_shared(
        &mut self,
        journal: &mut dyn FnMut(&NetRecord),
    ) -> Result<(), NetError> {
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
                self.up_with_addr("bridge", &br, &gw)?;
                self.add_sources(&br)
            }
            NetKind::Macvlan | NetKind::Ipvlan => {
                let d0 = shared_name(&self.host, "d0");
                self.create_parent(&d0)?;
                let gwl = shared_name(&self.host, "gw");
                let mut args = vec!["link", "add", "name", &gwl, "link", &d0];
                args.extend(self.child_type());
                self.create_link(&format!("create the host-side {}", self.kind), &gwl, &args)?;
                self.up_with_addr(self.kind.as_str(), &gwl, &gw)?;
                self.add_sources(&gwl)
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

    /// Adds the plan's source addresses ([`super::AddrPlan::source_addrs`])
    /// to root-namespace link `name`, each as a `/32`: local addresses the
    /// instances answer through their gateway (veth) or on their segment
    /// (the shared kinds). They go when the link is deleted.
    fn add_sources(&self, name: &str) -> Result<(), NetError> {
        for a in self.plan.source_addrs() {
            let addr = format!("{a}/32");
            self.ip.run(
                &format!(
                    "host {}: add the load generators' source address {addr} to {name}",
                    self.host
                ),
                &["addr", "add", &addr, "dev", name],
            )?;
        }
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
                    // On every host end: the addresses stay while any
                    // instance does, and go with the last link.
                    self.add_sources(&v)?;
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
