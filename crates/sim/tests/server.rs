//! The server state machine on a virtual clock: handshake, commands applied
//! at the next tick, acks and deltas, bots, timeouts, A2S, and the
//! anti-amplification rule. No sockets, no sleeping.

use std::net::SocketAddr;

use tickpack_sim::{Server, ServerConfig};
use tickpack_wire::*;

const TICK_US: u64 = 10_000;

struct Harness {
    server: Server,
    now: u64,
}

impl Harness {
    fn new(cfg: ServerConfig) -> Self {
        Self {
            server: Server::new(cfg, [5; 32]),
            now: 1_000_000,
        }
    }

    fn send_raw(&mut self, from: SocketAddr, bytes: &[u8]) -> Vec<(SocketAddr, Vec<u8>)> {
        self.server.handle(self.now, from, bytes);
        self.out()
    }

    fn send(&mut self, from: SocketAddr, p: Packet<'_>) -> Vec<(SocketAddr, Vec<u8>)> {
        self.send_raw(from, &p.to_vec())
    }

    fn out(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut v = vec![];
        self.server.drain_transmits(|a, b| v.push((a, b.to_vec())));
        v
    }

    fn tick(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        self.now += TICK_US;
        self.server.tick(self.now, self.now);
        self.server.record_frame(500);
        self.out()
    }

    /// Hello from `from`; returns the token of the challenge it gets back.
    fn token(&mut self, from: SocketAddr) -> Token {
        let r = self.send(
            from,
            Packet::Hello {
                version: PROTOCOL_VERSION,
                nonce: 9,
            },
        );
        match Packet::decode(&r[0].1).unwrap() {
            Packet::Challenge { token, .. } => token,
            other => panic!("expected a challenge, got {other:?}"),
        }
    }

    /// Connect from `from` with `token`: the entity id, or why it was refused.
    fn connect_with(&mut self, from: SocketAddr, token: Token) -> Result<u16, RefuseReason> {
        let r = self.send(
            from,
            Packet::Connect {
                version: PROTOCOL_VERSION,
                nonce: 9,
                token,
                name: "p",
            },
        );
        match Packet::decode(&r[0].1).unwrap() {
            Packet::Accepted {
                client_id,
                tick_hz,
                snapshot_len,
                ..
            } => {
                assert_eq!(tick_hz.hz(), 100);
                assert_eq!(snapshot_len, 2000);
                Ok(client_id)
            }
            Packet::Refused { reason } => Err(reason),
            other => panic!("expected accepted or refused, got {other:?}"),
        }
    }

    /// Full handshake; returns the entity id.
    fn connect(&mut self, from: SocketAddr) -> u16 {
        let token = self.token(from);
        self.connect_with(from, token).expect("accepted")
    }
}

fn addr(i: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], 40_000 + i))
}

fn command(seq: u32, ack: Option<u32>) -> Vec<u8> {
    Packet::Command(Command {
        seq,
        client_time_us: 0,
        ack_tick: ack,
        input: Input {
            forward: 1.0,
            ..Default::default()
        },
        payload: &[0; 60],
    })
    .to_vec()
}

fn snapshot_for(out: &[(SocketAddr, Vec<u8>)], to: SocketAddr) -> Vec<u8> {
    out.iter()
        .find(|(a, b)| *a == to && matches!(Packet::decode(b), Ok(Packet::Snapshot(_))))
        .map(|(_, b)| b.clone())
        .unwrap_or_else(|| panic!("no snapshot for {to} in {} datagrams", out.len()))
}

