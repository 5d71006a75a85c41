//! Codec round trips, size bounds and hostile input.

use proptest::prelude::*;
use std::net::SocketAddr;
use tickpack_wire::*;

fn roundtrip(p: &Packet<'_>) -> Vec<u8> {
    let bytes = p.to_vec();
    let back = Packet::decode(&bytes).expect("decodes what it encodes");
    assert_eq!(&back, p, "round trip changed the packet");
    bytes
}

#[test]
fn handshake_packets_round_trip_and_never_amplify() {
    let key = TokenKey::new([9; 32]);
    let addr: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let token = key.issue(addr, 0);
    let hello = roundtrip(&Packet::Hello {
        version: PROTOCOL_VERSION,
        nonce: 42,
    });
    let challenge = roundtrip(&Packet::Challenge { nonce: 42, token });
    assert_eq!(hello.len(), HELLO_MIN_LEN);
    assert!(
        challenge.len() < hello.len() / 2,
        "challenge must be far smaller than hello"
    );
    let connect = roundtrip(&Packet::Connect {
        version: PROTOCOL_VERSION,
        nonce: 42,
        token,
        name: "player-1",
    });
    assert_eq!(connect.len(), CONNECT_MIN_LEN);
    for reason in [
        RefuseReason::Full,
        RefuseReason::Version,
        RefuseReason::BadToken,
        RefuseReason::ShuttingDown,
    ] {
        assert!(roundtrip(&Packet::Refused { reason }).len() < connect.len());
    }
    let accepted = roundtrip(&Packet::Accepted {
        client_id: 3,
        tick_hz: tickpack_wire::TickRate::DEFAULT,
        snapshot_len: 2000,
        server_time_us: 77,
    });
    assert!(accepted.len() < connect.len());
}

#[test]
fn short_hello_and_connect_are_rejected() {
    let mut hello = Packet::Hello {
        version: 1,
        nonce: 1,
    }
    .to_vec();
    hello.truncate(HELLO_MIN_LEN - 1);
    assert_eq!(
        Packet::decode(&hello),
        Err(DecodeError::TooShort { min: HELLO_MIN_LEN })
    );
    let mut req = Packet::StatsRequest {
        nonce: 1,
        proof: None,
    }
    .to_vec();
    let stats = Packet::Stats(ServerStats {
        frame_p99_us: u32::MAX,
        packets_in: u64::MAX,
        recent: Some(RecentStats {
            window_ms: u32::MAX,
            ..Default::default()
        }),
        ..Default::default()
    })
    .to_vec();
    assert!(
        stats.len() <= req.len(),
        "stats reply must fit the padded request"
    );
    req.pop();
    assert!(Packet::decode(&req).is_err());
}

#[test]
fn stats_carry_the_flood_counters() {
    let stats = ServerStats {
        nonce: 5,
        malformed: 3,
        cpu_time_us: 9,
        rate_limited: 123_456,
        socket_drops: 789,
        ..Default::default()
    };
    let bytes = roundtrip(&Packet::Stats(stats));
    assert!(bytes.len() <= STATS_REQUEST_LEN, "must not amplify");
    assert_eq!(stats.recent, None, "no recent window: nothing after");
    // A reply from a server without flood counters still decodes, as zeros.
    let old = Packet::decode(&bytes[..bytes.len() - 16]).expect("decodes");
    assert_eq!(
        old,
        Packet::Stats(ServerStats {
            rate_limited: 0,
            socket_drops: 0,
            ..stats
        })
    );
}

/// Regression (the guard judged per-second signals on since-start
/// percentiles): the recent window rides after the flood counters, a reply
/// without it decodes as `None`, and a reader that stops before it (an
/// older build) still reads every earlier field the same.
#[test]
fn stats_recent_window_is_backward_compatible() {
    let recent = RecentStats {
        window_ms: 1_500,
        lateness_p99_us: 2_400,
        lateness_max_us: 9_000,
        frame_p99_us: 1_100,
        frame_max_us: 4_000,
    };
    let stats = ServerStats {
        nonce: 7,
        lateness_p99_us: 300,
        rate_limited: 4,
        socket_drops: 2,
        recent: Some(recent),
        ..Default::default()
    };
    let bytes = roundtrip(&Packet::Stats(stats));
    assert!(bytes.len() <= STATS_REQUEST_LEN, "must not amplify");
    let without = Packet::decode(&bytes[..bytes.len() - RECENT_STATS_LEN]).expect("decodes");
    assert_eq!(
        without,
        Packet::Stats(ServerStats {
            recent: None,
            ..stats
        })
    );
    // A truncated window (a hostile or broken reply) is not half-read.
    for cut in 1..RECENT_STATS_LEN {
        let p = Packet::decode(&bytes[..bytes.len() - cut]).expect("decodes");
        assert_eq!(
            p,
            Packet::Stats(ServerStats {
                recent: None,
                ..stats
            })
        );
    }
}

