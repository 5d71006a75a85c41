//! One emulated Quake III player with a presence plan against a scripted
//! ioquake3 server on a virtual clock: no sockets, no sleeping. The script
//! speaks the real wire format (tickpack-q3's connectionless datagrams,
//! legacy netchan, Huffman message bits, delta-coded player states): it
//! answers `getchallenge` and `connect` (or refuses the connect, as a full
//! server prints), sends a gamestate on the first netchan packet and then
//! a full snapshot every 50 ms (`sv_fps 20`) whose `commandTime` is its
//! own `serverTime`, until the client's reliable `disconnect` arrives.

mod support;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use tickpack_players::player::Seat;
use tickpack_players::q3::{Q3Player, GOODBYE_PACKETS};
use tickpack_players::{Emulated, Presence, PresenceSpan, Recorder, RunEnd};
use tickpack_q3::delta::{self, PlayerState, GENTITYNUM_BITS, MAX_GENTITIES};
use tickpack_q3::msg::{Reader, Writer};
use tickpack_q3::{netchan, oob};

const START: u64 = 1_000_000;
const WARMUP: u64 = 1_000_000;
const DURATION: u64 = 3_000_000;
/// One way, each direction.
const DELAY: u64 = 5_000;
const FRAME_US: u64 = 50_000;
const CHALLENGE: i32 = 4321;
const SERVER_ID: i32 = 5;
const CLC_CLIENT_COMMAND: u8 = 4;

/// What the script saw of the player, by time.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    GetChallenge,
    Connect,
    /// A packet carrying the reliable client command (its text).
    Command(String),
}

#[derive(Default)]
struct Server {
    /// Refuse every connect (print the engine's words) until then.
    refuse_until: u64,
    /// The connection: the gamestate went out; snapshots go out.
    in_game: bool,
    /// Our next netchan sequence on this connection.
    sequence: i32,
    /// The client's reliable commands seen on this connection.
    command_seq: i32,
    server_time: i32,
    seen: Vec<(u64, Seen)>,
    out: Vec<Vec<u8>>,
}

impl Server {
    /// A netchan datagram of `body` (the legacy channel: the body
    /// XOR-encoded after its first long; no client command acknowledged).
    fn send(&mut self, mut body: Vec<u8>) {
        self.sequence += 1;
        netchan::legacy_decode(&mut body, CHALLENGE, self.sequence, b"");
        let mut d = self.sequence.to_le_bytes().to_vec();
        d.extend_from_slice(&body);
        self.out.push(d);
    }

    fn handle(&mut self, now: u64, d: &[u8]) {
        if let Some(payload) = oob::payload(d) {
            let (cmd, rest) = oob::command(payload);
            match cmd.as_str() {
                "getchallenge" => {
                    self.seen.push((now, Seen::GetChallenge));
                    let text = String::from_utf8_lossy(rest);
                    let client = text.split_whitespace().next().unwrap_or("0");
                    self.out.push(oob::encode(&format!(
                        "challengeResponse {CHALLENGE} {client} 71"
                    )));
                }
                "connect" => {
                    self.seen.push((now, Seen::Connect));
                    if now < self.refuse_until {
                        self.out.push(oob::encode("print\nServer is full.\n"));
                        return;
                    }
                    // A new connection.
                    self.in_game = false;
                    self.sequence = 0;
                    self.command_seq = 0;
                    self.out
                        .push(oob::encode(&format!("connectResponse {CHALLENGE}")));
                }
                _ => {}
            }
            return;
        }
        // A netchan packet: sequence, qport, then the message, legacy
        // encoded after its first 12 bytes with its serverId and message
        // acknowledge (the last server command is "": we send none).
        let mut msg = d[6..].to_vec();
        let (server_id, ack) = {
            let mut r = Reader::new(&msg);
            (r.read_long().unwrap(), r.read_long().unwrap())
        };
        netchan::legacy_encode(&mut msg, CHALLENGE, server_id, ack, b"");
        let mut r = Reader::new(&msg);
        let _ = (r.read_long(), r.read_long(), r.read_long());
        while let Ok(CLC_CLIENT_COMMAND) = r.read_byte() {
            let seq = r.read_long().unwrap();
            let text = r.read_string().unwrap();
            self.seen.push((now, Seen::Command(text.clone())));
            if seq > self.command_seq {
                self.command_seq = seq;
                if text == "disconnect" {
                    self.in_game = false;
                    self.sequence = -1_000; // nothing more on it
                }
            }
        }
        if !self.in_game && self.sequence == 0 {
            self.in_game = true;
            let mut w = Writer::new();
            w.write_long(0);
            w.write_byte(2); // svc_gamestate
            w.write_long(0);
            w.write_byte(3); // svc_configstring
            w.write_short(1);
            w.write_big_string(&format!("\\sv_serverid\\{SERVER_ID}"));
            w.write_byte(8);
            w.write_long(0); // client number
            w.write_long(0); // checksum feed
            w.write_byte(8);
            self.send(w.into_bytes());
        }
    }

