//! The players and the prober in a process of their own, unprivileged:
//! every datagram a hosted server sends them is parsed by a process that
//! holds no root, no capability and nothing of ours but a pipe.
//!
//! A bench step runs as root (it makes namespaces, links, cgroups), and
//! its players and prober read what the hosted servers send: datagrams of
//! programs tickpack did not write. So each players run and each probe run
//! is a `tickpack __readers` child ([`serve`]), started as the host's
//! readers user ([`tickpack_host::supervisor::Supervisor::readers_user`],
//! a uid of the host's own block that no instance runs as) by
//! [`tickpack_sys::unprivileged::as_user`]. The root side only reads the
//! child's answers, each a bounded JSON line of a typed message.
//!
//! One run, over the child's stdin and stdout:
//! 1. the bench writes the [`Order`] (schema [`SCHEMA`], the [`Job`]);
//! 2. the child checks it, says [`Said::Ready`] (or ends with an error);
//! 3. the bench writes `go` when its step starts ([`Reader::run`]): the
//!    child's clock starts then, so its windows line up with the host's
//!    samples as the threads' did;
//! 4. while it runs the child says [`Said::Live`] (the players' recent
//!    transactions, which the QoS guard reads) every 100 ms;
//! 5. it ends with [`Said::Done`] and its result; `stop` (Ctrl-C) or the
//!    pipe's end stops it early, with what it measured so far.
//!
//! Whatever the child says is untrusted: a line over [`MAX_LINE`] bytes,
//! a message that does not parse, or a second answer ends it, as does its
//! silence past [`START_TIMEOUT`] before `Ready`. It runs in a process
//! group of its own (the terminal's Ctrl-C reaches the bench, which stops
//! it), and a bench killed with -9 takes it along (its death signal).

mod serve;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tickpack_players::{PlayersConfig, PlayersError};
use tickpack_probe::ProbeConfig;
use tickpack_report::probe::ProbeResult;
use tickpack_report::{Percentiles, PlayersResult};
use tickpack_sys::unprivileged::{self, User};

pub use serve::serve;

/// The schema of the messages between the bench and its readers.
pub const SCHEMA: &str = "tickpack.readers/1";
/// The longest line either side reads: a players result with its
/// histograms and windows is well under a megabyte.
pub const MAX_LINE: usize = 16 << 20;
/// How long a child may take to read its order and say it is ready.
pub const START_TIMEOUT: Duration = Duration::from_secs(if cfg!(test) { 1 } else { 10 });
/// How long a stopped child may take to hand over what it measured.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How often a players child hands over its recent transactions.
pub const LIVE_PERIOD: Duration = Duration::from_millis(100);
/// The hidden subcommand the child runs.
pub const SUBCOMMAND: &str = "__readers";

/// What a child is asked to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Job {
    /// A players run ([`tickpack_players::run`]).
    Players(PlayersConfig),
    /// A probe run ([`tickpack_probe::run`]).
    Probe(ProbeConfig),
    /// One probe run per window, each from its window's start, counted
    /// from `go` plus `span_offset` (a tile step's windows).
    ProbeWindows {
        cfg: ProbeConfig,
        windows: Vec<(Duration, Duration)>,
        span_offset: Duration,
    },
}

impl Job {
    /// Its name, also the child's argument (`ps` shows
    /// `tickpack __readers players`).
    pub fn name(&self) -> &'static str {
        match self {
            Job::Players(_) => "players",
            Job::Probe(_) => "probe",
            Job::ProbeWindows { .. } => "probe-windows",
        }
    }
}

/// The first line the bench writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Order {
    pub schema: String,
    pub job: Job,
}

/// What a child says, one JSON line each.
#[derive(Debug, Serialize, Deserialize)]
pub enum Said {
    Ready,
    /// The players' transactions since the last, a base64 HdrHistogram
    /// (V2, deflated); `None` when there were none.
    Live {
        recent: Option<String>,
    },
    Done(Done),
}

/// A child's result.
#[derive(Debug, Serialize, Deserialize)]
pub enum Done {
    Players(Box<Result<PlayersResult, PlayersError>>),
    Probe(Box<Result<ProbeResult, String>>),
    /// Each window's query round trips (`None`: nothing came back).
    ProbeWindows(Vec<Option<Percentiles>>),
}

/// A child that could not run or said what it may not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the unprivileged readers process (players, prober): {0}")]
pub struct ReaderError(pub String);

