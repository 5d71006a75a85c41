//! [`run`]: the sidecar for games we did not write. It asks the game its
//! own query once per period over one connected UDP socket, driving a
//! session of the game query layer (`tickpack_game::query`: one query in
//! flight, its timeout, the A2S challenge round trip, answers matched to
//! their query), and feeds what it heard to the [`driver`]: the first
//! answer makes the GameServer Ready, answers keep the health pings going
//! (a game that stops answering stops them), the players in the answers
//! are the players, and `stop` (SIGTERM) ends in Shutdown.
//!
//! What it asks ([`Options::query`], from the game's definition):
//! - q3 games (ioquake3 and its kin): `getstatus`, whose answer lists
//!   every client by name (bots too: ioq3's answer does not tell them
//!   apart), colour codes removed. ioq3 answers one `getstatus` a second
//!   per address, the sidecar's pace at most.
//! - A2S games and tickpack's own protocol: `A2S_INFO` (with its
//!   challenge); it gives a count, so the players are named `player-1`,
//!   `player-2`, ... (humans only: bots are left out). See [`players`].

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tickpack_game::query::{Event, Facts, Player, Query, Schedule, Session};

use crate::client::{SdkClient, SdkError};
use crate::driver::{self, Done};
use crate::reporter::{Action, Observation, Settings};

/// Who plays, from an answer: the names it lists (colour codes removed),
/// else `player-1` ... for each human it counts (all its players when it
/// does not say which are bots).
pub fn players(facts: &Facts) -> Vec<String> {
    match &facts.roster {
        Some(roster) => roster.iter().map(Player::clean_name).collect(),
        None => (1..=facts.humans().unwrap_or(facts.players))
            .map(|i| format!("player-{i}"))
            .collect(),
    }
}

/// How to watch one game.
#[derive(Debug, Clone)]
pub struct Options {
    /// What to ask ([`tickpack_game::QueryProtocol::status_query`]).
    pub query: Query,
    /// The game's query address (usually 127.0.0.1:port in the same pod).
    pub target: SocketAddr,
    /// Time between two queries, and how long one waits for its answer.
    pub every: Duration,
    pub settings: Settings,
}

/// Watches the game and drives the SDK until `stop` is set; returns what
/// the driver did. `on_action` and `on_error` see every SDK call and
/// failure (the caller prints).
pub fn run(
    opts: &Options,
    client: &SdkClient,
    stop: &AtomicBool,
    on_action: impl FnMut(&Action),
    on_error: impl FnMut(&SdkError),
) -> std::io::Result<Done> {
    let bind: SocketAddr = if opts.target.is_ipv4() {
        "0.0.0.0:0".parse().expect("valid")
    } else {
        "[::]:0".parse().expect("valid")
    };
    let sock = UdpSocket::bind(bind)?;
    sock.connect(opts.target)?;
    let mut asker = Asker::new(opts.query, opts.every);
    let mut answers = 0u64;
    let mut players_now = Vec::new();
    let done = driver::drive(
        client,
        opts.settings,
        // The session's schedule paces the loop.
        Duration::ZERO,
        || {
            if stop.load(Ordering::Relaxed) {
                return Observation {
                    ending: true,
                    ..Observation::default()
                };
            }
            if let Some(facts) = asker.next_answer(&sock, stop) {
                answers += 1;
                players_now = players(&facts);
            }
            Observation {
                serving: answers > 0,
                progress: answers,
                players: players_now.clone(),
                tick_p99_us: None,
                ending: stop.load(Ordering::Relaxed),
            }
        },
        on_action,
        on_error,
    );
    Ok(done)
}

/// The sidecar's session on its own clock, and its buffers.
struct Asker {
    session: Session,
    t0: Instant,
    buf: Vec<u8>,
    out: Vec<u8>,
}

impl Asker {
    /// Asks every `every`, waiting as long for each answer; the first
    /// query goes at once.
    fn new(query: Query, every: Duration) -> Asker {
        let schedule = Schedule {
            interval: every,
            timeout: every,
        };
        Asker {
            session: Session::new(query, schedule, Duration::ZERO),
            t0: Instant::now(),
            buf: vec![0; 16 * 1024],
            out: Vec::new(),
        }
    }

    /// Waits for the next query to be due, sends it (again with the A2S
    /// challenge if the game asks for one) and returns the facts of its
    /// answer; `None` if it timed out or `stop` was set first.
    fn next_answer(&mut self, sock: &UdpSocket, stop: &AtomicBool) -> Option<Facts> {
        loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let now = self.t0.elapsed();
            if self.session.handle_timeout(now) == Some(Event::TimedOut) {
                return None;
            }
            while self.session.poll_transmit(now, &mut self.out) {
                // A failed send (nothing listens yet) times out as a query.
                let _ = sock.send(&self.out);
            }
            // Wake at least every 100 ms to see `stop`.
            let wait = self
                .session
                .next_timeout()
                .map_or(Duration::MAX, |t| t.saturating_sub(self.t0.elapsed()))
                .clamp(Duration::from_millis(1), Duration::from_millis(100));
            sock.set_read_timeout(Some(wait)).ok()?;
            match sock.recv(&mut self.buf) {
                Ok(n) => {
                    let at = self.t0.elapsed();
                    if let Some(Event::Answered { facts, .. }) =
                        self.session.handle(at, &self.buf[..n])
                    {
                        return Some(facts);
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                // ECONNREFUSED: nothing listens yet (the game is starting).
                Err(_) => sleep_unless_stopped(wait, stop),
            }
        }
    }
}

fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let Some(left) = end.checked_duration_since(Instant::now()) else {
            return;
        };
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests;
