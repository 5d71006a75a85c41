//! Players that leave and join again in the middle of a run, against real
//! servers on 127.0.0.1, with the servers as referees: the reference
//! server (its own driver, in a thread) counts them in its stats;
//! OpenArena (`/usr/games/openarena-server`) and Teeworlds
//! (`/usr/games/teeworlds-server`) log them leaving and coming back, and
//! OpenArena lists them (or not) in its `getstatus`.
//!
//! Each run has two players: `tp-0` present all along, `tp-1` away for a
//! few seconds in the middle. Bounded: about 15 s a test, loopback only;
//! the game servers are killed by PID when a test ends, pass or fail.
//! Without a game server installed its test is skipped (failed under CI).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tickpack_players::{run, to_result, Live, PlayersConfig, PresencePlan, PresenceSpan, Protocol};
use tickpack_report::PlayersResult;
use tickpack_testkit::{Q3Server, TwServer};
use tickpack_wire::Packet;

fn span(from_s: f64, until_s: f64) -> PresenceSpan {
    PresenceSpan {
        from: Duration::from_secs_f64(from_s),
        until: Duration::from_secs_f64(until_s),
    }
}

/// Two players on `target`: tp-0 present the whole run (`run_s`), tp-1
/// away from `away.0` to `away.1` (seconds from the start); measured after
/// `warmup_s`, in windows of one second.
fn config(
    game: Protocol,
    target: SocketAddr,
    warmup_s: u64,
    run_s: u64,
    away: (f64, f64),
) -> PlayersConfig {
    let end = run_s as f64;
    PlayersConfig {
        game,
        targets: vec![target],
        players: 2,
        warmup: Duration::from_secs(warmup_s),
        duration: Duration::from_secs(run_s - warmup_s),
        connect_timeout: Duration::from_secs(5),
        // Generous: a loaded 2-core machine (a build, the other tests of
        // this file beside it) once took more than 3 s to get a join in,
        // and what these tests check is that the join happens, not how fast.
        join_timeout: Some(Duration::from_secs(8)),
        window: Some(Duration::from_secs(1)),
        presence: Some(PresencePlan::since_run_start(vec![
            vec![span(0.0, end)],
            vec![span(0.0, away.0), span(away.1, end)],
        ])),
        ..Default::default()
    }
}

/// Runs the players of `cfg`, calling `watch` with the seconds since the
/// start every 200 ms meanwhile; returns their result.
fn run_watching(cfg: &PlayersConfig, mut watch: impl FnMut(f64) + Send) -> PlayersResult {
    cfg.validate().expect("valid settings");
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let live = Arc::new(Live::default());
    let t0 = Instant::now();
    let outcome = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                watch(t0.elapsed().as_secs_f64());
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let o = run(cfg, &stop, &live);
        done.store(true, Ordering::Relaxed);
        o
    })
    .expect("the players ran");
    to_result(cfg, &outcome)
}

/// What every run shows whatever the game: three joins (tp-0's, tp-1's
/// two), none failed, no reconnect; windows with the absence in them.
fn check_joins_and_windows(r: &PlayersResult, away: (f64, f64), warmup_s: u64) {
    assert_eq!(r.joins.done, 3, "{:?}\nerrors {:?}", r.joins, r.errors);
    assert_eq!(r.joins.failed, 0, "{:?}", r.errors);
    assert_eq!(r.joins.join_us.count, 3);
    assert!(!r.joins.histogram.is_empty());
    assert_eq!(r.reconnects, 0, "a planned join is no reconnect");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // The windows wholly inside tp-1's absence hold one player, those
    // after its return (and its join) two.
    let w = &r.windows;
    assert_eq!(r.window_s, Some(1.0));
    let at = |s: f64| &w[(s - warmup_s as f64) as usize];
    let gone = at(away.0 + 1.0);
    assert!(
        (gone.players_present - 1.0).abs() < 0.05,
        "{gone:?}\n{:?}",
        w.iter().map(|w| w.players_present).collect::<Vec<_>>()
    );
    let back = at(away.1 + 1.0);
    assert!((back.players_present - 2.0).abs() < 0.05, "{back:?}");
    let rejoin = at(away.1);
    assert_eq!(rejoin.joins, 1, "{rejoin:?}");
    // Snapshots expected follow presence: half as many while one is away.
    assert!(gone.snapshots.expected * 2 <= back.snapshots.expected + 2);
}

