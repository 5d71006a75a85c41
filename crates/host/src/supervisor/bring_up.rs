//! Bringing a fleet up: the steps of its [`plan::plan`], in order (the
//! run dir's directories and record, the uid block, placement, the batch
//! (with its policy), cgroups and the network (netns), then per instance
//! its directory, disk and cgroup, the health-check sockets, the spawns,
//! the batch's start and the control socket), each done here. A failure
//! returns at once; [`Supervisor::start`] tears down what was made.

mod plan;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::health::start_limit;
use super::lifecycle::{Lifecycle, Rules};
use super::{
    batch, control, driver, health, io, liveness, private_dir, probe, run_dir, HostError, Instance,
    Supervisor, BLOCK_DIR,
};
use crate::cgroup::{Cgroup, CgroupLayout, Limits};
use crate::event::EventKind;
use crate::fleet::{Backend, Health};
use crate::launch::Ready;
use crate::netpath::{AddrPlan, NetView};
use crate::placement::{self, Placement, Topology};
use plan::{Shape, Step};
use tickpack_root::service::protocol::Walls;
use tickpack_root::service::Root;
use tickpack_root::tenant_dir::DEFAULT_DISK_BYTES;

/// What a step leaves for the steps after it.
#[derive(Default)]
struct Made {
    topo: Option<Topology>,
    placement: Option<Placement>,
    /// The directory of the instance being made.
    dir: Option<PathBuf>,
    /// ... and its cgroup.
    cgroup: Option<Cgroup>,
}

impl Supervisor {
    pub(super) fn bring_up(&mut self) -> Result<(), HostError> {
        let shape = Shape {
            netns: self.cfg.backend == Backend::Netns,
            batch: !self.cfg.batch.is_empty() || self.cfg.batch_cgroup.is_some(),
            checked: self.cfg.health != Health::None,
            instances: self.cfg.instances.len(),
        };
        let mut made = Made::default();
        plan::run(&plan::plan(&shape), |step| self.take(step, &mut made))
    }

