//! CPU time of threads from `/proc/PID/task/TID/stat`: how much CPU a
//! thread used (`utime` + `stime`, in `USER_HZ` ticks like `/proc/stat`)
//! and the CPU it last ran on (`processor`). The bench reads it for its
//! own threads and the servers' to tell their CPU time on a core from
//! everyone else's ([`crate::proc_stat`] gives the core's whole).
//!
//! - [`parse_task_stat`]: the text, parsed (never panics: a process picks
//!   its own name, which sits in the text between parentheses and may hold
//!   spaces and parentheses itself, so the fields are counted from the last
//!   `)`).
//! - [`read_trees`]: every thread of a set of process trees, read within
//!   the bounds of [`crate::proc_tree`].

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::proc_tree::{read_capped, visit_tree_threads};

/// One reading of a thread's `stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskCpu {
    /// CPU time used so far, user and system, `USER_HZ` ticks.
    pub ticks: u64,
    /// The CPU the thread last ran on.
    pub cpu: usize,
}

/// `utime`, `stime` and `processor` of a `/proc/PID/task/TID/stat` text
/// (fields 14, 15 and 39 of `proc(5)`). `None` when the text has no `)`,
/// too few fields after it, or one of the three is not a number.
pub fn parse_task_stat(text: &str) -> Option<TaskCpu> {
    let (_, rest) = text.rsplit_once(')')?;
    // Fields from the 3rd (state) on; field n is at index n - 3.
    let f: Vec<&str> = rest.split_ascii_whitespace().take(37).collect();
    let num = |i: usize| f.get(i).and_then(|t| t.parse::<u64>().ok());
    let ticks = num(11)?.checked_add(num(12)?)?;
    let cpu = usize::try_from(num(36)?).ok()?;
    Some(TaskCpu { ticks, cpu })
}

/// Reads the `stat` of every thread of each of `roots`' trees (the
/// process and its descendants, within the bounds of
/// [`crate::proc_tree`]), keyed by (pid, tid). Processes in `visited`
/// are skipped and those read are added, so a second call with other
/// roots does not read them twice. Gone processes and texts that do not
/// parse are left out.
pub fn read_trees(
    proc_root: &Path,
    roots: &[u32],
    visited: &mut HashSet<u32>,
) -> HashMap<(u32, u32), TaskCpu> {
    let mut now = HashMap::new();
    for &root in roots {
        visit_tree_threads(proc_root, root, visited, |pid, tid, task| {
            if let Some(t) = read_capped(&task.join("stat"))
                .as_deref()
                .and_then(parse_task_stat)
            {
                now.insert((pid, tid), t);
            }
        });
    }
    now
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stat text with the given name, utime, stime and processor.
    fn stat(name: &str, utime: u64, stime: u64, cpu: usize) -> String {
        format!(
            "4242 ({name}) R 1 4242 4242 0 -1 4194560 100 0 0 0 {utime} {stime} 0 0 20 0 1 0 \
             12345 1000000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0\n"
        )
    }

    #[test]
    fn a_stat_text_gives_the_threads_cpu_time_and_its_last_cpu() {
        assert_eq!(
            parse_task_stat(&stat("spin", 120, 30, 3)),
            Some(TaskCpu { ticks: 150, cpu: 3 })
        );
        // A name with spaces and parentheses cannot shift the fields.
        assert_eq!(
            parse_task_stat(&stat("a) R 1 2 3 (b", 7, 0, 1)),
            Some(TaskCpu { ticks: 7, cpu: 1 })
        );
    }

    #[test]
    fn garbage_and_short_stat_texts_do_not_parse() {
        assert_eq!(parse_task_stat(""), None);
        assert_eq!(parse_task_stat("4242 (x R 1 2 3"), None);
        assert_eq!(parse_task_stat("4242 (x) R 1 2 3 4 5 6 7 8 9 10 11"), None);
        let bad = stat("x", 1, 2, 3).replace(" 1 2 0 0 20", " 1 -2 0 0 20");
        assert_eq!(parse_task_stat(&bad), None);
        let huge = stat("x", u64::MAX, 1, 0);
        assert_eq!(parse_task_stat(&huge), None, "the sum overflows");
    }

    #[test]
    fn random_texts_never_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 300) as usize;
            let text: String = (0..len)
                .map(|i| b" ()0123456789R\n-x"[((x >> (i % 60)) % 17) as usize] as char)
                .collect();
            let _ = parse_task_stat(&text);
        }
    }

    #[test]
    fn this_process_reads_itself() {
        let me = std::process::id();
        let mut visited = HashSet::new();
        let now = read_trees(Path::new("/proc"), &[me], &mut visited);
        assert!(now.contains_key(&(me, me)), "the main thread");
        assert!(visited.contains(&me));
        // Read once: a second call skips what the first read.
        assert!(read_trees(Path::new("/proc"), &[me], &mut visited).is_empty());
    }
}
