//! tickpack's result schema: what every measuring command writes, and the
//! helpers that keep results recomputable.
//!
//! Every document carries a `schema` string and the tickpack version; every
//! latency summary comes with its full HdrHistogram (V2 compressed, base64)
//! so that runs can be merged and percentiles recomputed later
//! ([`encode_histogram`], [`decode_histogram`], [`Percentiles::from_histogram`]).
//!
//! Documents are written with [`write_json_atomic`]: a temp file in the same
//! directory, then a rename, so a result file is valid JSON at every moment.
//!
//! This crate depends on nothing else of tickpack's, so tools that only read
//! results need nothing more.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub mod bench;
pub mod comparison;
pub mod estimate;
pub mod figures;
pub mod game_settings;
pub mod headline;
pub mod html;
pub mod judged;
pub mod machine;
pub mod merge;
pub mod numbers;
pub mod power;
pub mod probe;
pub mod qos;
pub mod spread;
pub mod step_row;
pub mod system;
pub mod tco;
pub mod text;
pub mod tile;
pub mod verdict;
pub mod windows;
pub mod words;

pub use windows::{Joins, PlayersWindow, WindowHistograms};

/// Schema id of `tickpack players --json`.
pub const PLAYERS_SCHEMA: &str = "tickpack.players/1";

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("histogram does not deserialize: {0:?}")]
    Histogram(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot serialize result: {0}")]
    Json(#[from] serde_json::Error),
}

/// A latency (or duration) summary in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
    pub count: u64,
}

impl Percentiles {
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: (h.mean() * 10.0).round() / 10.0,
            count: h.len(),
        }
    }
}

/// A histogram of microseconds wide enough for any latency we measure
/// (1 us to 60 s, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("static bounds are valid")
}

/// Records `v` (clamped into the histogram's range).
pub fn record(h: &mut Histogram<u64>, v: u64) {
    h.saturating_record(v.max(1));
}

/// HdrHistogram V2 compressed, base64 (standard alphabet): the format other
/// HdrHistogram implementations read.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serializing to memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, ReportError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s.trim())?;
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| ReportError::Histogram(format!("{e:?}")))
}

/// Writes `value` as pretty JSON to `path` atomically (temp file + rename).
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), ReportError> {
    let mut body = serde_json::to_vec_pretty(value)?;
    body.push(b'\n');
    write_atomic(path, &body)
}

/// Writes `body` to `path` atomically: a temp file in the same directory,
/// synced, then renamed over `path`, so a reader sees the old file or the
/// whole new one, never a part. The temp file is removed if writing fails.
pub fn write_atomic(path: &Path, body: &[u8]) -> Result<(), ReportError> {
    let werr = |source| ReportError::Write {
        path: path.display().to_string(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(body)?;
        f.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed.map_err(werr)
}

/// Counters of snapshots, against the tick schedule (docs/methodology.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SnapshotCounts {
    /// Every server tick of each player's measured span, whatever arrived,
    /// summed over players: `received + lost`.
    pub expected: u64,
    pub received: u64,
    /// Ticks of the span with no snapshot: tick numbers never seen (skipped
    /// ticks leave gaps), time without a server, a player never connected.
    pub lost: u64,
}

/// Counters of commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommandCounts {
    /// Commands due in the span and sent.
    pub sent: u64,
    /// Reflected by a snapshot within the loss deadline (latency recorded).
    pub reflected: u64,
    /// Due in the span and not reflected within the loss deadline, including
    /// those due while the player had no connection (never sent):
    /// `reflected + lost` is every command the schedule made due.
    pub lost: u64,
}

impl CommandCounts {
    /// Every command the schedule made due in the span.
    pub fn due(&self) -> u64 {
        self.reflected + self.lost
    }
}

/// Stretches of at least 200 ms without a snapshot, over all players.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Outages {
    pub count: u64,
    /// Summed over players (microseconds).
    pub total_us: u64,
    /// The longest of one player (microseconds).
    pub longest_us: u64,
}

/// The serialized histograms behind the summaries of a players run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlayersHistograms {
    pub transaction_latency_us: String,
    pub rtt_us: String,
    pub server_frame_us: String,
    pub tick_lateness_us: String,
    pub snapshot_jitter_us: String,
    /// The servers' own ping per player (empty where the protocol has none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_ping_us: String,
    /// Query round trips of a bench step run with `--probe` (empty otherwise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query_latency_us: String,
    /// How long the servers' threads waited runnable for a CPU, per thread
    /// and 100 ms interval (a bench step; empty otherwise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_delay_us: String,
}

