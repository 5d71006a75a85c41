//! The commands a root process started for its host: instances, batch
//! jobs, load commands. It is their parent, so it alone reaps them; it
//! signals only a PID it started and has not reaped (a reaped PID may be
//! another process's by now).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use super::session::Walled;
use crate::spawn::{self, Isolation, Spec};

/// What a spawn request carries beyond its walls.
#[derive(Debug, Clone)]
pub struct WalledCommand<'a> {
    pub argv: &'a [String],
    pub env: &'a [(String, String)],
    pub cpus: Option<&'a [usize]>,
    pub cgroups: &'a [PathBuf],
    pub oom_score_adj: i32,
    pub sched_idle: bool,
}

/// The children not reaped yet, by PID: whether each leads its own
/// process group.
#[derive(Default)]
pub(super) struct Children {
    running: BTreeMap<u32, bool>,
}

impl Children {
    /// Starts `cmd` in `walled` (paths beneath `run_dir`; `netns`: the
    /// namespace it enters). Returns its PID and the read end of its
    /// output pipe.
    pub fn spawn(
        &mut self,
        run_dir: &Path,
        walled: &Walled,
        netns: Option<PathBuf>,
        cmd: &WalledCommand<'_>,
    ) -> Result<(u32, std::io::PipeReader), String> {
        let workdir = run_dir.join(&walled.workdir);
        beneath_without_links(run_dir, &walled.workdir)?;
        let mut cgroup_procs: Vec<File> = vec![];
        for cg in cmd.cgroups {
            let procs = cg.join("cgroup.procs");
            let f = OpenOptions::new()
                .write(true)
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
    pub fn signal(&mut self, pid: u32, signal: i32, group: bool) -> Result<(), String> {
        let Some(&leads) = self.running.get(&pid) else {
            return Err(format!(
                "process {pid} is not one it started and has not reaped"
            ));
        };
        if group && !leads {
            return Err(format!("process {pid} leads no process group of its own"));
        }
        let sig = match signal {
            1..=31 => Signal::from_named_raw(signal),
            _ => None,
        }
        .ok_or_else(|| format!("{signal} is not a signal it sends"))?;
        let p = Pid::from_raw(pid as i32).ok_or_else(|| format!("process {pid}"))?;
        let sent = if group {
            kill_process_group(p, sig)
        } else {
            kill_process(p, sig)
        };
        sent.map_err(|e| format!("signalling {pid}: {e}"))
    }

    /// Reaps `pid` if it has exited: its wait status and CPU time (µs).
    /// The rest of the process group it led, if it did, is killed.
    pub fn wait(&mut self, pid: u32) -> Result<Option<(i32, u64)>, String> {
        if !self.running.contains_key(&pid) {
            return Err(format!(
                "process {pid} is not one it started and has not reaped"
            ));
        }
        match super::proc::reap(pid, false) {
            Ok(Some(r)) => {
                if self.running.remove(&pid) == Some(true) {
                    // What it started in its session goes with it (a
                    // group outlives its leader's PID: not reused yet).
                    if let Some(p) = Pid::from_raw(pid as i32) {
                        let _ = kill_process_group(p, Signal::KILL);
                    }
                }
                Ok(Some(r))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(format!("waiting for {pid}: {e}")),
        }
    }
}

/// Whether `rel` is a directory beneath `dir` reached without a link
/// (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`).
fn beneath_without_links(dir: &Path, rel: &Path) -> Result<(), String> {
    use rustix::fs::OFlags;
    crate::files::open_beneath(dir, rel, OFlags::PATH | OFlags::DIRECTORY)
        .map(drop)
        .map_err(|e| {
            format!(
                "{} is not a directory beneath the run dir reached without a link: {e}",
                rel.display()
            )
        })
}
