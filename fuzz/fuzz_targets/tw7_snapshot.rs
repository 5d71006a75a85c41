//! Teeworlds 0.7: every datagram a player session receives goes through
//! `Client::handle`, and every snapshot through the delta decoder: neither
//! may panic, whatever the bytes, in any state.
//! The first input byte picks the session's state (reached by replaying
//! datagrams captured from the real server, crates/tw7/tests/fixtures/dm1)
//! and how the rest is used: as a datagram (raw, and with our token patched in so it reaches
//! the chunk, message and snapshot layers), and as a snapshot delta
//! (packed ints applied to a baseline, and a SNAP part for the decoder).
//! Run: `cargo +nightly fuzz run tw7_snapshot` (from the repository root).
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use tickpack_tw7::msg::SnapPart;
use tickpack_tw7::packer::unpack_ints;
use tickpack_tw7::snapshot::{apply_delta, Snapshot, SnapshotDecoder};
use tickpack_tw7::{Client, ClientConfig};

/// The token the fixtures were captured with (crates/tw7/tests/real_server.rs).
const ME: u32 = 0x5a17_7e57;

/// The first datagrams the real 0.7.5 server sent one player: token,
/// accept, map change, ..., the first snapshots.
const CAPTURED: [&[u8]; 16] = [
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/000.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/001.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/002.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/003.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/004.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/005.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/006.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/007.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/008.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/009.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/010.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/011.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/012.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/013.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/014.bin"),
    include_bytes!("../../crates/tw7/tests/fixtures/dm1/015.bin"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let t0 = Instant::now();
    let mut c = Client::new(ClientConfig::new("tp_e2e", ME), t0);
    let mut buf = Vec::new();
    for d in CAPTURED.iter().take(usize::from(pick) % 17) {
        while c.poll_transmit(t0, &mut buf) {}
        let _ = c.handle(t0, d);
    }
    let _ = c.handle(t0, rest);
    if rest.len() >= 7 {
        let mut d = rest.to_vec();
        d[0] &= 0xdf;
        d[3..7].copy_from_slice(&ME.to_be_bytes());
        let _ = c.handle(t0, &d);
    }
    c.handle_timeout(t0 + Duration::from_secs(2));
    while c.poll_transmit(t0, &mut buf) {}
    while c.poll_event().is_some() {}

    // The delta decoder on its own.
    let base = Snapshot::from_items(1, &[(11, 0, &[1, 2, 3]), (100, 7, &[4, 5])]);
    if let Ok(base) = base {
        let mut ints = Vec::new();
        if unpack_ints(rest, &mut ints, 1 << 14).is_ok() {
            let mut out = Snapshot::default();
            let mut scratch = Vec::new();
            let _ = apply_delta(&base, &ints, &mut out, &mut scratch);
        }
    }
    let mut dec = SnapshotDecoder::new();
    let part = SnapPart {
        tick: 2,
        delta_tick: if pick & 0x80 != 0 { -1 } else { 1 },
        num_parts: 1,
        part: 0,
        crc: 0,
        data: &rest[..rest.len().min(900)],
        empty: pick & 0x40 != 0,
    };
    let _ = dec.add_part(&part);
});