/// What emulated players measured against servers: the figures of
/// `tickpack players --json` and of every bench step
/// ([`bench::Step`]), flattened into both documents.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Measurements {
    /// From the time a command was due to the first snapshot reflecting it.
    pub transaction_latency_us: Percentiles,
    /// Ping round trips, from the time the ping was due.
    pub rtt_us: Percentiles,
    /// Server processing time per tick, as the servers report it.
    pub server_frame_us: Percentiles,
    /// How late server ticks started, as the servers report it.
    pub tick_lateness_us: Percentiles,
    /// |snapshot inter-arrival - tick interval|.
    pub snapshot_jitter_us: Percentiles,
    pub snapshots: SnapshotCounts,
    pub commands: CommandCounts,
    /// Time without snapshots; any outage is a failure of the run.
    #[serde(default)]
    pub outages: Outages,
    /// Handshakes players completed after their first (server restarts,
    /// silences).
    #[serde(default)]
    pub reconnects: u64,
    /// The servers' own ping for the players, where the game's protocol
    /// carries it (Quake III's `playerState.ping`: the server's average of
    /// acknowledged minus sent over its last 32 snapshots, in whole
    /// milliseconds of its frame clock). The referee for `rtt_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ping_us: Option<Percentiles>,
}

/// What the players sent and received over the measured window (UDP
/// payload bytes, without IP and UDP headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Traffic {
    pub datagrams_out: u64,
    pub bytes_out: u64,
    pub datagrams_in: u64,
    pub bytes_in: u64,
}

impl Traffic {
    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &Traffic) {
        self.datagrams_out += o.datagrams_out;
        self.bytes_out += o.bytes_out;
        self.datagrams_in += o.datagrams_in;
        self.bytes_in += o.bytes_in;
    }
}

/// One emulated player beside what its server said of it: the real server
/// as referee (Quake III servers report a ping per client in `getstatus`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RefereeRow {
    pub server: String,
    pub player: String,
    /// Median of the player's own RTT samples (µs).
    pub rtt_us_median: u64,
    /// Median of the player's transaction latencies (µs).
    pub transaction_us_median: u64,
    /// Median of the pings the server reported for it (µs; whole ms).
    pub server_ping_us_median: Option<u64>,
}

/// The game of a result written before results named their game: every
/// such run was of tickpack's own server, whose definition file gives it
/// this name. A fact of the old schema, read only by serde.
pub const GAME_OF_OLDER_RESULTS: &str = "reference";

pub(crate) fn game_of_older_results() -> String {
    GAME_OF_OLDER_RESULTS.into()
}

pub(crate) fn is_game_of_older_results(game: &str) -> bool {
    game == GAME_OF_OLDER_RESULTS
}

/// The figures read as the document's own (`r.rtt_us`), as in the JSON.
impl std::ops::Deref for PlayersResult {
    type Target = Measurements;
    fn deref(&self) -> &Measurements {
        &self.measured
    }
}

