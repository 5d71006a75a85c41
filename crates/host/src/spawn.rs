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
//! 3. enters the instance's network namespace (`setns` on /run/netns/NAME);
//! 4. unshares mount, UTS and PID namespaces, sets the hostname, makes all
//!    mounts private, bind-mounts the working directory on itself, remounts
//!    `/` read-only and mounts a private tmpfs on `/tmp`;
//! 5. `exec`s the tickpack binary as a small init (`__instance-init`) that
//!    forks the real command as PID 1 of the new PID namespace, mounts
//!    `/proc` for it, drops to the instance's unprivileged uid/gid (the
//!    working directory is inherited), and forwards SIGTERM/SIGINT to it. The init exits
//!    with the command's status (128+signal when killed), and the command
//!    dies with the init (PR_SET_PDEATHSIG), so the supervisor watches one PID.
//!
//! Without isolation (the `process` backend) only steps 1-2 apply and the
//! command is `exec`ed directly.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// How an instance is isolated.
#[derive(Debug, Clone, Default)]
pub struct Isolation {
    /// Network namespace to enter (`/run/netns/NAME`).
    pub netns: Option<PathBuf>,
    /// New mount, UTS and PID namespaces with this hostname, `/` read-only,
    /// private `/tmp`, the working directory writable.
    pub hostname: Option<String>,
    /// Unprivileged uid and gid the command runs as.
    pub user: Option<(u32, u32)>,
}