/// Issue 38, item 4: a check's proof (counter and a 16-byte tag) rides in
/// what was padding, so the request keeps its size; a request from an
/// older sender (zeros there) reads as one without proof.
#[test]
fn a_check_proof_fits_the_stats_request_and_zeros_are_none() {
    let key = HealthKey::new([7; 32]);
    let (nonce, proof) = key.check(42);
    let bytes = roundtrip(&Packet::StatsRequest {
        nonce,
        proof: Some(proof),
    });
    assert_eq!(bytes.len(), STATS_REQUEST_LEN);
    let plain = roundtrip(&Packet::StatsRequest { nonce, proof: None });
    assert_eq!(plain.len(), STATS_REQUEST_LEN);
    // What an older sender wrote: magic, kind, nonce, zeros.
    let mut old = b"TP\x0a".to_vec();
    old.extend_from_slice(&nonce.to_le_bytes());
    old.resize(STATS_REQUEST_LEN, 0);
    assert_eq!(old, plain);
    // The stats reply stays smaller than the request, check counters and all.
    let stats = ServerStats {
        recent: Some(RecentStats::default()),
        checks: Some(CheckCounters {
            stale: u64::MAX,
            over_budget: 3,
        }),
        ..Default::default()
    };
    let reply = roundtrip(&Packet::Stats(stats));
    assert!(reply.len() <= STATS_REQUEST_LEN, "must not amplify");
    // A reply from a server without check counters reads as None.
    let without = Packet::decode(&reply[..reply.len() - CHECK_COUNTERS_LEN]).unwrap();
    assert_eq!(
        without,
        Packet::Stats(ServerStats {
            checks: None,
            ..stats
        })
    );
}

proptest! {
    #[test]
    fn stats_with_any_recent_window_round_trip(
        w in any::<[u32; 5]>(),
        present in any::<bool>(),
        counters in any::<[u64; 3]>(),
        checks in proptest::option::of(any::<[u64; 2]>()),
        junk in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let stats = ServerStats {
            overruns: counters[0],
            rate_limited: counters[1],
            socket_drops: counters[2],
            recent: present.then_some(RecentStats {
                window_ms: w[0],
                lateness_p99_us: w[1],
                lateness_max_us: w[2],
                frame_p99_us: w[3],
                frame_max_us: w[4],
            }),
            // Carried only with a recent window.
            checks: checks.filter(|_| present).map(|c| CheckCounters {
                stale: c[0],
                over_budget: c[1],
            }),
            ..Default::default()
        };
        let mut bytes = Packet::Stats(stats).to_vec();
        prop_assert!(bytes.len() <= STATS_REQUEST_LEN);
        prop_assert_eq!(Packet::decode(&bytes), Ok(Packet::Stats(stats)));
        // Trailing bytes from a newer build never break the fields known here.
        bytes.extend_from_slice(&junk);
        let Ok(Packet::Stats(back)) = Packet::decode(&bytes) else {
            panic!("stats with trailing bytes must decode");
        };
        prop_assert_eq!(back.socket_drops, stats.socket_drops);
        if present {
            prop_assert_eq!(back.recent, stats.recent);
        }
        if stats.checks.is_some() {
            prop_assert_eq!(back.checks, stats.checks);
        }
    }

    #[test]
    fn stats_requests_with_any_proof_round_trip(
        nonce in any::<u64>(),
        counter in 1u64..,
        tag in any::<[u8; CHECK_TAG_LEN]>(),
        with in any::<bool>(),
    ) {
        let p = Packet::StatsRequest {
            nonce,
            proof: with.then_some(CheckProof { counter, tag }),
        };
        let bytes = p.to_vec();
        prop_assert_eq!(bytes.len(), STATS_REQUEST_LEN);
        prop_assert_eq!(Packet::decode(&bytes), Ok(p));
    }
}

#[test]
fn long_names_are_truncated_on_a_char_boundary() {
    let name = "é".repeat(40); // 80 bytes
    let bytes = Packet::Connect {
        version: 1,
        nonce: 0,
        token: Token([0; TOKEN_LEN]),
        name: &name,
    }
    .to_vec();
    match Packet::decode(&bytes).unwrap() {
        Packet::Connect { name, .. } => {
            assert!(name.len() <= MAX_NAME_LEN);
            assert!(name.chars().all(|c| c == 'é'));
        }
        other => panic!("{other:?}"),
    }
}

