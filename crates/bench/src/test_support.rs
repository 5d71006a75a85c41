//! Builders of steps and settings for the crate's unit tests.

use tickpack_report::bench::{BenchSettings, CpuUse, QosLimits, Step};
use tickpack_report::qos::Verdict;
use tickpack_report::{Measurements, Percentiles};
use tickpack_testkit::results::bench_settings;

use crate::ladder::StepRequest;

/// A judged step with the figures the ladder and the summary look at.
pub fn step(req: &StepRequest, verdict: &str, failures: Vec<String>, busy: f64, p99: u64) -> Step {
    Step {
        verdict: match verdict {
            "pass" => Verdict::Pass,
            "fail" => Verdict::Fail,
            "idle" => Verdict::Idle,
            v => panic!("a step's verdict is pass, fail or idle, not {v:?}"),
        },
        failures,
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
        ..Step::passed(req.index, req.servers, req.servers)
    }
}

/// Ladder settings: tiles of 3 servers of one player each at 100 Hz, 1 s
/// steps without warm-up, 75 % headroom, QoS limits of 1 µs and 1x the
/// baseline, no snapshot lost.
pub fn settings(max_steps: u32, past: u32, confirm: bool) -> BenchSettings {
    BenchSettings {
        players_per_server: 1,
        bots_per_server: 0,
        tick_hz: tickpack_report::bench::TickRate::new(100).unwrap(),
        step_duration_s: 1.0,
        warmup_s: 0.0,
        max_steps,
        steps_past_failure: past,
        confirm_failures: confirm,
        qos: QosLimits {
            p99_transaction_us: 1,
            p99_relative_to_baseline: 1.0,
            p99_tick_lateness_us: 1,
            max_snapshot_loss: 0.0,
            p99_frame_budget: 1.0,
            p99_query_us: None,
            p99_run_delay_us: None,
        },
        ..bench_settings()
    }
}
