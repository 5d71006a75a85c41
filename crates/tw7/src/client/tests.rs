use super::*;
use crate::msg::{game, sys};
use crate::packer::pack_int;
use crate::packet::{CTRL_ACCEPT, CTRL_CLOSE, CTRL_TOKEN};
use crate::server_packets::{self, message};
use proptest::prelude::*;

const ME: u32 = 0x0a0b_0c0d;

fn control(msg: u8, extra: &[u8]) -> Vec<u8> {
    server_packets::control(ME, 0, msg, extra)
}

fn chunk(seq: Option<u16>, body: &[u8]) -> Vec<u8> {
    server_packets::one_chunk(ME, 0, seq, body)
}

/// A SNAPSINGLE from nothing holding our Character (client id 0).
fn snap(tick: i32, direction: i32, angle: i32) -> Vec<u8> {
    let mut ch = [0i32; 22];
    ch[5] = angle;
    ch[6] = direction;
    let mut ints = vec![0, 1, 0, i32::from(obj::CHARACTER), 0];
    ints.extend_from_slice(&ch);
    let mut d = Vec::new();
    for v in ints {
        pack_int(&mut d, v);
    }
    let crc = ch.iter().fold(0i32, |a, &v| a.wrapping_add(v));
    chunk(
        None,
        &message(sys::SNAPSINGLE, true, |p| {
            p.int(tick)
                .int(tick + 1)
                .int(crc)
                .int(d.len() as i32)
                .raw(&d);
        }),
    )
}

/// Datagrams that take a client from nothing to Entering.
fn join_script() -> Vec<Vec<u8>> {
    vec![
        control(CTRL_TOKEN, &[1, 2, 3, 4]),
        control(CTRL_ACCEPT, &[]),
        chunk(
            Some(1),
            &message(sys::MAP_CHANGE, true, |p| {
                p.string("dm1", 64).int(1).int(2).int(3).int(4);
            }),
        ),
        chunk(Some(2), &message(sys::CON_READY, true, |_| {})),
        chunk(
            Some(3),
            &message(game::SV_CLIENTINFO, false, |p| {
                p.int(0).int(1).int(0);
            }),
        ),
        chunk(Some(4), &message(game::SV_READYTOENTER, false, |_| {})),
    ]
}

fn joined(t0: Instant) -> Client {
    let mut c = Client::new(ClientConfig::new("unit", ME), t0);
    let mut buf = Vec::new();
    for d in join_script() {
        while c.poll_transmit(t0, &mut buf) {}
        c.handle(t0, &d).unwrap();
    }
    while c.poll_transmit(t0, &mut buf) {}
    assert_eq!(c.state(), ClientState::Entering);
    c
}

fn events(c: &mut Client) -> Vec<Event> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

#[test]
fn input_reflected_by_the_first_matching_snapshot() {
    let t0 = Instant::now();
    let mut c = joined(t0);
    c.handle(t0, &snap(100, 0, 0)).unwrap();
    assert!(events(&mut c).contains(&Event::InGame { client_id: Some(0) }));
    let mut buf = Vec::new();
    let a = PlayerInput {
        direction: 1,
        target_x: 10,
        target_y: 0,
        ..Default::default()
    };
    let b = PlayerInput {
        direction: 1,
        target_x: 0,
        target_y: 10,
        ..Default::default()
    };
    let ida = c.input(t0, a);
    assert!(
        c.poll_transmit(t0, &mut buf),
        "the first INPUT goes out at once"
    );
    let t1 = t0 + TICK;
    let idb = c.input(t1, b);
    assert!(c.poll_transmit(t1, &mut buf));
    assert_eq!(c.inputs_sent(), 2);
    // Tick 102 still shows the old aim: nothing reflected.
    c.handle(t1, &snap(102, 0, 0)).unwrap();
    assert!(!events(&mut c)
        .iter()
        .any(|e| matches!(e, Event::InputReflected { .. })));
    // Tick 104 shows b: b is reflected, a superseded.
    c.handle(t1, &snap(104, 1, b.expected_angle())).unwrap();
    let ev = events(&mut c);
    let hit = ev.iter().find_map(|e| match e {
        Event::InputReflected {
            input_id,
            snapshot_tick,
            ..
        } => Some((*input_id, *snapshot_tick)),
        _ => None,
    });
    assert_eq!(hit, Some((idb, 104)));
    assert_ne!(ida, idb);
    assert_eq!(c.inputs_superseded(), 1);
}

#[test]
fn server_close_is_an_event_and_garbage_is_an_error() {
    let t0 = Instant::now();
    let mut c = joined(t0);
    assert!(c.handle(t0, &[1, 2, 3]).is_err());
    assert_eq!(c.state(), ClientState::Entering);
    c.handle(t0, &control(CTRL_CLOSE, b"Kicked by console\0"))
        .unwrap();
    assert_eq!(
        events(&mut c).last(),
        Some(&Event::Disconnected {
            reason: "Kicked by console".into()
        })
    );
    assert_eq!(c.state(), ClientState::Disconnected);
}

#[test]
fn inputs_go_out_at_50_hz() {
    let t0 = Instant::now();
    let mut c = joined(t0);
    c.handle(t0, &snap(100, 0, 0)).unwrap();
    let mut buf = Vec::new();
    let mut t = t0;
    while t < t0 + Duration::from_secs(1) {
        while c.poll_transmit(t, &mut buf) {}
        t += Duration::from_millis(5);
    }
    assert!((49..=51).contains(&c.inputs_sent()), "{}", c.inputs_sent());
}

proptest! {
    /// Random datagrams in every state of the join: never a panic.
    #[test]
    fn handle_never_panics(state in 0usize..8, data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let t0 = Instant::now();
        let mut c = Client::new(ClientConfig::new("fuzz", ME), t0);
        let mut buf = Vec::new();
        let mut script = join_script();
        script.push(snap(100, 0, 0));
        for d in script.iter().take(state) {
            while c.poll_transmit(t0, &mut buf) {}
            let _ = c.handle(t0, d);
        }
        // Keep the token so the bytes reach the chunk and snapshot layers.
        let mut d = data.clone();
        if d.len() >= 7 {
            d[3..7].copy_from_slice(&ME.to_be_bytes());
            d[0] &= 0xdf;
        }
        let _ = c.handle(t0, &d);
        let _ = c.handle(t0, &data);
        c.handle_timeout(t0 + Duration::from_secs(1));
        while c.poll_transmit(t0, &mut buf) {}
        while c.poll_event().is_some() {}
    }
}
