//! What `tickpack host status` shows, and the control socket that carries it.
//!
//! The supervisor listens on `RUN_DIR/control.sock` (a Unix socket). A
//! client writes one line, a [`ControlRequest`] (`status`, `down`,
//! `change-map N`), and reads one line of JSON back. `down` is answered
//! after everything has been removed; `change-map N` once the command is
//! sent (its answer shows in the status: [`ConsoleStatus`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A round trip summary, as `host status --json` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
    pub count: u64,
}

/// Lifecycle of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstanceState {
    Starting,
    Running,
    /// Running, but not answering health checks.
    Unresponsive,
    /// Exited; a restart is scheduled.
    Restarting,
    /// Crashed too often; given up.
    Failed,
    Stopped,
}

/// One row of `host status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceStatus {
    pub id: u32,
    /// ip:port players connect to.
    pub address: String,
    pub pid: Option<u32>,
    pub cpus: Vec<usize>,
    pub state: InstanceState,
    pub restarts: u32,
    /// CPU use over the last second, percent of one core.
    pub cpu_percent: Option<f64>,
    /// Tick lateness p99 the instance reports (microseconds).
    pub tick_p99_us: Option<u32>,
    /// Frame time p99 the instance reports (microseconds).
    pub frame_p99_us: Option<u32>,
    /// Players on the server: the reference server's stats, or the game
    /// query's count of humans and bots (`q3`: `clients`; 255 stands for
    /// 255 or more).
    pub players: Option<u8>,
    /// Bots among them, from the game query (`q3`: DarkPlaces' `bots`, or
    /// ioq3's `clients` minus `g_humanplayers`; `a2s`: its bots field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bots: Option<u8>,
    /// The bots its command asked for (its game's `{bots}`); `None`: not
    /// a game's command, or a game without bots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bots_asked: Option<u16>,
    /// The map the game query reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
    /// Round trips of the game queries (`q3`, `a2s`) since the host
    /// started, microseconds, from send to the kernel's receive stamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_latency_us: Option<LatencySummary>,
    pub memory_bytes: Option<u64>,
    pub memory_limit_bytes: Option<u64>,
    pub oom_kills: u64,
    /// Why it last exited, in words.
    pub last_exit: Option<String>,
    /// Its console (a game with `[rcon]`): the map changes asked and what
    /// the server answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub console: Option<ConsoleStatus>,
}

/// A map change sent to an instance's console.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapChangeSent {
    pub instance: u32,
    /// The map it goes to (the rotation's next).
    pub map: String,
    /// The console command sent.
    pub command: String,
}

/// A console command that finished, with what the server answered (its
/// text is the server's: escape it before printing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsoleOutcome {
    pub sent: MapChangeSent,
    #[serde(flatten)]
    pub outcome: tickpack_game::console::Outcome,
}

/// An instance's console: what was asked since its last start and what
/// came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsoleStatus {
    /// Map changes sent since the instance last started.
    pub map_changes: u32,
    /// The command waiting for its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<MapChangeSent>,
    /// The last command that finished (kept across restarts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<ConsoleOutcome>,
}

/// What a client asks the supervisor, one line each: `status`, `down`,
/// `change-map N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRequest {
    Status,
    Down,
    /// Change instance N's map to its rotation's next.
    ChangeMap {
        instance: u32,
    },
}

impl ControlRequest {
    /// The line a client writes (without its newline).
    pub fn line(&self) -> String {
        match self {
            ControlRequest::Status => "status".into(),
            ControlRequest::Down => "down".into(),
            ControlRequest::ChangeMap { instance } => format!("change-map {instance}"),
        }
    }

    /// A line a client wrote; the error names what is understood.
    pub fn parse(line: &str) -> Result<ControlRequest, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["status"] => Ok(ControlRequest::Status),
            ["down"] => Ok(ControlRequest::Down),
            ["change-map", n] => match n.parse::<u32>() {
                Ok(instance) if instance > 0 => Ok(ControlRequest::ChangeMap { instance }),
                _ => Err("change-map takes an instance number, 1 or more".into()),
            },
            _ => Err(format!(
                "unknown request {:?} (status, down or change-map N)",
                tickpack_sys::text::escape(line, tickpack_sys::text::SHORT)
            )),
        }
    }
}

/// The whole `host status --json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostStatus {
    pub schema: String,
    pub name: String,
    pub backend: String,
    pub net: Option<String>,
    pub placement: String,
    pub reserved_cpus: Vec<usize>,
    pub supervisor_pid: u32,
    pub uptime_s: f64,
    pub instances: Vec<InstanceStatus>,
    /// Recent events, newest last (restarts, OOM kills, give-ups, the
    /// guard's decisions), as typed records ([`crate::event::Event`]).
    pub events: Vec<crate::event::Event>,
    /// Batch work and the guard: state, signals, last decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<crate::guard::GuardStatus>,
}

