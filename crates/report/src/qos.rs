//! The QoS verdict of one ladder step, and the one table of rules behind it.
//!
//! [`RULES`] lists every rule a step must meet, in the order its misses are
//! reported: a name, what it protects, how to state its limit for a
//! [`QosLimits`] (used by the HTML report's list of limits) and how to check
//! it (used by the bench's verdict). [`failures`] runs the table and returns
//! typed [`Miss`]es; a miss prints as the sentence `result.json` records in
//! `failures`. The verdict itself is [`Verdict`], stored as `"pass"` or
//! `"fail"`.
//!
//! The table lives here, beside the schema, because both sides need it: the
//! bench (which depends on this crate) judges steps with it, and the report
//! (which depends on nothing of tickpack's) shows the limits a result was
//! judged by. [`default_limits`] gives the defaults for a tick rate
//! (docs/methodology.md); `tickpack bench` flags override them.

use std::fmt;

use crate::bench::QosLimits;
pub use crate::figures::StepFigures;
use crate::numbers::fmt_num as num;
pub use crate::verdict::{idle_reason, StepLoad, Verdict, IDLE_FLOOR_PERCENT_PER_SERVER};
use crate::Percentiles;
pub use tickpack_units::TickRate;

/// Defaults for a tick rate: p99 transaction latency within one tick + 5 ms
/// and within 1.5x the one-tile baseline; p99 tick lateness within a quarter
/// tick; at most 0.1 % snapshots lost; p99 frame within half the tick.
pub fn default_limits(tick: TickRate) -> QosLimits {
    let tick_us = tick.interval_us();
    QosLimits {
        p99_transaction_us: tick_us + 5_000,
        p99_relative_to_baseline: 1.5,
        p99_tick_lateness_us: tick_us / 4,
        max_snapshot_loss: 0.001,
        p99_frame_budget: 0.5,
        p99_query_us: None,
        p99_run_delay_us: None,
    }
}

/// Defaults for a game tickpack cannot play (no player protocol): judged
/// on the servers' run delay (p99 within a quarter tick, as tick lateness:
/// a server that waits for a CPU starts its tick that late) and on its
/// own query (p99 within two ticks + 5 ms: a query waits for the next
/// frame, then for a CPU).
pub fn default_limits_without_players(tick: TickRate) -> QosLimits {
    let tick_us = tick.interval_us();
    QosLimits {
        p99_query_us: Some(2 * tick_us + 5_000),
        p99_run_delay_us: Some(tick_us / 4),
        ..default_limits(tick)
    }
}

/// The fewest seconds of a step whose per-second p99s stand for its run
/// delay in the relative rule ([`typical_run_delay_us`]); a shorter step
/// (`--quick`'s 2 s) is compared on its p99 over the whole window.
pub const RUN_DELAY_MIN_SECONDS: usize = 3;

/// The run delay the relative rule compares, µs: the lower median of the
/// step's per-second p99s (`Step::run_delay_seconds_p99_us`) when it has
/// at least [`RUN_DELAY_MIN_SECONDS`], else its p99 over the whole window
/// (results from before the seconds were kept, short steps). One server's
/// p99 over a whole step rests on a few dozen intervals, so a wake-up or
/// two that waited milliseconds decide it: a game's first step gave
/// limits that moved its answer between 9 and 12 servers. The median of
/// the seconds is what most of the window looked like, on the first step
/// (the baseline) as on the step judged, so one noisy second on either
/// side moves neither; the absolute rule still judges the whole window's
/// p99, bursts included.
pub fn typical_run_delay_us(seconds_p99_us: &[u64], whole: Option<&Percentiles>) -> Option<u64> {
    if seconds_p99_us.len() >= RUN_DELAY_MIN_SECONDS {
        let mut v = seconds_p99_us.to_vec();
        v.sort_unstable();
        return Some(v[(v.len() - 1) / 2]);
    }
    whole.filter(|p| p.count > 0).map(|p| p.p99)
}

/// The floor of the relative run-delay rule at `tick_hz`: an eighth of a
/// tick (2.08 ms at 60 Hz), half the absolute limit. A server alone waits
/// a fraction of a millisecond, and on a virtual machine a wake-up alone
/// costs 50-300 µs and bursts reach milliseconds, so a first step's
/// sub-millisecond run delay times a factor would judge noise; with the
/// floor, the rule fails a step whose servers wait far longer than one
/// did alone, and scales with the tick as the absolute limit does.
pub fn run_delay_relative_floor_us(tick: TickRate) -> u64 {
    tick.interval_us() / 8
}

