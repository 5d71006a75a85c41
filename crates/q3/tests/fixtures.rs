//! Datagrams captured from the real OpenArena server (oa_dm1, sv_fps 20,
//! no bots, legacy channel) by the first client of tests/real_server.rs
//! (`Q3_CAPTURE_DIR`), replayed into a fresh [`Client`] with the same
//! config: 00 challengeResponse, 01 connectResponse, 02-03 snapshots sent
//! before the gamestate, 04-05 the gamestate in two fragments, 06 the
//! first server commands and the first full snapshot, 07-15 delta
//! snapshots.

mod fixture_data;

use fixture_data::{capture_config, captured};
use tickpack_q3::msg::Reader;
use tickpack_q3::{delta, netchan, oob, Client, ClientState, Event, SnapshotInfo, UserCmd};

fn replay(upto: usize) -> (Client, Vec<Vec<Event>>) {
    let mut c = Client::new(capture_config());
    let mut all = Vec::new();
    for d in &captured()[..upto] {
        let mut ev = Vec::new();
        c.handle(d, &mut ev).expect("a captured datagram decodes");
        all.push(ev);
    }
    (c, all)
}

fn snapshot(ev: &[Event]) -> &SnapshotInfo {
    ev.iter()
        .find_map(|e| match e {
            Event::Snapshot(s) => Some(s),
            _ => None,
        })
        .expect("a snapshot")
}

#[test]
fn the_captured_handshake_decodes() {
    let d = captured();
    assert_eq!(
        oob::command(oob::payload(&d[0]).unwrap()).0,
        "challengeResponse"
    );
    let (c, ev) = replay(2);
    assert_eq!(ev[0], vec![Event::Challenged]);
    assert_eq!(c.server_challenge(), 1353093658);
    assert_eq!(ev[1], vec![Event::Connected]);
    assert_eq!(c.state(), ClientState::AwaitingGamestate);
}

#[test]
fn the_captured_gamestate_reassembles_from_two_fragments() {
    let d = captured();
    assert_eq!(d[4].len(), 4 + 4 + netchan::FRAGMENT_SIZE);
    let (c, ev) = replay(6);
    // Snapshots come before the gamestate, flagged not active.
    assert!(snapshot(&ev[2]).snap_flags & 2 != 0);
    assert!(
        ev[4].is_empty(),
        "a first fragment is no message: {:?}",
        ev[4]
    );
    assert_eq!(
        ev[5],
        vec![Event::Gamestate {
            server_id: 1060,
            client_num: 0,
            checksum_feed: -1362216928,
            configstrings: 18,
            mapname: "oa_dm1".into(),
        }]
    );
    assert_eq!(c.state(), ClientState::Primed);
}

