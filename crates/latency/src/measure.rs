//! One measurement: the clients and the echo side of one path, one size,
//! one mode, for a warm-up and a measured window.
//!
//! Closed loop per stream, like `sockperf ping-pong`: a stream sends one
//! request, waits for its reply, records the round trip (nanoseconds, from
//! just before `send` to just after `recv` returned, in an HdrHistogram),
//! and sends the next. Requests carry `MAGIC, stream, seq`; a reply that
//! does not match the request in flight (a late one) is counted as stale
//! and ignored. A request unanswered for the timeout is counted as lost.
//!
//! Threads and cores:
//!
//! - blocking: one client thread per stream (blocking `recv` with the
//!   timeout), all pinned to the client CPU; one echo thread per stream
//!   (inside its stream's namespace), all pinned to the echo CPU.
//! - busy: one client thread, pinned to the client CPU, spinning over all
//!   its streams with non-blocking `recv` (each stream has one request in
//!   flight); one echo thread for the path, pinned to the echo CPU, polling
//!   all the path's sockets round robin.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::echo::{enter_netns, serve_blocking, serve_busy, Answer, EchoCounts, EchoSet, MAGIC};
use crate::settings::{Mode, SizeSpec, HEADER_LEN};
use crate::LatencyError;

/// Round trips are recorded in nanoseconds, 1 ns to 10 s, 3 digits.
pub fn new_ns_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("static bounds are valid")
}

/// How long, and on which CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasureOpts {
    pub warmup: Duration,
    pub duration: Duration,
    pub timeout: Duration,
    pub client_cpu: Option<usize>,
    pub echo_cpu: Option<usize>,
}

/// The outcome of one measurement.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub size: SizeSpec,
    pub mode: Mode,
    /// Round trips in nanoseconds (measured window only).
    pub histogram: Histogram<u64>,
    /// Requests sent in the measured window.
    pub sent: u64,
    /// Of those, unanswered within the timeout.
    pub lost: u64,
    /// Replies that matched no request in flight.
    pub stale: u64,
    /// Datagrams the echo side refused to answer.
    pub echo_dropped: u64,
    /// How long the measured window really was.
    pub elapsed: Duration,
}

impl Measurement {
    /// The round trip at quantile `q`, in microseconds to 0.1 us.
    pub fn quantile_us(&self, q: f64) -> f64 {
        ns_to_us(self.histogram.value_at_quantile(q))
    }
}

/// Nanoseconds to microseconds, rounded to 0.1 us.
pub fn ns_to_us(ns: u64) -> f64 {
    (ns as f64 / 100.0).round() / 10.0
}

/// When the clients start recording and stop.
#[derive(Clone, Copy)]
struct Window {
    record_from: Instant,
    end: Instant,
}

/// What every client loop of one measurement runs with.
#[derive(Clone, Copy)]
struct ClientRun<'a> {
    /// The request (and reply) sizes.
    size: SizeSpec,
    /// When to start recording and when to stop.
    window: Window,
    /// How long a request may stay unanswered before it counts as lost.
    timeout: Duration,
    /// Set to stop early.
    stop: &'a AtomicBool,
}

/// What one client thread saw.
struct ClientCounts {
    hist: Histogram<u64>,
    sent: u64,
    lost: u64,
    stale: u64,
}

impl ClientCounts {
    fn new() -> Self {
        ClientCounts {
            hist: new_ns_histogram(),
            sent: 0,
            lost: 0,
            stale: 0,
        }
    }
}

/// A small fast generator for game request sizes (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// One stream's request state.
struct Stream {
    id: u32,
    seq: u64,
    sent_at: Instant,
    /// The reply length to expect.
    expect: usize,
    buf: Vec<u8>,
    rng: Rng,
}

impl Stream {
    fn new(id: u32, size: SizeSpec) -> Self {
        Stream {
            id,
            seq: 0,
            sent_at: Instant::now(),
            expect: 0,
            buf: vec![0u8; size.max_len().max(HEADER_LEN)],
            rng: Rng::new(u64::from(id) + 1),
        }
    }

