//! `tickpack.root/1`: what a supervisor may ask of its root process, and
//! the answers. One JSON value per `SOCK_SEQPACKET` datagram, at most
//! [`MAX_MESSAGE`] bytes; a request is answered before the next is read.
//!
//! | request | what it does | answer |
//! |---|---|---|
//! | `hello` (schema, host, run dir) | opens the session: the host's run dir checked, its lock taken | `welcome` (what the record of an earlier run of the host lists) |
//! | `take_uid_block` | a block of uids for the host's instances, never one whose uids still run (`crate::uid_block`) | `uid_block` (its base, and what the host should say: blocks passed over, its own leftovers ended) |
//! | `release_uid_block` | gives it back | `done` |
//! | `net_up` (kind, range, source addresses, instance ids) | the host's namespaces, links, addresses and routes (`HostNet::setup`), recorded before each is made | `net` (the record) |
//! | `firewall` (game port, host ports allowed) | the host's nftables table over its links | `net` |
//! | `net_down` | removes all of the host's network it made | `done` |
//! | `remove_leftovers` (a record) | removes what an earlier run of the host left, each name one its own record lists | `removed` (what was there) |
//! | `sweep` | removes every namespace and link named for the host, and its table | `removed` |
//! | `write_file` (instance, path, contents) | a config file in `RUN_DIR/instances/ID/`, as the instance's user, never through a link | `done` |
//! | `spawn` (walls, command, environment, CPUs, cgroups) | starts a command in the walls named (an instance's, a batch job's, a load command's): the directory, user, namespaces and hostname are the root process's to derive | `spawned` (its PID; its output pipe's read end rides along, `SCM_RIGHTS`) |
//! | `signal` (PID, signal, group) | signals a process it spawned and has not reaped (or its process group) | `done` |
//! | `wait` (PID) | reaps it if it has exited | `waited` (its wait status and CPU time, or none yet) |
//! | `tenant_dir` (walls, bytes) | the walls' directory (`instances/ID`, `batch/JOB`, `batch/load-ID`) as a tmpfs of that size, the walls' user's; its parent root's, 0700 | `done` |
//! | `open_file` (load walls, name) | a file a load command wrote in its directory, opened to read: a regular file reached without a link | `opened` (whether there is one; its descriptor rides along) |
//! | `remove_tenant_dirs` | unmounts and removes every tenant directory of the run dir | `removed` |
//! | `cgroups` | the host's cgroup `tp<host>` (v2), its controllers on, given to the caller's user to make its instances' cgroups in (delegation) | `done` |
//! | `remove_cgroups` | kills what is left in `tp<host>` and removes it | `removed` |
//!
//! Any request may be answered `refused` (checked and not done: nothing
//! changed) or `failed` (tried; the kernel's words, and what was undone).

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::netpath::{NetKind, NetRecord};

/// The schema a hello names.
pub const SCHEMA: &str = "tickpack.root/1";
/// The longest message either side sends or reads.
/// (Under the 208 KiB a `SOCK_SEQPACKET` datagram may carry with the
/// kernel's default buffers.)
pub const MAX_MESSAGE: usize = 160 * 1024;
/// The longest config file written (a definition's files are at most 32 KiB
/// before their placeholders are filled).
pub const MAX_FILE: usize = 40 * 1024;

