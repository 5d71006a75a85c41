//! The QoS verdict of one ladder step: which limits it missed, in words.
//!
//! A step passes when every player connected, no player went without
//! snapshots long enough to call it an outage, and, at the 99th percentile,
//! in-game transaction latency stays within an absolute limit and within a
//! factor of the one-tile baseline step, ticks start on time, snapshots and
//! commands are not lost (counted against the schedule, so a dead or
//! restarted server is loss), and the servers' frames fit their tick budget. The limits are
//! [`QosLimits`]; their defaults are in [`default_limits`] and
//! docs/methodology.md.

use tickpack_report::bench::QosLimits;
use tickpack_report::{CommandCounts, Outages, Percentiles, SnapshotCounts};

/// Defaults for a tick rate: p99 transaction latency within one tick + 5 ms
/// and within 1.5x the one-tile baseline; p99 tick lateness within a quarter
/// tick; at most 0.1 % snapshots lost; p99 frame within half the tick.
pub fn default_limits(tick_hz: u32) -> QosLimits {
    let tick_us = 1_000_000 / u64::from(tick_hz.max(1));
    QosLimits {
        p99_transaction_us: tick_us + 5_000,
        p99_relative_to_baseline: 1.5,
        p99_tick_lateness_us: tick_us / 4,
        max_snapshot_loss: 0.001,
        p99_frame_budget: 0.5,
    }
}

/// What the verdict looks at.
#[derive(Debug, Clone, Copy)]
pub struct StepFigures<'a> {
    pub players: u32,
    pub connected: u32,
    pub tick_hz: u32,
    pub transaction_latency_us: &'a Percentiles,
    pub tick_lateness_us: &'a Percentiles,
    pub server_frame_us: &'a Percentiles,
    pub snapshots: &'a SnapshotCounts,
    pub commands: &'a CommandCounts,
    pub outages: &'a Outages,
}

