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
//!
//! Any request may be answered `refused` (checked and not done: nothing
//! changed) or `failed` (tried; the kernel's words, and what was undone).

use std::os::fd::AsFd;
use std::path::PathBuf;

use rustix::net::{RecvFlags, SendFlags};
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
    Removed {
        items: Vec<String>,
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

/// Reads one datagram into `buf` (at least [`MAX_MESSAGE`] + 1 long) and
/// decodes it as a `T`.
pub fn recv<T: DeserializeOwned>(sock: impl AsFd, buf: &mut [u8]) -> Result<T, FrameError> {
    let (n, full) = loop {
        match rustix::net::recv(&sock, &mut *buf, RecvFlags::TRUNC) {
            Ok(r) => break r,
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::CONNRESET) => return Err(FrameError::Closed),
            Err(e) => return Err(FrameError::Io(e.into())),
        }
    };
    if full == 0 {
        return Err(FrameError::Closed);
    }
    if full > n || full > MAX_MESSAGE {
        return Err(FrameError::Oversized(full));
    }
    serde_json::from_slice(&buf[..n])
        .map_err(|e| FrameError::Malformed(tickpack_sys::text::escape(&e.to_string(), 200)))
}

#[cfg(test)]
mod tests {
    use super::*;

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