#[test]
fn command_is_applied_at_the_next_tick_and_acknowledged_in_the_snapshot() {
    let mut h = Harness::new(ServerConfig::default());
    let a = addr(1);
    h.connect(a);
    let out = h.tick();
    let bytes = snapshot_for(&out, a);
    let Packet::Snapshot(s) = Packet::decode(&bytes).unwrap() else {
        panic!()
    };
    assert_eq!(s.last_cmd_seq, None, "nothing sent yet");
    assert_eq!(s.len, 2000, "snapshot padded to the configured size");

    assert!(
        h.send_raw(a, &command(1, Some(s.tick))).is_empty(),
        "commands get no direct reply"
    );
    assert!(h.send_raw(a, &command(2, Some(s.tick))).is_empty());
    let out = h.tick();
    let bytes = snapshot_for(&out, a);
    let Packet::Snapshot(s2) = Packet::decode(&bytes).unwrap() else {
        panic!()
    };
    assert_eq!(s2.tick, s.tick + 1);
    assert_eq!(
        s2.last_cmd_seq,
        Some(2),
        "the newest command is reflected by the next tick"
    );
    assert_eq!(s2.frame_us, 500, "previous frame time is reported");

    // A late, reordered command does not roll the acknowledgement back.
    h.send_raw(a, &command(1, None));
    let out = h.tick();
    let bytes = snapshot_for(&out, a);
    let Packet::Snapshot(s3) = Packet::decode(&bytes).unwrap() else {
        panic!()
    };
    assert_eq!(s3.last_cmd_seq, Some(2));
}

#[test]
fn snapshots_are_deltas_against_the_acknowledged_tick_and_decode() {
    let mut h = Harness::new(ServerConfig {
        bots: 4,
        ..Default::default()
    });
    let a = addr(1);
    h.connect(a);
    let mut states: Vec<(u32, Vec<EntityState>)> = vec![];
    let mut deltas = 0;
    for i in 0..200u32 {
        let out = h.tick();
        let bytes = snapshot_for(&out, a);
        let Packet::Snapshot(s) = Packet::decode(&bytes).unwrap() else {
            panic!()
        };
        let base: &[EntityState] = match s.baseline_tick {
            None => &[],
            Some(t) => {
                deltas += 1;
                &states
                    .iter()
                    .find(|(st, _)| *st == t)
                    .expect("baseline the client acked")
                    .1
            }
        };
        let mut cur = vec![];
        delta::apply(base, s.records, s.record_count, &mut cur).expect("snapshot applies");
        assert!(
            cur.iter().any(|e| e.flags & entity_flags::BOT == 0),
            "the player sees itself"
        );
        states.push((s.tick, cur));
        h.send_raw(a, &command(i + 1, Some(s.tick)));
    }
    assert!(
        deltas > 190,
        "after the first ack every snapshot is a delta ({deltas})"
    );
    let seen_bots = states
        .iter()
        .any(|(_, e)| e.iter().any(|e| e.flags & entity_flags::BOT != 0));
    assert!(seen_bots, "bots show up in snapshots");
    assert!(h.server.world().counters().shots > 0, "bots shoot");
}

#[test]
fn refusals_bad_tokens_full_and_version() {
    let mut h = Harness::new(ServerConfig {
        max_players: 2,
        ..Default::default()
    });
    let (a, b, c) = (addr(1), addr(2), addr(3));
    // A token issued to a is useless to b.
    let token = h.token(a);
    assert_eq!(h.connect_with(b, token), Err(RefuseReason::BadToken));
    // Expired after two windows.
    h.now += 25_000_000;
    assert_eq!(h.connect_with(a, token), Err(RefuseReason::BadToken));
    let r = h.send(
        a,
        Packet::Hello {
            version: 99,
            nonce: 1,
        },
    );
    assert_eq!(
        Packet::decode(&r[0].1).unwrap(),
        Packet::Refused {
            reason: RefuseReason::Version
        }
    );
    h.connect(a);
    h.connect(b);
    assert_eq!(h.server.players(), 2);
    let token = h.token(c);
    assert_eq!(h.connect_with(c, token), Err(RefuseReason::Full));
    // A player leaving frees the slot.
    h.send(
        a,
        Packet::Disconnect {
            reason: DisconnectReason::ClientLeaving,
        },
    );
    assert_eq!(h.server.players(), 1);
    h.connect(c);
    // The names the Agones reporter lists: one per connected player.
    assert_eq!(h.server.player_names().collect::<Vec<_>>(), ["p", "p"]);
}

