//! Builders of steps and settings for the crate's unit tests.

use tickpack_report::bench::{BenchSettings, CpuUse, QosLimits, Step};
use tickpack_report::qos::Verdict;
use tickpack_report::{Measurements, Percentiles, PlayersHistograms};

use crate::ladder::StepRequest;

/// A judged step with the figures the ladder and the summary look at.
pub fn step(req: &StepRequest, verdict: &str, failures: Vec<String>, busy: f64, p99: u64) -> Step {
    Step {
        index: req.index,
        tiles: req.index,
        servers: req.servers,
        players: req.servers,
        connected: None,
        verdict: match verdict {
            "pass" => Verdict::Pass,
            "fail" => Verdict::Fail,
            "idle" => Verdict::Idle,
            v => panic!("a step's verdict is pass, fail or idle, not {v:?}"),
        },
        failures,
        first_attempt_failures: vec![],
        disturbed_attempts: vec![],
        attempts: vec![],
        disturbed: None,
        duration_s: 1.0,
        measured: Measurements {
            transaction_latency_us: Percentiles {
                p99,
                ..Default::default()
            },
            ..Default::default()
        },
        cpu: CpuUse {
            servers_busy_percent: busy,
            ..Default::default()
        },
        power: None,
        query_latency_us: None,
        run_delay_us: None,
        queries: None,
        clients_seen: None,
        batch: None,
        server_peak_rss_bytes: None,
        histograms: PlayersHistograms::default(),
    }
}

/// Ladder settings: tiles of 3 servers, 75 % headroom.
pub fn settings(max_steps: u32, past: u32, confirm: bool) -> BenchSettings {
    BenchSettings {
        game: "reference".into(),
        game_settings: Default::default(),
        tile_servers: 3,
        players_per_server: 1,
        bots_per_server: 0,
        tick_hz: 100,
        cost: "default".into(),
        step_duration_s: 1.0,
        warmup_s: 0.0,
        max_steps,
        steps_past_failure: past,
        confirm_failures: confirm,
        max_steal_percent: None,
        max_foreign_percent: None,
        steal_retries: 0,
        headroom_target: 0.75,
        qos: QosLimits {
            p99_transaction_us: 1,
            p99_relative_to_baseline: 1.0,
            p99_tick_lateness_us: 1,
            max_snapshot_loss: 0.0,
            p99_frame_budget: 1.0,
            p99_query_us: None,
            p99_run_delay_us: None,
        },
        compare: "none".into(),
        probe: None,
        project_cores: None,
        allow_idle: false,
        load: None,
    }
}