    /// Sends the next request; returns false if `send` failed.
    fn send(&mut self, sock: &UdpSocket, size: SizeSpec) -> bool {
        self.seq += 1;
        let len = size.request_len(self.rng.next());
        self.expect = size.response_len().unwrap_or(len);
        self.buf[..4].copy_from_slice(&MAGIC);
        self.buf[4..8].copy_from_slice(&self.id.to_le_bytes());
        self.buf[8..16].copy_from_slice(&self.seq.to_le_bytes());
        self.sent_at = Instant::now();
        sock.send(&self.buf[..len]).is_ok()
    }

    /// Whether `reply` answers the request in flight.
    fn matches(&self, reply: &[u8]) -> bool {
        reply.len() == self.expect
            && reply[..4] == MAGIC
            && reply[4..8] == self.id.to_le_bytes()
            && reply[8..16] == self.seq.to_le_bytes()
    }
}

/// Records `rtt` if the request was sent inside the measured window.
fn account(c: &mut ClientCounts, sent_at: Instant, w: &Window, answered: Option<Duration>) {
    if sent_at < w.record_from {
        return;
    }
    c.sent += 1;
    match answered {
        Some(rtt) => {
            let ns = u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX);
            c.hist.saturating_record(ns.max(1));
        }
        None => c.lost += 1,
    }
}

/// One stream, blocking: send, wait for the reply (or the socket's read
/// timeout), record, repeat.
fn client_blocking(sock: &UdpSocket, id: u32, run: ClientRun<'_>) -> ClientCounts {
    let w = &run.window;
    let mut c = ClientCounts::new();
    let mut st = Stream::new(id, run.size);
    let mut buf = vec![0u8; 65_536];
    while !run.stop.load(Ordering::Relaxed) && Instant::now() < w.end {
        if !st.send(sock, run.size) {
            account(&mut c, st.sent_at, w, None);
            // Do not spin on a failing send.
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let answered = loop {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    let now = Instant::now();
                    if st.matches(&buf[..n]) {
                        break Some(now - st.sent_at);
                    }
                    c.stale += 1;
                    if now - st.sent_at > run.timeout {
                        break None;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    break None
                }
                Err(_) => {
                    // An ICMP error (e.g. port unreachable): lost; do not
                    // spin on a dead peer.
                    std::thread::sleep(Duration::from_millis(1));
                    break None;
                }
            }
        };
        account(&mut c, st.sent_at, w, answered);
    }
    c
}

/// All streams in one thread, polling their sockets without blocking; each
/// stream keeps one request in flight.
fn client_busy(socks: &[UdpSocket], run: ClientRun<'_>) -> ClientCounts {
    let (w, size) = (&run.window, run.size);
    let mut c = ClientCounts::new();
    let mut streams: Vec<Stream> = (0..socks.len() as u32)
        .map(|i| Stream::new(i, size))
        .collect();
    for (st, sock) in streams.iter_mut().zip(socks) {
        if !st.send(sock, size) {
            account(&mut c, st.sent_at, w, None);
        }
    }
    let mut buf = vec![0u8; 65_536];
    while !run.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= w.end {
            break;
        }
        for (st, sock) in streams.iter_mut().zip(socks) {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    let t = Instant::now();
                    if st.matches(&buf[..n]) {
                        account(&mut c, st.sent_at, w, Some(t - st.sent_at));
                        if !st.send(sock, size) {
                            account(&mut c, st.sent_at, w, None);
                        }
                    } else {
                        c.stale += 1;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if now.saturating_duration_since(st.sent_at) > run.timeout {
                        account(&mut c, st.sent_at, w, None);
                        if !st.send(sock, size) {
                            account(&mut c, st.sent_at, w, None);
                        }
                    }
                }
                Err(_) => {
                    // An ICMP error (e.g. port unreachable) queued on the
                    // socket: the request is lost; wait out the timeout
                    // before resending so a dead peer is not flooded.
                }
            }
        }
        std::hint::spin_loop();
    }
    c
}

