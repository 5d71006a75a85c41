//! One emulated Teeworlds player against a scripted Teeworlds 0.7 server on
//! a virtual clock: no sockets, no sleeping. The script speaks the real
//! wire format (tickpack-tw7's packet, chunk and message layers): it hands
//! out a token, accepts, walks the player through the join, runs each
//! INPUT at its intended tick (or the next tick, if late) and sends a
//! snapshot of the player's character every second tick, as the engine
//! does by default. A spectator's snapshots hold no character.

mod support;

use std::collections::VecDeque;
use std::net::SocketAddr;

use std::time::Duration;

use tickpack_players::player::Seat;
use tickpack_players::tw7::TwPlayer;
use tickpack_players::{Emulated, Presence, PresenceSpan, Recorder, RunEnd};
use tickpack_tw7::huffman::Huffman;
use tickpack_tw7::msg::{game, sys};
use tickpack_tw7::packer::{pack_int, Unpacker};
use tickpack_tw7::packet::{
    Chunks, PacketHeader, CTRL_ACCEPT, CTRL_CLOSE, CTRL_CONNECT, CTRL_TOKEN, FLAG_COMPRESSION,
    FLAG_CONTROL, MAX_PAYLOAD,
};
use tickpack_tw7::server_packets::{self, message};
use tickpack_tw7::snapshot::obj;
use tickpack_tw7::PlayerInput;

const START: u64 = 1_000_000;
const WARMUP: u64 = 1_000_000;
const DURATION: u64 = 3_000_000;
const DEADLINE: u64 = support::LOSS_DEADLINE_US;
/// One way, each direction.
const DELAY: u64 = 5_000;
const TICK_US: u64 = 20_000;
const SERVER_TOKEN: u32 = 0x1234_5678;

struct Server {
    client_token: u32,
    /// Vital chunks received from the player (acknowledged in every packet).
    ack: u16,
    tick: i32,
    /// Inputs received: (tick it runs at, input).
    inputs: VecDeque<(i32, PlayerInput)>,
    current: PlayerInput,
    spectator: bool,
    out: Vec<Vec<u8>>,
    /// The reasons of the close messages the player sent.
    closes: Vec<String>,
}

impl Server {
    fn control(&mut self, ctrl: u8, extra: &[u8]) {
        let packet = server_packets::control(self.client_token, self.ack, ctrl, extra);
        self.out.push(packet);
    }

    fn chunk(&mut self, seq: Option<u16>, body: &[u8]) {
        let packet = server_packets::one_chunk(self.client_token, self.ack, seq, body);
        self.out.push(packet);
    }

    fn handle(&mut self, d: &[u8]) {
        let h = PacketHeader::decode(d).expect("a packet header");
        if h.flags & FLAG_CONTROL != 0 {
            match d[7] {
                CTRL_TOKEN => {
                    // A new connection: its vital chunks count afresh.
                    self.client_token = u32::from_be_bytes([d[8], d[9], d[10], d[11]]);
                    self.ack = 0;
                    self.control(CTRL_TOKEN, &SERVER_TOKEN.to_be_bytes());
                }
                CTRL_CLOSE => {
                    // The player left: no more snapshots to it.
                    let reason = d[8..].split(|&b| b == 0).next().unwrap_or(&[]);
                    self.closes
                        .push(String::from_utf8_lossy(reason).into_owned());
                    self.client_token = 0;
                    self.inputs.clear();
                }
                CTRL_CONNECT => {
                    self.control(CTRL_ACCEPT, &[]);
                    self.join();
                }
                _ => {}
            }
            return;
        }
        let mut payload = Vec::new();
        if h.flags & FLAG_COMPRESSION != 0 {
            Huffman::get()
                .decompress(&d[7..], &mut payload, MAX_PAYLOAD)
                .expect("huffman");
        } else {
            payload.extend_from_slice(&d[7..]);
        }
        for c in Chunks::new(&payload, h.num_chunks) {
            let (ch, data) = c.expect("a chunk");
            if ch.vital() {
                self.ack = ch.sequence;
            }
            let mut u = Unpacker::new(data);
            let id = u.int().expect("msg id");
            if id == (sys::INPUT << 1) | 1 {
                let _ack_tick = u.int().unwrap();
                let intended = u.int().unwrap();
                let _size = u.int().unwrap();
                let mut v = [0i32; 10];
                for x in &mut v {
                    *x = u.int().unwrap();
                }
                // The engine runs an input at its intended tick, or at the
                // next tick if it came late.
                let at = intended.max(self.tick + 1);
                self.inputs.push_back((at, PlayerInput::from_ints(v)));
            }
        }
    }

