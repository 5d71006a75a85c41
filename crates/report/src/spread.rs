//! The headline's spread over repeated ladders, the way hyperfine reports a
//! time with its range: the median servers per server core, the lowest and
//! highest any ladder found, and how many ladders, "3 servers per server
//! core, 2-3 over 3 ladders". On a machine with few server cores one step
//! is a large share of the answer, so ladders that differ by more than one
//! step are called unstable, with what to do about it.

use serde::{Deserialize, Serialize};

use crate::comparison::Spread;

/// Servers per server core over the ladders of the first variant, as stored
/// in result.json (`servers_per_core_spread`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlineSpread {
    /// The lower median of the ladders' recommended densities (a value one
    /// ladder measured, the headline's figure), per server core.
    pub median: f64,
    /// The lowest and highest per server core any ladder found (a ladder
    /// that found its limit without a recommended step counts 0).
    pub min: f64,
    pub max: f64,
    /// How many ladders found the figure.
    pub ladders: u32,
    /// One step of the ladder (a tile of servers), per server core: a range
    /// wider than this is unstable.
    pub step: f64,
}

impl HeadlineSpread {
    /// The spread of `servers` (one recommended density per ladder, as in a
    /// [`crate::comparison::VariantSummary`]) over `server_cores`, with
    /// steps of `tile_servers`. `None` without server cores or with fewer
    /// than two ladders that found the figure (one ladder has no spread).
    pub fn of(servers: &Spread, server_cores: u32, tile_servers: u32) -> Option<HeadlineSpread> {
        let cores = f64::from(server_cores);
        let ladders = u32::try_from(servers.found()).ok().filter(|&n| n >= 2)?;
        (server_cores > 0).then_some(())?;
        let per_core = |x: f64| (x / cores * 1000.0).round() / 1000.0;
        Some(HeadlineSpread {
            median: per_core(servers.lower_median()?),
            min: per_core(servers.min?),
            max: per_core(servers.max?),
            ladders,
            step: per_core(f64::from(tile_servers)),
        })
    }

    /// True when the ladders' answers differ by more than one step.
    pub fn unstable(&self) -> bool {
        self.max - self.min > self.step + 1e-9
    }

    /// "3 servers per server core, 2-3 over 3 ladders" (or "..., 3 in each
    /// of 3 ladders" when they agree).
    pub fn words(&self) -> String {
        let range = if number(self.min) == number(self.max) {
            format!("{} in each of {} ladders", number(self.min), self.ladders)
        } else {
            format!(
                "{}-{} over {} ladders",
                number(self.min),
                number(self.max),
                self.ladders
            )
        };
        format!("{} servers per server core, {range}", number(self.median))
    }

    /// When the range is wider than one step: "UNSTABLE: ..." with what to
    /// do about it; `None` when the ladders agree within a step.
    pub fn unstable_words(&self) -> Option<String> {
        self.unstable().then(|| {
            format!(
                "UNSTABLE: the ladders' answers span {}-{} servers per server core, more than \
                 one step ({}); do not trust one figure: run longer steps (--step-duration 20s), \
                 more ladders (--repeat 5), or on a quieter machine",
                number(self.min),
                number(self.max),
                number(self.step)
            )
        })
    }
}

/// A figure without trailing zeros: `3`, `2.5`, `1.33`.
pub fn number(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(per_ladder: &[u32], cores: u32, tile: u32) -> HeadlineSpread {
        let s = Spread::of(per_ladder.iter().map(|&n| Some(f64::from(n))).collect());
        HeadlineSpread::of(&s, cores, tile).unwrap()
    }

    #[test]
    fn the_headline_is_the_median_with_its_range_and_ladders() {
        let h = spread(&[2, 3, 3], 1, 1);
        assert_eq!(h.words(), "3 servers per server core, 2-3 over 3 ladders");
        assert!(!h.unstable(), "a range of one step is stable");
        assert_eq!(h.unstable_words(), None);
        let h = spread(&[4, 4, 4], 2, 1);
        assert_eq!(
            h.words(),
            "2 servers per server core, 2 in each of 3 ladders"
        );
        // The lower median, as the headline: 2 and 3 ladders give 2.
        let h = spread(&[3, 2], 1, 1);
        assert_eq!(h.words(), "2 servers per server core, 2-3 over 2 ladders");
    }

    #[test]
    fn a_range_wider_than_one_step_is_unstable_and_says_what_to_do() {
        // The five runs: 3, 2, 3, 4, 4 on one server core.
        let h = spread(&[3, 2, 3, 4, 4], 1, 1);
        assert_eq!(h.words(), "3 servers per server core, 2-4 over 5 ladders");
        assert!(h.unstable());
        let w = h.unstable_words().unwrap();
        assert!(
            w.starts_with("UNSTABLE: the ladders' answers span 2-4"),
            "{w}"
        );
        assert!(w.contains("more than one step (1)"), "{w}");
        assert!(w.contains("--step-duration"), "{w}");
        assert!(w.contains("quieter machine"), "{w}");
        // Steps of 3 servers on 2 cores: 1.5 per core, so 1.5-3 is one step.
        let h = spread(&[3, 6, 6], 2, 3);
        assert_eq!(h.words(), "3 servers per server core, 1.5-3 over 3 ladders");
        assert!(!h.unstable());
    }

    #[test]
    fn one_ladder_or_no_server_cores_has_no_spread() {
        let one = Spread::of(vec![Some(3.0), None]);
        assert_eq!(HeadlineSpread::of(&one, 1, 1), None);
        let three = Spread::of(vec![Some(3.0); 3]);
        assert_eq!(HeadlineSpread::of(&three, 0, 1), None);
    }

    #[test]
    fn numbers_lose_their_trailing_zeros() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(4.0 / 3.0), "1.33");
    }
}
