//! Every datagram a Quake III client session receives goes through
//! `Client::handle`: it must never panic, whatever the bytes, in any state.
//! The first input byte picks the state (reached by replaying datagrams
//! captured from the real server), the rest is the datagram.
//! Run: `cargo +nightly fuzz run q3_client` (from the repository root).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickpack_q3::{Client, ClientConfig};

const CAPTURED: [&[u8]; 7] = [
    include_bytes!("../../crates/q3/tests/fixtures/oa_dm1/00.bin"),
    include_bytes!("../../crates/q3/tests/fixtures/oa_dm1/01.bin"),
    include_bytes!("../../crates/q3/tests/fixtures/oa_dm1/02.bin"),
    include_bytes!("../../crates/q3/tests/fixtures/oa_dm1/03.bin"),
    include_bytes!("../../crates/q3/tests/fixtures/oa_dm1/04.bin"),
    include_bytes!("../../crates/q3/tests/fixtures/oa_dm1/05.bin"),
    include_bytes!("../../crates/q3/tests/fixtures/oa_dm1/06.bin"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, datagram)) = data.split_first() else {
        return;
    };
    // 0: Challenging, 1: Connecting, 2: AwaitingGamestate, 5: half a
    // gamestate buffered, 6: Primed, 7: Active.
    let replay = [0, 1, 2, 5, 6, 7][usize::from(pick) % 6];
    let mut c = Client::new(ClientConfig::new("tp_alpha", 1000, 5000));
    let mut events = Vec::new();
    for d in &CAPTURED[..replay] {
        let _ = c.handle(d, &mut events);
    }
    let _ = c.handle(datagram, &mut events);
    let _ = c.handle(datagram, &mut events);
    let _ = c.usercmd_packet(&[]);
    let _ = c.handshake_packet();
});
