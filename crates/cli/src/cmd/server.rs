//! `tickpack server`: the reference game server's I/O loop around
//! [`tickpack_sim::Server`].
//!
//! One thread does everything, like the single-threaded servers it stands
//! for: wait (precisely) for the next tick or a datagram, hand datagrams to
//! the state machine, run the tick, send the snapshots with `sendmmsg`, and
//! record how long the tick took. A second thread, only with `--metrics`,
//! serves Prometheus text from a copy refreshed once a second.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use rand::RngCore;
use tickpack_net::clock::{now_ns, now_us};
use tickpack_net::socket::{RecvBatch, SendBatch, SocketOptions, UdpSocket};
use tickpack_net::wait::{WaitMode, Waiter, Wake};
use tickpack_sim::world::CostProfile;
use tickpack_sim::{Server, ServerConfig};

use super::{check_cpus, parse_addr, parse_positive_duration};
use crate::exit::{Code, Failure, WithCode};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Timer {
    /// timerfd + poll + a short adaptive spin (the default)
    Precise,
    /// plain clock_nanosleep to the tick; datagrams wait for the tick (baseline)
    Plain,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on (UDP); port 0 picks a free port, printed at start.
    #[arg(long, default_value = "0.0.0.0:27015", value_parser = parse_addr)]
    pub bind: SocketAddr,
    /// Ticks per second.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub tick_hz: u16,
    /// Human player slots.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u8).range(1..=255))]
    pub max_players: u8,
    /// Server-side bots that move, aim and shoot like players (they cost CPU, not slots).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=64))]
    pub bots: u8,
    /// Bytes of each snapshot datagram sent to each player every tick.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u16).range(64..=65000))]
    pub snapshot_bytes: u16,
    /// Game work per tick: light, default (= reference), heavy, a factor of the
    /// reference (e.g. 2.5) or of a profile (heavy*2).
    /// The default approximates one CS 1.6-era server with 12 players
    /// (see docs/methodology.md).
    #[arg(long, default_value = "default", value_parser = parse_cost)]
    pub cost: CostProfile,
    /// Serve Prometheus metrics over HTTP on this address (e.g. 127.0.0.1:9100).
    #[arg(long, value_parser = parse_addr)]
    pub metrics: Option<SocketAddr>,
    /// Pin the server to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// How to wait for the next tick.
    #[arg(long, value_enum, default_value = "precise")]
    pub timer: Timer,
    /// Server name shown to server browsers (A2S_INFO).
    #[arg(long, default_value = "tickpack reference server")]
    pub name: String,
    /// Stop by itself after this long (default: run until SIGTERM or Ctrl-C).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Seed of the world (map layout, bots).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn parse_cost(s: &str) -> Result<CostProfile, String> {
    s.parse::<CostProfile>().map_err(|e| e.to_string())
}

