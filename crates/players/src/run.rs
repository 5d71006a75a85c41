//! The I/O loop: a few threads, each owning a share of the players, one
//! connected UDP socket per player, one epoll set per thread, and a precise
//! waiter for the next due command.
//!
//! Each thread: pin (if asked), open and connect its sockets, then until the
//! end of the run: send everything due (a heap orders the players by their
//! next deadline), wait until the next deadline or until a socket is
//! readable, drain the readable sockets with `recvmmsg`, hand each datagram
//! to its player. After the measurement window the thread stops sending and
//! drains for the loss deadline, so every command due in the window gets its
//! full deadline. A socket that reports "port unreachable" is handed to its
//! player, which reconnects if it had been connected.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tickpack_net::clock::now_us;
use tickpack_net::socket::{SocketOptions, UdpSocket};
use tickpack_wire::TickRate;

use crate::config::{PlayersConfig, Protocol};
use crate::emulated::{Emulated, RunEnd};
use crate::io::{Incoming, PlayerIo};
use crate::player::{Player, PlayerSettings, Seat, DEFAULT_TICK_HZ};
use crate::presence::Presence;
use crate::q3::Q3Player;
use crate::recorder::Recorder;
use crate::referee::Referee;
use crate::tw7::TwPlayer;
use crate::{with_causes, PlayersError};

/// Live counters for a progress display, updated by the threads, and the
/// players' transaction latency since it was last read (a QoS guard's
/// signal: [`Live::take_recent_transaction_p99`]).
#[derive(Debug, Default)]
pub struct Live {
    pub connected: AtomicU64,
    pub snapshots: AtomicU64,
    pub commands: AtomicU64,
    recent_transaction: std::sync::Mutex<Option<hdrhistogram::Histogram<u64>>>,
}

impl Live {
    /// Adds a thread's recent transactions (or those another process's
    /// players handed over) and empties them.
    pub fn add_recent_transactions(&self, h: &mut hdrhistogram::Histogram<u64>) {
        if h.is_empty() {
            return;
        }
        let mut shared = self
            .recent_transaction
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match shared.as_mut() {
            Some(s) => {
                let _ = s.add(&*h);
            }
            None => *shared = Some(h.clone()),
        }
        h.reset();
    }

    /// The transactions recorded since the last take, every player and
    /// thread together; `None` when none was (what a players process hands
    /// its parent).
    pub fn take_recent_transactions(&self) -> Option<hdrhistogram::Histogram<u64>> {
        self.recent_transaction
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .filter(|h| !h.is_empty())
    }

    /// The p99 transaction latency (microseconds) of the commands reflected
    /// since the last call, every player and thread together (the threads
    /// hand theirs over every 100 ms); `None` when none was.
    pub fn take_recent_transaction_p99(&self) -> Option<u64> {
        let h = self
            .recent_transaction
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        (!h.is_empty()).then(|| h.value_at_quantile(0.99))
    }
}

/// What the threads hand back.
pub struct Outcome {
    pub recorder: Recorder,
    pub connected: usize,
    /// The highest tick rate any player learned; `None` if none did.
    pub tick_hz: Option<TickRate>,
    /// Distinct reasons players ended early, with counts.
    pub errors: Vec<String>,
    pub cpu_time_ns: u64,
    pub started_us: u64,
    /// The measured window, in this process's monotonic microseconds.
    pub window: (u64, u64),
    /// When `stop` was seen (Ctrl-C, SIGTERM), if the run was interrupted:
    /// the measured span then ends there.
    pub interrupted_us: Option<u64>,
    /// Per player, our figures beside the server's own ping (Quake III protocol servers).
    pub referee: Vec<tickpack_report::RefereeRow>,
    /// The I/O the threads used: `ring` or `epoll`.
    pub io: &'static str,
}

/// After an interruption the players stop sending but keep reading this
/// long, so the snapshots of the ticks before the interruption can arrive
/// and be judged (an outage just before Ctrl-C must not be hidden).
const INTERRUPT_DRAIN_US: u64 = 200_000;

/// The most datagrams one player sends at one wake of its thread: a
/// handshake or a burst of commands is a few; a player whose session
/// kept yielding datagrams without end (seen once of a tw7 player in a
/// tile step whose players came and went) must not hold its thread, and
/// the run's end, for ever.
const MAX_DATAGRAMS_PER_WAKE: usize = 64;

