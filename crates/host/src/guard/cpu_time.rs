//! What the server cores and the machine did with their time in a guard
//! period, from two reads of `/proc/stat` (parsed by
//! [`tickpack_sys::cpu_jiffies`]): the server cores' idle, the headroom the
//! batch may start from, and the steal, the time the hypervisor gave the
//! machine's CPUs to others (a virtual machine's other guests). Sans-I/O:
//! the caller reads the file.

use tickpack_sys::CpuJiffies;

/// One period's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuPeriod {
    /// Idle time of the server cores, in cores.
    pub idle_cores: f64,
    /// The largest share of a period any CPU of the machine lost to steal,
    /// 0-1 (the load generator's CPUs count: the players suffer too).
    pub steal: f64,
}

/// Keeps the last read; each call gives the period since the one before.
#[derive(Debug, Default)]
pub struct CpuSampler {
    last: Vec<CpuJiffies>,
}

impl CpuSampler {
    /// The period since the last call, from `/proc/stat`'s `text` now;
    /// `None` the first time, or when a server CPU is missing or no time
    /// passed.
    pub fn sample(&mut self, text: &str, server_cpus: &[usize]) -> Option<CpuPeriod> {
        let now = tickpack_sys::cpu_jiffies(text);
        let prev = std::mem::replace(&mut self.last, now);
        let share = |c: usize| -> Option<(f64, f64)> {
            let d = self.last.get(c)?.since(prev.get(c)?);
            let dt = (d.total > 0).then_some(d.total as f64)?;
            Some((d.idle as f64 / dt, d.steal as f64 / dt))
        };
        let mut idle_cores = 0.0;
        for &c in server_cpus {
            idle_cores += share(c)?.0;
        }
        let steal = (0..self.last.len())
            .filter_map(share)
            .map(|(_, s)| s)
            .fold(0.0, f64::max);
        Some(CpuPeriod { idle_cores, steal })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_of_the_server_cores_and_the_worst_steal_of_any_cpu() {
        let mut s = CpuSampler::default();
        assert_eq!(
            s.sample("cpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n", &[1]),
            None
        );
        // CPU 0 (load generator): 20 of 100 jiffies stolen; CPU 1: 60 idle.
        let p = s
            .sample("cpu0 80 0 0 0 0 0 0 20\ncpu1 40 0 0 60 0 0 0 0\n", &[1])
            .expect("a period");
        assert_eq!(
            p,
            CpuPeriod {
                idle_cores: 0.6,
                steal: 0.2
            }
        );
        // A server CPU that is not there: no figure.
        assert_eq!(s.sample("cpu0 90 0 0 0 0 0 0 20\n", &[1]), None);
    }
}
