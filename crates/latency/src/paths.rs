//! Building and removing the paths, with `tickpack-host`'s netpath: one
//! host per namespaced path (`<name>v`, `<name>b`, `<name>m`, `<name>i`),
//! each on its own `/24`, with one instance (namespace) per stream, ids
//! `1..=streams`. All paths exist at once so the rounds can interleave
//! them.
//!
//! A [`BuiltPath`] owns its [`HostNet`]: dropping it (an error, a panic,
//! Ctrl-C) removes the namespaces, links and guard route; so does
//! [`BuiltPath::teardown`], which reports what could not be removed. The
//! echo sockets are closed first: an open socket keeps its namespace (and
//! the veth inside it) alive after `ip netns del`.

use std::net::SocketAddrV4;

use serde::{Deserialize, Serialize};
use tickpack_host::netpath::{HostNet, NetError, ParentLink};

use crate::echo::EchoSet;
use crate::settings::{PathName, Settings};
use crate::LatencyError;

/// What was built for a path, for the result document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathInfo {
    pub path: PathName,
    /// The `tp...` host name of its namespaces and links; none for native.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The `/24` it uses; none for native.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    /// Where the echo servers listen, one per stream.
    pub echo_addresses: Vec<String>,
    /// The root-namespace links traffic leaves through (`ip route get`).
    pub devices: Vec<String>,
    /// For macvlan/ipvlan: the parent link (`dummy`, or a veth pair where
    /// the kernel has no dummy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// A path that could not be built on this machine, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unavailable {
    pub path: PathName,
    pub reason: String,
}

/// A path ready to measure. Field order matters: the echo sockets drop
/// before the network.
#[derive(Debug)]
pub struct BuiltPath {
    pub echo: EchoSet,
    net: Option<HostNet>,
    pub info: PathInfo,
}

/// The result of trying to build a path.
#[derive(Debug)]
pub enum Built {
    Ready(Box<BuiltPath>),
    Unavailable(Unavailable),
}

/// Builds `path` for `s.streams` echo servers. A kernel without the link
/// type gives [`Built::Unavailable`]; any other failure is an error, and
/// nothing is left behind either way.
pub fn build(path: PathName, s: &Settings) -> Result<Built, LatencyError> {
    let kind = match path {
        PathName::Native => {
            let echo = EchoSet::loopback(s.streams)?;
            let info = PathInfo {
                path,
                host: None,
                range: None,
                echo_addresses: echo.targets().iter().map(|a| a.to_string()).collect(),
                devices: vec!["lo".into()],
                parent: None,
            };
            return Ok(Built::Ready(Box::new(BuiltPath {
                echo,
                net: None,
                info,
            })));
        }
        PathName::Net(k) => k,
    };
    let host = s
        .host_name(path)
        .expect("namespaced paths have a host name");
    let plan = s.plan(kind)?;
    let ids: Vec<u32> = (1..=s.streams).collect();
    let net = match HostNet::setup(&host, kind, plan, &ids) {
        Ok(n) => n,
        Err(e @ NetError::Unsupported { .. }) => {
            return Ok(Built::Unavailable(Unavailable {
                path,
                reason: e.to_string(),
            }))
        }
        Err(source) => return Err(LatencyError::Net { path, source }),
    };
    // From here on, `net` removes everything if we return early.
    let binds: Vec<_> = ids
        .iter()
        .map(|&id| {
            (
                net.netns_path(id),
                SocketAddrV4::new(net.instance_addr(id), s.port),
            )
        })
        .collect();
    let mut devices = Vec::new();
    for (_, a) in &binds {
        let dev = net
            .check_route(*a.ip())
            .map_err(|source| LatencyError::Net { path, source })?;
        if !devices.contains(&dev) {
            devices.push(dev);
        }
    }
    let echo = EchoSet::in_namespaces(&binds)?;
    let parent = net.parent_link().map(|p| {
        match p {
            ParentLink::Dummy => "dummy",
            ParentLink::VethPair => "veth pair (this kernel has no dummy)",
        }
        .to_string()
    });
    let info = PathInfo {
        path,
        host: Some(format!("tp{host}")),
        range: Some(plan.range().to_string()),
        echo_addresses: binds.iter().map(|(_, a)| a.to_string()).collect(),
        devices,
        parent,
    };
    Ok(Built::Ready(Box::new(BuiltPath {
        echo,
        net: Some(net),
        info,
    })))
}

impl BuiltPath {
    pub fn path(&self) -> PathName {
        self.info.path
    }

    /// Fails unless every echo address is still reached through this
    /// path's own links (`ip route get`); call before sending. Loopback
    /// needs no check.
    pub fn check_routes(&self) -> Result<(), LatencyError> {
        if let Some(net) = &self.net {
            for a in self.echo.targets() {
                net.check_route(*a.ip())
                    .map_err(|source| LatencyError::Net {
                        path: self.info.path,
                        source,
                    })?;
            }
        }
        Ok(())
    }

    /// Closes the echo sockets, then removes the namespaces, links and
    /// guard route.
    pub fn teardown(self) -> Result<(), LatencyError> {
        let BuiltPath { echo, net, info } = self;
        drop(echo);
        match net {
            Some(n) => n.teardown().map_err(|source| LatencyError::Net {
                path: info.path,
                source,
            }),
            None => Ok(()),
        }
    }
}
