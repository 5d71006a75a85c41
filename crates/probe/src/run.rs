//! The prober's I/O loop: one connected UDP socket per target, `poll(2)`
//! until the next deadline (a query due, a timeout) or a reply, on the
//! CPUs the caller names.
//!
//! Precision of the wake-up does not matter here: a round trip is timed
//! from the clock read just before the send to the clock read just after
//! the receive, so a loop that wakes a millisecond late sends a
//! millisecond late and measures the same. Targets' first queries are
//! spread over one interval, so a fleet is not asked all at once.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tickpack_net::clock::now_us;
use tickpack_net::socket::{RecvBatch, SocketOptions, UdpSocket};

use crate::figures::TargetFigures;
use crate::loop_clock::{thread_rusage_ns, INTERRUPT_DRAIN_US};
use crate::target::{ProbeSettings, QueryTarget};
use crate::{ProbeProtocol, Protocol};

/// What to probe, how often and for how long (validated by the caller).
/// Serialized only to hand a run to the unprivileged process that probes
/// (the bench's `readers`); the protocol as its name.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ProbeConfig {
    pub targets: Vec<SocketAddr>,
    #[serde(with = "protocol_name")]
    pub protocol: ProbeProtocol,
    pub interval: Duration,
    pub timeout: Duration,
    /// Queries start during this long (after `start_delay`); the run then
    /// waits for the last replies (at most the timeout).
    pub duration: Duration,
    /// Nothing is sent before this (a bench step's warm-up).
    pub start_delay: Duration,
    /// Pin the prober's thread to these CPUs (empty: not pinned).
    pub cpus: Vec<usize>,
}

/// A probe protocol as the name it parses from (`q3`, `gamedig:NAME`).
mod protocol_name {
    use super::ProbeProtocol;

