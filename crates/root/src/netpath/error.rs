//! The one error type of network path set-up, checks and cleanup: each
//! variant names the step and the object.

use std::net::Ipv4Addr;
use std::time::Duration;

use super::{Ipv4Net, NetKind, MAX_LINK_NAME, PREFIX};

/// Network path set-up failures; each names the step and the object.
/// `Command`, `Spawn`, `Timeout` and `NoNft` come from running `nft`;
/// `Netlink` and `Unsupported` from requests to the kernel.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("unknown network path kind {0:?}: expected veth, bridge, macvlan or ipvlan")]
    UnknownKind(String),
    #[error("invalid address range {text:?}: {reason}")]
    InvalidRange { text: String, reason: String },
    #[error("address range {range} has room for {capacity} {kind} instance ids (0..{capacity}); instance {id} does not fit: use a wider range")]
    RangeTooSmall {
        range: Ipv4Net,
        kind: NetKind,
        capacity: u32,
        id: u32,
    },
    #[error("invalid host name {name:?}: {reason}")]
    InvalidHostName { name: String, reason: String },
    #[error("host {host}, instance {id}: link name {link:?} is longer than {MAX_LINK_NAME} bytes (IFNAMSIZ); use a shorter host name or a smaller id")]
    NameTooLong { host: String, id: u32, link: String },
    #[error("host {host}: instance {id} is already set up (or listed twice)")]
    DuplicateInstance { host: String, id: u32 },
    #[error("host {host} has no instance {id}")]
    NoSuchInstance { host: String, id: u32 },
    #[error("{what} {name:?} already exists: a leftover (remove it with cleanup_prefix) or another host with the same name")]
    NameInUse { what: &'static str, name: String },
    #[error("address range {range} overlaps the root namespace route `{route}`: pick another range, or remove the leftover")]
    RangeInUse { range: Ipv4Net, route: String },
    /// A program (`nft`) that ran and failed.
    #[error("{step}: `{command}` failed ({status}): {stderr}")]
    Command {
        step: String,
        command: String,
        status: String,
        stderr: String,
    },
    #[error("the instance firewall needs `nft` (Debian package nftables; scripts/setup.sh installs it): could not run `{command}`: {source}")]
    NoNft {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{step}: could not run `{command}`: {source}")]
    Spawn {
        step: String,
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{step}: `{command}` did not finish within {timeout:?} and was killed")]
    Timeout {
        step: String,
        command: String,
        timeout: Duration,
    },
    /// A netlink request or namespace file operation the kernel refused
    /// (`source` carries its errno) or did not answer in time.
    #[error("{step}: `{request}` failed: {source}")]
    Netlink {
        step: String,
        /// The request in `ip`'s words (`link add name tph1v1 type veth
        /// peer name eth0 netns tph1-1`), so an operator can retry it.
        request: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{kind} links are not supported by this kernel: `{request}` was refused: {source}")]
    Unsupported {
        kind: NetKind,
        request: String,
        #[source]
        source: std::io::Error,
    },
    #[error("traffic to {addr} would not stay on tickpack links: {reason}")]
    RouteNotOurs { addr: Ipv4Addr, reason: String },
    #[error("refusing to remove {name:?}: not something this module creates (names start with `{PREFIX}`, routes are `unreachable RANGE metric N`)")]
    ForeignName { name: String },
    #[error("cleanup left {} item(s) behind: {}", failures.len(), failures.join("; "))]
    Cleanup { failures: Vec<String> },
    #[error("{error}; removing what was already created also failed: {rollback}")]
    Rollback {
        error: Box<NetError>,
        rollback: Box<NetError>,
    },
}

impl NetError {
    /// The errno the kernel refused a request with, if that is the error.
    pub fn errno(&self) -> Option<i32> {
        match self {
            NetError::Netlink { source, .. } | NetError::Unsupported { source, .. } => {
                source.raw_os_error()
            }
            _ => None,
        }
    }
}
