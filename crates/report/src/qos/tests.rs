//! Tests of the rule table: each rule fails on what it guards and nothing
//! else; misses print as `result.json` has always recorded them.

use super::*;
use crate::{new_histogram, record, CommandCounts, Outages, Percentiles, SnapshotCounts};

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
            tick_hz: crate::bench::TickRate::new(100).unwrap(),
            transaction_latency_us: &self.tl,
            tick_lateness_us: &self.late,
            server_frame_us: &self.frame,
            snapshots: &self.snaps,
            commands: &self.cmds,
            outages: &self.outages,
            query_latency_us: None,
            run_delay_us: None,
            run_delay_seconds_p99_us: &[],
        }
    }
}

/// The misses as `result.json` records them.
fn sentences(s: &StepFigures<'_>, baseline_p99_us: Option<u64>, q: &QosLimits) -> Vec<String> {
    failures(s, baseline_p99_us, q)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_healthy_step_passes() {
    let f = Fixture::good();
    assert_eq!(
        sentences(
            &f.figures(),
            Some(10_900),
            &default_limits(crate::bench::TickRate::new(100).unwrap())
        ),
        Vec::<String>::new()
    );
}

#[test]
fn a_slow_tail_fails_the_absolute_and_relative_limits() {
    let mut f = Fixture::good();
    // 2 % of transactions take 40 ms: p99 lands in the tail.
    f.tl = pct((0..10_000).map(|i| if i % 50 == 0 { 40_000 } else { 1_000 + i }));
    let why = sentences(
        &f.figures(),
        Some(10_000),
        &default_limits(crate::bench::TickRate::new(100).unwrap()),
    );
    assert_eq!(why.len(), 2, "{why:?}");
    assert!(why[0].starts_with("p99 transaction latency 40."), "{why:?}");
    assert!(why[1].contains("1.5x the one-tile baseline"), "{why:?}");
}

#[test]
fn the_first_step_has_no_relative_limit() {
    let mut f = Fixture::good();
    f.tl = pct((0..10_000).map(|i| 1_000 + i + 3_000)); // p99 ~ 13.9 ms: within 15 ms
    assert!(sentences(
        &f.figures(),
        None,
        &default_limits(crate::bench::TickRate::new(100).unwrap())
    )
    .is_empty());
    assert_eq!(
        sentences(
            &f.figures(),
            Some(5_000),
            &default_limits(crate::bench::TickRate::new(100).unwrap())
        )
        .len(),
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
    let why = sentences(
        &f.figures(),
        None,
        &default_limits(crate::bench::TickRate::new(100).unwrap()),
    );
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
    let why = sentences(
        &fig,
        None,
        &default_limits(crate::bench::TickRate::new(100).unwrap()),
    );
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
    let why = sentences(
        &f.figures(),
        None,
        &default_limits(crate::bench::TickRate::new(100).unwrap()),
    );
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
    let why = sentences(
        &f.figures(),
        None,
        &default_limits(crate::bench::TickRate::new(100).unwrap()),
    );
    assert!(
        why.iter()
            .any(|w| w.contains("12000 of 12000 due commands lost")),
        "{why:?}"
    );
}

#[test]
fn limits_follow_the_tick_rate() {
    let q = default_limits(crate::bench::TickRate::new(64).unwrap());
    assert_eq!(q.p99_transaction_us, 15_625 + 5_000);
    assert_eq!(q.p99_tick_lateness_us, 3_906);
}

#[test]
fn every_rule_reports_misses_under_its_own_id() {
    let mut f = Fixture::good();
    f.tl = pct((0..10_000).map(|i| if i % 50 == 0 { 40_000 } else { 1_000 + i }));
    f.late = pct((0..1000).map(|i| if i % 20 == 0 { 6_000 } else { 10 }));
    f.frame = pct((0..1000).map(|i| if i % 20 == 0 { 7_000 } else { 900 }));
    f.snaps.lost = 20;
    f.cmds.lost = 100;
    f.outages.count = 1;
    let mut fig = f.figures();
    fig.connected = 10;
    let misses = failures(
        &fig,
        Some(1_000),
        &default_limits(crate::bench::TickRate::new(100).unwrap()),
    );
    // Every rule but "transactions measured" (there are some) is missed,
    // in table order, each under its own rule; the query and run-delay
    // rules have no limit by default.
    let expected: Vec<RuleId> = RULES
        .iter()
        .map(|r| r.id)
        .filter(|&id| {
            !matches!(
                id,
                RuleId::TransactionsMeasured
                    | RuleId::P99Query
                    | RuleId::P99RunDelay
                    | RuleId::P99RunDelayRelative
            )
        })
        .collect();
    assert_eq!(misses.iter().map(Miss::rule).collect::<Vec<_>>(), expected);
    let ids: std::collections::HashSet<RuleId> = RULES.iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), RULES.len(), "one row per rule");
}

