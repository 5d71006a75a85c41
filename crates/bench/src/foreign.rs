//! Foreign load: the share of a core that processes other than the
//! servers and tickpack used during a step's measured window (a package
//! manager, a backup, another benchmark). Left in the servers' figures it
//! would pass for their CPU use; the step is run again instead, like a
//! step with hypervisor steal (see [`crate::ladder`]).
//!
//! Like is compared with like, both exact to the nanosecond (the kernel's
//! `sum_exec_runtime` clock), per core, over the measured window:
//!
//! - the core's task time ([`crate::cpu::CpuWindow`]: the root cpuacct
//!   cgroup's `usage_percpu`). Idle, interrupts taken while idle and steal
//!   are not task time: interrupts on a server core are mostly the
//!   servers' own packets, steal is judged on its own;
//! - less the run time of tickpack's own threads on that core: every
//!   thread of the servers' process trees and of the bench's own process
//!   tree (the bench, the host supervisor in it, the load generator and
//!   the query prober threads, and whatever it started below it, such as
//!   batch work), from `/proc/PID/task/TID/schedstat` (its first field,
//!   ns), read every ~100 ms; each thread's growth between two readings
//!   is put on the core it last ran on (`processor` in its `stat`);
//! - what is left, at least 0, as a share of the window's wall time:
//!   foreign.
//!
//! So foreign counts every other process and kernel threads (kworkers,
//! ksoftirqd). Its error: a thread of ours that moved between cores inside
//! 100 ms leaves part of its time on the wrong core (the servers are held
//! to the server cores by their cpuset and the bench to the load
//! generator's, [`crate::pin`], so this is mostly a server moving between
//! server cores); a thread of ours that exits between two readings leaves
//! its last interval to foreign; a running thread's counter lags by up to
//! a scheduler tick. A quiet machine reads well under 1 % of a core, a
//! process spinning on a server core what it takes (the tests below); the
//! default limit (5 %) is well above that. (Earlier versions took the
//! core's user and system time from `/proc/stat`, which the kernel counts
//! only at the timer tick: 5-12 % of "foreign load" on a quiet machine.)
//!
//! [`OwnCpu::record`] and [`foreign_percent`] are the accounting (no I/O,
//! unit-tested); [`OwnCpu::sample`], [`OwnCpu::start_window`] and
//! [`OwnCpu::end_window`] read `/proc` and the cpuacct root.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tickpack_sys::proc_tree::{read_capped, visit_tree_threads};
use tickpack_sys::{parse_schedstat, parse_task_stat};

use crate::cpu::{CpuReading, CpuWindow};

/// CPUs above this number are not tracked (a forged reading cannot make
/// the per-core table huge).
const MAX_CPU: usize = 4096;

/// Nanoseconds in one `USER_HZ` tick (`stat`'s unit), for a kernel that
/// keeps no schedstat.
const NS_PER_TICK: u64 = 10_000_000;

/// One reading of a thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTime {
    /// Run time so far, ns (schedstat; `stat`'s ticks when that reads 0).
    pub on_cpu_ns: u64,
    /// The CPU it last ran on.
    pub cpu: usize,
}

/// Reads every thread of each of `roots`' trees (within the bounds of
/// [`tickpack_sys::proc_tree`]), keyed by (pid, tid); processes in
/// `visited` are skipped and those read added. Gone threads and texts that
/// do not parse are left out.
pub fn read_threads(
    proc_root: &Path,
    roots: &[u32],
    visited: &mut HashSet<u32>,
) -> HashMap<(u32, u32), ThreadTime> {
    let mut now = HashMap::new();
    for &root in roots {
        visit_tree_threads(proc_root, root, visited, |pid, tid, task| {
            let Some(stat) = read_capped(&task.join("stat"))
                .as_deref()
                .and_then(parse_task_stat)
            else {
                return;
            };
            let exact = read_capped(&task.join("schedstat"))
                .as_deref()
                .and_then(parse_schedstat)
                .map_or(0, |s| s.on_cpu_ns);
            let on_cpu_ns = exact.max(stat.ticks.saturating_mul(NS_PER_TICK));
            now.insert(
                (pid, tid),
                ThreadTime {
                    on_cpu_ns,
                    cpu: stat.cpu,
                },
            );
        });
    }
    now
}

/// What a measured window read: every CPU's figures and the foreign load.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowFigures {
    /// Each CPU's busy, steal and task time.
    pub cpu: CpuWindow,
    /// Foreign load per CPU, % of the CPU ([`foreign_percent`]).
    pub foreign_percent: Vec<f64>,
    /// The servers' threads' run time, % of one core (may pass 100).
    pub servers_percent: f64,
}

