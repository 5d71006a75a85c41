//! [`run`]: the reference server's I/O driver around [`tickpack_sim::Server`]
//! and [`tickpack_sim::TickClock`].
//!
//! One thread does everything, like the single-threaded servers it stands
//! for: wait (precisely) for the next tick or a datagram, hand datagrams to
//! the state machine (a bounded [`drain`]), run the tick, send
//! the snapshots with `sendmmsg`, and record how long the tick took. With
//! [`Options::read_at_tick`] it wakes for the tick only and reads what
//! arrived just before running it: one wake-up per tick however many
//! players send, at the price of answering pings and handshakes at the
//! next tick instead of at once. Once a
//! second it reads the process CPU time and kernel drops and, with a metrics
//! endpoint, publishes the metrics.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::RngCore;
use tickpack_net::clock::{now_ns, now_us};
use tickpack_net::socket::{RecvBatch, SocketOptions, UdpSocket};
use tickpack_net::wait::{WaitMode, Waiter, Wake};
use tickpack_sim::{Server, ServerConfig, TickClock};
use tickpack_wire::ServerStats;

use crate::drain::{DrainCounters, DrainEnd, DrainLimit};
use crate::live::{Live, Slow};
use crate::metrics::{self, Endpoint};
use crate::paths::Paths;
use crate::ServerError;

/// Datagrams per `recvmmsg`.
const RECV_BATCH: usize = 64;
/// Most datagrams one drain takes before the loop looks at its clock,
/// signals and metrics again (the tick deadline usually stops it first).
const DRAIN_MAX: usize = 8192;

/// How to run one server.
#[derive(Debug, Clone)]
pub struct Options {
    /// The game's settings; `port` is filled in from the bound socket.
    pub config: ServerConfig,
    /// UDP address to listen on (port 0 picks one).
    pub bind: SocketAddr,
    /// Pin the server thread to this CPU.
    pub cpu: Option<usize>,
    /// How to wait for the next tick.
    pub timer: WaitMode,
    /// Wake for the tick only and read the socket just before it, instead
    /// of waking for every burst of datagrams (which costs a wake-up and a
    /// `recvmmsg` per burst, and the senders a wake-up of this thread per
    /// datagram). Commands are applied at the tick either way; pings and
    /// handshakes are answered at the next tick.
    pub read_at_tick: bool,
    /// Serve Prometheus metrics on this address.
    pub metrics: Option<SocketAddr>,
    /// Stop by itself after this long.
    pub duration: Option<Duration>,
    /// Where to show ticks, players and the recent tick p99 to another
    /// thread (the Agones reporter).
    pub live: Option<Arc<Live>>,
}

/// What the server saw, once stopped.
#[derive(Debug, Clone)]
pub struct Stopped {
    pub stats: ServerStats,
}

/// Binds, pins, then runs the server until `stop` is set or the duration
/// ends; `on_listening` is called with the bound address once the server is
/// ready for players. Tells connected players it stops before returning.
pub fn run(
    opts: Options,
    stop: &AtomicBool,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<Stopped, ServerError> {
    if let Some(cpu) = opts.cpu {
        tickpack_net::cpu::pin_current_thread(&[cpu]).map_err(ServerError::Pin)?;
    }
    let sock = UdpSocket::bind(
        opts.bind,
        &SocketOptions {
            recv_buffer: Some(4 << 20),
            send_buffer: Some(4 << 20),
            busy_poll_us: None,
            reuse_port: false,
        },
    )
    .map_err(ServerError::Bind)?;
    // Bound alone first (a port in use is refused, port 0 never shares
    // one), then shared with the players' own sockets (see `paths`).
    sock.share_port().map_err(ServerError::Bind)?;
    let local = sock.local_addr();
    let mut cfg = opts.config;
    cfg.port = local.port();
    let tick_hz = cfg.tick_hz;
    let mut secret = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut secret);
    let mut server = Server::new(cfg, secret);
    let endpoint = opts.metrics.map(Endpoint::serve).transpose()?;
    on_listening(local);
    let live = opts.live.as_deref();
    if let Some(l) = live {
        l.set_listening();
    }

    let mut waiter = Waiter::new(opts.timer).map_err(ServerError::Timer)?;
    let mut io = Paths::new(&sock, RecvBatch::new(RECV_BATCH, 2048));
    // --duration is at most a year (its parser), far from overflowing.
    let stop_at = opts
        .duration
        .map(|d| now_ns().saturating_add(d.as_nanos() as u64));
    let mut clock = TickClock::with_rate(now_ns(), tick_hz);
    let mut next_metrics = now_ns();
    let mut drains = DrainCounters::default();
    // The last drain ran up to the tick's due time (the socket never
    // emptied): no need to drain again before the tick.
    let mut drained_to_due = false;

    while !stop.load(Ordering::Relaxed) && stop_at.is_none_or(|s| now_ns() < s) {
        let due = clock.due_ns();
        // Reading at the tick: wait for the tick alone.
        let fds = if opts.read_at_tick { &[][..] } else { io.fds() };
        match waiter.wait(fds, due).map_err(ServerError::Timer)? {
            Wake::Readable(_) => {
                // Drain until the tick is due, never past it: once the
                // deadline passes, the wait returns at once for the tick.
                let end = io.receive(&mut server, &drain_limit(due));
                drains.count(end);
                drained_to_due = end == DrainEnd::Deadline;
                continue;
            }
            Wake::Deadline => {}
        }
        let start = now_ns();
        if !drained_to_due {
            // Datagrams that arrived while we slept to the deadline (plain
            // timer) or spun before it: a short slice of the tick at most.
            drains.count(io.receive(&mut server, &drain_limit(clock.pre_tick_deadline_ns(start))));
        }
        drained_to_due = false;
        server.tick(start / 1000, due / 1000);
        io.send(&mut server);
        // Players who timed out in the tick give their sockets back.
        io.follow(&server, true);
        let end = now_ns();
        server.record_frame((end - start) / 1000);
        // Skips the missed slots after a stall; the server counts a frame
        // longer than the interval as an overrun (record_frame above).
        clock.advance(end);
        if let Some(l) = live {
            l.set_ticks(u64::from(server.current_tick()));
        }
        if end >= next_metrics {
            next_metrics = end + 1_000_000_000;
            server.set_cpu_time_us(tickpack_net::cpu::process_cpu_time_ns() / 1000);
            server.set_socket_drops(io.drops());
            if let Some(ep) = &endpoint {
                ep.publish(&metrics::server::families(&server, &drains, end / 1000));
            }
            if let Some(l) = live {
                let recent = server.recent_stats(end / 1000);
                l.publish(Slow {
                    players: server.player_names().map(str::to_string).collect(),
                    tick_p99_us: (recent.window_ms > 0).then_some(recent.lateness_p99_us),
                });
            }
        }
    }
    server.shutdown();
    io.send(&mut server);
    server.set_socket_drops(io.drops());
    Ok(Stopped {
        stats: server.stats(now_us()),
    })
}

/// A drain up to `deadline_ns`, at most [`DRAIN_MAX`] datagrams.
fn drain_limit(deadline_ns: u64) -> DrainLimit {
    DrainLimit {
        max_datagrams: DRAIN_MAX,
        deadline_ns,
    }
}
