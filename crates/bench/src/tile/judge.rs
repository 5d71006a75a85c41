//! One member in one window, judged: the same rule table as a whole step
//! ([`tickpack_report::qos::RULES`], over the window's own figures), plus
//! the two rules only players who come and go can break: a join that
//! failed, and a join slower than the member's limit. Pure: figures in,
//! the misses in words out.

use tickpack_report::bench::QosLimits;
use tickpack_report::qos::{failures, StepFigures, TickRate};
use tickpack_report::{Measurements, Percentiles};

/// What one member measured in one window.
#[derive(Debug, Clone, Default)]
pub struct WindowFigures {
    /// Players present, time-weighted (every server of the member).
    pub players_present: f64,
    pub joins: u64,
    pub failed_joins: u64,
    /// Time from a join's first packet to its first snapshot.
    pub join_us: Option<Percentiles>,
    /// The players' figures of the window (commands due in it, snapshots
    /// of its ticks).
    pub measured: Measurements,
    /// The member's servers' run delay in the window.
    pub run_delay_us: Option<Percentiles>,
    /// The member's query round trips in the window (an idle member).
    pub query_us: Option<Percentiles>,
}

impl WindowFigures {
    /// The players' side of a window as the players recorded it.
    pub fn from_players_window(w: &tickpack_report::windows::PlayersWindow) -> WindowFigures {
        WindowFigures {
            players_present: w.players_present,
            joins: w.joins,
            failed_joins: w.failed_joins,
            join_us: w.join_us,
            measured: Measurements {
                transaction_latency_us: w.transaction_latency_us,
                server_frame_us: w.server_frame_us.unwrap_or_default(),
                snapshots: w.snapshots,
                commands: w.commands,
                ..Default::default()
            },
            run_delay_us: None,
            query_us: None,
        }
    }
}

/// The misses of one window, in the order they are reported; empty: it
/// passed. `max_join_us` is the member's join limit.
pub fn judge(f: &WindowFigures, qos: &QosLimits, tick: TickRate, max_join_us: u64) -> Vec<String> {
    let mut out = Vec::new();
    if f.failed_joins > 0 {
        out.push(format!(
            "{} of {} joins did not get in within {}",
            f.failed_joins,
            f.joins + f.failed_joins,
            ms(max_join_us)
        ));
    }
    if let Some(j) = f.join_us.filter(|j| j.count > 0) {
        if j.p99 > max_join_us {
            out.push(format!("p99 join time {} > {}", ms(j.p99), ms(max_join_us)));
        }
    }
    // A window in which nobody was present has no player figures to judge
    // (the valley of an evening): only the servers' own figures count.
    let present = f.players_present.round() as u32;
    let figures = StepFigures::of(
        present,
        present,
        tick,
        &f.measured,
        f.query_us.as_ref(),
        f.run_delay_us.as_ref(),
    );
    let misses = failures(&figures, None, qos);
    out.extend(
        misses
            .iter()
            // Whether every player connected is the join rules' business
            // here: a player who left by plan is not missing.
            .filter(|m| {
                !matches!(
                    m.rule(),
                    tickpack_report::qos::RuleId::PlayersConnected
                        | tickpack_report::qos::RuleId::TransactionsMeasured
                )
            })
            .map(ToString::to_string),
    );
    out
}

fn ms(us: u64) -> String {
    if us.is_multiple_of(1000) {
        format!("{} ms", us / 1000)
    } else {
        format!("{:.1} ms", us as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick() -> TickRate {
        TickRate::new(60).unwrap()
    }

    fn p99(v: u64) -> Percentiles {
        Percentiles {
            p50: v / 2,
            p90: v,
            p99: v,
            p999: v,
            max: v,
            mean: v as f64,
            count: 100,
        }
    }

    fn playing(latency_us: u64) -> WindowFigures {
        let mut f = WindowFigures {
            players_present: 12.0,
            ..Default::default()
        };
        f.measured.transaction_latency_us = p99(latency_us);
        f.measured.snapshots.expected = 1000;
        f.measured.snapshots.received = 1000;
        f.measured.commands.sent = 100;
        f.measured.commands.reflected = 100;
        f
    }

    #[test]
    fn a_window_within_its_limits_passes() {
        let q = tickpack_report::qos::default_limits(tick());
        assert!(judge(&playing(10_000), &q, tick(), 2_000_000).is_empty());
    }

    #[test]
    fn a_slow_window_fails_on_the_step_rule_table() {
        let q = tickpack_report::qos::default_limits(tick());
        let why = judge(&playing(60_000), &q, tick(), 2_000_000);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("p99 transaction latency"), "{why:?}");
    }

    #[test]
    fn failed_and_slow_joins_fail_the_window() {
        let q = tickpack_report::qos::default_limits(tick());
        let mut f = playing(10_000);
        f.joins = 3;
        f.failed_joins = 1;
        f.join_us = Some(p99(2_500_000));
        let why = judge(&f, &q, tick(), 2_000_000);
        assert_eq!(
            why,
            vec![
                "1 of 4 joins did not get in within 2000 ms".to_string(),
                "p99 join time 2500 ms > 2000 ms".to_string()
            ]
        );
    }

    #[test]
    fn an_empty_valley_is_judged_on_the_servers_figures_only() {
        let mut q = tickpack_report::qos::default_limits(tick());
        let empty = WindowFigures::default();
        assert!(judge(&empty, &q, tick(), 1).is_empty());
        q.p99_run_delay_us = Some(4_000);
        let waited = WindowFigures {
            run_delay_us: Some(p99(9_000)),
            ..Default::default()
        };
        let why = judge(&waited, &q, tick(), 1);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("run delay"), "{why:?}");
    }
}
