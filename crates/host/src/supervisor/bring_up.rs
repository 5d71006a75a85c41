//! Bringing a fleet up, in order: the run dir's directories and record,
//! the uid block, placement, the batch (with its policy), cgroups and the
//! network (netns), then per instance its directory, disk and cgroup, the
//! health-check sockets, the spawns, the batch's start and the control
//! socket. A failure returns at once; [`Supervisor::start`] tears down
//! what was made.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use super::health::start_limit;
use super::lifecycle::{Lifecycle, Rules};
use super::{
    batch, control, disk, driver, health, io, liveness, private_dir, probe, run_dir, uid_block,
    HostError, Instance, Supervisor, BLOCK_DIR,
};
use crate::cgroup::{Cgroup, CgroupLayout, Limits};
use crate::event::EventKind;
use crate::fleet::{Backend, Health};
use crate::launch::Ready;
use crate::netpath::{self, AddrPlan, HostNet};
use crate::placement::{self, Topology};

impl Supervisor {
    pub(super) fn bring_up(&mut self) -> Result<(), HostError> {
        let dir = self.cfg.run_dir.clone();
        for sub in ["instances", "logs"] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).map_err(io(format!("creating {}", d.display())))?;
            private_dir(&d)?;
        }
        // A new host starts new logs: what the last tenants of this name
        // printed stays readable after their `down`, until this `up`.
        run_dir::clear_logs(&dir.join("logs"))?;
        self.save()?;
        if self.cfg.backend == Backend::Netns {
            let (block, said) = uid_block::UidBlock::take(&dir, &self.cfg.name)
                .map_err(io(format!("taking a uid block in {BLOCK_DIR}")))?;
            self.uid_base = block.base;
            self.uid_block = Some(block);
            for note in said {
                self.event(EventKind::UidBlock { note });
            }
        }

        let topo = Topology::read(Path::new("/sys"))
            .map_err(|e| HostError::Isolation(format!("reading CPU topology: {e}")))?;
        self.reserved = self
            .cfg
            .reserved_cpus
            .clone()
            .unwrap_or_else(|| placement::default_reserved(&topo));
        let n = self.cfg.instances.len();
        let plan = placement::plan(&topo, n, self.cfg.placement, &self.reserved)
            .map_err(|e| HostError::Isolation(format!("placing {n} instances: {e}")))?;
        for w in &plan.warnings {
            self.event(EventKind::Placement { warning: w.clone() });
        }
        self.record.placement = Some(plan.clone());
        self.placement = Some(plan.clone());
        if !self.cfg.batch.is_empty() || self.cfg.batch_cgroup.is_some() {
            let mut server_cpus: Vec<usize> = topo
                .online()
                .into_iter()
                .filter(|c| !self.reserved.contains(c))
                .collect();
            if server_cpus.is_empty() {
                server_cpus = topo.online();
            }
            let policy = self.batch_policy.take();
            self.batch = Some(batch::Batch::new(&self.cfg, server_cpus, policy)?);
        }

        let ids: Vec<u32> = self.cfg.instances.iter().map(|i| i.id).collect();
        if self.cfg.backend == Backend::Netns {
            let layout = CgroupLayout::detect(Path::new("/sys/fs/cgroup"))
                .map_err(|e| HostError::Isolation(format!("cgroups: {e}")))?;
            self.layout = Some(layout);
            let (ip, name, kind) = (netpath::Ip::default(), &self.cfg.name, self.cfg.net);
            let plan = AddrPlan::parse(&self.cfg.range)
                .and_then(|p| p.with_sources(kind, self.cfg.source_addrs))
                .map_err(|e| HostError::Isolation(e.to_string()))?;
            let net = HostNet::setup_journaled(ip, name, kind, plan, &ids, &mut self.journal())
                .map_err(|e| HostError::Isolation(format!("network ({}): {e}", self.cfg.net)))?;
            self.record.net = Some(net.record().clone());
            self.net = Some(net);
            self.save()?;
            let mut journal = self.journal();
            let net = self.net.as_mut().expect("set above");
            let filtered =
                net.install_filter(self.cfg.port, &self.cfg.allow_host_ports, &mut journal);
            self.record.net = Some(net.record().clone());
            filtered.map_err(|e| HostError::Isolation(format!("instance firewall: {e}")))?;
            self.save()?;
        }

        for (k, spec) in self.cfg.instances.clone().into_iter().enumerate() {
            let slot = &plan.instances[k];
            let addr = match &self.net {
                Some(net) => SocketAddr::new(IpAddr::V4(net.instance_addr(spec.id)), self.cfg.port),
                None => SocketAddr::new(
                    IpAddr::V4(Ipv4Addr::LOCALHOST),
                    self.cfg.port + (spec.id - 1) as u16,
                ),
            };
            let idir = dir.join("instances").join(spec.id.to_string());
            std::fs::create_dir_all(&idir).map_err(io(format!("creating {}", idir.display())))?;
            if self.cfg.backend == Backend::Netns {
                // `instances/` is root's, so the instance cannot swap its
                // directory for a link; the check holds anyway.
                let bytes = spec.disk_bytes.unwrap_or(disk::DEFAULT_DISK_BYTES);
                disk::tenant_dir(&idir, bytes, self.uid_base + spec.id)?;
            }
            let cgroup = match &self.layout {
                Some(layout) => {
                    let name = format!("tp{}/tp{}-{}", self.cfg.name, self.cfg.name, spec.id);
                    let limits = Limits {
                        cpus: Some(slot.cpus.clone()),
                        cpu_quota: spec.cpu_quota,
                        memory_bytes: spec.memory_bytes,
                        pids_max: self.cfg.pids_max,
                    };
                    let cg = Cgroup::create(layout, &name, &limits).map_err(|e| {
                        HostError::Isolation(format!("cgroup for instance {}: {e}", spec.id))
                    })?;
                    self.record.cgroups.extend(cg.paths());
                    self.save()?;
                    Some(cg)
                }
                None => None,
            };
            let spec_timing = spec.server.timing();
            let console = spec
                .server
                .console
                .as_ref()
                .map(|_| super::console::ConsoleState::new());
            let life = Lifecycle::new(
                Rules {
                    unresponsive_after: spec_timing.unresponsive_after,
                    kill_after: spec_timing.kill_after,
                    start_limit: start_limit(
                        self.cfg.health,
                        &spec.server.ready,
                        Duration::from_secs_f64(self.cfg.restart.start_timeout_s),
                    ),
                    checked: self.cfg.health != Health::None,
                    ready_by_answer: spec.server.ready == Ready::Health,
                },
                self.cfg.restart,
                Instant::now(),
            );
            self.instances.push(Instance {
                spec,
                addr,
                cpus: slot.cpus.clone(),
                node: slot.node,
                dir: idir,
                cgroup,
                child: None,
                life,
                pidfd: None,
                last_cause: None,
                last_heard: None,
                check: None,
                check_drops: 0,
                health_key: None,
                health_seq: 0,
                liveness: liveness::Liveness::new(spec_timing, self.query_clock()),
                log_watch: None,
                stats: None,
                probe: probe::Probe::with_interval(self.cfg.health, spec_timing.interval()),
                cpu_sample: None,
                cpu_percent: None,
                memory_bytes: None,
                oom_kills: 0,
                console,
            });
        }
        if self.cfg.health != Health::None {
            if let Some(net) = &self.net {
                for i in &self.instances {
                    net.check_route(match i.addr.ip() {
                        IpAddr::V4(a) => a,
                        IpAddr::V6(_) => unreachable!("instances are IPv4"),
                    })
                    .map_err(|e| {
                        HostError::Isolation(format!("route to instance {}: {e}", i.spec.id))
                    })?;
                }
            }
            for i in &mut self.instances {
                let s = health::check_socket(i.addr).map_err(io(format!(
                    "the health-check socket of instance {}",
                    i.spec.id
                )))?;
                driver::watch(&self.wake, &s);
                i.check = Some(s);
            }
        }
        for k in 0..self.instances.len() {
            self.start_instance(k)?;
        }
        self.batch_up()?;
        let control = control::bind(&dir)?;
        driver::watch(&self.wake, &control);
        self.control = Some(control);
        self.save()?;
        Ok(())
    }
}
