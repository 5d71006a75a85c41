//! What a tile run (`tickpack bench --tile FILE`) records beside the usual
//! steps: the tile as it ran ([`TileSettings`]), and for every step each
//! member's figures in every window ([`TileStep`]), the server cores' busy
//! share and the batch work per window, and the first window a member
//! failed ([`WindowFailure`]).
//!
//! A tile is several games side by side whose players come and go along
//! time-compressed curves; a step runs `n` tiles and passes only when every
//! member passes its own QoS limits in every window (docs/tiles.md,
//! docs/methodology.md). The step's usual figures (`Step::measured`) are
//! every member's players merged; the windows hold what decided the step.

use serde::{Deserialize, Serialize};

use crate::bench::QosLimits;

/// How the players of a tile's members come and go in one ladder
/// (`--compare load` climbs the three, interleaved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadVariant {
    /// Every player present the whole step: the static reservation (what a
    /// one-game bench measures).
    Static,
    /// The curves, with rounds, map changes and sessions at each server's
    /// own moments (the default of a tile run).
    Phased,
    /// The curves with every server's rounds, map changes and sessions in
    /// step: the worst case of the same players.
    Aligned,
}

impl LoadVariant {
    /// How sentences name it.
    pub fn words(self) -> &'static str {
        match self {
            LoadVariant::Static => "every player all the time",
            LoadVariant::Phased => "the curves, each server at its own moments",
            LoadVariant::Aligned => "the curves, every server in step",
        }
    }

    /// As `--compare load`'s labels spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadVariant::Static => "static",
            LoadVariant::Phased => "phased",
            LoadVariant::Aligned => "aligned",
        }
    }
}

/// The tile a run climbed, as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TileSettings {
    /// The tile's name (its file's `name`, else the file's stem).
    pub name: String,
    /// The file as given on the command line.
    pub file: String,
    /// Length of a judged window, seconds.
    pub window_s: f64,
    /// The seed of every curve's joins, leaves and phases.
    pub seed: u64,
    /// How the curves were compressed in time, in words ("a day in 120 s,
    /// 720x faster; sessions and rounds 10x faster").
    pub compression: String,
    pub members: Vec<TileMember>,
}

/// One member of a tile as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TileMember {
    /// The member's name (unique in the tile; the game's by default).
    pub name: String,
    /// The game's definition name.
    pub game: String,
    /// Servers of this member per tile.
    pub count: u32,
    /// Emulated players per server at 100 % of the curve.
    pub players: u32,
    pub bots: u32,
    /// The tick rate its servers ran at.
    pub tick_hz: crate::bench::TickRate,
    /// The game's own settings as recorded for the report (versions,
    /// maps, variables).
    #[serde(
        default,
        deserialize_with = "crate::game_settings::read",
        skip_serializing_if = "crate::game_settings::GameSettings::is_empty"
    )]
    pub game_settings: crate::game_settings::GameSettings,
    /// Its curve in words ("evening, peak 2x the mean; rounds of 20 s
    /// after a 2 s freeze, a map change every 3; churn Weibull 0.5 x 60 s").
    pub curve: String,
    /// An idle lobby server: no players, judged on its query's answers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idle: bool,
    /// The limits it is judged by in every window.
    pub qos: QosLimits,
    /// A join slower than this (milliseconds from its first packet to its
    /// first snapshot) failed.
    pub max_join_ms: u64,
}

/// A step of a tile run: the windows that judged it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TileStep {
    pub load: LoadVariant,
    pub window_s: f64,
    /// The host's side of every window: the server cores and batch work.
    pub windows: Vec<HostWindow>,
    /// The server cores' busy share at its highest window over its mean
    /// over the step; `None` when it could not be sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_to_mean_cpu: Option<f64>,
    pub members: Vec<MemberStep>,
    /// The first member to fail a window (in window order, then the
    /// tile's member order); `None`: every member passed every window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<WindowFailure>,
}

/// The host in one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostWindow {
    pub start_s: f64,
    pub end_s: f64,
    /// The server cores' busy share (percent of those cores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_busy_percent: Option<f64>,
    /// The batch work's CPU (percent of one core), with `--batch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_cpu_percent: Option<f64>,
    /// Players present, every member together (time-weighted).
    pub players_present: f64,
}

