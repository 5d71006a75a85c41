//! Running the real OpenArena dedicated server on 127.0.0.1 for tests, and
//! driving [`Client`] sessions against it over UDP.

#![allow(dead_code)]

use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tickpack_q3::{oob, Client, ClientState, Event, UserCmd};

/// The installed server wrapper.
pub const SERVER: &str = "/usr/games/openarena-server";

/// Whether the server can run here; without it a test prints a skip line
/// and returns, except in CI (env `CI=true`), where that is a failure.
pub fn server_available(test: &str) -> bool {
    if std::path::Path::new(SERVER).exists() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{SERVER} is missing in CI"
    );
    println!("SKIP {test}: {SERVER} is not installed");
    false
}

/// A running server, killed by PID (and its HOME removed) on drop.
pub struct ServerGuard {
    child: Child,
    home: PathBuf,
    /// Its UDP port on 127.0.0.1.
    pub port: u16,
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral UDP port")
}

impl ServerGuard {
    /// Start the server on oa_dm1 with `sv_fps` and 16 slots, no bots, no
    /// master servers, and the further cvars in `extra`, and wait (at most
    /// 30 s) until it answers `getinfo`.
    pub fn start(sv_fps: u32, extra: &[(&str, &str)]) -> ServerGuard {
        let port = free_udp_port();
        let home = std::env::temp_dir().join(format!("tickpack-q3-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&home).expect("server HOME");
        let mut cmd = Command::new(SERVER);
        cmd.env("HOME", &home).current_dir(&home);
        for (k, v) in [
            ("dedicated", "1".to_string()),
            ("net_ip", "127.0.0.1".to_string()),
            ("net_port", port.to_string()),
            ("net_enabled", "1".to_string()),
            ("sv_master1", String::new()),
            ("sv_master2", String::new()),
            ("sv_master3", String::new()),
            ("sv_master4", String::new()),
            ("sv_master5", String::new()),
            ("sv_pure", "0".to_string()),
            ("sv_fps", sv_fps.to_string()),
            ("bot_minplayers", "0".to_string()),
            ("sv_maxclients", "16".to_string()),
        ] {
            cmd.arg("+set").arg(k).arg(v);
        }
        for (k, v) in extra {
            cmd.arg("+set").arg(k).arg(v);
        }
        cmd.arg("+map").arg("oa_dm1");
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd.spawn().expect("start the server");
        let guard = ServerGuard { child, home, port };
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut buf = [0u8; 2048];
        while Instant::now() < deadline {
            sock.send_to(&oob::encode("getinfo x"), ("127.0.0.1", port))
                .unwrap();
            if let Ok((n, _)) = sock.recv_from(&mut buf) {
                if buf[..n].starts_with(b"\xff\xff\xff\xffinfoResponse") {
                    return guard;
                }
            }
        }
        panic!("the server did not answer getinfo within 30 s");
    }

    /// `getstatus`: the player names it lists.
    pub fn player_names(&self) -> Vec<String> {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = [0u8; 16384];
        for _ in 0..10 {
            sock.send_to(&oob::encode("getstatus"), ("127.0.0.1", self.port))
                .unwrap();
            if let Ok((n, _)) = sock.recv_from(&mut buf) {
                let text = String::from_utf8_lossy(&buf[4..n]).into_owned();
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
