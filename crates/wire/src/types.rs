//! Game-facing value types shared by the codec, the simulation and the players.

/// Buttons in [`Input::buttons`].
pub mod buttons {
    /// Primary fire: the server traces a hit ray along the view direction.
    pub const FIRE: u32 = 1 << 0;
    /// Jump (only from the ground).
    pub const JUMP: u32 = 1 << 1;
    /// Crouch: slower movement, lower eye height.
    pub const CROUCH: u32 = 1 << 2;
}

/// What one player asks for in one command: movement intent and view.
///
/// `forward` and `right` are in -1.0..=1.0 (values outside are clamped by the
/// simulation); `yaw` and `pitch` are radians.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Input {
    pub forward: f32,
    pub right: f32,
    pub yaw: f32,
    pub pitch: f32,
    pub buttons: u32,
}

/// One entity as a player sees it in a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EntityState {
    /// Entity id: players and bots share one id space (0..=u16::MAX).
    pub id: u16,
    pub pos: [f32; 3],
    pub vel: [f32; 3],
    pub yaw: f32,
    pub pitch: f32,
    /// 0 means dead (respawn pending).
    pub health: u8,
    /// Bit flags, see [`entity_flags`].
    pub flags: u8,
}

/// Bits of [`EntityState::flags`].
pub mod entity_flags {
    /// The entity is a server-side bot.
    pub const BOT: u8 = 1 << 0;
    /// The entity fired this tick.
    pub const FIRING: u8 = 1 << 1;
    /// The entity is crouching.
    pub const CROUCHING: u8 = 1 << 2;
    /// The entity is on the ground.
    pub const ON_GROUND: u8 = 1 << 3;
}