#[test]
fn a_miss_carries_the_measured_value_and_the_limit() {
    let mut f = Fixture::good();
    f.late = pct((0..1000).map(|i| if i % 20 == 0 { 6_000 } else { 10 }));
    let misses = failures(
        &f.figures(),
        None,
        &default_limits(crate::bench::TickRate::new(100).unwrap()),
    );
    let [Miss::P99TickLateness { p99_us, limit_us }] = misses[..] else {
        panic!("{misses:?}");
    };
    assert!((6_000..6_100).contains(&p99_us), "{p99_us}");
    assert_eq!(limit_us, 2_500);
}

#[test]
fn the_limits_read_from_the_table_include_the_outage_rule() {
    let q = default_limits(crate::bench::TickRate::new(64).unwrap());
    let text: Vec<String> = RULES
        .iter()
        .map(|r| (r.limit)(&q, crate::bench::TickRate::new(64).unwrap()).to_string())
        .collect();
    assert_eq!(text.len(), 12);
    assert!(text.contains(&"not judged".into()), "{text:?}");
    assert!(text.iter().any(|t| t.starts_with("no outage")), "{text:?}");
    assert!(
        text.contains(&"p99 server frame ≤ 50 % of the tick interval (7.81 ms at 64 Hz)".into()),
        "{text:?}"
    );
}

#[test]
fn verdicts_are_stored_as_pass_and_fail() {
    assert_eq!(serde_json::to_string(&Verdict::Pass).unwrap(), "\"pass\"");
    assert_eq!(serde_json::to_string(&Verdict::Fail).unwrap(), "\"fail\"");
    assert_eq!(
        serde_json::from_str::<Verdict>("\"fail\"").unwrap(),
        Verdict::Fail
    );
    assert!(serde_json::from_str::<Verdict>("\"FAIL\"").is_err());
    assert_eq!(Verdict::of(&[] as &[Miss]), Verdict::Pass);
}

#[test]
fn the_query_rule_judges_only_when_its_limit_is_set() {
    let f = Fixture::good();
    let fast = pct((0..100).map(|i| 300 + i));
    let slow = pct((0..100).map(|i| if i < 5 { 90_000 } else { 300 }));
    let mut q = default_limits(crate::bench::TickRate::new(100).unwrap());
    let mut fig = f.figures();
    fig.query_latency_us = Some(&slow);
    assert!(failures(&fig, None, &q).is_empty(), "no limit: not judged");
    q.p99_query_us = Some(50_000);
    let misses = failures(&fig, None, &q);
    let [Miss::P99Query {
        p99_us: Some(p99),
        limit_us: 50_000,
    }] = misses[..]
    else {
        panic!("{misses:?}")
    };
    assert!(p99 >= 89_000, "{p99}");
    assert!(misses[0].to_string().starts_with("p99 query latency 9"));
    fig.query_latency_us = Some(&fast);
    assert!(failures(&fig, None, &q).is_empty());
    // Limit set but nothing answered (or not probed): a miss, never a pass.
    fig.query_latency_us = None;
    let misses = failures(&fig, None, &q);
    assert_eq!(
        misses,
        vec![Miss::P99Query {
            p99_us: None,
            limit_us: 50_000
        }]
    );
    assert_eq!(
        misses[0].to_string(),
        "no query was answered (limit: p99 query latency 50.00 ms)"
    );
}

