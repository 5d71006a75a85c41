//! A tile: the games a host runs side by side, the unit a benchmark adds
//! until one game's players suffer (SPECvirt's tile of mixed workloads,
//! with its idle VM). One TOML file (`tiles/*.toml`; docs/tiles.md is
//! the annotated format) says, for each member game: which game (a
//! built-in name or a definition file), how many servers of it a tile
//! holds, what loads them (emulated players, server-side bots, a load
//! command, or nothing: an idle lobby that only answers queries), its own
//! QoS limits (the game's defaults unless set), and how its players come
//! and go over a step (a `tickpack_curve::Curve`: the host's envelope,
//! rounds and map changes, churn, aligned or not). At the tile's level:
//! the seed, the judging window, the step's length (else what the
//! curves need).
//!
//! [`Tile::parse`] reads a file's text and checks it whole, as a game
//! definition is checked: unknown keys, an unknown game, a curve above
//! 100 % of the slots, a window longer than the step, a count of 0 are
//! refused before anything runs, each as `FILE:LINE: what is wrong`
//! ([`TileError`]; the binary exits 2). [`load`] reads the file from its
//! path (the crate's only I/O, with the member's definition files,
//! relative to the tile's directory).
//!
//! Then: [`Tile::step_len`], [`Tile::windows`], and for each server of a
//! step [`Tile::timeline`] (its seats' spans and map changes);
//! [`Tile::variant`] gives `--compare load`'s three variants (every
//! player all the time, each server at its own phase, all aligned).
//!
//! Deliberately not here: running anything (the bench), the verdict (the
//! rule table in `tickpack_report::qos`, applied per member per window),
//! and the curves' arithmetic (`tickpack_curve`).

mod curve_keys;
mod file;
pub mod member;
pub mod qos;
pub mod read;

use std::time::Duration;

use tickpack_curve::{Compression, Timeline, MIN_WINDOW};
use tickpack_game::lines::line_of;
use tickpack_game::{DefError, GameDef, Source};

pub use member::{Kind, Member, MAX_COUNT};
pub use read::{load, MAX_TILE_BYTES};
pub use tickpack_curve::DEFAULT_WINDOW;

/// The seed when a tile sets none: every run of a tile file replays the
/// same joins and leaves unless told otherwise.
pub const DEFAULT_SEED: u64 = 1;
/// The step when neither the tile nor its curves say how long: six
/// windows.
pub const DEFAULT_STEP: Duration = Duration::from_secs(30);
/// The longest step a tile may set.
pub const MAX_STEP: Duration = Duration::from_secs(3600);
/// The most members a tile has: the bench gives each member a host of
/// its own, with an eighth of the run's address range.
pub const MAX_MEMBERS: usize = 8;
/// The most servers in one tile: a ladder runs 250 servers at most, so
/// it can add at least a second tile.
pub const MAX_TILE_SERVERS: u32 = 125;

/// A refused tile file: `FILE:LINE: what is wrong` (`FILE: what is wrong`
/// when the file as a whole is refused).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TileError {
    pub file: String,
    /// 1-based; 0 for the whole file.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for TileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file, self.message),
            n => write!(f, "{}:{n}: {}", self.file, self.message),
        }
    }
}

/// A checked tile.
#[derive(Debug, Clone, PartialEq)]
pub struct Tile {
    /// The file it came from, for messages and the report.
    pub file: String,
    pub description: Option<String>,
    /// The seed of every server's joins, leaves and phases.
    pub seed: u64,
    /// How long each judging window is.
    pub window: Duration,
    /// The step's length the file sets; `None`: [`Tile::step_len`].
    pub step: Option<Duration>,
    pub members: Vec<Member>,
}

/// `--compare load`'s variants of one tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Every player present all the time, no rounds, no churn: the
    /// static reservation (a bench without curves).
    Static,
    /// The curves, each server's rounds and sessions at its own moments.
    Phased,
    /// The curves, every server in step (the worst case).
    Aligned,
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::Static, Variant::Phased, Variant::Aligned];

    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Static => "static",
            Variant::Phased => "phased",
            Variant::Aligned => "aligned",
        }
    }
}

