//! A host's settings, from a file or from code, checked once into the
//! typed [`tickpack_host::fleet::FleetConfig`] the root-side supervisor
//! runs. The policy side of `tickpack host up` and `tickpack bench`'s
//! steps: the host crate keeps the mechanisms (cgroups, namespaces,
//! spawning, the run dir) and reads no host file.
//!
//! - [`plan`]: [`FleetPlan`], the typed plan (CPU sets, a `ServerSpec`,
//!   byte counts, the game), and [`FleetPlan::build`], the one place every
//!   rule is checked; the bench fills a plan directly.
//! - [`file`]: [`FleetFile`], the host file's TOML schema, its loading
//!   (one-line errors with the line, keys it no longer has refused with
//!   their replacement) and its resolution into a plan.
//! - [`size`]: byte sizes (`256MiB`) parsed and range-checked.
//!
//! The game is `tickpack-game`'s (a name or a definition file resolves to
//! a `GameServer` there), so nothing here names one.

pub mod file;
pub mod plan;
pub mod size;

pub use file::{ConfigFile, FleetFile, InstanceOverride};
pub use plan::{
    FleetPlan, InstancePlan, DEFAULT_COMMAND, DEFAULT_MEMORY_BYTES, DEFAULT_PIDS, MAX_PIDS,
};
pub use size::{parse_bytes, MAX_BYTES};
