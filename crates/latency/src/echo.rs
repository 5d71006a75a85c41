//! The echo side: one UDP socket per stream, created inside the path's
//! network namespaces, and the loops that answer on them.
//!
//! A socket belongs to the network namespace it was created in, for its
//! whole life, whichever thread later reads it. So [`EchoSet::in_namespaces`]
//! runs one short-lived thread that `setns(CLONE_NEWNET)`s into each
//! instance namespace in turn and binds `instance_addr:port` there; that
//! thread ends right after, so its namespace never leaks into another
//! thread. Datagrams therefore cross the path exactly as they would to a
//! server started inside the namespace. The blocking echo threads also
//! enter their socket's namespace before serving (as a server there would
//! run); the busy echo thread serves every namespace of a path at once and
//! stays in the root namespace, which changes nothing for the datagrams.
//!
//! Two ways to answer, matching the two [`Mode`](crate::Mode)s:
//!
//! - blocking: one thread per socket, blocking `recv_from` (with a short
//!   timeout so it notices the end); with 8 streams on a 2-CPU machine the
//!   8 echo threads share the echo CPU, as 8 game servers would;
//! - busy: one thread for the whole path, polling its sockets round robin
//!   with non-blocking `recv_from`. Eight spinning threads on one CPU would
//!   measure the scheduler's time slices, not the path.
//!
//! An echo answers only its own client's address (the client sockets are
//! made before the echo starts) and only datagrams that carry the request
//! header; anything else is counted and dropped, never answered.

use std::fs::File;
use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::settings::HEADER_LEN;
use crate::LatencyError;

/// The first four bytes of every request and reply.
pub(crate) const MAGIC: [u8; 4] = *b"TPLT";

/// How often a blocking echo thread wakes up to check for the end.
const BLOCKING_POLL: Duration = Duration::from_millis(20);

/// One path's echo sockets.
#[derive(Debug)]
pub struct EchoSet {
    sockets: Vec<UdpSocket>,
    targets: Vec<SocketAddrV4>,
    /// The namespace file of each socket (none on loopback).
    netns: Vec<Option<PathBuf>>,
}

impl EchoSet {
    /// `streams` sockets on 127.0.0.1, each on a port the kernel picks:
    /// the native path.
    pub fn loopback(streams: u32) -> Result<EchoSet, LatencyError> {
        let mut sockets = Vec::new();
        let mut targets = Vec::new();
        for _ in 0..streams {
            let any = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0);
            let s = UdpSocket::bind(any).map_err(|source| LatencyError::Bind {
                addr: any,
                netns: None,
                source,
            })?;
            let local = match s.local_addr() {
                Ok(SocketAddr::V4(a)) => a,
                Ok(other) => unreachable!("bound an IPv4 address, got {other}"),
                Err(e) => return Err(LatencyError::io("reading the echo socket's port", e)),
            };
            sockets.push(s);
            targets.push(local);
        }
        Ok(EchoSet {
            netns: vec![None; sockets.len()],
            sockets,
            targets,
        })
    }

    /// One socket per `(namespace file, address)`, each created inside that
    /// namespace (see the module docs).
    pub fn in_namespaces(binds: &[(PathBuf, SocketAddrV4)]) -> Result<EchoSet, LatencyError> {
        let made = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut sockets = Vec::with_capacity(binds.len());
                    for (ns, addr) in binds {
                        enter_netns(ns)?;
                        let s = UdpSocket::bind(addr).map_err(|source| LatencyError::Bind {
                            addr: *addr,
                            netns: Some(ns.clone()),
                            source,
                        })?;
                        sockets.push(s);
                    }
                    Ok::<_, LatencyError>(sockets)
                })
                .join()
                .unwrap_or_else(|_| Err(LatencyError::io("the namespace thread", panicked())))
        })?;
        Ok(EchoSet {
            sockets: made,
            targets: binds.iter().map(|(_, a)| *a).collect(),
            netns: binds.iter().map(|(n, _)| Some(n.clone())).collect(),
        })
    }

    /// Where the clients send: one address per stream.
    pub fn targets(&self) -> &[SocketAddrV4] {
        &self.targets
    }

    /// The namespace file socket `i` lives in, if any.
    pub(crate) fn netns(&self, i: usize) -> Option<&Path> {
        self.netns.get(i).and_then(|n| n.as_deref())
    }

    pub(crate) fn sockets(&self) -> &[UdpSocket] {
        &self.sockets
    }

    /// Reads and discards whatever is queued (late requests of an earlier
    /// measurement), at most a few thousand datagrams per socket.
    pub(crate) fn drain(&self) -> Result<(), LatencyError> {
        let mut buf = [0u8; 64];
        for s in &self.sockets {
            s.set_nonblocking(true)
                .map_err(|e| LatencyError::io("setting an echo socket non-blocking", e))?;
            for _ in 0..4096 {
                if s.recv_from(&mut buf).is_err() {
                    break;
                }
            }
        }
        Ok(())
    }
}

fn panicked() -> io::Error {
    io::Error::other("panicked")
}

