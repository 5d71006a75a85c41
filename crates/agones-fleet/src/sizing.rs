//! What a bench result says about one game server's pod: which game, how
//! many servers a core held, whether pinning mattered, how much memory a
//! server used, and the requests and limits that follow. Pure arithmetic on
//! [`BenchResult`]; every number keeps what it came from, so the manifest
//! can explain it ([`crate::manifest`]).

use tickpack_report::bench::BenchResult;
use tickpack_report::comparison::Separation;

use crate::FleetError;

/// Memory headroom over the measured peak, as a fraction: 3/2.
///
/// The peak is the kernel's high-water mark of one server's processes over
/// a bench step; a pod's memory limit is its cgroup's, which also counts
/// the page cache of the files it reads (a game's maps and data) and
/// kernel memory, and a long-running server meets maps, players and chat
/// a short step did not. Reaching the limit means the OOM killer ends the
/// match, so the limit sits half again above the measured peak.
pub const MEMORY_HEADROOM: (u64, u64) = (3, 2);

/// The smallest memory a server pod gets, MiB: below this the headroom of a
/// tiny peak would not hold a process's start-up (libc, the loader).
pub const MEMORY_FLOOR_MIB: u64 = 32;

/// A placement ratio at least this high (tickpack's pinned placement's
/// maximum density over the kernel's) counts as "pinning matters" when the
/// comparison ran once, so no range over repetitions can judge it: a 10 %
/// difference is more than one step of a small ladder's noise.
pub const PINNING_RATIO_ONE_RUN: f64 = 1.10;

/// Whether a server needs a core of its own, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Pinning {
    pub matters: bool,
    /// The evidence, in words, for the manifest's comment.
    pub why: String,
}

/// The pod's CPU: shared millicores or whole pinned CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cpu {
    /// Burstable: a request in millicores, no limit (a CFS quota would
    /// throttle a tick that runs over its share of a 100 ms period).
    Shared { millis: u32 },
    /// Guaranteed: request == limit == this many whole CPUs, which the
    /// kubelet's static CPU manager gives the container exclusively.
    Whole { cpus: u32 },
}

impl Cpu {
    /// As a Kubernetes quantity: `250m` or `1`.
    pub fn quantity(self) -> String {
        match self {
            Cpu::Shared { millis } => format!("{millis}m"),
            Cpu::Whole { cpus } => cpus.to_string(),
        }
    }
}

/// Where the memory figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemorySource {
    /// The bench's largest per-server peak RSS, bytes.
    Measured { peak_rss_bytes: u64 },
    /// `--memory-mib`: the user's figure, used as is.
    Given,
}

/// Everything the manifest needs, each figure with its origin.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizing {
    /// The game the result measured (its first ladder's), as it names it.
    pub game: String,
    /// Servers the bench recommends on the measured machine.
    pub recommended_servers: u32,
    /// The cores those servers ran on (the load generator had its own).
    pub server_cores: u32,
    /// The repetitions whose lower median the recommendation is (`--repeat`);
    /// `None`: one run's recommendation.
    pub over_repetitions: Option<u32>,
    pub pinning: Pinning,
    pub cpu: Cpu,
    /// The CPU a shared pod would ask for (also shown beside pinned pods,
    /// for the trade-off).
    pub shared_millis: u32,
    pub memory_mib: u64,
    pub memory_source: MemorySource,
    /// The measured machine, for the header.
    pub machine: String,
    /// The bench's settings the steps ran.
    pub settings: tickpack_report::bench::BenchSettings,
    /// The game settings of the ladder used (`--compare game` keeps its own).
    pub ladder_game: Option<tickpack_report::bench::LadderGame>,
    /// A tile run's member this fleet is for, in words (its share of the
    /// tile's density at the peak); `None` for a one-game result.
    pub tile: Option<String>,
}

impl Sizing {
    /// Measured servers per server core, e.g. 3.5: the bench's headline,
    /// from the same function ([`tickpack_report::headline`]).
    pub fn servers_per_core(&self) -> f64 {
        tickpack_report::headline::servers_per_core(self.recommended_servers, self.server_cores)
            .unwrap_or(0.0)
    }
}

/// CPU per server when servers share cores: the server cores' 1000
/// millicores each, split over the recommended servers, rounded up to a
/// whole millicore (so N pods never ask for less than the bench gave N
/// servers).
pub fn shared_millis(recommended_servers: u32, server_cores: u32) -> u32 {
    let total = u64::from(server_cores) * 1000;
    let n = u64::from(recommended_servers.max(1));
    total.div_ceil(n).try_into().unwrap_or(u32::MAX)
}

/// Whole CPUs per server when each needs its own: the cores one server
/// used, rounded up, at least one (the static CPU manager pins integer CPUs
/// only, and one CPU cannot be split between two pinned pods).
pub fn whole_cpus(recommended_servers: u32, server_cores: u32) -> u32 {
    server_cores.div_ceil(recommended_servers.max(1)).max(1)
}

