//! What an isolated instance's command may still do once it runs: no
//! capabilities (the bounding, inheritable and ambient sets are emptied),
//! no new privileges (setuid binaries and file capabilities grant nothing),
//! and a seccomp filter that refuses, with EPERM, the system calls a game
//! server never needs: mounting, tracing other processes, BPF, kexec,
//! kernel modules, the key rings, new namespaces, swap, reboot and
//! performance counters (see [`DENIED`]).
//!
//! The instance init calls, in its forked child, in this order:
//! [`Filters::build`] (before the fork: it allocates), [`drop_bounding_set`]
//! (needs CAP_SETPCAP, so while still root), [`no_new_privs`], then the uid
//! change, then [`clear_inheritable_and_ambient`] and [`Filters::apply`]
//! last, right before `exec`.
//!
//! It deliberately does not filter by an allow list: a game server may be
//! any program, and a refused call it needed would be a hard-to-find bug.
//! The deny list holds calls that need privileges an instance does not have
//! anyway, so the filter is a second wall, not the only one.

use rustix::io::Errno;
use rustix::process::{Resource, Rlimit};
use rustix::thread::{CapabilitySet, CapabilitySets};
use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// System calls refused with EPERM.
pub const DENIED: &[(&str, libc::c_long)] = &[
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("bpf", libc::SYS_bpf),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
];

/// What the decoder of the hosted servers' datagrams (the supervisor's
/// `__decoder`) is refused beyond [`DENIED`]: it reads requests and
/// answers them on the socket it was given, so it opens no file, makes,
/// binds or connects no socket, runs no program and signals no other
/// process ([`Filters::for_decoder`]). A decoder bug cannot then reach
/// anything but that socket.
pub const DECODER_DENIED: &[(&str, libc::c_long)] = &[
    #[cfg(target_arch = "x86_64")]
    ("open", libc::SYS_open),
    #[cfg(target_arch = "x86_64")]
    ("creat", libc::SYS_creat),
    ("openat", libc::SYS_openat),
    ("openat2", libc::SYS_openat2),
    ("socket", libc::SYS_socket),
    ("socketpair", libc::SYS_socketpair),
    ("bind", libc::SYS_bind),
    ("connect", libc::SYS_connect),
    ("listen", libc::SYS_listen),
    ("accept4", libc::SYS_accept4),
    ("execve", libc::SYS_execve),
    ("execveat", libc::SYS_execveat),
    ("kill", libc::SYS_kill),
    ("pidfd_open", libc::SYS_pidfd_open),
    ("pidfd_send_signal", libc::SYS_pidfd_send_signal),
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
];

/// `clone` flags that create namespaces; `clone` with any of them is refused.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWCGROUP,
];

#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("building the seccomp filter for {arch}: {err}")]
    Build {
        arch: &'static str,
        err: seccompiler::BackendError,
    },
    #[error("installing the seccomp filter: {0}")]
    Apply(seccompiler::Error),
    #[error("{what}: {err}")]
    Sys {
        what: &'static str,
        err: std::io::Error,
    },
}

/// The compiled filters, built before the fork.
pub struct Filters {
    programs: Vec<BpfProgram>,
}

impl Filters {
    /// Compiles the deny list for this machine's architecture.
    pub fn build() -> Result<Filters, ConfineError> {
        Self::denying(&[])
    }

    /// The deny list with [`DECODER_DENIED`] added.
    pub fn for_decoder() -> Result<Filters, ConfineError> {
        Self::denying(DECODER_DENIED)
    }

    fn denying(more: &[(&str, libc::c_long)]) -> Result<Filters, ConfineError> {
        let arch = std::env::consts::ARCH;
        let build = |err| ConfineError::Build { arch, err };
        let target = arch.try_into().map_err(build)?;
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED
            .iter()
            .chain(more)
            .map(|&(_, nr)| (nr, vec![]))
            .collect();
        let clone_rules = NAMESPACE_FLAGS
            .iter()
            .map(|&flag| {
                let flag = flag as u64;
                let c = SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(flag),
                    flag,
                )?;
                SeccompRule::new(vec![c])
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(build)?;
        rules.insert(libc::SYS_clone, clone_rules);
        let deny = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            target,
        )
        .map_err(build)?;
        let deny: BpfProgram = deny.try_into().map_err(build)?;
        Ok(Filters {
            programs: vec![deny, extra_filter()],
        })
    }

    /// Installs the filters on the calling thread (needs no_new_privs or
    /// CAP_SYS_ADMIN). Allocation-free.
    pub fn apply(&self) -> Result<(), ConfineError> {
        for p in &self.programs {
            seccompiler::apply_filter(p).map_err(ConfineError::Apply)?;
        }
        Ok(())
    }
}

