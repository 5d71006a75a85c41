//! The player's box: its width and its standing and crouched heights, which
//! the map (walkable boxes grown by it) and the physics (sweeps of it) both
//! need.

/// Half the width of the player's box (16 u).
pub const HULL_HALF_WIDTH: f32 = 0.41;
/// Height of the standing box (72 u).
pub const STAND_HEIGHT: f32 = 1.83;
/// Height of the crouched box (36 u).
pub const CROUCH_HEIGHT: f32 = 0.91;