fn entity(id: u16, x: f32) -> EntityState {
    EntityState {
        id,
        pos: [x, 1.0, 2.0],
        vel: [0.5, 0.0, -1.0],
        yaw: 0.3,
        pitch: -0.1,
        health: 100,
        flags: entity_flags::ON_GROUND,
    }
}

#[test]
fn snapshot_pads_to_size_and_delta_round_trips() {
    let base = vec![entity(1, 0.0), entity(2, 0.0), entity(5, 0.0)];
    let mut cur = vec![entity(1, 0.0), entity(2, 3.0), entity(7, 1.0)];
    cur[0].health = 50;
    let mut records = Vec::new();
    let count = delta::encode(&base, &cur, &mut records);
    assert_eq!(count, 4, "changed 1, changed 2, removed 5, added 7");
    let mut full = Vec::new();
    delta::encode(&[], &cur, &mut full);
    assert!(
        records.len() < full.len(),
        "delta must be smaller than full state"
    );
    let snap = Snapshot {
        tick: 10,
        last_cmd_seq: Some(99),
        frame_us: 800,
        lateness_us: 12,
        baseline_tick: Some(8),
        record_count: count,
        records: &records,
        len: 2000,
    };
    let bytes = roundtrip(&Packet::Snapshot(snap));
    assert_eq!(bytes.len(), 2000);
    let Packet::Snapshot(back) = Packet::decode(&bytes).unwrap() else {
        panic!()
    };
    let mut rebuilt = Vec::new();
    delta::apply(&base, back.records, back.record_count, &mut rebuilt).unwrap();
    assert_eq!(rebuilt, cur);
}

#[test]
fn delta_against_unknown_entity_is_an_error_not_a_panic() {
    let mut records = Vec::new();
    let count = delta::encode(&[entity(1, 0.0)], &[entity(1, 5.0)], &mut records);
    let mut out = Vec::new();
    assert!(delta::apply(&[], &records, count, &mut out).is_err());
    assert!(delta::apply(&[], &records, count + 3, &mut out).is_err());
}

#[test]
fn commands_span_the_players_size_range() {
    let payload = [0u8; 200];
    for total in [40usize, 41, 100, 200] {
        let n = total.saturating_sub(COMMAND_HEADER_LEN);
        let c = Command {
            seq: 1,
            client_time_us: 2,
            ack_tick: None,
            input: Input::default(),
            payload: &payload[..n],
        };
        let bytes = roundtrip(&Packet::Command(c));
        assert_eq!(bytes.len(), total.max(COMMAND_HEADER_LEN));
    }
}

#[test]
fn non_finite_floats_are_rejected() {
    let c = Command {
        seq: 1,
        client_time_us: 2,
        ack_tick: Some(3),
        input: Input {
            yaw: f32::NAN,
            ..Default::default()
        },
        payload: &[],
    };
    assert_eq!(
        Packet::decode(&Packet::Command(c).to_vec()),
        Err(DecodeError::Invalid("float"))
    );
}

proptest! {
    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2100)) {
        let _ = Datagram::decode(&bytes);
        let mut tagged = b"TP".to_vec();
        tagged.extend_from_slice(&bytes);
        let _ = Datagram::decode(&tagged);
        if let Some((&k, rest)) = bytes.split_first() {
            let mut framed = vec![b'T', b'P', k % 14];
            framed.extend_from_slice(rest);
            if let Ok(Packet::Snapshot(s)) = Packet::decode(&framed) {
                let mut out = Vec::new();
                let _ = delta::apply(&[], s.records, s.record_count, &mut out);
            }
        }
    }

    #[test]
    fn commands_round_trip(seq in any::<u32>(), t in any::<u64>(), ack in proptest::option::of(0u32..u32::MAX),
                           f in -1.0f32..1.0, yaw in -4.0f32..4.0, b in any::<u32>(),
                           payload in proptest::collection::vec(any::<u8>(), 0..300)) {
        let p = Packet::Command(Command { seq, client_time_us: t, ack_tick: ack,
            input: Input { forward: f, right: -f, yaw, pitch: yaw / 2.0, buttons: b }, payload: &payload });
        let bytes = p.to_vec();
        prop_assert_eq!(bytes.len(), COMMAND_HEADER_LEN + payload.len());
        prop_assert_eq!(Packet::decode(&bytes).unwrap(), p);
    }

    #[test]
    fn pings_keep_their_length(len in 0usize..1500, nonce in any::<u64>()) {
        let bytes = Packet::Ping { nonce, client_time_us: 5, len }.to_vec();
        prop_assert_eq!(bytes.len(), len.max(PING_LEN));
        match Packet::decode(&bytes).unwrap() {
            Packet::Ping { nonce: n, len: l, .. } => { prop_assert_eq!(n, nonce); prop_assert_eq!(l, bytes.len()); }
            _ => prop_assert!(false),
        }
    }
}