/// A memory request and limit from a peak RSS: the peak times
/// [`MEMORY_HEADROOM`], rounded up to a whole MiB, at least
/// [`MEMORY_FLOOR_MIB`].
pub fn memory_mib(peak_rss_bytes: u64) -> u64 {
    let (num, den) = MEMORY_HEADROOM;
    let with_headroom = u128::from(peak_rss_bytes) * u128::from(num);
    let mib = with_headroom.div_ceil(u128::from(den) << 20);
    u64::try_from(mib).unwrap_or(u64::MAX).max(MEMORY_FLOOR_MIB)
}

/// Whether the result shows that pinning servers to cores matters: only a
/// `--compare placement` run can say so. Its first ladder is tickpack's
/// pinned placement (spread), its second the kernel's scheduling (none).
/// Over repetitions the ranges of the two maximum densities must separate
/// (pinned higher); run once, the ratio must reach
/// [`PINNING_RATIO_ONE_RUN`].
pub fn pinning(result: &BenchResult) -> Pinning {
    if result.settings.compare != "placement" {
        let ran = match result.settings.compare.as_str() {
            "none" => "the result ran no comparison".to_string(),
            other => format!("the result compared {other}, not placement"),
        };
        return Pinning {
            matters: false,
            why: format!(
                "{ran} (`tickpack bench --compare placement` measures whether pinning \
                 matters), so servers share cores"
            ),
        };
    }
    let ratio = result.comparison.as_ref().and_then(|c| c.ratios.first());
    if let Some(r) = ratio {
        let median = r.ratio.median_words(2);
        match r.separation {
            Separation::Higher => {
                return Pinning {
                    matters: true,
                    why: format!(
                        "pinned placement reached {median}x the kernel's maximum density and \
                         their ranges over the repetitions do not overlap"
                    ),
                }
            }
            Separation::Lower | Separation::CannotTellApart => {
                return Pinning {
                    matters: false,
                    why: format!(
                        "pinned placement reached {median}x the kernel's maximum density, but \
                         the repetitions cannot tell the two apart, so servers share cores"
                    ),
                }
            }
            Separation::TooFewRepetitions | Separation::NotAvailable => {}
        }
    }
    match result.comparison_ratio {
        Some(r) if r >= PINNING_RATIO_ONE_RUN => Pinning {
            matters: true,
            why: format!(
                "pinned placement reached {r:.2}x the kernel's maximum density in one run \
                 (at least {PINNING_RATIO_ONE_RUN:.2}x counts; repeat the bench to judge it on ranges)"
            ),
        },
        Some(r) => Pinning {
            matters: false,
            why: format!(
                "pinned placement reached only {r:.2}x the kernel's maximum density \
                 (below {PINNING_RATIO_ONE_RUN:.2}x), so servers share cores"
            ),
        },
        None => Pinning {
            matters: false,
            why: "the placement comparison found no ratio (a ladder never passed a step), \
                  so servers share cores"
                .into(),
        },
    }
}

/// Sizes one server's pod from a bench result. `memory_mib_given` (the user's
/// `--memory-mib`) is required when the result has no measured memory
/// (results written before it was recorded).
pub fn size(result: &BenchResult, memory_mib_given: Option<u64>) -> Result<Sizing, FleetError> {
    let (recommended, over_repetitions) = recommended(result)?;
    let server_cores = u32::try_from(result.cores.servers.len())
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| FleetError::Input("the result records no server cores".into()))?;
    let first = result.ladders.first();
    let game = first
        .map_or(result.settings.game.as_str(), |l| {
            l.game_name(&result.settings)
        })
        .to_string();
    let pinning = pinning(result);
    let shared = shared_millis(recommended, server_cores);
    let cpu = if pinning.matters {
        Cpu::Whole {
            cpus: whole_cpus(recommended, server_cores),
        }
    } else {
        Cpu::Shared { millis: shared }
    };
    // The largest peak of any step of the ladders that ran this game.
    let peak = result
        .ladders
        .iter()
        .filter(|l| l.game_name(&result.settings) == game)
        .flat_map(|l| &l.steps)
        .filter_map(|s| s.server_peak_rss_bytes)
        .max();
    let (memory_mib, memory_source) = match (memory_mib_given, peak) {
        (Some(0), _) => return Err(FleetError::Input("--memory-mib must be at least 1".into())),
        (Some(m), _) => (m, MemorySource::Given),
        (None, Some(p)) => (memory_mib(p), MemorySource::Measured { peak_rss_bytes: p }),
        (None, None) => {
            return Err(FleetError::Input(
                "the result has no measured server memory (written before tickpack recorded it): \
                 run the bench again, or give --memory-mib N"
                    .into(),
            ))
        }
    };
    Ok(Sizing {
        game,
        recommended_servers: recommended,
        server_cores,
        over_repetitions,
        pinning,
        cpu,
        shared_millis: shared,
        memory_mib,
        memory_source,
        machine: format!(
            "{} ({} logical CPUs, kernel {})",
            result.system.cpu_model, result.system.logical_cpus, result.system.kernel
        ),
        settings: result.settings.clone(),
        ladder_game: first.and_then(|l| l.game.clone()),
        tile: None,
    })
}

