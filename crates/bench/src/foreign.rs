//! Foreign load: the share of a core that processes other than the
//! servers and tickpack used during a step's measured window (a package
//! manager, a backup, another benchmark). Left in the servers' figures it
//! would pass for their CPU use; the step is run again instead, like a
//! step with hypervisor steal (see [`crate::ladder`]).
//!
//! What is counted, per core, over the measured window:
//!
//! - the core's task time, from `/proc/stat`: user, nice and system time
//!   (guest time is in user). Idle, iowait, interrupts (irq, softirq) and
//!   steal are not task time and are left out: interrupts on a server core
//!   are mostly the servers' own packets, steal is judged on its own;
//! - less the CPU time of tickpack's own threads on that core: every
//!   thread of the servers' process trees and of the bench's own process
//!   tree (the bench, the host supervisor in it, the load generator and
//!   the query prober threads, and whatever it started below it, such as
//!   batch work), from `/proc/PID/task/TID/stat` (`utime` + `stime`, in
//!   the same `USER_HZ` ticks), read every ~100 ms; each thread's growth
//!   between two readings is put on the core it last ran on (`processor`);
//! - what is left, at least 0, as a share of the core's time: foreign.
//!
//! So foreign counts every other process and kernel threads (kworkers,
//! and ksoftirqd where the kernel does not account interrupt time apart).
//! Its error: a thread of ours that moved between cores inside 100 ms
//! leaves part of its time on the wrong core (the servers and the load
//! generator are pinned, so this is mostly the bench's own light main
//! thread); a thread of ours that exits between two readings leaves its
//! last interval to foreign; `/proc/stat` counts a core's time by the
//! timer tick, the threads' times are exact, so a few ticks either way
//! over a window. Within about a percent of a core over a few seconds; the
//! default limit (5 %) is well above that.
//!
//! [`OwnCpu::record`] and [`foreign_percent`] are the accounting (no I/O,
//! unit-tested); [`OwnCpu::sample`] reads `/proc`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tickpack_sys::task_stat::read_trees;
use tickpack_sys::TaskCpu;

use crate::cpu::CpuTimes;

/// CPUs above this number are not tracked (a forged reading cannot make
/// the per-core table huge).
const MAX_CPU: usize = 4096;

/// The CPU time of tickpack's own threads (the servers' and the bench's),
/// per core, since the last [`reset`](Self::reset).
#[derive(Debug)]
pub struct OwnCpu {
    proc_root: PathBuf,
    last: HashMap<(u32, u32), TaskCpu>,
    /// A first reading was taken: a thread not seen before is new since.
    started: bool,
    per_cpu_ticks: Vec<u64>,
    servers_ticks: u64,
}

impl OwnCpu {
    /// Reads `proc_root` (`/proc`, or a fake tree in tests).
    pub fn new(proc_root: &Path) -> OwnCpu {
        OwnCpu {
            proc_root: proc_root.to_path_buf(),
            last: HashMap::new(),
            started: false,
            per_cpu_ticks: vec![],
            servers_ticks: 0,
        }
    }

    /// Reads every thread of the servers' trees (`servers`, their root
    /// PIDs) and of tickpack's own (`tickpack`: the bench's PID; a process
    /// in both is the servers') and [`record`](Self::record)s them.
    pub fn sample(&mut self, servers: &[u32], tickpack: &[u32]) {
        let mut visited = HashSet::new();
        let s = read_trees(&self.proc_root, servers, &mut visited);
        let t = read_trees(&self.proc_root, tickpack, &mut visited);
        self.record(&s, &t);
    }

