//! Every datagram the server, a player or a game query asker can receive goes
//! through these decoders: they must never panic, whatever the bytes.
//! Run: `cargo +nightly fuzz run decode` (from the repository root).
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tickpack_game::query::{Query, Schedule, Session};
use tickpack_wire::{a2s, delta, CheckGate, Datagram, EntityState, HealthKey, Packet};

fuzz_target!(|data: &[u8]| {
    // The client side of A2S (`tickpack probe`) reads what servers send.
    let _ = a2s::Reply::decode(data);
    if let Ok(Datagram::Game(Packet::Snapshot(s))) = Datagram::decode(data) {
        let base = [EntityState { id: 1, ..Default::default() }, EntityState { id: 7, ..Default::default() }];
        let mut out = Vec::new();
        let _ = delta::apply(&base, s.records, s.record_count, &mut out);
        let _ = delta::apply(&[], s.records, s.record_count, &mut out);
    }
    // A server judges every stats request that carries a proof.
    if let Ok(Packet::StatsRequest { nonce, proof }) = Packet::decode(data) {
        let mut gate = CheckGate::new(HealthKey::new([1; 32]));
        let _ = gate.judge(nonce, proof.as_ref());
        let _ = gate.judge(nonce, proof.as_ref());
    }
    // Re-encoding what decoded must give a datagram that decodes again.
    if let Ok(Packet::Command(c)) = Packet::decode(data) {
        let again = Packet::Command(c).to_vec();
        assert_eq!(Packet::decode(&again), Ok(Packet::Command(c)));
    }
    // What every game query asker receives (the host's health check, the
    // prober, the Agones sidecar, the referee): the decoders and a session.
    for q in [Query::Q3Info, Query::Q3Status, Query::A2sInfo] {
        let _ = q.decode(data);
        let every = Duration::from_secs(2);
        let mut s = Session::new(q, Schedule { interval: every, timeout: every }, Duration::ZERO);
        let mut out = Vec::new();
        let _ = s.poll_transmit(Duration::ZERO, &mut out);
        let _ = s.handle(Duration::from_millis(1), data);
        let _ = s.poll_transmit(Duration::from_millis(2), &mut out);
    }
    // What the host reads back from an instance's console (rcon): the
    // answer's text, and one command's exchange over it.
    if let Some(text) = tickpack_q3::rcon::reply_text(data) {
        let _ = tickpack_q3::rcon::is_refusal(text);
    }
    let mut x = tickpack_game::console::Exchange::new(Duration::ZERO);
    for _ in 0..3 {
        x.handle(Duration::from_millis(1), data);
    }
    let _ = x.poll(Duration::from_secs(60));
});