/// Sends what `p` has due at `now` (at most [`MAX_DATAGRAMS_PER_WAKE`],
/// each through `send`) when `sending`; returns when it is next due and
/// how many datagrams it sent. It is never due again within this wake: a
/// player whose deadline does not move past `now` is called at the next
/// wake, not again and again at this one.
fn transmit<P: Emulated>(
    p: &mut P,
    now: u64,
    sending: bool,
    buf: &mut Vec<u8>,
    rec: &mut Recorder,
    mut send: impl FnMut(&mut P, &[u8], &mut Recorder),
) -> (u64, u64) {
    if !sending {
        return (u64::MAX, 0);
    }
    let mut n = 0;
    while (n as usize) < MAX_DATAGRAMS_PER_WAKE && p.poll_transmit(now, buf, rec) {
        send(p, buf, rec);
        n += 1;
    }
    (p.next_deadline().max(now + 1), n)
}

/// Runs the players described by `cfg` (already validated) until the run
/// ends or `stop` is set.
pub fn run(
    cfg: &PlayersConfig,
    stop: &AtomicBool,
    live: &Arc<Live>,
) -> Result<Outcome, PlayersError> {
    let start = now_us() + 20_000;
    let window = (
        start + cfg.warmup.as_micros() as u64,
        start + (cfg.warmup + cfg.duration).as_micros() as u64,
    );
    let threads = cfg.threads.min(cfg.players);
    let mut referee = match cfg.game {
        Protocol::Q3 => Referee::new(&cfg.targets, window.0, window.1),
        Protocol::Tickpack | Protocol::Tw7 => Referee::default(),
    };
    let results: Vec<Result<ThreadOut, PlayersError>> = std::thread::scope(|s| {
        if cfg.game == Protocol::Q3 {
            let referee = &mut referee;
            s.spawn(move || ask_the_referee(cfg, window, stop, referee));
        }
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let live = live.clone();
                s.spawn(move || match cfg.game {
                    Protocol::Tickpack => thread_main(
                        cfg,
                        t,
                        threads,
                        start,
                        window,
                        stop,
                        &live,
                        Player::with_presence,
                    ),
                    Protocol::Q3 => thread_main(
                        cfg,
                        t,
                        threads,
                        start,
                        window,
                        stop,
                        &live,
                        Q3Player::with_presence,
                    ),
                    Protocol::Tw7 => thread_main(
                        cfg,
                        t,
                        threads,
                        start,
                        window,
                        stop,
                        &live,
                        TwPlayer::with_presence,
                    ),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(PlayersError::Internal("a player thread panicked".into()))
                })
            })
            .collect()
    });
    let mut out = Outcome {
        recorder: Recorder::new(window),
        connected: 0,
        tick_hz: None,
        errors: vec![],
        cpu_time_ns: 0,
        started_us: start,
        window,
        interrupted_us: None,
        referee: vec![],
        io: "epoll",
    };
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for r in results {
        let t = r?;
        out.recorder.merge(&t.recorder);
        out.connected += t.connected;
        // `None` (no player of that thread learned it) is below any rate.
        out.tick_hz = out.tick_hz.max(t.tick_hz);
        out.cpu_time_ns += t.cpu_time_ns;
        out.interrupted_us = match (out.interrupted_us, t.interrupted_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for e in t.errors {
            *reasons.entry(e).or_default() += 1;
        }
        out.referee.extend(t.referee);
        out.io = t.io;
    }
    for row in &mut out.referee {
        if let Ok(server) = row.server.parse() {
            row.server_ping_us_median = referee.median_us(server, &row.player);
        }
    }
    for ms in referee.pings.values().flatten() {
        tickpack_report::record(&mut out.recorder.server_ping, u64::from(*ms) * 1000);
    }
    out.errors = reasons
        .into_iter()
        .map(|(r, n)| format!("{n} player(s): {r}"))
        .collect();
    Ok(out)
}

struct ThreadOut {
    recorder: Recorder,
    connected: usize,
    tick_hz: Option<TickRate>,
    errors: Vec<String>,
    cpu_time_ns: u64,
    interrupted_us: Option<u64>,
    referee: Vec<tickpack_report::RefereeRow>,
    io: &'static str,
}

/// Asks every target for its status every [`crate::referee::INTERVAL_US`] over
/// the window, from one socket, and keeps what the servers say of our
/// players.
fn ask_the_referee(cfg: &PlayersConfig, window: (u64, u64), stop: &AtomicBool, r: &mut Referee) {
    let Ok(sock) = std::net::UdpSocket::bind("0.0.0.0:0") else {
        return;
    };
    if !cfg.cpus.is_empty() {
        let _ = tickpack_net::cpu::pin_current_thread(&[cfg.cpus[0]]);
    }
    let mut out = Vec::with_capacity(64);
    let mut buf = vec![0u8; 16 * 1024];
    while now_us() < window.1 && !stop.load(Ordering::Relaxed) {
        let now = now_us();
        while let Some(to) = r.poll_transmit(now, &mut out) {
            let _ = sock.send_to(&out, to);
        }
        // Wake at least every 50 ms to see `stop`.
        let wait_us = r
            .next_timeout_us()
            .map_or(50_000, |t| t.saturating_sub(now_us()))
            .clamp(1_000, 50_000);
        let _ = sock.set_read_timeout(Some(std::time::Duration::from_micros(wait_us)));
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            r.handle(now_us(), from, &buf[..n]);
        }
    }
}

