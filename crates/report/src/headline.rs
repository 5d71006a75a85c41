//! The answer a host came for, from a bench result: **servers per server
//! core** at QoS within the headroom target, what that means for a machine
//! (this one, and one the user names with `bench --project-cores N`), and,
//! only when the user gave the servers one machine ran before
//! (`--before-servers`), the consolidation ratio, in words when it is below
//! one.
//!
//! Over repeated ladders the answer is their median with its range
//! ([`crate::spread`]), and on few server cores the limit between two steps
//! is estimated beside it ([`crate::estimate`]).
//!
//! One copy of the arithmetic: `bench` stores [`servers_per_core`] in
//! result.json, the terminal and the HTML report print [`Headline`]'s
//! sentences, and `agones fleet` sizes its pods from the same function.
//!
//! The projection to another machine is linear in server cores and rounds
//! down (a fraction of a server does not run): it assumes cores as fast as
//! these, and memory, network and the load generator's own cores not
//! limiting. [`Headline::assumptions`] says so beside every figure.

use crate::bench::BenchResult;
use crate::estimate::LimitEstimate;
use crate::spread::HeadlineSpread;

/// Servers per server core: `servers / server_cores`; `None` without
/// server cores.
pub fn servers_per_core(servers: u32, server_cores: u32) -> Option<f64> {
    (server_cores > 0).then(|| f64::from(servers) / f64::from(server_cores))
}

/// Servers per core as stored in result.json: to three decimals (the
/// projection uses the whole numbers, not this).
pub fn stored_per_core(servers: u32, server_cores: u32) -> Option<f64> {
    servers_per_core(servers, server_cores).map(|x| (x * 1000.0).round() / 1000.0)
}

/// Servers on a machine of `cores` server cores at the measured density:
/// `floor(servers x cores / server_cores)`, in whole numbers (no float
/// rounding: 3 servers on 2 cores is 96 on 64). 0 without server cores.
pub fn servers_on(servers: u32, server_cores: u32, cores: u32) -> u64 {
    if server_cores == 0 {
        return 0;
    }
    u64::from(servers) * u64::from(cores) / u64::from(server_cores)
}

/// The headline figures of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// The recommended density on this machine.
    pub servers: u32,
    /// The cores the servers ran on (the load generator's excluded).
    pub server_cores: u32,
    /// The load generator's cores, excluded from the figure.
    pub load_generator_cores: u32,
    /// Every CPU of the machine.
    pub total_cores: u32,
    /// True when the ladder never failed a step and the recommended
    /// density is its last passing step: the machine may hold more.
    pub at_least: bool,
    /// The headroom target, percent of the server cores busy.
    pub headroom_percent: f64,
    /// A machine size the user asked about (`--project-cores`).
    pub project_cores: Option<u32>,
    /// The servers had nothing to do and were measured so on purpose
    /// (`--allow-idle`): the figure is their idle footprint, no density.
    pub idle_footprint: bool,
    /// A step that decided the figure (the recommended one, or the first
    /// that failed after it) stands disturbed: its reruns ran out while
    /// the hypervisor or another process took the machine. What it says.
    pub disturbed: Option<String>,
    /// Over repeated ladders: the median, range and number of ladders.
    pub spread: Option<HeadlineSpread>,
    /// On few server cores: where between two steps the limit lies.
    pub estimate: Option<LimitEstimate>,
    /// A tile run's members, (name, servers per tile): the density is
    /// also said in tiles and in servers of each game.
    pub tile: Vec<(String, u32)>,
}

impl Headline {
    /// The headline of `r`; `None` when no step was recommended (or the
    /// result records no server cores).
    pub fn of(r: &BenchResult) -> Option<Headline> {
        let servers = r.recommended_servers.filter(|&n| n > 0)?;
        let server_cores = u32::try_from(r.cores.servers.len())
            .ok()
            .filter(|&n| n > 0)?;
        Some(Headline {
            servers,
            server_cores,
            load_generator_cores: u32::try_from(r.cores.load_generator.len()).unwrap_or(0),
            total_cores: u32::try_from(r.cores.total).unwrap_or(0),
            at_least: r.recommended_is_lower_bound(),
            headroom_percent: r.settings.headroom_target * 100.0,
            project_cores: r.settings.project_cores,
            idle_footprint: r.settings.allow_idle,
            disturbed: deciding_disturbance(r, servers),
            spread: r.servers_per_core_spread.clone(),
            estimate: r.limit_estimate.clone(),
            tile: r.settings.tile.as_ref().map_or(vec![], |t| {
                t.members
                    .iter()
                    .map(|m| (m.name.clone(), m.count))
                    .collect()
            }),
        })
    }

