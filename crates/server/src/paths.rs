//! The server's receive paths: its listening socket, and one connected
//! socket per player bound to the same address.
//!
//! Every datagram used to arrive in one queue, the listening socket's, so a
//! flood from any source queued ahead of the players' commands, and once
//! that queue was full (the server descheduled for a moment) the kernel
//! dropped players' commands with the flood. Now, once a player is
//! connected, the server opens a socket bound to its own address
//! (`SO_REUSEPORT`) and connected to the player: the kernel prefers the
//! most specific match, so that player's datagrams land in a queue of their
//! own, and the listening socket keeps the connectionless traffic (hellos,
//! queries, unproven sources, floods). [`Paths::receive`] reads the
//! players' queues first, then the listening socket with what is left of
//! the drain's budget: a flood fills only its own queue, and is read last.
//!
//! The state machine does not care which socket a datagram came from (it
//! judges every datagram by its source address as before), so a datagram
//! that lands in the listening socket (a player's first commands, before
//! its socket exists) is handled the same. A player that cannot be given a
//! socket (no file descriptors left) stays on the listening socket. Replies
//! still leave through the listening socket, in one `sendmmsg` per tick.
//!
//! All the sockets sit in one `epoll` set, which is what the waiter watches
//! and what names the ready sockets: a `poll` over every player's socket
//! cost a third of the server's CPU at 16 players.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

use tickpack_net::clock::{now_ns, now_us};
use tickpack_net::socket::{RecvBatch, SendBatch, SocketOptions, UdpSocket};
use tickpack_net::Epoll;
use tickpack_sim::Server;

use crate::drain::{self, DrainEnd, DrainLimit};

/// The listening socket, the players' sockets and the batches they share.
pub(crate) struct Paths<'a> {
    listener: &'a UdpSocket,
    /// One connected socket per player that has one, with its address.
    players: Vec<(SocketAddr, UdpSocket)>,
    /// Players that could not be given a socket (they stay on the
    /// listening socket); counted so the cheap check below still balances.
    without: Vec<SocketAddr>,
    /// Every socket: token 0 the listening socket, `i + 1` player `i`'s.
    /// `None` if the kernel gave no epoll set: every socket is then read.
    epoll: Option<Epoll>,
    /// What the waiter watches: the epoll set's fd (or every socket's).
    fds: Vec<RawFd>,
    tokens: Vec<u64>,
    ready: Vec<usize>,
    rx: RecvBatch,
    tx: SendBatch,
}

impl<'a> Paths<'a> {
    /// `listener` must already allow its address to be shared
    /// ([`UdpSocket::share_port`]).
    pub(crate) fn new(listener: &'a UdpSocket, rx: RecvBatch) -> Self {
        let epoll = Epoll::new()
            .and_then(|e| e.add(listener.as_raw_fd(), 0).map(|()| e))
            .ok();
        let fds = vec![epoll
            .as_ref()
            .map_or(listener.as_raw_fd(), |e| e.as_raw_fd())];
        Paths {
            listener,
            players: Vec::new(),
            without: Vec::new(),
            epoll,
            fds,
            tokens: Vec::new(),
            ready: Vec::new(),
            rx,
            tx: SendBatch::new(),
        }
    }

    /// The sockets to wait on.
    pub(crate) fn fds(&self) -> &[RawFd] {
        &self.fds
    }

    /// Datagrams the kernel dropped on every socket (wrapping counters
    /// summed; a player's socket that went away takes its drops along).
    pub(crate) fn drops(&self) -> u64 {
        let own = self.players.iter().filter_map(|(_, s)| s.drops().ok());
        self.listener.drops().unwrap_or(0) + own.sum::<u64>()
    }

    /// Sends what the server queued, in one `sendmmsg` where it fits.
    pub(crate) fn send(&mut self, server: &mut Server) {
        server.drain_transmits(|to, bytes| self.tx.push(to, bytes));
        let _ = self.tx.flush(self.listener);
    }

