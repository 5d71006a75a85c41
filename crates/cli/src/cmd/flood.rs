//! `tickpack __flood` (hidden): a bounded flood of connectionless requests
//! (hello, connect, A2S, stats, ping) from unproven sources, for the flood
//! benchmark (`scripts/bench-flood.sh`) and the flood end-to-end test.
//!
//! Safety rails: it sends only to a loopback address (127.0.0.0/8 or ::1),
//! stops after `--duration` (at most 120 s) or `--count` datagrams, and paces
//! itself to `--rate` with sleeps (it never spins), so it leaves the rest of
//! its CPU to whatever shares it.

use std::net::SocketAddr;
use std::time::Duration;

use clap::ValueEnum;
use std::os::fd::AsRawFd;
use tickpack_net::clock::now_ns;

use tickpack_net::socket::{SocketOptions, UdpSocket};
use tickpack_wire::{a2s, Packet, Token, PROTOCOL_VERSION, TOKEN_LEN};

use super::{parse_addr, parse_duration};
use crate::exit::{fail, Code, Failure, WithCode};

/// Longest flood allowed.
const MAX_DURATION: Duration = Duration::from_secs(120);
/// Datagrams handed to one `sendmmsg` at most.
const BATCH: usize = 64;

/// What the flood asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Connection hellos (128 B): each answer costs the server an HMAC.
    Hello,
    /// Connects with a forged token (128 B).
    Connect,
    /// A2S_INFO without a challenge (25 B).
    A2sInfo,
    /// A2S_PLAYER without a challenge (9 B).
    A2sPlayers,
    /// Stats requests (160 B), as the host's health check sends.
    Stats,
    /// Pings (64 B).
    Ping,
}

impl Kind {
    fn datagram(self, i: u64) -> Vec<u8> {
        let mut v = Vec::new();
        match self {
            Kind::Hello => Packet::Hello {
                version: PROTOCOL_VERSION,
                nonce: i,
            }
            .encode(&mut v),
            Kind::Connect => Packet::Connect {
                version: PROTOCOL_VERSION,
                nonce: i,
                token: Token([0x5a; TOKEN_LEN]),
                name: "flood",
            }
            .encode(&mut v),
            Kind::A2sInfo => a2s::Query::Info { challenge: None }.encode(&mut v),
            Kind::A2sPlayers => a2s::Query::Players { challenge: None }.encode(&mut v),
            Kind::Stats => Packet::StatsRequest {
                nonce: i,
                proof: None,
            }
            .encode(&mut v),
            Kind::Ping => Packet::Ping {
                nonce: i,
                client_time_us: 0,
                len: 64,
            }
            .encode(&mut v),
        }
        v
    }
}

/// The datagrams of a flood, in turn: the kinds asked for take equal
/// shares whatever the size of each batch.
struct Mix {
    /// A few distinct datagrams per kind (different nonces), reused.
    templates: Vec<Vec<u8>>,
    /// Two rounds of iovecs over `templates`, so that any batch from any
    /// position is one slice.
    iovs: Vec<libc::iovec>,
    /// Where the next batch starts, within the first round.
    at: usize,
}

impl Mix {
    fn new(kinds: &[Kind]) -> Self {
        let templates: Vec<Vec<u8>> = (0..(kinds.len() * BATCH) as u64)
            .map(|i| kinds[i as usize % kinds.len()].datagram(i))
            .collect();
        let iovs = templates
            .iter()
            .chain(&templates)
            .map(|t| libc::iovec {
                iov_base: t.as_ptr() as *mut libc::c_void,
                iov_len: t.len(),
            })
            .collect();
        Self {
            templates,
            iovs,
            at: 0,
        }
    }