pub const STATUS_SCHEMA: &str = "tickpack.host-status/2";

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("no host is running with run dir {dir} (no control socket there); start one with `tickpack host up`")]
    NotRunning { dir: String },
    #[error("the host at {dir} did not answer: {source}")]
    Io {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the host at {dir} answered something unexpected: {text}")]
    Bad { dir: String, text: String },
    #[error("the host at {dir} refused: {why}")]
    Refused { dir: String, why: String },
}

/// Sends one request to the supervisor of `run_dir` and returns its answer.
pub fn request(
    run_dir: &Path,
    req: ControlRequest,
    timeout: Duration,
) -> Result<String, ControlError> {
    let dir = run_dir.display().to_string();
    let sock = run_dir.join("control.sock");
    let mut s =
        UnixStream::connect(&sock).map_err(|_| ControlError::NotRunning { dir: dir.clone() })?;
    let io = |source| ControlError::Io {
        dir: dir.clone(),
        source,
    };
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    s.write_all(format!("{}\n", req.line()).as_bytes())
        .map_err(io)?;
    // One line, and never more than a status can be: whatever listens on
    // the socket may send anything.
    let mut line = vec![];
    BufReader::new(s)
        .take(MAX_ANSWER_BYTES + 1)
        .read_until(b'\n', &mut line)
        .map_err(io)?;
    if line.is_empty() {
        return Err(ControlError::Bad {
            dir,
            text: "(nothing)".into(),
        });
    }
    if line.len() as u64 > MAX_ANSWER_BYTES {
        return Err(ControlError::Bad {
            dir,
            text: format!("an answer longer than {MAX_ANSWER_BYTES} bytes"),
        });
    }
    String::from_utf8(line).map_err(|e| ControlError::Bad {
        dir,
        text: format!(
            "not UTF-8: {}",
            tickpack_sys::text::escape_bytes(e.as_bytes(), tickpack_sys::text::SHORT)
        ),
    })
}

/// The longest answer read from a control socket (a status of 250
/// instances with their events is far less).
pub const MAX_ANSWER_BYTES: u64 = 16 << 20;

/// Asks for the status.
pub fn query_status(run_dir: &Path) -> Result<HostStatus, ControlError> {
    let line = request(run_dir, ControlRequest::Status, Duration::from_secs(5))?;
    parse_answer(run_dir, &line)
}

/// Asks instance `instance` of the host at `run_dir` to change to its
/// rotation's next map; `Ok` once the command is sent.
pub fn change_map(run_dir: &Path, instance: u32) -> Result<MapChangeSent, ControlError> {
    let line = request(
        run_dir,
        ControlRequest::ChangeMap { instance },
        Duration::from_secs(5),
    )?;
    match parse_answer::<ControlAnswer>(run_dir, &line)? {
        ControlAnswer::Sent { sent } => Ok(sent),
        ControlAnswer::Error { error } => Err(ControlError::Refused {
            dir: run_dir.display().to_string(),
            why: tickpack_sys::text::escape(&error, tickpack_sys::text::EXCERPT),
        }),
    }
}

/// The supervisor's answer to `change-map N`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ControlAnswer {
    Sent { sent: MapChangeSent },
    Error { error: String },
}

fn parse_answer<T: serde::de::DeserializeOwned>(
    run_dir: &Path,
    line: &str,
) -> Result<T, ControlError> {
    // The answer is quoted escaped and cut: the socket may be anyone's.
    serde_json::from_str(line).map_err(|e| ControlError::Bad {
        dir: run_dir.display().to_string(),
        text: format!(
            "{e}: \"{}\"",
            tickpack_sys::text::escape(line.trim_end(), tickpack_sys::text::SHORT)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_requests_are_one_line_each_way() {
        for r in [
            ControlRequest::Status,
            ControlRequest::Down,
            ControlRequest::ChangeMap { instance: 12 },
        ] {
            assert_eq!(ControlRequest::parse(&r.line()), Ok(r));
        }
        assert_eq!(
            ControlRequest::ChangeMap { instance: 3 }.line(),
            "change-map 3"
        );
        for bad in [
            "change-map",
            "change-map 0",
            "change-map x",
            "map 1",
            "status now",
        ] {
            assert!(ControlRequest::parse(bad).is_err(), "{bad}");
        }
        let e = ControlRequest::parse("hello\x1b[2J").unwrap_err();
        assert!(e.contains("\\x1b") && !e.contains('\x1b'), "{e}");
    }
}
