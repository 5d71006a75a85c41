//! `tickpack ping`: closed-loop request/response round trips to a tickpack
//! server (ping → pong), one at a time, like `sockperf ping-pong`. This is
//! the latency floor the players' figures stand on.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;
use serde::Serialize;
use tickpack_report::{encode_histogram, new_histogram, record, Percentiles};
use tickpack_wire::Packet;

use super::{check_cpus, check_output_file, parse_positive_duration, parse_target};
use crate::exit::{fail, Code, Failure, WithCode};

#[derive(Clone, Copy, Debug, ValueEnum, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Sleep in recv until the reply arrives (what a normal program sees).
    Blocking,
    /// Spin on a non-blocking recv (the path's own cost, no wake-up).
    Busy,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Server address.
    #[arg(long, value_parser = parse_target)]
    pub target: SocketAddr,
    /// Round trips to measure (after 100 warm-up round trips).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub count: u64,
    /// Datagram size in bytes (the pong has the same size).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    #[arg(long, value_enum, default_value = "blocking")]
    pub mode: Mode,
    /// A ping unanswered for this long counts as lost.
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub timeout: Duration,
    /// Stop after this long even if --count is not reached.
    #[arg(long, default_value = "60s", allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub max_time: Duration,
    /// Pin to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Write the result document to this file (`-` for stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Percentiles with a fractional part (the ping histogram has 0.1 us steps).
#[derive(Serialize)]
pub struct FloatPercentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
    pub count: u64,
}

#[derive(Serialize)]
pub struct PingResult {
    pub schema: &'static str,
    pub tickpack_version: &'static str,
    pub target: String,
    pub size: usize,
    pub mode: Mode,
    pub cpu: Option<usize>,
    pub sent: u64,
    pub lost: u64,
    /// Round trip percentiles in microseconds, to 0.1 us.
    pub rtt_us: FloatPercentiles,
    /// The histogram behind `rtt_us`, in tenths of a microsecond.
    pub rtt_tenths_us_histogram: String,
}

pub fn run(a: Args) -> Result<(), Failure> {
    if a.size < tickpack_wire::PING_LEN || a.size > 65_000 {
        return Err(fail(
            Code::Config,
            format!("--size must be {}..=65000 bytes", tickpack_wire::PING_LEN),
        ));
    }
    if let Some(p) = &a.json {
        check_output_file("--json", p)?;
    }
    if let Some(cpu) = a.cpu {
        check_cpus("--cpu", &[cpu])?;
        tickpack_net::cpu::pin_current_thread(&[cpu]).code(Code::Config)?;
    }
    let local = if a.target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let sock = UdpSocket::bind(local).context("binding the ping socket")?;
    sock.connect(a.target)
        .with_context(|| format!("connecting to {}", a.target))?;
    match a.mode {
        Mode::Blocking => sock.set_read_timeout(Some(a.timeout))?,
        Mode::Busy => sock.set_nonblocking(true)?,
    }
    let mut hist = new_histogram();
    let mut out = Vec::with_capacity(a.size);
    let mut buf = vec![0u8; a.size.max(2048)];
    let (mut sent, mut lost) = (0u64, 0u64);
    let started = Instant::now();
    let warmup = 100;
    for i in 0..(a.count + warmup) {
        if started.elapsed() > a.max_time {
            break;
        }
        out.clear();
        let t0 = Instant::now();
        Packet::Ping {
            nonce: i,
            client_time_us: 0,
            len: a.size,
        }
        .encode(&mut out);
        match sock.send(&out) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(fail(
                    Code::Unreachable,
                    format!("{} refused: nothing is listening there", a.target),
                ))
            }
            Err(e) => return Err(anyhow::Error::from(e).context("sending a ping").into()),
        }
        let got = loop {
            match sock.recv(&mut buf) {
                Ok(n) => match Packet::decode(&buf[..n]) {
                    Ok(Packet::Pong { nonce, .. }) if nonce == i => break true,
                    _ => continue, // a stale pong from a ping we gave up on
                },
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && a.mode == Mode::Busy => {
                    if t0.elapsed() > a.timeout {
                        break false;
                    }
                    std::hint::spin_loop();
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break false
                }
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    return Err(fail(
                        Code::Unreachable,
                        format!("{} refused: nothing is listening there", a.target),
                    ))
                }
                Err(e) => return Err(anyhow::Error::from(e).context("receiving a pong").into()),
            }
        };
        let rtt_tenths = (t0.elapsed().as_nanos() / 100) as u64;
        if i < warmup {
            continue;
        }
        sent += 1;
        if got {
            record(&mut hist, rtt_tenths);
        } else {
            lost += 1;
        }
    }
    if sent > 0 && lost == sent {
        return Err(fail(
            Code::Unreachable,
            format!("no answer from {} to {sent} pings", a.target),
        ));
    }
    let tenths = Percentiles::from_histogram(&hist);
    let us = |v: u64| v as f64 / 10.0;
    let rtt_us = FloatPercentiles {
        p50: us(tenths.p50),
        p90: us(tenths.p90),
        p99: us(tenths.p99),
        p999: us(tenths.p999),
        max: us(tenths.max),
        mean: tenths.mean / 10.0,
        count: tenths.count,
    };
    println!(
        "ping {} x{} ({} B, {:?}): rtt p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us; {} lost",
        a.target, sent, a.size, a.mode, rtt_us.p50, rtt_us.p90, rtt_us.p99, rtt_us.p999, rtt_us.max, lost
    );
    let result = PingResult {
        schema: "tickpack.ping/1",
        tickpack_version: env!("CARGO_PKG_VERSION"),
        target: a.target.to_string(),
        size: a.size,
        mode: a.mode,
        cpu: a.cpu,
        sent,
        lost,
        rtt_us,
        rtt_tenths_us_histogram: encode_histogram(&hist),
    };
    if let Some(path) = &a.json {
        if path.as_os_str() == "-" {
            println!("{}", serde_json::to_string_pretty(&result)?);
        } else {
            tickpack_report::write_json_atomic(path, &result)?;
        }
    }
    Ok(())
}