    /// Adds each thread's CPU time since its last reading to the core it
    /// last ran on. The first call is a baseline. After it, a thread not
    /// read before (new, or a reused TID whose time went back) counts
    /// its whole time: it began since the last reading. Threads gone are
    /// dropped.
    pub fn record(
        &mut self,
        servers: &HashMap<(u32, u32), TaskCpu>,
        tickpack: &HashMap<(u32, u32), TaskCpu>,
    ) {
        let mut now = HashMap::with_capacity(servers.len() + tickpack.len());
        for (map, is_server) in [(servers, true), (tickpack, false)] {
            for (&key, &t) in map {
                if now.insert(key, t).is_some() || t.cpu >= MAX_CPU {
                    continue;
                }
                let grew = match self.last.get(&key) {
                    Some(prev) => t.ticks.checked_sub(prev.ticks).unwrap_or(t.ticks),
                    None if self.started => t.ticks,
                    None => 0,
                };
                if self.per_cpu_ticks.len() <= t.cpu {
                    self.per_cpu_ticks.resize(t.cpu + 1, 0);
                }
                self.per_cpu_ticks[t.cpu] = self.per_cpu_ticks[t.cpu].saturating_add(grew);
                if is_server {
                    self.servers_ticks = self.servers_ticks.saturating_add(grew);
                }
            }
        }
        self.last = now;
        self.started = true;
    }

    /// Clears the totals; keeps the last readings (the next sample
    /// measures from them).
    pub fn reset(&mut self) {
        self.per_cpu_ticks.clear();
        self.servers_ticks = 0;
    }

    /// Our threads' CPU time per core since the reset, ticks, indexed by
    /// CPU number.
    pub fn per_cpu_ticks(&self) -> &[u64] {
        &self.per_cpu_ticks
    }

    /// The servers' threads' CPU time since the reset, ticks.
    pub fn servers_ticks(&self) -> u64 {
        self.servers_ticks
    }
}

/// Foreign load per CPU between two reads of `/proc/stat` (`earlier`,
/// `later`), given our threads' ticks per CPU over the same window: the
/// CPU's task time less ours, at least 0, in % of the CPU's time, rounded
/// to 0.1. Indexed by CPU number like `later`.
pub fn foreign_percent(earlier: &CpuTimes, later: &CpuTimes, own_ticks: &[u64]) -> Vec<f64> {
    later
        .0
        .iter()
        .enumerate()
        .map(|(i, j1)| {
            let d = j1.since(&earlier.0.get(i).copied().unwrap_or_default());
            let own = own_ticks.get(i).copied().unwrap_or(0);
            let foreign = d.tasks().saturating_sub(own);
            if d.total == 0 {
                0.0
            } else {
                (1000.0 * foreign as f64 / d.total as f64).round() / 10.0
            }
        })
        .collect()
}

