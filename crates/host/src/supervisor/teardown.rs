//! Taking a fleet down: the batch first, then every instance (its stop
//! signal, then SIGKILL after the longest grace time) and its cgroup, the
//! tenants' directories, the host's cgroup tree, the network, the uid
//! block and the control socket; the record, the emptied directories
//! and a run dir tickpack made go only when everything did (the logs
//! stay). Returns what could not be removed.

use rustix::process::{kill_process, Pid, Signal};
use std::time::{Duration, Instant};

use super::{empty_tenant_dirs, Supervisor};
use crate::cgroup;

impl Supervisor {
    pub(super) fn teardown(&mut self) -> Vec<String> {
        let mut problems = self.batch_down();
        // Each server's own stop signal (its game's definition; SIGTERM by
        // default), then SIGKILL after the longest grace time.
        let mut grace = Duration::ZERO;
        for i in &mut self.instances {
            if let Some(c) = &i.child {
                let stop = i.spec.server.stop;
                grace = grace.max(stop.grace());
                // Signalling a child we spawned and have not reaped.
                if let (Some(pid), Some(sig)) = (
                    Pid::from_raw(c.id() as i32),
                    Signal::from_named_raw(stop.signal.number()),
                ) {
                    let _ = kill_process(pid, sig);
                }
            }
        }
        let deadline = Instant::now() + grace;
        for i in &mut self.instances {
            if let Some(mut c) = i.child.take() {
                while Instant::now() < deadline {
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
            if let Some(cg) = i.cgroup.take() {
                if let Err(e) = cg.remove() {
                    problems.push(format!("cgroup of instance {}: {e}", i.spec.id));
                }
            }
        }
        // Nothing of a tenant's survives it (its logs, in `logs/`, do).
        let (_, gone_wrong) = empty_tenant_dirs(&self.cfg.run_dir);
        problems.extend(gone_wrong);
        if let Some(layout) = &self.layout {
            if let Err(e) = cgroup::remove_stale(layout, &format!("tp{}", self.cfg.name)) {
                problems.push(format!("cgroups: {e}"));
            }
        }
        let net = match self.net.take() {
            Some(net) => net.teardown(),
            None => self.record.net.as_ref().map_or(Ok(()), |r| r.cleanup()),
        };
        if let Err(e) = net {
            problems.push(format!("network: {e}"));
        }
        if let Some(b) = self.uid_block.take() {
            b.release();
        }
        self.control = None;
        let _ = std::fs::remove_file(self.cfg.run_dir.join("control.sock"));
        if problems.is_empty() {
            // The records, the emptied tenant directories, and the run dir
            // itself when tickpack made it and no log is left to read
            // (the logs stay: `host up` and `host down` say where).
            super::remove_run_dir(&self.cfg.run_dir);
        }
        problems
    }
}