/// Reads one line of at most `max` bytes (without its newline); `None` at
/// the end of input. A longer line is an error, read no further.
pub fn read_line(r: &mut impl BufRead, max: usize) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    let n = r.take(max as u64 + 1).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > max {
        return Err(std::io::Error::other(format!("a line over {max} bytes")));
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| std::io::Error::other("a line that is not UTF-8"))
}

/// A started child, ready to run its job.
pub struct Reader {
    child: Child,
    stdin: Option<ChildStdin>,
    said: mpsc::Receiver<Result<Said, String>>,
}

impl Reader {
    /// Starts `exe __readers` as `user`, hands it `job` and waits for it
    /// to say it is ready (at most [`START_TIMEOUT`]).
    pub fn start(exe: &Path, user: User, job: Job) -> Result<Reader, ReaderError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| ReaderError(format!("{what}: {e}"));
        let mut cmd = unprivileged::command(exe, user);
        cmd.args([SUBCOMMAND, job.name()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            fail(
                &format!("starting {} as uid {}", exe.display(), user.uid),
                &e,
            )
        })?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let name = job.name();
        std::thread::Builder::new()
            .name("readers-stderr".into())
            .spawn(move || pass_on(stderr, name, &mut std::io::stderr()))
            .map_err(|e| fail("starting the stderr thread", &e))?;
        let (tx, said) = mpsc::channel();
        std::thread::Builder::new()
            .name("readers-said".into())
            .spawn(move || listen(stdout, &tx))
            .map_err(|e| fail("starting the listener thread", &e))?;
        let mut r = Reader {
            stdin: child.stdin.take(),
            child,
            said,
        };
        let order = Order {
            schema: SCHEMA.into(),
            job,
        };
        let line = serde_json::to_string(&order).map_err(|e| fail("writing the order", &e))?;
        r.send(&line)?;
        match r.said.recv_timeout(START_TIMEOUT) {
            Ok(Ok(Said::Ready)) => Ok(r),
            Ok(Ok(other)) => Err(ReaderError(format!(
                "said {} before it was ready",
                kind(&other)
            ))),
            Ok(Err(e)) => Err(ReaderError(e)),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(ReaderError(format!(
                "not ready within {} s",
                START_TIMEOUT.as_secs()
            ))),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(r.ended()),
        }
    }

    /// The child's PID (tests look at its threads).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, line: &str) -> Result<(), ReaderError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| ReaderError("its input is closed".into()))?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| ReaderError(format!("writing to it: {e}")))
    }

    /// Why the child's output ended without a result: how it exited (it
    /// gets a second to), else killed.
    fn ended(&mut self) -> ReaderError {
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(1);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.to_string(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => break "still running a second later: killed".into(),
            }
        };
        ReaderError(format!("ended without a result ({status})"))
    }

    /// Starts the job, hands its live figures to `live` while it runs and
    /// returns its result. Setting `stop` stops it early (it still
    /// answers with what it measured, within [`STOP_GRACE`]).
    pub fn run(
        mut self,
        stop: &AtomicBool,
        live: Option<&tickpack_players::Live>,
    ) -> Result<Done, ReaderError> {
        if self.send("go").is_err() {
            // Its input is closed: what it said wrong, if anything, says
            // why (its output ends soon after it did), read for a second
            // at most, whatever it keeps saying.
            let deadline = Instant::now() + Duration::from_secs(1);
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.said.recv_timeout(left) {
                    Ok(Err(e)) => return Err(ReaderError(e)),
                    Ok(Ok(_)) if !left.is_zero() => {}
                    _ => return Err(self.ended()),
                }
            }
        }
        let mut stopped_at: Option<Instant> = None;
        loop {
            if stopped_at.is_none() && stop.load(Ordering::Relaxed) {
                stopped_at = Some(Instant::now());
                // A child that already ended has nothing to stop.
                let _ = self.send("stop");
            }
            if stopped_at.is_some_and(|t| t.elapsed() > STOP_GRACE) {
                return Err(ReaderError(format!(
                    "no result within {} s of stop",
                    STOP_GRACE.as_secs()
                )));
            }
            match self.said.recv_timeout(Duration::from_millis(100)) {
                Ok(Ok(Said::Live { recent })) => {
                    let h = recent.map(|s| tickpack_report::decode_histogram(&s));
                    match (h, live) {
                        (Some(Ok(mut h)), Some(live)) => live.add_recent_transactions(&mut h),
                        (Some(Err(e)), _) => {
                            return Err(ReaderError(format!("sent a bad histogram: {e}")))
                        }
                        _ => {}
                    }
                }
                // Reaped in `drop`, killed first if it would not end: a
                // child that answers and then hangs holds nothing.
                Ok(Ok(Said::Done(done))) => return Ok(done),
                Ok(Ok(Said::Ready)) => return Err(ReaderError("said it was ready twice".into())),
                Ok(Err(e)) => return Err(ReaderError(e)),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(self.ended()),
            }
        }
    }
}

