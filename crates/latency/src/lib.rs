//! `tickpack latency`: what each isolation path adds to a UDP round trip.
//!
//! The case study's key figure compared request/response latency for 64,
//! 256 and 1024-byte packets natively, through the software switch, and
//! through per-VM hardware queues. This crate measures the same thing for
//! the paths `tickpack host` can put a game server behind:
//!
//! - `native`: 127.0.0.1 in the root namespace (the baseline);
//! - `veth`: a routed veth pair per server;
//! - `bridge`: veth pairs on one software bridge (the software switch);
//! - `macvlan`: macvlan children that bypass the bridge;
//! - `ipvlan`: where the kernel has it (else reported as unavailable, with
//!   the kernel's reason, and the run goes on).
//!
//! Per path, `streams` echo servers (one per network namespace, each on
//! `instance_addr:`[`settings::ECHO_PORT`]; native: that many ports on 127.0.0.1) answer
//! `streams` closed-loop client streams in the root namespace. Two modes
//! are reported separately: `blocking` (what a normal server sees) and
//! `busy` (busy polling on both ends: the path's own cost); see
//! [`measure`] for the threads and cores of each, [`echo`] for where the
//! echo sockets live.
//!
//! # Order of calls
//!
//! [`Settings`] → [`Settings::validate`] → [`run`], which builds every
//! path ([`paths`], with `tickpack-host`'s netpath), measures every
//! (path, size, mode) once per round in rotated order ([`schedule`]),
//! hands the document to the [`Observer`] after every round (so a crash or
//! Ctrl-C keeps what finished), removes every path, and returns the
//! [`LatencyResult`] (rows built by [`result::rows`]; HTML by
//! [`html::render`], terminal table by [`LatencyResult::table`]).
//!
//! # Safety of the traffic
//!
//! Traffic goes only to 127.0.0.1 and to addresses inside namespaces this
//! crate created; before every measurement each target's route is checked
//! (`ip route get`) to leave through this path's own `tp...` links, and
//! netpath's `unreachable` guard route catches anything else. Every loop is
//! bounded in time; a set stop flag ends a measurement at once; every path
//! is removed on return, on error and on unwinding.
//!
//! # What it does not do
//!
//! It prints nothing, installs no signal handler and picks no exit code
//! (the `tickpack` binary does). It does not run the game protocol (see
//! `tickpack ping` for that); the payload is a 16-byte header and padding.

pub mod echo;
pub mod html;
pub mod measure;
pub mod paths;
pub mod result;
pub mod settings;

use std::io;
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use tickpack_host::netpath::NetError;
use tickpack_report::system::SystemInfo;
use tickpack_sys::is_root;

pub use measure::{measure, MeasureOpts, Measurement};
pub use paths::{Built, BuiltPath, PathInfo, Unavailable};
pub use result::{LatencyResult, Row, LATENCY_SCHEMA};
pub use settings::{schedule, Mode, PathName, Settings, SizeSpec, Slot};

/// Everything that can go wrong; each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error("bad settings: {0}")]
    Config(String),
    #[error("the {paths} path(s) need network namespaces, which needs root: rerun as root (sudo), or measure only `--paths native`")]
    NotRoot { paths: String },
    #[error("{path} path: {source}")]
    Net {
        path: PathName,
        #[source]
        source: NetError,
    },
    #[error("cannot enter network namespace {}: {source}", .netns.display())]
    Netns {
        netns: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot bind the echo socket {addr}{}: {source}", .netns.as_ref().map_or(String::new(), |n| format!(" in {}", n.display())))]
    Bind {
        addr: SocketAddrV4,
        netns: Option<PathBuf>,
        #[source]
        source: io::Error,
    },
    #[error("cannot pin a thread: {0}")]
    Pin(#[source] tickpack_net::NetError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}, {size}, {mode}: none of {sent} requests was answered: the echo servers are unreachable on this path")]
    NoReplies {
        path: PathName,
        size: SizeSpec,
        mode: Mode,
        sent: u64,
    },
    #[error("removing the paths left something behind: {}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Teardown(Vec<LatencyError>),
}

impl LatencyError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        LatencyError::Io {
            what: what.into(),
            source,
        }
    }

    /// Whether the error is about isolation (root, namespaces, links,
    /// routes) rather than the settings or the measurement.
    pub fn is_isolation(&self) -> bool {
        matches!(
            self,
            LatencyError::NotRoot { .. }
                | LatencyError::Net { .. }
                | LatencyError::Netns { .. }
                | LatencyError::Bind { netns: Some(_), .. }
                | LatencyError::Teardown(_)
        )
    }
}

