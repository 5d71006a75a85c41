//! The health checks' answers decoded without privilege.
//!
//! The supervisor runs as root (it makes namespaces, cgroups, walls), and
//! its checks' answers come from the hosted servers: bytes of programs
//! tickpack did not write. So it only receives them (a copy with the
//! kernel's time stamp, `health.rs`) and hands each to its decoder, a
//! `tickpack __decoder` child run as the host's readers user (the last
//! uid of its block, no capability, `no_new_privs`, nothing of ours but
//! one socket: [`tickpack_sys::unprivileged::as_user`]), which answers
//! with what the datagram says ([`Decoded`]: the tickpack stats, or the
//! game query layer's [`Heard`]). The supervisor's own state machines
//! (the query session, the liveness windows) take those typed answers;
//! no decoder runs in the root process.
//!
//! The pair is a `SOCK_SEQPACKET` socketpair (message boundaries kept):
//! one request per datagram (`[what to decode as][the bytes]`, at most
//! [`MAX_DATAGRAM`] of them), one JSON answer per request, in order, at
//! most [`WINDOW`] requests ahead. The child is stateless: the same bytes
//! always give the same answer. What it says is untrusted: an answer over
//! [`MAX_ANSWER`] bytes, one that does not parse or is of another kind
//! than asked, or none within [`ANSWER_TIMEOUT`] fails the batch
//! ([`DecoderError`]); the supervisor then judges none of those windows
//! (a restart needs evidence), ends the child by its PID and starts
//! another.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use rustix::net::{RecvFlags, SendFlags};
use serde::{Deserialize, Serialize};
use tickpack_game::query::{Heard, Query};
use tickpack_sys::unprivileged::{self, User};
use tickpack_wire::{Packet, ServerStats};

/// The hidden subcommand the child runs.
pub const SUBCOMMAND: &str = "__decoder";
/// The longest datagram decoded (what a check read keeps).
pub const MAX_DATAGRAM: usize = 2048;
/// The longest answer read.
pub const MAX_ANSWER: usize = 64 * 1024;
/// Requests sent ahead of their answers.
pub const WINDOW: usize = 16;
/// How long an answer may take.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(1);

/// What a datagram is decoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// The tickpack protocol: a stats reply.
    Stats,
    /// The answer to a game query.
    Query(Query),
}

impl Ask {
    fn code(self) -> u8 {
        match self {
            Ask::Stats => 0,
            Ask::Query(Query::Q3Info) => 1,
            Ask::Query(Query::Q3Status) => 2,
            Ask::Query(Query::A2sInfo) => 3,
        }
    }

    fn of_code(c: u8) -> Option<Ask> {
        Some(match c {
            0 => Ask::Stats,
            1 => Ask::Query(Query::Q3Info),
            2 => Ask::Query(Query::Q3Status),
            3 => Ask::Query(Query::A2sInfo),
            _ => return None,
        })
    }
}

/// What a datagram says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Decoded {
    /// A tickpack stats reply (`None`: the datagram is none).
    Stats(Option<ServerStats>),
    /// What it means as the answer to a game query.
    Query(Heard),
}

impl Decoded {
    fn answers(&self, ask: Ask) -> bool {
        matches!(
            (ask, self),
            (Ask::Stats, Decoded::Stats(_)) | (Ask::Query(_), Decoded::Query(_))
        )
    }
}

/// Decodes `datagram` as `ask` says: the child's work (pure; never
/// panics, whatever the bytes: both decoders are fuzzed).
pub fn decode(ask: Ask, datagram: &[u8]) -> Decoded {
    match ask {
        Ask::Stats => Decoded::Stats(match Packet::decode(datagram) {
            Ok(Packet::Stats(s)) => Some(s),
            _ => None,
        }),
        Ask::Query(q) => Decoded::Query(q.decode(datagram)),
    }
}

/// Why a batch was not decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecoderError {
    #[error("starting it: {0}")]
    Start(io::Error),
    #[error("no answer within {} ms", ANSWER_TIMEOUT.as_millis())]
    Timeout,
    #[error("it ended")]
    Ended,
    #[error("it said what is not an answer: {0}")]
    Garbage(String),
    #[error("talking to it: {0}")]
    Io(io::Error),
}

fn io_error(e: rustix::io::Errno) -> DecoderError {
    match e {
        rustix::io::Errno::AGAIN => DecoderError::Timeout,
        rustix::io::Errno::PIPE | rustix::io::Errno::CONNRESET => DecoderError::Ended,
        e => DecoderError::Io(e.into()),
    }
}

