//! The bench keeps off the server cores: [`pin_process`] holds every
//! thread of this process (the main thread, and any already started) to
//! the load generator's CPUs at the start of a run, and the threads it
//! starts later (the guard's period runs in the main thread; the players,
//! the prober, the samplers) inherit that. So no thread of tickpack but
//! the servers' runs where the servers are measured, and none is counted
//! as theirs or as foreign load ([`crate::foreign`]). The servers get
//! their own cores when spawned (their cpuset, or their affinity:
//! `tickpack_host::spawn`), whatever this process is held to.

use std::collections::HashSet;

/// Pins every thread of this process to `cpus`: the calling one, then each
/// in `/proc/self/task` (again until a pass finds no new one, at most a
/// few times). Fails on an empty or out-of-range list, or when a thread
/// cannot be pinned (a CPU outside this process's cpuset).
pub fn pin_process(cpus: &[usize]) -> Result<(), String> {
    tickpack_net::cpu::pin_current_thread(cpus).map_err(|e| e.to_string())?;
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // The pin above checked that every CPU is below CPU_SETSIZE.
        // SAFETY: `cpu < CPU_SETSIZE`, so CPU_SET stays inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    let mut done = HashSet::new();
    for _ in 0..4 {
        let tids: Vec<libc::pid_t> = std::fs::read_dir("/proc/self/task")
            .map_err(|e| format!("cannot list this process's threads: {e}"))?
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .filter(|tid| !done.contains(tid))
            .collect();
        if tids.is_empty() {
            return Ok(());
        }
        for tid in tids {
            // SAFETY: a thread id of this process (one that ended since is
            // ESRCH, ignored) and a valid cpu_set_t of the size passed.
            let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
            let err = std::io::Error::last_os_error();
            if rc != 0 && err.raw_os_error() != Some(libc::ESRCH) {
                return Err(format!("cannot pin thread {tid} to CPUs {cpus:?}: {err}"));
            }
            done.insert(tid);
        }
    }
    Ok(())
}

/// The CPUs thread `tid` of process `pid` may run on, from its
/// `Cpus_allowed_list` (`None` when gone or unreadable).
pub fn allowed_cpus(pid: u32, tid: u32) -> Option<Vec<usize>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    tickpack_sys::parse_cpu_list(list.trim(), None).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_of_the_process_is_pinned_and_later_ones_inherit() {
        // In a child process: pinning the test harness itself would hold
        // the other tests to one CPU.
        if std::env::var_os("TICKPACK_PIN_TEST_CHILD").is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "pin::tests::every_thread_of_the_process_is_pinned_and_later_ones_inherit",
                    "--nocapture",
                ])
                .env("TICKPACK_PIN_TEST_CHILD", "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "{text}{}",
                String::from_utf8_lossy(&out.stdout)
            );
            return;
        }
        let me = std::process::id();
        let (started, wait) = std::sync::mpsc::channel::<u32>();
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let early = std::thread::spawn(move || {
            // SAFETY: gettid takes no argument and cannot fail.
            started.send(unsafe { libc::gettid() } as u32).unwrap();
            hold.recv().ok();
        });
        let early_tid = wait.recv().unwrap();
        pin_process(&[0]).unwrap();
        assert_eq!(
            allowed_cpus(me, early_tid),
            Some(vec![0]),
            "a running thread"
        );
        assert_eq!(allowed_cpus(me, me), Some(vec![0]), "the main thread");
        let late = std::thread::spawn(move || {
            // SAFETY: as above.
            allowed_cpus(me, unsafe { libc::gettid() } as u32)
        });
        assert_eq!(
            late.join().unwrap(),
            Some(vec![0]),
            "a thread started later"
        );
        release.send(()).unwrap();
        early.join().unwrap();
        assert!(pin_process(&[]).is_err());
    }
}