/// A hand-written filter for what the deny list cannot express by number:
/// `clone3` (its flags sit behind a pointer a filter cannot read) answers
/// ENOSYS, so the C library falls back to `clone`, which is checked; and on
/// x86_64 the x32 system call numbers (bit 30), which would otherwise reach
/// the denied calls under other numbers, answer ENOSYS as well.
fn extra_filter() -> BpfProgram {
    use seccompiler::sock_filter;
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let stmt = |code, k| sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code, k, jt, jf| sock_filter { code, jt, jf, k };
    let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    // offsetof(struct seccomp_data, nr) = 0.
    let mut p = vec![stmt(LD_W_ABS, 0)];
    if cfg!(target_arch = "x86_64") {
        // nr >= 0x4000_0000: an x32 call.
        p.push(jump(JGE_K, 0x4000_0000, 2, 0));
    } else {
        p.push(jump(JEQ_K, u32::MAX, 2, 0));
    }
    p.push(jump(JEQ_K, libc::SYS_clone3 as u32, 1, 0));
    p.push(stmt(RET_K, libc::SECCOMP_RET_ALLOW));
    p.push(stmt(RET_K, enosys));
    p
}

/// `r`, its error named by `what`.
fn checked(what: &'static str, r: rustix::io::Result<()>) -> Result<(), ConfineError> {
    r.map_err(|e| ConfineError::Sys {
        what,
        err: e.into(),
    })
}

/// Empties the capability bounding set, so nothing run later (a setuid
/// binary, a file with capabilities) can get a capability back. Needs
/// CAP_SETPCAP: call while still root.
pub fn drop_bounding_set() -> Result<(), ConfineError> {
    for cap in 0..64 {
        // prctl(PR_CAPBSET_DROP, cap): by number, kernels know capabilities
        // rustix's names may not.
        let one = CapabilitySet::from_bits_retain(1 << cap);
        match rustix::thread::remove_capability_from_bounding_set(one) {
            Ok(()) => {}
            // Past the kernel's last capability.
            Err(Errno::INVAL) => break,
            Err(e) => return checked("dropping the capability bounding set", Err(e)),
        }
    }
    Ok(())
}

/// Processes and threads one instance may have at once: its uid is its
/// own (`USER_BASE + id`), so the kernel's per-uid RLIMIT_NPROC is a
/// per-instance limit, and a fork bomb in one instance cannot take every PID
/// of the machine from the host, the supervisor and the other instances.
/// Game servers run a few threads; 512 leaves room for scripts around them.
pub const MAX_PROCESSES: u64 = 512;

/// Sets RLIMIT_NPROC (soft and hard) to [`MAX_PROCESSES`]: without
/// CAP_SYS_RESOURCE it can never be raised again. Allocation-free.
pub fn limit_processes() -> Result<(), ConfineError> {
    let lim = Rlimit {
        current: Some(MAX_PROCESSES),
        maximum: Some(MAX_PROCESSES),
    };
    checked(
        "limiting processes (RLIMIT_NPROC)",
        rustix::process::setrlimit(Resource::Nproc, lim),
    )
}

/// Sets no_new_privs: exec never grants privileges again (setuid bits and
/// file capabilities are ignored); also what lets an unprivileged process
/// install a seccomp filter.
pub fn no_new_privs() -> Result<(), ConfineError> {
    checked(
        "setting no_new_privs",
        rustix::thread::set_no_new_privs(true),
    )
}

