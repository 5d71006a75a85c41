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
//!    mounts private and every mount read-only, nosuid and nodev
//!    (`mount_setattr` with AT_RECURSIVE; device nodes stay usable under
//!    `/dev`), mounts private size-limited tmpfs on `/tmp` and `/dev/shm`,
//!    and hides the run dir behind an empty tmpfs in which only the
//!    instance's working directory is mounted again, writable, at its real
//!    path (or a size-limited tmpfs there when a disk limit is set), so
//!    `{dir}` means the same inside and outside;
//! 5. `exec`s the tickpack binary as a small init (`__instance-init`) that
//!    forks the real command as PID 1 of the new PID namespace, mounts
//!    `/proc` for it, empties its capability bounding set, sets
//!    no_new_privs, drops to the instance's unprivileged uid/gid, arms
//!    PR_SET_PDEATHSIG (after the uid change, which clears it), installs
//!    the seccomp filter of [`crate::confine`] and forwards SIGTERM/SIGINT
//!    to it. The init exits with the command's status (128+signal when
//!    killed), so the supervisor watches one PID; it kills whatever is left
//!    in the instance's cgroup before a restart.
//!
//! Without isolation (the `process` backend) only steps 1-2 apply and the
//! command is `exec`ed directly.
//!
//! The log is opened by root with O_NOFOLLOW in a directory the instance
//! cannot write (the supervisor keeps logs in `RUN_DIR/logs`, mode 0700).

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
    /// The run dir, hidden inside the instance behind an empty tmpfs in
    /// which only the working directory (below it) is mounted again.
    pub hide: Option<PathBuf>,
    /// Size limit of the working directory: a tmpfs of this size (emptied
    /// at every start) instead of the host directory.
    pub disk_bytes: Option<u64>,
}

/// One instance to start.
#[derive(Debug)]
pub struct Spec {
    /// The command and its arguments.
    pub argv: Vec<String>,
    /// Environment set on top of the supervisor's.
    pub env: Vec<(String, String)>,
    /// Working directory (created by the caller, writable by `user`).
    pub workdir: PathBuf,
    /// Standard output and error go here (appended; opened with O_NOFOLLOW,
    /// keep it in a directory the instance cannot write).
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
    use std::os::unix::fs::OpenOptionsExt;
    let program = spec.argv.first().ok_or(SpawnError::EmptyCommand)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
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
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
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
    let mounts = if isolated {
        Some(MountPlan::new(spec)?)
    } else {
        None
    };
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
            if let Some(m) = &mounts {
                m.apply()?;
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

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

/// Size of the private `/tmp` and `/dev/shm` of each instance.
pub const TMPFS_OPTIONS: &str = "mode=1777,size=64m";

/// The mount namespace of an isolated instance, prepared before the fork
/// and applied in the child with raw syscalls only.
struct MountPlan {
    hostname: CString,
    root: CString,
    dev: CString,
    dev_is_mount: bool,
    tmp: CString,
    shm: Option<CString>,
    tmpfs: CString,
    tmp_opts: CString,
    empty: CString,
    workdir: CString,
    /// Directories to create, outermost first, up to the hidden run dir
    /// (needed when the private /tmp hides it), then the run dir itself.
    hide: Option<(Vec<CString>, CString, CString)>,
    /// Directories between the hidden run dir and the working directory.
    inner: Vec<CString>,
    disk_opts: Option<CString>,
}

/// Writes a fixed message to the log (fd 2) and returns the errno of the
/// failed call: the pre-exec child cannot allocate to say more.
fn step(rc: libc::c_int, what: &'static [u8]) -> std::io::Result<()> {
    if rc >= 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    let pre = b"tickpack: setting up the instance failed at: ";
    // SAFETY: write(2) of static buffers to fd 2.
    unsafe {
        libc::write(2, pre.as_ptr().cast(), pre.len());
        libc::write(2, what.as_ptr().cast(), what.len());
        libc::write(2, b"\n".as_ptr().cast(), 1);
    }
    Err(err)
}

/// mount_setattr(2) (Linux 5.12+).
///
/// # Safety
/// `path` must be a valid C string.
unsafe fn mount_setattr(
    dirfd: libc::c_int,
    path: *const libc::c_char,
    flags: libc::c_int,
    set: u64,
    clr: u64,
) -> libc::c_int {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clr,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: the caller passes a valid path; attr lives across the call
    // and its size is passed along.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path,
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) as libc::c_int
    }
}

