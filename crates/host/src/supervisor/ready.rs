//! Readiness a server shows without a health check: a line of its output
//! ([`LogWatch`]) or its port bound in its own network namespace
//! ([`port_bound`]). Both read what an instance controls, as root, so
//! both are bounded and trust nothing they read:
//!
//! - The log is the one the supervisor opened for the instance's output
//!   (`RUN_DIR/logs/ID.log`, a directory the instance cannot write); it is
//!   opened again with `O_NOFOLLOW` and must be a regular file, and only
//!   what was written since the instance's start is read, at most
//!   [`LOG_READ_PER_POLL`] bytes per poll and [`LOG_READ_MAX`] bytes in all
//!   (a server that printed that much without the line is not ready).
//!   The text is matched as bytes: a fragment carries no newline, so a
//!   match is within one line, and nothing read is decoded or kept beyond
//!   the fragment's length.
//! - The port is looked up in `/proc/PID/net/{udp,udp6}` (or `tcp`,
//!   `tcp6`, listening sockets only) of the instance's own process, which
//!   shows the sockets of its network namespace; at most
//!   [`NET_READ_MAX`] bytes of each are read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use tickpack_game::def::Transport;

/// The most bytes of a log read in one poll.
pub const LOG_READ_PER_POLL: u64 = 256 * 1024;
/// The most bytes of a log read for one start.
pub const LOG_READ_MAX: u64 = 64 * 1024 * 1024;
/// The most bytes of one `/proc/PID/net/*` table read.
pub const NET_READ_MAX: u64 = 4 * 1024 * 1024;

/// Looks for a fragment in what an instance writes to its log from its
/// start on.
#[derive(Debug)]
pub struct LogWatch {
    path: PathBuf,
    needle: Vec<u8>,
    /// Where the next read starts.
    offset: u64,
    /// The bytes read for this start.
    read: u64,
    /// The end of what was read last, as long as the needle less one
    /// byte, so a match across two reads is found.
    tail: Vec<u8>,
}

impl LogWatch {
    /// Watches `path` from its current end (call just before the start).
    pub fn new(path: &Path, needle: &str) -> LogWatch {
        let offset = open_log(path)
            .and_then(|f| f.metadata())
            .map_or(0, |m| m.len());
        LogWatch {
            path: path.to_path_buf(),
            needle: needle.as_bytes().to_vec(),
            offset,
            read: 0,
            tail: vec![],
        }
    }

    /// The fragment it looks for, as text.
    pub fn needle(&self) -> String {
        String::from_utf8_lossy(&self.needle).into_owned()
    }

    /// Reads what was written since the last call (bounded); true once the
    /// fragment was seen.
    pub fn poll(&mut self) -> bool {
        if self.needle.is_empty() || self.read >= LOG_READ_MAX {
            return false;
        }
        let Ok(mut f) = open_log(&self.path) else {
            return false;
        };
        let len = f.metadata().map_or(0, |m| m.len());
        if len < self.offset {
            // Truncated: read from the start again.
            self.offset = 0;
            self.tail.clear();
        }
        let want = (len - self.offset)
            .min(LOG_READ_PER_POLL)
            .min(LOG_READ_MAX - self.read);
        if want == 0 || f.seek(SeekFrom::Start(self.offset)).is_err() {
            return false;
        }
        let mut buf = std::mem::take(&mut self.tail);
        let Ok(n) = (&mut f).take(want).read_to_end(&mut buf) else {
            return false;
        };
        self.offset += n as u64;
        self.read += n as u64;
        let found = buf
            .windows(self.needle.len())
            .any(|w| w == self.needle.as_slice());
        let keep = self.needle.len() - 1;
        self.tail = buf[buf.len().saturating_sub(keep)..].to_vec();
        found
    }
}

/// The log, never through a link, only if a regular file.
fn open_log(path: &Path) -> std::io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(f)
}

/// Whether `port` is bound (UDP) or listening (TCP) in the network
/// namespace of process `pid` (`/proc` is a parameter for tests).
pub fn port_bound(proc_root: &Path, pid: u32, transport: Transport, port: u16) -> bool {
    let (tables, listening_only) = match transport {
        Transport::Udp => (["udp", "udp6"], false),
        Transport::Tcp => (["tcp", "tcp6"], true),
    };
    tables.iter().any(|t| {
        let path = proc_root.join(pid.to_string()).join("net").join(t);
        let Ok(f) = File::open(path) else {
            return false;
        };
        let mut text = String::new();
        if f.take(NET_READ_MAX).read_to_string(&mut text).is_err() {
            return false;
        }
        table_has_port(&text, port, listening_only)
    })
}

/// Whether a `/proc/net/{udp,tcp}[6]` table has a socket on local `port`
/// (in state LISTEN, `0A`, if `listening_only`).
fn table_has_port(text: &str, port: u16, listening_only: bool) -> bool {
    text.lines().skip(1).any(|line| {
        let mut f = line.split_whitespace();
        let (Some(_sl), Some(local), Some(_remote), Some(state)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            return false;
        };
        let bound = local
            .rsplit_once(':')
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
            == Some(port);
        bound && (!listening_only || state == "0A")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tp-ready-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_log_line_is_found_from_the_start_on_even_across_two_reads() {
        let d = temp("log");
        let log = d.join("1.log");
        std::fs::write(&log, "Server listening (an earlier start)\n").unwrap();
        let mut w = LogWatch::new(&log, "Server listening");
        assert!(!w.poll(), "what an earlier start wrote does not count");
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(b"loading\nServer lis").unwrap();
        assert!(!w.poll());
        f.write_all(b"tening on 27015\n").unwrap();
        assert!(w.poll());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_log_replaced_by_a_link_is_not_read() {
        let d = temp("link");
        let target = d.join("secret");
        std::fs::write(&target, "Server listening\n").unwrap();
        let log = d.join("1.log");
        std::fs::write(&log, "").unwrap();
        let mut w = LogWatch::new(&log, "Server listening");
        std::fs::remove_file(&log).unwrap();
        std::os::unix::fs::symlink(&target, &log).unwrap();
        assert!(!w.poll());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_port_is_found_in_the_kernels_socket_table() {
        let udp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
                   1: 0100007F:6987 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2 0000000000000000 0\n";
        assert!(table_has_port(udp, 0x6987, false));
        assert!(!table_has_port(udp, 27016, false));
        let tcp = "  sl  local_address rem_address   st\n 0: 00000000:1F90 00000000:0000 0A\n 1: 00000000:1F91 0100007F:1F90 01\n";
        assert!(table_has_port(tcp, 0x1F90, true));
        assert!(!table_has_port(tcp, 0x1F91, true), "not listening");
        assert!(!table_has_port("garbage\n\u{0}:zz ::: x\n", 0, false));
    }

    #[test]
    fn this_process_bound_port_is_seen_in_its_own_namespace() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = s.local_addr().unwrap().port();
        assert!(port_bound(
            Path::new("/proc"),
            std::process::id(),
            Transport::Udp,
            port
        ));
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(port_bound(
            Path::new("/proc"),
            std::process::id(),
            Transport::Tcp,
            port
        ));
    }
}
