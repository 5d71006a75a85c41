//! A real third-party ioquake3 dedicated server on 127.0.0.1 for tests that
//! need one: the shipped game whose players speak the Quake III protocol
//! (`[players] protocol = "q3"` in `games/*.toml`), its program taken from
//! that definition's command. Started on a free port with a private HOME,
//! never talking to a master server, killed by its PID (and its home
//! removed) when dropped, even if the test failed.
//!
//! The definition's `packages` provide it (scripts/setup.sh installs them).
//! Where it is missing, [`Q3Server::available`] says why: a test then fails
//! under CI (`CI=true`) and prints a skip line elsewhere.

use std::io::{Read, Write};
use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tickpack_game::def::{GameDef, PlayerProtocol};

/// The definition of the shipped game whose players speak Quake III.
fn definition() -> GameDef {
    crate::shipped::definition(PlayerProtocol::Q3)
}

/// The dedicated server's program: the first word of its definition's
/// command (the package's wrapper script).
pub fn program() -> String {
    crate::shipped::program(&definition())
}

/// A running ioquake3 server on 127.0.0.1.
pub struct Q3Server {
    child: Option<Child>,
    pub port: u16,
    home: PathBuf,
    args: Vec<String>,
}

impl Q3Server {
    /// `Ok(())` when the server can be started here; otherwise what is
    /// missing. Under CI a missing server panics (CI installs it).
    pub fn available(test: &str) -> bool {
        crate::shipped::available(&definition(), test)
    }

    /// Starts the server on a free port with `extra` `+set` words appended
    /// (e.g. `["+set", "bot_minplayers", "4"]`), then waits until it
    /// answers `getinfo` (at most 30 s: many servers may be loading at once
    /// on two cores).
    pub fn start(extra: &[&str]) -> Q3Server {
        let port = crate::free_udp_ports(1);
        let home = std::env::temp_dir().join(format!("tp-oa-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        let mut args: Vec<String> = [
            "+set dedicated 1",
            "+set net_ip 127.0.0.1",
            "+set sv_master1 \"\"",
            "+set sv_master2 \"\"",
            "+set sv_master3 \"\"",
            "+set sv_master4 \"\"",
            "+set sv_master5 \"\"",
            "+set sv_pure 0",
            "+set sv_maxclients 16",
            "+set g_doWarmup 0",
            "+set fraglimit 0",
            "+set timelimit 0",
            "+set bot_nochat 1",
        ]
        .iter()
        .flat_map(|w| w.split(' ').map(|s| s.replace('"', "")))
        .collect();
        args.extend(["+set".into(), "net_port".into(), port.to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(["+map".into(), "oa_dm1".into()]);
        let mut s = Q3Server {
            child: None,
            port,
            home,
            args,
        };
        s.spawn();
        s.wait_answering(Duration::from_secs(30));
        s
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.home.join("server.log"))
            .unwrap();
        let program = program();
        let child = Command::new(&program)
            .args(&self.args)
            .env("HOME", &self.home)
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {program}: {e}"));
        self.child = Some(child);
    }

    /// Starts the server again on the same port (after [`Self::kill`]),
    /// without waiting for it.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The server's address.
    pub fn addr(&self) -> std::net::SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }

    /// The server's PID (the engine's: the wrapper execs it).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Waits until the server answers `getinfo`; panics with its output if
    /// it does not within `limit`.
    pub fn wait_answering(&mut self, limit: Duration) {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if self.query("getinfo t").is_some() {
                return;
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    panic!("the q3 server exited ({st}):\n{}", self.log());
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "the q3 server did not answer getinfo in {limit:?}:\n{}",
            self.log()
        );
    }

    /// One connectionless query (`getinfo X`, `getstatus X`): the reply's
    /// text after the four 0xFF bytes, or `None` after 500 ms. The server
    /// answers one address 10 times at once, then once a second.
    pub fn query(&self, text: &str) -> Option<String> {
        let s = UdpSocket::bind("127.0.0.1:0").ok()?;
        s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
        let mut d = vec![0xFF; 4];
        d.write_all(text.as_bytes()).ok()?;
        s.send_to(&d, self.addr()).ok()?;
        let mut buf = [0u8; 8192];
        let n = s.recv(&mut buf).ok()?;
        (n > 4).then(|| String::from_utf8_lossy(&buf[4..n]).into_owned())
    }

    /// What the server printed so far.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(self.home.join("server.log")) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// Kills the server with SIGKILL and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Q3Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
