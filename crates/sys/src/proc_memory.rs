//! Peak resident memory of a process tree from `/proc`: the kernel's
//! high-water mark `VmHWM` of `/proc/PID/status`, summed over the process
//! and its descendants (`/proc/PID/task/TID/children`). The bench records
//! it per server so a Kubernetes memory request can be sized from it.

/// The `VmHWM:` line of a `/proc/PID/status` text, in bytes (the kernel
/// writes kB). `None` when the line is missing (a kernel thread, a zombie)
/// or does not parse.
pub fn vm_hwm_bytes(status: &str) -> Option<u64> {
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// The PIDs a `/proc/PID/task/TID/children` text lists.
pub fn child_pids(children: &str) -> Vec<u32> {
    children
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// The peak RSS of `pid` and every descendant, summed (each process's own
/// high-water mark: an upper bound of the tree's peak, as the peaks of two
/// processes need not coincide). At most 64 processes are visited. `None`
/// when `pid`'s own status cannot be read (it exited).
pub fn tree_peak_rss_bytes(pid: u32) -> Option<u64> {
    let read = |p: String| std::fs::read_to_string(p).ok();
    let mut total = vm_hwm_bytes(&read(format!("/proc/{pid}/status"))?).unwrap_or(0);
    let mut todo = vec![pid];
    let mut seen = 1;
    while let Some(p) = todo.pop() {
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten();
        for t in tasks.flatten() {
            let path = t.path().join("children");
            for c in child_pids(&read(path.display().to_string()).unwrap_or_default()) {
                if seen >= 64 {
                    return Some(total);
                }
                seen += 1;
                total += read(format!("/proc/{c}/status"))
                    .and_then(|s| vm_hwm_bytes(&s))
                    .unwrap_or(0);
                todo.push(c);
            }
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_high_water_mark_is_read_in_bytes() {
        let status =
            "Name:\tioq3ded\nVmPeak:\t  200000 kB\nVmHWM:\t   51234 kB\nVmRSS:\t   40000 kB\n";
        assert_eq!(vm_hwm_bytes(status), Some(51_234 * 1024));
        assert_eq!(vm_hwm_bytes("Name:\tkthreadd\n"), None);
        assert_eq!(vm_hwm_bytes("VmHWM:\t  lots kB\n"), None);
    }

    #[test]
    fn children_lists_are_space_separated_pids() {
        assert_eq!(child_pids("12 345 \n"), vec![12, 345]);
        assert!(child_pids("").is_empty());
    }

    #[test]
    fn a_process_trees_peak_counts_its_children() {
        // Our own peak, not our tree's: a concurrent test's child counted
        // here and gone by the second reading made the tree look smaller
        // than ours plus the child's (a run of 2026-11-28 failed so).
        let own = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| vm_hwm_bytes(&s))
            .expect("our own status");
        assert!(own > 0);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = child.id();
        // Wait (bounded) until the child has exec'd and shows a peak: read
        // between fork and exec, its VmHWM was the test binary's copy, larger
        // than sleep's after the exec reset it (the fresh-clone run of
        // 2026-11-28 failed so).
        let mut child_peak = None;
        for _ in 0..200 {
            let exec_d = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "sleep");
            child_peak = std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| vm_hwm_bytes(&s))
                .filter(|&b| b > 0 && exec_d);
            if child_peak.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let with_child = tree_peak_rss_bytes(std::process::id());
        child.kill().ok();
        child.wait().ok();
        let child_peak = child_peak.expect("the child's VmHWM");
        // Our own peak only grows, so the tree's is at least ours plus the child's.
        assert!(with_child.unwrap() >= own + child_peak);
        assert_eq!(tree_peak_rss_bytes(u32::MAX), None);
    }
}