/// Which rule: one per row of [`RULES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleId {
    PlayersConnected,
    Outage,
    TransactionsMeasured,
    P99Transaction,
    P99RelativeToBaseline,
    P99TickLateness,
    SnapshotLoss,
    CommandLoss,
    P99ServerFrame,
    P99Query,
    P99RunDelay,
    P99RunDelayRelative,
}

/// One missed rule: which one, what was measured, and the limit it missed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Miss {
    /// Fewer players connected than the step started.
    PlayersConnected {
        connected: u32,
        players: u32,
    },
    /// Some player went 200 ms or more without a snapshot (any count > 0).
    Outage {
        count: u64,
        longest_us: u64,
        total_us: u64,
    },
    /// No transaction latency was measured at all.
    TransactionsMeasured,
    P99Transaction {
        p99_us: u64,
        limit_us: u64,
    },
    P99RelativeToBaseline {
        p99_us: u64,
        factor: f64,
        baseline_us: u64,
    },
    P99TickLateness {
        p99_us: u64,
        limit_us: u64,
    },
    /// Fractions (0.001 = 0.1 %).
    SnapshotLoss {
        lost: f64,
        limit: f64,
    },
    /// Lost against every command due; the limit is the loss limit.
    CommandLoss {
        lost: u64,
        due: u64,
        limit: f64,
    },
    /// `budget` is the limit as a fraction of the tick, `limit_us` in time.
    P99ServerFrame {
        p99_us: u64,
        budget: f64,
        limit_us: u64,
    },
    /// p99 query round trip over its limit; `None`: no query was answered.
    P99Query {
        p99_us: Option<u64>,
        limit_us: u64,
    },
    /// p99 run delay over its limit; `None`: no thread ran (no sample).
    P99RunDelay {
        p99_us: Option<u64>,
        limit_us: u64,
    },
    P99RunDelayRelative {
        p99_us: u64,
        factor: f64,
        baseline_us: u64,
        floor_us: u64,
    },
}

impl Miss {
    /// The rule this miss belongs to.
    pub fn rule(&self) -> RuleId {
        match self {
            Miss::PlayersConnected { .. } => RuleId::PlayersConnected,
            Miss::Outage { .. } => RuleId::Outage,
            Miss::TransactionsMeasured => RuleId::TransactionsMeasured,
            Miss::P99Transaction { .. } => RuleId::P99Transaction,
            Miss::P99RelativeToBaseline { .. } => RuleId::P99RelativeToBaseline,
            Miss::P99TickLateness { .. } => RuleId::P99TickLateness,
            Miss::SnapshotLoss { .. } => RuleId::SnapshotLoss,
            Miss::CommandLoss { .. } => RuleId::CommandLoss,
            Miss::P99ServerFrame { .. } => RuleId::P99ServerFrame,
            Miss::P99Query { .. } => RuleId::P99Query,
            Miss::P99RunDelay { .. } => RuleId::P99RunDelay,
            Miss::P99RunDelayRelative { .. } => RuleId::P99RunDelayRelative,
        }
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The sentence `result.json` records in a step's `failures`.
impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Miss::PlayersConnected { connected, players } => {
                write!(f, "only {connected} of {players} players connected")
            }
            Miss::Outage {
                count,
                longest_us,
                total_us,
            } => write!(
                f,
                "outage: {count} stretch(es) of 200 ms or more without snapshots \
                 (longest {:.0} ms, {:.0} ms in all)",
                ms(longest_us),
                ms(total_us)
            ),
            Miss::TransactionsMeasured => f.write_str("no transaction was measured"),
            Miss::P99Transaction { p99_us, limit_us } => write!(
                f,
                "p99 transaction latency {:.2} ms > {:.2} ms",
                ms(p99_us),
                ms(limit_us)
            ),
            Miss::P99RelativeToBaseline {
                p99_us,
                factor,
                baseline_us,
            } => write!(
                f,
                "p99 transaction latency {:.2} ms > {factor:.1}x the one-tile baseline ({:.2} ms)",
                ms(p99_us),
                ms(baseline_us)
            ),
            Miss::P99TickLateness { p99_us, limit_us } => write!(
                f,
                "p99 tick lateness {:.2} ms > {:.2} ms",
                ms(p99_us),
                ms(limit_us)
            ),
            Miss::SnapshotLoss { lost, limit } => write!(
                f,
                "{:.3}% of snapshots lost > {:.3}%",
                lost * 100.0,
                limit * 100.0
            ),
            Miss::CommandLoss { lost, due, .. } => write!(
                f,
                "{lost} of {due} due commands lost (not reflected within the loss deadline)"
            ),
            Miss::P99ServerFrame {
                p99_us,
                budget,
                limit_us,
            } => write!(
                f,
                "p99 server frame {:.2} ms > {:.0}% of the tick ({:.2} ms)",
                ms(p99_us),
                budget * 100.0,
                ms(limit_us)
            ),
            Miss::P99Query {
                p99_us: Some(p99_us),
                limit_us,
            } => write!(
                f,
                "p99 query latency {:.2} ms > {:.2} ms",
                ms(p99_us),
                ms(limit_us)
            ),
            Miss::P99Query {
                p99_us: None,
                limit_us,
            } => write!(
                f,
                "no query was answered (limit: p99 query latency {:.2} ms)",
                ms(limit_us)
            ),
            Miss::P99RunDelay {
                p99_us: Some(p99_us),
                limit_us,
            } => write!(
                f,
                "p99 run delay {:.2} ms > {:.2} ms",
                ms(p99_us),
                ms(limit_us)
            ),
            Miss::P99RunDelay {
                p99_us: None,
                limit_us,
            } => write!(
                f,
                "no run delay was sampled (the servers never ran; limit: p99 run delay {:.2} ms)",
                ms(limit_us)
            ),
            Miss::P99RunDelayRelative {
                p99_us,
                factor,
                baseline_us,
                floor_us,
            } => write!(
                f,
                "p99 run delay {:.2} ms > {factor:.1}x the first step's ({:.2} ms) + {:.2} ms",
                ms(p99_us),
                ms(baseline_us),
                ms(floor_us)
            ),
        }
    }
}

