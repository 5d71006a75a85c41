//! Players of tickpack's protocol that come and go by a presence plan,
//! against the real server state machine on a virtual clock: they leave
//! with a goodbye the server acts on, join again with a fresh handshake,
//! their joins are timed, a join that cannot get in is counted and tried
//! again at the next span, and only their presence is measured (in windows
//! too). No sockets, no sleeping.

mod support;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use tickpack_players::player::{PlayerSettings, Seat, DEFAULT_TICK_HZ};
use tickpack_players::{Emulated, Player, Presence, PresenceSpan, Recorder, RunEnd, SizeDist};
use tickpack_sim::{Server, ServerConfig};
use tickpack_wire::{DisconnectReason, Packet};

const START: u64 = 1_000_000;
const WARMUP: u64 = 1_000_000;
const TICK: u64 = 10_000;
const DEADLINE: u64 = support::LOSS_DEADLINE_US;
const JOIN_TIMEOUT: Duration = Duration::from_millis(500);

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, i as u8 + 1], 5000))
}

fn span(from_ms: u64, until_ms: u64) -> PresenceSpan {
    PresenceSpan {
        from: Duration::from_millis(from_ms),
        until: Duration::from_millis(until_ms),
    }
}

/// What a player sent, by time: its handshakes and goodbyes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Hello,
    Goodbye,
}

struct Net {
    server: Server,
    players: Vec<Player>,
    rec: Recorder,
    window: (u64, u64),
    /// Until when the server answers nothing (no ICMP either).
    silent_until: u64,
    /// Handshakes and goodbyes each player sent, with their time.
    sent: Vec<Vec<(u64, Sent)>>,
    /// The server's player count, sampled every 100 ms: (time, players).
    count: Vec<(u64, usize)>,
}

impl Net {
    /// Players with `plans` (one list of spans each, from the run's start),
    /// measured over `duration_us` after the warm-up, in windows of
    /// `window_us` (0: none).
    fn new(plans: &[Vec<PresenceSpan>], duration_us: u64, window_us: u64) -> Net {
        let window = (START + WARMUP, START + WARMUP + duration_us);
        let settings = PlayerSettings {
            cmd_size: SizeDist::Fixed(60),
            ..support::settings(window, START + 3_000_000)
        };
        let server = Server::new(
            ServerConfig {
                tick_hz: tickpack_wire::TickRate::DEFAULT,
                max_players: 12,
                bots: 1,
                snapshot_len: 400,
                ..Default::default()
            },
            [1; 32],
        );
        let players = plans
            .iter()
            .enumerate()
            .map(|(i, spans)| {
                let seat = Seat {
                    index: i,
                    target: addr(i),
                    seed: 7,
                    start_us: START,
                };
                let presence = Presence::planned(spans, START, JOIN_TIMEOUT);
                Player::with_presence(seat, settings.clone(), &presence)
            })
            .collect();
        Net {
            server,
            players,
            rec: Recorder::with_windows(window, window_us),
            window,
            silent_until: 0,
            sent: vec![vec![]; plans.len()],
            count: vec![],
        }
    }