fn pin(cpu: Option<usize>) -> Result<(), LatencyError> {
    match cpu {
        Some(c) => tickpack_net::cpu::pin_current_thread(&[c]).map_err(LatencyError::Pin),
        None => Ok(()),
    }
}

/// Client sockets, one per target, connected (so the kernel filters
/// replies by source), with their local addresses (the echo's peers).
fn client_sockets(echo: &EchoSet) -> Result<(Vec<UdpSocket>, Vec<SocketAddr>), LatencyError> {
    let mut socks = Vec::new();
    let mut peers = Vec::new();
    for t in echo.targets() {
        let s = UdpSocket::bind("0.0.0.0:0")
            .and_then(|s| s.connect(t).map(|()| s))
            .map_err(|e| LatencyError::io(format!("opening a client socket to {t}"), e))?;
        let local = s
            .local_addr()
            .map_err(|e| LatencyError::io("reading a client socket's address", e))?;
        socks.push(s);
        peers.push(local);
    }
    Ok((socks, peers))
}

/// Measures one (size, mode) on the path whose echo sockets are `echo`.
/// The caller has checked that the targets are routed through our links.
/// Stops early (returning what it has) when `stop` is set.
pub fn measure(
    echo: &EchoSet,
    size: SizeSpec,
    mode: Mode,
    o: &MeasureOpts,
    stop: &AtomicBool,
) -> Result<Measurement, LatencyError> {
    echo.drain()?;
    let (clients, peers) = client_sockets(echo)?;
    for s in &clients {
        let r = match mode {
            Mode::Blocking => s
                .set_nonblocking(false)
                .and_then(|()| s.set_read_timeout(Some(o.timeout))),
            Mode::Busy => s.set_nonblocking(true),
        };
        r.map_err(|e| LatencyError::io("setting up a client socket", e))?;
    }
    let done = AtomicBool::new(false);
    // A safety bound for the echo loops, far past the window.
    let hard_limit = Instant::now() + o.warmup + o.duration + o.timeout + Duration::from_secs(10);
    let answer = || Answer::new(size.response_len());

    let (counts, echo_counts, elapsed) = std::thread::scope(|sc| {
        let mut echoes = Vec::new();
        match mode {
            Mode::Blocking => {
                for (i, (sock, peer)) in echo.sockets().iter().zip(&peers).enumerate() {
                    let (done, peer, a, ns) = (&done, *peer, answer(), echo.netns(i));
                    echoes.push(sc.spawn(move || {
                        pin(o.echo_cpu)?;
                        // Serve from inside the namespace, like a server
                        // started there (this thread ends with the
                        // measurement).
                        if let Some(ns) = ns {
                            enter_netns(ns)?;
                        }
                        serve_blocking(sock, peer, a, done, hard_limit)
                    }));
                }
            }
            Mode::Busy => {
                let (done, peers, a) = (&done, &peers, answer());
                echoes.push(sc.spawn(move || {
                    pin(o.echo_cpu)?;
                    serve_busy(echo.sockets(), peers, a, done, hard_limit)
                }));
            }
        }
        let start = Instant::now();
        let run = ClientRun {
            size,
            window: Window {
                record_from: start + o.warmup,
                end: start + o.warmup + o.duration,
            },
            timeout: o.timeout,
            stop,
        };
        let mut clients_h = Vec::new();
        match mode {
            Mode::Blocking => {
                for (i, sock) in clients.iter().enumerate() {
                    clients_h.push(sc.spawn(move || {
                        pin(o.client_cpu)?;
                        Ok(client_blocking(sock, i as u32, run))
                    }));
                }
            }
            Mode::Busy => {
                let socks = &clients;
                clients_h.push(sc.spawn(move || {
                    pin(o.client_cpu)?;
                    Ok(client_busy(socks, run))
                }));
            }
        }
        let counts: Vec<Result<ClientCounts, LatencyError>> = clients_h
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(thread_panicked("client"))))
            .collect();
        let elapsed = Instant::now().saturating_duration_since(run.window.record_from);
        done.store(true, Ordering::Relaxed);
        let echo_counts: Vec<Result<EchoCounts, LatencyError>> = echoes
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(thread_panicked("echo"))))
            .collect();
        (counts, echo_counts, elapsed)
    });
    let mut m = Measurement {
        size,
        mode,
        histogram: new_ns_histogram(),
        sent: 0,
        lost: 0,
        stale: 0,
        echo_dropped: 0,
        elapsed,
    };
    for c in counts {
        let c = c?;
        m.histogram
            .add(&c.hist)
            .expect("histograms of the same bounds add");
        m.sent += c.sent;
        m.lost += c.lost;
        m.stale += c.stale;
    }
    let mut e = EchoCounts::default();
    for c in echo_counts {
        e.add(c?);
    }
    m.echo_dropped = e.dropped;
    Ok(m)
}

