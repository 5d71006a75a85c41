//! The estimate between steps, on ladders built from the v1 fixture.

use super::*;
use tickpack_report::bench::BenchResult;
use tickpack_report::verdict::Verdict;

/// The fixture's result with its first ladder's steps set to (servers,
/// pass?, p99 tick lateness µs); its tick-lateness limit is 2000 µs.
fn result(steps: &[(u32, bool, u64)]) -> BenchResult {
    let mut r: BenchResult = serde_json::from_str(include_str!(
        "../../../report/tests/fixtures/result-v1.json"
    ))
    .unwrap();
    let template = r.ladders[0].steps[0].clone();
    r.ladders[0].steps = steps
        .iter()
        .map(|&(servers, pass, lateness)| {
            let mut s = template.clone();
            s.servers = servers;
            s.verdict = if pass { Verdict::Pass } else { Verdict::Fail };
            s.measured.tick_lateness_us.p99 = lateness;
            s
        })
        .collect();
    r
}

#[test]
fn the_limit_lies_where_the_tick_lateness_meets_its_limit_between_the_steps() {
    let r = result(&[(1, true, 500), (2, true, 1_000), (3, false, 5_000)]);
    let l = &r.ladders[0];
    // 1000 µs at 2 servers, 5000 at 3: 2000 is a quarter of the way.
    let c = ladder_limit(l, &r.settings).unwrap();
    assert_eq!(
        (c.servers, c.passed_servers, c.failed_servers),
        (2.25, 2, 3)
    );
    assert_eq!((c.figure, c.limit_us), ("p99 tick lateness", 2_000));
    let e = estimate(&[l], &r.settings, 1).unwrap();
    assert_eq!(e.servers, 2.3);
    assert_eq!(e.per_core, 2.3);
    assert_eq!((e.passed_servers, e.failed_servers, e.ladders), (2, 3, 1));
    assert_eq!(
        e.words(),
        "estimate, not a measured step: the QoS limit lies near 2.3 servers (2.3 per server \
         core), between the passing step of 2 servers and the failing one of 3 (p99 tick \
         lateness interpolated to its 2.00 ms limit)"
    );
    // On two server cores, per core is half.
    assert_eq!(estimate(&[l], &r.settings, 2).unwrap().per_core, 1.15);
}

#[test]
fn over_several_ladders_the_estimate_is_their_median() {
    let a = result(&[(1, true, 1_000), (2, false, 3_000)]); // 1.5
    let b = result(&[(1, true, 1_000), (2, false, 11_000)]); // 1.1
    let c = result(&[(1, true, 1_500), (2, false, 2_500)]); // 1.5
    let ls = [&a.ladders[0], &b.ladders[0], &c.ladders[0]];
    let e = estimate(&ls, &a.settings, 1).unwrap();
    assert_eq!(e.servers, 1.5);
    assert_eq!(e.ladders, 3);
    assert!(e.words().contains("the median of 3 ladders' estimates: 1.5 between the steps of 1 and 2 servers, 1.1 between 1 and 2, 1.5 between 1 and 2"), "{}", e.words());
}

/// Regression: three ladders whose limits lay between 5 and 6, 2 and 3, 4
/// and 5 servers read "the QoS limit lies near 4.0 servers …, between the
/// passing step of 5 servers and the failing one of 6": the median was
/// worded with the first ladder's steps, which 4.0 does not lie between.
#[test]
fn a_median_estimate_named_the_steps_of_a_ladder_it_did_not_lie_between() {
    let steps = |pass_to: u32, at_pass: u64, at_fail: u64| -> Vec<(u32, bool, u64)> {
        (1..=pass_to + 1)
            .map(|n| {
                (
                    n,
                    n <= pass_to,
                    if n <= pass_to { at_pass } else { at_fail },
                )
            })
            .collect()
    };
    let a = result(&steps(5, 1_000, 3_000)); // 5.5
    let b = result(&steps(2, 1_000, 11_000)); // 2.1
    let c = result(&steps(4, 1_900, 12_000)); // 4.0
    let ls = [&a.ladders[0], &b.ladders[0], &c.ladders[0]];
    let e = estimate(&ls, &a.settings, 1).unwrap();
    assert_eq!(e.servers, 4.0);
    // The steps named are those of the ladder at the median.
    assert_eq!((e.passed_servers, e.failed_servers), (4, 5));
    let words = e.words();
    assert!(!words.contains("passing step of 5"), "{words}");
    assert_eq!(
        words,
        "estimate, not a measured step: the QoS limit lies near 4.0 servers (4 per server \
         core), the median of 3 ladders' estimates: 5.5 between the steps of 5 and 6 servers, \
         2.1 between 2 and 3, 4.0 between 4 and 5 (p99 tick lateness interpolated to its limit)"
    );
    let per: Vec<(f64, u32, u32)> = e
        .per_ladder
        .iter()
        .map(|l| (l.servers, l.passed_servers, l.failed_servers))
        .collect();
    assert_eq!(per, vec![(5.5, 5, 6), (2.1, 2, 3), (4.0, 4, 5)]);
}

#[test]
fn a_step_that_failed_on_its_frame_time_is_interpolated_on_it() {
    // Tick lateness held; the server frame went from 2 ms to 12 ms against
    // half the fixture's tick.
    let mut r = result(&[(1, true, 500), (2, false, 1_500)]);
    r.ladders[0].steps[0].measured.server_frame_us.p99 = 2_000;
    r.ladders[0].steps[1].measured.server_frame_us.p99 = 12_000;
    let limit =
        tickpack_report::qos::frame_limit_us(&r.settings.qos, r.ladders[0].tick_hz(&r.settings));
    let c = ladder_limit(&r.ladders[0], &r.settings).unwrap();
    assert_eq!((c.figure, c.limit_us), ("p99 server frame", limit));
    let want = 1.0 + (limit - 2_000) as f64 / 10_000.0;
    assert!((c.servers - want).abs() < 1e-9, "{} vs {want}", c.servers);
}

#[test]
fn no_estimate_without_a_bracket_on_tick_lateness_or_on_many_cores() {
    // The failing step failed on something else: its tick lateness and
    // frame time held.
    let r = result(&[(1, true, 500), (2, false, 1_500)]);
    assert_eq!(estimate(&[&r.ladders[0]], &r.settings, 1), None);
    // The first step failed: nothing passed to start from.
    let r = result(&[(1, false, 5_000)]);
    assert_eq!(estimate(&[&r.ladders[0]], &r.settings, 1), None);
    // No step failed: the limit was not found.
    let r = result(&[(1, true, 500), (2, true, 900)]);
    assert_eq!(estimate(&[&r.ladders[0]], &r.settings, 1), None);
    // Many server cores: a step is a small share, no estimate needed.
    let r = result(&[(1, true, 500), (2, false, 5_000)]);
    assert!(estimate(&[&r.ladders[0]], &r.settings, 4).is_some());
    assert_eq!(estimate(&[&r.ladders[0]], &r.settings, 5), None);
}
