//! Agones fleets sized from measurements (`tickpack agones fleet`): a bench
//! result in, a `Fleet` and `FleetAutoscaler` manifest out, every derived
//! number explained in a comment. Sans-I/O: the CLI reads the result and
//! writes the text.
//!
//! - [`sizing`]: the game, the recommended density, whether pinning
//!   mattered, the measured memory, and the CPU and memory per pod that
//!   follow ([`size`]).
//! - [`manifest`]: the YAML text ([`render`]), its ports, health settings,
//!   containers and autoscaler.
//!
//! The container images are built by `deploy/docker/*.Dockerfile`;
//! docs/agones.md walks through deploying them.

pub mod manifest;
pub mod sizing;

pub use manifest::{render, FleetOptions};
pub use sizing::{size, Sizing};

/// Why no manifest could be made: the result or the options do not allow
/// one (a configuration error: exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("{0}")]
    Input(String),
}

/// The manifest for a bench result: [`size`] then [`render`].
pub fn fleet_manifest(
    result: &tickpack_report::bench::BenchResult,
    memory_mib: Option<u64>,
    opts: &FleetOptions,
) -> Result<String, FleetError> {
    render(&size(result, memory_mib)?, opts)
}