/// The run time of tickpack's own threads (the servers' and the bench's),
/// per core, since the last [`reset`](Self::reset).
#[derive(Debug)]
pub struct OwnCpu {
    proc_root: PathBuf,
    last: HashMap<(u32, u32), ThreadTime>,
    /// A first reading was taken: a thread not seen before is new since.
    started: bool,
    per_cpu_ns: Vec<u64>,
    servers_ns: u64,
    /// The CPUs' counters as the window started.
    window_start: Option<CpuReading>,
}

impl OwnCpu {
    /// Reads `proc_root` (`/proc`, or a fake tree in tests).
    pub fn new(proc_root: &Path) -> OwnCpu {
        OwnCpu {
            proc_root: proc_root.to_path_buf(),
            last: HashMap::new(),
            started: false,
            per_cpu_ns: vec![],
            servers_ns: 0,
            window_start: None,
        }
    }

    /// Reads every thread of the servers' trees (`servers`, their root
    /// PIDs) and of tickpack's own (`tickpack`: the bench's PID; a process
    /// in both is the servers') and [`record`](Self::record)s them.
    pub fn sample(&mut self, servers: &[u32], tickpack: &[u32]) {
        let mut visited = HashSet::new();
        let s = read_threads(&self.proc_root, servers, &mut visited);
        let t = read_threads(&self.proc_root, tickpack, &mut visited);
        self.record(&s, &t);
    }

    /// Starts a measured window: a [`sample`](Self::sample), a
    /// [`reset`](Self::reset) and a reading of the CPUs' counters. Sample
    /// every ~100 ms until [`end_window`](Self::end_window).
    pub fn start_window(&mut self, servers: &[u32], tickpack: &[u32]) {
        self.sample(servers, tickpack);
        self.reset();
        self.window_start = Some(CpuReading::read());
    }

    /// Ends the window started last: a last sample, the CPUs' counters,
    /// and what the window read.
    pub fn end_window(&mut self, servers: &[u32], tickpack: &[u32]) -> WindowFigures {
        self.sample(servers, tickpack);
        let end = CpuReading::read();
        let start = self.window_start.take().unwrap_or_else(|| end.clone());
        let cpu = CpuWindow::between(&start, &end);
        WindowFigures {
            foreign_percent: foreign_percent(&cpu, &self.per_cpu_ns),
            servers_percent: if cpu.window_ns == 0 {
                0.0
            } else {
                100.0 * self.servers_ns as f64 / cpu.window_ns as f64
            },
            cpu,
        }
    }

    /// Adds each thread's run time since its last reading to the core it
    /// last ran on. The first call is a baseline. After it, a thread not
    /// read before (new, or a reused TID whose time went back) counts
    /// its whole time: it began since the last reading. Threads gone are
    /// dropped.
    pub fn record(
        &mut self,
        servers: &HashMap<(u32, u32), ThreadTime>,
        tickpack: &HashMap<(u32, u32), ThreadTime>,
    ) {
        let mut now = HashMap::with_capacity(servers.len() + tickpack.len());
        for (map, is_server) in [(servers, true), (tickpack, false)] {
            for (&key, &t) in map {
                if now.insert(key, t).is_some() || t.cpu >= MAX_CPU {
                    continue;
                }
                let grew = match self.last.get(&key) {
                    Some(prev) => t
                        .on_cpu_ns
                        .checked_sub(prev.on_cpu_ns)
                        .unwrap_or(t.on_cpu_ns),
                    None if self.started => t.on_cpu_ns,
                    None => 0,
                };
                if self.per_cpu_ns.len() <= t.cpu {
                    self.per_cpu_ns.resize(t.cpu + 1, 0);
                }
                self.per_cpu_ns[t.cpu] = self.per_cpu_ns[t.cpu].saturating_add(grew);
                if is_server {
                    self.servers_ns = self.servers_ns.saturating_add(grew);
                }
            }
        }
        self.last = now;
        self.started = true;
    }

    /// Clears the totals; keeps the last readings (the next sample
    /// measures from them).
    pub fn reset(&mut self) {
        self.per_cpu_ns.clear();
        self.servers_ns = 0;
    }

    /// Our threads' run time per core since the reset, ns, indexed by CPU
    /// number.
    pub fn per_cpu_ns(&self) -> &[u64] {
        &self.per_cpu_ns
    }

    /// The servers' threads' run time since the reset, ns.
    pub fn servers_ns(&self) -> u64 {
        self.servers_ns
    }
}