    /// A tile run's density in tiles and in servers of each member, per
    /// server core, through the whole curve: "per server core, through the
    /// whole curve: 0.50 tiles (each: 1 A, 1 B): 0.50 A, 0.50 B" for
    /// members A and B. `None` for a one-game run.
    pub fn tile_words(&self) -> Option<String> {
        let per_tile: u32 = self.tile.iter().map(|(_, n)| n).sum();
        if per_tile == 0 {
            return None;
        }
        let tiles = f64::from(self.servers) / f64::from(per_tile) / f64::from(self.server_cores);
        let each: Vec<String> = self.tile.iter().map(|(m, n)| format!("{n} {m}")).collect();
        let per_core: Vec<String> = self
            .tile
            .iter()
            .map(|(m, n)| format!("{:.2} {m}", tiles * f64::from(*n)))
            .collect();
        // The ladders' range, in tiles: servers per server core over the
        // servers a tile holds.
        let range = self
            .spread
            .as_ref()
            .filter(|s| s.ladders > 1 && s.min < s.max)
            .map_or(String::new(), |s| {
                let per_tile = f64::from(per_tile);
                format!(
                    ", {:.2}-{:.2} over {} ladders",
                    s.min / per_tile,
                    s.max / per_tile,
                    s.ladders
                )
            });
        Some(format!(
            "per server core, through the whole curve: {}{tiles:.2} tiles{range} (each: {}): {}",
            self.at_least_words(),
            each.join(", "),
            per_core.join(", ")
        ))
    }

    /// "DISTURBED: ..." when a deciding step stands disturbed: the figure
    /// is to be measured again, not trusted.
    pub fn disturbed_words(&self) -> Option<String> {
        self.disturbed.as_ref().map(|d| {
            format!(
                "DISTURBED: {d}; its reruns ran out, so the figure may be off: run again on a quieter machine"
            )
        })
    }

    /// Servers per server core (see [`servers_per_core`]).
    pub fn per_core(&self) -> f64 {
        servers_per_core(self.servers, self.server_cores).unwrap_or(0.0)
    }

    fn at_least_words(&self) -> &'static str {
        if self.at_least {
            "at least "
        } else {
            ""
        }
    }

    /// "1.50 servers per server core" (or "at least 1.50 ...", or "idle
    /// footprint, not a density: 4.00 idle servers per server core").
    pub fn per_core_words(&self) -> String {
        format!(
            "{}{}{:.2} {}servers per server core",
            if self.idle_footprint {
                "idle footprint, not a density: "
            } else {
                ""
            },
            self.at_least_words(),
            self.per_core(),
            if self.idle_footprint { "idle " } else { "" }
        )
    }

    /// The answer first shown: over repeated ladders the median with its
    /// range, "3 servers per server core, 2-3 over 3 ladders" (with "at
    /// least" when the limit was not found); else [`Headline::per_core_words`].
    pub fn answer_words(&self) -> String {
        match self.spread.as_ref().filter(|_| !self.idle_footprint) {
            Some(s) => format!("{}{}", self.at_least_words(), s.words()),
            None => self.per_core_words(),
        }
    }

    /// The lines under the answer about how far to trust it: "UNSTABLE:
    /// ..." when the ladders differ by more than one step, and the limit
    /// estimated between two steps on few server cores.
    pub fn trust_lines(&self) -> Vec<String> {
        let unstable = self
            .spread
            .as_ref()
            .and_then(HeadlineSpread::unstable_words);
        let estimate = self.estimate.as_ref().map(LimitEstimate::words);
        unstable.into_iter().chain(estimate).collect()
    }

    /// "on 2 server cores: 3 servers" for `cores` server cores.
    pub fn on_words(&self, cores: u32) -> String {
        let n = servers_on(self.servers, self.server_cores, cores);
        format!(
            "on {}: {}{}",
            crate::words::count(cores, "server core", "server cores"),
            self.at_least_words(),
            crate::words::servers(n)
        )
    }

    /// This machine's line, then the projected machine's if one was asked
    /// for: "this machine, on 1 server core: 3 servers", "projected, on 64
    /// server cores: 192 servers".
    pub fn machine_lines(&self) -> Vec<String> {
        let mut v = vec![format!(
            "this machine, {}",
            self.on_words(self.server_cores)
        )];
        v.extend(self.tile_words());
        if let Some(c) = self.project_cores.filter(|&c| c != self.server_cores) {
            v.push(format!("projected, {}", self.on_words(c)));
        }
        v
    }

    /// What the figure assumes, in one sentence.
    pub fn assumptions(&self) -> String {
        let lg = match self.load_generator_cores {
            0 => "no cores kept for the load generator".to_string(),
            n => format!(
                "the load generator's {} of {} excluded",
                crate::words::count(n, "core", "cores"),
                self.total_cores
            ),
        };
        let mut s = format!(
            "at every QoS limit and at most {:.0} % of the server cores busy (headroom target); {lg}",
            self.headroom_percent
        );
        if self.at_least {
            s.push_str(
                "; no step failed, so the limit was not found (raise --max-steps to find it)",
            );
        }
        if self.project_cores.is_some() {
            s.push_str(
                "; other machines: linear in server cores, rounded down, cores as fast as these, \
                 memory and network not limiting",
            );
        }
        s
    }
}