/// What a supervisor asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// The first request, and only the first.
    Hello {
        schema: String,
        /// The host's name (`tickpack_sys::validate_host_name`).
        host: String,
        /// Its run dir: absolute, a real directory, root's, closed to others.
        run_dir: PathBuf,
    },
    TakeUidBlock,
    ReleaseUidBlock,
    NetUp {
        kind: NetKind,
        /// The address range, as the host file writes it (`198.18.0.0/16`).
        range: String,
        source_addrs: u32,
        instances: Vec<u32>,
    },
    Firewall {
        game_port: u16,
        allow_host_ports: Vec<u16>,
    },
    NetDown,
    RemoveLeftovers {
        record: NetRecord,
    },
    Sweep,
    WriteFile {
        instance: u32,
        /// Relative to the instance's directory.
        path: String,
        contents: String,
    },
    Spawn {
        walls: Walls,
        /// The command and its arguments (run inside the walls, as the
        /// walls' user).
        argv: Vec<String>,
        /// Its variables (the root process adds only a `PATH`).
        env: Vec<(String, String)>,
        /// CPUs it is pinned to (none: every CPU its cgroup allows).
        cpus: Option<Vec<usize>>,
        /// Cgroup directories it joins before its first instruction: each
        /// the walls' own (`tp<host>/tp<host>-<id>`, `tp<host>/tp<host>-batch`)
        /// or, for batch work, a cgroup the host adopted.
        cgroups: Vec<PathBuf>,
        oom_score_adj: i32,
        /// Runs under SCHED_IDLE.
        sched_idle: bool,
    },
    Signal {
        pid: u32,
        signal: i32,
        /// Its process group (a batch job or load command leads its own).
        group: bool,
    },
    Wait {
        pid: u32,
    },
    TenantDir {
        walls: Walls,
        bytes: u64,
    },
    OpenFile {
        walls: Walls,
        /// One name in the walls' directory.
        name: String,
    },
    RemoveTenantDirs,
    Cgroups,
    RemoveCgroups,
}

/// Which walls a command is started in. The root process derives from it
/// alone the working directory (beneath the run dir), the user (of the
/// host's uid block), the network namespace and the hostname.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Walls {
    /// Instance `id`'s server: `RUN_DIR/instances/ID`, uid base + id, its
    /// network namespace.
    Instance { id: u32 },
    /// Batch job `job` (1-based): `RUN_DIR/batch/JOB`, the block's base
    /// uid, a new empty network namespace, its own session.
    Batch { job: u32 },
    /// Instance `id`'s load command: `RUN_DIR/batch/load-ID`, the block's
    /// base uid, the instance's network namespace, its own session.
    Load { id: u32 },
}

/// What the root process answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    Welcome {
        /// What its record of an earlier run of this host lists (empty
        /// when there was none or it left nothing).
        leftovers: NetRecord,
    },
    Net {
        record: NetRecord,
    },
    UidBlock {
        /// Instance N runs as base + N.
        base: u32,
        said: Vec<String>,
    },
    Done,
    /// Started; the read end of its stdout and stderr pipe comes with the
    /// answer (`SCM_RIGHTS`).
    Spawned {
        pid: u32,
    },
    Waited {
        /// Its wait status (`ExitStatusExt::from_raw`), none while it runs.
        status: Option<i32>,
        /// The CPU time (user and system) of it and the children it
        /// reaped, in microseconds.
        cpu_us: u64,
    },
    Removed {
        items: Vec<String>,
    },
    /// Whether the file is there; if so, its descriptor (read-only) comes
    /// with the answer.
    Opened {
        found: bool,
    },
    /// Not done: the request is not this host's to make, or not one.
    Refused {
        why: String,
    },
    /// Tried, and the system said no.
    Failed {
        error: String,
    },
}

/// Why a message was not read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("the other end went away")]
    Closed,
    #[error("a message of {0} bytes, over the {MAX_MESSAGE} allowed")]
    Oversized(usize),
    #[error("not a message of {SCHEMA}: {0}")]
    Malformed(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Sends `msg` as one datagram.
pub fn send<T: Serialize>(sock: impl AsFd, msg: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    if bytes.len() > MAX_MESSAGE {
        return Err(std::io::Error::other(format!(
            "a message of {} bytes, over the {MAX_MESSAGE} allowed",
            bytes.len()
        )));
    }
    loop {
        match rustix::net::send(&sock, &bytes, SendFlags::NOSIGNAL) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Sends `msg` as one datagram with `fd` attached (`SCM_RIGHTS`).
pub fn send_with_fd<T: Serialize>(
    sock: impl AsFd,
    msg: &T,
    fd: BorrowedFd<'_>,
) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    if bytes.len() > MAX_MESSAGE {
        return Err(std::io::Error::other("a message over the size allowed"));
    }
    let fds = [fd];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(std::io::Error::other("no room for a descriptor"));
    }
    loop {
        let iov = [IoSlice::new(&bytes)];
        match rustix::net::sendmsg(&sock, &iov, &mut control, SendFlags::NOSIGNAL) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// [`recv`], keeping the first descriptor that came with the datagram
/// (any other is closed).
pub fn recv_with_fd<T: DeserializeOwned>(
    sock: impl AsFd,
    buf: &mut [u8],
) -> Result<(T, Option<OwnedFd>), FrameError> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        let mut iov = [IoSliceMut::new(&mut *buf)];
        let flags = RecvFlags::TRUNC | RecvFlags::CMSG_CLOEXEC;
        match rustix::net::recvmsg(&sock, &mut iov, &mut control, flags) {
            Ok(r) => break r,
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::CONNRESET) => return Err(FrameError::Closed),
            Err(e) => return Err(FrameError::Io(e.into())),
        }
    };
    let mut fd = None;
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = m {
            for f in fds {
                fd.get_or_insert(f);
            }
        }
    }
    Ok((decode(buf, got.bytes, got.bytes)?, fd))
}

