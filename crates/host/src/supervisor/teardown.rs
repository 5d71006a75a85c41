//! Taking a fleet down: the steps of its [`plan::plan`], in order (the
//! batch first, then every instance (its stop signal, then SIGKILL after
//! the longest grace time) and its cgroup, the tenants' directories, the
//! host's cgroup tree, the network, the uid block and the control socket;
//! the record, the emptied directories and a run dir tickpack made go
//! only when everything did: the logs stay), each done here. Returns what
//! could not be removed.

mod plan;

use rustix::process::Signal;
use std::time::{Duration, Instant};

use super::Supervisor;
use crate::cgroup;
use plan::{Made, MadeInstance, Net, Step};

impl Supervisor {
    pub(super) fn teardown(&mut self) -> Vec<String> {
        let made = Made {
            batch: self.batch.is_some(),
            instances: self
                .instances
                .iter()
                .map(|i| MadeInstance {
                    id: i.spec.id,
                    running: i.child.as_ref().map(|_| i.spec.server.stop.grace()),
                    cgroup: i.cgroup.is_some(),
                })
                .collect(),
            cgroups: self.layout.is_some(),
            net: match (&self.net, &self.record.net) {
                (Some(_), _) => Net::Live,
                (None, Some(_)) => Net::Recorded,
                (None, None) if self.root.is_some() => Net::Recorded,
                (None, None) => Net::None,
            },
            uid_block: self.uid_block,
        };
        // The end of the wait for the instances (none without a process).
        let mut deadline = Instant::now();
        let problems = plan::run(&plan::plan(&made), |step| self.undo(step, &mut deadline));
        // The root process ends (its record of the host is empty unless
        // something could not be removed).
        self.root = None;
        problems
    }

    /// Takes one step of the way down; returns its problems.
    fn undo(&mut self, step: Step, deadline: &mut Instant) -> Vec<String> {
        match step {
            Step::Batch => return self.batch_down(),
            Step::Signal { grace } => {
                // Each server's own stop signal (its game's definition;
                // SIGTERM by default), then SIGKILL after the longest
                // grace time.
                for i in &mut self.instances {
                    if let Some(c) = &mut i.child {
                        let stop = i.spec.server.stop;
                        if let Some(sig) = Signal::from_named_raw(stop.signal.number()) {
                            let _ = c.signal(sig);
                        }
                    }
                }
                *deadline = Instant::now() + grace;
            }
            Step::Stop(k) => {
                let i = &mut self.instances[k];
                if let Some(mut c) = i.child.take() {
                    while Instant::now() < *deadline {
                        if let Ok(Some(_)) = c.try_wait() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    if let Ok(None) = c.try_wait() {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                }
                i.life
                    .handle(Instant::now(), super::lifecycle::Input::Stopped);
            }
            Step::InstanceCgroup { k, .. } => {
                if let Some(cg) = self.instances[k].cgroup.take() {
                    if let Err(e) = cg.remove() {
                        return vec![step.failed(e)];
                    }
                }
            }
            // Nothing of a tenant's survives it (its logs, in `logs/`, do).
            // With walls they are its root process's (tmpfs mounts, files
            // of the tenants' users).
            Step::TenantDirs => {
                return match &self.root {
                    Some(root) => match root.remove_tenant_dirs() {
                        Ok(_) => vec![],
                        Err(e) => vec![step.failed(e)],
                    },
                    None => tickpack_root::tenant_dir::empty_path(&self.cfg.run_dir).1,
                }
            }
            Step::HostCgroups => {
                let gone = match (&self.root, &self.layout) {
                    (Some(root), Some(_)) => {
                        root.remove_cgroups().map(drop).map_err(|e| e.to_string())
                    }
                    (None, Some(layout)) => {
                        cgroup::remove_stale(layout, &format!("tp{}", self.cfg.name))
                            .map(drop)
                            .map_err(|e| e.to_string())
                    }
                    (_, None) => Ok(()),
                };
                if let Err(e) = gone {
                    return vec![step.failed(e)];
                }
            }
            Step::Network(_) => {
                let gone = match (self.root.as_ref(), self.net.take()) {
                    (Some(root), Some(_)) => root.net_down().map_err(|e| e.to_string()),
                    // Its making failed or never came (the root process
                    // rolled back what it made): whatever is named for the
                    // host goes.
                    (Some(root), None) => root.sweep().map(|_| ()).map_err(|e| e.to_string()),
                    (None, _) => Ok(()),
                };
                if let Err(e) = gone {
                    return vec![step.failed(e)];
                }
            }
            Step::UidBlock => {
                if std::mem::take(&mut self.uid_block) {
                    if let Some(root) = self.root.as_ref() {
                        if let Err(e) = root.release_uid_block() {
                            return vec![step.failed(e)];
                        }
                    }
                }
            }
            Step::ControlSocket => {
                self.control = None;
                let _ = std::fs::remove_file(self.cfg.run_dir.join("control.sock"));
            }
            // The records, the emptied tenant directories, and the run dir
            // itself when tickpack made it and no log is left to read
            // (the logs stay: `host up` and `host down` say where).
            Step::RunDir => super::remove_run_dir(&self.cfg.run_dir),
        }
        vec![]
    }
}
