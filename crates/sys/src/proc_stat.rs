//! Per-CPU time from the text of `/proc/stat`: parsing only (the bench's
//! CPU sampling and the guard's idle and steal figures both read it).

/// Cumulative jiffies of one CPU (`USER_HZ` ticks, the unit of
/// `/proc/PID/stat`'s times too).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuJiffies {
    /// Idle and iowait.
    pub idle: u64,
    /// Steal: the CPU wanted to run, and the hypervisor ran something else
    /// (a virtual machine's other guests); 0 on bare metal.
    pub steal: u64,
    /// Interrupts: irq and softirq (time not charged to any task).
    pub interrupts: u64,
    /// User, nice, system, idle, iowait, irq, softirq and steal (guest time
    /// is already in user).
    pub total: u64,
}

impl CpuJiffies {
    /// Time tasks ran on the CPU (user, nice, system, guest): its total less
    /// idle, iowait, interrupts and steal.
    pub fn tasks(&self) -> u64 {
        self.total
            .saturating_sub(self.idle)
            .saturating_sub(self.steal)
            .saturating_sub(self.interrupts)
    }

    /// The jiffies between an `earlier` read of the same CPU and this one
    /// (each count saturating at 0).
    pub fn since(&self, earlier: &CpuJiffies) -> CpuJiffies {
        CpuJiffies {
            idle: self.idle.saturating_sub(earlier.idle),
            steal: self.steal.saturating_sub(earlier.steal),
            interrupts: self.interrupts.saturating_sub(earlier.interrupts),
            total: self.total.saturating_sub(earlier.total),
        }
    }
}

/// Cumulative jiffies per CPU, indexed by CPU number. The aggregate `cpu`
/// line is skipped; CPUs missing from the text read as zeros; lines that do
/// not parse are skipped; a kernel too old to report steal reads 0 there.
pub fn cpu_jiffies(text: &str) -> Vec<CpuJiffies> {
    let mut v: Vec<CpuJiffies> = vec![];
    for line in text.lines() {
        let Some(rest) = line
            .strip_prefix("cpu")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let Some(Ok(n)) = f.next().map(str::parse::<usize>) else {
            continue;
        };
        let x: Vec<u64> = f.filter_map(|t| t.parse().ok()).collect();
        if x.len() < 5 || n > 4096 {
            continue;
        }
        let idle = x[3].saturating_add(x[4]);
        let steal = x.get(7).copied().unwrap_or(0);
        let interrupts = x
            .get(5)
            .copied()
            .unwrap_or(0)
            .saturating_add(x.get(6).copied().unwrap_or(0));
        let total = x.iter().take(8).fold(0u64, |a, &b| a.saturating_add(b));
        if v.len() <= n {
            v.resize(n + 1, CpuJiffies::default());
        }
        v[n] = CpuJiffies {
            idle,
            steal,
            interrupts,
            total,
        };
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_idle_steal_and_total_per_cpu() {
        let text = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                    cpu0 5 0 5 50 0 0 0 0 0 0\n\
                    cpu1 1 2 3 40 4 0 0 7 0 0\n\
                    cpu2 1 2 3 40 4\n\
                    intr 1 2 3\ncpuX garbage\ncpu9999999 1 2\n";
        let j = |idle, steal, interrupts, total| CpuJiffies {
            idle,
            steal,
            interrupts,
            total,
        };
        assert_eq!(
            cpu_jiffies(text),
            vec![j(50, 0, 0, 60), j(44, 7, 0, 57), j(44, 0, 0, 50)]
        );
        let busy = cpu_jiffies("cpu0 10 1 5 100 3 2 4 6 0 0\n");
        assert_eq!(busy, vec![j(103, 6, 6, 131)]);
        assert_eq!(busy[0].tasks(), 16, "user, nice and system");
        assert!(cpu_jiffies("").is_empty());
    }

    #[test]
    fn the_jiffies_since_an_earlier_read() {
        let j = |idle, steal, interrupts, total| CpuJiffies {
            idle,
            steal,
            interrupts,
            total,
        };
        assert_eq!(j(50, 9, 3, 160).since(&j(40, 4, 1, 60)), j(10, 5, 2, 100));
        // A counter that went back (a CPU brought online again) reads 0.
        assert_eq!(j(5, 0, 0, 10).since(&j(40, 4, 1, 60)), j(0, 0, 0, 0));
    }
}