/// The supervisor's end: a started child and its socket.
pub struct Decoder {
    child: Option<Child>,
    sock: OwnedFd,
    /// A request being written, an answer being read (kept: every poll
    /// with answers uses them).
    msg: Vec<u8>,
    buf: Vec<u8>,
}

/// A connected `SOCK_SEQPACKET` pair, both ends close-on-exec; `ours`
/// times out after [`ANSWER_TIMEOUT`] both ways.
fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let (ours, theirs) = tickpack_sys::seqpacket_pair()?;
    for t in [
        rustix::net::sockopt::Timeout::Recv,
        rustix::net::sockopt::Timeout::Send,
    ] {
        rustix::net::sockopt::set_socket_timeout(&ours, t, Some(ANSWER_TIMEOUT))?;
    }
    Ok((ours, theirs))
}

impl Decoder {
    /// Starts `exe __decoder` as `user`, its socket as its stdin.
    pub fn start(exe: &Path, user: User) -> Result<Decoder, DecoderError> {
        let (ours, theirs) = pair().map_err(DecoderError::Start)?;
        let mut cmd = unprivileged::command(exe, user);
        cmd.arg(SUBCOMMAND)
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            // Nothing it prints reaches a terminal: how it failed is the
            // supervisor's event.
            .stderr(Stdio::null());
        let child = cmd.spawn().map_err(DecoderError::Start)?;
        Ok(Decoder::with(Some(child), ours))
    }

    /// Over `sock`, whose other end someone else serves (tests).
    #[cfg(test)]
    pub(crate) fn over(sock: OwnedFd) -> Decoder {
        Decoder::with(None, sock)
    }

    fn with(child: Option<Child>, sock: OwnedFd) -> Decoder {
        Decoder {
            child,
            sock,
            msg: Vec::with_capacity(MAX_DATAGRAM + 1),
            buf: vec![0u8; MAX_ANSWER],
        }
    }

    /// Its PID.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Decodes every item, in order: one answer each, or an error for
    /// the whole batch.
    pub fn decode_all(&mut self, items: &[(Ask, &[u8])]) -> Result<Vec<Decoded>, DecoderError> {
        let mut out = Vec::with_capacity(items.len());
        let mut sent = 0;
        let Decoder { sock, msg, buf, .. } = self;
        while out.len() < items.len() {
            while sent < items.len() && sent - out.len() < WINDOW {
                let (ask, datagram) = items[sent];
                msg.clear();
                msg.push(ask.code());
                msg.extend_from_slice(&datagram[..datagram.len().min(MAX_DATAGRAM)]);
                rustix::net::send(&*sock, msg, SendFlags::NOSIGNAL).map_err(io_error)?;
                sent += 1;
            }
            let (n, full) =
                rustix::net::recv(&*sock, &mut buf[..], RecvFlags::TRUNC).map_err(io_error)?;
            if full == 0 {
                return Err(DecoderError::Ended);
            }
            if full > n {
                return Err(DecoderError::Garbage(format!(
                    "an answer of {full} bytes, over {MAX_ANSWER}"
                )));
            }
            let d: Decoded = serde_json::from_slice(&buf[..n]).map_err(|e| {
                DecoderError::Garbage(tickpack_sys::text::escape(&e.to_string(), 120))
            })?;
            if !d.answers(items[out.len()].0) {
                return Err(DecoderError::Garbage("an answer of another kind".into()));
            }
            out.push(d);
        }
        Ok(out)
    }
}

impl Drop for Decoder {
    /// Ends the child by its PID (ours) and reaps it.
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// The child: answers every request on `sock` until it closes. The exit
/// code: 0 when the supervisor went away, 2 for a request it never sends.
pub fn serve(sock: impl AsFd) -> i32 {
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    loop {
        let (n, full) = match rustix::net::recv(&sock, &mut buf[..], RecvFlags::TRUNC) {
            Ok(r) => r,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return 1,
        };
        if full == 0 {
            return 0;
        }
        let Some(ask) = Ask::of_code(buf[0]).filter(|_| full <= n) else {
            return 2;
        };
        let answer = serde_json::to_vec(&decode(ask, &buf[1..n])).expect("answers serialize");
        if rustix::net::send(&sock, &answer, SendFlags::NOSIGNAL).is_err() {
            return 0;
        }
    }
}

#[cfg(test)]
mod tests;