pub fn run(a: Args) -> Result<(), Failure> {
    if let Some(cpu) = a.cpu {
        check_cpus("--cpu", &[cpu])?;
        tickpack_net::cpu::pin_current_thread(&[cpu]).code(Code::Config)?;
    }
    let sock = UdpSocket::bind(
        a.bind,
        &SocketOptions {
            recv_buffer: Some(4 << 20),
            send_buffer: Some(4 << 20),
            busy_poll_us: None,
        },
    )
    .code(Code::Config)?;
    let local = sock.local_addr();
    let cfg = ServerConfig {
        tick_hz: a.tick_hz,
        max_players: a.max_players,
        bots: a.bots,
        snapshot_len: a.snapshot_bytes,
        name: a.name.clone(),
        port: local.port(),
        cost: a.cost,
        seed: a.seed,
        ..Default::default()
    };
    let mut secret = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut secret);
    let mut server = Server::new(cfg, secret);

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let metrics = Arc::new(Mutex::new(String::new()));
    if let Some(addr) = a.metrics {
        let listener = TcpListener::bind(addr)
            .with_context(|| format!("cannot serve metrics on {addr}"))
            .code(Code::Config)?;
        let m = metrics.clone();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve_metrics(listener, m))
            .context("starting the metrics thread")?;
    }

    // The line scripts and tests wait for; keep its shape.
    println!(
        "tickpack server listening on {local} (tick {} Hz, {} slots, {} bots, {} B snapshots, pid {})",
        a.tick_hz,
        a.max_players,
        a.bots,
        a.snapshot_bytes,
        std::process::id()
    );
    let _ = std::io::stdout().flush();

    let mode = match a.timer {
        Timer::Precise => WaitMode::Precise,
        Timer::Plain => WaitMode::Plain,
    };
    let mut waiter = Waiter::new(mode).code(Code::Runtime)?;
    let mut rx = RecvBatch::new(32, 2048);
    let mut tx = SendBatch::new();
    let fds = [std::os::fd::AsRawFd::as_raw_fd(&sock)];
    let interval_ns = 1_000_000_000 / u64::from(a.tick_hz);
    // --duration is at most a year (its parser), far from overflowing.
    let stop_at = a
        .duration
        .map(|d| now_ns().saturating_add(d.as_nanos() as u64));
    let mut due = now_ns() + interval_ns;
    let mut next_metrics = now_ns();

    let drain = |server: &mut Server, rx: &mut RecvBatch, tx: &mut SendBatch| {
        while let Ok(n) = sock.recv_batch(rx) {
            let now = now_us();
            for (from, data) in rx.iter() {
                server.handle(now, from, data);
            }
            // A short batch means the socket is empty: skip the extra call.
            if n < rx.capacity() {
                break;
            }
        }
        server.drain_transmits(|to, bytes| tx.push(to, bytes));
        let _ = tx.flush(&sock);
    };

    while !stop.load(Ordering::Relaxed) && stop_at.is_none_or(|s| now_ns() < s) {
        match waiter.wait(&fds, due).code(Code::Runtime)? {
            Wake::Readable(_) => {
                drain(&mut server, &mut rx, &mut tx);
                continue;
            }
            Wake::Deadline => {}
        }
        let start = now_ns();
        // Datagrams that arrived while we slept to the deadline (plain timer).
        drain(&mut server, &mut rx, &mut tx);
        server.tick(start / 1000, due / 1000);
        server.drain_transmits(|to, bytes| tx.push(to, bytes));
        let _ = tx.flush(&sock);
        let end = now_ns();
        server.record_frame((end - start) / 1000);
        due += interval_ns;
        if end > due + interval_ns {
            // More than a whole tick behind: skip the missed ticks rather
            // than run them back to back (they are counted as overruns).
            due = end + interval_ns - (end - due) % interval_ns;
        }
        if end >= next_metrics {
            next_metrics = end + 1_000_000_000;
            server.set_cpu_time_us(tickpack_net::cpu::process_cpu_time_ns() / 1000);
            if a.metrics.is_some() {
                *metrics.lock().expect("metrics lock") = prometheus_text(&server, end / 1000);
            }
        }
    }
    server.shutdown();
    server.drain_transmits(|to, bytes| tx.push(to, bytes));
    let _ = tx.flush(&sock);
    let s = server.stats(now_us());
    eprintln!(
        "tickpack server stopped after {} ticks: frame p99 {} us, tick lateness p99 {} us, {} overruns, {} malformed datagrams dropped",
        s.tick, s.frame_p99_us, s.lateness_p99_us, s.overruns, s.malformed
    );
    Ok(())
}

