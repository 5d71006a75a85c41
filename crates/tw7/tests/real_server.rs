//! End to end against the real Teeworlds 0.7.5 server (Debian 12's
//! `teeworlds-server`, binary /usr/games/teeworlds-server): one emulated
//! player joins over UDP on 127.0.0.1, plays for 3 s, and the server's own
//! log must say it entered the game under our name.
//!
//! The server (`tickpack_testkit::TwServer`) is started with
//! `sv_register 0` (it contacts no master server), `bindaddr 127.0.0.1`, a
//! free port, HOME in a temp directory, and killed by PID when the test
//! ends, pass or fail. Bounded: 20 s.
//! Without the server installed the test fails and says how to install it.
//!
//! With `TICKPACK_TW7_CAPTURE=dir` it also writes the first 80 datagrams it
//! receives to `dir/NNN.bin` (how tests/fixtures/dm1 was made).

use std::net::UdpSocket;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tickpack_testkit::TwServer;
use tickpack_tw7::{Client, ClientConfig, ClientState, Event, PlayerInput};

const NAME: &str = "tp_e2e";
/// Our token (the one tests/fixtures/dm1 was captured with).
const CAPTURE_TOKEN: u32 = 0x5a17_7e57;
/// Datagrams written when TICKPACK_TW7_CAPTURE names a directory.
const CAPTURE_MAX: usize = 80;

#[test]
fn joins_the_real_server_and_plays() {
    let deadline = Instant::now() + Duration::from_secs(20);
    // Waits until the server listens (it prints its version once bound).
    let server = TwServer::start(&[
        "sv_name tickpack-e2e",
        "sv_map dm1",
        "console_output_level 2",
    ]);

    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind the client socket");
    sock.connect(server.addr())
        .expect("connect the client socket");
    // Fixed, so captured datagrams (below) replay against a client with the
    // same token: tests/replay.rs.
    let token = CAPTURE_TOKEN;
    let capture = std::env::var_os("TICKPACK_TW7_CAPTURE").map(PathBuf::from);
    let mut captured = 0usize;
    let mut c = Client::new(ClientConfig::new(NAME, token), Instant::now());
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    let mut in_game_at = None;
    let mut snapshots = 0u32;
    let mut with_character = 0u32;
    let mut reflected = Vec::new();
    let mut timings = 0u32;
    let mut map = String::new();
    let mut errors = Vec::new();
    let mut step = 0i32;
    let mut last_input = Instant::now();

    loop {
        let now = Instant::now();
        assert!(
            now < deadline,
            "timed out; state {:?}, log:\n{}",
            c.state(),
            server.log()
        );
        if let Some(t) = in_game_at {
            if now.duration_since(t) > Duration::from_secs(3) {
                break;
            }
            // Turn the aim one step every 20 ms so every input is distinct,
            // and walk right then left.
            if now.duration_since(last_input) >= Duration::from_millis(20) {
                last_input = now;
                step += 1;
                let a = f64::from(step) * 0.1;
                c.input(
                    now,
                    PlayerInput {
                        direction: if (step / 50) % 2 == 0 { 1 } else { -1 },
                        target_x: (a.cos() * 100.0) as i32,
                        target_y: (a.sin() * 100.0) as i32,
                        ..Default::default()
                    },
                );
            }
        }
        while c.poll_transmit(now, &mut out) {
            sock.send(&out).expect("send");
        }
        let wait = c
            .poll_timeout()
            .map(|t| t.saturating_duration_since(now))
            .unwrap_or(Duration::from_millis(5))
            .clamp(Duration::from_millis(1), Duration::from_millis(5));
        sock.set_read_timeout(Some(wait)).expect("read timeout");
        match sock.recv(&mut buf) {
            Ok(n) => {
                if let Some(dir) = capture.as_ref().filter(|_| captured < CAPTURE_MAX) {
                    std::fs::create_dir_all(dir).expect("capture directory");
                    std::fs::write(dir.join(format!("{captured:03}.bin")), &buf[..n])
                        .expect("write a captured datagram");
                    captured += 1;
                }
                if let Err(e) = c.handle(Instant::now(), &buf[..n]) {
                    errors.push(e);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("recv: {e}"),
        }
        c.handle_timeout(Instant::now());
        while let Some(ev) = c.poll_event() {
            match ev {
                Event::MapChange { name, .. } => map = name,
                Event::InGame { .. } => in_game_at = Some(Instant::now()),
                Event::Snapshot(s) => {
                    snapshots += 1;
                    if s.character.is_some() {
                        with_character += 1;
                    }
                }
                Event::InputReflected {
                    intended_tick,
                    snapshot_tick,
                    sent_at,
                    ..
                } => reflected.push((intended_tick, snapshot_tick, sent_at.elapsed())),
                Event::InputTiming { .. } => timings += 1,
                Event::Disconnected { reason } => {
                    panic!("disconnected: {reason}; log:\n{}", server.log())
                }
                Event::Connected => {}
            }
        }
    }
    c.disconnect("tickpack test done");
    while c.poll_transmit(Instant::now(), &mut out) {
        let _ = sock.send(&out);
    }
    // Give the server a moment to log the leave.
    std::thread::sleep(Duration::from_millis(200));
    let log = server.log();
    eprintln!(
        "map {map}; snapshots {snapshots} ({with_character} with our character), inputs sent {}, \
         reflected {}, superseded {}, input timings {timings}, crc errors {}, handle errors {:?}",
        c.inputs_sent(),
        reflected.len(),
        c.inputs_superseded(),
        c.snapshots().crc_errors(),
        errors
    );
    let mut lag: Vec<i32> = reflected.iter().map(|r| r.1 - r.0).collect();
    lag.sort_unstable();
    let mut rtt: Vec<Duration> = reflected.iter().map(|r| r.2).collect();
    rtt.sort_unstable();
    if !lag.is_empty() {
        eprintln!(
            "snapshot tick - intended tick: min {} median {} max {}; \
             first send to receipt of the reflecting snapshot: median {:?}, max {:?}",
            lag[0],
            lag[lag.len() / 2],
            lag[lag.len() - 1],
            rtt[rtt.len() / 2],
            rtt[rtt.len() - 1]
        );
    }

    assert_eq!(map, "dm1");
    assert_eq!(c.state(), ClientState::Disconnected);
    assert!(
        log.contains("player has entered the game"),
        "server log:\n{log}"
    );
    assert!(
        log.contains(&format!("team_join player='0:{NAME}'")),
        "the server did not log our name joining:\n{log}"
    );
    // 25 snapshots a second for 3 s, minus start-up.
    assert!(snapshots >= 50, "only {snapshots} snapshots");
    assert_eq!(c.snapshots().crc_errors(), 0);
    assert!(errors.is_empty(), "handle errors: {errors:?}");
    assert!(
        c.inputs_sent() >= 100,
        "only {} inputs sent",
        c.inputs_sent()
    );
    assert!(with_character > 0, "our character never appeared");
    assert!(
        reflected.len() >= 20,
        "only {} inputs reflected",
        reflected.len()
    );
    for (intended, snap, _) in &reflected {
        assert!(snap >= intended);
    }
}