/// Moves the calling thread into the network namespace at `ns`.
pub(crate) fn enter_netns(ns: &Path) -> Result<(), LatencyError> {
    let f = File::open(ns).map_err(|source| LatencyError::Netns {
        netns: ns.to_path_buf(),
        source,
    })?;
    // SAFETY: `f` is an open file for the whole call; setns with
    // CLONE_NEWNET changes only the calling thread's network namespace,
    // and every caller is a thread of its own that ends soon after (the
    // socket-making helper, or a blocking echo thread of one measurement).
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(LatencyError::Netns {
            netns: ns.to_path_buf(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// What an echo loop did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EchoCounts {
    pub echoed: u64,
    /// From a stranger, too short, or without the magic: not answered.
    pub dropped: u64,
    /// `send_to` failed.
    pub send_errors: u64,
}

impl EchoCounts {
    pub(crate) fn add(&mut self, o: EchoCounts) {
        self.echoed += o.echoed;
        self.dropped += o.dropped;
        self.send_errors += o.send_errors;
    }
}

/// What each echo loop answers: the request itself, or a reply of
/// `response_len` bytes that starts with the request's header.
pub(crate) struct Answer {
    response: Option<Vec<u8>>,
}

impl Answer {
    pub(crate) fn new(response_len: Option<usize>) -> Answer {
        Answer {
            response: response_len.map(|n| vec![0u8; n.max(HEADER_LEN)]),
        }
    }

    /// Answers `req` (received from `from`) on `sock` if `from` is the
    /// expected peer and `req` carries the header.
    fn reply(
        &mut self,
        sock: &UdpSocket,
        req: &[u8],
        from: SocketAddr,
        peer: SocketAddr,
        c: &mut EchoCounts,
    ) {
        if from != peer || req.len() < HEADER_LEN || req[..4] != MAGIC {
            c.dropped += 1;
            return;
        }
        let out: &[u8] = match &mut self.response {
            None => req,
            Some(r) => {
                r[..HEADER_LEN].copy_from_slice(&req[..HEADER_LEN]);
                r
            }
        };
        match sock.send_to(out, from) {
            Ok(_) => c.echoed += 1,
            Err(_) => c.send_errors += 1,
        }
    }
}

/// Blocking echo on one socket until `done` (or `limit`, a safety bound).
pub(crate) fn serve_blocking(
    sock: &UdpSocket,
    peer: SocketAddr,
    mut answer: Answer,
    done: &AtomicBool,
    limit: Instant,
) -> Result<EchoCounts, LatencyError> {
    sock.set_nonblocking(false)
        .and_then(|()| sock.set_read_timeout(Some(BLOCKING_POLL)))
        .map_err(|e| LatencyError::io("setting an echo socket blocking", e))?;
    let mut c = EchoCounts::default();
    let mut buf = vec![0u8; 65_536];
    while !done.load(Ordering::Relaxed) && Instant::now() < limit {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => answer.reply(sock, &buf[..n], from, peer, &mut c),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // ICMP errors queued on the socket and the like: not fatal.
            Err(_) => c.send_errors += 1,
        }
    }
    Ok(c)
}

/// Busy-polling echo over all `socks` (with `peers[i]` the peer of
/// `socks[i]`) until `done` (or `limit`).
pub(crate) fn serve_busy(
    socks: &[UdpSocket],
    peers: &[SocketAddr],
    mut answer: Answer,
    done: &AtomicBool,
    limit: Instant,
) -> Result<EchoCounts, LatencyError> {
    for s in socks {
        s.set_nonblocking(true)
            .map_err(|e| LatencyError::io("setting an echo socket non-blocking", e))?;
    }
    let mut c = EchoCounts::default();
    let mut buf = vec![0u8; 65_536];
    let mut sweeps: u64 = 0;
    while !done.load(Ordering::Relaxed) {
        sweeps += 1;
        if sweeps & 1023 == 0 && Instant::now() >= limit {
            break;
        }
        for (sock, peer) in socks.iter().zip(peers) {
            match sock.recv_from(&mut buf) {
                Ok((n, from)) => answer.reply(sock, &buf[..n], from, *peer, &mut c),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => c.send_errors += 1,
            }
        }
        std::hint::spin_loop();
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(stream: u32, seq: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        v[..4].copy_from_slice(&MAGIC);
        v[4..8].copy_from_slice(&stream.to_le_bytes());
        v[8..16].copy_from_slice(&seq.to_le_bytes());
        v
    }

    #[test]
    fn echo_answers_its_client_only_and_only_with_the_header() {
        let set = EchoSet::loopback(1).unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
        for s in [&client, &stranger] {
            s.set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
        }
        let target = set.targets()[0];
        let done = AtomicBool::new(false);
        let limit = Instant::now() + Duration::from_secs(10);
        let counts = std::thread::scope(|sc| {
            let h = sc.spawn(|| {
                serve_blocking(
                    &set.sockets()[0],
                    client.local_addr().unwrap(),
                    Answer::new(Some(2000)),
                    &done,
                    limit,
                )
            });
            let mut buf = [0u8; 4096];
            // A stranger gets nothing, not even for a well-formed request.
            stranger.send_to(&request(0, 1, 64), target).unwrap();
            assert!(stranger.recv(&mut buf).is_err());
            // Garbage from the right peer gets nothing either.
            client.send_to(b"hello, is this a server?", target).unwrap();
            // A request gets a 2000-byte answer carrying its header.
            client.send_to(&request(3, 7, 40), target).unwrap();
            let n = client.recv(&mut buf).unwrap();
            assert_eq!(n, 2000);
            assert_eq!(&buf[..16], &request(3, 7, 16)[..]);
            done.store(true, Ordering::Relaxed);
            h.join().unwrap().unwrap()
        });
        assert_eq!(counts.echoed, 1);
        assert_eq!(counts.dropped, 2);
    }
}
