//! Server-side bots. A bot's brain looks at the world and writes an
//! [`Input`], exactly what a human's command carries; from there the bot goes
//! through the same button, movement and fire code as a human.
//!
//! Each think: look for the nearest enemy inside a 150° field of view and
//! in line of sight (the same multi-point test snapshots use). With one:
//! turn toward its chest at a limited rate (plus an aim error drawn when the
//! target is acquired, which shrinks while it keeps aiming), strafe, and
//! hold FIRE once a reaction time has passed and the aim is within a
//! tolerance. Without one: walk to a random waypoint, steering with a fan of
//! `bot_nav_rays` knee-high rays that look for the clearest way; when it
//! makes no progress for a second it jumps and picks another waypoint.

use std::f32::consts::{PI, TAU};

use super::combat::{can_see, nearest_map_hit};
use super::geom::V3;
use super::map::Map;
use super::rng::Rng;
use super::Player;
use tickpack_wire::{buttons, Input};

/// Cosine of half the field of view (75°).
const FOV_COS: f32 = 0.2588;
/// Turn rate while aiming, rad/s.
const AIM_TURN_RATE: f32 = 10.0;
/// Turn rate while walking, rad/s.
const WALK_TURN_RATE: f32 = 6.0;
/// From first sight of a target to the first shot.
const REACTION_US: u64 = 250_000;
/// Aim error (yaw and pitch, each) below which the bot fires.
const AIM_TOLERANCE: f32 = 0.04;
/// Largest aim error drawn on acquiring a target, radians.
const AIM_ERROR: f32 = 0.06;
/// Fraction of the aim error kept per second of aiming.
const AIM_ERROR_KEEP_PER_S: f32 = 0.1;
/// A waypoint closer than this (horizontally) is reached.
const WAYPOINT_RADIUS: f32 = 1.2;
/// Length of the steering rays.
const LOOKAHEAD: f32 = 3.0;
/// Widest steering ray, either side of the waypoint direction.
const FAN: f32 = 1.2;
/// Progress check period and the least distance made per period.
const STUCK_CHECK_US: u64 = 1_000_000;
const STUCK_DISTANCE: f32 = 0.5;

/// What a bot remembers between thinks.
#[derive(Debug, Clone, Default)]
pub struct Brain {
    waypoint: Option<usize>,
    target: Option<u16>,
    seen_since_us: u64,
    aim_error: [f32; 2],
    strafe: f32,
    strafe_until_us: u64,
    check_pos: V3,
    check_at_us: u64,
    jump: bool,
}

/// What a think may look at besides the players.
pub struct ThinkCtx<'a> {
    pub map: &'a Map,
    pub pattern: &'a [[f32; 2]],
    pub nav_rays: u32,
    pub view_distance: f32,
    pub now_us: u64,
    pub dt: f32,
}

/// Wraps an angle into `[-PI, PI)`.
pub fn wrap_angle(a: f32) -> f32 {
    (a + PI).rem_euclid(TAU) - PI
}

fn turn_toward(from: f32, to: f32, max_step: f32) -> f32 {
    wrap_angle(from + wrap_angle(to - from).clamp(-max_step, max_step))
}

/// One think of the bot at `players[me]`: returns its command for this tick.
pub fn think(
    brain: &mut Brain,
    me: usize,
    players: &[Player],
    ctx: &ThinkCtx,
    rng: &mut Rng,
    work: &mut u64,
) -> Input {
    let p = &players[me];
    let mut input = Input {
        yaw: p.yaw,
        pitch: p.pitch,
        ..Input::default()
    };
    if !p.alive() {
        brain.target = None;
        brain.waypoint = None;
        return input;
    }
    let eye = p.body.eye();
    let facing = V3::new(p.yaw.cos(), p.yaw.sin(), 0.0);

    // Nearest visible enemy; the current target is kept even outside the
    // field of view (the bot knows where it just was).
    let mut best: Option<(usize, f32)> = None;
    for (j, q) in players.iter().enumerate() {
        if j == me || !q.alive() || q.team == p.team {
            continue;
        }
        let to = q.body.pos - eye;
        let dist = to.len();
        if dist > ctx.view_distance || best.is_some_and(|(_, d)| d <= dist) {
            continue;
        }
        if brain.target != Some(q.id) && facing.dot(to.flat().normalized()) < FOV_COS {
            continue;
        }
        if can_see(ctx.map, eye, &q.body, ctx.pattern, work) {
            best = Some((j, dist));
        }
    }

    match best {
        Some((j, _)) => engage(brain, p, &players[j], ctx, rng, &mut input),
        None => {
            brain.target = None;
            wander(brain, p, ctx, rng, work, &mut input);
        }
    }
    input
}

