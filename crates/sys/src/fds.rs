//! Descriptors a child process inherits: stdin, stdout, stderr and the
//! ones it is named, never what our own parent happened to leave open.
//!
//! A parent may leave any descriptor open across its `exec` of tickpack (a
//! service manager, a CI harness, a shell's `9</`). Passed on, a directory
//! descriptor of the host's `/` let an instance write the host's `/tmp`
//! with `openat` past its read-only mounts and private `/tmp`, and a
//! harness's pipe reached every instance. So before every `exec` of a
//! process tickpack starts, every descriptor above stderr is marked
//! close-on-exec by range (`close_range(2)` with `CLOSE_RANGE_CLOEXEC`,
//! Linux 5.11; the mount walls need 5.12 anyway), and only then are the
//! descriptors the child is meant to have kept ([`keep_on_exec`]).
//!
//! Marked, not closed, in `pre_exec`: the standard library reports a
//! failed `exec` to the parent through a close-on-exec pipe of its own
//! that must stay open until the `exec`. A process that execs without
//! that pipe (an instance's init, which forks the command itself) closes
//! them outright ([`close_above_stderr`]).
//!
//! - [`cloexec_above_stderr`]: for `pre_exec` (async-signal-safe), and once
//!   at the start of the binary, so nothing inherited reaches any child.
//! - [`keep_on_exec`]: a named descriptor survives the `exec` after all.
//! - [`close_above_stderr`]: closes them now.
//! - [`only_stdio`]: a [`Command`] whose child gets stdin, stdout and
//!   stderr alone.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The first descriptor that is not stdin, stdout or stderr.
const ABOVE_STDERR: libc::c_uint = 3;

fn close_range(flags: libc::c_uint) -> io::Result<()> {
    // SAFETY: close_range(2) with integer arguments: it touches only this
    // process's descriptor table; async-signal-safe (one system call).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            ABOVE_STDERR,
            libc::c_uint::MAX,
            flags,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Marks every descriptor above stderr close-on-exec, whoever opened it.
/// Async-signal-safe (for `pre_exec`): one system call.
pub fn cloexec_above_stderr() -> io::Result<()> {
    close_range(libc::CLOSE_RANGE_CLOEXEC)
}

/// Closes every descriptor above stderr now. Async-signal-safe.
pub fn close_above_stderr() -> io::Result<()> {
    close_range(0)
}

/// Lets `fd` survive the next `exec` (after [`cloexec_above_stderr`]);
/// async-signal-safe.
pub fn keep_on_exec(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor number with integer arguments; a bad
    // one is EBADF, not undefined behaviour.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `cmd`, whose child gets stdin, stdout and stderr and nothing else of
/// ours (a helper such as `nft`).
pub fn only_stdio(cmd: &mut Command) -> &mut Command {
    // SAFETY: the closure makes one system call and allocates nothing, as
    // pre_exec requires.
    unsafe { cmd.pre_exec(cloexec_above_stderr) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// `sh` run with `fd` left open as descriptor 9 (as a careless parent
    /// leaves it), `only_stdio` or not: whether sh found 9 open.
    fn nine_open(fd: RawFd, only: bool) -> bool {
        let mut cmd = Command::new("/bin/sh");
        cmd.args([
            "-c",
            "if [ -e /dev/fd/9 ]; then echo open; else echo closed; fi",
        ]);
        // SAFETY: dup2(2) only, async-signal-safe, on a descriptor this
        // test holds open.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(fd, 9) < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        if only {
            only_stdio(&mut cmd);
        }
        let out = cmd.output().expect("sh runs");
        match String::from_utf8_lossy(&out.stdout).trim() {
            "open" => true,
            "closed" => false,
            other => panic!("sh said {other:?}"),
        }
    }

    #[test]
    fn a_descriptor_left_open_by_our_parent_never_reaches_a_helper() {
        let root = std::fs::File::open("/").unwrap();
        assert!(nine_open(root.as_raw_fd(), false), "the test leaves 9 open");
        assert!(!nine_open(root.as_raw_fd(), true), "only_stdio closed it");
    }

    #[test]
    fn marked_descriptors_close_on_exec_and_a_kept_one_stays() {
        // In a child: this process's own descriptor table is not touched.
        // SAFETY: the child makes raw system calls and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            // SAFETY: raw system calls on descriptors of this child, then _exit.
            unsafe {
                let a = libc::dup(1);
                let b = libc::dup(1);
                let ok = cloexec_above_stderr().is_ok()
                    && keep_on_exec(b).is_ok()
                    && libc::fcntl(a, libc::F_GETFD) == libc::FD_CLOEXEC
                    && libc::fcntl(b, libc::F_GETFD) == 0
                    && libc::fcntl(1, libc::F_GETFD) == 0
                    && close_above_stderr().is_ok()
                    && libc::fcntl(a, libc::F_GETFD) < 0
                    && libc::fcntl(1, libc::F_GETFD) == 0;
                libc::_exit(if ok { 0 } else { 1 });
            }
        }
        let pid = rustix::process::Pid::from_raw(pid).expect("a child's PID");
        let (_, status) =
            rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty())
                .expect("waitpid")
                .expect("the child ended");
        assert_eq!(status.exit_status(), Some(0));
    }
}