impl MountPlan {
    fn new(spec: &Spec) -> Result<MountPlan, SpawnError> {
        use std::os::unix::fs::MetadataExt;
        let iso = &spec.isolation;
        let dev_is_mount = match (std::fs::metadata("/"), std::fs::metadata("/dev")) {
            (Ok(r), Ok(d)) => r.dev() != d.dev(),
            _ => false,
        };
        let shm = Path::new("/dev/shm").is_dir();
        let hide = iso
            .hide
            .as_ref()
            .filter(|h| spec.workdir.starts_with(h) && spec.workdir != **h);
        let (hide, inner) = match hide {
            Some(h) => {
                let mut outer: Vec<&Path> = h.ancestors().skip(1).collect();
                outer.reverse();
                let outer = outer
                    .into_iter()
                    .filter(|p| p.parent().is_some())
                    .map(|p| cpath(p, "run dir"))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut inner: Vec<&Path> =
                    spec.workdir.ancestors().take_while(|p| p != h).collect();
                inner.reverse();
                let inner = inner
                    .into_iter()
                    .map(|p| cpath(p, "working directory"))
                    .collect::<Result<Vec<_>, _>>()?;
                let opts = cstr("mode=0755,size=1m", "mount options")?;
                (Some((outer, cpath(h, "run dir")?, opts)), inner)
            }
            None => (None, vec![]),
        };
        let disk_opts = match (iso.disk_bytes, iso.user) {
            (Some(b), Some((u, g))) => Some(cstr(
                &format!("mode=0700,uid={u},gid={g},size={b}"),
                "mount options",
            )?),
            (Some(b), None) => Some(cstr(&format!("mode=0700,size={b}"), "mount options")?),
            (None, _) => None,
        };
        Ok(MountPlan {
            hostname: cstr(iso.hostname.as_deref().unwrap_or_default(), "hostname")?,
            root: cstr("/", "path")?,
            dev: cstr("/dev", "path")?,
            dev_is_mount,
            tmp: cstr("/tmp", "path")?,
            shm: if shm {
                Some(cstr("/dev/shm", "path")?)
            } else {
                None
            },
            tmpfs: cstr("tmpfs", "fs type")?,
            tmp_opts: cstr(TMPFS_OPTIONS, "mount options")?,
            empty: cstr("", "path")?,
            workdir: cpath(&spec.workdir, "working directory")?,
            hide,
            inner,
            disk_opts,
        })
    }