/// A game tickpack cannot play: no player rule applies (nothing was
/// measured by players), the run delay and query rules judge it.
#[test]
fn a_step_without_players_is_judged_on_run_delay_and_query_only() {
    let f = Fixture::good();
    let q = crate::qos::default_limits_without_players(crate::bench::TickRate::new(60).unwrap());
    assert_eq!(q.p99_run_delay_us, Some(4_166));
    assert_eq!(q.p99_query_us, Some(38_332));
    let rd = Percentiles {
        p99: 1_000,
        count: 50,
        ..Default::default()
    };
    let query = Percentiles {
        p99: 20_000,
        count: 5,
        ..Default::default()
    };
    let empty = Percentiles::default();
    let mut fig = f.figures();
    fig.players = 0;
    fig.connected = 0;
    fig.tick_hz = crate::bench::TickRate::new(60).unwrap();
    fig.transaction_latency_us = &empty;
    fig.run_delay_us = Some(&rd);
    fig.query_latency_us = Some(&query);
    assert!(
        failures(&fig, None, &q).is_empty(),
        "{:?}",
        failures(&fig, None, &q)
    );
    // Relative: 1.5x a first step's 0.5 ms + 1 ms = 1.75 ms.
    assert!(failures(&fig, Some(500), &q).is_empty());
    let slow = Percentiles {
        p99: 5_000,
        count: 50,
        ..Default::default()
    };
    fig.run_delay_us = Some(&slow);
    let misses: Vec<String> = failures(&fig, Some(500), &q)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        misses,
        [
            "p99 run delay 5.00 ms > 4.17 ms",
            "p99 run delay 5.00 ms > 1.5x the first step's (0.50 ms) + 2.08 ms",
        ]
    );
    fig.run_delay_us = None;
    fig.query_latency_us = None;
    let misses: Vec<String> = failures(&fig, None, &q)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        misses,
        [
            "no query was answered (limit: p99 query latency 38.33 ms)",
            "no run delay was sampled (the servers never ran; limit: p99 run delay 4.17 ms)",
        ]
    );
}

#[test]
fn a_step_with_players_is_not_judged_on_run_delay_by_default() {
    let f = Fixture::good();
    let slow = Percentiles {
        p99: 50_000,
        count: 50,
        ..Default::default()
    };
    let mut fig = f.figures();
    fig.run_delay_us = Some(&slow);
    assert!(failures(
        &fig,
        None,
        &default_limits(crate::bench::TickRate::new(100).unwrap())
    )
    .is_empty());
}

/// A figure no server reports (count 0, as OpenArena's tick lateness and
/// frame time) passes its rule without being judged by it.
#[test]
fn a_figure_no_server_reports_is_not_judged() {
    let mut f = Fixture::good();
    let q = default_limits(crate::bench::TickRate::new(100).unwrap());
    let rule = |id| RULES.iter().find(|r| r.id == id).unwrap();
    assert!(rule(RuleId::P99TickLateness).judges(&f.figures(), &q));
    f.late = Percentiles::default();
    f.frame = Percentiles::default();
    assert!(failures(&f.figures(), None, &q).is_empty(), "it passes");
    assert!(!rule(RuleId::P99TickLateness).judges(&f.figures(), &q));
    assert!(!rule(RuleId::P99ServerFrame).judges(&f.figures(), &q));
    assert!(rule(RuleId::P99Transaction).judges(&f.figures(), &q));
    // Unset optional limits judge nothing either.
    assert!(!rule(RuleId::P99Query).judges(&f.figures(), &q));
}

/// Issue 31: idle servers got a density. A step without players is idle
/// when the bots asked never joined (the game's own query says so), or
/// when its servers did nothing at all; never when players ran.
#[test]
fn idle_servers_are_told_from_loaded_ones() {
    let base = StepLoad {
        players: 0,
        servers: 2,
        bots_asked: 8,
        load_command: false,
        clients_seen: Some(8),
        servers_own_percent: Some(3.0),
    };
    assert_eq!(idle_reason(&base), None, "bots joined, servers busy");
    let ignored = StepLoad {
        clients_seen: Some(0),
        ..base
    };
    let why = idle_reason(&ignored).expect("bots never joined");
    assert!(
        why.contains("8 bots were asked") && why.contains("held no one"),
        "{why}"
    );
    let asleep = StepLoad {
        clients_seen: None,
        servers_own_percent: Some(0.2),
        ..base
    };
    let why = idle_reason(&asleep).expect("0.1 % each");
    assert!(why.contains("0.2% of a core (0.1% each"), "{why}");
    // Unknown CPU and no query: nothing certain, not idle.
    let unknown = StepLoad {
        clients_seen: None,
        servers_own_percent: None,
        ..base
    };
    assert_eq!(idle_reason(&unknown), None);
    // Players measure latency: never idle, whatever the CPU.
    let played = StepLoad {
        players: 24,
        servers_own_percent: Some(0.0),
        clients_seen: Some(0),
        ..base
    };
    assert_eq!(idle_reason(&played), None);
}

