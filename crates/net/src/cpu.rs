//! CPUs, affinity and per-thread CPU accounting.
//!
//! Placement decides which servers share a core, so it needs to parse CPU
//! lists the way Linux prints them (`0-3,8`), pin threads, and measure how much
//! CPU a loop really used (not how long it took).

use std::io;

use crate::clock::clock_ns;
use crate::NetError;

/// Highest CPU number + 1 that `cpu_set_t` can hold.
const MAX_CPUS: usize = libc::CPU_SETSIZE as usize;

/// Parses a Linux CPU list such as `"0-2,5"` into sorted, distinct CPU numbers.
///
/// Accepts single CPUs and inclusive ranges separated by commas, with spaces
/// around items allowed. Rejects empty lists and items, reversed ranges,
/// non-numbers and CPUs at or above `CPU_SETSIZE` (1024), naming the bad item.
/// (The rules are [`tickpack_sys::parse_cpu_list`]'s; this adds the limit of
/// `cpu_set_t`.)
pub fn parse_cpu_list(input: &str) -> Result<Vec<usize>, NetError> {
    tickpack_sys::parse_cpu_list(input, Some(MAX_CPUS)).map_err(|e| NetError::CpuList {
        input: input.to_owned(),
        reason: e.to_string(),
    })
}

/// Pins the calling thread to `cpus` with `sched_setaffinity`.
///
/// Fails if the list is empty, holds a CPU at or above 1024, or names no CPU
/// this process may run on (e.g. outside its cgroup's cpuset).
pub fn pin_current_thread(cpus: &[usize]) -> Result<(), NetError> {
    let fail = |source: io::Error| NetError::Pin {
        cpus: cpus.to_vec(),
        source,
    };
    if cpus.is_empty() {
        return Err(fail(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty CPU list",
        )));
    }
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= MAX_CPUS {
            return Err(fail(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is out of range (max {})", MAX_CPUS - 1),
            )));
        }
        // SAFETY: `cpu < CPU_SETSIZE` was checked above, so CPU_SET stays in bounds.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 means the calling thread; `set` is a valid cpu_set_t of the
    // size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(fail(io::Error::last_os_error()));
    }
    Ok(())
}

/// The CPUs the calling thread may run on (`sched_getaffinity`).
pub fn allowed_cpus() -> Result<Vec<usize>, NetError> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 means the calling thread; `set` is writable and of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(NetError::Pin {
            cpus: Vec::new(),
            source: io::Error::last_os_error(),
        });
    }
    // SAFETY: `cpu < CPU_SETSIZE`, so CPU_ISSET reads inside `set`.
    Ok((0..MAX_CPUS)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// The CPUs the kernel has online, from `/sys/devices/system/cpu/online`.
///
/// Falls back to [`allowed_cpus`], then to `[0]`, so callers always get a
/// non-empty list.
pub fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(s.trim()).ok())
        .or_else(|| allowed_cpus().ok())
        .filter(|cpus| !cpus.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// CPU time used by the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`), ns.
pub fn thread_cpu_time_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time used by the whole process so far (`CLOCK_PROCESS_CPUTIME_ID`), ns.
pub fn process_cpu_time_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Sets the calling thread's timer slack (`prctl(PR_SET_TIMERSLACK)`).
///
/// The kernel may fire a sleeping thread's timer up to this late to batch
/// wake-ups; the default is 50 µs, which is most of the lateness a plain sleep
/// shows. The setting is per thread and inherited by threads it spawns later.
/// `0` restores the thread's default.
pub fn set_timer_slack_ns(ns: u64) -> Result<(), NetError> {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return Err(NetError::last_os("prctl(PR_SET_TIMERSLACK)"));
    }
    Ok(())
}

/// The calling thread's current timer slack in ns (`prctl(PR_GET_TIMERSLACK)`).
pub fn timer_slack_ns() -> u64 {
    // SAFETY: PR_GET_TIMERSLACK takes no argument and returns the value.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    rc.max(0) as u64
}

/// Peak resident set size of this process in bytes (`getrusage` `ru_maxrss`).
pub fn max_rss_bytes() -> u64 {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_SELF cannot fail.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return 0;
    }
    // Linux reports kilobytes.
    usage.ru_maxrss.max(0) as u64 * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_linux_cpu_lists() {
        assert_eq!(parse_cpu_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse_cpu_list("3").unwrap(), vec![3]);
        assert_eq!(parse_cpu_list(" 5, 1-2 ,2").unwrap(), vec![1, 2, 5]);
        assert_eq!(parse_cpu_list("7-7").unwrap(), vec![7]);
    }

    #[test]
    fn rejects_bad_cpu_lists_naming_the_problem() {
        for (input, needle) in [
            ("", "empty"),
            ("1,,2", "empty item"),
            ("1,", "empty item"),
            ("a", "\"a\" is not a CPU number"),
            ("3-1", "backwards"),
            ("0-", "\"\" is not a CPU number"),
            ("-1", "\"\" is not a CPU number"),
            ("4096", "out of range"),
            ("0-2:2", "not a CPU number"),
        ] {
            let msg = parse_cpu_list(input).unwrap_err().to_string();
            assert!(msg.contains(needle), "{input:?}: {msg:?} lacks {needle:?}");
            assert!(
                msg.contains(&format!("{input:?}")),
                "{msg:?} does not quote the input"
            );
        }
    }

    #[test]
    fn pinning_restricts_where_the_thread_runs() {
        let first = allowed_cpus().unwrap()[0];
        // Runs on a test thread of its own, which ends with the test.
        pin_current_thread(&[first]).unwrap();
        assert_eq!(allowed_cpus().unwrap(), vec![first]);
        let err = pin_current_thread(&[MAX_CPUS + 1]).unwrap_err();
        let cause = std::error::Error::source(&err)
            .map(|c| c.to_string())
            .unwrap_or_default();
        assert!(err.to_string().contains("[1025]"), "{err}");
        assert!(cause.contains("out of range"), "{cause}");
        assert!(pin_current_thread(&[]).is_err());
    }

    #[test]
    fn online_cpus_is_never_empty() {
        let cpus = online_cpus();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn timer_slack_is_per_thread() {
        std::thread::spawn(|| {
            set_timer_slack_ns(1).unwrap();
            assert_eq!(timer_slack_ns(), 1);
        })
        .join()
        .unwrap();
        // The spawning thread keeps its own slack.
        assert_ne!(timer_slack_ns(), 1);
    }

    #[test]
    fn cpu_time_counts_work_not_sleep() {
        let t0 = thread_cpu_time_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let slept = thread_cpu_time_ns() - t0;
        assert!(slept < 10_000_000, "sleeping 20 ms cost {slept} ns of CPU");
        // Spin until this thread has used 1 ms of CPU, not for a wall time:
        // on a loaded machine a 5 ms spin may get less than 1 ms of CPU.
        // Bounded: if CPU time never counted, give up after 10 s.
        let p0 = process_cpu_time_ns();
        let t1 = thread_cpu_time_ns();
        let give_up = crate::now_ns() + 10_000_000_000;
        while thread_cpu_time_ns() - t1 < 1_000_000 && crate::now_ns() < give_up {
            std::hint::spin_loop();
        }
        assert!(
            thread_cpu_time_ns() - t1 >= 1_000_000,
            "10 s of spinning counted less than 1 ms of thread CPU time"
        );
        assert!(
            process_cpu_time_ns() - p0 >= 1_000_000,
            "the process's CPU time includes its threads'"
        );
        assert!(max_rss_bytes() > 0);
    }
}