fn decode<T: DeserializeOwned>(buf: &[u8], n: usize, full: usize) -> Result<T, FrameError> {
    if full == 0 {
        return Err(FrameError::Closed);
    }
    let n = n.min(buf.len());
    if full > n || full > MAX_MESSAGE {
        return Err(FrameError::Oversized(full));
    }
    serde_json::from_slice(&buf[..n])
        .map_err(|e| FrameError::Malformed(tickpack_sys::text::escape(&e.to_string(), 200)))
}

/// Reads one datagram into `buf` (at least [`MAX_MESSAGE`] + 1 long) and
/// decodes it as a `T`. A descriptor sent with it is closed unread (the
/// kernel does so for a plain `recv`).
pub fn recv<T: DeserializeOwned>(sock: impl AsFd, buf: &mut [u8]) -> Result<T, FrameError> {
    let (n, full) = loop {
        match rustix::net::recv(&sock, &mut *buf, RecvFlags::TRUNC) {
            Ok(r) => break r,
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::CONNRESET) => return Err(FrameError::Closed),
            Err(e) => return Err(FrameError::Io(e.into())),
        }
    };
    decode(buf, n, full)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A descriptor sent with a message arrives with it; one sent to a
    /// plain `recv` (the root process's) is closed unread.
    #[test]
    fn a_descriptor_rides_along_with_its_message_only_where_one_is_taken() {
        use rustix::net::{AddressFamily, SocketFlags, SocketType};
        let (a, b) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        let (r, mut w) = std::io::pipe().unwrap();
        send_with_fd(&a, &Answer::Spawned { pid: 7 }, r.as_fd()).unwrap();
        drop(r);
        let mut buf = vec![0u8; MAX_MESSAGE + 1];
        let (answer, fd) = recv_with_fd::<Answer>(&b, &mut buf).unwrap();
        assert_eq!(answer, Answer::Spawned { pid: 7 });
        let mut got = std::fs::File::from(fd.expect("the descriptor"));
        std::io::Write::write_all(&mut w, b"out").unwrap();
        drop(w);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut got, &mut text).unwrap();
        assert_eq!(text, "out");
        // Sent to a plain recv: the message is read, the descriptor gone.
        let (r2, w2) = std::io::pipe().unwrap();
        send_with_fd(&a, &Request::Sweep, r2.as_fd()).unwrap();
        drop(r2);
        assert_eq!(recv::<Request>(&b, &mut buf).unwrap(), Request::Sweep);
        let mut w2 = w2;
        let e = std::io::Write::write_all(&mut w2, b"x").unwrap_err();
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe,
            "no reader is left"
        );
        // And a message without one: none.
        send(&a, &Answer::Done).unwrap();
        let (answer, fd) = recv_with_fd::<Answer>(&b, &mut buf).unwrap();
        assert_eq!((answer, fd.is_none()), (Answer::Done, true));
    }

    #[test]
    fn a_request_reads_back_as_written_and_unknown_fields_are_refused() {
        let r = Request::WriteFile {
            instance: 3,
            path: "baseoa/server.cfg".into(),
            contents: "set sv_hostname x\n".into(),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.starts_with(r#"{"request":"write_file""#), "{text}");
        assert_eq!(serde_json::from_str::<Request>(&text).unwrap(), r);
        let extra = r#"{"request":"firewall","game_port":1,"allow_host_ports":[],"and":"more"}"#;
        assert!(serde_json::from_str::<Request>(extra).is_err());
        let unknown = r#"{"request":"mount","path":"/"}"#;
        assert!(serde_json::from_str::<Request>(unknown).is_err());
    }
}
