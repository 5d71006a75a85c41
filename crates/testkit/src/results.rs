//! Builders of bench result parts for tests in several crates (the bench's
//! ladder tests, the report's pages, the Agones fleet's sizing): a step with
//! nothing measured, so a test names only the figures it looks at.

use tickpack_report::bench::{CpuUse, Step};
use tickpack_report::qos::Verdict;
use tickpack_report::{Measurements, PlayersHistograms};

/// A passed step: step `index` of as many tiles, `servers` servers and
/// `players` players, measured for 1 s; nothing else measured, failed or
/// disturbed. Tests set what they look at with `Step { .., ..passed_step() }`.
pub fn passed_step(index: u32, servers: u32, players: u32) -> Step {
    Step {
        index,
        tiles: index,
        servers,
        players,
        connected: None,
        verdict: Verdict::Pass,
        failures: vec![],
        first_attempt_failures: vec![],
        disturbed_attempts: vec![],
        attempts: vec![],
        disturbed: None,
        duration_s: 1.0,
        measured: Measurements::default(),
        cpu: CpuUse::default(),
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