/// One member over a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberStep {
    pub name: String,
    pub servers: u32,
    /// The largest peak resident memory of one of its servers, bytes
    /// (`tickpack agones fleet` sizes its pods from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_peak_rss_bytes: Option<u64>,
    pub windows: Vec<MemberWindow>,
    /// What went wrong outside the figures, each with its moment ("12.5 s:
    /// the map change of server 2 was not answered").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
}

/// One member in one window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MemberWindow {
    pub start_s: f64,
    pub end_s: f64,
    /// Players present, time-weighted over the window, every server of
    /// the member together.
    pub players_present: f64,
    pub joins: u64,
    pub failed_joins: u64,
    /// p99 time from a join's first packet to its first snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_p99_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_p99_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_frame_p99_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_delay_p99_us: Option<u64>,
    /// Snapshots expected and lost in the window.
    pub snapshots_expected: u64,
    pub snapshots_lost: u64,
    /// Map changes asked in the window.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub map_changes: u32,
    /// Each limit the window missed, in words; empty: it passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl MemberWindow {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Where a step failed: the member, the window and the rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowFailure {
    pub member: String,
    /// 0-based window index.
    pub window: u32,
    pub start_s: f64,
    pub end_s: f64,
    /// The limit missed, in words.
    pub rule: String,
}

impl std::fmt::Display for WindowFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} failed window {} ({:.0}-{:.0} s): {}",
            self.member,
            self.window + 1,
            self.start_s,
            self.end_s,
            self.rule
        )
    }
}

impl TileStep {
    /// The first failure over the members' windows: the earliest window,
    /// and within it the first member in the tile's order.
    pub fn first_failure(members: &[MemberStep]) -> Option<WindowFailure> {
        let windows = members.iter().map(|m| m.windows.len()).max().unwrap_or(0);
        (0..windows).find_map(|w| {
            members.iter().find_map(|m| {
                let win = m.windows.get(w)?;
                win.failures.first().map(|rule| WindowFailure {
                    member: m.name.clone(),
                    window: w as u32,
                    start_s: win.start_s,
                    end_s: win.end_s,
                    rule: rule.clone(),
                })
            })
        })
    }

    /// The host's peak-to-mean busy share over windows with a figure.
    pub fn peak_to_mean(windows: &[HostWindow]) -> Option<f64> {
        let v: Vec<f64> = windows
            .iter()
            .filter_map(|w| w.servers_busy_percent)
            .collect();
        if v.is_empty() {
            return None;
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let peak = v.iter().copied().fold(f64::MIN, f64::max);
        (mean > 0.0).then(|| (peak / mean * 100.0).round() / 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(start: f64, failures: &[&str]) -> MemberWindow {
        MemberWindow {
            start_s: start,
            end_s: start + 5.0,
            failures: failures.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_first_failure_is_the_earliest_window_then_the_tiles_order() {
        let members = vec![
            MemberStep {
                name: "reference".into(),
                servers: 2,
                server_peak_rss_bytes: None,
                windows: vec![window(0.0, &[]), window(5.0, &[]), window(10.0, &["late"])],
                events: vec![],
            },
            MemberStep {
                name: "openarena".into(),
                servers: 1,
                server_peak_rss_bytes: None,
                windows: vec![window(0.0, &[]), window(5.0, &["loss", "frame"])],
                events: vec![],
            },
        ];
        let f = TileStep::first_failure(&members).unwrap();
        assert_eq!(
            (f.member.as_str(), f.window, f.rule.as_str()),
            ("openarena", 1, "loss")
        );
        assert_eq!(f.to_string(), "openarena failed window 2 (5-10 s): loss");
        assert!(TileStep::first_failure(&members[..1]).is_some());
        assert!(TileStep::first_failure(&[]).is_none());
    }

    #[test]
    fn peak_to_mean_reads_the_windows_with_a_figure() {
        let w = |b: Option<f64>| HostWindow {
            start_s: 0.0,
            end_s: 1.0,
            servers_busy_percent: b,
            batch_cpu_percent: None,
            players_present: 0.0,
        };
        assert_eq!(
            TileStep::peak_to_mean(&[w(Some(10.0)), w(Some(30.0)), w(None)]),
            Some(1.5)
        );
        assert_eq!(TileStep::peak_to_mean(&[w(None)]), None);
        assert_eq!(TileStep::peak_to_mean(&[w(Some(0.0))]), None);
    }

    #[test]
    fn load_variants_spell_as_the_flag_does() {
        for v in [
            LoadVariant::Static,
            LoadVariant::Phased,
            LoadVariant::Aligned,
        ] {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
        }
    }
}
