//! Load commands: a program of the user's (a game definition's `[load]`,
//! `bench --load`) started beside one instance to play on it, for games
//! tickpack has no players of its own for.
//!
//! A load command is as hostile as any tenant. As root (netns backend) it
//! runs through the instance's own spawn path ([`crate::spawn`]) with the
//! walls of batch work: the host's batch uid (no instance's), no
//! capabilities, seccomp, its own mount, PID, UTS and IPC namespaces, `/`
//! read-only, a directory of its own (`RUN_DIR/batch/load-ID`, a tmpfs,
//! removed at `down` with the other tenant directories), output capped in
//! `RUN_DIR/logs/load-ID.log`. Its network is **the instance's own
//! namespace**: it reaches its server at the server's own address and
//! whatever that server could reach (on the veth path, nothing of the
//! host: the host's firewall drops it), never the host's network. It is
//! pinned to the load generator's CPUs, and its CPU time (its whole
//! process tree, from `wait4`) is counted as the load generator's.
//!
//! What it writes back is read by root only from its own directory, with
//! `O_NOFOLLOW`, bounded ([`LoadProcess::read_file`]).
//!
//! Without root (the process backend) it is a plain process of the
//! caller's, pinned, in the same directory layout.
//!
//! At its step's end it has a grace time to end by itself, then is
//! stopped ([`LoadProcess::finish`]; when, decided in `load/stop.rs`).

mod stop;

use rustix::process::Signal;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use tickpack_root::service::protocol::Walls;
use tickpack_root::service::Proc;

use super::{io, HostError, Supervisor};
use crate::spawn::{Isolation, Spec};

/// A load command's own directory and log, under the run dir.
fn load_dir(run_dir: &std::path::Path, id: u32) -> PathBuf {
    run_dir.join("batch").join(format!("load-{id}"))
}

/// Where load command `id`'s output goes.
pub fn load_log_path(run_dir: &std::path::Path, id: u32) -> PathBuf {
    run_dir.join("logs").join(format!("load-{id}.log"))
}

/// The size of a load command's directory (its samples and files).
const LOAD_DISK_BYTES: u64 = 64 << 20;

/// How a load command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadExit {
    /// Its wait status; `None` when it could not be reaped.
    pub status: Option<ExitStatus>,
    /// Whether we stopped it (it ran past its step).
    pub stopped: bool,
    /// CPU seconds of its whole process tree.
    pub cpu_s: f64,
}

impl LoadExit {
    /// It ended by itself with code 0: one that ran past its step and
    /// was stopped did not, whatever it exited with then (a program that
    /// exits 0 on SIGTERM would otherwise count as ended well).
    pub fn ok(&self) -> bool {
        !self.stopped && self.status.is_some_and(|s| s.success())
    }

    /// "exited with code 3", "was killed by signal 11", ... (the words
    /// the host uses for its instances).
    pub fn describe(&self) -> String {
        match self.status {
            _ if self.stopped => "ran past its step and was stopped (a load command must end by itself, with exit 0, by the step's end)".into(),
            Some(s) => crate::event::ExitCause::of(s).to_string(),
            None => "ended".into(),
        }
    }
}

/// A running load command.
#[derive(Debug)]
pub struct LoadProcess {
    pub id: u32,
    child: Proc,
    dir: PathBuf,
    log: PathBuf,
    started: Instant,
    exit: Option<LoadExit>,
}

impl Supervisor {
    /// Starts `argv` as the load of instance `id` (1-based), pinned to
    /// `cpus`; see the module header for its walls. The placeholders are
    /// the caller's to expand; `{dir}`-like paths should use
    /// [`Supervisor::load_dir`].
    pub fn start_load(
        &mut self,
        id: u32,
        argv: Vec<String>,
        cpus: &[usize],
    ) -> Result<LoadProcess, HostError> {
        if !self.instances.iter().any(|i| i.spec.id == id) {
            return Err(HostError::Isolation(format!("no instance {id} to load")));
        }
        let root = self.root.is_some();
        let dir = load_dir(&self.cfg.run_dir, id);
        let walls = Walls::Load { id };
        match &self.root {
            // A fresh tmpfs of its own in `batch/` (root's, 0700), made by
            // the root process.
            Some(r) => r.tenant_dir(walls, LOAD_DISK_BYTES).map_err(|e| {
                HostError::Isolation(format!("the directory of load command {id}: {e}"))
            })?,
            None => {
                std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?
            }
        }
        let log = load_log_path(&self.cfg.run_dir, id);
        let netns = self.net.as_ref().map(|n| n.netns_path(id));
        let spec = Spec {
            argv,
            env: vec![("HOME".into(), dir.display().to_string())],
            workdir: dir.clone(),
            log: log.clone(),
            log_bytes: self.cfg.log_bytes,
            oom_score_adj: (self.instance_oom_score_adj + super::batch::BATCH_OOM_SCORE_ABOVE)
                .min(1000),
            cpus: Some(cpus.to_vec()),
            cgroup_procs: vec![],
            isolation: if root {
                Isolation {
                    netns,
                    own_netns: false,
                    hostname: Some(format!("tp{}-load-{id}", self.cfg.name)),
                    user: Some((self.uid_base, self.uid_base)),
                    hide: Some(self.cfg.run_dir.clone()),
                    workdir_fd: None,
                }
            } else {
                Isolation::default()
            },
            init_exe: self.exe.clone(),
            sched_idle: false,
            own_session: true,
        };
        let child = self.start_command(walls, spec, None).map_err(|e| {
            HostError::Isolation(format!("starting the load command of instance {id}: {e}"))
        })?;
        let recorded = crate::leftover::RecordedProcess::of(child.id());
        self.record.processes.retain(|p| p.is_same_process());
        self.record.processes.extend(recorded);
        self.save()?;
        Ok(LoadProcess {
            id,
            child,
            dir,
            log,
            started: Instant::now(),
            exit: None,
        })
    }

