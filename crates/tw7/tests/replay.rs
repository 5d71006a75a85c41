//! Real server bytes, offline: the first 80 datagrams the Teeworlds 0.7.5
//! server sent one emulated player (tests/fixtures/dm1, captured by
//! tests/real_server.rs with TICKPACK_TW7_CAPTURE) are replayed into a
//! fresh client on a virtual clock. It must join, and decode and verify
//! every snapshot, exactly as it did live; and no corruption of any of those
//! datagrams may make it panic.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tickpack_tw7::{Client, ClientConfig, ClientState, Event};

/// The token and name tests/real_server.rs captured with.
const TOKEN: u32 = 0x5a17_7e57;
const NAME: &str = "tp_e2e";

fn fixtures() -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dm1");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("fixture entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read(p).expect("read fixture"))
        .collect()
}

fn drain(c: &mut Client, now: Instant, events: &mut Vec<Event>) {
    let mut buf = Vec::new();
    while c.poll_transmit(now, &mut buf) {}
    while let Some(e) = c.poll_event() {
        events.push(e);
    }
}

#[test]
fn replayed_server_datagrams_join_and_decode() {
    let data = fixtures();
    assert_eq!(data.len(), 80);
    let t0 = Instant::now();
    let mut c = Client::new(ClientConfig::new(NAME, TOKEN), t0);
    let mut events = Vec::new();
    let mut now = t0;
    drain(&mut c, now, &mut events);
    for (i, d) in data.iter().enumerate() {
        now += Duration::from_millis(10);
        c.handle(now, d)
            .unwrap_or_else(|e| panic!("datagram {i:03}: {e}"));
        c.handle_timeout(now);
        drain(&mut c, now, &mut events);
    }
    assert_eq!(c.state(), ClientState::InGame);
    assert_eq!(c.client_id(), Some(0));
    assert!(events.contains(&Event::Connected));
    // The server logged "maps/dm1.map crc is 64548818" (hex) when captured.
    assert!(events.contains(&Event::MapChange {
        name: "dm1".into(),
        crc: 0x6454_8818,
    }));
    let snaps: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Snapshot(s) => Some(*s),
            _ => None,
        })
        .collect();
    assert!(snaps.len() >= 30, "only {} snapshots", snaps.len());
    assert_eq!(c.snapshots().crc_errors(), 0);
    assert!(snaps.windows(2).all(|w| w[1].tick > w[0].tick));
    assert!(
        snaps.iter().skip(1).all(|s| s.delta_tick >= 0),
        "deltas after the first"
    );
    assert!(snaps.iter().any(|s| s.character.is_some()));
}

#[test]
fn corrupted_server_datagrams_never_panic() {
    let data = fixtures();
    // A small deterministic generator (xorshift), so failures reproduce.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let t0 = Instant::now();
    for target in 0..data.len() {
        for _ in 0..12 {
            let mut c = Client::new(ClientConfig::new(NAME, TOKEN), t0);
            let mut events = Vec::new();
            for d in &data[..target] {
                let _ = c.handle(t0, d);
                drain(&mut c, t0, &mut events);
            }
            let mut d = data[target].clone();
            match rnd() % 4 {
                0 => {
                    let i = (rnd() as usize) % d.len();
                    d[i] ^= 1 << (rnd() % 8);
                }
                1 => {
                    let i = 7 + (rnd() as usize) % d.len().saturating_sub(7).max(1);
                    d.truncate(i.min(d.len()));
                }
                2 => {
                    let i = (rnd() as usize) % d.len();
                    d[i] = rnd() as u8;
                }
                _ => d.extend((0..(rnd() % 16)).map(|_| rnd() as u8)),
            }
            let _ = c.handle(t0, &d);
            drain(&mut c, t0, &mut events);
            // And the rest of the stream after the corrupted one.
            for d in &data[target + 1..] {
                let _ = c.handle(t0, d);
                drain(&mut c, t0, &mut events);
            }
        }
    }
}