/// The mean length of the window between two reads of `/proc/stat` over
/// the CPUs, ticks (the base of "% of one core").
pub fn window_ticks(earlier: &CpuTimes, later: &CpuTimes) -> f64 {
    let n = later.0.len();
    if n == 0 {
        return 0.0;
    }
    let sum: u64 = later
        .0
        .iter()
        .enumerate()
        .map(|(i, j)| {
            j.since(&earlier.0.get(i).copied().unwrap_or_default())
                .total
        })
        .sum();
    sum as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    fn readings(v: &[(u32, u64, usize)]) -> HashMap<(u32, u32), TaskCpu> {
        v.iter()
            .map(|&(tid, ticks, cpu)| ((1, tid), TaskCpu { ticks, cpu }))
            .collect()
    }

    #[test]
    fn our_threads_time_goes_to_the_core_they_ran_on() {
        let mut own = OwnCpu::new(Path::new("/proc"));
        // Baseline: nothing counted, however much the threads used before.
        own.record(&readings(&[(10, 500, 1)]), &readings(&[(20, 900, 0)]));
        assert!(own.per_cpu_ticks().iter().all(|&t| t == 0));
        // Server thread 10 ran 40 ticks on core 1; bench thread 20 ran 5
        // on core 0; thread 21 is new (all of its 7 ticks are since).
        own.record(
            &readings(&[(10, 540, 1)]),
            &readings(&[(20, 905, 0), (21, 7, 1)]),
        );
        assert_eq!(own.per_cpu_ticks(), &[5, 47]);
        assert_eq!(own.servers_ticks(), 40);
        // A reused TID (its time went back) counts its whole time; a gone
        // thread is dropped; a thread in both sets is the servers'.
        own.reset();
        own.record(
            &readings(&[(10, 3, 2), (20, 911, 0)]),
            &readings(&[(20, 911, 0)]),
        );
        assert_eq!(own.per_cpu_ticks(), &[6, 0, 3]);
        assert_eq!(own.servers_ticks(), 9);
        // A forged CPU number is ignored.
        own.record(&readings(&[(10, 50, usize::MAX)]), &HashMap::new());
        assert_eq!(own.per_cpu_ticks().len(), 3);
    }

    #[test]
    fn foreign_is_the_cores_task_time_less_ours() {
        // CPU 0: 60 user + 20 system of 200; CPU 1: 100 user, 10 irq,
        // 20 softirq, 30 steal of 200; CPU 2 did not move.
        let a =
            CpuTimes::parse("cpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\ncpu2 5 0 0 5 0 0 0 0\n");
        let b = CpuTimes::parse(
            "cpu0 60 0 20 120 0 0 0 0\ncpu1 100 0 0 40 0 10 20 30\ncpu2 5 0 0 5 0 0 0 0\n",
        );
        // Ours: 50 ticks on CPU 0, 120 on CPU 1 (more than its task time:
        // foreign is never below 0).
        assert_eq!(foreign_percent(&a, &b, &[50, 120]), vec![15.0, 0.0, 0.0]);
        // Nothing of ours: every task tick is foreign; interrupts and
        // steal never are.
        assert_eq!(foreign_percent(&a, &b, &[]), vec![40.0, 50.0, 0.0]);
        assert_eq!(window_ticks(&a, &b), 400.0 / 3.0);
        assert_eq!(window_ticks(&a, &CpuTimes::default()), 0.0);
    }

    /// A process spinning on one CPU outside our process tree, started
    /// through `sh` (so it is not our child), ended by `timeout` after
    /// 20 s whatever happens, and killed by its PID on drop.
    struct Spinner(u32);

    impl Spinner {
        fn start(cpu: usize) -> Option<Spinner> {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "taskset -c {cpu} timeout 20 sh -c 'while :; do :; done' \
                     >/dev/null 2>&1 & echo $!"
                ))
                .output()
                .ok()?;
            let pid = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
            Some(Spinner(pid))
        }
    }

    impl Drop for Spinner {
        fn drop(&mut self) {
            // `timeout` passes the signal on to the spinning shell.
            let _ = Command::new("kill").arg(self.0.to_string()).status();
        }
    }

    #[test]
    fn a_process_spinning_on_a_core_is_foreign_load_there() {
        let cpus = CpuTimes::read().0.len();
        let cpu = cpus.saturating_sub(1);
        let Some(spinner) = Spinner::start(cpu) else {
            eprintln!("skipped: could not start a spinner with taskset");
            return;
        };
        // Wait (bounded) until it spins pinned: its own stat says its CPU.
        let deadline = Instant::now() + Duration::from_secs(5);
        let pinned = loop {
            let child =
                std::fs::read_to_string(format!("/proc/{}/task/{}/children", spinner.0, spinner.0))
                    .unwrap_or_default();
            if !child.trim().is_empty() || Instant::now() > deadline {
                break !child.trim().is_empty();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(pinned, "the spinner started");
        let me = std::process::id();
        let mut own = OwnCpu::new(Path::new("/proc"));
        own.sample(&[], &[me]);
        own.reset();
        let c0 = CpuTimes::read();
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(100));
            own.sample(&[], &[me]);
        }
        let c1 = CpuTimes::read();
        let foreign = foreign_percent(&c0, &c1, own.per_cpu_ticks());
        drop(spinner);
        assert!(
            foreign[cpu] > 0.0,
            "a process spinning on CPU {cpu} is foreign load there: {foreign:?}"
        );
    }
}