    /// The directory instance `id`'s load command runs in (the same path
    /// inside its sandbox and out).
    pub fn load_dir(&self, id: u32) -> PathBuf {
        load_dir(&self.cfg.run_dir, id)
    }
}

impl LoadProcess {
    /// How it ended, once it has (without waiting).
    pub fn try_wait(&mut self) -> Option<&LoadExit> {
        if self.exit.is_none() {
            self.exit = self.reap(false);
        }
        self.exit.as_ref()
    }

    /// Waits at most `grace` for it to end by itself, then stops it (its
    /// process group: SIGTERM, then SIGKILL a second later; the rule is
    /// [`stop::Stopping`]'s).
    pub fn finish(&mut self, grace: Duration) -> LoadExit {
        let mut stopping = stop::Stopping::new(Instant::now(), grace);
        loop {
            let ended = self.try_wait().is_some();
            match stopping.next(Instant::now(), ended) {
                stop::Next::Wait => std::thread::sleep(Duration::from_millis(20)),
                stop::Next::Term => {
                    // It leads its process group (own session).
                    let _ = self.child.signal_group(Signal::TERM);
                }
                stop::Next::Kill => {
                    let _ = self.child.signal_group(Signal::KILL);
                    self.exit = self.reap(true);
                    if let Some(e) = &mut self.exit {
                        e.stopped = true;
                    }
                    break;
                }
                stop::Next::Ended { stopped } => {
                    if let (true, Some(e)) = (stopped, &mut self.exit) {
                        e.stopped = true;
                    }
                    break;
                }
            }
        }
        self.exit.clone().unwrap_or(LoadExit {
            status: None,
            stopped: true,
            cpu_s: 0.0,
        })
    }

    /// How it ended and the CPU time of its tree, once it has (waiting
    /// for it when `block`).
    fn reap(&mut self, block: bool) -> Option<LoadExit> {
        let ended = loop {
            match self.child.try_ended() {
                Ok(None) if block => std::thread::sleep(Duration::from_millis(10)),
                Ok(e) => break e,
                Err(_) => break None,
            }
        };
        ended.map(|e| LoadExit {
            status: Some(e.status),
            stopped: false,
            cpu_s: e.cpu.as_secs_f64(),
        })
    }

    /// How long ago it started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// A file it wrote in its own directory: read without following a
    /// link, a regular file of at most `max` bytes; `None` when it wrote
    /// none. An error says why it was refused.
    pub fn read_file(&self, name: &str, max: u64) -> Result<Option<String>, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.dir.join(name);
        let shown = path.display();
        let file = match self.child.root() {
            // In its walls (a tmpfs of its user's, in root's `batch/`):
            // its root process opens it, never through a link.
            Some(root) => match root.open_file(Walls::Load { id: self.id }, name) {
                Ok(Some(fd)) => std::fs::File::from(fd),
                Ok(None) => return Ok(None),
                Err(e) => return Err(format!("{shown}: {e}")),
            },
            // The last component may be its link: not followed.
            None => match std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(&path)
            {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("{shown}: {e} (a link is not followed)")),
            },
        };
        let meta = file.metadata().map_err(|e| format!("{shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{shown}: not a regular file"));
        }
        let bytes = tickpack_sys::user_file::read_bounded(file, max)
            .map_err(|_| format!("{shown}: unreadable or larger than {max} bytes"))?;
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{shown}: not UTF-8 text"))
    }

    /// The last lines of its output (escaped, bounded), for a report of
    /// why it failed.
    pub fn last_output(&self) -> String {
        let text = tickpack_sys::user_file::read_text(&self.log, 1 << 20).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
        tickpack_sys::text::escape(&tail, 300)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// Issue 41: a load command that ran past its step and exited 0 on
    /// the SIGTERM that stopped it counted as ended well, though a load
    /// command must end by itself (docs/games.md).
    #[test]
    fn a_load_command_that_ran_on_and_exited_0_on_sigterm_counted_as_ended_well() {
        let stopped_with_0 = LoadExit {
            status: Some(ExitStatus::from_raw(0)),
            stopped: true,
            cpu_s: 0.0,
        };
        assert!(!stopped_with_0.ok());
        assert!(
            stopped_with_0.describe().contains("ran past its step"),
            "{}",
            stopped_with_0.describe()
        );
        let ended = LoadExit {
            stopped: false,
            ..stopped_with_0.clone()
        };
        assert!(ended.ok(), "ended by itself with 0");
        let crashed = LoadExit {
            status: Some(ExitStatus::from_raw(11)),
            ..ended
        };
        assert!(!crashed.ok());
    }
}