/// The reference server's stats, asked over its own protocol: how many
/// players it holds.
fn stats_players(sock: &UdpSocket, server: SocketAddr) -> Option<u8> {
    sock.send_to(
        &Packet::StatsRequest {
            nonce: 7,
            proof: None,
        }
        .to_vec(),
        server,
    )
    .ok()?;
    let mut buf = [0u8; 2048];
    let n = sock.recv(&mut buf).ok()?;
    match Packet::decode(&buf[..n]) {
        Ok(Packet::Stats(s)) => Some(s.players),
        _ => None,
    }
}

#[test]
fn the_reference_servers_player_count_follows_the_presence_plan() {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let server = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let opts = tickpack_server::Options {
                config: tickpack_sim::ServerConfig {
                    tick_hz: tickpack_wire::TickRate::new(50).unwrap(),
                    max_players: 8,
                    ..Default::default()
                },
                bind: "127.0.0.1:0".parse().unwrap(),
                cpu: None,
                timer: tickpack_net::wait::WaitMode::Precise,
                read_at_tick: false,
                metrics: None,
                // Bounded whatever happens to the test.
                duration: Some(Duration::from_secs(30)),
                live: None,
            };
            tickpack_server::run(opts, &stop, |a| tx.send(a).unwrap())
        })
    };
    let target = rx.recv_timeout(Duration::from_secs(10)).expect("listening");
    let away = (3.0, 6.0);
    let cfg = config(Protocol::Tickpack, target, 1, 9, away);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    let counts = Mutex::new(Vec::new());
    let r = run_watching(&cfg, |t| {
        if let Some(n) = stats_players(&sock, target) {
            counts.lock().unwrap().push((t, n));
        }
    });
    stop.store(true, Ordering::Relaxed);
    let stopped = server.join().unwrap().expect("the server ran");
    let counts = counts.into_inner().unwrap();
    // Both in, then one, then both again; nobody after the run.
    let during = |a: f64, b: f64| -> Vec<u8> {
        counts
            .iter()
            .filter(|(t, _)| (a..b).contains(t))
            .map(|(_, n)| *n)
            .collect()
    };
    let before = during(1.0, away.0 - 0.3);
    let gone = during(away.0 + 0.3, away.1 - 0.1);
    let back = during(away.1 + 0.5, 8.7);
    assert!(
        !before.is_empty() && before.iter().all(|&n| n == 2),
        "{counts:?}"
    );
    assert!(
        !gone.is_empty() && gone.iter().all(|&n| n == 1),
        "{counts:?}"
    );
    assert!(
        !back.is_empty() && back.iter().all(|&n| n == 2),
        "{counts:?}"
    );
    assert_eq!(stopped.stats.players, 0, "both said goodbye at the end");
    check_joins_and_windows(&r, away, 1);
    // Expected only while present: tp-0 8 s, tp-1 5 s (less its rejoin's
    // handshake) at 50 ticks a second; 800 if the absence counted.
    let expected = r.snapshots.expected;
    assert!((600..=652).contains(&expected), "{:?}", r.snapshots);
}

