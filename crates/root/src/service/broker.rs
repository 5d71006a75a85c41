//! Under `sudo`, `tickpack bench` and `tickpack host up` start a broker
//! (`tickpack __root-broker`, as root) first thing and then drop to the
//! invoking user ([`crate::service::privilege`]). From then on each host's
//! root process comes from the broker: the unprivileged process makes a
//! socket pair, sends one end to the broker (`SCM_RIGHTS`), and the broker
//! starts `tickpack __root` on it. The broker does nothing else: it reads
//! no request but "serve this socket", and the root process it starts
//! checks the run dir against the user who made that socket
//! (`SO_PEERCRED`), not against the broker; it keeps at most
//! [`MAX_ROOT_PROCESSES`] running. It ends when the process that
//! started it does (its socket closes); the root processes it started end
//! with their own sockets.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::Child;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::protocol::{self, FrameError, MAX_MESSAGE};

/// The hidden subcommand the broker runs.
pub const SUBCOMMAND: &str = "__root-broker";

/// The most root processes it keeps running at once: far more than one
/// command's hosts (a bench's steps run one after the other, `host up`
/// has one), far fewer than would weigh on the machine.
pub const MAX_ROOT_PROCESSES: usize = 16;

/// What the broker is asked: to start a root process on the socket that
/// comes with the message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case", deny_unknown_fields)]
enum BrokerRequest {
    Serve,
}

/// The unprivileged end: the socket to the broker.
struct Broker {
    sock: OwnedFd,
    _child: Child,
}

static BROKER: OnceLock<Mutex<Broker>> = OnceLock::new();

/// Starts the broker (`exe __root-broker`, as this process's user: root)
/// in its own process group. Once only. When it ends it removes
/// `remove_empty` if that is an empty directory (a run dir made for the
/// command in a directory only root may write).
pub fn start(exe: &Path, remove_empty: Option<&Path>) -> std::io::Result<()> {
    let (ours, theirs) = tickpack_sys::seqpacket_pair()?;
    let mut cmd = super::client::root_command(exe, SUBCOMMAND, theirs);
    if let Some(dir) = remove_empty {
        cmd.arg("--remove-empty").arg(dir);
    }
    let child = cmd.spawn()?;
    BROKER
        .set(Mutex::new(Broker {
            sock: ours,
            _child: child,
        }))
        .map_err(|_| std::io::Error::other("a broker was started already"))?;
    tickpack_sys::set_root_helper();
    Ok(())
}

/// A socket served by a new root process, when a broker runs.
pub(super) fn open() -> Option<std::io::Result<OwnedFd>> {
    let broker = BROKER.get()?;
    Some((|| {
        let (ours, theirs) = tickpack_sys::seqpacket_pair()?;
        let b = broker.lock().unwrap_or_else(|p| p.into_inner());
        protocol::send_with_fd(&b.sock, &BrokerRequest::Serve, theirs.as_fd())?;
        Ok(ours)
    })())
}

/// The broker's loop: for each socket it is sent, `exe __root` on it.
/// Reaps those that ended; returns when its socket closes (exit code 0),
/// after removing `remove_empty` if it is an empty directory (`rmdir`:
/// never anything in it).
pub fn serve(sock: impl AsFd, exe: &Path, remove_empty: Option<&Path>) -> i32 {
    let mut buf = vec![0u8; MAX_MESSAGE + 1];
    let mut children: Vec<Child> = vec![];
    let tick = Some(Duration::from_secs(1));
    if rustix::net::sockopt::set_socket_timeout(&sock, rustix::net::sockopt::Timeout::Recv, tick)
        .is_err()
    {
        return 1;
    }
    loop {
        children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        match protocol::recv_with_fd::<BrokerRequest>(&sock, &mut buf) {
            // Over the cap the socket is closed unserved: its hello fails.
            Ok((BrokerRequest::Serve, Some(fd))) if children.len() < MAX_ROOT_PROCESSES => {
                if let Ok(c) = super::client::root_command(exe, super::SUBCOMMAND, fd).spawn() {
                    children.push(c);
                }
            }
            Ok((BrokerRequest::Serve, Some(_))) => {}
            Ok((BrokerRequest::Serve, None)) => {}
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(FrameError::Malformed(_) | FrameError::Oversized(_)) => {}
            Err(_) => {
                if let Some(dir) = remove_empty {
                    let _ = std::fs::remove_dir(dir);
                }
                return 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// This process's children running `exe` (by their command line).
    fn running(exe: &Path) -> Vec<u32> {
        let mut pids = vec![];
        for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for pid in text
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
            {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                if cmd
                    .windows(exe.as_os_str().len())
                    .any(|w| w == exe.as_os_str().as_encoded_bytes())
                {
                    pids.push(pid);
                }
            }
        }
        pids
    }

    /// Review of issue 40: the broker started a root process for every
    /// socket its unprivileged caller sent, without end.
    #[test]
    fn the_broker_started_root_processes_without_end() {
        let dir = tempfile::tempdir().unwrap();
        // Stands in for `tickpack`: `EXE __root` waits for a while.
        let exe = dir.path().join("fake-root");
        std::fs::write(&exe, "#!/bin/sh\nsleep 20\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (ours, theirs) = tickpack_sys::seqpacket_pair().unwrap();
        let served = {
            let exe = exe.clone();
            std::thread::spawn(move || serve(theirs, &exe, None))
        };
        let mut kept = vec![];
        for _ in 0..MAX_ROOT_PROCESSES + 4 {
            let (mine, sent) = tickpack_sys::seqpacket_pair().unwrap();
            protocol::send_with_fd(&ours, &BrokerRequest::Serve, sent.as_fd()).unwrap();
            kept.push(mine);
        }
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let mut seen = running(&exe).len();
        while seen < MAX_ROOT_PROCESSES && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
            seen = running(&exe).len();
        }
        // A moment for any over the cap to show.
        std::thread::sleep(Duration::from_millis(300));
        let pids = running(&exe);
        drop(ours);
        assert_eq!(served.join().unwrap(), 0);
        for &pid in &pids {
            // Ours, started by the broker in this process, each leading
            // its own group (its `sleep` in it).
            if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
            }
        }
        assert_eq!(
            pids.len(),
            MAX_ROOT_PROCESSES,
            "root processes running: {pids:?}"
        );
    }
}