/// Sizes the pods of member `m` of a tile run (`bench --tile`): its
/// recommended servers are the tile's recommended tiles times the
/// member's servers per tile (the density through the whole curve, its
/// peak included), its memory the largest peak of one of its servers.
pub fn size_member(
    result: &BenchResult,
    m: usize,
    memory_mib_given: Option<u64>,
) -> Result<Sizing, FleetError> {
    let tile = result
        .settings
        .tile
        .as_ref()
        .ok_or_else(|| FleetError::Input("the result is not a tile run".into()))?;
    let member = tile
        .members
        .get(m)
        .ok_or_else(|| FleetError::Input(format!("the tile has no member {}", m + 1)))?;
    let per_tile: u32 = tile.members.iter().map(|x| x.count).sum();
    let mut whole = result.clone();
    // Sized as a one-game result of this member's servers, memory from
    // its own servers' peak.
    let peak = result
        .ladders
        .iter()
        .flat_map(|l| &l.steps)
        .filter_map(|s| s.tile.as_ref()?.members.get(m)?.server_peak_rss_bytes)
        .max();
    for l in &mut whole.ladders {
        for s in &mut l.steps {
            s.server_peak_rss_bytes = peak;
        }
    }
    let mut sizing = size(&whole, memory_mib_given)?;
    if per_tile == 0 || sizing.recommended_servers < per_tile {
        return Err(FleetError::Input(
            "the tile run recommends no whole tile: nothing to size a fleet from".into(),
        ));
    }
    let tiles = sizing.recommended_servers / per_tile;
    sizing.recommended_servers = tiles * member.count;
    // Every member's servers share the cores: a pod's share is the cores
    // over every server of the tiles (as `size` computed it from the
    // recommended servers), not over this member's alone.
    sizing.shared_millis = shared_millis(tiles * per_tile, sizing.server_cores);
    sizing.game = member.game.clone();
    sizing.ladder_game = Some(tickpack_report::bench::LadderGame {
        game: member.game.clone(),
        game_settings: member.game_settings.clone(),
        players_per_server: member.players,
        bots_per_server: member.bots,
        tick_hz: member.tick_hz,
        warmup_s: result.settings.warmup_s,
        qos: member.qos,
    });
    sizing.tile = Some(format!(
        "member {} of tile {}: {} tile(s) of {per_tile} servers fit one machine through the\n\
         whole curve (its peak included), {} per tile: {} {} servers",
        member.name, tile.name, tiles, member.count, sizing.recommended_servers, member.game
    ));
    Ok(sizing)
}

/// The recommended servers: over repetitions, the first variant's lower
/// median (a density one repetition measured); otherwise the result's own.
fn recommended(result: &BenchResult) -> Result<(u32, Option<u32>), FleetError> {
    let over = result.comparison.as_ref().and_then(|c| {
        let v = c.variants.first()?;
        (c.repetitions > 1)
            .then(|| v.recommended_servers.lower_median())
            .flatten()
            .map(|m| (m as u32, Some(c.repetitions)))
    });
    match over.or(result.recommended_servers.map(|n| (n, None))) {
        Some((n, reps)) if n > 0 => Ok((n, reps)),
        _ => Err(FleetError::Input(
            "the result has no recommended density (no step passed within the headroom target, \
             or the run stopped first): nothing to size a fleet from"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_cpu_splits_the_server_cores_rounding_up() {
        assert_eq!(shared_millis(4, 1), 250);
        assert_eq!(shared_millis(8, 2), 250);
        assert_eq!(shared_millis(3, 1), 334, "333.3 rounds up");
        assert_eq!(shared_millis(1, 2), 2000, "a server that needed two cores");
        assert_eq!(shared_millis(0, 2), 2000, "never divides by zero");
    }

    #[test]
    fn whole_cpus_are_at_least_one_and_round_up() {
        assert_eq!(
            whole_cpus(8, 2),
            1,
            "four servers per core still get a CPU each"
        );
        assert_eq!(whole_cpus(2, 2), 1);
        assert_eq!(whole_cpus(2, 3), 2, "1.5 cores per server");
        assert_eq!(whole_cpus(0, 3), 3);
    }

    #[test]
    fn memory_is_the_peak_with_half_again_rounded_up_to_a_mib() {
        assert_eq!(memory_mib(100 << 20), 150);
        assert_eq!(memory_mib((100 << 20) + 1), 151);
        assert_eq!(memory_mib(1 << 20), MEMORY_FLOOR_MIB);
        assert_eq!(memory_mib(u64::MAX), 3 << 43, "no overflow");
    }
}