/// Every limit `s` misses; empty means pass. `baseline_p99_us` is the p99
/// transaction latency of the first step (None for the first step itself).
pub fn failures(s: &StepFigures<'_>, baseline_p99_us: Option<u64>, q: &QosLimits) -> Vec<String> {
    let mut f = vec![];
    let ms = |us: u64| us as f64 / 1000.0;
    if s.connected < s.players {
        f.push(format!(
            "only {} of {} players connected",
            s.connected, s.players
        ));
    }
    if s.outages.count > 0 {
        f.push(format!(
            "outage: {} stretch(es) of 200 ms or more without snapshots (longest {:.0} ms, {:.0} ms in all)",
            s.outages.count,
            ms(s.outages.longest_us),
            ms(s.outages.total_us)
        ));
    }
    if s.transaction_latency_us.count == 0 {
        f.push("no transaction was measured".into());
    }
    let p99 = s.transaction_latency_us.p99;
    if p99 > q.p99_transaction_us {
        f.push(format!(
            "p99 transaction latency {:.2} ms > {:.2} ms",
            ms(p99),
            ms(q.p99_transaction_us)
        ));
    }
    if let Some(base) = baseline_p99_us.filter(|&b| b > 0) {
        let limit = (base as f64 * q.p99_relative_to_baseline) as u64;
        if p99 > limit {
            f.push(format!(
                "p99 transaction latency {:.2} ms > {:.1}x the one-tile baseline ({:.2} ms)",
                ms(p99),
                q.p99_relative_to_baseline,
                ms(base)
            ));
        }
    }
    if s.tick_lateness_us.p99 > q.p99_tick_lateness_us {
        f.push(format!(
            "p99 tick lateness {:.2} ms > {:.2} ms",
            ms(s.tick_lateness_us.p99),
            ms(q.p99_tick_lateness_us)
        ));
    }
    let lost = s.snapshots.lost as f64 / (s.snapshots.expected.max(1)) as f64;
    if lost > q.max_snapshot_loss {
        f.push(format!(
            "{:.3}% of snapshots lost > {:.3}%",
            lost * 100.0,
            q.max_snapshot_loss * 100.0
        ));
    }
    // Against every command due, sent or not (a dead server sends none).
    if s.commands.lost > 0
        && s.commands.lost as f64 / s.commands.due().max(1) as f64 > q.max_snapshot_loss
    {
        f.push(format!(
            "{} of {} due commands lost (not reflected within the loss deadline)",
            s.commands.lost,
            s.commands.due()
        ));
    }
    let budget = (1_000_000.0 / f64::from(s.tick_hz.max(1)) * q.p99_frame_budget) as u64;
    if s.server_frame_us.p99 > budget {
        f.push(format!(
            "p99 server frame {:.2} ms > {:.0}% of the tick ({:.2} ms)",
            ms(s.server_frame_us.p99),
            q.p99_frame_budget * 100.0,
            ms(budget)
        ));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_report::{new_histogram, record};

    fn pct(values: impl IntoIterator<Item = u64>) -> Percentiles {
        let mut h = new_histogram();
        for v in values {
            record(&mut h, v);
        }
        Percentiles::from_histogram(&h)
    }

    struct Fixture {
        tl: Percentiles,
        late: Percentiles,
        frame: Percentiles,
        snaps: SnapshotCounts,
        cmds: CommandCounts,
        outages: Outages,
    }

    impl Fixture {
        /// A healthy 100 Hz step: latencies spread over one tick plus ~1 ms.
        fn good() -> Self {
            Fixture {
                tl: pct((0..10_000).map(|i| 1_000 + i)),
                late: pct((0..1000).map(|i| 5 + i % 50)),
                frame: pct((0..1000).map(|i| 800 + i % 400)),
                snaps: SnapshotCounts {
                    expected: 12_000,
                    received: 12_000,
                    lost: 0,
                },
                cmds: CommandCounts {
                    sent: 12_000,
                    reflected: 12_000,
                    lost: 0,
                },
                outages: Outages::default(),
            }
        }
        fn figures(&self) -> StepFigures<'_> {
            StepFigures {
                players: 12,
                connected: 12,
                tick_hz: 100,
                transaction_latency_us: &self.tl,
                tick_lateness_us: &self.late,
                server_frame_us: &self.frame,
                snapshots: &self.snaps,
                commands: &self.cmds,
                outages: &self.outages,
            }
        }
    }

    #[test]
    fn a_healthy_step_passes() {
        let f = Fixture::good();
        assert_eq!(
            failures(&f.figures(), Some(10_900), &default_limits(100)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_slow_tail_fails_the_absolute_and_relative_limits() {
        let mut f = Fixture::good();
        // 2 % of transactions take 40 ms: p99 lands in the tail.
        f.tl = pct((0..10_000).map(|i| if i % 50 == 0 { 40_000 } else { 1_000 + i }));
        let why = failures(&f.figures(), Some(10_000), &default_limits(100));
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why[0].starts_with("p99 transaction latency 40."), "{why:?}");
        assert!(why[1].contains("1.5x the one-tile baseline"), "{why:?}");
    }

    #[test]
    fn the_first_step_has_no_relative_limit() {
        let mut f = Fixture::good();
        f.tl = pct((0..10_000).map(|i| 1_000 + i + 3_000)); // p99 ~ 13.9 ms: within 15 ms
        assert!(failures(&f.figures(), None, &default_limits(100)).is_empty());
        assert_eq!(
            failures(&f.figures(), Some(5_000), &default_limits(100)).len(),
            1
        );
    }

    #[test]
    fn late_ticks_slow_frames_and_loss_each_fail() {
        let mut f = Fixture::good();
        f.late = pct((0..1000).map(|i| if i % 20 == 0 { 6_000 } else { 10 }));
        f.frame = pct((0..1000).map(|i| if i % 20 == 0 { 7_000 } else { 900 }));
        f.snaps = SnapshotCounts {
            expected: 10_000,
            received: 9_980,
            lost: 20,
        };
        let why = failures(&f.figures(), None, &default_limits(100));
        assert_eq!(why.len(), 3, "{why:?}");
        assert!(why[0].contains("tick lateness 6."), "{why:?}");
        assert!(why[1].contains("0.200% of snapshots lost"), "{why:?}");
        assert!(why[2].contains("p99 server frame 7."), "{why:?}");
    }

    #[test]
    fn missing_players_and_empty_measurements_fail() {
        let f = Fixture::good();
        let mut fig = f.figures();
        fig.connected = 10;
        let empty = Percentiles::default();
        fig.transaction_latency_us = &empty;
        let why = failures(&fig, None, &default_limits(100));
        assert!(why.iter().any(|w| w.contains("only 10 of 12")), "{why:?}");
        assert!(why.iter().any(|w| w.contains("no transaction")), "{why:?}");
    }

    #[test]
    fn a_step_with_an_outage_fails_qos_even_if_its_loss_is_below_the_limit() {
        let mut f = Fixture::good();
        // One player of 12 lost 250 ms of a 100 s step: 25 of 120 000
        // snapshots (0.02 %), within the loss limit; the outage is not.
        f.snaps = SnapshotCounts {
            expected: 120_000,
            received: 119_975,
            lost: 25,
        };
        f.outages = Outages {
            count: 1,
            total_us: 250_000,
            longest_us: 250_000,
        };
        let why = failures(&f.figures(), None, &default_limits(100));
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].starts_with("outage: 1 "), "{why:?}");
        assert!(why[0].contains("longest 250 ms"), "{why:?}");
    }

    #[test]
    fn commands_never_sent_to_a_dead_server_fail_the_loss_limit() {
        let mut f = Fixture::good();
        // The players could send nothing: every due command is lost.
        f.cmds = CommandCounts {
            sent: 0,
            reflected: 0,
            lost: 12_000,
        };
        let why = failures(&f.figures(), None, &default_limits(100));
        assert!(
            why.iter()
                .any(|w| w.contains("12000 of 12000 due commands lost")),
            "{why:?}"
        );
    }

    #[test]
    fn limits_follow_the_tick_rate() {
        let q = default_limits(64);
        assert_eq!(q.p99_transaction_us, 15_625 + 5_000);
        assert_eq!(q.p99_tick_lateness_us, 3_906);
    }
}
