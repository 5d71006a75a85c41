//! The figures a step is judged on, built once by [`StepFigures::of`]:
//! the bench builds them from what it just measured, the report from what
//! a result recorded, and the rule table ([`crate::qos::RULES`]) reads them.

use crate::{CommandCounts, Measurements, Outages, Percentiles, SnapshotCounts};
use tickpack_units::TickRate;

/// What the verdict looks at.
#[derive(Debug, Clone, Copy)]
pub struct StepFigures<'a> {
    pub players: u32,
    pub connected: u32,
    pub tick_hz: TickRate,
    pub transaction_latency_us: &'a Percentiles,
    pub tick_lateness_us: &'a Percentiles,
    pub server_frame_us: &'a Percentiles,
    pub snapshots: &'a SnapshotCounts,
    pub commands: &'a CommandCounts,
    pub outages: &'a Outages,
    /// Query round trips (`bench --probe`); `None`: not probed.
    pub query_latency_us: Option<&'a Percentiles>,
    /// The servers' threads' run delay; `None`: not sampled.
    pub run_delay_us: Option<&'a Percentiles>,
    /// Its p99 in each second of the measured window (empty: not kept).
    pub run_delay_seconds_p99_us: &'a [u64],
}

impl<'a> StepFigures<'a> {
    /// The figures of a step that started `players` players, of which
    /// `connected` connected, at `tick_hz`, from its measurements and, when
    /// taken, its query latency and its servers' run delay.
    pub fn of(
        players: u32,
        connected: u32,
        tick_hz: TickRate,
        measured: &'a Measurements,
        query_latency_us: Option<&'a Percentiles>,
        run_delay_us: Option<&'a Percentiles>,
    ) -> StepFigures<'a> {
        StepFigures {
            players,
            connected,
            tick_hz,
            transaction_latency_us: &measured.transaction_latency_us,
            tick_lateness_us: &measured.tick_lateness_us,
            server_frame_us: &measured.server_frame_us,
            snapshots: &measured.snapshots,
            commands: &measured.commands,
            outages: &measured.outages,
            query_latency_us,
            run_delay_us,
            run_delay_seconds_p99_us: &[],
        }
    }

    /// The same figures with the run delay's p99 of each second.
    pub fn with_run_delay_seconds(self, p99_us: &'a [u64]) -> StepFigures<'a> {
        StepFigures {
            run_delay_seconds_p99_us: p99_us,
            ..self
        }
    }

    /// The run delay the relative limit compares
    /// ([`crate::qos::typical_run_delay_us`]).
    pub fn typical_run_delay_us(&self) -> Option<u64> {
        crate::qos::typical_run_delay_us(self.run_delay_seconds_p99_us, self.run_delay_us)
    }
}
