//! CPU and memory use per instance, sampled once a second: from the
//! instance's cgroup (netns backend) or from `/proc/PID` (process backend);
//! OOM kills are reported as events.

use std::time::Instant;

use super::Supervisor;

impl Supervisor {
    pub(super) fn sample_usage(&mut self, now: Instant) {
        let mut events = vec![];
        let clock = self.query_clock();
        let own_netns = self.cfg.backend == crate::fleet::Backend::Netns;
        for i in &mut self.instances {
            // Datagrams into its namespace: the liveness rule's flood sign.
            if let Some(n) = i
                .child
                .as_ref()
                .filter(|_| own_netns)
                .and_then(|c| netns_rx_packets(c.id()))
            {
                i.liveness.inbound(clock, n);
            }
            let (cpu_ns, mem, ooms) = match &i.cgroup {
                Some(cg) => {
                    let u = cg.usage();
                    (Some(u.cpu_usage_ns), Some(u.memory_bytes), u.oom_kills)
                }
                None => (
                    i.child.as_ref().and_then(|c| proc_cpu_ns(c.id())),
                    i.child.as_ref().and_then(|c| proc_rss(c.id())),
                    0,
                ),
            };
            if ooms > i.oom_kills {
                events.push(format!(
                    "instance {}: the OOM killer killed a process (memory limit reached)",
                    i.spec.id
                ));
                i.oom_kills = ooms;
            }
            i.memory_bytes = mem;
            if let Some(ns) = cpu_ns {
                if let Some((prev, t)) = i.cpu_sample {
                    let dt = now.duration_since(t).as_nanos() as f64;
                    if dt > 0.0 && ns >= prev {
                        i.cpu_percent = Some(((ns - prev) as f64 / dt * 1000.0).round() / 10.0);
                    }
                }
                i.cpu_sample = Some((ns, now));
            }
        }
        for e in events {
            self.event(e);
        }
    }
}

/// The packets received by the interfaces (loopback aside) of `pid`'s
/// network namespace, from `/proc/PID/net/dev`.
pub(super) fn netns_rx_packets(pid: u32) -> Option<u64> {
    parse_rx_packets(&std::fs::read_to_string(format!("/proc/{pid}/net/dev")).ok()?)
}

/// The sum of the receive-packets column of a `net/dev` text, `lo` aside.
fn parse_rx_packets(text: &str) -> Option<u64> {
    let mut total = None;
    for line in text.lines().skip(2) {
        let Some((name, counters)) = line.split_once(':') else {
            continue;
        };
        if name.trim() == "lo" {
            continue;
        }
        let packets: u64 = counters.split_whitespace().nth(1)?.parse().ok()?;
        total = Some(total.unwrap_or(0) + packets);
    }
    total
}

pub(super) fn proc_cpu_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(ticks * 1_000_000_000 / hz)
}

pub(super) fn proc_rss(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn received_packets_are_summed_over_the_namespaces_links_but_loopback() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  100       7    0    0    0     0          0         0      100       7    0    0    0     0       0          0
  eth0: 5000      40    0    0    0     0          0         0     9000      60    0    0    0     0       0          0
  eth1:  300       2    0    0    0     0          0         0        0       0    0    0    0     0       0          0
";
        assert_eq!(parse_rx_packets(text), Some(42));
        assert_eq!(parse_rx_packets("h\nh\n    lo: 1 2 3\n"), None);
        assert!(
            netns_rx_packets(std::process::id()).is_some()
                || !std::path::Path::new("/proc/self/net/dev").exists()
        );
    }
}