/// One instance to start.
#[derive(Debug)]
pub struct Spec {
    /// The command and its arguments.
    pub argv: Vec<String>,
    /// Working directory (created by the caller, writable by `user`).
    pub workdir: PathBuf,
    /// Standard output and error go here (appended).
    pub log: PathBuf,
    /// CPUs to pin to with sched_setaffinity (the process backend).
    pub cpus: Option<Vec<usize>>,
    /// `cgroup.procs` files to join, opened by the caller.
    pub cgroup_procs: Vec<File>,
    pub isolation: Isolation,
    /// The tickpack binary, run as the instance's init when isolated.
    pub init_exe: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("instance command is empty")]
    EmptyCommand,
    #[error("{what} contains a NUL byte")]
    Nul { what: &'static str },
    #[error("cannot open {path}: {err}")]
    Open { path: PathBuf, err: std::io::Error },
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
    let program = spec.argv.first().ok_or(SpawnError::EmptyCommand)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log)
        .map_err(|err| SpawnError::Open {
            path: spec.log.clone(),
            err,
        })?;
    let log_err = log.try_clone().map_err(|err| SpawnError::Open {
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
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err))
        .current_dir(&spec.workdir);

    // Everything the child needs, prepared before fork.
    let procs: Vec<RawFd> = spec.cgroup_procs.iter().map(AsRawFd::as_raw_fd).collect();
    let netns_fd = netns.as_ref().map(AsRawFd::as_raw_fd);
    let mut cpuset: Option<libc::cpu_set_t> = None;
    if let Some(cpus) = &spec.cpus {
        // SAFETY: cpu_set_t is a plain bit array; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            // SAFETY: CPU_SET only sets a bit inside `set`; c is bounds-checked by libc's macro.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        cpuset = Some(set);
    }
    let hostname = spec.isolation.hostname.clone().unwrap_or_default();
    let workdir = cpath(&spec.workdir, "working directory")?;
    let root = cstr("/", "path")?;
    let tmp = cstr("/tmp", "path")?;
    let tmpfs = cstr("tmpfs", "fs type")?;
    let tmp_opts = cstr("mode=1777,size=64m", "mount options")?;
    let no_user_uid = !isolated && spec.isolation.user.is_some();
    let user = spec.isolation.user;

    // SAFETY: the closure runs in the forked child before exec. It only
    // makes raw syscalls on data prepared above (no allocation, no locks),
    // as pre_exec requires.
    unsafe {
        cmd.pre_exec(move || {
            for &fd in &procs {
                if libc::write(fd, b"0\n".as_ptr().cast(), 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(set) = &cpuset {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(fd) = netns_fd {
                if libc::setns(fd, libc::CLONE_NEWNET) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if isolated {
                check(libc::unshare(
                    libc::CLONE_NEWNS | libc::CLONE_NEWUTS | libc::CLONE_NEWPID,
                ))?;
                check(libc::sethostname(hostname.as_ptr().cast(), hostname.len()))?;
                let null = std::ptr::null();
                check(libc::mount(
                    null,
                    root.as_ptr(),
                    null,
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ))?;
                check(libc::mount(
                    workdir.as_ptr(),
                    workdir.as_ptr(),
                    null,
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                // Hold the (writable) working directory by descriptor: a run
                // dir under /tmp is hidden once the private /tmp is mounted.
                let wd = libc::open(
                    workdir.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                );
                check(wd)?;
                check(libc::mount(
                    null,
                    root.as_ptr(),
                    null,
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
                    std::ptr::null(),
                ))?;
                check(libc::mount(
                    tmpfs.as_ptr(),
                    tmp.as_ptr(),
                    tmpfs.as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    tmp_opts.as_ptr().cast(),
                ))?;
                // The cwd still points below the old mount; enter the new one.
                check(libc::fchdir(wd))?;
                libc::close(wd);
            }
            if no_user_uid {
                if let Some((uid, gid)) = user {
                    drop_privileges(uid, gid)?;
                }
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|err| SpawnError::Exec {
        program: program.clone(),
        err,
    })
}

fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// setgroups([]), setgid, setuid; async-signal-safe.
fn drop_privileges(uid: u32, gid: u32) -> std::io::Result<()> {
    // SAFETY: plain syscalls with no pointers but setgroups' null list of length 0.
    unsafe {
        check(libc::setgroups(0, std::ptr::null()))?;
        check(libc::setgid(gid))?;
        check(libc::setuid(uid))?;
    }
    Ok(())
}

/// The `__instance-init` side: runs as the first process of the instance's
/// new PID namespace's parent. Forks the command as PID 1, forwards
/// SIGTERM and SIGINT, and returns the exit code to use.
pub fn instance_init(uid: Option<u32>, gid: Option<u32>, argv: &[String]) -> i32 {
    let Some(program) = argv.first() else {
        eprintln!("tickpack __instance-init: no command");
        return 127;
    };
    let Ok(cargs) = argv
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<Vec<_>, _>>()
    else {
        eprintln!("tickpack __instance-init: NUL in command");
        return 127;
    };
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    // The command is often this very binary (`{tickpack} server ...`), whose
    // path the private /tmp may hide: run it through /proc/self/exe then.
    let own = std::env::current_exe().is_ok_and(|e| e.as_os_str() == std::ffi::OsStr::new(program));
    let exec_path = if own {
        CString::new("/proc/self/exe").expect("static")
    } else {
        cargs[0].clone()
    };
    ptrs.push(std::ptr::null());
    let proc_ = CString::new("proc").expect("static");
    let proc_dir = CString::new("/proc").expect("static");

    // SAFETY: fork in a single-threaded process (this init starts no
    // threads before this point).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        eprintln!(
            "tickpack __instance-init: fork: {}",
            std::io::Error::last_os_error()
        );
        return 126;
    }
    if pid == 0 {
        // Child: PID 1 of the new namespace.
        // SAFETY: raw syscalls on prepared data, then exec or _exit.
        unsafe {
            // Die with the init. (getppid() is 0 here: the parent is
            // outside this PID namespace, so it cannot be checked.)
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::mount(
                proc_.as_ptr(),
                proc_dir.as_ptr(),
                proc_.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            );
            if let (Some(u), Some(g)) = (uid, gid) {
                if drop_privileges(u, g).is_err() {
                    libc::_exit(126);
                }
            }
            libc::execvp(exec_path.as_ptr(), ptrs.as_ptr());
            let msg = b"tickpack __instance-init: exec failed\n";
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(127);
        }
    }
    // Parent: forward termination requests, wait, report.
    static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
    CHILD.store(pid, std::sync::atomic::Ordering::SeqCst);
    extern "C" fn forward(sig: libc::c_int) {
        let pid = CHILD.load(std::sync::atomic::Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: kill is async-signal-safe.
            unsafe { libc::kill(pid, sig) };
        }
    }
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: installing a handler that only calls kill(2).
        unsafe {
            libc::signal(
                sig,
                forward as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return 1;
        }
    }
    let _ = program;
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}