/// Prometheus text exposition of one server.
pub fn prometheus_text(server: &Server, now_us: u64) -> String {
    let s = server.stats(now_us);
    let c = server.counters();
    let mut t = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, lines: &[(String, f64)]| {
        t.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (labels, v) in lines {
            t.push_str(&format!("{name}{labels} {v}\n"));
        }
    };
    let one = |v: f64| vec![(String::new(), v)];
    let q = |p50: u32, p99: u32, max: u32| {
        vec![
            ("{quantile=\"0.5\"}".to_string(), f64::from(p50) / 1e6),
            ("{quantile=\"0.99\"}".to_string(), f64::from(p99) / 1e6),
            ("{quantile=\"1\"}".to_string(), f64::from(max) / 1e6),
        ]
    };
    metric(
        "tickpack_ticks_total",
        "counter",
        "Ticks run.",
        &one(s.tick as f64),
    );
    metric(
        "tickpack_players",
        "gauge",
        "Connected human players.",
        &one(f64::from(s.players)),
    );
    metric(
        "tickpack_bots",
        "gauge",
        "Server-side bots.",
        &one(f64::from(s.bots)),
    );
    metric(
        "tickpack_frame_seconds",
        "summary",
        "Server processing time per tick.",
        &q(s.frame_p50_us, s.frame_p99_us, s.frame_max_us),
    );
    metric(
        "tickpack_tick_lateness_seconds",
        "summary",
        "How late ticks started.",
        &q(s.lateness_p50_us, s.lateness_p99_us, s.lateness_max_us),
    );
    metric(
        "tickpack_overruns_total",
        "counter",
        "Ticks longer than the tick interval.",
        &one(s.overruns as f64),
    );
    metric(
        "tickpack_packets_received_total",
        "counter",
        "Datagrams received.",
        &one(c.packets_in as f64),
    );
    metric(
        "tickpack_packets_sent_total",
        "counter",
        "Datagrams sent.",
        &one(c.packets_out as f64),
    );
    metric(
        "tickpack_malformed_total",
        "counter",
        "Datagrams dropped as malformed or not allowed.",
        &one(c.malformed as f64),
    );
    metric(
        "tickpack_amplification_drops_total",
        "counter",
        "Replies withheld from unproven sources.",
        &one(c.amplification_drops as f64),
    );
    metric(
        "tickpack_cpu_seconds_total",
        "counter",
        "CPU time used by the server process.",
        &one(s.cpu_time_us as f64 / 1e6),
    );
    t
}

pub fn serve_metrics(listener: TcpListener, text: Arc<Mutex<String>>) {
    use std::io::Read;
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        let mut req = [0u8; 1024];
        let _ = conn.read(&mut req);
        let body = text.lock().map(|t| t.clone()).unwrap_or_default();
        let _ = write!(
            conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

/// The hosts' and the bench's launch contract ([`ReferenceServer::spec`])
/// must build flags that these `Args` parse back to the same options.
#[cfg(test)]
mod launch_contract_tests {
    use std::path::Path;

    use clap::Parser;
    use tickpack_host::launch::{ReferenceServer, Slot, Word};
    use tickpack_wire::TickRate;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(r: &ReferenceServer) -> Args {
        let slot = Slot {
            ip: "10.1.0.2",
            port: 27016,
            id: 1,
            dir: Path::new("/run/i1"),
            tickpack: Path::new("/bin/tickpack"),
        };
        let argv = r.spec().argv(&slot);
        assert_eq!(argv[..2], ["/bin/tickpack", "server"]);
        let flags = std::iter::once("tickpack server".to_string()).chain(argv[2..].iter().cloned());
        match Cli::try_parse_from(flags) {
            Ok(c) => c.args,
            Err(e) => panic!("`tickpack server` refuses the flags {argv:?}: {e}"),
        }
    }

    #[test]
    fn the_reference_servers_launch_flags_parse_back_to_the_same_options() {
        for r in [
            ReferenceServer {
                tick: TickRate::new(64).unwrap(),
                max_players: 10,
                bots: 2,
                cost: "heavy*2".into(),
                name: Some(Word::text("s1")),
            },
            ReferenceServer {
                tick: TickRate::new(1000).unwrap(),
                max_players: 255,
                bots: 0,
                cost: "light".into(),
                name: None,
            },
        ] {
            let a = parse(&r);
            // Every option, so a new one must be added here too.
            let ReferenceServer {
                tick,
                max_players,
                bots,
                cost,
                name,
            } = &r;
            assert_eq!(a.bind, "10.1.0.2:27016".parse().unwrap());
            assert_eq!(a.tick_hz, tick.hz());
            assert_eq!(a.max_players, *max_players);
            assert_eq!(a.bots, *bots);
            assert_eq!(a.cost, parse_cost(cost).unwrap());
            match name {
                Some(_) => assert_eq!(a.name, "s1"),
                None => assert_eq!(a.name, "tickpack reference server"),
            }
        }
    }
}