    /// The next `n` datagrams (at most [`BATCH`]).
    fn next(&mut self, n: usize) -> &mut [libc::iovec] {
        let n = n.min(BATCH);
        let from = self.at;
        self.at = (self.at + n) % self.templates.len();
        &mut self.iovs[from..from + n]
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Server address; must be a loopback address.
    #[arg(long, value_parser = parse_addr)]
    pub target: SocketAddr,
    /// Request kinds, sent in turn (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "hello")]
    pub kind: Vec<Kind>,
    /// Datagrams per second (0: as fast as one thread can).
    #[arg(long, default_value_t = 100_000)]
    pub rate: u64,
    /// How long to flood (at most 120s).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Duration,
    /// Stop after this many datagrams.
    #[arg(long, default_value_t = u64::MAX)]
    pub count: u64,
    /// Source sockets (distinct ports), used in turn.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub sources: u16,
    /// Pin the flood to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
}

pub fn run(a: Args) -> Result<(), Failure> {
    if !a.target.ip().is_loopback() {
        return Err(fail(
            Code::Config,
            format!(
                "--target {} is not a loopback address: the flood only sends to 127.0.0.0/8 or ::1",
                a.target
            ),
        ));
    }
    if a.duration.is_zero() || a.duration > MAX_DURATION {
        return Err(fail(
            Code::Config,
            format!("--duration must be more than 0 and at most {MAX_DURATION:?}"),
        ));
    }
    if let Some(cpu) = a.cpu {
        tickpack_net::cpu::pin_current_thread(&[cpu]).code(Code::Config)?;
    }
    let local: SocketAddr = if a.target.is_ipv4() {
        "127.0.0.1:0".parse().expect("valid address")
    } else {
        "[::1]:0".parse().expect("valid address")
    };
    let socks = (0..a.sources)
        .map(|_| {
            UdpSocket::bind(
                local,
                &SocketOptions {
                    send_buffer: Some(4 << 20),
                    ..Default::default()
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .code(Code::Runtime)?;
    for s in &socks {
        // Connected: the kernel skips the route lookup per datagram.
        s.connect(a.target).code(Code::Runtime)?;
    }
    let mut mix = Mix::new(&a.kind);

    let start = now_ns();
    let end = start + a.duration.as_nanos() as u64;
    let (mut sent, mut refused, mut unsent, mut turn) = (0u64, 0u64, 0u64, 0usize);
    loop {
        let now = now_ns();
        if now >= end || sent >= a.count {
            break;
        }
        let due = if a.rate == 0 {
            sent + BATCH as u64
        } else {
            ((now - start) as u128 * u128::from(a.rate) / 1_000_000_000) as u64
        }
        .min(a.count);
        if due <= sent {
            // Sleep to the next datagram's time (at least 50 us, so a high
            // rate goes out in batches rather than in a spin).
            let next = start + ((sent + 1) as u128 * 1_000_000_000 / u128::from(a.rate)) as u64;
            std::thread::sleep(Duration::from_nanos(next.saturating_sub(now).max(50_000)));
            continue;
        }
        let n = (due - sent).min(BATCH as u64) as usize;
        let sock = &socks[turn % socks.len()];
        turn += 1;
        match send_connected(sock, mix.next(n)) {
            Ok(k) => {
                sent += k as u64;
                // What the kernel would not take now (full send buffer) is
                // skipped: the schedule moves on, as a real flood would.
                unsent += (n - k) as u64;
            }
            // ICMP port unreachable from a server that is gone: count, go on.
            Err(_) => refused += 1,
        }
    }
    let secs = (now_ns() - start) as f64 / 1e9;
    println!(
        "flood to {}: {sent} datagrams ({:?}) from {} source(s) in {secs:.2} s = {:.0} pps, {unsent} not sent, {refused} send errors",
        a.target,
        a.kind,
        socks.len(),
        sent as f64 / secs.max(1e-9),
    );
    Ok(())
}

/// One `sendmmsg` of `iovs` (one datagram each) on a connected socket;
/// returns how many the kernel took.
fn send_connected(sock: &UdpSocket, iovs: &mut [libc::iovec]) -> std::io::Result<usize> {
    // SAFETY: mmsghdr is plain data; all-zero is a valid value (no name, no control).
    let zero: libc::mmsghdr = unsafe { std::mem::zeroed() };
    let mut hdrs = [zero; BATCH];
    for (h, iov) in hdrs.iter_mut().zip(iovs.iter_mut()) {
        h.msg_hdr.msg_iov = iov;
        h.msg_hdr.msg_iovlen = 1;
    }
    let n = iovs.len().min(BATCH);
    // SAFETY: the first `n` headers point at live iovecs, which point at the
    // templates' bytes (alive for the whole flood); sendmmsg only reads them.
    let rc = unsafe { libc::sendmmsg(sock.as_raw_fd(), hdrs.as_mut_ptr(), n as libc::c_uint, 0) };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        return match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(0),
            _ => Err(e),
        };
    }
    Ok(rc as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_sent_in_small_batches_sent_mostly_its_first_kinds() {
        // The bug: every batch started at the first datagram, so at the
        // small batches of a modest rate, `--kind hello,a2s-info,stats,
        // ping,connect` sent hellos every time and connects rarely.
        let kinds = [
            Kind::Hello,
            Kind::A2sInfo,
            Kind::Stats,
            Kind::Ping,
            Kind::Connect,
        ];
        let of = |iov: &libc::iovec| {
            // SAFETY: the iovec points at one of the mix's templates.
            let bytes =
                unsafe { std::slice::from_raw_parts(iov.iov_base as *const u8, iov.iov_len) };
            (0..kinds.len() * BATCH)
                .find(|&i| kinds[i % kinds.len()].datagram(i as u64) == bytes)
                .map(|i| i % kinds.len())
                .expect("a template")
        };
        for n in [1, 2, 3, 7, BATCH] {
            let mut mix = Mix::new(&kinds);
            let mut count = [0usize; 5];
            for _ in 0..100 {
                for iov in mix.next(n).iter() {
                    count[of(iov)] += 1;
                }
            }
            let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
            assert!(hi - lo <= 1, "batches of {n}: {count:?}");
        }
    }
}
