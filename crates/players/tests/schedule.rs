//! Players against the real server state machine on a virtual clock: what
//! the schedule expected against what arrived, outages, reconnection. No
//! sockets, no sleeping: the harness plays the network (with delays) and
//! the server's I/O loop (with its tick schedule), and can kill, restart or
//! silence the server.

mod support;

use std::collections::VecDeque;
use std::net::SocketAddr;

use tickpack_players::player::{PlayerSettings, Seat, DEFAULT_TICK_HZ};
use tickpack_players::{Emulated, Player, Recorder, RunEnd, SizeDist};
use tickpack_sim::{Server, ServerConfig};
use tickpack_wire::{Packet, Snapshot};

const START: u64 = 1_000_000;
const WARMUP: u64 = 1_000_000;
const TICK: u64 = 10_000;
const DEADLINE: u64 = support::LOSS_DEADLINE_US;

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, i as u8 + 1], 5000))
}

/// What happens to the server, by time.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Gone from `at` on: packets to it are answered with "port unreachable".
    DeadFrom(u64),
    /// Gone from `.0` to `.1`, then a fresh process (new key, new ticks).
    Restart(u64, u64),
    /// Answers nothing from `.0` to `.1`, no ICMP either (a stalled host).
    Silent(u64, u64),
    /// Never there: nothing answers, no ICMP.
    Absent,
}

/// Rewrites a snapshot's `last_cmd_seq`, given the time it is sent.
type Reflect = Box<dyn FnMut(u64, Option<u32>) -> Option<u32>>;

struct Net {
    server: Server,
    players: Vec<Player>,
    rec: Recorder,
    window: (u64, u64),
    /// Datagrams to players: (deliver at, player, bytes).
    to_players: VecDeque<(u64, usize, Vec<u8>)>,
    fault: Fault,
    restarted: bool,
    /// Slots of the tick schedule the server skips (its loop fell behind).
    skip: fn(u64) -> bool,
    /// Rewrites the `last_cmd_seq` a snapshot carries (None: unchanged).
    reflect: Option<Reflect>,
    /// Delay of server-to-player datagrams, by time sent.
    delay: fn(u64) -> u64,
}

fn server() -> Server {
    Server::new(
        ServerConfig {
            tick_hz: tickpack_wire::TickRate::DEFAULT,
            max_players: 12,
            bots: 2,
            snapshot_len: 400,
            ..Default::default()
        },
        rand_key(1),
    )
}

fn rand_key(n: u8) -> [u8; 32] {
    [n; 32]
}

impl Net {
    fn new(players: usize, duration_us: u64, fault: Fault) -> Net {
        let window = (START + WARMUP, START + WARMUP + duration_us);
        let settings = PlayerSettings {
            cmd_size: SizeDist::Fixed(60),
            ..support::settings(window, START + 3_000_000)
        };
        Net {
            server: server(),
            players: (0..players)
                .map(|i| {
                    let seat = Seat {
                        index: i,
                        target: addr(i),
                        seed: 7,
                        start_us: START,
                    };
                    Player::new(seat, settings.clone())
                })
                .collect(),
            rec: Recorder::new(window),
            window,
            to_players: VecDeque::new(),
            fault,
            restarted: false,
            skip: |_| false,
            reflect: None,
            delay: |_| 300,
        }
    }

    fn up(&self, now: u64) -> bool {
        match self.fault {
            Fault::None => true,
            Fault::DeadFrom(t) => now < t,
            Fault::Restart(a, b) | Fault::Silent(a, b) => now < a || now >= b,
            Fault::Absent => false,
        }
    }

    fn icmp(&self) -> bool {
        matches!(self.fault, Fault::DeadFrom(_) | Fault::Restart(..))
    }