    fn join(&mut self) {
        let map = message(sys::MAP_CHANGE, true, |p| {
            p.string("dm1", 64).int(1).int(2).int(3).int(4);
        });
        self.chunk(Some(1), &map);
        self.chunk(Some(2), &message(sys::CON_READY, true, |_| {}));
        let info = message(game::SV_CLIENTINFO, false, |p| {
            p.int(0).int(1).int(0);
        });
        self.chunk(Some(3), &info);
        self.chunk(Some(4), &message(game::SV_READYTOENTER, false, |_| {}));
    }

    /// One game tick: run the inputs due, and every second tick send a
    /// snapshot (from nothing: SNAPSINGLE) of the player's character.
    fn tick(&mut self) {
        self.tick += 1;
        while self.inputs.front().is_some_and(|(at, _)| *at <= self.tick) {
            self.current = self.inputs.pop_front().unwrap().1;
        }
        if self.tick % 2 != 0 || self.client_token == 0 {
            return;
        }
        let mut ints = vec![0, 0, 0];
        if !self.spectator {
            let mut ch = [0i32; 22];
            ch[5] = self.current.expected_angle();
            ch[6] = self.current.direction;
            ints = vec![0, 1, 0, i32::from(obj::CHARACTER), 0];
            ints.extend_from_slice(&ch);
        }
        let crc = ints.iter().skip(5).fold(0i32, |a, &v| a.wrapping_add(v));
        let mut d = Vec::new();
        for v in ints {
            pack_int(&mut d, v);
        }
        let tick = self.tick;
        let snap = message(sys::SNAPSINGLE, true, |p| {
            p.int(tick)
                .int(tick + 1)
                .int(crc)
                .int(d.len() as i32)
                .raw(&d);
        });
        self.chunk(None, &snap);
    }
}

struct Run {
    rec: Recorder,
    player: TwPlayer,
    connected: bool,
    /// The close messages' reasons the server got.
    closes: Vec<String>,
    /// When the server's connection to the player opened and closed:
    /// (time, open).
    server_saw: Vec<(u64, bool)>,
}

fn run(spectator: bool) -> Run {
    run_with(spectator, &Presence::always())
}

fn run_with(spectator: bool, presence: &Presence) -> Run {
    let window = (START + WARMUP, START + WARMUP + DURATION);
    let settings = support::settings(window, START + 5_000_000);
    let target: SocketAddr = "10.0.0.1:8303".parse().unwrap();
    let seat = Seat {
        index: 0,
        target,
        seed: 7,
        start_us: START,
    };
    let mut player = TwPlayer::with_presence(seat, settings, presence);
    let mut rec = Recorder::new(window);
    let mut server = Server {
        client_token: 0,
        ack: 0,
        tick: 1000,
        inputs: VecDeque::new(),
        current: PlayerInput::default(),
        spectator,
        out: vec![],
        closes: vec![],
    };
    let mut server_saw: Vec<(u64, bool)> = vec![];
    let mut to_server: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut to_player: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut buf = Vec::new();
    let mut next_tick = 0;
    let mut connected = false;
    let end = window.1 + DEADLINE;
    // A 250 µs step: fine enough for 20 ms ticks and 5 ms delays.
    let mut t = 0;
    while t < end {
        if t >= next_tick {
            server.tick();
            next_tick += TICK_US;
        }
        while to_server.front().is_some_and(|(at, _)| *at <= t) {
            let (_, d) = to_server.pop_front().unwrap();
            server.handle(&d);
        }
        for d in server.out.drain(..) {
            to_player.push_back((t + DELAY, d));
        }
        // As the I/O loop does: poll when a deadline came or after a
        // datagram (a reply may be due at once).
        let mut heard = false;
        while to_player.front().is_some_and(|(at, _)| *at <= t) {
            let (_, d) = to_player.pop_front().unwrap();
            player.handle(t, &d, &mut rec);
            heard = true;
        }
        if t < window.1 && (heard || player.next_deadline() <= t) {
            while player.poll_transmit(t, &mut buf, &mut rec) {
                to_server.push_back((t + DELAY, buf.clone()));
            }
        }
        connected |= player.is_connected();
        let open = server.client_token != 0;
        if server_saw.last().is_none_or(|(_, o)| *o != open) {
            server_saw.push((t, open));
        }
        t += 250;
    }
    let run_end = RunEnd {
        now_us: t,
        span_end_us: window.1,
        hint_tick_hz: tickpack_wire::TickRate::new(50).unwrap(),
    };
    player.finish(&run_end, &mut buf, &mut rec);
    Run {
        rec,
        player,
        connected,
        closes: server.closes,
        server_saw,
    }
}