/// What disturbed a step that decided the headline of `r` (recommended
/// density `servers`): that step or the first failing one after it, in the
/// first ladder.
fn deciding_disturbance(r: &BenchResult, servers: u32) -> Option<String> {
    let ladder = r.ladders.first()?;
    let deciding = ladder
        .steps
        .iter()
        .filter(|s| s.servers == servers || (s.servers > servers && s.verdict.is_fail()))
        .take(2);
    deciding.into_iter().find_map(|s| {
        s.disturbed.as_ref().map(|d| {
            format!(
                "the step of {} that decided it ran on a disturbed machine ({d})",
                crate::words::servers(s.servers)
            )
        })
    })
}

/// Why a result has no density because its servers were idle (a step with
/// the verdict `idle`): the step's own reason, which names what was asked
/// of the servers and did nothing and what to try ([`crate::verdict::idle_reason`]);
/// `None` otherwise.
pub fn idle_words(r: &BenchResult) -> Option<String> {
    let step = r
        .ladders
        .iter()
        .flat_map(|l| &l.steps)
        .find(|s| s.verdict.is_idle())?;
    let why = step.failures.first().cloned().unwrap_or_default();
    Some(format!(
        "no servers-per-core figure: at {} {why}. To measure the idle footprint on purpose: --allow-idle",
        crate::words::servers(step.servers)
    ))
}

/// The consolidation ratio against the servers one machine ran before, in
/// words: the ratio when this machine holds at least as many, else why
/// there is none (a ratio below 1 means consolidating onto this machine
/// needs more machines, not fewer).
pub fn consolidation_words(recommended: u32, before_servers: u32) -> String {
    let before = before_servers.max(1);
    let ratio = f64::from(recommended) / f64::from(before);
    let per = format!(
        "{recommended} server{} per machine at the recommended density on this machine / \
         {before} per machine before (--before-servers)",
        if recommended == 1 { "" } else { "s" }
    );
    if ratio >= 1.0 {
        format!("consolidation ratio {ratio:.2}:1 ({per})")
    } else {
        format!(
            "no consolidation: this machine holds {recommended} server{} at the recommended \
             density, fewer than the {before} one machine ran before (--before-servers), so \
             moving them here would need {:.2} of these machines for each of today's ({per})",
            if recommended == 1 { "" } else { "s" },
            1.0 / ratio.max(f64::MIN_POSITIVE)
        )
    }
}

/// What to pass for cost figures, when a result has none.
pub const COST_FLAGS: &str = "--before-servers N --before-watts W --machines N \
     --price-per-kwh P --currency CODE";