#[test]
fn unproven_sources_never_get_more_bytes_than_they_sent() {
    let mut h = Harness::new(ServerConfig {
        bots: 2,
        ..Default::default()
    });
    let victim = addr(7);
    h.connect(addr(1)); // someone legitimately playing
    let other_token = h.token(addr(2));
    let mut a2s_info = vec![];
    a2s::Query::Info { challenge: None }.encode(&mut a2s_info);
    let mut a2s_players_wrong = vec![];
    a2s::Query::Players {
        challenge: Some(1234),
    }
    .encode(&mut a2s_players_wrong);
    let spoofed: Vec<Vec<u8>> = vec![
        Packet::Hello {
            version: PROTOCOL_VERSION,
            nonce: 1,
        }
        .to_vec(),
        Packet::Connect {
            version: PROTOCOL_VERSION,
            nonce: 1,
            token: other_token,
            name: "x",
        }
        .to_vec(),
        Packet::Ping {
            nonce: 1,
            client_time_us: 0,
            len: 19,
        }
        .to_vec(),
        Packet::Ping {
            nonce: 1,
            client_time_us: 0,
            len: 1000,
        }
        .to_vec(),
        Packet::StatsRequest {
            nonce: 1,
            proof: None,
        }
        .to_vec(),
        command(1, None),
        a2s_info,
        a2s_players_wrong,
        vec![0xFF, 0xFF, 0xFF, 0xFF, 0x55], // A2S_PLAYER with no challenge field: 5 bytes
        vec![0xFF, 0xFF, 0xFF, 0xFF, 0x56],
        b"TP\x01".to_vec(),
        vec![0u8; 40],
    ];
    for req in &spoofed {
        for _ in 0..3 {
            let replies = h.send_raw(victim, req);
            let sent: usize = replies
                .iter()
                .filter(|(a, _)| *a == victim)
                .map(|(_, b)| b.len())
                .sum();
            assert!(
                sent <= req.len(),
                "{} bytes answered to a {}-byte request {:?}",
                sent,
                req.len(),
                &req[..req.len().min(8)]
            );
        }
        // And ticks never send the victim anything.
        let out = h.tick();
        assert!(
            out.iter().all(|(a, _)| *a != victim),
            "a tick sent data to an unproven source"
        );
    }
    assert!(
        h.server.counters().amplification_drops >= 3,
        "the 5-byte A2S requests were not answered"
    );
}

#[test]
fn a2s_info_and_players_after_challenge() {
    let mut h = Harness::new(ServerConfig {
        bots: 3,
        map: "tp_arena".into(),
        ..Default::default()
    });
    h.connect(addr(1));
    let q = addr(9);
    let mut req = vec![];
    a2s::Query::Info { challenge: None }.encode(&mut req);
    let r = h.send_raw(q, &req);
    assert_eq!(r[0].1[4], 0x41, "challenge first");
    let challenge = u32::from_le_bytes(r[0].1[5..9].try_into().unwrap());
    let mut req = vec![];
    a2s::Query::Info {
        challenge: Some(challenge),
    }
    .encode(&mut req);
    let r = h.send_raw(q, &req);
    let info = &r[0].1;
    assert_eq!(info[4], 0x49);
    assert!(info.windows(9).any(|w| w == b"tp_arena\0"));
    let mut req = vec![];
    a2s::Query::Players {
        challenge: Some(challenge),
    }
    .encode(&mut req);
    let r = h.send_raw(q, &req);
    assert_eq!(r[0].1[4], 0x44);
    assert_eq!(r[0].1[5], 4, "one human and three bots listed");
}

#[test]
fn silent_players_time_out_and_shutdown_says_goodbye() {
    let mut h = Harness::new(ServerConfig {
        timeout_us: 1_000_000,
        ..Default::default()
    });
    let (a, b) = (addr(1), addr(2));
    h.connect(a);
    h.connect(b);
    for i in 0..150 {
        h.send_raw(b, &command(i + 1, None));
        h.tick();
    }
    assert_eq!(
        h.server.players(),
        1,
        "a went silent for 1.5 s and was dropped"
    );
    h.server.shutdown();
    let out = h.out();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, b);
    assert_eq!(
        Packet::decode(&out[0].1).unwrap(),
        Packet::Disconnect {
            reason: DisconnectReason::ServerShutdown
        }
    );
    let token = h.token(addr(3));
    assert_eq!(
        h.connect_with(addr(3), token),
        Err(RefuseReason::ShuttingDown)
    );
}