    pub fn serialize<S: serde::Serializer>(p: &ProbeProtocol, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(p)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ProbeProtocol, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl ProbeConfig {
    pub fn settings(&self) -> ProbeSettings {
        ProbeSettings {
            interval_us: self.interval.as_micros() as u64,
            timeout_us: self.timeout.as_micros() as u64,
        }
    }
}

/// Live counters for a progress line, updated by the loop.
#[derive(Debug, Default)]
pub struct Live {
    pub sent: AtomicU64,
    pub answered: AtomicU64,
    pub lost: AtomicU64,
}

/// What the loop hands back.
#[derive(Debug)]
pub struct ProbeOutcome {
    pub targets: Vec<TargetFigures>,
    /// Targets that reported "port unreachable" (nothing listening).
    pub refused: Vec<bool>,
    /// When the first query could go and when sending stopped (µs, this
    /// process's monotonic clock).
    pub window: (u64, u64),
    pub interrupted: bool,
    /// CPU time of the prober's thread (`getrusage(RUSAGE_THREAD)`, user +
    /// system), ns.
    pub cpu_time_ns: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("probe set-up: {0}")]
    Setup(String),
    #[error("probe: {0}")]
    Io(#[from] io::Error),
}

/// Probes `cfg.targets` until the duration ends or `stop` is set.
pub fn run(cfg: &ProbeConfig, stop: &AtomicBool, live: &Live) -> Result<ProbeOutcome, ProbeError> {
    match cfg.protocol {
        ProbeProtocol::Own(p) => run_own(cfg, p, stop, live),
        ProbeProtocol::Gamedig(g) => crate::gamedig::run(cfg, g, stop, live),
    }
}

/// tickpack's own protocols: sessions on connected sockets.
fn run_own(
    cfg: &ProbeConfig,
    protocol: Protocol,
    stop: &AtomicBool,
    live: &Live,
) -> Result<ProbeOutcome, ProbeError> {
    if !cfg.cpus.is_empty() {
        tickpack_net::cpu::pin_current_thread(&cfg.cpus)
            .map_err(|e| ProbeError::Setup(e.to_string()))?;
    }
    let cpu0 = thread_rusage_ns();
    let settings = cfg.settings();
    let timeout = settings.effective_timeout_us();
    let start = now_us() + cfg.start_delay.as_micros() as u64;
    let stop_sending = start + cfg.duration.as_micros() as u64;
    let n = cfg.targets.len().max(1) as u64;
    let mut sockets = Vec::with_capacity(cfg.targets.len());
    let mut targets = Vec::with_capacity(cfg.targets.len());
    for (i, &addr) in cfg.targets.iter().enumerate() {
        let local: SocketAddr = if addr.is_ipv4() {
            "0.0.0.0:0".parse().expect("static")
        } else {
            "[::]:0".parse().expect("static")
        };
        let sock = UdpSocket::bind(local, &SocketOptions::default())
            .and_then(|s| s.connect(addr).map(|()| s))
            .map_err(|e| ProbeError::Setup(format!("socket to {addr}: {e}")))?;
        sockets.push(sock);
        let first = start + settings.interval_us * i as u64 / n;
        targets.push(QueryTarget::new(
            addr,
            protocol,
            settings,
            first,
            stop_sending,
        ));
    }
    let mut refused = vec![false; targets.len()];
    let mut pollfds: Vec<libc::pollfd> = sockets
        .iter()
        .map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut batch = RecvBatch::new(8, 2048);
    let mut buf = Vec::with_capacity(64);
    let mut end = stop_sending + timeout;
    let mut interrupted = false;
    loop {
        let now = now_us();
        if !interrupted && stop.load(Ordering::Relaxed) {
            interrupted = true;
            for t in &mut targets {
                t.stop_at(now);
            }
            end = end.min(now + INTERRUPT_DRAIN_US.min(timeout));
        }
        if now >= end || (now >= stop_sending && targets.iter().all(QueryTarget::idle)) {
            break;
        }
        for (i, t) in targets.iter_mut().enumerate() {
            let before = t.counts().sent;
            while t.poll_transmit(now, &mut buf) {
                match sockets[i].send(&buf) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => refused[i] = true,
                    // A full send buffer loses the query; it times out.
                    Err(_) => {}
                }
            }
            // Queries, not datagrams: an A2S re-send is the same query.
            live.sent
                .fetch_add(t.counts().sent - before, Ordering::Relaxed);
        }
        let next = targets
            .iter()
            .map(QueryTarget::next_deadline)
            .min()
            .unwrap_or(u64::MAX)
            .min(end)
            // Look at `stop` at least every 50 ms.
            .min(now_us() + 50_000);
        let wait_ms = next.saturating_sub(now_us()).div_ceil(1000);
        // SAFETY: pollfds is a live, writable array of pollfds.len() structs.
        let rc = unsafe {
            libc::poll(
                pollfds.as_mut_ptr(),
                pollfds.len() as libc::nfds_t,
                wait_ms.min(i32::MAX as u64) as libc::c_int,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(ProbeError::Io(e));
        }
        if rc == 0 {
            continue;
        }
        for (i, p) in pollfds.iter_mut().enumerate() {
            if p.revents == 0 {
                continue;
            }
            p.revents = 0;
            loop {
                match sockets[i].recv_batch(&mut batch) {
                    Ok(0) => break,
                    Ok(got) => {
                        let now = now_us();
                        let t = &mut targets[i];
                        let before = t.counts();
                        for (_, data) in batch.iter() {
                            t.handle(now, data);
                        }
                        let after = t.counts();
                        live.answered
                            .fetch_add(after.answered - before.answered, Ordering::Relaxed);
                        if got < batch.capacity() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        refused[i] = true;
                        break;
                    }
                    Err(_) => break,
                }
            }
        }
        let lost: u64 = targets.iter().map(|t| t.counts().lost).sum();
        live.lost.store(lost, Ordering::Relaxed);
    }
    let now = now_us();
    for t in &mut targets {
        t.finish(now);
    }
    Ok(ProbeOutcome {
        targets: targets.iter().map(QueryTarget::figures).collect(),
        refused,
        window: (
            start,
            if interrupted {
                now.min(stop_sending)
            } else {
                stop_sending
            },
        ),
        interrupted,
        cpu_time_ns: thread_rusage_ns().saturating_sub(cpu0),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What both loops' tests probe: `targets` asked `protocol` every
    /// 100 ms (100 ms timeout) for 450 ms, at once, unpinned.
    pub(crate) fn loop_config(targets: Vec<SocketAddr>, protocol: ProbeProtocol) -> ProbeConfig {
        ProbeConfig {
            targets,
            protocol,
            interval: Duration::from_millis(100),
            timeout: Duration::from_millis(100),
            duration: Duration::from_millis(450),
            start_delay: Duration::ZERO,
            cpus: vec![],
        }
    }

    /// Runs `probe` with the address of a loopback UDP socket that sends
    /// `answer(datagram)` back for every datagram it receives, as a game
    /// server would, so a loop is tested without one. The socket stops
    /// answering when `probe` returns.
    pub(crate) fn with_loopback_responder<T>(
        answer: impl Fn(&[u8]) -> Vec<u8> + Sync,
        probe: impl FnOnce(SocketAddr) -> T,
    ) -> T {
        let server = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = server.local_addr().unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut b = [0u8; 256];
                while !done.load(Ordering::Relaxed) {
                    if let Ok((n, from)) = server.recv_from(&mut b) {
                        let _ = server.send_to(&answer(&b[..n]), from);
                    }
                }
            });
            let out = probe(addr);
            done.store(true, Ordering::Relaxed);
            out
        })
    }

    /// A loopback socket that answers `getinfo ID` like ioq3, so the loop
    /// is tested without a game server.
    #[test]
    fn the_loop_measures_a_loopback_responder_and_stops_on_time() {
        let stop = AtomicBool::new(false);
        let live = Live::default();
        let out = with_loopback_responder(
            |query| {
                let text = String::from_utf8_lossy(&query[4..]).into_owned();
                let id = text.strip_prefix("getinfo ").unwrap_or("");
                tickpack_q3::oob::encode(&format!("infoResponse\n\\mapname\\lan\\challenge\\{id}"))
            },
            |addr| run(&loop_config(vec![addr], Protocol::Q3.into()), &stop, &live),
        )
        .unwrap();
        let c = out.targets[0].counts();
        // 0, 100, 200, 300, 400 ms: five queries (fewer only if this machine
        // stalled the loop; it never catches up with a burst).
        assert!((1..=5).contains(&c.sent), "{c:?}");
        assert_eq!(c.answered + c.lost, c.sent);
        assert_eq!(out.targets[0].histogram().len(), c.answered);
        if c.answered > 0 {
            assert_eq!(out.targets[0].facts().map(|f| f.map.as_str()), Some("lan"));
        }
        assert!(!out.interrupted);
        assert_eq!(live.sent.load(Ordering::Relaxed), c.sent);
    }
}
