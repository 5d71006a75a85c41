//! What every CPU did over a measured window, from the figures the kernel
//! keeps exactly ([`CpuReading`] at each edge, [`CpuWindow`] between two):
//!
//! - **task time**, nanoseconds each CPU ran tasks: the root cpuacct
//!   cgroup's `cpuacct.usage_percpu` (cgroup v1), the same clock as a
//!   thread's own run time (`/proc/PID/task/TID/schedstat`), so the two can
//!   be subtracted ([`crate::foreign`]). Where it cannot be read (cgroup v2
//!   only), the core's busy time less its steal and interrupt time;
//! - **busy time**: the window less the core's idle and iowait time. On a
//!   tickless kernel (`NO_HZ`, the common case) the kernel measures idle
//!   time exactly when a core goes idle and wakes; user and system time in
//!   `/proc/stat` are only sampled at the timer tick, and are not used;
//! - **steal**, from `/proc/stat` (the steal clock of the hypervisor).
//!
//! The window is the wall time between the two readings (monotonic clock),
//! not a sum of ticks. `/proc/stat` prints in `USER_HZ` (100 per second)
//! ticks, so its figures are exact to 10 ms a reading; `usage_percpu` to
//! the nanosecond.

use std::time::Instant;

use tickpack_sys::CpuJiffies;

/// Nanoseconds in one `USER_HZ` tick, the unit of `/proc/stat`: `USER_HZ`
/// is 100 on every Linux ABI (`sysconf(_SC_CLK_TCK)`).
const NS_PER_TICK: u64 = 10_000_000;

/// Where the root cpuacct cgroup's per-CPU task time is, by the mount
/// names cgroup v1 systems use.
const USAGE_PERCPU: [&str; 3] = [
    "/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu",
    "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage_percpu",
    "/sys/fs/cgroup/cpuacct,cpu/cpuacct.usage_percpu",
];

/// Cumulative jiffies per CPU from `/proc/stat`, indexed by CPU number.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuTimes(pub Vec<CpuJiffies>);

impl CpuTimes {
    /// Reads `/proc/stat`.
    pub fn read() -> CpuTimes {
        Self::parse(&std::fs::read_to_string("/proc/stat").unwrap_or_default())
    }

    /// The CPUs of a `/proc/stat` text.
    pub fn parse(text: &str) -> CpuTimes {
        CpuTimes(tickpack_sys::cpu_jiffies(text))
    }
}

/// The numbers of a `cpuacct.usage_percpu` text (nanoseconds per CPU, by
/// CPU number). `None` when a field is not a number or there is none.
pub fn parse_usage_percpu(text: &str) -> Option<Vec<u64>> {
    let v: Option<Vec<u64>> = text
        .split_ascii_whitespace()
        .map(|f| f.parse().ok())
        .collect();
    v.filter(|v| !v.is_empty())
}

/// Every CPU's task time so far, ns, from the first cpuacct root found.
fn read_usage_percpu() -> Option<Vec<u64>> {
    USAGE_PERCPU
        .iter()
        .find_map(|p| parse_usage_percpu(&std::fs::read_to_string(p).ok()?))
}

/// One reading of every CPU's counters, at one edge of a window.
#[derive(Debug, Clone)]
pub struct CpuReading {
    /// When it was read.
    pub at: Instant,
    /// `/proc/stat`.
    pub jiffies: CpuTimes,
    /// Each CPU's task time so far, ns (`None`: no cpuacct root).
    pub task_ns: Option<Vec<u64>>,
}

impl CpuReading {
    /// Reads this machine's counters now.
    pub fn read() -> CpuReading {
        let task_ns = read_usage_percpu();
        let jiffies = CpuTimes::read();
        CpuReading {
            at: Instant::now(),
            jiffies,
            task_ns,
        }
    }
}

/// What each CPU did between two [`CpuReading`]s, ns, indexed by CPU
/// number (the CPUs of the later `/proc/stat`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuWindow {
    /// The wall time between the readings.
    pub window_ns: u64,
    /// Not idle (steal and interrupts included).
    pub busy_ns: Vec<u64>,
    /// Taken by the hypervisor while the CPU had work.
    pub steal_ns: Vec<u64>,
    /// Running tasks.
    pub task_ns: Vec<u64>,
    /// `task_ns` is exact (cpuacct), not derived from `/proc/stat`.
    pub exact_task_time: bool,
}