    /// Runs until the window's end plus the loss deadline, as `run` does:
    /// players send until the window ends, then only receive.
    fn run(&mut self) {
        let end = self.window.1 + DEADLINE;
        let mut due = START + 5_000;
        let mut slot = 0u64;
        let mut buf = Vec::new();
        let mut now = START;
        while now < end {
            // The server process restarts: a new one, knowing nobody.
            if let Fault::Restart(_, b) = self.fault {
                if now >= b && !self.restarted {
                    self.restarted = true;
                    self.server = Server::new(self.server.config().clone(), rand_key(2));
                    self.to_players.clear();
                }
            }
            let sending = now < self.window.1;
            for i in 0..self.players.len() {
                if !sending {
                    break;
                }
                while self.players[i].poll_transmit(now, &mut buf, &mut self.rec) {
                    if self.up(now) {
                        self.server.handle(now, addr(i), &buf);
                    } else if self.icmp() {
                        self.players[i].unreachable(now, "port unreachable".into(), &mut self.rec);
                    }
                }
            }
            if now >= due {
                if !(self.skip)(slot) && self.up(now) {
                    self.server.tick(due, due);
                    self.server.record_frame(300);
                }
                slot += 1;
                due += TICK;
            }
            if self.up(now) {
                let delay = (self.delay)(now);
                let mut out = vec![];
                self.server
                    .drain_transmits(|to, b| out.push((to, b.to_vec())));
                for (to, mut b) in out {
                    let i = (0..self.players.len()).find(|&i| addr(i) == to).unwrap();
                    if let Some(f) = self.reflect.as_mut() {
                        if let Ok(Packet::Snapshot(s)) = Packet::decode(&b) {
                            let seq = f(now, s.last_cmd_seq);
                            let mut v = vec![];
                            Packet::Snapshot(Snapshot {
                                last_cmd_seq: seq,
                                ..s
                            })
                            .encode(&mut v);
                            b = v;
                        }
                    }
                    self.to_players.push_back((now + delay, i, b));
                }
            } else {
                self.server.drain_transmits(|_, _| {});
            }
            // Deliver what is due (in order of delivery time).
            let mut keep = VecDeque::new();
            while let Some((at, i, b)) = self.to_players.pop_front() {
                if at <= now {
                    self.players[i].handle(now, &b, &mut self.rec);
                } else {
                    keep.push_back((at, i, b));
                }
            }
            self.to_players = keep;
            // Next event: a player's deadline, a tick, a delivery.
            let mut next = due.min(end);
            if sending {
                for p in &self.players {
                    next = next.min(p.next_deadline());
                }
            }
            for &(at, _, _) in &self.to_players {
                next = next.min(at);
            }
            now = next.max(now + 1);
        }
        let run_end = RunEnd {
            now_us: end,
            span_end_us: self.window.1,
            hint_tick_hz: DEFAULT_TICK_HZ,
        };
        for p in &mut self.players {
            p.finish(&run_end, &mut buf, &mut self.rec);
        }
    }

    fn slots_in_window(&self) -> u64 {
        (self.window.1 - self.window.0) / TICK
    }
}

#[test]
fn a_healthy_run_with_jitter_loses_nothing_at_its_edges() {
    let mut net = Net::new(6, 3_000_000, Fault::None);
    // Up to 4 ms of delay, changing every few ms, and a 30 ms stall right
    // at the end of the window (a load generator that read late).
    net.delay = |t| {
        let w = START + WARMUP + 3_000_000;
        if t + 30_000 > w && t < w {
            w + 1_000 - t
        } else {
            200 + (t / 3_000 * 7_919) % 4_000
        }
    };
    net.run();
    let s = net.rec.snapshots;
    assert_eq!(s.lost, 0, "{s:?}");
    assert_eq!(s.outages, 0, "{s:?}");
    assert_eq!(net.rec.commands_lost, 0);
    assert!(net.rec.commands_sent > 0);
    assert_eq!(net.rec.commands_reflected, net.rec.commands_sent);
    // Every player's span is the window (they connected in the warm-up):
    // one snapshot per tick, give or take the tick at each edge.
    let per_player = s.received / 6;
    let slots = net.slots_in_window();
    assert!(per_player.abs_diff(slots) <= 1, "{per_player} vs {slots}");
    assert_eq!(net.rec.reconnects, 0);
}