#[test]
fn a_teeworlds_player_joins_and_every_input_is_reflected_on_the_schedule() {
    let r = run(false);
    assert!(r.connected);
    assert_eq!(r.player.tick_hz(), tickpack_wire::TickRate::new(50));
    assert_eq!(
        r.player.snapshot_step(),
        Some(2),
        "a snapshot every second tick"
    );
    let rec = &r.rec;
    // 50 inputs a second for 3 s, every one due on the schedule sent.
    assert!(
        (149..=151).contains(&rec.commands_sent),
        "{}",
        rec.commands_sent
    );
    assert_eq!(rec.commands_lost, 0);
    assert_eq!(rec.commands_reflected, rec.commands_sent);
    // 25 snapshots a second, none lost, no outage.
    assert!(
        (74..=76).contains(&rec.snapshots.received),
        "{:?}",
        rec.snapshots
    );
    assert_eq!(rec.snapshots.lost, 0);
    assert_eq!(rec.snapshots.outages, 0);
    assert_eq!(rec.decode_errors, 0);
    // Due → sent at once → 5 ms to the server → run at its tick → the
    // next even tick's snapshot → 5 ms back: at least the two delays, at
    // most those plus the intended-tick lead and two snapshot intervals.
    let min = rec.transaction.min();
    let max = rec.transaction.max();
    assert!(min >= 2 * DELAY, "{min}");
    assert!(max <= 2 * DELAY + 3 * TICK_US + 2 * 2 * TICK_US, "{max}");
    assert!(!rec.rtt.is_empty());
    assert!(rec.rtt.min() >= 2 * DELAY);
}

#[test]
fn a_spectators_inputs_are_never_reflected_and_count_as_lost() {
    // The server shows no character of ours (a spectator: the engine's
    // sv_player_slots was full): no snapshot can show an input.
    let r = run(true);
    assert!(r.connected);
    let rec = &r.rec;
    assert!(rec.commands_sent >= 149);
    assert_eq!(rec.commands_reflected, 0);
    assert_eq!(rec.commands_lost, rec.commands_sent);
    assert_eq!(rec.snapshots.lost, 0, "the snapshots themselves came");
}

fn span(from_ms: u64, until_ms: u64) -> PresenceSpan {
    PresenceSpan {
        from: Duration::from_millis(from_ms),
        until: Duration::from_millis(until_ms),
    }
}

#[test]
fn a_planned_teeworlds_player_closes_its_connection_and_joins_again_as_a_new_one() {
    // Present [0, 2 s) and [2.5 s, 5 s) from the run's start (measured
    // from 1 s to 4 s), 1 s to join.
    let presence = Presence::planned(
        &[span(0, 2_000), span(2_500, 5_000)],
        START,
        Duration::from_secs(1),
    );
    let r = run_with(false, &presence);
    assert_eq!(r.closes, ["leaving"], "one close, with its reason");
    // The server's connection opened, closed at 2 s, opened again from 2.5 s.
    let opened: Vec<u64> = r.server_saw.iter().filter(|s| s.1).map(|s| s.0).collect();
    let closed: Vec<u64> = r.server_saw.iter().filter(|s| !s.1).map(|s| s.0).collect();
    assert_eq!(opened.len(), 2, "{:?}", r.server_saw);
    assert!(closed
        .iter()
        .any(|&t| (START + 2_000_000..START + 2_020_000).contains(&t)));
    assert!(opened[1] >= START + 2_500_000, "{:?}", r.server_saw);
    let rec = &r.rec;
    assert_eq!((rec.joins, rec.failed_joins), (2, 0));
    assert_eq!(rec.reconnects, 0, "a planned join is no reconnect");
    // Each join is a token round trip, the connect, the join messages and
    // a snapshot: at least two round trips of 10 ms.
    assert!(rec.join.min() >= 4 * DELAY, "{}", rec.join.min());
    // Only the presence is measured, and nothing of it lost: [1 s, 2 s)
    // and [2.5 s + join, 4 s) at 25 snapshots a second.
    let s = rec.snapshots;
    assert_eq!((s.lost, s.outages), (0, 0), "{s:?}");
    assert!((55..=63).contains(&s.received), "{s:?}");
    assert_eq!(rec.commands_lost, 0);
    // The inputs sent in the last round trip before the leave are not
    // judged: the player left before a snapshot could show them.
    let unjudged = rec.commands_sent - rec.commands_reflected;
    assert!(
        unjudged <= 2,
        "{} sent, {} reflected",
        rec.commands_sent,
        rec.commands_reflected
    );
    assert!(rec.commands_reflected >= 100, "{}", rec.commands_reflected);
    assert_eq!(r.player.ended(), Some("finished"));
}