    /// Runs in the pre-exec child: raw syscalls on prepared data only.
    fn apply(&self) -> std::io::Result<()> {
        let null = std::ptr::null();
        let nosuid_nodev = libc::MS_NOSUID | libc::MS_NODEV;
        // SAFETY: every pointer is a prepared, live C string or null where
        // the call allows it.
        unsafe {
            step(
                libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWUTS | libc::CLONE_NEWPID),
                b"unshare",
            )?;
            step(
                libc::sethostname(self.hostname.as_ptr(), self.hostname.as_bytes().len()),
                b"sethostname",
            )?;
            step(
                libc::mount(
                    null,
                    self.root.as_ptr(),
                    null,
                    libc::MS_REC | libc::MS_PRIVATE,
                    null.cast(),
                ),
                b"making mounts private",
            )?;
            // A detached copy of the working directory, attached again
            // below once the run dir (and maybe /tmp) hides its path.
            let tree = if self.disk_opts.is_none() {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    self.workdir.as_ptr(),
                    OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
                ) as libc::c_int;
                step(fd, b"open_tree of the working directory")?;
                fd
            } else {
                -1
            };
            // Every mount read-only, nosuid, nodev...
            step(
                mount_setattr(
                    libc::AT_FDCWD,
                    self.root.as_ptr(),
                    libc::AT_RECURSIVE,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                    0,
                ),
                b"mount_setattr / read-only,nosuid,nodev (needs Linux 5.12+)",
            )?;
            // ...but device nodes (/dev/null, /dev/urandom) still work.
            if self.dev_is_mount {
                step(
                    mount_setattr(
                        libc::AT_FDCWD,
                        self.dev.as_ptr(),
                        libc::AT_RECURSIVE,
                        0,
                        MOUNT_ATTR_NODEV,
                    ),
                    b"mount_setattr /dev",
                )?;
            }
            step(
                libc::mount(
                    self.tmpfs.as_ptr(),
                    self.tmp.as_ptr(),
                    self.tmpfs.as_ptr(),
                    nosuid_nodev,
                    self.tmp_opts.as_ptr().cast(),
                ),
                b"private /tmp",
            )?;
            if let Some(shm) = &self.shm {
                step(
                    libc::mount(
                        self.tmpfs.as_ptr(),
                        shm.as_ptr(),
                        self.tmpfs.as_ptr(),
                        nosuid_nodev,
                        self.tmp_opts.as_ptr().cast(),
                    ),
                    b"private /dev/shm",
                )?;
            }
            if let Some((outer, run_dir, opts)) = &self.hide {
                // Under /tmp the run dir is gone from view: make its path
                // again in the private /tmp (elsewhere they exist: EEXIST).
                for d in outer.iter().chain(std::iter::once(run_dir)) {
                    libc::mkdir(d.as_ptr(), 0o755);
                }
                step(
                    libc::mount(
                        self.tmpfs.as_ptr(),
                        run_dir.as_ptr(),
                        self.tmpfs.as_ptr(),
                        nosuid_nodev | libc::MS_NOEXEC,
                        opts.as_ptr().cast(),
                    ),
                    b"hiding the run dir",
                )?;
                for d in &self.inner {
                    step(
                        libc::mkdir(d.as_ptr(), 0o755),
                        b"mkdir in the hidden run dir",
                    )?;
                }
            }
            match &self.disk_opts {
                Some(opts) => step(
                    libc::mount(
                        self.tmpfs.as_ptr(),
                        self.workdir.as_ptr(),
                        self.tmpfs.as_ptr(),
                        nosuid_nodev,
                        opts.as_ptr().cast(),
                    ),
                    b"size-limited working directory",
                )?,
                None => {
                    step(
                        mount_setattr(
                            tree,
                            self.empty.as_ptr(),
                            libc::AT_EMPTY_PATH,
                            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                            MOUNT_ATTR_RDONLY,
                        ),
                        b"making the working directory writable, nosuid, nodev",
                    )?;
                    step(
                        libc::syscall(
                            libc::SYS_move_mount,
                            tree,
                            self.empty.as_ptr(),
                            libc::AT_FDCWD,
                            self.workdir.as_ptr(),
                            MOVE_MOUNT_F_EMPTY_PATH,
                        ) as libc::c_int,
                        b"mounting the working directory",
                    )?;
                    libc::close(tree);
                }
            }
            // The cwd still points below the old mount; enter the new one.
            step(
                libc::chdir(self.workdir.as_ptr()),
                b"chdir to the working directory",
            )?;
        }
        Ok(())
    }
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
    let filters = match crate::confine::Filters::build() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("tickpack __instance-init: {e}");
            return 126;
        }
    };

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
        // Child: PID 1 of the new namespace. The init is single-threaded,
        // so the child may allocate (error messages) before exec.
        std::process::exit(run_command(
            uid.zip(gid),
            &proc_,
            &proc_dir,
            &filters,
            program,
            &exec_path,
            &ptrs,
        ));
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
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// The init's child, PID 1 of the instance: confines itself and execs the
/// command; returns an exit code only when that fails.
fn run_command(
    user: Option<(u32, u32)>,
    proc_: &CString,
    proc_dir: &CString,
    filters: &crate::confine::Filters,
    program: &str,
    exec_path: &CString,
    argv: &[*const libc::c_char],
) -> i32 {
    use crate::confine;
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        eprintln!("tickpack __instance-init: {what}: {e}");
        126
    };
    // Die with the init (armed again after the uid change, which clears
    // it). getppid() is 0 here: the parent is outside this PID namespace,
    // so a parent that died already cannot be seen; the supervisor kills
    // the instance's whole cgroup when the init is gone.
    // SAFETY: prctl and mount with integer arguments and live C strings.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::mount(
            proc_.as_ptr(),
            proc_dir.as_ptr(),
            proc_.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) < 0
        {
            return fail("mounting /proc", &std::io::Error::last_os_error());
        }
    }
    if let Err(e) = confine::drop_bounding_set() {
        return fail("capabilities", &e);
    }
    if let Err(e) = confine::no_new_privs() {
        return fail("no_new_privs", &e);
    }
    if let Some((u, g)) = user {
        if let Err(e) = confine::limit_processes() {
            return fail("process limit", &e);
        }
        if let Err(e) = drop_privileges(u, g) {
            return fail(&format!("switching to uid {u} gid {g}"), &e);
        }
    }
    if let Err(e) = confine::clear_inheritable_and_ambient() {
        return fail("capabilities", &e);
    }
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    if let Err(e) = filters.apply() {
        return fail("seccomp", &e);
    }
    // SAFETY: argv is a null-terminated array of live C strings.
    unsafe { libc::execvp(exec_path.as_ptr(), argv.as_ptr()) };
    let err = std::io::Error::last_os_error();
    eprintln!("tickpack __instance-init: cannot exec {program}: {err}");
    if err.raw_os_error() == Some(libc::ENOENT) {
        127
    } else {
        126
    }
}
