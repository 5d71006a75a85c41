//! Starting a command (an instance, a batch job, a load command): in its
//! walls by the host's root process when the host has one (the netns
//! backend), else by the supervisor itself. Either way the supervisor
//! keeps its log, from the read end of its output pipe.

use std::fs::File;

use tickpack_root::service::protocol::Walls;
use tickpack_root::service::{Proc, WalledCommand};

use super::Supervisor;
use crate::cgroup::Cgroup;
use crate::spawn::{self, log, SpawnError, Spec};

impl Supervisor {
    /// Starts `spec` in `walls`, a member of `cgroup`. The root process
    /// derives the walls' directory, user, namespaces and hostname itself
    /// (the same `spec` names); `spec.log` is the supervisor's.
    pub(super) fn start_command(
        &self,
        walls: Walls,
        mut spec: Spec,
        cgroup: Option<&Cgroup>,
    ) -> Result<Proc, SpawnError> {
        let Some(root) = self.root.as_ref().filter(|_| spec.isolation.user.is_some()) else {
            if let Some(cg) = cgroup {
                spec.cgroup_procs = cg
                    .open_procs()
                    .map_err(|e| SpawnError::Cgroup(e.to_string()))?;
            }
            return spawn::spawn(&spec).map(Proc::local);
        };
        let open = |err| SpawnError::Open {
            path: spec.log.clone(),
            err,
        };
        let capped = log::CappedLog::open(&spec.log, spec.log_bytes).map_err(open)?;
        let cgroups = cgroup.map(Cgroup::paths).unwrap_or_default();
        let cmd = WalledCommand {
            argv: &spec.argv,
            env: &spec.env,
            cpus: spec.cpus.as_deref(),
            cgroups: &cgroups,
            oom_score_adj: spec.oom_score_adj,
            sched_idle: spec.sched_idle,
        };
        let (pid, out) = root
            .spawn(walls, &cmd)
            .map_err(|e| SpawnError::Root(e.to_string()))?;
        let mut proc = Proc::Walled {
            root: root.clone(),
            pid,
            ended: None,
        };
        if let Err(err) = log::copy_in_background(File::from(out), capped) {
            let _ = proc.kill();
            return Err(open(err));
        }
        Ok(proc)
    }
}
