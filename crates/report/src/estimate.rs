//! Finer than a whole server: where between the last passing step and the
//! first failing one the QoS limit lies, for machines with few server cores
//! (where one step is a whole server per core, 25-50 % of the answer). The
//! judged figures that follow the load most closely (p99 tick lateness and
//! p99 server frame) are interpolated linearly in servers between the two
//! steps to the point where the first of them meets its limit
//! (`tickpack_bench::estimate` computes it). It is an estimate, not a
//! measured step, and is always shown as one, beside the steps.

use serde::{Deserialize, Serialize};

use crate::spread::number;

/// Up to this many server cores a step is coarse enough to estimate
/// between steps.
pub const FEW_SERVER_CORES: u32 = 4;

/// The estimated QoS limit, as stored in result.json (`limit_estimate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitEstimate {
    /// Servers at which the judged figure meets its limit (one decimal;
    /// over several ladders, their median).
    pub servers: f64,
    /// The same per server core (three decimals).
    pub per_core: f64,
    /// The last passing and the first failing step it lies between (over
    /// several ladders, those of the ladder whose estimate is nearest the
    /// median; every ladder's are in `per_ladder`).
    pub passed_servers: u32,
    pub failed_servers: u32,
    /// The figure interpolated, in words ("p99 tick lateness"; over
    /// several ladders, that of the ladder nearest the median).
    pub figure: String,
    /// Its limit, microseconds.
    pub limit_us: u64,
    /// How many ladders gave an estimate.
    pub ladders: u32,
    /// Each ladder's own estimate, in ladder order, when more than one
    /// gave one. Absent in results from before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_ladder: Vec<LadderEstimate>,
}

/// One ladder's estimate: where its QoS limit lies between its own last
/// passing and first failing step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderEstimate {
    /// Servers (one decimal).
    pub servers: f64,
    pub passed_servers: u32,
    pub failed_servers: u32,
    /// The figure interpolated, in words.
    pub figure: String,
}

impl LimitEstimate {
    /// One line, marked as an estimate: "estimate, not a measured step: the
    /// QoS limit lies near 3.4 servers (3.4 per server core), between the
    /// passing step of 3 servers and the failing one of 4 (p99 tick lateness
    /// interpolated to its 2.50 ms limit)".
    ///
    /// Over several ladders it says that the figure is their median and
    /// gives each ladder's estimate with its own two steps, so no ladder's
    /// steps are named for a figure they do not bracket.
    pub fn words(&self) -> String {
        if self.per_ladder.len() > 1 {
            return self.median_words();
        }
        let over = if self.ladders > 1 {
            format!("; median over {} ladders", self.ladders)
        } else {
            String::new()
        };
        format!(
            "estimate, not a measured step: the QoS limit lies near {:.1} servers ({} per server \
             core), between the passing step of {} and the failing one of {} ({} interpolated \
             to its {:.2} ms limit{over})",
            self.servers,
            number(self.per_core),
            crate::words::servers(self.passed_servers),
            self.failed_servers,
            self.figure,
            self.limit_us as f64 / 1000.0
        )
    }
}

impl LimitEstimate {
    /// [`LimitEstimate::words`] over several ladders: "… near 4.0 servers
    /// (4 per server core), the median of 3 ladders' estimates: 5.3 between
    /// the steps of 5 and 6 servers, 2.4 between 2 and 3, 4.0 between 4 and
    /// 5 (p99 server frame interpolated to its limit)".
    fn median_words(&self) -> String {
        let each: Vec<String> = self
            .per_ladder
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let steps = if i == 0 { "the steps of " } else { "" };
                let unit = if i == 0 { " servers" } else { "" };
                format!(
                    "{:.1} between {steps}{} and {}{unit}",
                    l.servers, l.passed_servers, l.failed_servers
                )
            })
            .collect();
        let mut figures: Vec<&str> = self.per_ladder.iter().map(|l| l.figure.as_str()).collect();
        figures.sort_unstable();
        figures.dedup();
        format!(
            "estimate, not a measured step: the QoS limit lies near {:.1} servers ({} per server \
             core), the median of {} ladders' estimates: {} ({} interpolated to its limit)",
            self.servers,
            number(self.per_core),
            self.per_ladder.len(),
            each.join(", "),
            figures.join(" or ")
        )
    }
}

/// A judged figure's crossing of its limit between two steps, for
/// [`LimitEstimate`]: the servers where it met the limit, the two steps,
/// the figure and its limit (computed by the bench's summary).
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub servers: f64,
    pub passed_servers: u32,
    pub failed_servers: u32,
    pub figure: &'static str,
    pub limit_us: u64,
}