impl Tile {
    /// Reads and checks a tile file's text; `file` names it in errors,
    /// `games` finds a member's definition by its `game` (a built-in name
    /// or a path; [`load`] resolves paths against the file's directory).
    pub fn parse(
        file: &str,
        text: &str,
        mut games: impl FnMut(&str) -> Result<(GameDef, Source), DefError>,
    ) -> Result<Tile, TileError> {
        let err = |line: usize, message: String| TileError {
            file: file.to_string(),
            line,
            message,
        };
        let at = |path: &[String]| line_of(text, path);
        let key = |parts: &[&str]| -> Vec<String> { parts.iter().map(|p| p.to_string()).collect() };
        if text.len() as u64 > MAX_TILE_BYTES {
            return Err(err(
                1,
                format!("the file is larger than {MAX_TILE_BYTES} bytes"),
            ));
        }
        let raw: file::TileFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| {
                text[..s.start.min(text.len())].matches('\n').count() + 1
            });
            err(line, e.message().trim().replace('\n', " "))
        })?;
        if raw.members.is_empty() || raw.members.len() > MAX_MEMBERS {
            return Err(err(
                1,
                format!(
                    "a tile has 1..={MAX_MEMBERS} members ([[member]] tables), got {}",
                    raw.members.len()
                ),
            ));
        }
        if let Some(d) = &raw.description {
            if d.is_empty() || d.len() > 160 || d.chars().any(char::is_control) {
                return Err(err(
                    at(&key(&["description"])),
                    "description: one line of 1-160 characters".into(),
                ));
            }
        }
        let tile_envelope = raw.envelope();
        curve_keys::envelope(&tile_envelope).map_err(|(k, m)| err(at(&key(&[k])), m))?;
        let tile_aligned = raw.aligned.unwrap_or(false);
        let mut members: Vec<Member> = vec![];
        for (i, m) in raw.members.iter().enumerate() {
            let member = member::resolve(m, (&tile_envelope, tile_aligned), &mut games).map_err(
                |(path, message)| {
                    let mut p = key(&["member", &i.to_string()]);
                    p.extend(path);
                    err(at(&p), message)
                },
            )?;
            if members.iter().any(|o| o.name == member.name) {
                let k = if m.name.is_some() { "name" } else { "game" };
                return Err(err(
                    at(&key(&["member", &i.to_string(), k])),
                    format!(
                        "two members are called {:?}: give each its own name = \"...\"",
                        member.name
                    ),
                ));
            }
            members.push(member);
        }
        let servers: u32 = members.iter().map(|m| m.count).sum();
        if servers > MAX_TILE_SERVERS {
            return Err(err(
                1,
                format!("{servers} servers in one tile: at most {MAX_TILE_SERVERS} (a ladder runs 250 servers at most)"),
            ));
        }
        let step = match raw.step_s {
            None => None,
            Some(s) if s.is_finite() && (1.0..=MAX_STEP.as_secs_f64()).contains(&s) => {
                Some(Duration::from_secs_f64(s))
            }
            Some(s) => {
                return Err(err(
                    at(&key(&["step_s"])),
                    format!("step_s {s}: expected 1..={} s", MAX_STEP.as_secs()),
                ))
            }
        };
        let window = match raw.window_s {
            None => DEFAULT_WINDOW,
            Some(w) if w.is_finite() && w >= MIN_WINDOW.as_secs_f64() && w <= MAX_STEP.as_secs_f64() => {
                Duration::from_secs_f64(w)
            }
            Some(w) => {
                return Err(err(
                    at(&key(&["window_s"])),
                    format!(
                        "window_s {w}: expected {}..={} s (a p99 over less than a second rests on a handful of samples)",
                        MIN_WINDOW.as_secs(),
                        MAX_STEP.as_secs()
                    ),
                ))
            }
        };
        let tile = Tile {
            file: file.to_string(),
            description: raw.description,
            seed: raw.seed.unwrap_or(DEFAULT_SEED),
            window,
            step,
            members,
        };
        let len = tile.step_len();
        if window > len {
            let whose = if step.is_some() {
                "step_s"
            } else {
                "the curves' own length; set step_s for another"
            };
            return Err(err(
                at(&key(&["window_s"])),
                format!(
                    "window_s {}: longer than the step ({} s, {whose})",
                    window.as_secs_f64(),
                    len.as_secs_f64()
                ),
            ));
        }
        Ok(tile)
    }

    /// How long a step lasts: the file's `step_s`, else the longest its
    /// members' curves need (a compressed day, a map cycle), else
    /// [`DEFAULT_STEP`].
    pub fn step_len(&self) -> Duration {
        self.step.unwrap_or_else(|| {
            self.members
                .iter()
                .filter_map(|m| m.curve.natural_len())
                .max()
                .unwrap_or(DEFAULT_STEP)
        })
    }

    /// The judging windows of a step.
    pub fn windows(&self) -> Vec<(Duration, Duration)> {
        tickpack_curve::windows(self.step_len(), self.window)
    }

    /// Servers per tile.
    pub fn servers(&self) -> u32 {
        self.members.iter().map(|m| m.count).sum()
    }

    /// The timeline of one server of a step: of member `member`, the
    /// `server`-th of that member in the step (counting over every tile
    /// the step runs: tile `k`'s servers are `k * count ..`). Its phases
    /// come from the tile's seed, the member and that number.
    pub fn timeline(&self, member: usize, server: u32, step_len: Duration) -> Timeline {
        let key = ((member as u64) << 32) | u64::from(server);
        self.members[member].timeline(self.seed, key, step_len)
    }

    /// Each member's time compression over a step of `step_len`, in
    /// words for the report (`MEMBER: rounds 8x, sessions 20x`).
    pub fn compression(&self, step_len: Duration) -> Vec<(String, Compression)> {
        self.members
            .iter()
            .map(|m| (m.name.clone(), m.curve.compression(step_len)))
            .collect()
    }

    /// The tile as `--compare load` runs one of its variants.
    pub fn variant(&self, v: Variant) -> Tile {
        let mut t = self.clone();
        for m in &mut t.members {
            match v {
                Variant::Static => m.curve = tickpack_curve::Curve::steady(),
                Variant::Phased => m.curve.aligned = false,
                Variant::Aligned => m.curve.aligned = true,
            }
        }
        // The static reservation keeps the curves' step, so the three
        // variants are measured over the same time.
        t.step = Some(self.step_len());
        t
    }
}
