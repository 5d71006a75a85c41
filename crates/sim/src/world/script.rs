//! Scripted inputs for benchmarks and tests: deterministic players that
//! exercise movement, aiming and combat without a network or a brain.

use tickpack_wire::{buttons, Input};

/// The input of a scripted human `id` at tick `tick` (100 Hz ticks): runs
/// forward, strafes, turns, fires in bursts and jumps now and then. The
/// same `(tick, id)` always gives the same input.
pub fn scripted_human(tick: u64, id: u16) -> Input {
    let t = tick as f32 * 0.01 + f32::from(id);
    let mut b = 0;
    if (tick + u64::from(id) * 7) % 50 < 10 {
        b |= buttons::FIRE;
    }
    if (tick + u64::from(id) * 13) % 150 < 2 {
        b |= buttons::JUMP;
    }
    Input {
        forward: 1.0,
        right: (t * 0.7).sin(),
        yaw: t * 0.4,
        pitch: (t * 0.3).sin() * 0.2,
        buttons: b,
    }
}