/// The document `tickpack players --json` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayersResult {
    pub schema: String,
    pub tickpack_version: String,
    /// The game the players spoke (its definition's name); results from
    /// before it was recorded read as [`GAME_OF_OLDER_RESULTS`].
    #[serde(default = "game_of_older_results")]
    pub game: String,
    pub system: system::SystemInfo,
    pub targets: Vec<String>,
    pub players: u32,
    pub connected: u32,
    pub cmd_rate_hz: f64,
    /// Tick rate the servers announced; `None` (written `0`) if no player
    /// ever learned it.
    #[serde(with = "tickpack_units::tick_rate::zero_is_none")]
    pub tick_hz: Option<tickpack_units::TickRate>,
    /// Seconds measured: the planned duration, or less if interrupted.
    pub duration_s: f64,
    pub warmup_s: f64,
    /// The run was interrupted (Ctrl-C, SIGTERM) before its planned end;
    /// everything up to the interruption was still judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// CPUs the load generator was pinned to (empty: not pinned).
    pub load_generator_cpus: Vec<usize>,
    pub load_generator_threads: u32,
    pub load_generator_cpu_s: f64,
    /// How the load generator moved datagrams: `ring` (one io_uring per
    /// thread) or `epoll`; empty in results written before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub load_generator_io: String,
    /// What the players measured (flattened: the fields sit at this level).
    #[serde(flatten)]
    pub measured: Measurements,
    /// A command not reflected this long after it was due is lost (seconds).
    #[serde(default)]
    pub loss_deadline_s: f64,
    /// Datagrams the players could not decode or apply.
    pub decode_errors: u64,
    /// Problems per target that a person should see (refused, unreachable...).
    pub errors: Vec<String>,
    pub histograms: PlayersHistograms,
    /// Datagrams and payload bytes over the measured window.
    #[serde(default)]
    pub traffic: Traffic,
    /// Per player, our figures beside the server's own ping (games whose
    /// servers report one; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub referee: Vec<RefereeRow>,
    /// The runs this result was merged from (`tickpack report merge`), one
    /// row each; absent for a single run. See [`merge`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<merge::MergedSource>,
    /// How the players' joins went (their first, and each of a presence
    /// plan's); absent in results from before joins were counted.
    #[serde(default, skip_serializing_if = "Joins::is_empty")]
    pub joins: Joins,
    /// The length of [`PlayersResult::windows`] (seconds); absent when the
    /// run kept no windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
    /// The measured span cut into windows of `window_s`, in order, each
    /// with its own figures ([`windows`]); empty when none were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<PlayersWindow>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_survive_encoding_and_merge() {
        let mut a = new_histogram();
        let mut b = new_histogram();
        for v in 1..=1000 {
            record(&mut a, v);
            record(&mut b, v * 10);
        }
        let mut merged = decode_histogram(&encode_histogram(&a)).unwrap();
        assert_eq!(
            Percentiles::from_histogram(&merged),
            Percentiles::from_histogram(&a)
        );
        merged
            .add(decode_histogram(&encode_histogram(&b)).unwrap())
            .unwrap();
        assert_eq!(merged.len(), 2000);
        assert!(merged.value_at_quantile(0.99) > 9_000);
        assert!(decode_histogram("not base64!").is_err());
    }

    #[test]
    fn a_failed_atomic_write_leaves_no_temp_file() {
        let dir = std::env::temp_dir().join(format!("tp-atomic-fail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("taken/inner")).unwrap();
        // Renaming a file over a non-empty directory fails.
        assert!(write_atomic(&dir.join("taken"), b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(names, vec![std::ffi::OsString::from("taken")]);
    }

    #[test]
    fn atomic_write_leaves_only_the_file() {
        let dir = std::env::temp_dir().join(format!("tp-report-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        write_json_atomic(&path, &serde_json::json!({"a": 1})).unwrap();
        write_json_atomic(&path, &serde_json::json!({"a": 2})).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["a"], 2);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "temp file left behind"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The HTML pages (`report`, `bench`, `latency --html`) were written in
    /// place, so a failed write left half a page; now they go through
    /// `write_atomic`, which must not leave its temp file behind either.
    #[test]
    fn pages_written_in_place_could_be_half_written_now_a_failed_write_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("tp-report-atomic-{}", std::process::id()));
        let target = dir.join("page.html");
        std::fs::create_dir_all(target.join("inside")).unwrap();
        // The rename onto a non-empty directory fails after the temp file
        // was written.
        assert!(write_atomic(&target, b"<html>").is_err());
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["page.html"], "temp file left behind");
        assert!(target.join("inside").is_dir(), "the old entry is untouched");
        let file = dir.join("r.html");
        write_atomic(&file, b"old").unwrap();
        write_atomic(&file, b"new page").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"new page");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// docs/agones.md sizes result files from this bound.
    #[test]
    fn a_histogram_with_every_counter_used_encodes_to_under_64_kb() {
        let mut h = new_histogram();
        assert_eq!(h.distinct_values(), 17_408);
        let (mut v, mut i) = (1u64, 0u64);
        while v < 60_000_000 {
            h.record_n(v, 1_000_000 + (i * 7919) % 100_000).unwrap();
            i += 1;
            v = h.next_non_equivalent(v);
        }
        assert!(i > 17_000, "{i} buckets used");
        let len = encode_histogram(&h).len();
        assert!((30_000..64_000).contains(&len), "{len} B");
    }
}