/// Clears the ambient and inheritable sets (the uid change has already
/// emptied the permitted and effective ones). Allocation-free.
pub fn clear_inheritable_and_ambient() -> Result<(), ConfineError> {
    checked(
        "clearing ambient capabilities",
        rustix::thread::clear_ambient_capability_set(),
    )?;
    // capset(2), version 3, this thread, every set empty.
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    checked(
        "clearing capabilities",
        rustix::thread::set_capabilities(None, none),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile_for_this_machine() {
        let f = Filters::build().expect("filters build");
        assert_eq!(f.programs.len(), 2);
        assert!(
            f.programs[0].len() > DENIED.len(),
            "one check per denied call at least"
        );
    }

    /// In the forked child: `_exit(10 + k)` unless the call failed with `want`.
    fn expect(k: i32, rc: libc::c_long, want: i32) {
        // SAFETY: reading errno right after the call; _exit is async-signal-safe.
        unsafe {
            let errno = *libc::__errno_location();
            if rc != -1 || errno != want {
                libc::_exit(10 + k);
            }
        }
    }

    /// Forks; the child applies `f` (no root needed: installing them sets
    /// no_new_privs), runs `checks` (raw system calls and [`expect`]s, no
    /// allocation) and exits 0. Returns the child's exit code: 0, 10 + the
    /// failed check, or 100 when the filters did not apply.
    fn in_filtered_child(f: &Filters, checks: impl FnOnce()) -> i32 {
        // SAFETY: the child only installs the filters (without
        // allocating), makes raw system calls and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            let code = if f.apply().is_err() {
                100
            } else {
                checks();
                0
            };
            // SAFETY: _exit is async-signal-safe.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "the child died: {status}");
        libc::WEXITSTATUS(status)
    }

    /// Checks what each call answers under the instances' filters.
    /// Arguments are chosen so that a call that got through would fail
    /// with another errno (or do nothing harmful) instead.
    #[test]
    fn denied_calls_answer_eperm_and_clone3_enosys_while_others_work() {
        let f = Filters::build().expect("filters build");
        let null = std::ptr::null::<libc::c_void>();
        let code = in_filtered_child(&f, || {
            // SAFETY: raw syscalls with integer or null arguments.
            unsafe {
                use libc::{syscall as sc, EPERM};
                expect(0, sc(libc::SYS_mount, null, null, null, 0, null), EPERM);
                expect(
                    1,
                    sc(libc::SYS_ptrace, libc::PTRACE_TRACEME, 0, 0, 0),
                    EPERM,
                );
                expect(2, sc(libc::SYS_bpf, 0, null, 0), EPERM);
                expect(3, sc(libc::SYS_keyctl, 0, 0, 0, 0, 0), EPERM);
                expect(4, sc(libc::SYS_unshare, libc::CLONE_NEWUSER), EPERM);
                expect(5, sc(libc::SYS_perf_event_open, null, 0, -1, -1, 0), EPERM);
                expect(6, sc(libc::SYS_finit_module, -1, null, 0), EPERM);
                expect(7, sc(libc::SYS_setns, -1, 0), EPERM);
                // NEWUSER with CLONE_FS is invalid (EINVAL if it got
                // through): never an actual fork.
                let flags = (libc::CLONE_NEWUSER | libc::CLONE_FS | libc::SIGCHLD) as libc::c_ulong;
                expect(8, sc(libc::SYS_clone, flags, 0, 0, 0, 0), EPERM);
                expect(9, sc(libc::SYS_clone3, null, 0), libc::ENOSYS);
                // Not denied: a bad descriptor is still EBADF.
                expect(10, sc(libc::SYS_close, -1), libc::EBADF);
            }
        });
        assert_eq!(code, 0, "check {} failed (100: no filter)", code - 10);
    }

    /// The decoder's filter: no file opened, no socket made, no program
    /// run, no process signalled (not even itself, which any process may);
    /// its socket still answers.
    #[test]
    fn the_decoder_opens_no_file_makes_no_socket_runs_nothing_and_signals_no_one() {
        let f = Filters::for_decoder().expect("filters build");
        let (a, b) = std::os::unix::net::UnixDatagram::pair().unwrap();
        use std::os::fd::AsRawFd;
        let fa = a.as_raw_fd();
        let path = c"/etc/hostname";
        let argv = [std::ptr::null::<libc::c_char>()];
        let code = in_filtered_child(&f, || {
            // SAFETY: raw syscalls with integer, constant or null
            // arguments; _exit.
            unsafe {
                use libc::{syscall as sc, EPERM};
                expect(
                    0,
                    sc(libc::SYS_openat, libc::AT_FDCWD, path.as_ptr(), 0),
                    EPERM,
                );
                expect(
                    1,
                    sc(libc::SYS_socket, libc::AF_INET, libc::SOCK_DGRAM, 0),
                    EPERM,
                );
                expect(
                    2,
                    sc(
                        libc::SYS_execve,
                        path.as_ptr(),
                        argv.as_ptr(),
                        argv.as_ptr(),
                    ),
                    EPERM,
                );
                expect(3, sc(libc::SYS_kill, libc::getpid(), 0), EPERM);
                expect(
                    4,
                    sc(libc::SYS_connect, fa, std::ptr::null::<libc::c_void>(), 0),
                    EPERM,
                );
                // Its socket still works.
                let byte = [7u8];
                if libc::send(fa, byte.as_ptr().cast(), 1, 0) != 1 {
                    libc::_exit(20);
                }
            }
        });
        assert_eq!(
            code,
            0,
            "check {} failed (100: no filter, 20: its socket)",
            code - 10
        );
        let mut got = [0u8; 1];
        assert_eq!(b.recv(&mut got).unwrap(), 1);
    }
}
