//! The commands a root process started for its host: instances, batch
//! jobs, load commands. It is their parent, so it alone reaps them; it
//! signals only a PID it started and has not reaped (a reaped PID may be
//! another process's by now).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use super::session::Walled;
use crate::spawn::{self, Isolation, Spec};

pub use super::session::WalledCommand;

/// The children not reaped yet, by PID: whether each leads its own
/// process group.
#[derive(Default)]
pub(super) struct Children {
    running: BTreeMap<u32, bool>,
}

impl Children {
    /// Starts `cmd` in `walled` (paths beneath the run dir at `run_dir`,
    /// which `run_fd` holds open; `netns`: the namespace it enters).
    /// Returns its PID and the read end of its output pipe.
    pub fn spawn(
        &mut self,
        (run_dir, run_fd): (&Path, &OwnedFd),
        walled: &Walled,
        netns: Option<PathBuf>,
        cmd: &WalledCommand<'_>,
    ) -> Result<(u32, std::io::PipeReader), String> {
        let workdir = run_dir.join(&walled.workdir);
        // The working directory as it is now, beneath the run dir held
        // open: the command's sandbox mounts this very directory, whatever
        // the run dir's owner renames or links in its place since.
        let workdir_fd = beneath_without_links(run_fd, &walled.workdir)?;
        let mut cgroup_procs: Vec<File> = vec![];
        for cg in cmd.cgroups {
            let procs = cg.join("cgroup.procs");
            let f = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&procs)
                .map_err(|e| format!("opening {}: {e}", procs.display()))?;
            cgroup_procs.push(f);
        }
        let exe = std::env::current_exe().map_err(|e| format!("its own binary: {e}"))?;
        let spec = Spec {
            argv: cmd.argv.to_vec(),
            env: cmd.env.to_vec(),
            workdir,
            log: PathBuf::from("(the output pipe)"),
            oom_score_adj: cmd.oom_score_adj,
            log_bytes: 0,
            cpus: cmd.cpus.map(<[usize]>::to_vec),
            cgroup_procs,
            isolation: Isolation {
                own_netns: netns.is_none(),
                netns,
                hostname: Some(walled.hostname.clone()),
                user: Some((walled.uid, walled.uid)),
                hide: Some(run_dir.to_path_buf()),
                workdir_fd: Some(std::sync::Arc::new(workdir_fd)),
            },
            init_exe: exe,
            sched_idle: cmd.sched_idle,
            own_session: walled.own_session,
        };
        let (child, out) = spawn::start(&spec).map_err(|e| e.to_string())?;
        let pid = child.id();
        // Reaped by PID (`reap`), with its CPU time: the handle goes.
        drop(child);
        self.running.insert(pid, walled.own_session);
        Ok((pid, out))
    }

    /// Sends `signal` to `pid` (or its group, which a batch job or load
    /// command leads), one of its children not yet reaped.
    pub fn signal(&mut self, pid: u32, signal: i32, group: bool) -> Result<(), Why> {
        let leads = self.started(pid)?;
        if group && !leads {
            return Err(Why::Refused(format!(
                "process {pid} leads no process group of its own"
            )));
        }
        let sig = match signal {
            1..=31 => Signal::from_named_raw(signal),
            _ => None,
        }
        .ok_or_else(|| Why::Refused(format!("{signal} is not a signal it sends")))?;
        let p = Pid::from_raw(pid as i32).ok_or_else(|| Why::Refused(format!("process {pid}")))?;
        let sent = if group {
            kill_process_group(p, sig)
        } else {
            kill_process(p, sig)
        };
        sent.map_err(|e| Why::Failed(format!("signalling {pid}: {e}")))
    }

    /// Reaps `pid` if it has exited: its wait status and CPU time (µs).
    /// The rest of the process group it led, if it did, is killed first,
    /// while the leader is not reaped yet (so the group's number cannot
    /// be another's by then).
    pub fn wait(&mut self, pid: u32) -> Result<Option<(i32, u64)>, Why> {
        use rustix::process::{waitid, WaitId, WaitIdOptions};
        let leads = self.started(pid)?;
        let p = Pid::from_raw(pid as i32).ok_or_else(|| Why::Refused(format!("process {pid}")))?;
        let failed = |e: std::io::Error| Why::Failed(format!("waiting for {pid}: {e}"));
        if leads {
            let peek = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
            match waitid(WaitId::Pid(p), peek) {
                Ok(Some(_)) => {
                    let _ = kill_process_group(p, Signal::KILL);
                }
                Ok(None) => return Ok(None),
                Err(e) => return Err(failed(e.into())),
            }
        }
        match super::proc::reap(pid, false) {
            Ok(Some(r)) => {
                self.running.remove(&pid);
                Ok(Some(r))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(failed(e)),
        }
    }

    /// Whether `pid`, one it started and has not reaped, leads its group.
    fn started(&self, pid: u32) -> Result<bool, Why> {
        self.running.get(&pid).copied().ok_or_else(|| {
            Why::Refused(format!(
                "process {pid} is not one it started and has not reaped"
            ))
        })
    }
}

/// Why a signal or a wait was not done: refused (nothing was tried) or
/// failed (the kernel said no).
#[derive(Debug)]
pub(super) enum Why {
    Refused(String),
    Failed(String),
}

impl Drop for Children {
    /// The session is over (its supervisor is gone): every batch job and
    /// load command it started goes, with its process group, and is
    /// reaped. Instances stay (their players keep playing until the next
    /// `host up` or `host down` of the host ends them, as they did when
    /// the supervisor was their parent).
    fn drop(&mut self) {
        for (&pid, &leads) in &self.running {
            if !leads {
                continue;
            }
            if let Some(p) = Pid::from_raw(pid as i32) {
                let _ = kill_process_group(p, Signal::KILL);
                let _ = super::proc::reap(pid, true);
            }
        }
    }
}

/// The directory `rel` beneath `dir`, reached without a link (`openat2`
/// with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), held open.
fn beneath_without_links(dir: &OwnedFd, rel: &Path) -> Result<OwnedFd, String> {
    use rustix::fs::OFlags;
    crate::files::open_beneath(dir, rel, OFlags::PATH | OFlags::DIRECTORY).map_err(|e| {
        format!(
            "{} is not a directory beneath the run dir reached without a link: {e}",
            rel.display()
        )
    })
}