#[test]
fn garbage_is_counted_never_fatal() {
    let mut h = Harness::new(ServerConfig::default());
    let a = addr(1);
    h.connect(a);
    let mut x: u64 = 0x1234_5678;
    for n in 0..5000usize {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 300) as usize;
        let mut buf: Vec<u8> = (0..len).map(|i| (x >> (i % 56)) as u8).collect();
        if n % 3 == 0 && buf.len() > 3 {
            buf[0] = b'T';
            buf[1] = b'P';
        }
        h.server.handle(h.now, addr(100 + (n % 50) as u16), &buf);
    }
    let _ = h.out();
    assert!(h.server.counters().malformed > 4000);
    let out = h.tick();
    snapshot_for(&out, a);
}

#[test]
fn stats_reply_reports_ticks_and_players() {
    let mut h = Harness::new(ServerConfig {
        bots: 2,
        ..Default::default()
    });
    h.connect(addr(1));
    for _ in 0..10 {
        h.tick();
    }
    let r = h.send(
        addr(5),
        Packet::StatsRequest {
            nonce: 77,
            proof: None,
        },
    );
    let Packet::Stats(s) = Packet::decode(&r[0].1).unwrap() else {
        panic!()
    };
    assert_eq!(
        (s.nonce, s.tick, s.players, s.bots, s.tick_hz.hz()),
        (77, 10, 1, 2, 100)
    );
    assert_eq!(s.frame_p50_us, 500);
}

#[test]
fn skipped_tick_slots_leave_gaps_in_tick_numbers() {
    // The I/O loop skips slots it fell behind on; players must see the gap
    // to count those snapshots as lost.
    let mut h = Harness::new(ServerConfig::default());
    let a = addr(1);
    h.connect(a);
    let tick_of = |out: &[(SocketAddr, Vec<u8>)]| match Packet::decode(&snapshot_for(out, a)) {
        Ok(Packet::Snapshot(s)) => s.tick,
        other => panic!("expected a snapshot, got {other:?}"),
    };
    let first = tick_of(&h.tick());
    assert_eq!(h.server.skipped_slots(), 0);
    // The next due slot is skipped: the tick after runs two slots later.
    h.now += TICK_US;
    let out = h.tick();
    assert_eq!(tick_of(&out), first + 2, "one skipped slot, one gap");
    assert_eq!(h.server.skipped_slots(), 1, "and it is counted");
    // Due times that do not advance (a caller's mistake) never repeat a number.
    h.server.tick(h.now, h.now);
    let mut v = vec![];
    h.server.drain_transmits(|to, b| v.push((to, b.to_vec())));
    assert_eq!(tick_of(&v), first + 3);
}

/// Requests an unproven source can send, one of each kind.
fn unproven_asks() -> Vec<(&'static str, Vec<u8>)> {
    let mut a2s_info = vec![];
    a2s::Query::Info { challenge: None }.encode(&mut a2s_info);
    vec![
        (
            "hello",
            Packet::Hello {
                version: PROTOCOL_VERSION,
                nonce: 1,
            }
            .to_vec(),
        ),
        ("a2s", a2s_info),
        (
            "stats",
            Packet::StatsRequest {
                nonce: 1,
                proof: None,
            }
            .to_vec(),
        ),
        (
            "ping",
            Packet::Ping {
                nonce: 1,
                client_time_us: 0,
                len: 64,
            }
            .to_vec(),
        ),
    ]
}