#[test]
fn a_dead_server_from_the_start_is_all_loss_and_one_outage() {
    let mut net = Net::new(3, 3_000_000, Fault::Absent);
    net.run();
    assert!(net.players.iter().all(|p| p.ended().is_some()));
    let s = net.rec.snapshots;
    // 3 players x 300 ticks at the assumed 100 Hz; the span starts at the
    // end of the warm-up.
    assert_eq!(s.received, 0);
    assert_eq!(s.lost, 3 * net.slots_in_window(), "{s:?}");
    assert_eq!(s.outages, 3, "{s:?}");
    assert_eq!(s.outage_longest_us, 3_000_000);
    // Every command the schedule made due is lost; none could be sent.
    assert_eq!(net.rec.commands_sent, 0);
    assert_eq!(net.rec.commands_lost, 3 * net.slots_in_window());
}

#[test]
fn outage_at_end_of_run_is_counted_as_lost() {
    // The server dies one second before the window ends.
    let w1 = START + WARMUP + 3_000_000;
    let mut net = Net::new(4, 3_000_000, Fault::DeadFrom(w1 - 1_000_000));
    net.run();
    let s = net.rec.snapshots;
    let slots = net.slots_in_window();
    assert_eq!(
        s.received + s.lost,
        4 * slots,
        "expected from the schedule: {s:?}"
    );
    // About 100 ticks per player without a server (a tick either side).
    assert!((4 * 99..=4 * 101).contains(&s.lost), "{s:?}");
    assert_eq!(s.outages, 4, "{s:?}");
    assert!(s.outage_longest_us >= 990_000, "{s:?}");
    // The commands of the last second were never reflected.
    assert!(net.rec.commands_lost >= 4 * 98, "{}", net.rec.commands_lost);
    assert_eq!(
        net.rec.commands_reflected + net.rec.commands_lost,
        4 * slots,
        "every due command is reflected or lost"
    );
}

#[test]
fn a_restarted_server_is_an_outage_then_the_players_reconnect_and_keep_measuring() {
    // kill -9 at 2.5 s; the supervisor restarts it 250 ms later.
    let kill = START + WARMUP + 1_500_000;
    let mut net = Net::new(4, 3_000_000, Fault::Restart(kill, kill + 250_000));
    net.run();
    let s = net.rec.snapshots;
    assert!(
        net.rec.reconnects >= 4,
        "every player came back: {}",
        net.rec.reconnects
    );
    assert_eq!(s.outages, 4, "{s:?}");
    // At least the 250 ms the server was away, at most that plus the
    // backoff of the reconnection.
    assert!(s.outage_longest_us >= 250_000, "{s:?}");
    assert!(s.outage_longest_us <= 900_000, "{s:?}");
    assert!(s.lost >= 4 * 25, "{s:?}");
    let slots = net.slots_in_window();
    assert_eq!(s.received + s.lost, 4 * slots, "{s:?}");
    // Measuring went on after the restart: about 1.2 s of each player's
    // commands were reflected by the new server.
    assert!(
        net.rec.commands_reflected >= 4 * (150 + 100),
        "{} reflected",
        net.rec.commands_reflected
    );
    assert!(net.rec.commands_lost >= 4 * 25, "{}", net.rec.commands_lost);
    assert_eq!(
        net.rec.commands_reflected + net.rec.commands_lost,
        4 * slots
    );
    // Connected at the end (finish says goodbye only to connected players).
    assert!(net.players.iter().all(|p| p.ended() == Some("finished")));
}

#[test]
fn a_server_restart_is_an_outage_however_short() {
    // Restarted within 100 ms: the players' first retries find it.
    let kill = START + WARMUP + 1_500_000;
    let mut net = Net::new(4, 3_000_000, Fault::Restart(kill, kill + 100_000));
    net.run();
    let s = net.rec.snapshots;
    assert!(s.outage_longest_us < 200_000, "a short one: {s:?}");
    assert_eq!(s.outages, 4, "{s:?}");
    assert!(s.lost >= 4 * 9, "{s:?}");
    assert_eq!(net.rec.reconnects, 4);
}

