//! A real dedicated server on 127.0.0.1 for tests that need one: the
//! shipped game whose players speak the tw7 protocol (its `[players]
//! protocol` in `games/*.toml`), its program taken from that definition's
//! command. Started on a free port with a
//! private HOME, never talking to a master server (`sv_register 0`), killed
//! by its PID (and its home removed) when dropped, even if the test failed.
//!
//! The engine takes one console line per command-line word, so, as in the
//! definition, the settings go to `tickpack.cfg` in the user directory
//! (`$HOME/.local/share/NAME`, the engine's storage directory, which is
//! named like the game's definition), run with `-f tickpack.cfg`.
//!
//! The definition's `packages` provide it (scripts/setup.sh installs them).
//! Where it is missing, [`TwServer::available`] says why: a test then fails
//! under CI (`CI=true`) and prints a skip line elsewhere; [`TwServer::start`]
//! fails saying how to install it.

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tickpack_game::def::{GameDef, PlayerProtocol};

/// The definition of the shipped game whose players speak tw7.
fn definition() -> GameDef {
    crate::shipped::definition(PlayerProtocol::Tw7)
}

/// A running tw7 server on 127.0.0.1, with what it printed.
pub struct TwServer {
    child: Child,
    pub port: u16,
    home: PathBuf,
    /// Its standard output so far, collected by a thread.
    output: Arc<Mutex<String>>,
}

impl TwServer {
    /// Whether the server can be started here; otherwise says what is
    /// missing. Under CI a missing server panics (CI installs it).
    pub fn available(test: &str) -> bool {
        crate::shipped::available(&definition(), test)
    }

    /// Starts the server on a free port with `bindaddr 127.0.0.1`,
    /// `sv_port`, `sv_register 0`, then the console lines `settings` (e.g.
    /// `["sv_map dm1"]`), and waits for the line its definition names as
    /// ready (`[ready] log`) at most the definition's `timeout_s`.
    pub fn start(settings: &[&str]) -> TwServer {
        let def = definition();
        if let Some(why) = crate::shipped::missing(&def) {
            panic!("{why}");
        }
        let port = crate::free_udp_ports(1);
        let home = std::env::temp_dir().join(format!("tp-tw-{}-{port}", std::process::id()));
        let cfg_dir = home.join(".local/share").join(&def.name);
        std::fs::create_dir_all(&cfg_dir).unwrap();
        let mut cfg = format!("bindaddr 127.0.0.1\nsv_port {port}\nsv_register 0\n");
        for line in settings {
            cfg.push_str(line);
            cfg.push('\n');
        }
        std::fs::write(cfg_dir.join("tickpack.cfg"), cfg).unwrap();
        let program = crate::shipped::program(&def);
        let mut child = Command::new(&program)
            .args(["-f", "tickpack.cfg"])
            .env("HOME", &home)
            .current_dir(&home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {program}: {e}"));
        let output = Arc::new(Mutex::new(String::new()));
        let mut stdout = child.stdout.take().expect("the server's stdout");
        let sink = Arc::clone(&output);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut s = TwServer {
            child,
            port,
            home,
            output,
        };
        let ready = def
            .ready
            .log
            .expect("the tw7 definition says which log line means ready");
        s.wait_for(&ready, Duration::from_secs_f64(def.ready.timeout_s));
        s
    }

    /// Waits until the server printed `line`; panics with its output if it
    /// exits or does not within `limit`.
    fn wait_for(&mut self, line: &str, limit: Duration) {
        let t0 = Instant::now();
        while !self.log().contains(line) {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("the tw7 server exited ({st}):\n{}", self.log());
            }
            assert!(
                t0.elapsed() < limit,
                "the tw7 server did not print {line:?} in {limit:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    /// What the server printed so far.
    pub fn log(&self) -> String {
        self.output
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for TwServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