    /// Does one step of the way up.
    fn take(&mut self, step: Step, made: &mut Made) -> Result<(), HostError> {
        let dir = self.cfg.run_dir.clone();
        match step {
            Step::RunDir => {
                // With walls, `instances/` is its root process's to make
                // (root's, 0700, beneath a run dir that may be ours).
                let netns = self.cfg.backend == Backend::Netns;
                let subs: &[&str] = if netns {
                    &["logs"]
                } else {
                    &["instances", "logs"]
                };
                for sub in subs {
                    let d = dir.join(sub);
                    std::fs::create_dir_all(&d).map_err(io(format!("creating {}", d.display())))?;
                    private_dir(&d)?;
                }
                // A new host starts new logs: what the last tenants of this
                // name printed stays readable after their `down`, until
                // this `up`.
                run_dir::clear_logs(&dir.join("logs"))?;
                self.save()?;
            }
            Step::UidBlock => {
                // The host's root process takes it (and, from now on, makes
                // its network and writes its instances' files).
                let (root, _) = Root::start(&self.exe, &self.cfg.name, &dir)
                    .map_err(|e| HostError::Isolation(e.to_string()))?;
                let root = self.root.insert(std::sync::Arc::new(root));
                let (base, said) = root.take_uid_block().map_err(|e| {
                    HostError::Isolation(format!("taking a uid block in {BLOCK_DIR}: {e}"))
                })?;
                self.uid_base = base;
                self.uid_block = true;
                for note in said {
                    self.event(EventKind::UidBlock { note });
                }
            }
            Step::Placement => {
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
                made.topo = Some(topo);
                made.placement = Some(plan);
            }
            Step::Batch => {
                let topo = made.topo.as_ref().expect("placed before");
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
            Step::CgroupLayout => {
                let layout = CgroupLayout::detect(Path::new("/sys/fs/cgroup"))
                    .map_err(|e| HostError::Isolation(format!("cgroups: {e}")))?;
                // The host's own cgroup, ours to make its instances' in.
                if let Some(root) = &self.root {
                    root.cgroups()
                        .map_err(|e| HostError::Isolation(format!("the host's cgroup: {e}")))?;
                }
                self.layout = Some(layout);
            }
            Step::Network => {
                let ids: Vec<u32> = self.cfg.instances.iter().map(|i| i.id).collect();
                let (name, kind) = (&self.cfg.name, self.cfg.net);
                let plan = AddrPlan::parse(&self.cfg.range)
                    .and_then(|p| p.with_sources(kind, self.cfg.source_addrs))
                    .map_err(|e| HostError::Isolation(e.to_string()))?;
                // The host's root process makes it (started with the uid
                // block, before it in the plan).
                let root = self.root.as_ref().ok_or_else(no_root)?;
                let record = root
                    .net_up(kind, &self.cfg.range, self.cfg.source_addrs, &ids)
                    .map_err(|e| HostError::Isolation(format!("network ({kind}): {e}")))?;
                self.record.net = Some(record.clone());
                self.net = Some(NetView::new(name, kind, plan, record));
                self.save()?;
            }
            Step::Firewall => {
                let root = self.root.as_ref().ok_or_else(no_root)?;
                let filtered = root.firewall(self.cfg.port, &self.cfg.allow_host_ports);
                let record = filtered
                    .map_err(|e| HostError::Isolation(format!("instance firewall: {e}")))?;
                self.record.net = Some(record.clone());
                if let Some(net) = &mut self.net {
                    net.set_record(record);
                }
                self.save()?;
            }
            Step::InstanceDir(k) => {
                let idir = dir
                    .join("instances")
                    .join(self.cfg.instances[k].id.to_string());
                // With walls its root process makes it (`TenantDisk`).
                if self.root.is_none() {
                    std::fs::create_dir_all(&idir)
                        .map_err(io(format!("creating {}", idir.display())))?;
                }
                made.dir = Some(idir);
                made.cgroup = None;
            }
            Step::TenantDisk(k) => {
                let spec = &self.cfg.instances[k];
                let bytes = spec.disk_bytes.unwrap_or(DEFAULT_DISK_BYTES);
                let root = self.root.as_ref().ok_or_else(no_root)?;
                root.tenant_dir(Walls::Instance { id: spec.id }, bytes)
                    .map_err(|e| {
                        HostError::Isolation(format!("the disk of instance {}: {e}", spec.id))
                    })?;
            }
            Step::InstanceCgroup(k) => {
                if let Some(layout) = &self.layout {
                    let spec = &self.cfg.instances[k];
                    let slot = &made.placement.as_ref().expect("placed before").instances[k];
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
                    made.cgroup = Some(cg);
                }
            }
            Step::Instance(k) => self.add_instance(k, made),
            Step::Routes => {
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
            }
            Step::HealthSockets => {
                self.start_decoder()?;
                for i in &mut self.instances {
                    let s = health::check_socket(i.addr).map_err(io(format!(
                        "the health-check socket of instance {}",
                        i.spec.id
                    )))?;
                    driver::watch(&self.wake, &s);
                    i.check = Some(s);
                }
            }
            Step::Spawn(k) => self.start_instance(k)?,
            Step::BatchStart => self.batch_up()?,
            Step::Control => {
                let control = control::bind(&dir)?;
                driver::watch(&self.wake, &control);
                self.control = Some(control);
                self.save()?;
            }
        }
        Ok(())
    }

    /// Records instance `k` (its directory and cgroup made): its address,
    /// CPUs and lifecycle.
    fn add_instance(&mut self, k: usize, made: &mut Made) {
        let spec = self.cfg.instances[k].clone();
        let slot = &made.placement.as_ref().expect("placed before").instances[k];
        let addr = match &self.net {
            Some(net) => SocketAddr::new(IpAddr::V4(net.instance_addr(spec.id)), self.cfg.port),
            None => SocketAddr::new(
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                self.cfg.port + (spec.id - 1) as u16,
            ),
        };
        let idir = made.dir.take().expect("its directory made before");
        let cgroup = made.cgroup.take();
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
}

/// The netns backend's steps after the uid block are its root process's.
fn no_root() -> HostError {
    HostError::Isolation("the host's root process was not started (no uid block step)".into())
}
