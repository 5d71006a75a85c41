//! Running the real OpenArena dedicated server on 127.0.0.1 for tests, and
//! driving [`Client`] sessions against it over UDP.

#![allow(dead_code)]

use std::net::UdpSocket;
use std::time::{Duration, Instant};
use tickpack_q3::{Client, ClientState, Event, UserCmd};
use tickpack_testkit::Q3Server;

/// Whether the server can run here; without it a test prints a skip line
/// and returns, except in CI (env `CI=true`), where that is a failure.
pub fn server_available(test: &str) -> bool {
    Q3Server::available(test)
}

/// A running server (tickpack-testkit's), killed by PID and its HOME
/// removed on drop.
pub struct ServerGuard {
    server: Q3Server,
    /// Its UDP port on 127.0.0.1.
    pub port: u16,
}

impl ServerGuard {
    /// Start the server on oa_dm1 with `sv_fps` and 16 slots, no bots, no
    /// master servers, and the further cvars in `extra`, and wait until it
    /// answers `getinfo`.
    pub fn start(sv_fps: u32, extra: &[(&str, &str)]) -> ServerGuard {
        let sv_fps = sv_fps.to_string();
        let mut words = vec![
            "+set",
            "net_enabled",
            "1",
            "+set",
            "sv_fps",
            &sv_fps,
            "+set",
            "bot_minplayers",
            "0",
        ];
        for (k, v) in extra {
            words.extend(["+set", k, v]);
        }
        let server = Q3Server::start(&words);
        let port = server.port;
        ServerGuard { server, port }
    }

    /// `getstatus`: the player names it lists.
    pub fn player_names(&self) -> Vec<String> {
        for _ in 0..10 {
            if let Some(text) = self.server.query("getstatus") {
                // statusResponse, the info line, then `score ping "name"` lines.
                return text
                    .lines()
                    .skip(2)
                    .filter_map(|l| l.split('"').nth(1).map(str::to_string))
                    .collect();
            }
        }
        panic!("no statusResponse");
    }
}

/// What a driven session saw.
#[derive(Default, Debug)]
pub struct Seen {
    pub gamestates: Vec<Event>,
    pub snapshots: Vec<tickpack_q3::SnapshotInfo>,
    pub prints: Vec<String>,
    pub commands: Vec<String>,
    pub sent_times: Vec<i32>,
    pub errors: Vec<String>,
    /// The first datagrams received, when capturing.
    pub captured: Vec<Vec<u8>>,
}

/// One client session on its own socket.
pub struct Session {
    pub client: Client,
    pub sock: UdpSocket,
    pub seen: Seen,
    last_send: Option<Instant>,
    last_snap: Option<(i32, Instant)>,
    cmds: Vec<UserCmd>,
    capture: usize,
    t0: Instant,
}

impl Session {
    /// A session for `client` towards the server on `port`, keeping the
    /// first `capture` datagrams it receives.
    pub fn new(client: Client, port: u16, capture: usize) -> Session {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(("127.0.0.1", port)).unwrap();
        sock.set_nonblocking(true).unwrap();
        Session {
            client,
            sock,
            seen: Seen::default(),
            last_send: None,
            last_snap: None,
            cmds: Vec::new(),
            capture,
            t0: Instant::now(),
        }
    }

    /// Receive what is waiting, then send what is due at `now`: handshake
    /// packets every 500 ms, netchan packets every 20 ms (moving usercmds
    /// once primed: forward 127, yaw rotating).
    pub fn step(&mut self, now: Instant) {
        let mut buf = [0u8; 2048];
        let mut events = Vec::new();
        while let Ok(n) = self.sock.recv(&mut buf) {
            if self.seen.captured.len() < self.capture {
                self.seen.captured.push(buf[..n].to_vec());
            }
            if let Err(e) = self.client.handle(&buf[..n], &mut events) {
                self.seen.errors.push(e.to_string());
            }
        }
        for e in events {
            match e {
                Event::Gamestate { .. } => self.seen.gamestates.push(e),
                Event::Snapshot(s) => {
                    if s.delta_ok {
                        self.last_snap = Some((s.server_time, now));
                    }
                    self.seen.snapshots.push(s);
                }
                Event::Print(p) => self.seen.prints.push(p),
                Event::ServerCommand { text, .. } => self.seen.commands.push(text),
                _ => {}
            }
        }
        let period = if self.client.state() < ClientState::AwaitingGamestate {
            Duration::from_millis(500)
        } else {
            Duration::from_millis(20)
        };
        if self
            .last_send
            .is_some_and(|t| now.duration_since(t) < period)
        {
            return;
        }
        self.last_send = Some(now);
        if let Some(p) = self.client.handshake_packet() {
            let _ = self.sock.send(&p);
            return;
        }
        let mut batch: &[UserCmd] = &[];
        if self.client.state() >= ClientState::Primed {
            let (snap_time, at) = self.last_snap.unwrap_or((0, now));
            let elapsed = now.duration_since(at).as_millis().min(100) as i32;
            let prev = self.cmds.last().map_or(0, |c| c.server_time);
            let server_time = (snap_time + elapsed).max(prev + 1);
            let yaw = (now.duration_since(self.t0).as_millis() as i32 * 20) & 0xFFFF;
            self.cmds.push(UserCmd {
                server_time,
                angles: [0, yaw, 0],
                forwardmove: 127,
                ..UserCmd::default()
            });
            self.seen.sent_times.push(server_time);
            let from = self.cmds.len().saturating_sub(2);
            batch = &self.cmds[from..];
        }
        if let Some(p) = self.client.usercmd_packet(batch) {
            let _ = self.sock.send(&p);
        }
        if self.cmds.len() > 64 {
            self.cmds.drain(..32);
        }
    }
}