/// Why a result has no cost figures, and what would give them.
pub fn why_no_cost(r: &BenchResult) -> String {
    match (r.consolidation_ratio, r.recommended_servers) {
        (_, None) => "no step was recommended, so there is nothing to cost".into(),
        (None, Some(_)) => format!(
            "the cost needs what your machines run and draw today: pass {COST_FLAGS} \
             (and --currency-rate R when the bill's currency is not the one to report in)"
        ),
        (Some(c), Some(_)) if c < 1.0 => format!(
            "consolidating onto this machine would need more machines than today (see the \
             consolidation above); `tickpack tco --ratio {c}` computes what that would cost"
        ),
        (Some(_), Some(_)) => format!(
            "the run had no watts at the recommended step, or not every cost input ({COST_FLAGS})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headline(servers: u32, server_cores: u32, at_least: bool, project: Option<u32>) -> Headline {
        Headline {
            servers,
            server_cores,
            load_generator_cores: 1,
            total_cores: server_cores + 1,
            at_least,
            headroom_percent: 75.0,
            project_cores: project,
            idle_footprint: false,
            disturbed: None,
            spread: None,
            estimate: None,
            tile: vec![],
        }
    }

    #[test]
    fn a_tile_run_says_its_density_in_tiles_and_in_servers_of_each_member() {
        let mut h = headline(4, 2, false, None);
        assert!(h.tile_words().is_none(), "a one-game run");
        h.tile = vec![("reference".into(), 1), ("openarena".into(), 1)];
        assert_eq!(
            h.tile_words().unwrap(),
            "per server core, through the whole curve: 1.00 tiles (each: 1 reference, 1 openarena): 1.00 reference, 1.00 openarena"
        );
        assert_eq!(h.machine_lines().len(), 2);
    }

    /// A tile run's headline gave its tiles per server core without the
    /// range over ladders its servers per core had ("2.00 tiles" beside
    /// "10 servers per server core, 5-10 over 3 ladders").
    #[test]
    fn a_tile_runs_tiles_per_core_came_without_their_range() {
        let mut h = headline(10, 1, false, None);
        h.tile = (0..5).map(|i| (format!("m{i}"), 1)).collect();
        h.spread = Some(crate::spread::HeadlineSpread {
            median: 10.0,
            min: 5.0,
            max: 10.0,
            ladders: 3,
            step: 5.0,
        });
        let w = h.tile_words().unwrap();
        assert!(
            w.contains("2.00 tiles, 1.00-2.00 over 3 ladders (each: "),
            "{w}"
        );
    }

    #[test]
    fn over_repeated_ladders_the_answer_is_the_median_with_its_range() {
        let spread = |v: &[f64]| {
            let s = crate::comparison::Spread::of(v.iter().map(|&x| Some(x)).collect());
            HeadlineSpread::of(&s, 1, 1)
        };
        let one = headline(3, 1, false, None);
        assert_eq!(one.answer_words(), "3.00 servers per server core");
        assert!(one.trust_lines().is_empty());
        let h = Headline {
            spread: spread(&[2.0, 3.0, 3.0]),
            ..headline(3, 1, false, None)
        };
        assert_eq!(
            h.answer_words(),
            "3 servers per server core, 2-3 over 3 ladders"
        );
        assert!(h.trust_lines().is_empty(), "one step apart is stable");
        let h = Headline {
            spread: spread(&[2.0, 3.0, 4.0]),
            ..headline(3, 1, true, None)
        };
        assert_eq!(
            h.answer_words(),
            "at least 3 servers per server core, 2-4 over 3 ladders"
        );
        assert!(h.trust_lines()[0].starts_with("UNSTABLE: "));
    }

    #[test]
    fn an_idle_footprint_never_reads_as_a_density() {
        let h = Headline {
            idle_footprint: true,
            ..headline(4, 1, true, None)
        };
        assert_eq!(
            h.per_core_words(),
            "idle footprint, not a density: at least 4.00 idle servers per server core"
        );
    }

    #[test]
    fn servers_per_core_divides_by_the_server_cores_only() {
        assert_eq!(servers_per_core(3, 1), Some(3.0));
        assert_eq!(servers_per_core(3, 2), Some(1.5));
        assert_eq!(servers_per_core(3, 0), None);
        assert_eq!(stored_per_core(2, 3), Some(0.667));
    }

    #[test]
    fn a_projection_is_whole_servers_rounded_down_without_float_error() {
        assert_eq!(servers_on(3, 2, 64), 96);
        assert_eq!(servers_on(2, 3, 64), 42, "42.67 rounds down");
        assert_eq!(servers_on(7, 7, 7), 7, "this machine is its own figure");
        assert_eq!(servers_on(1, 3, 1), 0);
        assert_eq!(servers_on(5, 0, 64), 0);
        assert_eq!(
            servers_on(u32::MAX, 1, u32::MAX),
            u64::from(u32::MAX).pow(2)
        );
    }

    #[test]
    fn the_headline_names_this_machine_and_the_projected_one() {
        let h = headline(3, 1, false, Some(64));
        assert_eq!(h.per_core_words(), "3.00 servers per server core");
        assert_eq!(
            h.machine_lines(),
            vec![
                "this machine, on 1 server core: 3 servers".to_string(),
                "projected, on 64 server cores: 192 servers".to_string()
            ]
        );
        let a = h.assumptions();
        assert!(a.contains("75 % of the server cores busy"), "{a}");
        assert!(a.contains("load generator's 1 core of 2 excluded"), "{a}");
        assert!(a.contains("linear in server cores"), "{a}");
        // No projection asked for: this machine only.
        assert_eq!(headline(3, 1, false, None).machine_lines().len(), 1);
    }

    #[test]
    fn a_ladder_without_a_failure_gives_a_lower_bound() {
        let h = headline(6, 2, true, Some(64));
        assert_eq!(h.per_core_words(), "at least 3.00 servers per server core");
        assert_eq!(h.on_words(64), "on 64 server cores: at least 192 servers");
        assert!(h.assumptions().contains("the limit was not found"));
    }

    #[test]
    fn a_ratio_below_one_is_explained_not_given() {
        let w = consolidation_words(3, 6);
        assert!(
            w.starts_with("no consolidation: this machine holds 3 servers"),
            "{w}"
        );
        assert!(w.contains("fewer than the 6 one machine ran before"), "{w}");
        assert!(
            w.contains("2.00 of these machines for each of today's"),
            "{w}"
        );
        assert!(!w.contains(":1"), "no ratio presented: {w}");
        assert!(consolidation_words(12, 6).starts_with("consolidation ratio 2.00:1 (12 servers"));
    }
}