#[test]
fn the_captured_snapshots_decode_with_known_values() {
    let (c, ev) = replay(16);
    assert_eq!(c.state(), ClientState::Active);
    let cmds: Vec<_> = ev[6]
        .iter()
        .filter_map(|e| match e {
            Event::ServerCommand { sequence, text } => Some((*sequence, text.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(cmds[0], (1, "respawn 0"));
    assert_eq!(cmds[1], (2, "print \"tp_alpha^7 entered the game\n\""));
    let first = snapshot(&ev[6]);
    assert_eq!(
        (first.message_num, first.server_time, first.delta_num),
        (4, 1200, -1)
    );
    assert_eq!(first.entities, 22);
    assert_eq!(first.client_num, 0);
    assert_eq!(first.command_time, 1171);
    let snaps: Vec<&SnapshotInfo> = ev[6..16].iter().map(|e| snapshot(e)).collect();
    for w in snaps.windows(2) {
        // sv_fps 20: one snapshot every 50 ms of server time, each a delta
        // from the one before.
        assert_eq!(w[1].server_time - w[0].server_time, 50);
        assert_eq!(w[1].delta_num, w[0].message_num);
        assert!(w[1].delta_ok);
        assert!(w[1].command_time > w[0].command_time);
    }
    let last = snaps.last().unwrap();
    assert_eq!((last.message_num, last.server_time), (13, 1650));
    let (n, t, ps) = c.last_snapshot().unwrap();
    assert_eq!((n, t, ps.command_time()), (13, 1650, 1635));
    assert_eq!((c.server_id(), c.client_num()), (1060, 0));
    assert_eq!(last.command_time, 1635);
    // Forward 127 with a turning view: the player moved.
    let moved = (last.origin[0] - first.origin[0]).hypot(last.origin[1] - first.origin[1]);
    assert!(moved > 100.0, "{moved}");
}

#[test]
fn a_duplicate_or_reordered_datagram_says_nothing() {
    let d = captured();
    let (mut c, _) = replay(10);
    let mut ev = Vec::new();
    c.handle(&d[8], &mut ev).unwrap();
    c.handle(&d[9], &mut ev).unwrap();
    assert!(ev.is_empty(), "{ev:?}");
    // The gamestate's second fragment alone is no message either.
    let (mut c, _) = replay(4);
    c.handle(&d[5], &mut ev).unwrap();
    assert!(ev.is_empty() && c.state() == ClientState::AwaitingGamestate);
}

#[test]
fn a_lost_snapshot_makes_the_next_delta_invalid_and_asks_for_a_full_one() {
    let d = captured();
    let (mut c, _) = replay(8);
    let mut ev = Vec::new();
    // Skip 08; 09 is a delta from 08's message.
    c.handle(&d[9], &mut ev).unwrap();
    let s = snapshot(&ev);
    assert_eq!(s.delta_num, 6);
    assert!(!s.delta_ok);
    // The next packet is clc_moveNoDelta: decode it like the server.
    let cmd = UserCmd {
        server_time: 1400,
        forwardmove: 127,
        ..UserCmd::default()
    };
    let p = c.usercmd_packet(&[cmd]).unwrap();
    let (op, got) = server_reads(&c, &p);
    assert_eq!(op, 3, "clc_moveNoDelta");
    assert_eq!(got, vec![cmd]);
}

#[test]
fn usercmd_packets_decode_like_the_server_does() {
    let (mut c, _) = replay(16);
    let cmds: Vec<UserCmd> = (0..3)
        .map(|i| UserCmd {
            server_time: 1660 + 20 * i,
            angles: [100, 2000 * i, 0],
            forwardmove: 127,
            rightmove: -127,
            buttons: 1,
            weapon: 2,
            upmove: 0,
        })
        .collect();
    c.queue_command("say hello");
    let p = c.usercmd_packet(&cmds).unwrap();
    let (op, got) = server_reads(&c, &p);
    assert_eq!(op, 2, "clc_move: the last snapshot is the last message");
    assert_eq!(got, cmds);
}

/// Decode a client datagram like the server (legacy channel): header,
/// XOR, serverId / acks, reliable commands, then the usercmds. Returns
/// the move op and the commands.
fn server_reads(c: &Client, datagram: &[u8]) -> (u8, Vec<UserCmd>) {
    assert_eq!(
        u16::from_le_bytes([datagram[4], datagram[5]]),
        1000,
        "qport"
    );
    let mut body = datagram[6..].to_vec();
    let mut r = Reader::new(&body);
    let server_id = r.read_long().unwrap();
    let message_ack = r.read_long().unwrap();
    let reliable_ack = r.read_long().unwrap();
    assert_eq!(server_id, 1060);
    let (_, events) = replay(16);
    // The text of the server command the client acknowledged.
    let acked = events
        .iter()
        .flatten()
        .find_map(|e| match e {
            Event::ServerCommand { sequence, text } if *sequence == reliable_ack => {
                Some(text.clone())
            }
            _ => None,
        })
        .unwrap_or_default();
    netchan::legacy_encode(
        &mut body,
        c.server_challenge(),
        server_id,
        message_ack,
        acked.as_bytes(),
    );
    let mut r = Reader::new(&body);
    for _ in 0..3 {
        r.read_long().unwrap();
    }
    let mut op = r.read_byte().unwrap();
    while op == 4 {
        r.read_long().unwrap();
        assert_eq!(r.read_string().unwrap(), "say hello");
        op = r.read_byte().unwrap();
    }
    let n = r.read_byte().unwrap();
    let key = -1362216928 ^ message_ack ^ delta::hash_key(acked.as_bytes(), 32);
    let mut from = UserCmd::default();
    let mut got = Vec::new();
    for _ in 0..n {
        from = delta::read_delta_usercmd(&mut r, key, &from).unwrap();
        got.push(from);
    }
    assert_eq!(r.read_byte().unwrap(), 5, "clc_EOF");
    (op, got)
}