/// Foreign load per CPU over a window, given our threads' run time per CPU
/// over the same window (ns): the CPU's task time less ours, at least 0,
/// in % of the window, rounded to 0.1. Indexed by CPU number like the
/// window's CPUs.
pub fn foreign_percent(window: &CpuWindow, own_ns: &[u64]) -> Vec<f64> {
    window
        .task_ns
        .iter()
        .enumerate()
        .map(|(i, &task)| window.percent(task.saturating_sub(own_ns.get(i).copied().unwrap_or(0))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    fn readings(v: &[(u32, u64, usize)]) -> HashMap<(u32, u32), ThreadTime> {
        v.iter()
            .map(|&(tid, on_cpu_ns, cpu)| ((1, tid), ThreadTime { on_cpu_ns, cpu }))
            .collect()
    }

    #[test]
    fn our_threads_time_goes_to_the_core_they_ran_on() {
        let mut own = OwnCpu::new(Path::new("/proc"));
        // Baseline: nothing counted, however much the threads used before.
        own.record(&readings(&[(10, 500, 1)]), &readings(&[(20, 900, 0)]));
        assert!(own.per_cpu_ns().iter().all(|&t| t == 0));
        // Server thread 10 ran 40 ns on core 1; bench thread 20 ran 5 on
        // core 0; thread 21 is new (all of its 7 ns are since).
        own.record(
            &readings(&[(10, 540, 1)]),
            &readings(&[(20, 905, 0), (21, 7, 1)]),
        );
        assert_eq!(own.per_cpu_ns(), &[5, 47]);
        assert_eq!(own.servers_ns(), 40);
        // A reused TID (its time went back) counts its whole time; a gone
        // thread is dropped; a thread in both sets is the servers'.
        own.reset();
        own.record(
            &readings(&[(10, 3, 2), (20, 911, 0)]),
            &readings(&[(20, 911, 0)]),
        );
        assert_eq!(own.per_cpu_ns(), &[6, 0, 3]);
        assert_eq!(own.servers_ns(), 9);
        // A forged CPU number is ignored.
        own.record(&readings(&[(10, 50, usize::MAX)]), &HashMap::new());
        assert_eq!(own.per_cpu_ns().len(), 3);
    }

    #[test]
    fn foreign_is_the_cores_task_time_less_ours() {
        let window = CpuWindow {
            window_ns: 2_000_000_000,
            busy_ns: vec![900_000_000, 2_000_000_000, 0],
            steal_ns: vec![0; 3],
            task_ns: vec![800_000_000, 1_000_000_000, 0],
            exact_task_time: true,
        };
        // Ours: 500 ms on CPU 0, 1.2 s on CPU 1 (more than its task time:
        // foreign is never below 0).
        assert_eq!(
            foreign_percent(&window, &[500_000_000, 1_200_000_000]),
            vec![15.0, 0.0, 0.0]
        );
        // Nothing of ours: all its task time is foreign.
        assert_eq!(foreign_percent(&window, &[]), vec![40.0, 50.0, 0.0]);
        assert_eq!(
            foreign_percent(&CpuWindow::default(), &[]),
            Vec::<f64>::new()
        );
    }

    #[test]
    fn a_thread_reads_its_exact_run_time_and_cpu() {
        let me = std::process::id();
        let spin_until = Instant::now() + Duration::from_millis(30);
        while Instant::now() < spin_until {}
        let t = read_threads(Path::new("/proc"), &[me], &mut HashSet::new());
        let main = t.get(&(me, me)).copied().unwrap_or_default();
        let mine = t.values().map(|t| t.on_cpu_ns).sum::<u64>();
        assert!(mine >= 25_000_000, "this process ran 30 ms: {t:?}");
        assert!(main.cpu < MAX_CPU);
    }

    /// The server core of the live tests (the last CPU) and the one the
    /// test's thread is pinned to (CPU 0); `None` on a 1-CPU machine.
    fn two_cores() -> Option<usize> {
        let cpus = crate::cpu::CpuTimes::read().0.len();
        if cpus < 2 {
            eprintln!("skipped: this machine has {cpus} CPU, the test needs a second");
            return None;
        }
        if let Err(e) = tickpack_net::cpu::pin_current_thread(&[0]) {
            eprintln!("skipped: cannot pin the test's thread to CPU 0: {e}");
            return None;
        }
        Some(cpus - 1)
    }

    /// Runs one measured window of `length` the way a step does: start,
    /// a sample every `period`, end. `tickpack` gives the roots counted as
    /// ours at each sample.
    fn window(
        length: Duration,
        period: Duration,
        tickpack: impl Fn() -> Vec<u32>,
    ) -> (OwnCpu, WindowFigures) {
        let mut own = OwnCpu::new(Path::new("/proc"));
        own.start_window(&[], &tickpack());
        let end = Instant::now() + length;
        while Instant::now() < end {
            std::thread::sleep(period.min(end.saturating_duration_since(Instant::now())));
            own.sample(&[], &tickpack());
        }
        let figures = own.end_window(&[], &tickpack());
        (own, figures)
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

        /// The spinning shell (the child of `timeout`), once it runs.
        fn spinning_pid(&self) -> Option<u32> {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let path = format!("/proc/{}/task/{}/children", self.0, self.0);
                let child = std::fs::read_to_string(path).unwrap_or_default();
                if let Some(pid) = child.split_whitespace().next().and_then(|p| p.parse().ok()) {
                    return Some(pid);
                }
                if Instant::now() > deadline {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    impl Drop for Spinner {
        fn drop(&mut self) {
            // `timeout` passes the signal on to the spinning shell.
            let _ = Command::new("kill").arg(self.0.to_string()).status();
        }
    }

    fn run_time_ns(pid: u32) -> u64 {
        read_capped(Path::new(&format!("/proc/{pid}/schedstat")))
            .as_deref()
            .and_then(parse_schedstat)
            .map_or(0, |s| s.on_cpu_ns)
    }

    #[test]
    fn a_cpu_hog_pinned_to_a_server_core_is_read_as_foreign_load() {
        let Some(core) = two_cores() else { return };
        let Some(spinner) = Spinner::start(core) else {
            eprintln!("skipped: could not start a spinner with taskset");
            return;
        };
        let hog = spinner.spinning_pid().expect("the spinner started");
        let me = std::process::id();
        let hog_before = run_time_ns(hog);
        let (_, figures) = window(Duration::from_secs(2), Duration::from_millis(100), || {
            vec![me]
        });
        let hog_percent = figures
            .cpu
            .percent(run_time_ns(hog).saturating_sub(hog_before));
        drop(spinner);
        let foreign = figures.foreign_percent[core];
        eprintln!("hog {hog_percent}% of CPU {core}, foreign {foreign}% ({figures:?})");
        // The hog ran all the window: the core was busy, and whatever ran
        // there beside it was foreign too (the test's thread is on CPU 0).
        assert!(
            foreign > 50.0,
            "the hog is foreign load on CPU {core}: {figures:?}"
        );
        assert!(
            foreign + 1.0 >= hog_percent,
            "foreign load ({foreign}%) is at least what the hog took ({hog_percent}%)"
        );
    }

    /// Every process on the machine now (kernel threads included).
    fn every_pid() -> Vec<u32> {
        std::fs::read_dir("/proc")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Tasks (processes and threads) started on the machine since boot:
    /// `processes` in `/proc/stat`.
    fn tasks_started() -> u64 {
        std::fs::read_to_string("/proc/stat")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("processes ")?.trim().parse().ok())
            .unwrap_or(0)
    }

    #[test]
    fn a_quiet_window_reads_under_one_percent_of_foreign_load() {
        let Some(core) = two_cores() else { return };
        // Other programs share a CI machine: a quiet one is made by
        // counting every process (and kernel thread) on it as ours, read
        // again at each sample. Nothing foreign is left: what the window
        // reads is the method's own error. A task that starts and ends
        // between two samples escapes every count (a compiler's), so only
        // a window in which no task started is judged: up to 10 tries.
        for _ in 0..10 {
            let before = tasks_started();
            let (own, figures) =
                window(Duration::from_secs(1), Duration::from_millis(20), every_pid);
            let started = tasks_started().saturating_sub(before);
            if !figures.cpu.exact_task_time {
                eprintln!("skipped: no cpuacct root (cgroup v2 only), the task time is not exact");
                return;
            }
            let foreign = figures.foreign_percent[core];
            let task: u64 = figures.cpu.task_ns.iter().sum();
            let ours: u64 = own.per_cpu_ns().iter().sum();
            let residual = figures.cpu.percent(task.saturating_sub(ours));
            eprintln!(
                "{started} tasks started; foreign {foreign}% of CPU {core}; the whole \
                 machine's task time less every thread's: {residual}% of a core"
            );
            if started > 0 {
                continue;
            }
            assert!(
                foreign < 1.0,
                "a quiet CPU {core} reads under 1 %: {figures:?}"
            );
            assert!(
                residual < 1.0,
                "a quiet machine reads under 1 % of a core: {figures:?}"
            );
            return;
        }
        eprintln!("skipped: tasks started on this machine in every window of 1 s (not quiet)");
    }
}
