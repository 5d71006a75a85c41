//! Starting one instance as if it owned the machine.
//!
//! The supervisor calls [`spawn`] with a [`Spec`]. Everything that can fail
//! in the parent (paths, files, C strings) is prepared before `fork`; the
//! child then, before `exec`, in this order:
//!
//! 1. joins the instance's cgroups (writes `0` to the `cgroup.procs` files
//!    opened by the parent), so not one instruction runs outside its limits;
//! 2. pins itself to the instance's CPUs (the process backend; cgroups do it
//!    for netns);
//! 3. enters the instance's network namespace (`setns` on /run/netns/NAME),
//!    or, for batch work, a new empty one (`unshare`: no network);
//! 4. unshares mount, UTS, PID and IPC namespaces (SysV shared memory,
//!    queues and semaphores are the instance's own, and go with it), sets the hostname, makes all
//!    mounts private and every mount read-only, nosuid and nodev
//!    (`mount_setattr` with AT_RECURSIVE; device nodes stay usable under
//!    `/dev`), mounts private size-limited tmpfs on `/tmp` and `/dev/shm`,
//!    and hides the run dir behind an empty tmpfs in which only the
//!    instance's working directory is mounted again, writable, at its real
//!    path (as root the supervisor made it a size-limited tmpfs of its own,
//!    `supervisor/disk.rs`), so `{dir}` means the same inside and outside;
//! 5. `exec`s the tickpack binary, with an empty environment, as a small
//!    init (`__instance-init`) that
//!    forks the real command as PID 1 of the new PID namespace, mounts
//!    `/proc` for it, empties its capability bounding set, sets
//!    no_new_privs, drops to the instance's unprivileged uid/gid, arms
//!    PR_SET_PDEATHSIG (after the uid change, which clears it), installs
//!    the seccomp filter of [`crate::confine`] and forwards SIGTERM/SIGINT
//!    to it. The init exits with the command's status (128+signal when
//!    killed), so the supervisor watches one PID; it kills whatever is left
//!    in the instance's cgroup before a restart. The server's environment
//!    ([`env`]) reaches the init in a memory file and is applied only by
//!    the command's own `execve`, inside every wall.
//!
//! Without isolation (the `process` backend) only steps 1-2 apply and the
//! command is `exec`ed directly.
//!
//! Whatever the command or its init is started as, it inherits stdin,
//! stdout, stderr and (the init) the environment's file alone: every
//! other descriptor, the supervisor's own or one its parent left open, is
//! marked close-on-exec by range right before the `exec`
//! ([`tickpack_sys::fds`]), and the init closes all but the first three
//! before it execs the command.
//!
//! The instance's stdout and stderr are a pipe; a supervisor thread copies
//! it into the log, capped and rotated ([`log`]), opened by root with
//! O_NOFOLLOW in a directory the instance cannot write (the supervisor
//! keeps logs in `RUN_DIR/logs`, mode 0700).

use rustix::fs::{Mode, OFlags};
use rustix::process::Signal;
use rustix::thread::CpuSet;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub mod env;
mod init;
pub mod log;
mod mounts;

use init::drop_privileges;
pub use init::instance_init;
use mounts::MountPlan;

pub use mounts::TMPFS_OPTIONS;

/// How an instance is isolated.
#[derive(Debug, Clone, Default)]
pub struct Isolation {
    /// Network namespace to enter (`/run/netns/NAME`).
    pub netns: Option<PathBuf>,
    /// A new, empty network namespace (loopback only, down) instead of
    /// entering `netns`: no network at all (batch work).
    pub own_netns: bool,
    /// New mount, UTS, PID and IPC namespaces with this hostname, `/` read-only,
    /// private `/tmp`, the working directory writable.
    pub hostname: Option<String>,
    /// Unprivileged uid and gid the command runs as.
    pub user: Option<(u32, u32)>,
    /// The run dir, hidden inside the instance behind an empty tmpfs in
    /// which only the working directory (below it) is mounted again.
    pub hide: Option<PathBuf>,
    /// The working directory held open (`O_PATH`): what is mounted again
    /// is this very directory, not whatever its path names by then (the
    /// root process opens it beneath the run dir it holds open).
    pub workdir_fd: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

/// One instance to start.
#[derive(Debug)]
pub struct Spec {
    /// The command and its arguments.
    pub argv: Vec<String>,
    /// The instance's variables (its definition's `[env]`, `HOME`); the
    /// server gets these and a `PATH` ([`env::instance_env`]), nothing of
    /// the supervisor's own environment.
    pub env: Vec<(String, String)>,
    /// Working directory (created by the caller, writable by `user`).
    pub workdir: PathBuf,
    /// Standard output and error go here (appended; opened with O_NOFOLLOW,
    /// keep it in a directory the instance cannot write), rotated to
    /// `LOG.1` at `log_bytes`.
    pub log: PathBuf,
    /// The instance's `oom_score_adj` (0 unless its supervisor could not
    /// go below that).
    pub oom_score_adj: i32,
    /// The cap of one log file ([`log::DEFAULT_LOG_BYTES`] by default).
    pub log_bytes: u64,
    /// CPUs to pin to with sched_setaffinity (the process backend).
    pub cpus: Option<Vec<usize>>,
    /// `cgroup.procs` files to join, opened by the caller.
    pub cgroup_procs: Vec<File>,
    pub isolation: Isolation,
    /// The tickpack binary, run as the instance's init when isolated.
    pub init_exe: PathBuf,
    /// Runs under SCHED_IDLE (batch work held back by the kernel).
    pub sched_idle: bool,
    /// Leads its own session (`setsid`, so its process group can be
    /// signalled as one) and dies with the supervisor (batch work).
    pub own_session: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("instance command is empty")]
    EmptyCommand,
    #[error("{what} contains a NUL byte")]
    Nul { what: &'static str },
    #[error("cannot open {path}: {err}")]
    Open { path: PathBuf, err: std::io::Error },
    #[error("cannot join its cgroup: {0}")]
    Cgroup(String),
    #[error("the host's root process did not start it: {0}")]
    Root(String),
    #[error("cannot start {program} (or set up its namespaces before exec): {err}")]
    Exec {
        program: String,
        err: std::io::Error,
    },
}

fn cstr(s: &str, what: &'static str) -> Result<CString, SpawnError> {
    CString::new(s).map_err(|_| SpawnError::Nul { what })
}

fn cpath(p: &Path, what: &'static str) -> Result<CString, SpawnError> {
    CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| SpawnError::Nul { what })
}