/// Progress, for the binary to show.
pub trait Observer {
    /// A path is built and its echo servers are bound.
    fn path_ready(&mut self, _info: &PathInfo) {}
    /// A path cannot be built on this machine.
    fn path_unavailable(&mut self, _u: &Unavailable) {}
    /// Measurement `done` of `total` finished.
    fn measured(&mut self, _done: usize, _total: usize, _path: PathName, _m: &Measurement) {}
    /// After every round and at the end, with everything so far.
    fn result(&mut self, _doc: &LatencyResult) {}
}

/// An [`Observer`] that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

/// Builds every path, measures, removes every path; see the crate docs.
/// When `stop` is set (Ctrl-C), the measurement in progress is dropped,
/// the paths are removed, and the result so far comes back with
/// `complete: false`.
pub fn run(
    s: &Settings,
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Result<LatencyResult, LatencyError> {
    s.validate()?;
    if s.needs_namespaces() && !is_root() {
        let paths: Vec<&str> = s
            .paths
            .iter()
            .filter(|p| **p != PathName::Native)
            .map(|p| p.as_str())
            .collect();
        return Err(LatencyError::NotRoot {
            paths: paths.join(", "),
        });
    }
    let mut doc = LatencyResult {
        schema: LATENCY_SCHEMA.into(),
        tickpack_version: env!("CARGO_PKG_VERSION").into(),
        complete: false,
        system: SystemInfo::collect(),
        settings: result::SettingsDoc::new(s),
        cores: result::Cores::new(s),
        load: result::Load {
            before: result::LoadAvg::read(),
            after: None,
        },
        paths: Vec::new(),
        unavailable: Vec::new(),
        results: Vec::new(),
    };

    // Dropping `built` (on any early return) removes every path.
    let mut built: Vec<BuiltPath> = Vec::new();
    for &p in &s.paths {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match paths::build(p, s)? {
            Built::Ready(b) => {
                obs.path_ready(&b.info);
                doc.paths.push(b.info.clone());
                built.push(*b);
            }
            Built::Unavailable(u) => {
                obs.path_unavailable(&u);
                doc.unavailable.push(u);
            }
        }
    }
    let measured_paths: Vec<PathName> = built.iter().map(|b| b.path()).collect();
    let outcome = measure_all(s, &built, &measured_paths, stop, obs, &mut doc);

    let mut failures = Vec::new();
    for b in built {
        if let Err(e) = b.teardown() {
            failures.push(e);
        }
    }
    doc.load.after = result::LoadAvg::read();
    let finished = outcome?;
    doc.complete = finished && !stop.load(Ordering::Relaxed);
    obs.result(&doc);
    if !failures.is_empty() {
        return Err(LatencyError::Teardown(failures));
    }
    Ok(doc)
}

/// The rounds. Returns whether every measurement ran.
fn measure_all(
    s: &Settings,
    built: &[BuiltPath],
    measured_paths: &[PathName],
    stop: &AtomicBool,
    obs: &mut dyn Observer,
    doc: &mut LatencyResult,
) -> Result<bool, LatencyError> {
    let slots = schedule(s.rounds, built.len(), s.sizes.len(), s.modes.len());
    let opts = MeasureOpts {
        warmup: s.warmup,
        duration: s.duration,
        timeout: s.timeout,
        client_cpu: s.client_cpu,
        echo_cpu: s.echo_cpu,
    };
    let mut samples: Vec<result::Sample> = Vec::new();
    let mut finished = true;
    for (i, slot) in slots.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            finished = false;
            break;
        }
        let b = &built[slot.path];
        let (size, mode) = (s.sizes[slot.size], s.modes[slot.mode]);
        b.check_routes()?;
        let m = measure(&b.echo, size, mode, &opts, stop)?;
        if stop.load(Ordering::Relaxed) {
            // Cut short: not a measurement.
            finished = false;
            break;
        }
        if m.histogram.is_empty() && m.sent > 0 {
            return Err(LatencyError::NoReplies {
                path: b.path(),
                size,
                mode,
                sent: m.sent,
            });
        }
        obs.measured(i + 1, slots.len(), b.path(), &m);
        samples.push(result::Sample {
            path: b.path(),
            round: slot.round,
            m,
        });
        let round_done = slots.get(i + 1).is_none_or(|n| n.round != slot.round);
        if round_done {
            doc.results = result::rows(measured_paths, &s.sizes, &s.modes, &samples);
            obs.result(doc);
        }
    }
    doc.results = result::rows(measured_paths, &s.sizes, &s.modes, &samples);
    Ok(finished)
}
