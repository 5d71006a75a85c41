//! How many tiles the next step of a ladder runs, when the ladder may grow
//! faster than a tile a step (`BenchSettings::adaptive_steps`): a light
//! game whose servers take 1-2 % of a core would otherwise need 50 steps
//! to find its limit, and a default run of 12 could only say "at least
//! 12".
//!
//! The rule, pure (what the steps so far measured in, the next size out):
//! - the first step runs one tile;
//! - while every step passed and the last one was **far from the limit**
//!   (its server cores under [`FAR_BUSY_PERCENT`] busy and every judged
//!   figure that grows with load from near zero, tick lateness, frame
//!   time and run delay, under [`FAR_SHARE`] of its limit), the ladder
//!   doubles; transaction and query latency are left out, as their floor
//!   (a snapshot interval, the next tick) sits near their limit at any
//!   load;
//! - otherwise, with no failure yet, it adds one tile, as a fixed ladder;
//! - once a step failed, it **bisects** between the largest passing step
//!   below the smallest failing one and that failing step, until they are
//!   one tile apart; then the steps past the failure go on from the
//!   largest step run, one tile at a time.
//!
//! Each step is still judged and confirmed as in a fixed ladder; the
//! reason a size was chosen is recorded with the step ([`Next::why`]).

use tickpack_report::bench::{QosLimits, Step, TickRate};

/// A step's server cores under this share busy (percent) are far from
/// the limit.
pub const FAR_BUSY_PERCENT: f64 = 25.0;
/// ...and so is every judged figure under this share of its limit.
pub const FAR_SHARE: f64 = 0.5;

/// What a step measured, as the rule reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    pub tiles: u32,
    pub passed: bool,
    /// The server cores' busy share, percent.
    pub busy_percent: f64,
    /// The judged figure nearest its limit, as a share of that limit.
    pub worst_share: f64,
}

impl Seen {
    /// What `step` (of `tiles` tiles) measured, against `qos` at `tick`.
    pub fn of(step: &Step, tiles: u32, qos: &QosLimits, tick: TickRate) -> Seen {
        let share = |v: u64, limit: u64| {
            if limit == 0 {
                0.0
            } else {
                v as f64 / limit as f64
            }
        };
        // The figures that grow with the servers' load from near zero: not
        // the transaction or query latency, whose floor (a snapshot
        // interval, the next tick) sits near its limit at any load
        // (a game with a snapshot every 40 ms saw 41 ms of its 45 ms limit with
        // one server at 3 % of a core).
        let mut worst: f64 = 0.0;
        if step.tick_lateness_us.count > 0 {
            worst = worst.max(share(step.tick_lateness_us.p99, qos.p99_tick_lateness_us));
        }
        if step.server_frame_us.count > 0 {
            worst = worst.max(share(
                step.server_frame_us.p99,
                tickpack_report::qos::frame_limit_us(qos, tick),
            ));
        }
        if let (Some(rd), Some(limit)) = (&step.run_delay_us, qos.p99_run_delay_us) {
            worst = worst.max(share(rd.p99, limit));
        }
        Seen {
            tiles,
            passed: step.verdict.is_pass(),
            busy_percent: step.cpu.servers_busy_percent,
            worst_share: worst,
        }
    }

    fn far(&self) -> bool {
        self.passed && self.busy_percent < FAR_BUSY_PERCENT && self.worst_share < FAR_SHARE
    }
}

/// The next step's size and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Next {
    pub tiles: u32,
    pub why: String,
}

