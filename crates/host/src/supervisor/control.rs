//! The control socket (`RUN_DIR/control.sock`): one request per connection,
//! one line each way ([`ControlRequest`]). `status` answers the status
//! JSON; `down` is answered after the shutdown with
//! `{"ok":..,"problems":[..]}`; `change-map N` with `{"sent":{..}}` once
//! the command is sent (its answer shows in the status), or why not;
//! anything else gets an `{"error":..}` line.
//!
//! No instance can reach it (the run dir is root's, mode 0700, and hidden
//! inside every instance); still, one poll answers at most
//! [`MAX_REQUESTS_PER_POLL`] connections, reads at most 4 KiB of each and
//! waits at most 500 ms to read and to write each, so a stuck client cannot hold the supervisor's loop
//! (and the health checks in it) for long.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use super::{io, HostError, Supervisor};
use crate::status::{ControlAnswer, ControlRequest};

/// Connections answered per poll; the rest wait for the next.
pub const MAX_REQUESTS_PER_POLL: usize = 8;

/// Binds `RUN_DIR/control.sock` (replacing a stale one), non-blocking.
pub(super) fn bind(run_dir: &Path) -> Result<UnixListener, HostError> {
    let sock = run_dir.join("control.sock");
    let _ = std::fs::remove_file(&sock);
    let l = UnixListener::bind(&sock).map_err(io(format!("binding {}", sock.display())))?;
    l.set_nonblocking(true).map_err(io("control socket"))?;
    Ok(l)
}

/// Answers a `down` request once the fleet is down.
pub(super) fn answer_down(mut s: UnixStream, problems: &[String]) {
    let body = serde_json::json!({ "ok": problems.is_empty(), "problems": problems });
    let _ = writeln!(s, "{body}");
}

impl Supervisor {
    pub(super) fn serve_control(&mut self) -> bool {
        let mut down = false;
        for _ in 0..MAX_REQUESTS_PER_POLL {
            let Some(l) = &self.control else { return false };
            let Ok((mut s, _)) = l.accept() else { break };
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = s.set_write_timeout(Some(Duration::from_millis(500)));
            let mut line = String::new();
            let _ = BufReader::new((&s).take(4096)).read_line(&mut line);
            match ControlRequest::parse(line.trim()) {
                Ok(ControlRequest::Status) => {
                    let body = serde_json::to_string(&self.status()).expect("status serializes");
                    let _ = writeln!(s, "{body}");
                }
                Ok(ControlRequest::Down) => {
                    self.pending_down = Some(s);
                    down = true;
                }
                Ok(ControlRequest::ChangeMap { instance }) => {
                    let answer = match self.change_map(instance) {
                        Ok(sent) => ControlAnswer::Sent { sent },
                        Err(e) => ControlAnswer::Error {
                            error: e.to_string(),
                        },
                    };
                    let body = serde_json::to_string(&answer).expect("an answer serializes");
                    let _ = writeln!(s, "{body}");
                }
                Err(error) => {
                    let body = serde_json::to_string(&ControlAnswer::Error { error })
                        .expect("an answer serializes");
                    let _ = writeln!(s, "{body}");
                }
            }
        }
        down
    }
}