/// The player names in an OpenArena `getstatus` answer, asked from
/// 127.0.0.2: ioquake3 answers each address's connectionless requests
/// (`getstatus`, `getchallenge`) ten at once, then one a second, and the
/// players' joins come from 127.0.0.1.
fn status_names(sock: &UdpSocket, server: SocketAddr) -> Option<Vec<String>> {
    sock.send_to(b"\xff\xff\xff\xffgetstatus", server).ok()?;
    let mut buf = [0u8; 8192];
    let n = sock.recv(&mut buf).ok()?;
    let text = String::from_utf8_lossy(buf.get(4..n)?).into_owned();
    Some(
        text.lines()
            .skip(2)
            .filter_map(|l| l.split('"').nth(1).map(str::to_string))
            .collect(),
    )
}

#[test]
fn openarena_logs_a_planned_player_leaving_and_joining_again() {
    if !Q3Server::available("openarena presence") {
        return;
    }
    let server = Q3Server::start(&["+set", "sv_fps", "20", "+set", "bot_minplayers", "0"]);
    let away = (4.0, 8.0);
    let cfg = config(Protocol::Q3, server.addr(), 2, 12, away);
    let names = Mutex::new(Vec::new());
    let sock = UdpSocket::bind("127.0.0.2:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    let mut last = -1.0;
    let r = run_watching(&cfg, |t| {
        // Within the server's one answer a second to an address.
        if t - last >= 1.0 {
            last = t;
            if let Some(n) = status_names(&sock, server.addr()) {
                names.lock().unwrap().push((t, n));
            }
        }
    });
    let log = server.log();
    // The server's own words: tp-1 entered the game, left with the
    // `disconnect` command before its return (a timeout takes far
    // longer), and entered again.
    let left_at = log
        .find("tp-1^7 disconnected")
        .unwrap_or_else(|| panic!("{log}"));
    let entered: Vec<usize> = log
        .match_indices("tp-1^7 entered the game")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(entered.len(), 2, "{log}");
    assert!(entered[0] < left_at && left_at < entered[1], "{log}");
    assert!(!log.contains("tp-1^7 timed out"), "{log}");
    let names = names.into_inner().unwrap();
    let listed = |a: f64, b: f64, who: &str| -> Vec<bool> {
        names
            .iter()
            .filter(|(t, _)| (a..b).contains(t))
            .map(|(_, n)| n.iter().any(|x| x == who))
            .collect()
    };
    let gone = listed(away.0 + 0.5, away.1 - 0.1, "tp-1");
    let back = listed(away.1 + 1.0, 11.8, "tp-1");
    assert!(!gone.is_empty() && gone.iter().all(|l| !l), "{names:?}");
    assert!(!back.is_empty() && back.iter().all(|l| *l), "{names:?}");
    assert!(listed(away.0 + 0.5, away.1 - 0.1, "tp-0")
        .iter()
        .all(|l| *l));
    check_joins_and_windows(&r, away, 2);
}

#[test]
fn teeworlds_logs_a_planned_player_leaving_and_joining_again() {
    if !TwServer::available("teeworlds presence") {
        return;
    }
    let server = TwServer::start(&["sv_map dm1", "console_output_level 2"]);
    let away = (4.0, 7.0);
    let cfg = config(Protocol::Tw7, server.addr(), 2, 10, away);
    let log_at_return = Mutex::new(String::new());
    let r = run_watching(&cfg, |t| {
        if t < away.1 - 0.2 {
            *log_at_return.lock().unwrap() = server.log();
        }
    });
    let log = server.log();
    let before_return = log_at_return.into_inner().unwrap();
    // The server's own words: tp-1 joined, left (its close message; the
    // server logs no reason from a client, and a timeout takes 10 s, more
    // than the absence) before its return, and joined again.
    let lines = |text: &str, what: &str| {
        text.lines()
            .filter(|l| l.contains(what) && l.contains(":tp-1'"))
            .count()
    };
    assert_eq!(
        lines(&before_return, "team_join player="),
        1,
        "{before_return}"
    );
    assert_eq!(lines(&before_return, "leave player="), 1, "{before_return}");
    assert_eq!(
        lines(&log, "team_join player="),
        2,
        "tp-1 did not come back:\n{log}"
    );
    check_joins_and_windows(&r, away, 2);
}