/// The next step's tiles after `seen` (in the order run), at most
/// `max_tiles`; `None` when the ladder has nothing left to run (the limit
/// bracketed and `past` steps past the failure run, or the largest size
/// reached).
pub fn next(seen: &[Seen], max_tiles: u32, past: u32) -> Option<Next> {
    let Some(last) = seen.last() else {
        return Some(Next {
            tiles: 1,
            why: "the first step: one tile".into(),
        });
    };
    let min_fail = seen.iter().filter(|s| !s.passed).map(|s| s.tiles).min();
    let max_pass_below = |limit: u32| {
        seen.iter()
            .filter(|s| s.passed && s.tiles < limit)
            .map(|s| s.tiles)
            .max()
            .unwrap_or(0)
    };
    let largest = seen.iter().map(|s| s.tiles).max().unwrap_or(0);
    match min_fail {
        None if last.far() => {
            let tiles = (last.tiles * 2).min(max_tiles);
            (tiles > last.tiles).then(|| Next {
                tiles,
                why: format!(
                    "doubled: the server cores were {:.1} % busy and every judged figure under {:.0} % of its limit (at most {:.0} %)",
                    last.busy_percent,
                    FAR_SHARE * 100.0,
                    last.worst_share * 100.0
                ),
            })
        }
        None => {
            // Halfway to where the cores would be full, or a figure at its
            // limit, were they to grow in proportion; at least one tile.
            let t = f64::from(last.tiles);
            let by_busy = (last.busy_percent > 0.0).then(|| t * 100.0 / last.busy_percent);
            let by_share = (last.worst_share > 0.0).then(|| t / last.worst_share);
            let projected = match (by_busy, by_share) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let step = projected.map_or(1, |p| (((p - t) / 2.0).floor().max(1.0)) as u32);
            let tiles = (largest.max(last.tiles) + step).min(max_tiles);
            (tiles > largest).then(|| Next {
                tiles,
                why: if step == 1 {
                    "one tile more: near the limit".into()
                } else {
                    format!(
                        "halfway to where the server cores would be full or a figure at its limit ({:.0} tiles at this step's share)",
                        projected.unwrap_or(t)
                    )
                },
            })
        }
        Some(f) => {
            let p = max_pass_below(f);
            if f > p + 1 {
                return Some(Next {
                    tiles: (p + f) / 2,
                    why: format!("bisection between {p} tiles (passed) and {f} (failed)"),
                });
            }
            // Bracketed: the steps past the failure, a tile at a time.
            let past_run = seen.iter().filter(|s| s.tiles > f).count() as u32;
            (past_run < past && largest < max_tiles).then(|| Next {
                tiles: largest + 1,
                why: format!("past the failure at {f} tiles"),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A light game: each tile takes `per_tile` % of the server cores and
    /// fails above `limit` tiles; the tiles the ladder ran.
    fn climb(per_tile: f64, limit: u32, max_steps: usize, max_tiles: u32) -> Vec<Seen> {
        let mut seen = vec![];
        while seen.len() < max_steps {
            let Some(n) = next(&seen, max_tiles, 1) else {
                break;
            };
            let busy = per_tile * f64::from(n.tiles);
            seen.push(Seen {
                tiles: n.tiles,
                passed: n.tiles <= limit,
                busy_percent: busy,
                worst_share: busy / 150.0,
            });
        }
        seen
    }

    fn bracket(seen: &[Seen]) -> (u32, Option<u32>) {
        let f = seen.iter().filter(|s| !s.passed).map(|s| s.tiles).min();
        let p = seen
            .iter()
            .filter(|s| s.passed && f.is_none_or(|f| s.tiles < f))
            .map(|s| s.tiles)
            .max()
            .unwrap_or(0);
        (p, f)
    }

    #[test]
    fn a_light_game_never_found_its_limit_in_twelve_steps() {
        // Teeworlds: 1.6 % of the core a server, its limit near 45.
        let seen = climb(1.6, 45, 12, 250);
        assert_eq!(bracket(&seen), (45, Some(46)), "{seen:?}");
        assert!(seen.len() <= 12);
    }

    #[test]
    fn a_heavy_game_climbs_a_tile_at_a_time_near_its_limit() {
        // 17 % of a core a server, limit 4: 1, 2 (doubled), then halfway
        // to a full core (5.9 tiles): 3, 4, 5 (fail), 6 (past the failure).
        let seen = climb(17.0, 4, 12, 250);
        let tiles: Vec<u32> = seen.iter().map(|s| s.tiles).collect();
        assert_eq!(tiles, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(bracket(&seen), (4, Some(5)));
    }

    #[test]
    fn a_failure_is_bisected_and_the_largest_size_is_never_passed() {
        let seen = climb(1.0, 20, 20, 250);
        assert_eq!(bracket(&seen), (20, Some(21)));
        let reasons: Vec<String> = {
            let mut s = vec![];
            for k in 0..=seen.len() {
                if let Some(n) = next(&seen[..k], 250, 1) {
                    s.push(n.why);
                }
            }
            s
        };
        assert!(
            reasons
                .iter()
                .any(|r| r.starts_with("bisection between 16 tiles")),
            "{reasons:?}"
        );
        let capped = climb(0.1, 1000, 20, 40);
        assert_eq!(capped.iter().map(|s| s.tiles).max(), Some(40));
        assert!(
            next(&capped, 40, 1).is_none(),
            "nothing beyond the largest size"
        );
    }

    /// `bench --game teeworlds` with defaults climbed 1, 2, 3, 4, 5, 6...
    /// servers at 3 % of a core each: its players' p99 (41 ms, a snapshot
    /// every 40 ms) was read as 91 % of its 45 ms limit, so every step
    /// looked near the limit.
    #[test]
    fn a_light_games_ladder_read_its_snapshot_interval_as_nearness_to_the_limit() {
        let settings = crate::test_support::settings(12, 1, false);
        let qos = QosLimits {
            p99_transaction_us: 45_000,
            p99_tick_lateness_us: 5_000,
            ..settings.qos
        };
        let req = crate::ladder::StepRequest {
            index: 1,
            tiles: 1,
            servers: 1,
            baseline: None,
        };
        let mut step = crate::test_support::step(&req, "pass", vec![], 3.1, 41_000);
        step.players = 16;
        step.measured.transaction_latency_us.count = 10_000;
        let one = Seen::of(&step, 1, &qos, settings.tick_hz);
        assert!(one.far(), "{one:?}");
        step.cpu.servers_busy_percent = 6.2;
        let two = Seen::of(&step, 2, &qos, settings.tick_hz);
        // Doubled again (a fixed ladder's pace gave 3).
        assert_eq!(next(&[one, two], 250, 1).unwrap().tiles, 4);
    }

    #[test]
    fn a_failing_first_step_ends_after_its_steps_past() {
        let seen = vec![Seen {
            tiles: 1,
            passed: false,
            busy_percent: 90.0,
            worst_share: 2.0,
        }];
        assert_eq!(next(&seen, 10, 1).unwrap().tiles, 2);
        assert!(next(&seen, 10, 0).is_none());
    }
}