#[test]
fn a_flood_from_one_source_gets_at_most_its_buckets_and_others_are_still_served() {
    let mut h = Harness::new(ServerConfig::default());
    let limits = h.server.config().flood.clone();
    let flooder = addr(66);
    let secs = 5;
    // 5 s of virtual time; every 10 us one request of each kind: 100 kHz each.
    let mut answered = [0u64; 4];
    let mut sent = 0u64;
    let asks = unproven_asks();
    for step in 0..(secs * 100_000) {
        h.now += 10;
        for (k, (_, req)) in asks.iter().enumerate() {
            h.server.handle(h.now, flooder, req);
            sent += 1;
            answered[k] += h.out().len() as u64;
        }
        if step % 1000 == 0 {
            h.server.tick(h.now, h.now);
            let _ = h.out();
        }
    }
    for (k, (name, _)) in asks.iter().enumerate() {
        let r = limits.per_source[k];
        let most = u64::from(r.burst) + secs * u64::from(r.per_s) + 1;
        assert!(
            answered[k] <= most,
            "{name}: {} answers to one flooding source, at most {most} allowed",
            answered[k]
        );
    }
    // Counted: everything not answered was dropped by the limits.
    let c = h.server.counters();
    assert_eq!(c.flood.total(), sent - answered.iter().sum::<u64>());
    let stats = h.server.stats(h.now);
    assert_eq!(stats.rate_limited, c.flood.total());
    // A second source is served at once, for every kind.
    for (name, req) in &asks {
        let r = h.send_raw(addr(67), req);
        assert_eq!(r.len(), 1, "{name} from a quiet source went unanswered");
    }
    // And can still connect.
    h.connect(addr(68));
}

#[test]
fn connected_players_are_never_rate_limited() {
    let mut h = Harness::new(ServerConfig::default());
    let players: Vec<SocketAddr> = (1..=12).map(addr).collect();
    for &p in &players {
        h.connect(p);
    }
    let flooder = addr(66);
    let asks = unproven_asks();
    let ping = &asks[3].1;
    let mut seq = 0;
    for _ in 0..200 {
        seq += 1;
        // Between two ticks: a flood, each player's command, and far more
        // pings per player than any unproven source may have answered.
        for i in 0..2_000 {
            let (_, req) = &asks[i % asks.len()];
            h.server.handle(h.now, flooder, req);
        }
        let _ = h.out();
        for &p in &players {
            h.server.handle(h.now, p, &command(seq, None));
            for _ in 0..1_500 {
                h.server.handle(h.now, p, ping);
            }
            let pongs = h.out();
            assert_eq!(
                pongs.len(),
                1_500,
                "a connected player's pings were dropped"
            );
        }
        let out = h.tick();
        for &p in &players {
            let snap = snapshot_for(&out, p);
            let Packet::Snapshot(s) = Packet::decode(&snap).unwrap() else {
                unreachable!()
            };
            assert_eq!(s.last_cmd_seq, Some(seq), "{p}'s command was not applied");
        }
    }
    let c = h.server.counters();
    assert_eq!(c.commands, 12 * 200);
    assert!(c.flood.total() > 0, "the flood was not counted");
}

/// Issue 30, finding 2: stats requests from 1000 ports of one address at
/// 20 kHz drained the budget every unproven source shares, the host's
/// checks went unanswered and the host killed a healthy server. A check
/// carrying the host's key is answered from a budget of its own.
#[test]
fn a_stats_flood_from_many_ports_left_the_hosts_checks_unanswered() {
    let key = tickpack_wire::HealthKey::new([9; 32]);
    let run = |health_key: Option<tickpack_wire::HealthKey>| {
        let mut h = Harness::new(ServerConfig {
            health_key,
            ..Default::default()
        });
        let health = SocketAddr::from(([198, 18, 0, 1], 50_000));
        let mut answered = 0;
        let secs = 10u32;
        for s in 0..secs {
            for i in 0..20_000u64 {
                h.now += 50;
                let from = SocketAddr::from(([10, 9, 9, 9], 20_000 + (i % 1000) as u16));
                h.server.handle(
                    h.now,
                    from,
                    &Packet::StatsRequest {
                        nonce: i,
                        proof: None,
                    }
                    .to_vec(),
                );
                if i % 1_000 == 0 {
                    let _ = h.out();
                }
            }
            let _ = h.out();
            let (nonce, proof) = key.check(u64::from(s) + 1);
            let proof = Some(proof);
            let r = h.send(health, Packet::StatsRequest { nonce, proof });
            answered += r
                .iter()
                .filter(|(a, b)| {
                    *a == health
                        && matches!(Packet::decode(b), Ok(Packet::Stats(st)) if st.nonce == nonce)
                })
                .count();
        }
        (answered, secs as usize, h.server.counters())
    };
    let (answered, secs, c) = run(Some(key.clone()));
    assert_eq!(answered, secs, "the host's checks went unanswered");
    assert_eq!(c.health_checks, secs as u64);
    assert!(c.flood.total() > 0, "the flood was limited all the same");
    // Without the key (a server the host gave none) the same flood starves
    // the same checks: the attack is real, the key is what stops it.
    let (answered, _, _) = run(None);
    assert!(
        answered < secs,
        "{answered} of {secs} answered without a key"
    );
}

