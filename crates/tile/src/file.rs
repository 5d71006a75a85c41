//! The tile file as written: TOML, every key optional but a member's
//! `game`, unknown keys refused. [`crate::Tile::parse`] reads it into
//! these plain values, then checks and resolves them into a
//! [`crate::Tile`]. docs/tiles.md is the annotated format.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The whole file: tile-level keys, then one `[[member]]` per game.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TileFile {
    /// One line for the report.
    pub description: Option<String>,
    /// The seed of every server's joins, leaves and phases.
    pub seed: Option<u64>,
    /// Judging windows, seconds.
    pub window_s: Option<f64>,
    /// The step, seconds; absent: as long as the curves need.
    pub step_s: Option<f64>,
    /// The envelope every member with players follows: `steady`,
    /// `evening` or `points`.
    pub curve: Option<CurveName>,
    /// With `evening`: 1..=3 (default 2).
    pub peak_to_mean: Option<f64>,
    /// With `points`: `[[time, share], ...]`, each 0..=1.
    pub points: Option<Vec<(f64, f64)>>,
    /// Every server's rounds, map changes and sessions in step.
    pub aligned: Option<bool>,
    #[serde(default, rename = "member")]
    pub members: Vec<MemberFile>,
}

/// The envelope's keys, at the tile's level or a member's.
#[derive(Debug, Clone, Default)]
pub(crate) struct EnvelopeKeys {
    pub curve: Option<CurveName>,
    pub peak_to_mean: Option<f64>,
    pub points: Option<Vec<(f64, f64)>>,
}

impl EnvelopeKeys {
    pub fn is_empty(&self) -> bool {
        self.curve.is_none() && self.peak_to_mean.is_none() && self.points.is_none()
    }
}

impl TileFile {
    pub fn envelope(&self) -> EnvelopeKeys {
        EnvelopeKeys {
            curve: self.curve,
            peak_to_mean: self.peak_to_mean,
            points: self.points.clone(),
        }
    }
}

impl MemberFile {
    pub fn envelope(&self) -> EnvelopeKeys {
        EnvelopeKeys {
            curve: self.curve,
            peak_to_mean: self.peak_to_mean,
            points: self.points.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CurveName {
    Steady,
    Evening,
    Points,
}

/// One `[[member]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemberFile {
    /// A built-in game's name or a definition file's path (relative to
    /// the tile file's directory).
    pub game: String,
    /// What results call it; absent: the game's name.
    pub name: Option<String>,
    /// Servers of it per tile.
    pub count: Option<i64>,
    /// Emulated players per server (the curve's seats).
    pub players: Option<i64>,
    /// Server-side bots per server.
    pub bots: Option<i64>,
    /// An idle lobby server: no players, no bots, no load; it only
    /// answers queries.
    #[serde(default)]
    pub idle: bool,
    pub tick_hz: Option<i64>,
    /// The game's variables (`[member.set]`, as `--set`).
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    pub load: Option<LoadFile>,
    pub qos: Option<QosFile>,
    /// Its own envelope instead of the tile's (members with players).
    pub curve: Option<CurveName>,
    pub peak_to_mean: Option<f64>,
    pub points: Option<Vec<(f64, f64)>>,
    /// Its own alignment instead of the tile's.
    pub aligned: Option<bool>,
    pub rounds: Option<RoundsFile>,
    pub churn: Option<ChurnFile>,
}

/// `[member.load]`: a load command of the user's (as `[load]` in a game
/// definition).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoadFile {
    pub command: String,
    pub players: Option<i64>,
}

/// `[member.qos]`: limits other than the game's defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct QosFile {
    pub p99_ms: Option<f64>,
    pub relative: Option<f64>,
    pub tick_lateness_ms: Option<f64>,
    pub loss_percent: Option<f64>,
    pub frame_budget: Option<f64>,
    pub query_p99_ms: Option<f64>,
    pub run_delay_ms: Option<f64>,
    /// A join slower than this (first packet to first snapshot) fails.
    pub join_ms: Option<f64>,
}

/// `[member.rounds]`: times in the game's seconds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RoundsFile {
    pub round_s: Option<f64>,
    pub freeze_s: Option<f64>,
    pub map_every: Option<i64>,
    pub compress: Option<f64>,
}

/// `[member.churn]`: times in the game's seconds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChurnFile {
    pub shape: Option<f64>,
    pub scale_s: Option<f64>,
    pub gap_s: Option<f64>,
    pub compress: Option<f64>,
}
