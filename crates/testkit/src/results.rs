//! Builders of bench result parts for tests in several crates (the bench's
//! ladder tests, the report's pages, the Agones fleet's sizing): the
//! settings of a plain run, so a test names only the settings it looks at.
//! (A step with nothing measured is `tickpack_report::bench::Step::passed`.)

use tickpack_game::def::PlayerProtocol;
use tickpack_report::bench::{BenchSettings, QosLimits, TickRate};

/// The name of the shipped game whose players speak tickpack's own
/// protocol (its reference server), from its definition.
fn own_game() -> String {
    tickpack_game::registry::built_in()
        .into_iter()
        .map(|(def, _)| def)
        .find(|def| def.players.protocol == PlayerProtocol::Reference)
        .expect("a shipped game definition whose players speak tickpack's protocol")
        .name
}

/// The settings of a plain run of tickpack's own game: tiles of 3 servers,
/// 10 players (+2 bots) per server at 64 Hz, cost profile "default", steps
/// of 10 s after 2 s of warm-up, at most 10 steps and 1 past the first
/// failure (not confirmed), 75 % headroom; QoS: p99 transaction latency
/// within 50 ms and 2x the baseline, p99 tick lateness within 2.5 ms, 0.1 %
/// of snapshots lost, p99 frame within half a tick. No comparison, probe,
/// projection or load. Tests set what they look at with
/// `BenchSettings { .., ..bench_settings() }`.
pub fn bench_settings() -> BenchSettings {
    BenchSettings {
        game: own_game(),
        game_settings: Default::default(),
        tile_servers: 3,
        players_per_server: 10,
        bots_per_server: 2,
        tick_hz: TickRate::new(64).unwrap(),
        cost: "default".into(),
        step_duration_s: 10.0,
        warmup_s: 2.0,
        max_steps: 10,
        adaptive_steps: false,
        steps_past_failure: 1,
        confirm_failures: false,
        max_steal_percent: None,
        max_foreign_percent: None,
        steal_retries: 0,
        headroom_target: 0.75,
        qos: QosLimits {
            p99_transaction_us: 50_000,
            p99_relative_to_baseline: 2.0,
            p99_tick_lateness_us: 2_500,
            max_snapshot_loss: 0.001,
            p99_frame_budget: 0.5,
            p99_query_us: None,
            p99_run_delay_us: None,
        },
        compare: "none".into(),
        probe: None,
        project_cores: None,
        allow_idle: false,
        tile: None,
        load: None,
    }
}