#[test]
fn a_silent_server_makes_the_players_reconnect_and_the_silence_is_an_outage() {
    // No answer and no ICMP for 700 ms (a stalled host), same process after.
    let from = START + WARMUP + 1_000_000;
    let mut net = Net::new(2, 3_000_000, Fault::Silent(from, from + 700_000));
    net.run();
    let s = net.rec.snapshots;
    assert_eq!(s.outages, 2, "{s:?}");
    assert!(s.outage_longest_us >= 700_000, "{s:?}");
    assert!(net.rec.reconnects >= 2);
    assert_eq!(s.received + s.lost, 2 * net.slots_in_window(), "{s:?}");
    // Connected at the end (finish says goodbye only to connected players).
    assert!(net.players.iter().all(|p| p.ended() == Some("finished")));
}

#[test]
fn commands_reflected_after_the_deadline_are_lost() {
    let mut net = Net::new(2, 3_000_000, Fault::None);
    // The server's snapshots reflect only commands at least 1.5 s old.
    let mut seen: VecDeque<(u64, Option<u32>)> = VecDeque::new();
    net.reflect = Some(Box::new(move |now, seq| {
        seen.push_back((now, seq));
        let mut old = None;
        while let Some(&(t, s)) = seen.front() {
            if t + 1_500_000 > now {
                break;
            }
            old = s;
            seen.pop_front();
        }
        old
    }));
    net.run();
    assert!(net.rec.commands_sent > 500);
    assert_eq!(
        net.rec.commands_reflected, 0,
        "nothing reflected within 1 s"
    );
    assert_eq!(net.rec.commands_lost, net.rec.commands_sent);
    assert_eq!(
        net.rec.transaction.len(),
        0,
        "no latency beyond the deadline recorded"
    );
    // The snapshots themselves arrived.
    assert_eq!(net.rec.snapshots.lost, 0);
}

#[test]
fn skipped_server_ticks_count_as_lost_snapshots() {
    let mut net = Net::new(3, 3_000_000, Fault::None);
    // The server's loop falls behind and skips 3 slots every 50.
    net.skip = |slot| slot % 50 < 3;
    net.run();
    let s = net.rec.snapshots;
    // 300 slots in the window, 3 of every 50 skipped: 18 per player (one
    // burst may straddle an edge of a player's span).
    assert!((3 * 15..=3 * 18).contains(&s.lost), "{s:?}");
    assert_eq!(s.outages, 0, "30 ms gaps are loss, not outages: {s:?}");
    assert_eq!(s.received + s.lost, 3 * net.slots_in_window(), "{s:?}");
}

#[test]
fn a_servers_goodbye_read_after_its_port_went_unreachable_was_ignored() {
    // The bug: a player that had lost its session (its socket said "port
    // unreachable") and was handshaking again ignored the server's goodbye
    // (ServerShutdown) and kept saying hello until its run ended.
    let mut net = Net::new(1, 2_000_000, Fault::None);
    let mut buf = Vec::new();
    let mut now = START;
    while !net.players[0].is_connected() && now < START + 3_000_000 {
        while net.players[0].poll_transmit(now, &mut buf, &mut net.rec) {
            net.server.handle(now, addr(0), &buf);
        }
        let mut replies = vec![];
        net.server
            .drain_transmits(|_, bytes| replies.push(bytes.to_vec()));
        for r in replies {
            net.players[0].handle(now, &r, &mut net.rec);
        }
        now += 1_000;
    }
    assert!(net.players[0].is_connected(), "connected first");
    net.players[0].unreachable(now, "port unreachable".into(), &mut net.rec);
    assert!(net.players[0].ended().is_none(), "it reconnects");
    let goodbye = Packet::Disconnect {
        reason: tickpack_wire::DisconnectReason::ServerShutdown,
    }
    .to_vec();
    net.players[0].handle(now + 100, &goodbye, &mut net.rec);
    let why = net.players[0].ended().expect("the goodbye ended it");
    assert!(why.contains("ServerShutdown"), "{why}");
    assert!(
        !net.players[0].poll_transmit(now + 1_000_000, &mut buf, &mut net.rec),
        "no more hellos"
    );
}