fn thread_panicked(what: &str) -> LatencyError {
    LatencyError::io(
        format!("the {what} thread"),
        std::io::Error::other("panicked"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> MeasureOpts {
        MeasureOpts {
            warmup: Duration::from_millis(20),
            duration: Duration::from_millis(150),
            timeout: Duration::from_millis(200),
            client_cpu: None,
            echo_cpu: None,
        }
    }

    #[test]
    fn loopback_round_trips_are_measured_in_both_modes() {
        let echo = EchoSet::loopback(2).unwrap();
        let stop = AtomicBool::new(false);
        for mode in Mode::ALL {
            for size in [SizeSpec::Bytes(64), SizeSpec::Game] {
                let m = measure(&echo, size, mode, &opts(), &stop).unwrap();
                // How many round trips fit in the window depends on the
                // machine's load (busy polling on a shared 2-core VM can take
                // milliseconds each): assert that they were measured.
                assert!(
                    !m.histogram.is_empty(),
                    "{mode} {size}: {} sent, {} lost, {} stale",
                    m.sent,
                    m.lost,
                    m.stale
                );
                assert_eq!(m.histogram.len() + m.lost, m.sent, "{mode} {size}");
                let (p50, p99) = (m.quantile_us(0.5), m.quantile_us(0.99));
                assert!(p50 > 0.0 && p50 <= p99, "{mode} {size}: {p50} {p99}");
                assert_eq!(m.echo_dropped, 0);
            }
        }
    }

    #[test]
    fn a_set_stop_flag_ends_a_measurement_at_once() {
        let echo = EchoSet::loopback(1).unwrap();
        let stop = AtomicBool::new(true);
        let mut o = opts();
        o.duration = Duration::from_secs(30);
        let t = Instant::now();
        let m = measure(&echo, SizeSpec::Bytes(64), Mode::Busy, &o, &stop).unwrap();
        assert!(t.elapsed() < Duration::from_secs(2));
        assert_eq!(m.sent, 0);
    }

    #[test]
    fn a_silent_target_counts_losses_instead_of_hanging() {
        // An echo set nobody serves: build one, then measure against a
        // target whose socket is bound but never answered. measure() always
        // serves, so drive a client directly.
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.connect(silent.local_addr().unwrap()).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let now = Instant::now();
        // 500 ms of 20 ms timeouts: at least 2 losses even if this thread
        // is descheduled for most of the window on a loaded machine.
        let stop = AtomicBool::new(false);
        let run = ClientRun {
            size: SizeSpec::Bytes(64),
            window: Window {
                record_from: now,
                end: now + Duration::from_millis(500),
            },
            timeout: Duration::from_millis(20),
            stop: &stop,
        };
        let r = client_blocking(&c, 0, run);
        assert!(r.lost >= 2 && r.hist.is_empty(), "{} lost", r.lost);
        assert!(now.elapsed() < Duration::from_secs(5), "it did not hang");
    }
}