    /// One server frame: a full snapshot to a player in the game.
    fn frame(&mut self) {
        self.server_time += 50;
        if !self.in_game {
            return;
        }
        let mut ps = PlayerState::default();
        ps.fields[delta::PS_COMMAND_TIME] = self.server_time;
        let mut w = Writer::new();
        w.write_long(0);
        w.write_byte(7); // svc_snapshot
        w.write_long(self.server_time);
        w.write_byte(0); // not a delta
        w.write_byte(0); // snapFlags
        w.write_byte(0); // areamask length
        delta::write_delta_playerstate(&mut w, None, &ps);
        w.write_bits(MAX_GENTITIES - 1, GENTITYNUM_BITS);
        w.write_byte(8);
        self.send(w.into_bytes());
    }
}

struct Run {
    rec: Recorder,
    player: Q3Player,
    seen: Vec<(u64, Seen)>,
}

fn span(from_ms: u64, until_ms: u64) -> PresenceSpan {
    PresenceSpan {
        from: Duration::from_millis(from_ms),
        until: Duration::from_millis(until_ms),
    }
}

/// The player present as `spans` say (1 s to join) against the script,
/// which refuses connects until `refuse_until`; measured from 1 s to 4 s
/// after the start.
fn run(spans: &[PresenceSpan], refuse_until: u64) -> Run {
    let window = (START + WARMUP, START + WARMUP + DURATION);
    let settings = support::settings(window, START + 5_000_000);
    let target: SocketAddr = "10.0.0.1:27960".parse().unwrap();
    let seat = Seat {
        index: 0,
        target,
        seed: 7,
        start_us: START,
    };
    let presence = Presence::planned(spans, START, Duration::from_secs(1));
    let mut player = Q3Player::with_presence(seat, settings, &presence);
    let mut rec = Recorder::with_windows(window, 1_000_000);
    let mut server = Server {
        refuse_until,
        server_time: 1_000,
        ..Default::default()
    };
    let mut to_server: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut to_player: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut buf = Vec::new();
    let mut next_frame = START;
    let end = window.1 + support::LOSS_DEADLINE_US;
    let mut t = START;
    while t < end {
        if t >= next_frame {
            server.frame();
            next_frame += FRAME_US;
        }
        while to_server.front().is_some_and(|(at, _)| *at <= t) {
            let (_, d) = to_server.pop_front().unwrap();
            server.handle(t, &d);
        }
        for d in server.out.drain(..) {
            to_player.push_back((t + DELAY, d));
        }
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
        t += 250;
    }
    let run_end = RunEnd {
        now_us: t,
        span_end_us: window.1,
        hint_tick_hz: tickpack_wire::TickRate::new(20).unwrap(),
    };
    player.finish(&run_end, &mut buf, &mut rec);
    Run {
        rec,
        player,
        seen: server.seen,
    }
}

