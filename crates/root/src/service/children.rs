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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// Review of issue 40: the kernel's refusal to reap (not a child of
    /// the root process) was answered `refused`, which says nothing was
    /// tried; it is `failed`. (This process is certainly no child of its
    /// own: nothing is signalled or reaped that is not ours.)
    #[test]
    fn a_kernel_failure_to_reap_was_answered_refused() {
        let own = std::process::id();
        let mut c = Children::default();
        c.running.insert(own, false);
        assert!(matches!(c.wait(own), Err(Why::Failed(_))));
        assert!(matches!(c.signal(1, 15, false), Err(Why::Refused(_))));
        c.running.clear();
    }

    /// Reaping a batch job's leader ends the rest of the group it led
    /// (what it started in the background), killed while the leader is
    /// not yet reaped.
    #[test]
    fn the_rest_of_a_batch_jobs_group_goes_when_its_leader_is_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("bg");
        let script = format!("sleep 30 & echo $! > {}; exit 0", marker.display());
        // Reaped by the code under test (`wait4` in `Children::wait`).
        #[allow(clippy::zombie_processes)]
        let leader = std::process::Command::new("/bin/sh")
            .args(["-c", &script])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = leader.id();
        let mut c = Children::default();
        c.running.insert(pid, true);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let reaped = loop {
            match c.wait(pid) {
                Ok(Some(r)) => break Some(r),
                Ok(None) if std::time::Instant::now() < until => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => break None,
            }
        };
        assert!(reaped.is_some(), "the leader never ended");
        let bg: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let bg = Pid::from_raw(bg).unwrap();
        // Killed (a zombie until its parent, init by now, reaps it).
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let dead = loop {
            let state = std::fs::read_to_string(format!("/proc/{}/stat", bg.as_raw_nonzero()))
                .map(|s| s.rsplit(')').next().unwrap_or("").trim().starts_with('Z'))
                .unwrap_or(true);
            if state || std::time::Instant::now() > until {
                break state;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        if !dead {
            let _ = kill_process(bg, Signal::KILL);
        }
        assert!(dead, "the group's background sleep outlived its leader");
    }
}
