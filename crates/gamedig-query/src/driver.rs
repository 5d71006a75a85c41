//! [`Driver`]: one gamedig protocol asked of servers, each call on a
//! thread of its own, behind `catch_unwind`, with an overall deadline.
//!
//! gamedig cannot be cancelled: a call that overruns its deadline is
//! abandoned (its [`Pending`] says [`QueryError::Timeout`]) and its thread
//! runs on until gamedig returns: at once for a silent server (gamedig's
//! own per-read timeout is the same as the deadline), never for one that
//! keeps it busy (an A2S server answering only challenges). A driver lets
//! at most `limit` calls run at once, answered or abandoned; past that,
//! [`Driver::start`] refuses with [`QueryError::Busy`] instead of leaking
//! another thread.
//!
//! A panic inside gamedig (it has several on malformed answers) is caught
//! on the call's thread and reported as [`QueryError::Panicked`]; the
//! default panic message of those threads is not printed. What a server
//! says is bounded and escaped before it leaves the thread.

use std::cell::Cell;
use std::net::{IpAddr, SocketAddr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Once};
use std::time::{Duration, Instant};

use gamedig::errors::GDErrorKind;
use gamedig::{GDError, Game, TimeoutSettings};
use tickpack_game::GamedigProtocol;

use crate::protocols;

/// The most calls one driver runs at once (answered or abandoned) unless
/// told otherwise: a prober's targets each have one in flight, and a
/// hostile server can hold at most this many threads.
pub const MAX_RUNNING: usize = 64;

/// The longest name or map kept from an answer, in characters.
const MAX_TEXT: usize = 128;

/// What a server said, and how long gamedig took to hear it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The server's name (bounded, control characters escaped).
    pub name: String,
    pub map: String,
    /// Clients online; `None` when gamedig's count cannot be believed
    /// (Quake 1/2/3: it always says 0).
    pub players: Option<u32>,
    pub max_players: u32,
    /// Bots, when the protocol says.
    pub bots: Option<u32>,
    /// From just before gamedig's call to just after it returned: its
    /// socket set-up, every round trip of the query (A2S: the challenge
    /// too) and its parsing.
    pub rtt: Duration,
}

/// Why a call gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No answer before the deadline (gamedig's own receive timeout, or
    /// ours: the call is abandoned).
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The query could not be sent (socket, connection).
    #[error("cannot ask: {0}")]
    Io(String),
    /// An answer gamedig refused.
    #[error("a malformed answer: {0}")]
    Malformed(String),
    /// gamedig panicked on the answer (caught).
    #[error("gamedig panicked on the answer: {0}")]
    Panicked(String),
    /// Too many calls still running (abandoned ones included): not started.
    #[error("{0} gamedig queries are still running (abandoned after their deadline); not starting another")]
    Busy(usize),
    /// What gamedig cannot ask (an IPv6 address: it binds 0.0.0.0).
    #[error("{0}")]
    Unsupported(String),
}

/// One gamedig protocol, asked of any server.
#[derive(Debug, Clone)]
pub struct Driver {
    protocol: GamedigProtocol,
    game: Game,
    players_known: bool,
    running: Arc<AtomicUsize>,
    limit: usize,
}

/// A call started by [`Driver::start`]: its result, or a timeout once its
/// deadline has passed.
#[derive(Debug)]
pub struct Pending {
    rx: mpsc::Receiver<Result<Answer, QueryError>>,
    deadline: Instant,
    timeout: Duration,
}

impl Driver {
    /// A driver for `protocol` that runs at most `limit` (at least 1)
    /// calls at once.
    pub fn new(protocol: GamedigProtocol, limit: usize) -> Result<Driver, QueryError> {
        let game = protocols::game(protocol).ok_or_else(|| {
            QueryError::Unsupported(format!("gamedig protocol {protocol} is not known here"))
        })?;
        quiet_panics_of_gamedig_threads();
        Ok(Driver {
            protocol,
            game,
            players_known: protocols::players_known(protocol),
            running: Arc::new(AtomicUsize::new(0)),
            limit: limit.max(1),
        })
    }

    pub fn protocol(&self) -> GamedigProtocol {
        self.protocol
    }

    /// Calls running now, answered-but-not-yet-ended and abandoned ones
    /// included.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Starts asking `addr` on a new thread; the call has `timeout` in all
    /// (at least 1 ms), which is also gamedig's per-read timeout.
    pub fn start(&self, addr: SocketAddr, timeout: Duration) -> Result<Pending, QueryError> {
        if addr.is_ipv6() {
            return Err(QueryError::Unsupported(format!(
                "{addr}: gamedig asks IPv4 addresses only"
            )));
        }
        let timeout = timeout.max(Duration::from_millis(1));
        let limit = self.limit;
        if self
            .running
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_err()
        {
            return Err(QueryError::Busy(limit));
        }
        // Given back when the thread ends, or at once if it cannot start.
        let slot = Slot(self.running.clone());
        let (tx, rx) = mpsc::sync_channel(1);
        let game = self.game.clone();
        let players_known = self.players_known;
        let deadline = Instant::now() + timeout;
        std::thread::Builder::new()
            .name("gamedig-query".into())
            .spawn(move || {
                let _slot = slot;
                QUIET.with(|q| q.set(true));
                let _ = tx.send(ask(&game, addr, timeout, players_known));
            })
            .map_err(|e| QueryError::Io(format!("a thread for the query: {e}")))?;
        Ok(Pending {
            rx,
            deadline,
            timeout,
        })
    }