/// A rule's limit in words, for a list of limits. `AtMost` reads
/// "`measure` ≤ `bound`"; `Must` is a whole requirement.
#[derive(Debug, Clone, PartialEq)]
pub enum LimitText {
    AtMost {
        measure: &'static str,
        bound: String,
    },
    Must(String),
    /// The rule is not judged with these limits (an optional rule left unset).
    Off,
}

impl fmt::Display for LimitText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitText::AtMost { measure, bound } => write!(f, "{measure} ≤ {bound}"),
            LimitText::Must(s) => f.write_str(s),
            LimitText::Off => f.write_str("not judged"),
        }
    }
}

/// One row of the rule table.
pub struct Rule {
    pub id: RuleId,
    /// Short name, e.g. "p99 tick lateness".
    pub name: &'static str,
    /// What the rule protects, in one sentence.
    pub description: &'static str,
    /// Judged only where there are players (the figures come from them);
    /// n/a for a game tickpack cannot play.
    pub players: bool,
    /// The limit in words for these limits and tick rate.
    pub limit: fn(&QosLimits, TickRate) -> LimitText,
    /// True when the rule had something to judge in a step with these
    /// figures: its limit is set and the figure it reads was measured.
    /// A figure no server reports (an ioquake3 game reports no tick lateness or
    /// frame time: their count is 0) passes [`Rule::check`] without being
    /// judged, and the report must not list its limit as one the step met.
    pub judged: fn(&StepFigures<'_>, &QosLimits) -> bool,
    /// The miss, if `figures` miss this rule; `baseline_p99_us` is the
    /// ladder's first step's p99 transaction latency (None for that step).
    pub check: fn(&StepFigures<'_>, Option<u64>, &QosLimits) -> Option<Miss>,
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The p99 server-frame limit in microseconds at `tick_hz`.
pub fn frame_limit_us(q: &QosLimits, tick: TickRate) -> u64 {
    (tick.interval_ns() as f64 / 1_000.0 * q.p99_frame_budget) as u64
}

/// Every rule, in the order misses are reported.
pub const RULES: [Rule; 12] = [
    Rule {
        id: RuleId::PlayersConnected,
        players: true,
        name: "players connected",
        description: "every player the step started is connected",
        limit: |_, _| LimitText::Must("every player connects".into()),
        judged: |s, _| s.players > 0,
        check: |s, _, _| {
            (s.connected < s.players).then_some(Miss::PlayersConnected {
                connected: s.connected,
                players: s.players,
            })
        },
    },
    Rule {
        id: RuleId::Outage,
        players: true,
        name: "outage",
        description: "no player goes without snapshots long enough to notice",
        limit: |_, _| {
            LimitText::Must("no outage (200 ms or more without snapshots for a player)".into())
        },
        judged: |s, _| s.players > 0,
        check: |s, _, _| {
            (s.outages.count > 0).then_some(Miss::Outage {
                count: s.outages.count,
                longest_us: s.outages.longest_us,
                total_us: s.outages.total_us,
            })
        },
    },
    Rule {
        id: RuleId::TransactionsMeasured,
        players: true,
        name: "transactions measured",
        description: "the step measured at least one transaction",
        limit: |_, _| LimitText::Must("at least one transaction measured".into()),
        judged: |s, _| s.players > 0,
        check: |s, _, _| {
            (s.transaction_latency_us.count == 0).then_some(Miss::TransactionsMeasured)
        },
    },
    Rule {
        id: RuleId::P99Transaction,
        players: true,
        name: "p99 transaction latency",
        description: "in-game transaction latency stays within an absolute limit",
        limit: |q, _| LimitText::AtMost {
            measure: "p99 transaction latency",
            bound: format!("{} ms", num(ms(q.p99_transaction_us))),
        },
        judged: |s, _| s.transaction_latency_us.count > 0,
        check: |s, _, q| {
            let p99 = s.transaction_latency_us.p99;
            (p99 > q.p99_transaction_us).then_some(Miss::P99Transaction {
                p99_us: p99,
                limit_us: q.p99_transaction_us,
            })
        },
    },
    Rule {
        id: RuleId::P99RelativeToBaseline,
        players: true,
        name: "p99 transaction latency relative to the first step",
        description: "packing more servers does not slow transactions much past the one-tile baseline",
        limit: |q, _| LimitText::AtMost {
            measure: "p99 transaction latency",
            bound: format!("{}x the ladder's first step", num(q.p99_relative_to_baseline)),
        },
        judged: |s, _| s.transaction_latency_us.count > 0,
        check: |s, baseline, q| {
            let base = baseline.filter(|&b| b > 0)?;
            let p99 = s.transaction_latency_us.p99;
            let limit = (base as f64 * q.p99_relative_to_baseline) as u64;
            (p99 > limit).then_some(Miss::P99RelativeToBaseline {
                p99_us: p99,
                factor: q.p99_relative_to_baseline,
                baseline_us: base,
            })
        },
    },
    Rule {
        id: RuleId::P99TickLateness,
        players: true,
        name: "p99 tick lateness",
        description: "ticks start on time",
        limit: |q, _| LimitText::AtMost {
            measure: "p99 tick lateness",
            bound: format!("{} ms", num(ms(q.p99_tick_lateness_us))),
        },
        judged: |s, _| s.tick_lateness_us.count > 0,
        check: |s, _, q| {
            (s.tick_lateness_us.p99 > q.p99_tick_lateness_us).then_some(Miss::P99TickLateness {
                p99_us: s.tick_lateness_us.p99,
                limit_us: q.p99_tick_lateness_us,
            })
        },
    },
    Rule {
        id: RuleId::SnapshotLoss,
        players: true,
        name: "snapshots lost",
        description: "snapshots are not lost (counted against the schedule, so a dead or restarted server is loss)",
        limit: |q, _| LimitText::AtMost {
            measure: "snapshots lost",
            bound: format!("{} %", num(q.max_snapshot_loss * 100.0)),
        },
        judged: |s, _| s.snapshots.expected > 0,
        check: |s, _, q| {
            let lost = s.snapshots.lost as f64 / (s.snapshots.expected.max(1)) as f64;
            (lost > q.max_snapshot_loss).then_some(Miss::SnapshotLoss {
                lost,
                limit: q.max_snapshot_loss,
            })
        },
    },
    Rule {
        id: RuleId::CommandLoss,
        players: true,
        name: "commands lost",
        description: "commands are reflected in time (counted against every command due, sent or not)",
        limit: |q, _| LimitText::AtMost {
            measure: "commands lost",
            bound: format!("{} % of those due", num(q.max_snapshot_loss * 100.0)),
        },
        judged: |s, _| s.commands.due() > 0,
        check: |s, _, q| {
            // Against every command due, sent or not (a dead server sends none).
            let (lost, due) = (s.commands.lost, s.commands.due());
            (lost > 0 && lost as f64 / due.max(1) as f64 > q.max_snapshot_loss).then_some(
                Miss::CommandLoss {
                    lost,
                    due,
                    limit: q.max_snapshot_loss,
                },
            )
        },
    },
    Rule {
        id: RuleId::P99ServerFrame,
        players: true,
        name: "p99 server frame",
        description: "the servers' frames fit their tick budget",
        limit: |q, tick| {
            let at = format!(
                " ({} ms at {tick} Hz)",
                num(tick.interval_ms() * q.p99_frame_budget)
            );
            LimitText::AtMost {
                measure: "p99 server frame",
                bound: format!(
                    "{} % of the tick interval{at}",
                    num(q.p99_frame_budget * 100.0)
                ),
            }
        },
        judged: |s, _| s.server_frame_us.count > 0,
        check: |s, _, q| {
            let limit_us = frame_limit_us(q, s.tick_hz);
            (s.server_frame_us.p99 > limit_us).then_some(Miss::P99ServerFrame {
                p99_us: s.server_frame_us.p99,
                budget: q.p99_frame_budget,
                limit_us,
            })
        },
    },
    Rule {
        id: RuleId::P99Query,
        players: false,
        name: "p99 query latency",
        description: "the game's own query protocol (server browsers, health checks) is answered in time; only with --qos-query-p99-ms",
        limit: |q, _| match q.p99_query_us {
            Some(limit) => LimitText::AtMost {
                measure: "p99 query latency (not transaction latency)",
                bound: format!("{} ms", num(ms(limit))),
            },
            None => LimitText::Off,
        },
        judged: |_, q| q.p99_query_us.is_some(),
        check: |s, _, q| {
            let limit_us = q.p99_query_us?;
            match s.query_latency_us.filter(|p| p.count > 0) {
                None => Some(Miss::P99Query {
                    p99_us: None,
                    limit_us,
                }),
                Some(p) => (p.p99 > limit_us).then_some(Miss::P99Query {
                    p99_us: Some(p.p99),
                    limit_us,
                }),
            }
        },
    },
    Rule {
        id: RuleId::P99RunDelay,
        players: false,
        name: "p99 run delay",
        description: "the servers' threads do not wait long for a CPU (their ticks start that late); judged for games without players",
        limit: |q, _| match q.p99_run_delay_us {
            Some(limit) => LimitText::AtMost {
                measure: "p99 run delay",
                bound: format!("{} ms", num(ms(limit))),
            },
            None => LimitText::Off,
        },
        judged: |_, q| q.p99_run_delay_us.is_some(),
        check: |s, _, q| {
            let limit_us = q.p99_run_delay_us?;
            match s.run_delay_us.filter(|p| p.count > 0) {
                None => Some(Miss::P99RunDelay {
                    p99_us: None,
                    limit_us,
                }),
                Some(p) => (p.p99 > limit_us).then_some(Miss::P99RunDelay {
                    p99_us: Some(p.p99),
                    limit_us,
                }),
            }
        },
    },
    Rule {
        id: RuleId::P99RunDelayRelative,
        players: false,
        name: "p99 run delay relative to the first step",
        description: "packing more servers does not make them wait much longer for a CPU than the first step did (the median of each step's per-second p99s; plus an eighth of a tick: the noise floor)",
        limit: |q, tick| match q.p99_run_delay_us {
            Some(_) => LimitText::AtMost {
                measure: "p99 run delay (the median of the step's seconds)",
                bound: format!(
                    "{}x the ladder's first step's + {} ms (an eighth of a tick)",
                    num(q.p99_relative_to_baseline),
                    num(ms(run_delay_relative_floor_us(tick)))
                ),
            },
            None => LimitText::Off,
        },
        judged: |s, q| q.p99_run_delay_us.is_some() && s.players == 0 && s.run_delay_us.is_some(),
        check: |s, baseline, q| {
            q.p99_run_delay_us?;
            if s.players > 0 {
                return None;
            }
            let base = baseline?;
            let p99 = s.typical_run_delay_us()?;
            let floor_us = run_delay_relative_floor_us(s.tick_hz);
            let limit = (base as f64 * q.p99_relative_to_baseline) as u64 + floor_us;
            (p99 > limit).then_some(Miss::P99RunDelayRelative {
                p99_us: p99,
                factor: q.p99_relative_to_baseline,
                baseline_us: base,
                floor_us,
            })
        },
    },
];

impl Rule {
    /// True when [`failures`] runs this rule on `s` and it has something
    /// to judge there ([`Rule::judged`]).
    pub fn judges(&self, s: &StepFigures<'_>, q: &QosLimits) -> bool {
        (s.players > 0 || !self.players) && (self.judged)(s, q)
    }
}

/// Every rule `s` misses, in [`RULES`] order; empty means pass. A step
/// with no players is judged only by the rules that need none.
/// `baseline_p99_us` is the ladder's first step's p99 transaction latency,
/// or its run delay ([`typical_run_delay_us`]) when it had no players
/// (None for the first step itself).
pub fn failures(s: &StepFigures<'_>, baseline_p99_us: Option<u64>, q: &QosLimits) -> Vec<Miss> {
    RULES
        .iter()
        .filter(|r| s.players > 0 || !r.players)
        .filter_map(|r| (r.check)(s, baseline_p99_us, q))
        .collect()
}

#[cfg(test)]
mod tests;