    fn run(&mut self) {
        let end = self.window.1 + DEADLINE;
        let mut due = START + 5_000;
        let mut sample = START;
        let mut buf = Vec::new();
        let mut to_players: VecDeque<(u64, usize, Vec<u8>)> = VecDeque::new();
        let mut now = START;
        while now < end {
            let up = now >= self.silent_until;
            let sending = now < self.window.1;
            for i in 0..self.players.len() {
                while sending && self.players[i].poll_transmit(now, &mut buf, &mut self.rec) {
                    match Packet::decode(&buf) {
                        Ok(Packet::Hello { .. }) => self.sent[i].push((now, Sent::Hello)),
                        Ok(Packet::Disconnect {
                            reason: DisconnectReason::ClientLeaving,
                        }) => self.sent[i].push((now, Sent::Goodbye)),
                        _ => {}
                    }
                    if up {
                        self.server.handle(now, addr(i), &buf);
                    }
                }
            }
            if now >= due {
                if up {
                    self.server.tick(due, due);
                    self.server.record_frame(300);
                }
                due += TICK;
            }
            if now >= sample {
                self.count.push((now, self.server.players()));
                sample += 100_000;
            }
            let mut out = vec![];
            self.server
                .drain_transmits(|to, b| out.push((to, b.to_vec())));
            for (to, b) in out {
                if up {
                    let i = (0..self.players.len()).find(|&i| addr(i) == to).unwrap();
                    to_players.push_back((now + 300, i, b));
                }
            }
            while to_players.front().is_some_and(|(at, _, _)| *at <= now) {
                let (_, i, b) = to_players.pop_front().unwrap();
                self.players[i].handle(now, &b, &mut self.rec);
            }
            let mut next = due.min(end).min(sample);
            if sending {
                for p in &self.players {
                    next = next.min(p.next_deadline());
                }
            }
            if let Some((at, _, _)) = to_players.front() {
                next = next.min(*at);
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

    /// The server's player count sampled at `t_us` (the sample before it).
    fn players_at(&self, t_us: u64) -> usize {
        self.count
            .iter()
            .rev()
            .find(|(at, _)| *at <= t_us)
            .map_or(0, |(_, n)| *n)
    }
}

#[test]
fn a_planned_player_leaves_with_a_goodbye_and_joins_again_with_a_fresh_handshake() {
    // Present [0, 2 s) and [3 s, 5 s) from the run's start; measured from
    // 1 s to 5 s.
    let mut net = Net::new(&[vec![span(0, 2_000), span(3_000, 5_000)]], 4_000_000, 0);
    net.run();
    let sent = &net.sent[0];
    let goodbye = sent
        .iter()
        .find(|(_, s)| *s == Sent::Goodbye)
        .expect("a goodbye at the first span's end")
        .0;
    assert!(
        (START + 2_000_000..START + 2_010_000).contains(&goodbye),
        "{goodbye}"
    );
    let hellos: Vec<u64> = sent
        .iter()
        .filter(|(_, s)| *s == Sent::Hello)
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(hellos.len(), 2, "one handshake per span: {sent:?}");
    assert!(hellos[1] >= START + 3_000_000 && hellos[1] < START + 3_050_000);
    // The server saw it go and come back.
    assert_eq!(net.players_at(START + 1_500_000), 1);
    assert_eq!(net.players_at(START + 2_500_000), 0, "{:?}", net.count);
    assert_eq!(net.players_at(START + 4_000_000), 1);
    assert_eq!(net.server.counters().disconnects, 1);
    // Two joins, timed; the rejoin is no reconnect.
    let rec = &net.rec;
    assert_eq!((rec.joins, rec.failed_joins), (2, 0));
    assert_eq!(rec.join.len(), 2);
    assert!(rec.join.max() < 100_000, "{}", rec.join.max());
    assert_eq!(rec.reconnects, 0);
    // Only the presence is measured: [1 s, 2 s) and about [3 s, 5 s) of
    // the window, nothing lost, the absence no outage.
    let s = rec.snapshots;
    assert_eq!((s.lost, s.outages), (0, 0), "{s:?}");
    assert!((290..=300).contains(&s.received), "{s:?}");
    assert_eq!(rec.commands_lost, 0);
    assert!(rec.commands_sent >= 290, "{}", rec.commands_sent);
    // Finished in a session: a last goodbye, no problem reported.
    assert_eq!(net.players[0].ended(), Some("finished"));
}

#[test]
fn a_join_that_cannot_get_in_is_counted_failed_and_tried_again_at_the_next_span() {
    // The server answers nothing until 2.5 s: the first span's join fails
    // at its 500 ms limit; the second span's gets in.
    let mut net = Net::new(&[vec![span(0, 2_000), span(3_000, 5_000)]], 4_000_000, 0);
    net.silent_until = START + 2_500_000;
    net.run();
    let rec = &net.rec;
    assert_eq!((rec.joins, rec.failed_joins), (1, 1));
    let hellos: Vec<u64> = net.sent[0]
        .iter()
        .filter(|(_, s)| *s == Sent::Hello)
        .map(|(t, _)| *t)
        .collect();
    // Retried with backoff within its limit, then quiet until 3 s.
    assert!(hellos.len() >= 3, "{hellos:?}");
    assert!(hellos
        .iter()
        .all(|&t| !(START + 600_000..START + 3_000_000).contains(&t)));
    // Never in a session before 3 s: nothing to say goodbye to.
    assert!(net.sent[0]
        .iter()
        .all(|(t, s)| *s != Sent::Goodbye || *t >= START + 3_000_000));
    // The failed join is no outage and no loss: it is counted as failed.
    let s = rec.snapshots;
    assert_eq!((s.lost, s.outages), (0, 0), "{s:?}");
    assert!((190..=200).contains(&s.received), "{s:?}");
    assert_eq!(rec.commands_lost, 0);
    // The run's problems say so.
    let why = net.players[0].ended().unwrap();
    assert!(why.starts_with("1 join(s) failed"), "{why}");
}

#[test]
fn windows_follow_the_plan_and_sum_to_the_whole() {
    // Two players: one the whole run, one away from 2 s to 3 s; windows of
    // 1 s over 4 s measured.
    let mut net = Net::new(
        &[
            vec![span(0, 6_000)],
            vec![span(0, 2_000), span(3_000, 6_000)],
        ],
        4_000_000,
        1_000_000,
    );
    net.run();
    let rec = &net.rec;
    let rows = rec.windows.to_result(net.window.1);
    assert_eq!(rows.len(), 4);
    let present: Vec<f64> = rows.iter().map(|w| w.players_present).collect();
    // Window 0 is [1 s, 2 s) from the start: both; window 1 one; then both
    // (less the second's rejoin handshake).
    assert!((present[0] - 2.0).abs() < 0.01, "{present:?}");
    assert!((present[1] - 1.0).abs() < 0.01, "{present:?}");
    assert!(present[2] > 1.9 && present[2] <= 2.0, "{present:?}");
    let sum = |f: fn(&tickpack_report::PlayersWindow) -> u64| rows.iter().map(f).sum::<u64>();
    assert_eq!(sum(|w| w.snapshots.received), rec.snapshots.received);
    assert_eq!(sum(|w| w.snapshots.lost), rec.snapshots.lost);
    assert_eq!(sum(|w| w.commands.sent), rec.commands_sent);
    assert_eq!(sum(|w| w.commands.reflected), rec.commands_reflected);
    assert_eq!(
        sum(|w| w.transaction_latency_us.count),
        rec.transaction.len()
    );
    // The expected snapshots follow presence: 2 players, 1, then 2.
    let expected: Vec<u64> = rows.iter().map(|w| w.snapshots.expected).collect();
    assert!(expected[0].abs_diff(200) <= 2, "{expected:?}");
    assert!(expected[1].abs_diff(100) <= 2, "{expected:?}");
    // The rejoin is in window 2 (3 s from the start), with its time.
    assert_eq!(rows[2].joins, 1);
    assert_eq!(rows[2].join_us.unwrap().count, 1);
    assert_eq!(rows[0].joins + rows[1].joins + rows[3].joins, 0);
    assert!(rows.iter().all(|w| w.server_frame_us.is_some()));
}