impl Drop for Reader {
    /// A reader not run to its end is killed, by its PID (ours), and
    /// reaped.
    fn drop(&mut self) {
        self.stdin = None;
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What a message is, for an error.
fn kind(s: &Said) -> &'static str {
    match s {
        Said::Ready => "ready",
        Said::Live { .. } => "live figures",
        Said::Done(_) => "its result",
    }
}

/// The most lines of a child's stderr passed on to ours.
const STDERR_LINES: usize = 20;

/// Passes the child's stderr on to `out` (ours): its first
/// [`STDERR_LINES`] lines, each escaped and capped (a terminal never gets
/// a control sequence from it); the rest is read and dropped.
fn pass_on(stderr: impl Read, job: &str, out: &mut impl Write) {
    let mut r = BufReader::new(stderr);
    let mut shown = 0;
    loop {
        match read_line(&mut r, 4096) {
            Ok(Some(line)) if shown < STDERR_LINES => {
                shown += 1;
                let _ = writeln!(
                    out,
                    "tickpack __readers {job}: {}",
                    tickpack_sys::text::escape(&line, 200)
                );
            }
            Ok(Some(_)) => {}
            // A line too long or not UTF-8 is dropped; the end of the
            // output, or a failed read, ends this.
            Err(e) if e.kind() == std::io::ErrorKind::Other => {}
            Err(_) | Ok(None) => return,
        }
    }
}

/// Reads the child's lines into `tx` until its output ends or a line is
/// bad (then the error is the last thing sent).
fn listen(stdout: impl Read, tx: &mpsc::Sender<Result<Said, String>>) {
    let mut r = BufReader::new(stdout);
    loop {
        let said = match read_line(&mut r, MAX_LINE) {
            Ok(None) => return,
            Ok(Some(line)) => serde_json::from_str::<Said>(&line).map_err(|e| {
                format!(
                    "said something that is not a message ({}): {}",
                    tickpack_sys::text::escape(&e.to_string(), 200),
                    tickpack_sys::text::escape(&line, 80)
                )
            }),
            Err(e) => Err(format!("said {e}")),
        };
        let bad = said.is_err();
        if tx.send(said).is_err() || bad {
            return;
        }
    }
}

/// Starts a step's players run; its failure is the players'.
pub fn start_players(
    exe: &Path,
    user: User,
    cfg: &PlayersConfig,
) -> Result<Reader, crate::BenchError> {
    Reader::start(exe, user, Job::Players(cfg.clone()))
        .map_err(|e| crate::BenchError::Players(PlayersError::Setup(e.to_string())))
}

/// Starts a step's probe job (one run, or a tile's windows); its failure
/// is the prober's.
pub fn start_probe(exe: &Path, user: User, job: Job) -> Result<Reader, crate::BenchError> {
    Reader::start(exe, user, job).map_err(|e| crate::BenchError::Probe(e.to_string()))
}

/// A players reader's result.
pub fn players_result(done: Result<Done, ReaderError>) -> Result<PlayersResult, PlayersError> {
    match done {
        Ok(Done::Players(r)) => *r,
        Ok(_) => Err(PlayersError::Internal(
            "the readers process answered another job".into(),
        )),
        Err(e) => Err(PlayersError::Setup(e.to_string())),
    }
}

/// A probe reader's result.
pub fn probe_result(done: Result<Done, ReaderError>) -> Result<ProbeResult, String> {
    match done {
        Ok(Done::Probe(r)) => *r,
        Ok(_) => Err("the readers process answered another job".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Every target's query round trips of a probe result merged (what the
/// prober's own `merged` gives in process): each target's histogram
/// decoded, within the prober's bounds.
pub fn merged_probe(r: &ProbeResult) -> Result<hdrhistogram::Histogram<u64>, ReaderError> {
    let mut all = tickpack_report::new_histogram();
    for t in &r.targets {
        if t.histogram.is_empty() {
            continue;
        }
        let h = tickpack_report::decode_histogram(&t.histogram)
            .map_err(|e| ReaderError(format!("sent a bad histogram: {e}")))?;
        all.add(&h)
            .map_err(|e| ReaderError(format!("sent a histogram out of bounds: {e:?}")))?;
    }
    Ok(all)
}

#[cfg(test)]
mod tests;