impl CpuWindow {
    /// The window from `earlier` to `later`.
    pub fn between(earlier: &CpuReading, later: &CpuReading) -> CpuWindow {
        let window_ns =
            u64::try_from(later.at.saturating_duration_since(earlier.at).as_nanos()).unwrap_or(0);
        let exact = match (&earlier.task_ns, &later.task_ns) {
            (Some(a), Some(b)) if b.len() >= later.jiffies.0.len() => Some((a, b)),
            _ => None,
        };
        let mut w = CpuWindow {
            window_ns,
            exact_task_time: exact.is_some(),
            ..CpuWindow::default()
        };
        for (i, j1) in later.jiffies.0.iter().enumerate() {
            let d = j1.since(&earlier.jiffies.0.get(i).copied().unwrap_or_default());
            let busy = window_ns.saturating_sub(d.idle.saturating_mul(NS_PER_TICK));
            let steal = d.steal.saturating_mul(NS_PER_TICK).min(busy);
            let task = match exact {
                Some((a, b)) => b[i].saturating_sub(a.get(i).copied().unwrap_or(0)),
                None => busy
                    .saturating_sub(steal)
                    .saturating_sub(d.interrupts.saturating_mul(NS_PER_TICK)),
            };
            w.busy_ns.push(busy);
            w.steal_ns.push(steal);
            w.task_ns.push(task.min(window_ns));
        }
        w
    }

    /// `ns` as a share of the window, percent rounded to 0.1 (0 for an
    /// empty window).
    pub fn percent(&self, ns: u64) -> f64 {
        if self.window_ns == 0 {
            0.0
        } else {
            (1000.0 * ns as f64 / self.window_ns as f64).round() / 10.0
        }
    }

    /// Busy percent per CPU (steal counts as busy: the CPU was not idle).
    pub fn busy_percent(&self) -> Vec<f64> {
        self.busy_ns.iter().map(|&n| self.percent(n)).collect()
    }

    /// Steal percent per CPU: the time the hypervisor ran other guests
    /// while the CPU had work (0 on bare metal).
    pub fn steal_percent(&self) -> Vec<f64> {
        self.steal_ns.iter().map(|&n| self.percent(n)).collect()
    }
}

/// Mean of `per_cpu` over `cpus` (all CPUs when empty).
pub fn mean_over(per_cpu: &[f64], cpus: &[usize]) -> f64 {
    let pick: Vec<f64> = if cpus.is_empty() {
        per_cpu.to_vec()
    } else {
        cpus.iter()
            .filter_map(|&c| per_cpu.get(c).copied())
            .collect()
    };
    if pick.is_empty() {
        0.0
    } else {
        pick.iter().sum::<f64>() / pick.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reading(at: Instant, stat: &str, task_ns: Option<Vec<u64>>) -> CpuReading {
        CpuReading {
            at,
            jiffies: CpuTimes::parse(stat),
            task_ns,
        }
    }

    #[test]
    fn busy_steal_and_task_time_per_cpu_over_the_wall_window() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(2);
        // 2 s = 200 ticks. CPU 0: 100 ticks idle, 20 iowait; CPU 1: 40
        // idle, 20 steal, 10 softirq (user and system, tick-sampled, are
        // not read at all).
        let stat0 = "cpu  1 2 3 4\ncpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n";
        let stat1 = "cpu0 999 0 0 100 20 0 0 0\ncpu1 1 0 0 40 0 0 10 20\n";
        let exact = CpuWindow::between(
            &reading(t0, stat0, Some(vec![5, 1_000])),
            &reading(t1, stat1, Some(vec![700_000_005, 1_500_001_000, 9])),
        );
        assert_eq!(exact.window_ns, 2_000_000_000);
        assert_eq!(exact.busy_percent(), vec![40.0, 80.0]);
        assert_eq!(exact.steal_percent(), vec![0.0, 10.0]);
        assert_eq!(exact.task_ns, vec![700_000_000, 1_500_000_000]);
        assert!(exact.exact_task_time);
        // Without cpuacct: busy less steal and interrupts.
        let derived = CpuWindow::between(&reading(t0, stat0, None), &reading(t1, stat1, None));
        assert_eq!(derived.task_ns, vec![800_000_000, 1_300_000_000]);
        assert!(!derived.exact_task_time);
        assert_eq!(derived.percent(1_300_000_000), 65.0);
        // An empty window reads 0, not NaN.
        let none = CpuWindow::between(&reading(t1, stat1, None), &reading(t0, stat1, None));
        assert_eq!(none.busy_percent(), vec![0.0, 0.0]);
        assert_eq!(mean_over(&exact.busy_percent(), &[1]), 80.0);
        assert_eq!(mean_over(&exact.busy_percent(), &[]), 60.0);
    }

    #[test]
    fn usage_percpu_texts() {
        assert_eq!(parse_usage_percpu("12 34 \n"), Some(vec![12, 34]));
        assert_eq!(parse_usage_percpu(""), None);
        assert_eq!(parse_usage_percpu("12 x"), None);
        assert!(
            !CpuTimes::read().0.is_empty(),
            "this machine's /proc/stat has CPUs"
        );
    }
}
