//! The instance's init (`__instance-init`): forks the command as PID 1 of
//! the new PID namespace, mounts `/proc`, confines it (capabilities,
//! no_new_privs, uid/gid, no descriptor but stdin/stdout/stderr, seccomp) and forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT
//! (a game's stop signal).

use rustix::io::Errno;
use rustix::mount::MountFlags;
use rustix::process::{
    kill_process, set_parent_process_death_signal, waitpid, Gid, Pid, Signal, Uid, WaitOptions,
};
use std::ffi::CString;

/// setgroups([]), setgid, setuid; async-signal-safe. Raw system calls,
/// which change the calling thread alone: both callers are single-threaded
/// (a forked child before exec, the init's child).
pub(super) fn drop_privileges(uid: u32, gid: u32) -> std::io::Result<()> {
    rustix::thread::set_thread_groups(&[])?;
    rustix::thread::set_thread_gid(Gid::from_raw(gid))?;
    rustix::thread::set_thread_uid(Uid::from_raw(uid))?;
    Ok(())
}

/// The init's own root given up (capability bounding set, no_new_privs,
/// uid and gid, inheritable and ambient capabilities), keeping the
/// parent-death signal a batch job's or load command's init was started
/// with: the uid change clears it, so it is armed again, and a parent
/// that went in between (its signal missed) ends the init here.
pub(super) fn give_up_root(uid: u32, gid: u32) -> Result<(), String> {
    use rustix::process::{getppid, parent_process_death_signal};
    let armed = parent_process_death_signal().ok().flatten();
    let parent = getppid();
    crate::confine::drop_bounding_set().map_err(|e| e.to_string())?;
    crate::confine::no_new_privs().map_err(|e| e.to_string())?;
    drop_privileges(uid, gid).map_err(|e| e.to_string())?;
    crate::confine::clear_inheritable_and_ambient().map_err(|e| e.to_string())?;
    if let Some(sig) = armed {
        set_parent_process_death_signal(Some(sig)).map_err(|e| e.to_string())?;
        if getppid() != parent {
            return Err("its parent is gone".into());
        }
    }
    Ok(())
}

/// The `__instance-init` side: runs as the first process of the instance's
/// new PID namespace's parent. Forks the command as PID 1, forwards
/// SIGTERM and SIGINT, and returns the exit code to use. The command's
/// environment is read from `env_fd` (see [`super::env`]); the init's own
/// stays as the supervisor gave it: empty.
pub fn instance_init(
    uid: Option<u32>,
    gid: Option<u32>,
    env_fd: Option<i32>,
    argv: &[String],
) -> i32 {
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
    let env = match env_fd.map(super::env::read_env_fd) {
        Some(Ok(env)) => env,
        Some(Err(e)) => {
            eprintln!("tickpack __instance-init: reading the command's environment: {e}");
            return 126;
        }
        None => super::env::instance_env(&[])
            .into_iter()
            .filter_map(|(k, v)| CString::new(format!("{k}={v}")).ok())
            .collect(),
    };
    let mut envp: Vec<*const libc::c_char> = env.iter().map(|c| c.as_ptr()).collect();
    envp.push(std::ptr::null());
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    // The command is often this very binary (`{tickpack} server ...`), whose
    // path the private /tmp may hide: run it through /proc/self/exe then.
    let own = std::env::current_exe().is_ok_and(|e| e.as_os_str() == std::ffi::OsStr::new(program));
    // Searched on the command's own PATH, never the init's.
    let exec_paths = if own {
        vec![CString::new("/proc/self/exe").expect("static")]
    } else {
        super::env::exec_candidates(program, &super::env::path_of(&env))
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
            &Exec {
                program,
                paths: &exec_paths,
                argv: &ptrs,
                envp: &envp,
            },
        ));
    }
    // Parent: keeps no root either (it forwards signals to, and waits
    // for, a process of the instance's user; the mounts are made), then
    // forwards termination requests, waits, reports.
    if let Some((u, g)) = uid.zip(gid) {
        if let Err(e) = give_up_root(u, g) {
            eprintln!("tickpack __instance-init: giving root up: {e}");
            if let Some(p) = Pid::from_raw(pid) {
                let _ = kill_process(p, Signal::KILL);
            }
            return 126;
        }
    }
    static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
    CHILD.store(pid, std::sync::atomic::Ordering::SeqCst);
    extern "C" fn forward(sig: libc::c_int) {
        let pid = CHILD.load(std::sync::atomic::Ordering::SeqCst);
        // kill(2), one raw system call: async-signal-safe.
        if let (Some(pid), Some(sig)) = (Pid::from_raw(pid), Signal::from_named_raw(sig)) {
            let _ = kill_process(pid, sig);
        }
    }
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: installing a handler that only calls kill(2).
        unsafe {
            libc::signal(
                sig,
                forward as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
    let Some(child) = Pid::from_raw(pid) else {
        return 1;
    };
    let status = loop {
        match waitpid(Some(child), WaitOptions::empty()) {
            Ok(Some((r, status))) if r == child => break status,
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => return 1,
        }
    };
    if let Some(code) = status.exit_status() {
        code
    } else if let Some(sig) = status.terminating_signal() {
        128 + sig
    } else {
        1
    }
}

/// What the instance's PID 1 executes, prepared before the fork.
struct Exec<'a> {
    /// As given (for messages).
    program: &'a str,
    /// Where to look for it, in order (its own `PATH`'s search).
    paths: &'a [CString],
    /// Null-terminated arrays of live C strings.
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
}

