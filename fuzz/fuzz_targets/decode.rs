//! Every datagram the server, a player or the query prober can receive goes
//! through these decoders: they must never panic, whatever the bytes.
//! Run: `cargo +nightly fuzz run decode` (from the repository root).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickpack_wire::{a2s, delta, Datagram, EntityState, Packet};

fuzz_target!(|data: &[u8]| {
    // The client side of A2S (`tickpack probe`) reads what servers send.
    let _ = a2s::Reply::decode(data);
    if let Ok(Datagram::Game(Packet::Snapshot(s))) = Datagram::decode(data) {
        let base = [EntityState { id: 1, ..Default::default() }, EntityState { id: 7, ..Default::default() }];
        let mut out = Vec::new();
        let _ = delta::apply(&base, s.records, s.record_count, &mut out);
        let _ = delta::apply(&[], s.records, s.record_count, &mut out);
    }
    // Re-encoding what decoded must give a datagram that decodes again.
    if let Ok(Packet::Command(c)) = Packet::decode(data) {
        let again = Packet::Command(c).to_vec();
        assert_eq!(Packet::decode(&again), Ok(Packet::Command(c)));
    }
    // What the host's A2S health check receives.
    let _ = a2s::Reply::decode(data);
});