/// Starts the instance described by `spec`; returns the child (the init
/// when isolated, the command itself otherwise).
pub fn spawn(spec: &Spec) -> Result<Child, SpawnError> {
    let capped =
        log::CappedLog::open(&spec.log, spec.log_bytes).map_err(|err| SpawnError::Open {
            path: spec.log.clone(),
            err,
        })?;
    let (child, pipe_read) = start(spec)?;
    log::copy_in_background(pipe_read, capped).map_err(|err| SpawnError::Open {
        path: spec.log.clone(),
        err,
    })?;
    Ok(child)
}

/// [`spawn`] without the log: returns the child and the read end of its
/// stdout and stderr pipe (`spec.log` names it in errors only). The root
/// process hands that end to the supervisor, which keeps the log.
pub fn start(spec: &Spec) -> Result<(Child, std::io::PipeReader), SpawnError> {
    let program = spec.argv.first().ok_or(SpawnError::EmptyCommand)?;
    let (pipe_read, pipe_write) = std::io::pipe().map_err(|err| SpawnError::Open {
        path: spec.log.clone(),
        err,
    })?;
    let pipe_err = pipe_write.try_clone().map_err(|err| SpawnError::Open {
        path: spec.log.clone(),
        err,
    })?;
    let netns = match &spec.isolation.netns {
        Some(p) => Some(File::open(p).map_err(|err| SpawnError::Open {
            path: p.clone(),
            err,
        })?),
        None => None,
    };
    let isolated = spec.isolation.hostname.is_some();
    let server_env = env::instance_env(&spec.env);
    // Isolated, the variables go to the init in a memory file, never
    // into the environment of a process that runs as root.
    let env_file = if isolated {
        Some(
            env::EnvFile::write(&server_env).map_err(|err| SpawnError::Open {
                path: PathBuf::from("(the instance's environment)"),
                err,
            })?,
        )
    } else {
        None
    };
    let env_fd = env_file.as_ref().map(env::EnvFile::fd);
    let mut cmd = if isolated {
        // Our own binary is exec'd through /proc/self/exe, which resolves to
        // the file itself: its path may be hidden by the private /tmp (a
        // checkout under /tmp). Another init binary is exec'd by path.
        let own = std::env::current_exe().is_ok_and(|e| e == spec.init_exe);
        let mut c = if own {
            let mut c = Command::new("/proc/self/exe");
            c.arg0("tickpack");
            c
        } else {
            Command::new(&spec.init_exe)
        };
        c.arg("__instance-init");
        if let Some(fd) = env_fd {
            c.args(["--env-fd", &fd.to_string()]);
        }
        if let Some((uid, gid)) = spec.isolation.user {
            c.args(["--uid", &uid.to_string(), "--gid", &gid.to_string()]);
        }
        c.arg("--").args(&spec.argv);
        c
    } else {
        let mut c = Command::new(program);
        c.args(&spec.argv[1..]);
        c
    };
    // Nothing of the supervisor's environment goes on: not its PATH, and
    // not Agones' variables when the host itself runs in a GameServer pod
    // (they name the host's SDK server, not an instance's).
    cmd.env_clear();
    if !isolated {
        cmd.envs(server_env.iter().map(|(k, v)| (k, v)));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(pipe_write))
        .stderr(Stdio::from(pipe_err))
        .current_dir(&spec.workdir);

    // Everything the child needs, prepared before fork.
    let procs: Vec<RawFd> = spec.cgroup_procs.iter().map(AsRawFd::as_raw_fd).collect();
    let netns_fd = netns.as_ref().map(AsRawFd::as_raw_fd);
    let mut set = CpuSet::new();
    // Without CPUs of its own, every CPU: not the mask the supervisor may
    // be held to (the bench pins itself to the load generator's CPUs). The
    // kernel narrows it to the instance's cpuset, joined just before.
    let all: Vec<usize> = (0..CpuSet::MAX_CPU).collect();
    for &c in spec.cpus.as_deref().unwrap_or(&all) {
        // Bounds-checked: a CPU past the set's end panics, here, before fork.
        set.set(c);
    }
    let cpuset = set;
    let mounts = if isolated {
        Some(MountPlan::new(spec)?)
    } else {
        None
    };
    let no_user_uid = !isolated && spec.isolation.user.is_some();
    let oom_path = cstr("/proc/self/oom_score_adj", "the OOM score path")?;
    let oom_value = format!("{}\n", spec.oom_score_adj).into_bytes();
    let user = spec.isolation.user;
    let own_netns = spec.isolation.own_netns;
    let sched_idle = spec.sched_idle;
    let own_session = spec.own_session;

    // SAFETY: the closure runs in the forked child before exec. It only
    // makes raw syscalls on data prepared above (no allocation, no locks),
    // as pre_exec requires.
    unsafe {
        cmd.pre_exec(move || {
            // The supervisor keeps itself out of the OOM killer's way
            // (OOM_SCORE_ADJ_SUPERVISOR); the instance goes back to 0 (or
            // above the supervisor), so under pressure it dies first.
            let oom = rustix::fs::open(
                oom_path.as_c_str(),
                OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            rustix::io::write(&oom, &oom_value)?;
            drop(oom);
            for &fd in &procs {
                if libc::write(fd, b"0\n".as_ptr().cast(), 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            rustix::thread::sched_setaffinity(None, &cpuset)?;
            if own_session {
                let _ = rustix::process::setsid();
            }
            if sched_idle {
                let p = libc::sched_param { sched_priority: 0 };
                if libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(fd) = netns_fd {
                if libc::setns(fd, libc::CLONE_NEWNET) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if own_netns && libc::unshare(libc::CLONE_NEWNET) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(m) = &mounts {
                m.apply()?;
            }
            if no_user_uid {
                if let Some((uid, gid)) = user {
                    drop_privileges(uid, gid)?;
                }
            }
            // Nothing the supervisor holds, or its parent left open,
            // goes on: stdin, stdout, stderr and the environment's file.
            tickpack_sys::fds::cloexec_above_stderr()?;
            if let Some(fd) = env_fd {
                tickpack_sys::fds::keep_on_exec(fd)?;
            }
            if own_session {
                // After any credential change, which clears it.
                let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
                let _ = rustix::thread::set_no_new_privs(true);
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|err| SpawnError::Exec {
        program: program.clone(),
        err,
    })?;
    // Our copies of the pipe's write end go with `cmd`: the copier sees
    // end of file once the instance's last process is gone.
    drop(cmd);
    drop(env_file);
    Ok((child, pipe_read))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// What a careless parent of the supervisor leaves open (a directory
    /// of `/`, not close-on-exec) is not inherited by the command, on the
    /// path every instance, load command and batch job takes.
    #[test]
    fn a_descriptor_the_supervisors_parent_left_open_never_reaches_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let root = File::open("/").unwrap();
        // dup(2): the copy is not close-on-exec, as an inherited one.
        let copy = rustix::io::dup(&root).unwrap();
        let left = copy.as_raw_fd();
        assert!(left > 2, "dup");
        let spec = Spec {
            argv: vec![
                "/bin/sh".into(),
                "-c".into(),
                format!("if [ -e /dev/fd/{left} ]; then echo open; else echo closed; fi"),
            ],
            env: vec![],
            workdir: dir.path().to_path_buf(),
            log: dir.path().join("out.log"),
            oom_score_adj: 0,
            log_bytes: log::DEFAULT_LOG_BYTES,
            cpus: None,
            cgroup_procs: vec![],
            isolation: Isolation::default(),
            init_exe: PathBuf::from("/nonexistent"),
            sched_idle: false,
            own_session: false,
        };
        let spawned = spawn(&spec);
        drop(copy);
        let mut child = spawned.unwrap();
        child.wait().unwrap();
        let t0 = Instant::now();
        let said = loop {
            let s = std::fs::read_to_string(&spec.log).unwrap_or_default();
            if s.contains('\n') || t0.elapsed() > Duration::from_secs(10) {
                break s;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(
            said.trim(),
            "closed",
            "descriptor {left} reached the command"
        );
    }
}