fn engage(
    brain: &mut Brain,
    p: &Player,
    q: &Player,
    ctx: &ThinkCtx,
    rng: &mut Rng,
    input: &mut Input,
) {
    if brain.target != Some(q.id) {
        brain.target = Some(q.id);
        brain.seen_since_us = ctx.now_us;
        brain.aim_error = [
            rng.range(-AIM_ERROR, AIM_ERROR),
            rng.range(-AIM_ERROR, AIM_ERROR),
        ];
    }
    let keep = AIM_ERROR_KEEP_PER_S.powf(ctx.dt);
    brain.aim_error[0] *= keep;
    brain.aim_error[1] *= keep;

    let chest = q.body.pos + V3::new(0.0, 0.0, q.body.height() * 0.62);
    let to = chest - p.body.eye();
    let want_yaw = to.y.atan2(to.x) + brain.aim_error[0];
    let want_pitch = to.z.atan2(to.flat().len()) + brain.aim_error[1];
    let step = AIM_TURN_RATE * ctx.dt;
    input.yaw = turn_toward(p.yaw, want_yaw, step);
    input.pitch = p.pitch + (want_pitch - p.pitch).clamp(-step, step);

    let aligned = wrap_angle(want_yaw - input.yaw).abs() < AIM_TOLERANCE
        && (want_pitch - input.pitch).abs() < AIM_TOLERANCE;
    if aligned && ctx.now_us.saturating_sub(brain.seen_since_us) >= REACTION_US {
        input.buttons |= buttons::FIRE;
    }

    if ctx.now_us >= brain.strafe_until_us {
        brain.strafe = [-1.0, 0.0, 1.0][rng.below(3)];
        brain.strafe_until_us = ctx.now_us + (rng.range(0.3, 0.9) * 1e6) as u64;
    }
    input.right = brain.strafe;
}

fn wander(
    brain: &mut Brain,
    p: &Player,
    ctx: &ThinkCtx,
    rng: &mut Rng,
    work: &mut u64,
    input: &mut Input,
) {
    let waypoints = ctx.map.waypoints();
    if waypoints.is_empty() {
        return;
    }
    let pos = p.body.pos;
    if ctx.now_us >= brain.check_at_us {
        if brain.check_at_us != 0 && (pos - brain.check_pos).flat().len() < STUCK_DISTANCE {
            brain.waypoint = None;
            brain.jump = true;
        }
        brain.check_pos = pos;
        brain.check_at_us = ctx.now_us + STUCK_CHECK_US;
    }
    let reached = |w: usize| (waypoints[w] - pos).flat().len() < WAYPOINT_RADIUS;
    let wp = match brain.waypoint {
        Some(w) if !reached(w) => w,
        _ => {
            let w = rng.below(waypoints.len());
            brain.waypoint = Some(w);
            w
        }
    };
    let want = (waypoints[wp] - pos).flat();
    let base_yaw = want.y.atan2(want.x);
    let mut go_yaw = base_yaw;

    // Steering fan: 0, +a, -a, +2a, -2a, ... up to FAN either side.
    let n = ctx.nav_rays;
    if n > 0 {
        let pairs = n / 2;
        let step = if pairs > 0 { FAN / pairs as f32 } else { 0.0 };
        let knee = pos + V3::new(0.0, 0.0, 0.5);
        let mut best_score = f32::NEG_INFINITY;
        for k in 0..n {
            let off = step * k.div_ceil(2) as f32 * if k % 2 == 1 { 1.0 } else { -1.0 };
            let yaw = base_yaw + off;
            let d = V3::new(yaw.cos(), yaw.sin(), 0.0) * LOOKAHEAD;
            let free = nearest_map_hit(ctx.map, knee, d, work) * LOOKAHEAD;
            let score = free - off.abs() * 1.5;
            if score > best_score {
                best_score = score;
                go_yaw = yaw;
            }
        }
    }

    input.yaw = turn_toward(p.yaw, go_yaw, WALK_TURN_RATE * ctx.dt);
    input.pitch = p.pitch * 0.9;
    input.forward = if wrap_angle(go_yaw - input.yaw).abs() < 1.0 {
        1.0
    } else {
        0.3
    };
    if std::mem::take(&mut brain.jump) {
        input.buttons |= buttons::JUMP;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turning_takes_the_short_way_round_and_respects_the_rate() {
        let a = turn_toward(3.0, -3.0, 0.1);
        assert!((a - 3.1).abs() < 1e-5, "{a}");
        let b = turn_toward(0.0, 1.0, 0.1);
        assert!((b - 0.1).abs() < 1e-6);
        assert!((turn_toward(0.0, 0.05, 0.1) - 0.05).abs() < 1e-6);
    }
}
