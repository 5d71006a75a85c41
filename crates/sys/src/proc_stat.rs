//! Per-CPU time from the text of `/proc/stat`: parsing only (the bench's
//! CPU sampling and the guard's idle estimate both read it).

/// Cumulative (idle, total) jiffies per CPU, indexed by CPU number: idle
/// counts iowait; total is user, nice, system, idle, iowait, irq, softirq
/// and steal (guest time is already in user). The aggregate `cpu` line is
/// skipped; CPUs missing from the text read as (0, 0); lines that do not
/// parse are skipped.
pub fn cpu_idle_total(text: &str) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = vec![];
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
        let total = x.iter().take(8).fold(0u64, |a, &b| a.saturating_add(b));
        if v.len() <= n {
            v.resize(n + 1, (0, 0));
        }
        v[n] = (idle, total);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_idle_and_total_per_cpu() {
        let text = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                    cpu0 5 0 5 50 0 0 0 0 0 0\n\
                    cpu1 1 2 3 40 4 0 0 0 0 0\n\
                    intr 1 2 3\ncpuX garbage\ncpu9999999 1 2\n";
        assert_eq!(cpu_idle_total(text), vec![(50, 60), (44, 50)]);
        assert!(cpu_idle_total("").is_empty());
    }
}
