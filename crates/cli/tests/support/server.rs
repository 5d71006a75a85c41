//! A `tickpack server` child on 127.0.0.1 (port 0), pinned to the last
//! CPU, found by the address in its banner and killed by PID when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::exe;

/// The CPU the server runs on (the last one) and the CPU the players run
/// on (the first one), as `--cpu`/`--cpus` arguments.
pub fn cpus() -> (String, String) {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    ((n - 1).to_string(), "0".to_string())
}

/// A server child, killed by PID when dropped.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Server {
    /// Starts `tickpack server --bind 127.0.0.1:0 --cpu LAST EXTRA...` and
    /// reads the address it bound from its banner.
    pub fn start(extra: &[&str]) -> Server {
        let (server_cpu, _) = cpus();
        let mut child = Command::new(exe())
            .args(["server", "--bind", "127.0.0.1:0", "--cpu", &server_cpu])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .expect("read server banner");
        let addr = line
            .strip_prefix("tickpack server listening on ")
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected banner {line:?}"))
            .parse()
            .unwrap();
        Server { child, addr }
    }

    /// Sends SIGTERM and waits (at most 5 s) for the server to exit.
    pub fn terminate(&mut self) -> ExitStatus {
        // SAFETY-free: signal our own child by PID through the kill command.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "server ignored SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