/// Whoever holds the key (the host, or a server's own uid) gets no more
/// than the checks' budget, however many fresh checks it sends; the flood
/// guard's counters do not count them.
#[test]
fn the_health_budget_is_bounded_too() {
    let key = tickpack_wire::HealthKey::new([3; 32]);
    let mut h = Harness::new(ServerConfig {
        health_key: Some(key.clone()),
        ..Default::default()
    });
    let from = SocketAddr::from(([10, 9, 9, 9], 4000));
    for counter in 1..=1000 {
        h.now += 100;
        let (nonce, proof) = key.check(counter);
        let proof = Some(proof);
        h.server
            .handle(h.now, from, &Packet::StatsRequest { nonce, proof }.to_vec());
    }
    let _ = h.out();
    let c = h.server.counters();
    let most = u64::from(tickpack_sim::server::HEALTH_CHECK_RATE.burst)
        + u64::from(tickpack_sim::server::HEALTH_CHECK_RATE.per_s) / 10
        + 1;
    assert!(c.health_checks <= most, "{} answered", c.health_checks);
    assert_eq!(c.health_checks + c.health_limited, 1000);
    assert_eq!(c.health_stale, 0);
    assert_eq!(c.flood.total(), 0);
}

#[test]
fn health_checks_are_answered_during_floods() {
    let mut h = Harness::new(ServerConfig::default());
    let health = SocketAddr::from(([198, 18, 0, 1], 50_000));
    let asks = unproven_asks();
    let mut answered = 0;
    let secs = 30u64;
    for s in 0..secs {
        // A second of flood: stats from one source at 50 kHz, and hellos,
        // A2S queries and pings from 20 000 different ports at 50 kHz.
        for i in 0..50_000u64 {
            h.now += 20;
            h.server.handle(h.now, addr(66), &asks[2].1);
            let port = 1024 + ((s * 50_000 + i) % 20_000) as u16;
            let from = SocketAddr::from(([10, 9, 9, 9], port));
            let other = [0, 1, 3][(i % 3) as usize];
            h.server.handle(h.now, from, &asks[other].1);
            if i % 1_000 == 0 {
                let _ = h.out();
            }
        }
        let _ = h.out();
        // The host's health check, once a second.
        let r = h.send(
            health,
            Packet::StatsRequest {
                nonce: s,
                proof: None,
            },
        );
        answered += r
            .iter()
            .filter(|(a, b)| {
                *a == health && matches!(Packet::decode(b), Ok(Packet::Stats(st)) if st.nonce == s)
            })
            .count();
    }
    assert_eq!(answered as u64, secs, "health checks went unanswered");
    let c = h.server.counters().flood;
    assert!(c.source_limited[2] > 0 && c.budget_limited.iter().sum::<u64>() > 0);
}

