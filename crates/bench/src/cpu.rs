//! Per-CPU busy and steal time from /proc/stat, sampled at the edges of a
//! measurement.

use tickpack_sys::CpuJiffies;

/// Cumulative jiffies per CPU, indexed by CPU number.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuTimes(pub Vec<CpuJiffies>);

impl CpuTimes {
    /// Reads `/proc/stat` (or the given text, for tests).
    pub fn read() -> CpuTimes {
        Self::parse(&std::fs::read_to_string("/proc/stat").unwrap_or_default())
    }

    pub fn parse(text: &str) -> CpuTimes {
        CpuTimes(tickpack_sys::cpu_jiffies(text))
    }

    /// Busy percent per CPU between `self` (earlier) and `later` (steal
    /// counts as busy: the CPU was not idle).
    pub fn busy_percent(&self, later: &CpuTimes) -> Vec<f64> {
        self.percent(later, |d| d.total.saturating_sub(d.idle))
    }

    /// Steal percent per CPU between `self` and `later`: the time the
    /// hypervisor ran other guests while the CPU had work (0 on bare metal).
    pub fn steal_percent(&self, later: &CpuTimes) -> Vec<f64> {
        self.percent(later, |j| j.steal)
    }

    /// `part` of each CPU's jiffies between the two reads, as a share of
    /// its time, percent rounded to 0.1.
    fn percent(&self, later: &CpuTimes, part: impl Fn(&CpuJiffies) -> u64) -> Vec<f64> {
        later
            .0
            .iter()
            .enumerate()
            .map(|(i, j1)| {
                let d = j1.since(&self.0.get(i).copied().unwrap_or_default());
                if d.total == 0 {
                    0.0
                } else {
                    (100.0 * part(&d) as f64 / d.total as f64 * 10.0).round() / 10.0
                }
            })
            .collect()
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

    #[test]
    fn busy_share_per_cpu() {
        let a = CpuTimes::parse(
            "cpu  1 2 3 4\ncpu0 100 0 0 900 0 0 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0 0 0\n",
        );
        let b = CpuTimes::parse("cpu0 150 0 0 950 0 0 0 0 0 0\ncpu1 75 0 5 1100 0 0 0 20 0 0\n");
        let p = a.busy_percent(&b);
        assert_eq!(p, vec![50.0, 50.0]);
        assert_eq!(a.steal_percent(&b), vec![0.0, 10.0]);
        assert_eq!(mean_over(&p, &[1]), 50.0);
        assert!(
            !CpuTimes::read().0.is_empty(),
            "this machine's /proc/stat has CPUs"
        );
    }
}
