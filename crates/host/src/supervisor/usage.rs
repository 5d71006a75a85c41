//! CPU and memory use per instance, sampled once a second: from the
//! instance's cgroup (netns backend) or from `/proc/PID` (process backend);
//! OOM kills are reported as events. Also the liveness rule's evidence,
//! read at the end of each check window ([`evidence`]).

use std::time::Instant;

use super::liveness::Evidence;
use super::Supervisor;
use crate::cgroup::Cgroup;
use crate::event::EventKind;

impl Supervisor {
    pub(super) fn sample_usage(&mut self, now: Instant) {
        let mut events = vec![];
        for i in &mut self.instances {
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
                events.push(EventKind::OomKill {
                    instance: i.spec.id,
                });
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

/// What the liveness rule may know of an instance without asking it:
/// its cgroup's CPU time and the UDP datagrams read in its own network
/// namespace (`/proc/PID/net/snmp` and `snmp6` of its init, `pid`). Only
/// an instance with a namespace and a cgroup of its own has them (the
/// netns backend); elsewhere both are unknown.
pub(super) fn evidence(cgroup: Option<&Cgroup>, pid: u32, own_netns: bool) -> Evidence {
    let Some(cg) = cgroup.filter(|_| own_netns) else {
        return Evidence::default();
    };
    Evidence {
        cpu_ns: cg.cpu_usage_ns(),
        read: netns_udp_read(pid),
    }
}

/// The UDP datagrams programs read in `pid`'s network namespace, over
/// IPv4 and IPv6 (IPv6 may be off: then IPv4's alone).
fn netns_udp_read(pid: u32) -> Option<u64> {
    let v4 = parse_udp_in_datagrams(&read_small(&format!("/proc/{pid}/net/snmp"))?)?;
    let v6 = read_small(&format!("/proc/{pid}/net/snmp6"))
        .and_then(|t| parse_udp6_in_datagrams(&t))
        .unwrap_or(0);
    Some(v4.saturating_add(v6))
}

/// A kernel text file of at most 64 KiB.
fn read_small(path: &str) -> Option<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 << 10)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

/// `InDatagrams` of the `Udp:` lines of a `net/snmp` text (a line of
/// names, then a line of values). The kernel counts a datagram there when
/// a program reads it (`udp_recvmsg`), not when it arrives.
fn parse_udp_in_datagrams(text: &str) -> Option<u64> {
    let mut lines = text.lines().filter_map(|l| l.strip_prefix("Udp:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let k = names.split_whitespace().position(|n| n == "InDatagrams")?;
    values.split_whitespace().nth(k)?.parse().ok()
}

/// `Udp6InDatagrams` of a `net/snmp6` text (`name value` lines).
fn parse_udp6_in_datagrams(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next()? == "Udp6InDatagrams").then(|| f.next()?.parse().ok())?
    })
}

pub(super) fn proc_cpu_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
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
    fn the_udp_datagrams_read_are_taken_from_snmp_and_snmp6() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\nUdp: InDatagrams NoPorts InErrors OutDatagrams\nUdp: 1234 5 0 99\nUdpLite: InDatagrams NoPorts\nUdpLite: 7 0\n";
        assert_eq!(parse_udp_in_datagrams(snmp), Some(1234));
        assert_eq!(parse_udp_in_datagrams("Udp: InDatagrams\n"), None);
        assert_eq!(parse_udp_in_datagrams("Udp: NoPorts\nUdp: 3\n"), None);
        let snmp6 = "Udp6InDatagrams                 \t42\nUdp6NoPorts 1\nUdpLite6InDatagrams 9\n";
        assert_eq!(parse_udp6_in_datagrams(snmp6), Some(42));
        assert_eq!(parse_udp6_in_datagrams("Udp6NoPorts 1\n"), None);
    }

    /// The counter moves when a datagram is read, not when it arrives:
    /// what tells a server that reads its socket from one that stopped.
    #[test]
    fn a_datagram_counts_as_read_only_once_a_program_reads_it() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let me = std::process::id();
        let before = netns_udp_read(me).expect("this namespace's counters");
        for _ in 0..50 {
            tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        }
        let mut buf = [0u8; 8];
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        for _ in 0..50 {
            rx.recv(&mut buf).unwrap();
        }
        let after = netns_udp_read(me).unwrap();
        // Other tests of this process may read too: at least ours.
        assert!(after >= before + 50, "{before} -> {after}");
    }
}