/// Issue 38, item 4: one valid check, copied once and resent 100 times a
/// second, drained the 20 a second the server keeps for the host's checks;
/// the host's own checks went unanswered and it killed the server in
/// about 4 s. A check carries a counter the server must see increase: a
/// copy is refused before it takes a token of that budget, and counted.
#[test]
fn a_replayed_health_check_drained_the_keyed_budget() {
    let key = tickpack_wire::HealthKey::new([4; 32]);
    let mut h = Harness::new(ServerConfig {
        health_key: Some(key.clone()),
        ..Default::default()
    });
    let host = SocketAddr::from(([198, 18, 0, 1], 50_000));
    let replayer = SocketAddr::from(([10, 9, 9, 9], 4000));
    let answers = |r: &[(SocketAddr, Vec<u8>)], to: SocketAddr, nonce: u64| {
        r.iter()
            .filter(|(a, b)| {
                *a == to && matches!(Packet::decode(b), Ok(Packet::Stats(st)) if st.nonce == nonce)
            })
            .count()
    };
    let (nonce0, proof0) = key.check(1);
    let captured = Packet::StatsRequest {
        nonce: nonce0,
        proof: Some(proof0),
    }
    .to_vec();
    let r = h.send_raw(host, &captured);
    assert_eq!(answers(&r, host, nonce0), 1, "the original is answered");
    let secs = 10u64;
    let mut answered = 0;
    let mut replays_answered = 0;
    for s in 1..=secs {
        for _ in 0..100 {
            h.now += 10_000;
            h.server.handle(h.now, replayer, &captured);
        }
        replays_answered += answers(&h.out(), replayer, nonce0);
        let (nonce, proof) = key.check(s + 1);
        let proof = Some(proof);
        let r = h.send(host, Packet::StatsRequest { nonce, proof });
        answered += answers(&r, host, nonce);
    }
    assert_eq!(answered, secs as usize, "the host's checks went unanswered");
    assert_eq!(replays_answered, 0, "a replay was answered");
    let c = h.server.counters();
    assert_eq!(c.health_stale, 100 * secs, "every replay refused as stale");
    assert_eq!(c.health_checks, secs + 1);
    assert_eq!(c.health_limited, 0, "the replays took no token");
    assert_eq!(c.flood.total(), 0, "nor any of the strangers' budget");
    // The stats say so, to anyone who asks.
    let r = h.send(
        addr(9),
        Packet::StatsRequest {
            nonce: 5,
            proof: None,
        },
    );
    let Ok(Packet::Stats(st)) = Packet::decode(&r[0].1) else {
        panic!("no stats: {r:?}")
    };
    let checks = st.checks.expect("check counters in the stats");
    assert_eq!((checks.stale, checks.over_budget), (100 * secs, 0));
}

/// A check with a counter the server already passed is refused whatever
/// its tag (no HMAC spent on it); a forged counter, however high, takes
/// the strangers' path and does not move the bar for the host's checks.
#[test]
fn a_forged_check_neither_answers_as_the_hosts_nor_blocks_them() {
    let key = tickpack_wire::HealthKey::new([6; 32]);
    let mut h = Harness::new(ServerConfig {
        health_key: Some(key.clone()),
        ..Default::default()
    });
    let host = SocketAddr::from(([198, 18, 0, 1], 50_000));
    let forger = SocketAddr::from(([10, 9, 9, 9], 4000));
    let forged = CheckProof {
        counter: u64::MAX,
        tag: [0x5A; CHECK_TAG_LEN],
    };
    for i in 0..100u64 {
        h.now += 1_000;
        h.server.handle(
            h.now,
            forger,
            &Packet::StatsRequest {
                nonce: i,
                proof: Some(forged),
            }
            .to_vec(),
        );
    }
    let _ = h.out();
    let c = h.server.counters();
    assert_eq!(c.health_checks, 0, "a forgery was taken for the host's");
    assert_eq!(c.health_stale, 0);
    assert!(
        c.flood.source_limited[2] > 0,
        "it paid the strangers' buckets"
    );
    let (nonce, proof) = key.check(1);
    let proof = Some(proof);
    let r = h.send(host, Packet::StatsRequest { nonce, proof });
    assert_eq!(r.len(), 1, "the host's first check is answered");
    assert_eq!(h.server.counters().health_checks, 1);
}
