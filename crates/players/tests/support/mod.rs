//! What the players' tests on a virtual clock (schedule.rs, tw7_player.rs)
//! share: the settings of their emulated players.

use tickpack_players::player::PlayerSettings;
use tickpack_players::SizeDist;

/// A command not reflected this long after it was due is lost; the tests
/// also run this long past the window's end to see the last commands out.
pub const LOSS_DEADLINE_US: u64 = 1_000_000;

/// A player measured over `window` that gives up connecting at
/// `connect_deadline_us`: 64-byte commands at the rate the server gives
/// (`cmd_rate_hz: None`), no pings, a command lost [`LOSS_DEADLINE_US`]
/// after it was due. Tests change a field with `..settings(..)`.
pub fn settings(window: (u64, u64), connect_deadline_us: u64) -> PlayerSettings {
    PlayerSettings {
        cmd_rate_hz: None,
        cmd_size: SizeDist::Fixed(64),
        ping_hz: 0.0,
        ping_size: 64,
        connect_deadline_us,
        window,
        loss_deadline_us: LOSS_DEADLINE_US,
    }
}