    /// Receives and handles datagrams, the players' sockets first, until
    /// they and the listening socket are empty, `limit`'s budget is spent
    /// or its deadline passes, then sends what the server queued; returns
    /// why the drain stopped.
    pub(crate) fn receive(&mut self, server: &mut Server, limit: &DrainLimit) -> DrainEnd {
        self.follow(server, false);
        let mut taken = 0;
        // Which sockets hold anything: one look at the epoll set, not one
        // read per socket (token 0 the listening socket, then the players').
        // Without a set, or if it fails, every socket is read.
        self.ready.clear();
        self.tokens.clear();
        let count = self.players.len() + 1;
        match self.epoll.as_mut().map(|e| e.ready(&mut self.tokens)) {
            Some(Ok(false)) => {
                self.ready.extend(
                    self.tokens
                        .iter()
                        .map(|&t| t as usize)
                        .filter(|&i| i < count),
                );
                // The players first: token 0 last.
                self.ready.sort_unstable_by_key(|&i| i == 0);
            }
            // More ready than one call names, no set, or a failed look:
            // every socket, the players' first.
            _ => self.ready.extend((1..count).chain([0])),
        }
        let listener_ready = self.ready.contains(&0);
        let players_first = self.ready.iter().copied().filter(|&i| i > 0);
        let mut end = DrainEnd::Empty;
        for i in players_first.chain(listener_ready.then_some(0)) {
            let sock = match i {
                0 => self.listener,
                i => &self.players[i - 1].1,
            };
            let (n, e) = drain_socket(sock, &mut self.rx, server, limit, taken);
            taken += n;
            if matches!(e, DrainEnd::Deadline | DrainEnd::Budget) {
                end = e;
                break;
            }
            // A player's error (its port unreachable) ends only its drain;
            // the listening socket's end is the drain's.
            if i == 0 {
                end = e;
            }
        }
        self.send(server);
        self.follow(server, false);
        end
    }

    /// Opens a socket for every new player and closes those of players
    /// gone. Cheap unless the number of players changed; `thorough` (once
    /// a tick) also catches one player leaving as another joins.
    pub(crate) fn follow(&mut self, server: &Server, thorough: bool) {
        let known = self.players.len() + self.without.len();
        let same = known == server.players()
            && (!thorough
                || self.players.iter().all(|(a, _)| server.is_player(*a))
                    && self.without.iter().all(|a| server.is_player(*a)));
        if same {
            return;
        }
        self.players.retain(|(a, _)| server.is_player(*a));
        self.without.clear();
        let local = self.listener.local_addr();
        for addr in server.player_addrs() {
            if self.players.iter().any(|(a, _)| *a == addr) {
                continue;
            }
            match open(local, addr) {
                Ok(s) => self.players.push((addr, s)),
                Err(_) => self.without.push(addr),
            }
        }
        // New sockets join the set; every player's token follows its index
        // (closed sockets left the set by themselves). If one cannot join,
        // the waiter watches every socket itself.
        if let Some(e) = &self.epoll {
            let joined = self.players.iter().enumerate().all(|(i, (_, s))| {
                let (fd, token) = (s.as_raw_fd(), i as u64 + 1);
                e.set_token(fd, token).or_else(|_| e.add(fd, token)).is_ok()
            });
            if !joined {
                self.epoll = None;
            }
        }
        if self.epoll.is_none() {
            self.fds.clear();
            self.fds.push(self.listener.as_raw_fd());
            self.fds
                .extend(self.players.iter().map(|(_, s)| s.as_raw_fd()));
        }
    }
}

/// Receives and handles batches from `sock` until it is empty or `limit`
/// (of which `taken` datagrams are already spent) stops the drain.
fn drain_socket(
    sock: &UdpSocket,
    rx: &mut RecvBatch,
    server: &mut Server,
    limit: &DrainLimit,
    taken: usize,
) -> (usize, DrainEnd) {
    let left = DrainLimit {
        max_datagrams: limit.max_datagrams.saturating_sub(taken),
        deadline_ns: limit.deadline_ns,
    };
    let capacity = rx.capacity();
    drain::drain(
        &left,
        capacity,
        || {
            let n = sock.recv_batch(rx)?;
            let now = now_us();
            for (from, data) in rx.iter() {
                server.handle(now, from, data);
            }
            Ok(n)
        },
        now_ns,
    )
}

/// A socket bound to the server's address and connected to `player`.
fn open(local: SocketAddr, player: SocketAddr) -> Result<UdpSocket, tickpack_net::NetError> {
    let s = UdpSocket::bind(
        local,
        &SocketOptions {
            reuse_port: true,
            ..Default::default()
        },
    )?;
    s.connect(player)?;
    Ok(s)
}