/// A player's constructor: its seat in the run, the run's settings, its
/// presence.
type NewPlayer<P> = fn(Seat, PlayerSettings, &Presence) -> P;

#[allow(clippy::too_many_arguments)]
fn thread_main<P: Emulated>(
    cfg: &PlayersConfig,
    t: usize,
    threads: usize,
    start: u64,
    window: (u64, u64),
    stop: &AtomicBool,
    live: &Live,
    new_player: NewPlayer<P>,
) -> Result<ThreadOut, PlayersError> {
    if !cfg.cpus.is_empty() {
        tickpack_net::cpu::pin_current_thread(&[cfg.cpus[t % cfg.cpus.len()]])
            .map_err(|e| PlayersError::Setup(with_causes(&e)))?;
    }
    let cpu0 = tickpack_net::cpu::thread_cpu_time_ns();
    let settings = PlayerSettings {
        cmd_rate_hz: cfg.cmd_rate_hz,
        cmd_size: cfg.cmd_size,
        ping_hz: cfg.ping_hz,
        ping_size: cfg.ping_size,
        connect_deadline_us: start + cfg.connect_timeout.as_micros() as u64,
        window,
        loss_deadline_us: cfg.loss_deadline.as_micros() as u64,
    };
    let mut players = Vec::new();
    let mut sockets = Vec::new();
    for i in (t..cfg.players).step_by(threads) {
        let target = cfg.targets[i % cfg.targets.len()];
        let local: std::net::SocketAddr =
            match crate::sources::source_of(i, cfg.targets.len(), &cfg.source_addrs) {
                Some(ip) => std::net::SocketAddr::new(ip, 0),
                None if target.is_ipv4() => "0.0.0.0:0".parse().expect("static"),
                None => "[::]:0".parse().expect("static"),
            };
        let sock = UdpSocket::bind(local, &SocketOptions::default())
            .and_then(|s| s.connect(target).map(|_| s))
            .map_err(|e| {
                PlayersError::Setup(format!(
                    "player {i} socket from {local} to {target}: {}",
                    with_causes(&e)
                ))
            })?;
        let seat = Seat {
            index: i,
            target,
            seed: cfg.seed,
            start_us: start,
        };
        let presence = match &cfg.presence {
            Some(plan) => Presence::planned(plan.spans(i), start, cfg.join_timeout()),
            None => Presence::always(),
        };
        players.push(new_player(seat, settings.clone(), &presence));
        sockets.push(sock);
    }
    let mut rec = Recorder::with_windows(window, cfg.window_len_us());
    let max_datagram = 2048.max(cfg.ping_size + 64);
    let mut io = PlayerIo::new(cfg.io, &sockets, max_datagram).map_err(PlayersError::Setup)?;
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = players
        .iter()
        .enumerate()
        .map(|(i, p)| Reverse((p.next_deadline(), i)))
        .collect();
    let mut scheduled: Vec<u64> = players.iter().map(P::next_deadline).collect();
    let mut buf = Vec::with_capacity(2048);
    let deadline_us = cfg.loss_deadline.as_micros() as u64;
    let mut end = window.1 + deadline_us;
    let mut was_connected = vec![false; players.len()];
    let mut touched: Vec<usize> = Vec::new();
    let mut next_check = 0u64;

    let refused = |p: &P| {
        format!(
            "{} refused: nothing is listening there (ICMP port unreachable)",
            p.target()
        )
    };
    let send = |io: &mut PlayerIo, i: usize, p: &mut P, buf: &[u8], rec: &mut Recorder| {
        if rec.in_window(now_us()) {
            rec.traffic.datagrams_out += 1;
            rec.traffic.bytes_out += buf.len() as u64;
        }
        if io.send(i, &sockets[i], buf).is_err() {
            let why = refused(p);
            p.unreachable(now_us(), why, rec);
        }
    };

    let mut interrupted: Option<u64> = None;
    loop {
        let now = now_us();
        if interrupted.is_none() && stop.load(Ordering::Relaxed) {
            // Stop sending, but read a little longer: the span ends here and
            // the snapshots of its last ticks are still on their way.
            interrupted = Some(now);
            end = end.min(now + INTERRUPT_DRAIN_US.min(deadline_us));
        }
        if now >= end {
            break;
        }
        if now >= next_check {
            // Every player refused, unreachable or sent away: stop early.
            next_check = now + 100_000;
            live.add_recent_transactions(&mut rec.recent_transaction);
            if players.iter().all(|p| p.ended().is_some()) {
                break;
            }
        }
        // Send everything due.
        let sending = now < window.1 && interrupted.is_none();
        while let Some(&Reverse((due, i))) = heap.peek() {
            if due > now {
                break;
            }
            heap.pop();
            if due != scheduled[i] {
                continue; // stale entry
            }
            let p = &mut players[i];
            let (next, n) = transmit(p, now, sending, &mut buf, &mut rec, |p, buf, rec| {
                send(&mut io, i, p, buf, rec)
            });
            live.commands.fetch_add(n, Ordering::Relaxed);
            scheduled[i] = next;
            if next != u64::MAX {
                heap.push(Reverse((next, i)));
            }
        }
        let deadline = heap.peek().map_or(end, |r| r.0 .0).min(end).min(next_check);
        touched.clear();
        io.wait_and_read(&sockets, deadline, cfg.busy_poll, &mut |i, incoming| {
            let p = &mut players[i];
            match incoming {
                Incoming::Datagram { at_us, data } => {
                    if rec.in_window(at_us) {
                        rec.traffic.datagrams_in += 1;
                        rec.traffic.bytes_in += data.len() as u64;
                    }
                    p.handle(at_us, data, &mut rec);
                    live.snapshots.fetch_add(1, Ordering::Relaxed);
                }
                Incoming::Refused => {
                    let why = refused(p);
                    p.unreachable(now_us(), why, &mut rec);
                }
            }
            if touched.last() != Some(&i) {
                touched.push(i);
            }
        })
        .map_err(PlayersError::Setup)?;
        for &i in &touched {
            let p = &mut players[i];
            if p.is_connected() && !was_connected[i] {
                was_connected[i] = true;
                live.connected.fetch_add(1, Ordering::Relaxed);
            }
            // A reply may make something due at once (challenge -> connect).
            let (next, _) = transmit(p, now_us(), sending, &mut buf, &mut rec, |p, buf, rec| {
                send(&mut io, i, p, buf, rec)
            });
            if next != scheduled[i] {
                scheduled[i] = next;
                if next != u64::MAX {
                    heap.push(Reverse((next, i)));
                }
            }
        }
    }

    let now = now_us();
    // The span ends where the window does, even if every player gave up
    // early (the rest of the window is then an outage); only an interrupted
    // run ends it sooner: where it was interrupted (the drain after that let
    // the last ticks' snapshots arrive; commands whose deadline had not run
    // out by the end are judged only if reflected).
    let span_end = interrupted.map_or(window.1, |at| window.1.min(at));
    let mut errors = vec![];
    // `None` is below every rate: the highest rate learned, if any was.
    let tick_hz = players.iter().map(P::tick_hz).max().flatten();
    let hint = match (tick_hz, cfg.game) {
        (Some(hz), _) => hz,
        (None, Protocol::Tickpack) => DEFAULT_TICK_HZ,
        // The engine's default sv_fps.
        (None, Protocol::Q3) => crate::q3::DEFAULT_SV_FPS,
        // Fixed in the engine.
        (None, Protocol::Tw7) => crate::tw7::TICK_HZ,
    };
    let run_end = RunEnd {
        now_us: now,
        span_end_us: span_end,
        hint_tick_hz: hint,
    };
    let mut referee_rows = vec![];
    for (i, p) in players.iter_mut().enumerate() {
        if p.finish(&run_end, &mut buf, &mut rec) {
            let _ = sockets[i].send(&buf);
        }
        referee_rows.extend(p.referee_row());
        if let Some(why) = p.ended().filter(|w| *w != "finished") {
            errors.push(why.to_string());
        }
    }
    Ok(ThreadOut {
        recorder: rec,
        connected: was_connected.iter().filter(|&&c| c).count(),
        tick_hz,
        errors,
        cpu_time_ns: tickpack_net::cpu::thread_cpu_time_ns() - cpu0,
        interrupted_us: interrupted,
        referee: referee_rows,
        io: io.name(),
    })
}

#[cfg(test)]
mod live_tests {
    use super::*;

    #[test]
    fn recent_transactions_of_every_thread_are_read_once_as_one_p99() {
        let live = Live::default();
        assert_eq!(live.take_recent_transaction_p99(), None);
        // Two threads: 99 fast commands and one slow one between them.
        let mut a = tickpack_report::new_histogram();
        let mut b = tickpack_report::new_histogram();
        for _ in 0..99 {
            tickpack_report::record(&mut a, 1_000);
        }
        for _ in 0..101 {
            tickpack_report::record(&mut b, 9_000);
        }
        live.add_recent_transactions(&mut a);
        live.add_recent_transactions(&mut b);
        assert!(a.is_empty() && b.is_empty(), "handed over, emptied");
        let p99 = live.take_recent_transaction_p99().unwrap();
        assert!((8_990..=9_010).contains(&p99), "{p99}");
        // Read once: the next period starts empty.
        assert_eq!(live.take_recent_transaction_p99(), None);
    }
}
