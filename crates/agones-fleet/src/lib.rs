//! Agones fleets sized from measurements (`tickpack agones fleet`): a bench
//! result and a game's definition in, a `Fleet` and `FleetAutoscaler`
//! manifest out, every derived number explained in a comment. Any game
//! whose definition has an `[agones]` table can go (docs/agones.md);
//! nothing here names a game. Sans-I/O: the CLI reads the result and the
//! definition and writes the text.
//!
//! - [`sizing`]: what the result says (the game's name, the recommended
//!   density, whether pinning mattered, the measured memory) and the CPU
//!   and memory per pod that follow ([`size`]).
//! - [`launch`]: which definition ([`definition`]), the settings the bench
//!   ran, and the server's command, environment and files in its pod,
//!   rendered by the game crate ([`launch::pod_launch`]).
//! - [`containers`]: the game's container and tickpack's sidecar.
//! - [`manifest`]: the YAML text ([`render`]): ports, health settings,
//!   the containers, the autoscaler.
//! - [`options`]: the user's flags ([`FleetOptions`]) and Agones' rules
//!   on them; [`yaml`]: the line writer.
//!
//! The images of the built-in games are built by `deploy/docker/*.Dockerfile`.

pub mod containers;
pub mod launch;
pub mod manifest;
pub mod options;
pub mod sizing;
pub mod yaml;

pub use launch::definition;
pub use manifest::render;
pub use options::FleetOptions;
pub use sizing::{size, Sizing};
pub use tickpack_game::agones::TICKPACK_IN_IMAGE;

/// Why no manifest could be made: the result, the definition or the
/// options do not allow one (a configuration error: exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("{0}")]
    Input(String),
}

/// The manifest for a bench result and the definition of the game it
/// measured ([`definition`]): [`size`] then [`render`].
pub fn fleet_manifest(
    result: &tickpack_report::bench::BenchResult,
    memory_mib: Option<u64>,
    def: &tickpack_game::GameDef,
    opts: &FleetOptions,
) -> Result<String, FleetError> {
    render(&size(result, memory_mib)?, def, opts)
}