fn times(r: &Run, what: fn(&Seen) -> bool) -> Vec<u64> {
    r.seen
        .iter()
        .filter(|(_, s)| what(s))
        .map(|(t, _)| *t)
        .collect()
}

#[test]
fn a_planned_quake3_player_sends_disconnect_three_times_then_a_fresh_challenge() {
    // Present [0, 2 s) and [2.5 s, 5 s) from the run's start.
    let r = run(&[span(0, 2_000), span(2_500, 5_000)], 0);
    let goodbyes = times(&r, |s| *s == Seen::Command("disconnect".into()));
    // Three packets at the first span's end (the last may be the run's
    // end's, which sends one more: the second span lasts past the window).
    assert!(goodbyes.len() >= GOODBYE_PACKETS as usize, "{:?}", r.seen);
    let leave = START + 2_000_000 + DELAY;
    assert!(
        goodbyes[..3]
            .iter()
            .all(|&t| (leave..leave + 1_000).contains(&t)),
        "{goodbyes:?}"
    );
    let challenges = times(&r, |s| *s == Seen::GetChallenge);
    assert_eq!(challenges.len(), 2, "one handshake per span: {:?}", r.seen);
    assert!(challenges[1] >= START + 2_500_000 && challenges[1] < START + 2_560_000);
    assert_eq!(times(&r, |s| *s == Seen::Connect).len(), 2);
    let rec = &r.rec;
    assert_eq!((rec.joins, rec.failed_joins, rec.reconnects), (2, 0, 0));
    // A join: challenge, connect, gamestate and the first snapshot's frame
    // (a frame every 50 ms): at least three round trips.
    assert!(rec.join.min() >= 6 * DELAY, "{}", rec.join.min());
    assert!(
        rec.join.max() <= 6 * DELAY + FRAME_US + 5_000,
        "{}",
        rec.join.max()
    );
    // Only the presence measured, none of it lost: [1 s, 2 s) and
    // [2.5 s + join, 4 s) at 20 frames a second.
    let s = rec.snapshots;
    assert_eq!((s.lost, s.outages), (0, 0), "{s:?}");
    assert!((46..=50).contains(&s.received), "{s:?}");
    assert_eq!(rec.commands_lost, 0);
    let rows = rec.windows.to_result(START + WARMUP + DURATION);
    let present: Vec<f64> = rows.iter().map(|w| w.players_present).collect();
    // [1, 2) present, [2, 3) half, [3, 4) present.
    assert!(present[0] > 0.99 && present[2] > 0.99, "{present:?}");
    // (less the join: its phase, up to 50 ms, and its handshake)
    assert!(present[1] > 0.35 && present[1] < 0.5, "{present:?}");
    assert_eq!(rows[1].joins, 1);
    assert_eq!(r.player.ended(), Some("finished"));
}

#[test]
fn a_refused_quake3_join_fails_with_the_servers_words_and_the_next_span_gets_in() {
    // The server is full until 2 s: the first span's join is refused
    // until its 1 s limit; the second span's gets in.
    let r = run(&[span(0, 1_800), span(2_500, 5_000)], START + 2_000_000);
    let rec = &r.rec;
    assert_eq!((rec.joins, rec.failed_joins), (1, 1));
    // The refused join neither lost nor went without snapshots: it failed.
    let s = rec.snapshots;
    assert_eq!((s.lost, s.outages), (0, 0), "{s:?}");
    assert_eq!(rec.commands_lost, 0);
    // Never in the game before 2.5 s: no goodbye was owed.
    assert!(times(&r, |s| matches!(s, Seen::Command(_)))
        .iter()
        .all(|&t| t >= START + 2_500_000));
    let why = r.player.ended().unwrap();
    assert!(why.starts_with("1 join(s) failed"), "{why}");
    assert!(why.contains("Server is full."), "{why}");
}
