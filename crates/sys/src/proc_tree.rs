//! The threads of process trees in `/proc`, walked within bounds: a
//! process, its threads (`/proc/PID/task/TID`) and its descendants (each
//! thread's `children` file). The run-delay sampler ([`crate::schedstat`])
//! and the CPU-time sampler ([`crate::task_stat`]) read the files of the
//! threads this walk visits.
//!
//! Everything here may be written by processes we do not trust: reads are
//! capped ([`read_capped`]), a tree is cut at [`MAX_PROCESSES_PER_ROOT`]
//! processes and [`MAX_THREADS_PER_ROOT`] threads, and a loop in the
//! `children` files (possible in a fake tree, or with reused PIDs) is read
//! once.

use std::collections::{HashSet, VecDeque};
use std::io::Read;
use std::path::Path;

use crate::proc_memory::child_pids;

/// At most this many processes are read per root pid (the root included).
pub const MAX_PROCESSES_PER_ROOT: usize = 64;
/// At most this many threads are read per root pid, over all its processes.
pub const MAX_THREADS_PER_ROOT: usize = 256;
/// At most this many bytes are read of one `/proc` file.
pub const MAX_READ_BYTES: u64 = 4096;

/// Calls `visit(pid, task_dir)` for every thread of `root`'s tree (the
/// process and its descendants, breadth first) under `proc_root`, skipping
/// processes already in `visited` (read from an earlier root) and adding
/// those it reads. `task_dir` is `proc_root/PID/task/TID`.
pub fn visit_tree_threads(
    proc_root: &Path,
    root: u32,
    visited: &mut HashSet<u32>,
    mut visit: impl FnMut(u32, u32, &Path),
) {
    let mut todo = VecDeque::from([root]);
    let (mut processes, mut threads) = (0, 0);
    while let Some(pid) = todo.pop_front() {
        if processes >= MAX_PROCESSES_PER_ROOT {
            return;
        }
        if !visited.insert(pid) {
            continue;
        }
        processes += 1;
        let task_dir = proc_root.join(pid.to_string()).join("task");
        let Ok(tasks) = std::fs::read_dir(&task_dir) else {
            continue; // Gone (or never was).
        };
        for entry in tasks.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if threads >= MAX_THREADS_PER_ROOT {
                return;
            }
            threads += 1;
            let task = task_dir.join(tid.to_string());
            visit(pid, tid, &task);
            for child in child_pids(&read_capped(&task.join("children")).unwrap_or_default()) {
                if processes + todo.len() < MAX_PROCESSES_PER_ROOT && !visited.contains(&child) {
                    todo.push_back(child);
                }
            }
        }
    }
}

/// At most [`MAX_READ_BYTES`] of a file, as text; a number cut at the cap
/// is dropped. `None` when it cannot be read or is not UTF-8.
pub fn read_capped(path: &Path) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_READ_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    if text.len() as u64 == MAX_READ_BYTES {
        let whole = text.rfind(|c: char| c.is_ascii_whitespace()).unwrap_or(0);
        text.truncate(whole);
    }
    Some(text)
}
