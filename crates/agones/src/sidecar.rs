//! [`run`]: the sidecar for games we did not write. It asks the game its
//! query (see [`crate::watch`]) once per period over one connected UDP
//! socket and feeds what it heard to the [`driver`]: the
//! first answer makes the GameServer Ready, answers keep the health pings
//! going (a game that stops answering stops them), the names in the
//! answers are the players, and `stop` (SIGTERM) ends in Shutdown.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::client::{SdkClient, SdkError};
use crate::driver::{self, Done};
use crate::reporter::{Action, Observation, Settings};
use crate::watch::{self, Game, Heard};

/// How to watch one game.
#[derive(Debug, Clone)]
pub struct Options {
    pub game: Game,
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
    let mut seq = 0u64;
    let mut answers = 0u64;
    let mut players = Vec::new();
    let game = opts.game;
    let every = opts.every;
    let done = driver::drive(
        client,
        opts.settings,
        // The query's own wait paces the loop.
        Duration::ZERO,
        || {
            if stop.load(Ordering::Relaxed) {
                return Observation {
                    ending: true,
                    ..Observation::default()
                };
            }
            seq += 1;
            let started = Instant::now();
            if let Some(p) = ask(&sock, game, seq, every, stop) {
                answers += 1;
                players = p;
            }
            // Keep the pace when the answer came early.
            if let Some(rest) = every.checked_sub(started.elapsed()) {
                sleep_unless_stopped(rest, stop);
            }
            Observation {
                serving: answers > 0,
                progress: answers,
                players: players.clone(),
                tick_p99_us: None,
                ending: stop.load(Ordering::Relaxed),
            }
        },
        on_action,
        on_error,
    );
    Ok(done)
}

/// One query and its answer within `wait` (with the A2S challenge round
/// trip if the game asks for one): who plays, or `None` if no answer came.
fn ask(
    sock: &UdpSocket,
    game: Game,
    seq: u64,
    wait: Duration,
    stop: &AtomicBool,
) -> Option<Vec<String>> {
    let deadline = Instant::now() + wait;
    let mut out = Vec::new();
    watch::encode_query(game, seq, None, &mut out);
    sock.send(&out).ok()?;
    let mut buf = [0u8; 16 * 1024];
    // Bounded by the deadline; the count bounds a flood of stray datagrams.
    for _ in 0..64 {
        let left = deadline.checked_duration_since(Instant::now())?;
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            return None;
        }
        // Wake at least every 100 ms to see `stop`.
        sock.set_read_timeout(Some(left.min(Duration::from_millis(100))))
            .ok()?;
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            // ECONNREFUSED: nothing listens yet (the game is starting).
            Err(_) => {
                sleep_unless_stopped(left.min(Duration::from_millis(100)), stop);
                continue;
            }
        };
        match watch::decode_answer(game, &buf[..n]) {
            Heard::Alive { players } => return Some(players),
            Heard::Challenge(c) => {
                out.clear();
                watch::encode_query(game, seq, Some(c), &mut out);
                sock.send(&out).ok()?;
            }
            Heard::Other => {}
        }
    }
    None
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