/// The init's child, PID 1 of the instance: confines itself and execs the
/// command; returns an exit code only when that fails.
fn run_command(
    user: Option<(u32, u32)>,
    proc_: &CString,
    proc_dir: &CString,
    filters: &crate::confine::Filters,
    exec: &Exec<'_>,
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
    let _ = set_parent_process_death_signal(Some(Signal::KILL));
    if let Err(e) = rustix::mount::mount(
        proc_.as_c_str(),
        proc_dir.as_c_str(),
        proc_.as_c_str(),
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    ) {
        return fail("mounting /proc", &std::io::Error::from(e));
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
    let _ = set_parent_process_death_signal(Some(Signal::KILL));
    // The command gets stdin, stdout and stderr alone (the supervisor
    // marked the rest close-on-exec already; this holds whatever opened
    // them since).
    if let Err(e) = tickpack_sys::fds::close_above_stderr() {
        return fail("closing inherited descriptors", &e);
    }
    if let Err(e) = filters.apply() {
        return fail("seccomp", &e);
    }
    // As execvp does: the first candidate that exists is run; the error
    // shown is that of one that exists but could not run, else ENOENT.
    let mut shown = None;
    let program = exec.program;
    for path in exec.paths {
        // SAFETY: argv and envp are null-terminated arrays of live C strings.
        unsafe { libc::execve(path.as_ptr(), exec.argv.as_ptr(), exec.envp.as_ptr()) };
        let err = std::io::Error::last_os_error();
        if !matches!(err.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) || shown.is_none() {
            shown = Some(err);
        }
    }
    let err = shown.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT));
    eprintln!("tickpack __instance-init: cannot exec {program}: {err}");
    if err.raw_os_error() == Some(libc::ENOENT) {
        127
    } else {
        126
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review of issue 40: a batch job's or load command's init gave root
    /// up after it forked the command, and the uid change cleared the
    /// parent-death signal it was started with: it no longer died with
    /// the host's root process.
    #[test]
    fn a_batch_jobs_init_stopped_dying_with_its_root_process() {
        if !tickpack_sys::is_root() {
            eprintln!("skipped: needs root (a uid change)");
            return;
        }
        // SAFETY: the child makes system calls only, then _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            let code = match set_parent_process_death_signal(Some(Signal::KILL))
                .map_err(|e| e.to_string())
                .and_then(|()| give_up_root(65_534, 65_534))
            {
                Ok(()) => match rustix::process::parent_process_death_signal() {
                    Ok(Some(Signal::KILL)) => 0,
                    _ => 1,
                },
                Err(_) => 2,
            };
            // SAFETY: _exit is async-signal-safe.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "the child died: {status}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "1: no death signal after root was given up; 2: giving root up failed"
        );
    }
}
