//! The tick rate the protocol carries (`Accepted`, `Stats`: a `u16`) is
//! tickpack's one [`TickRate`] (crate `tickpack-units`), re-exported here
//! so protocol code names it where it always did; and how many snapshots
//! a delta may refer back to.

pub use tickpack_units::TickRate;

/// Snapshots a sender keeps as delta baselines and a receiver keeps to
/// decode against (a delta may refer to any of the last this many).
pub const DELTA_HISTORY: usize = 32;