/// Issue 41: Armagetron's server runs no rounds until a human client
/// connects, so the 4 bots asked did nothing; the message told the user
/// to give bots. It names what was asked and did nothing, the servers'
/// CPU as the step records it, and what to try instead.
#[test]
fn the_idle_message_told_the_user_to_give_bots_when_4_bots_had_been_given() {
    let asked_bots = StepLoad {
        players: 0,
        servers: 1,
        bots_asked: 4,
        load_command: false,
        clients_seen: None,
        servers_own_percent: Some(0.01),
    };
    let why = idle_reason(&asked_bots).expect("idle");
    assert!(why.contains("4 bots were asked"), "{why}");
    assert!(why.contains("the servers used 0.01% of a core"), "{why}");
    assert!(
        why.contains("may run no rounds without a human client")
            && why.contains("[load] command that connects one"),
        "{why}"
    );
    assert!(
        !why.contains("--bots"),
        "no advice to give what was given: {why}"
    );
    // A load command that did nothing is named as such.
    let asked_load = StepLoad {
        bots_asked: 0,
        load_command: true,
        ..asked_bots
    };
    let why = idle_reason(&asked_load).expect("idle");
    assert!(
        why.contains("a load command ran beside every server"),
        "{why}"
    );
    assert!(why.contains("check that it connects"), "{why}");
    assert!(!why.contains("--bots"), "{why}");
}

/// Issue 41: the relative run-delay limit was 1.5x the first step's p99
/// over its whole window, one noisy sample (a wake-up or two that waited
/// milliseconds decide one server's p99), which moved Nexuiz's answer
/// between 9 and 12. It compares the median of each step's per-second
/// p99s: one bad second on either side moves nothing, a step whose every
/// second waits longer still fails.
#[test]
fn the_relative_run_delay_limit_rested_on_one_noisy_sample() {
    let tick = crate::bench::TickRate::new(60).unwrap();
    let mut q = crate::qos::default_limits_without_players(tick);
    q.p99_query_us = None;
    let whole = |p99| Percentiles {
        p99,
        count: 60,
        ..Default::default()
    };
    // The first step: quiet seconds around 0.25 ms, and one burst second
    // that makes its whole-window p99 9 ms.
    let first_seconds = [240, 260, 9_000, 250, 230, 255];
    let first_whole = whole(9_000);
    let baseline = typical_run_delay_us(&first_seconds, Some(&first_whole)).unwrap();
    assert_eq!(baseline, 250, "the lower median of the seconds");
    // Too few seconds (a 2 s step), or a result without them: the whole p99.
    assert_eq!(
        typical_run_delay_us(&[240, 9_000], Some(&first_whole)),
        Some(9_000)
    );
    assert_eq!(typical_run_delay_us(&[], Some(&first_whole)), Some(9_000));
    assert_eq!(typical_run_delay_us(&[], None), None);
    let f = Fixture::good();
    let empty = Percentiles::default();
    let judge = |seconds: &[u64], p99: u64| -> Vec<RuleId> {
        let w = whole(p99);
        let mut fig = f.figures().with_run_delay_seconds(seconds);
        fig.players = 0;
        fig.connected = 0;
        fig.tick_hz = tick;
        fig.transaction_latency_us = &empty;
        fig.run_delay_us = Some(&w);
        failures(&fig, Some(baseline), &q)
            .iter()
            .map(Miss::rule)
            .collect()
    };
    // Every second waited 3 ms: 12x the first step's, past 1.5x 0.25 ms +
    // 2.08 ms. The burst that made the first step's p99 9 ms no longer
    // lifts the limit to 15.6 ms.
    assert_eq!(
        judge(&[3_000, 3_100, 2_900, 3_050, 3_000, 2_950], 3_400),
        [RuleId::P99RunDelayRelative]
    );
    // One bad second of an otherwise quiet step: not a packing limit.
    assert!(judge(&[300, 280, 3_900, 310, 290, 300], 3_900).is_empty());
}
