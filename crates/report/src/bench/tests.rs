//! Tests of the bench result's schema: old results read, figures derived.

use super::*;
use crate::Outages;

#[test]
fn a_step_names_its_worst_steal_from_one_percent() {
    let cpu = |steal: Vec<f64>| CpuUse {
        steal_percent: steal,
        ..Default::default()
    };
    assert_eq!(cpu(vec![]).steal_note(), None);
    assert_eq!(cpu(vec![0.9, 0.2]).steal_note(), None);
    assert_eq!(
        cpu(vec![18.24, 2.0]).steal_note().as_deref(),
        Some("steal 18.2% of CPU 0 (the hypervisor ran other guests)")
    );
    // Results from before steal was recorded read without it.
    let old: CpuUse = serde_json::from_str(
        r#"{"servers_busy_percent":1,"machine_busy_percent":1,"per_cpu_percent":[],"load_generator_cpu_s":0}"#,
    )
    .expect("an old result");
    assert!(old.steal_percent.is_empty());
    assert_eq!(old.foreign_percent, None);
}

#[test]
fn a_step_records_the_foreign_load_of_each_server_core_and_names_the_worst() {
    // CPU 0 runs the load generator: its foreign load is not recorded.
    let f = ForeignLoad::of_cores(&[50.0, 0.4, 42.04], &[1, 2, 7]);
    assert_eq!(f.worst, 42.04);
    assert_eq!(
        f.per_core.len(),
        3,
        "a core missing from /proc/stat reads 0"
    );
    let cpu = CpuUse {
        foreign_percent: Some(f),
        ..Default::default()
    };
    assert_eq!(cpu.worst_foreign(), 42.04);
    assert_eq!(
        cpu.foreign_note().as_deref(),
        Some("foreign 42.0% of CPU 2 (processes other than the servers and tickpack)")
    );
    let json = serde_json::to_value(&cpu).unwrap();
    assert_eq!(
        json["foreign_percent"],
        serde_json::json!({"per_core": {"1": 0.4, "2": 42.04, "7": 0.0}, "worst": 42.04})
    );
    let back: CpuUse = serde_json::from_value(json).unwrap();
    assert_eq!(back, cpu);
    let quiet = CpuUse {
        foreign_percent: Some(ForeignLoad::of_cores(&[0.0, 0.9], &[1])),
        ..Default::default()
    };
    assert_eq!(quiet.foreign_note(), None, "under 1 % is not named");
    assert_eq!(CpuUse::default().worst_foreign(), 0.0);
}

const STEP_KEYS: &[&str] = &[
    "index",
    "tiles",
    "servers",
    "players",
    "verdict",
    "failures",
    "first_attempt_failures",
    "duration_s",
    "transaction_latency_us",
    "rtt_us",
    "server_frame_us",
    "tick_lateness_us",
    "snapshot_jitter_us",
    "snapshots",
    "commands",
    "outages",
    "reconnects",
    "cpu",
    "power",
    "histograms",
];

/// Step 1 (3 servers, 30 players) that saw 7 reconnects.
fn step() -> Step {
    Step {
        measured: Measurements {
            reconnects: 7,
            ..Default::default()
        },
        ..Step::passed(1, 3, 30)
    }
}

#[test]
fn a_steps_measurements_sit_at_the_steps_level_in_the_json_order() {
    let v = serde_json::to_value(step()).unwrap();
    let text = serde_json::to_string(&step()).unwrap();
    let mut at: Vec<(usize, &str)> = STEP_KEYS
        .iter()
        .map(|k| (text.find(&format!("\"{k}\":")).expect(k), *k))
        .collect();
    at.sort_unstable();
    let order: Vec<&str> = at.into_iter().map(|(_, k)| k).collect();
    assert_eq!(order, STEP_KEYS);
    assert_eq!(v.as_object().unwrap().len(), STEP_KEYS.len());
    assert_eq!(v["reconnects"], 7);
    assert!(v.get("measured").is_none());
}

#[test]
fn a_probed_steps_query_figures_sit_beside_the_players_figures() {
    let mut st = step();
    st.query_latency_us = Some(Percentiles {
        p99: 1_500,
        count: 3,
        ..Default::default()
    });
    st.queries = Some(QueryCounts {
        sent: 3,
        answered: 3,
        ..Default::default()
    });
    st.histograms.query_latency_us = "HISTO".into();
    let v = serde_json::to_value(&st).unwrap();
    assert_eq!(v["query_latency_us"]["p99"], 1_500);
    assert_eq!(v["queries"]["answered"], 3);
    assert_eq!(v["histograms"]["query_latency_us"], "HISTO");
    let back: Step = serde_json::from_value(v).unwrap();
    assert_eq!(back, st);
    // Unprobed steps (and every step written before) have none of them.
    let plain = serde_json::to_value(step()).unwrap();
    assert!(plain.get("query_latency_us").is_none());
    assert!(plain["histograms"].get("query_latency_us").is_none());
    let back: Step = serde_json::from_value(plain).unwrap();
    assert_eq!(back.query_latency_us, None);
}

#[test]
fn a_step_written_before_outages_and_reconnects_still_reads() {
    let mut v = serde_json::to_value(step()).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("outages");
    o.remove("reconnects");
    let back: Step = serde_json::from_value(v).unwrap();
    assert_eq!(back.reconnects, 0);
    assert_eq!(back.outages, Outages::default());
}

#[test]
fn a_steps_peak_memory_round_trips_and_older_steps_have_none() {
    let mut st = step();
    st.server_peak_rss_bytes = Some(48 << 20);
    let v = serde_json::to_value(&st).unwrap();
    assert_eq!(v["server_peak_rss_bytes"], 48u64 << 20);
    assert_eq!(serde_json::from_value::<Step>(v).unwrap(), st);
    let older = serde_json::to_value(step()).unwrap();
    assert!(older.get("server_peak_rss_bytes").is_none());
    let back: Step = serde_json::from_value(older).unwrap();
    assert_eq!(back.server_peak_rss_bytes, None);
}
