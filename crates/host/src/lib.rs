//! The consolidation host: many game server instances on one machine, each
//! isolated as if it owned it.
//!
//! - [`fleet`]: the typed configuration the supervisor runs
//!   ([`fleet::FleetConfig`]: instances, backend, limits, restart policy).
//!   The host file, its flags and the rules that check them are not here:
//!   `tickpack-fleet` reads them and builds this (so is the bench's);
//!   the game is `tickpack-game`'s (its `ServerSpec` is what runs), so no
//!   game is named here.
//! - [`guard`]: batch work beside the servers and the QoS guard that lets
//!   it use only the CPU they leave idle (the policy that decides how much,
//!   `tickpack-guard`, is handed in through [`guard::BatchPolicy`]).
//! - [`placement`]: CPU topology from /sys and the placement policies.
//! - [`netpath`], [`cgroup`], [`spawn`], [`confine`]: the mechanisms that
//!   need root (network paths and the firewall, cgroups, starting an
//!   instance in its walls) live in `tickpack-root`, named here as they
//!   always were.
//! - [`leftover`]: finding what a killed supervisor left (recorded PIDs, the
//!   firewall table).
//! - [`event`]: what happened on a host, as typed records (the
//!   sentences made from them in one place).
//! - [`supervisor`]: `host up`'s supervisor (bring-up, reaping, status,
//!   teardown), with the restart policy as a pure tracker
//!   ([`supervisor::RestartTracker`]), health checks and the control socket
//!   in its submodules.

pub use tickpack_root::{cgroup, confine, netpath, spawn};
pub mod event;
pub mod fleet;
pub mod guard;
/// The launch contract lives with the games (`tickpack-game`); the host
/// runs any [`launch::ServerSpec`].
pub use tickpack_game::launch;
pub mod leftover;
pub mod placement;
pub mod status;
pub mod supervisor;
