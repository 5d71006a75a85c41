//! Child processes this binary starts (a server for `demo`): started by us,
//! ended by us by PID, never left behind.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

/// A `tickpack server` child; SIGTERM then SIGKILL on drop.
pub struct ServerChild {
    child: Child,
    pub addr: SocketAddr,
}

impl ServerChild {
    /// Starts `tickpack server ARGS` and waits (up to 10 s) for its
    /// "listening on ADDR" line.
    pub fn start(args: &[String]) -> Result<Self> {
        let exe = std::env::current_exe().context("finding the tickpack binary")?;
        let mut child = Command::new(exe)
            .arg("server")
            .args(args)
            // Agones' variables (tickpack run in a GameServer pod) name the
            // pod's SDK server: a helper server must not report to it.
            .env_remove(tickpack_agones::endpoint::ENV_HTTP_PORT)
            .env_remove(tickpack_agones::endpoint::ENV_GRPC_PORT)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting tickpack server")?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next();
            let _ = tx.send(first);
            // Keep draining so the child never blocks on a full pipe.
            for _ in lines {}
        });
        let mut guard = Self {
            child,
            addr: "0.0.0.0:0".parse().expect("static"),
        };
        let line = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Some(Ok(l))) => l,
            _ => bail!("tickpack server did not start (no 'listening on' line within 10 s)"),
        };
        let addr = line
            .strip_prefix("tickpack server listening on ")
            .and_then(|r| r.split_whitespace().next())
            .ok_or_else(|| anyhow!("unexpected first line from the server: {line:?}"))?;
        guard.addr = addr
            .parse()
            .with_context(|| format!("server printed a bad address {addr:?}"))?;
        Ok(guard)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, wait up to 3 s, then SIGKILL.
    pub fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        // SAFETY: kill() with a PID we spawned and have not reaped yet.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        for _ in 0..300 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        self.stop();
    }
}
