//! A session in steady state allocates nothing per datagram: usercmd
//! packets are written into the caller's buffer and the client's own, and
//! snapshots decode into buffers the client reuses. A counting allocator
//! (per thread, so other tests do not disturb it) counts the calls.

use tickpack_q3::delta::{self, EntityState, PlayerState, GENTITYNUM_BITS, MAX_GENTITIES};
use tickpack_q3::msg::Writer;
use tickpack_q3::netchan::checksum;
use tickpack_q3::{oob, Client, ClientConfig, ClientState, Event, UserCmd};
use tickpack_testkit::alloc::{allocations, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

const CHALLENGE: i32 = 4321;

/// A server datagram of the modern channel: sequence, checksum, body.
fn datagram(sequence: i32, body: &[u8]) -> Vec<u8> {
    let mut d = sequence.to_le_bytes().to_vec();
    d.extend_from_slice(&checksum(CHALLENGE, sequence).to_le_bytes());
    d.extend_from_slice(body);
    d
}

/// Snapshot `n` (message `n + 2`) as a delta from snapshot `n - 1`: the
/// player moves, ten entities move.
fn snapshot(n: i32) -> Vec<u8> {
    let state = |n: i32| {
        let mut ps = PlayerState::default();
        ps.fields[0] = 1000 + 50 * n;
        ps.fields[1] = n;
        let ents: Vec<EntityState> = (0..10)
            .map(|i| {
                let mut e = EntityState {
                    number: 20 + i,
                    fields: [0; 51],
                };
                e.fields[0] = 1000 + 50 * n;
                e.fields[1] = (n * (i + 1)) as f32 as u32 as i32;
                e
            })
            .collect();
        (ps, ents)
    };
    let (ps, ents) = state(n);
    let (old_ps, old_ents) = state(n - 1);
    let mut w = Writer::new();
    w.write_long(0); // reliable acknowledge
    w.write_byte(7); // svc_snapshot
    w.write_long(1000 + 50 * n);
    w.write_byte(u8::from(n > 0)); // delta from the previous message
    w.write_byte(0); // snapFlags
    w.write_byte(0); // areamask length
    delta::write_delta_playerstate(&mut w, (n > 0).then_some(&old_ps), &ps);
    for (old, new) in old_ents.iter().zip(&ents) {
        delta::write_delta_entity(&mut w, (n > 0).then_some(old), Some(new), n == 0);
    }
    w.write_bits(MAX_GENTITIES - 1, GENTITYNUM_BITS);
    w.write_byte(8); // svc_EOF
    datagram(n + 2, &w.into_bytes())
}

/// A client with the channel open and a gamestate in (message 1).
fn primed() -> Client {
    let mut c = Client::new(ClientConfig {
        legacy: false,
        ..ClientConfig::new("a", 7, 99)
    });
    let mut ev = Vec::new();
    c.handle(
        &oob::encode(&format!("challengeResponse {CHALLENGE} 99 71")),
        &mut ev,
    )
    .unwrap();
    c.handle(
        &oob::encode(&format!("connectResponse {CHALLENGE}")),
        &mut ev,
    )
    .unwrap();
    let mut w = Writer::new();
    w.write_long(0);
    w.write_byte(2); // svc_gamestate
    w.write_long(0);
    w.write_byte(3); // svc_configstring
    w.write_short(1);
    w.write_big_string("\\sv_serverid\\5");
    w.write_byte(8);
    w.write_long(0); // client number
    w.write_long(0); // checksum feed
    w.write_byte(8);
    c.handle(&datagram(1, &w.into_bytes()), &mut ev).unwrap();
    assert_eq!(c.state(), ClientState::Primed);
    c
}

#[test]
fn steady_state_snapshots_and_usercmd_packets_allocate_nothing() {
    let mut c = primed();
    let datagrams: Vec<Vec<u8>> = (0..100).map(snapshot).collect();
    let mut ev = Vec::with_capacity(16);
    let mut out = Vec::with_capacity(1400);
    let mut counts = Vec::new();
    for (n, d) in datagrams.iter().enumerate() {
        ev.clear();
        let ((), recv) = allocations(|| c.handle(d, &mut ev).unwrap());
        let Some(Event::Snapshot(s)) = ev.last() else {
            panic!("no snapshot from message {}: {ev:?}", n + 2);
        };
        assert!(s.delta_ok && s.entities == 10, "{s:?}");
        let cmd = UserCmd {
            server_time: 1000 + 50 * n as i32,
            forwardmove: 127,
            ..UserCmd::default()
        };
        let (sent, send) = allocations(|| c.usercmd_packet_into(&[cmd, cmd], &mut out));
        assert!(sent && !out.is_empty());
        counts.push((recv, send));
    }
    assert_eq!(c.state(), ClientState::Active);
    // Once every snapshot slot (32) has held a frame, nothing allocates.
    let late: Vec<_> = counts[40..].iter().filter(|c| **c != (0, 0)).collect();
    assert!(late.is_empty(), "allocations (receive, send): {late:?}");
}