    /// Asks `addr` and waits for the answer or the deadline.
    pub fn query(&self, addr: SocketAddr, timeout: Duration) -> Result<Answer, QueryError> {
        self.start(addr, timeout)?.wait()
    }
}

impl Pending {
    /// The call's result if it has one by `now`; a timeout once `now` is
    /// at or past the deadline; `None` while it may still answer.
    pub fn poll(&self, now: Instant) -> Option<Result<Answer, QueryError>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(mpsc::TryRecvError::Disconnected) => Some(Err(QueryError::Panicked(
                "the query's thread ended without a result".into(),
            ))),
            Err(mpsc::TryRecvError::Empty) if now >= self.deadline => {
                Some(Err(QueryError::Timeout(self.timeout)))
            }
            Err(mpsc::TryRecvError::Empty) => None,
        }
    }

    /// Waits for the result until the deadline (then a timeout; the call
    /// is abandoned).
    pub fn wait(self) -> Result<Answer, QueryError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(QueryError::Timeout(self.timeout)),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(QueryError::Panicked(
                "the query's thread ended without a result".into(),
            )),
        }
    }

    /// When the call is abandoned.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

/// One running call's place in its driver's count.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One gamedig call, on the calling thread, caught.
fn ask(
    game: &Game,
    addr: SocketAddr,
    timeout: Duration,
    players_known: bool,
) -> Result<Answer, QueryError> {
    let t = Some(timeout);
    let settings = TimeoutSettings::new(t, t, t, 0).map_err(|e| QueryError::Io(describe(&e)))?;
    let ip: IpAddr = addr.ip();
    let started = Instant::now();
    let caught = catch_unwind(AssertUnwindSafe(|| {
        let r = gamedig::query_with_timeout_and_extra_settings(
            game,
            &ip,
            Some(addr.port()),
            Some(settings),
            Some(protocols::extra()),
        );
        let rtt = started.elapsed();
        // The answer is not Send: its fields are copied out here.
        r.map(|a| Answer {
            name: bounded(a.name().unwrap_or("")),
            map: bounded(a.map().unwrap_or("")),
            players: players_known.then(|| a.players_online()),
            max_players: a.players_maximum(),
            bots: a.players_bots(),
            rtt,
        })
    }));
    match caught {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(classify(&e, timeout)),
        Err(payload) => Err(QueryError::Panicked(bounded(
            payload
                .downcast_ref::<&str>()
                .copied()
                .or(payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("(no message)"),
        ))),
    }
}

/// gamedig's error as ours: a receive that timed out is a timeout, a send
/// or socket failure is I/O, everything else a malformed answer.
fn classify(e: &GDError, timeout: Duration) -> QueryError {
    match e.kind {
        GDErrorKind::PacketReceive => QueryError::Timeout(timeout),
        GDErrorKind::PacketSend
        | GDErrorKind::SocketBind
        | GDErrorKind::SocketConnect
        | GDErrorKind::HostLookup
        | GDErrorKind::InvalidInput => QueryError::Io(describe(e)),
        _ => QueryError::Malformed(describe(e)),
    }
}

/// An error's kind and source, bounded (never its backtrace).
fn describe(e: &GDError) -> String {
    let text = match &e.source {
        Some(s) => format!("{:?}: {s}", e.kind),
        None => format!("{:?}", e.kind),
    };
    bounded(&text)
}

/// At most [`MAX_TEXT`] characters, control characters escaped.
fn bounded(s: &str) -> String {
    s.chars()
        .take(MAX_TEXT)
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

thread_local! {
    /// Set on the driver's own threads: their panics are caught and
    /// reported, not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once, a panic hook that stays silent on the driver's threads
/// and hands every other panic to the hook that was there before.
fn quiet_panics_of_gamedig_threads() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_a_server_is_bounded_and_escaped() {
        assert_eq!(bounded("a\nb\u{1b}[2J"), "a\\nb\\u{1b}[2J");
        assert_eq!(bounded(&"x".repeat(1000)).len(), MAX_TEXT);
    }

    #[test]
    fn ipv6_is_refused_before_a_thread_starts() {
        let d = Driver::new(GamedigProtocol::from_name("unreal2").unwrap(), 1).unwrap();
        let e = d
            .start("[::1]:7777".parse().unwrap(), Duration::from_millis(10))
            .unwrap_err();
        assert!(matches!(e, QueryError::Unsupported(_)), "{e}");
        assert_eq!(d.running(), 0);
    }
}
