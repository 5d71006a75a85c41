//! The terminal's text of a result: what `tickpack bench` prints at the end.

use super::{consolidation_line, first_step_always_failed, step_disturbance};
use crate::bench::BenchResult;

#[test]
fn a_step_line_shows_the_foreign_load_and_a_disturbed_attempt() {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("../../tests/fixtures/result-v1.json")).unwrap();
    let mut st: crate::bench::Step =
        serde_json::from_value(v["ladders"][0]["steps"][0].clone()).expect("a step");
    assert_eq!(step_disturbance(&st), "", "an old step says nothing");
    st.cpu.foreign_percent = Some(crate::bench::ForeignLoad::of_cores(&[0.0, 37.25], &[1]));
    st.disturbed = Some("foreign 37.2% of CPU 1 (...), more than 5%".into());
    assert_eq!(
        step_disturbance(&st),
        ", foreign 37.2%, DISTURBED: foreign 37.2% of CPU 1 (...), more than 5%"
    );
}

#[test]
fn qos_failed_at_the_first_step_needs_every_repetition_of_the_first_variant_to_fail() {
    let fail_pass = |first: [&str; 2]| -> BenchResult {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/result-v1.json")).unwrap();
        let l0 = v["ladders"][0].clone();
        let ladders: Vec<serde_json::Value> = first
            .iter()
            .enumerate()
            .map(|(i, verdict)| {
                let mut l = l0.clone();
                l["repetition"] = (i as u64 + 1).into();
                l["steps"][0]["verdict"] = (*verdict).into();
                l
            })
            .collect();
        v["ladders"] = ladders.into();
        serde_json::from_value(v).unwrap()
    };
    assert!(first_step_always_failed(&fail_pass(["fail", "fail"])));
    assert!(!first_step_always_failed(&fail_pass(["fail", "pass"])));
}

#[test]
fn consolidation_summary_names_before_servers_as_its_baseline() {
    let line = consolidation_line(Some(2.0), Some(12), Some(6));
    assert_eq!(
        line,
        "consolidation ratio 2.00:1 (12 servers per machine at the recommended density on this machine / 6 per machine before (--before-servers))"
    );
    // bench_printed_a_consolidation_ratio_below_one: 3 servers against
    // a hidden 6 printed "consolidation ratio 0.50:1".
    let line = consolidation_line(Some(0.5), Some(3), Some(6));
    assert!(line.starts_with("no consolidation:"), "{line}");
    assert!(!line.contains("0.50:1"), "{line}");
    // No before given: no ratio, and what to pass.
    let line = consolidation_line(None, Some(3), None);
    assert!(line.contains("--before-servers N"), "{line}");
}

#[test]
fn a_failed_first_step_says_what_to_try_next() {
    let mut r: BenchResult =
        serde_json::from_str(include_str!("../../tests/fixtures/result-v1.json")).unwrap();
    r.settings.tile_servers = 3;
    r.settings.players_per_server = 12;
    let words = super::first_step_failed_words(&r);
    assert!(words.contains("Try: --tile-servers 1"), "{words}");
    assert!(words.contains("a quieter machine"), "{words}");
    assert!(words.contains("--players-per-server 6"), "{words}");
    r.settings.tile_servers = 1;
    let words = super::first_step_failed_words(&r);
    assert!(!words.contains("--tile-servers 1"), "{words}");
    assert!(words.contains("first step, 1 server"), "{words}");
}

#[test]
fn the_terminal_summary_opens_with_servers_per_server_core() {
    let mut r: BenchResult =
        serde_json::from_str(include_str!("../../tests/fixtures/result-v1.json")).unwrap();
    r.recommended_servers = Some(3);
    r.cores.servers = vec![1];
    r.cores.load_generator = vec![0];
    r.cores.total = 2;
    r.settings.project_cores = Some(64);
    let text = super::headline_lines(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("3.00 SERVERS PER SERVER CORE"),
        "{text}"
    );
    assert_eq!(lines[1], "  this machine, on 1 server core: 3 servers");
    assert_eq!(lines[2], "  projected, on 64 server cores: 192 servers");
    assert!(
        lines[3].contains("load generator's 1 core of 2 excluded"),
        "{text}"
    );
}

#[test]
fn the_terminal_steps_table_says_n_a_where_the_html_does() {
    let mut r: BenchResult =
        serde_json::from_str(include_str!("../../tests/fixtures/result-v1.json")).unwrap();
    let ladder = &mut r.ladders[0];
    ladder.steps[0].players = 0;
    let table = super::steps_table(ladder);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].contains("p99 ms") && lines[0].contains("watts"),
        "{table}"
    );
    assert_eq!(lines.len(), ladder.steps.len() + 1, "{table}");
    // No players, no transaction latency: n/a in both formats, from one row.
    let row = crate::step_row::StepRow::of(&ladder.steps[0]);
    assert_eq!(row.latency_us, None);
    assert!(lines[1].contains("n/a"), "{table}");
    let html = crate::html::render(&[("r.json".into(), r.clone())]);
    assert!(html.contains("n/a"));
}

#[test]
fn the_headline_gives_its_spread_its_stability_and_the_estimate_and_old_results_none() {
    let mut r: BenchResult =
        serde_json::from_str(include_str!("../../tests/fixtures/result-v1.json")).unwrap();
    // An old result: no spread, no estimate, the headline as before.
    assert_eq!(r.servers_per_core_spread, None);
    assert_eq!(r.limit_estimate, None);
    r.recommended_servers = Some(3);
    r.cores.servers = vec![1];
    let old = super::headline_lines(&r);
    assert!(
        old.starts_with("3.00 SERVERS PER SERVER CORE at QoS"),
        "{old}"
    );
    assert!(
        !old.contains("LADDERS") && !old.contains("estimate"),
        "{old}"
    );
    let per_ladder = crate::comparison::Spread::of(vec![Some(2.0), Some(3.0), Some(4.0)]);
    r.servers_per_core_spread = crate::spread::HeadlineSpread::of(&per_ladder, 1, 1);
    r.limit_estimate = Some(crate::estimate::LimitEstimate {
        servers: 3.4,
        per_core: 3.4,
        passed_servers: 3,
        failed_servers: 4,
        figure: "p99 tick lateness".into(),
        limit_us: 2_500,
        ladders: 3,
        per_ladder: vec![],
    });
    let text = super::headline_lines(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "3 SERVERS PER SERVER CORE, 2-4 OVER 3 LADDERS at QoS within the headroom target"
    );
    assert!(
        lines[1].starts_with("  UNSTABLE: the ladders' answers span 2-4"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("  estimate, not a measured step: the QoS limit lies near 3.4"),
        "{text}"
    );
    let html = crate::html::render(&[("run".to_string(), r.clone())]);
    let spread_at = html.find("3 servers per server core, 2-4 over 3 ladders");
    assert!(spread_at.is_some(), "the HTML headline gives the spread");
    assert!(html.contains("UNSTABLE: the ladders"));
    assert!(html.contains("estimate, not a measured step"));
}
