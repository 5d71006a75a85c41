//! Player movement after Quake / GoldSrc `pm_shared`: ground friction and
//! acceleration toward a wish direction, weak air control, gravity, jumps,
//! crouching, and a slide move that sweeps the player's box against every
//! map box and every other living player, clipping velocity on each contact
//! (up to four bumps), with a step-up retry for ledges up to 0.45 m.
//!
//! Constants are GoldSrc's converted from inches (1 unit = 0.0254 m):
//! max speed 250 u/s, accelerate 10, air accelerate 10, friction 4,
//! stop speed 75 u/s (CS 1.6's defaults), gravity 800 u/s², jump 45 u high, step 18 u,
//! hull 32 x 32 x 72 u standing and 36 u crouched.
//!
//! Work: every box a sweep is tested against is one work unit on the
//! [`Tracer`].

use super::geom::{Aabb, SweepHit, V3};
use super::map::Map;
use tickpack_wire::buttons;

pub use super::hull::{CROUCH_HEIGHT, HULL_HALF_WIDTH, STAND_HEIGHT};
/// Eye height above the feet, standing.
pub const STAND_EYE: f32 = 1.63;
/// Eye height above the feet, crouched.
pub const CROUCH_EYE: f32 = 0.76;
/// Top ground speed, m/s (250 u/s).
pub const MAX_SPEED: f32 = 6.35;
/// Crouched movement speed as a fraction of the top speed.
pub const DUCK_SPEED_FACTOR: f32 = 0.333;
const ACCELERATE: f32 = 10.0;
const AIR_ACCELERATE: f32 = 10.0;
/// Air control only adds speed up to this along the wish direction (30 u/s).
const AIR_SPEED_CAP: f32 = 0.762;
const FRICTION: f32 = 4.0;
const STOP_SPEED: f32 = 1.905;
/// m/s² (800 u/s²).
pub const GRAVITY: f32 = 20.32;
/// Upward speed of a jump: sqrt(2 * 800 * 45) u/s.
pub const JUMP_SPEED: f32 = 6.815;
/// Highest ledge a walking player climbs without jumping (18 u).
pub const STEP_HEIGHT: f32 = 0.45;
/// Speed cap per axis (2000 u/s).
const MAX_VELOCITY: f32 = 50.8;
/// Bodies rest this far from the faces they touch.
pub const SKIN: f32 = 0.001;
/// How far below the feet ground is looked for.
const GROUND_PROBE: f32 = 0.05;
/// Rising faster than this means airborne even near the ground (180 u/s).
const GROUND_ESCAPE_SPEED: f32 = 4.57;
const MAX_BUMPS: usize = 4;

const BLOCKED_FLOOR: u8 = 1;
const BLOCKED_WALL: u8 = 2;

/// The physical state of one player.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Body {
    /// Feet: the bottom center of the box.
    pub pos: V3,
    pub vel: V3,
    pub on_ground: bool,
    pub crouching: bool,
}

impl Body {
    pub fn height(&self) -> f32 {
        if self.crouching {
            CROUCH_HEIGHT
        } else {
            STAND_HEIGHT
        }
    }

    pub fn eye(&self) -> V3 {
        let h = if self.crouching {
            CROUCH_EYE
        } else {
            STAND_EYE
        };
        self.pos + V3::new(0.0, 0.0, h)
    }
}

/// Another player's box, as an obstacle for the one moving.
#[derive(Debug, Clone, Copy)]
pub struct Obstacle {
    /// Index of that player in the world's player list.
    pub index: usize,
    pub pos: V3,
    pub height: f32,
}

/// Sweeps a player's box against the map and the other players, counting
/// work.
pub struct Tracer<'a> {
    pub map: &'a Map,
    pub others: &'a [Obstacle],
    /// Index of the moving player, whose own obstacle is skipped.
    pub skip: usize,
    /// Box tests done so far.
    pub work: u64,
}

impl Tracer<'_> {
    /// First contact of the box with its feet at `p` moving by `d`.
    pub fn trace(&mut self, p: V3, d: V3, crouching: bool) -> Option<SweepHit> {
        let (boxes, height) = if crouching {
            (&self.map.crouch_boxes, CROUCH_HEIGHT)
        } else {
            (&self.map.stand_boxes, STAND_HEIGHT)
        };
        let mut best: Option<SweepHit> = None;
        let mut consider = |h: Option<SweepHit>| {
            if let Some(h) = h {
                if !matches!(best, Some(b) if b.t <= h.t) {
                    best = Some(h);
                }
            }
        };
        for b in boxes {
            consider(super::geom::sweep_point_box(p, d, b, SKIN));
        }
        let mut tested = boxes.len();
        let w = 2.0 * HULL_HALF_WIDTH;
        for o in self.others {
            if o.index == self.skip {
                continue;
            }
            let b = Aabb {
                min: o.pos - V3::new(w, w, height),
                max: o.pos + V3::new(w, w, o.height),
            };
            consider(super::geom::sweep_point_box(p, d, &b, SKIN));
            tested += 1;
        }
        self.work += tested as u64;
        best
    }
}

/// Movement intent for one tick, already sanitized.
#[derive(Debug, Clone, Copy, Default)]
pub struct MoveCmd {
    pub forward: f32,
    pub right: f32,
    pub yaw: f32,
}

/// Per-tick button handling: crouch (stand up only where the standing box
/// fits) and jump (on the press, from the ground). Returns the box tests
/// spent.
pub fn apply_buttons(b: &mut Body, now: u32, prev: u32, map: &Map) -> u64 {
    let mut work = 0;
    if now & buttons::CROUCH != 0 {
        b.crouching = true;
    } else if b.crouching {
        work += map.boxes().len() as u64;
        if map.hull_fits(b.pos, false) {
            b.crouching = false;
        }
    }
    if now & buttons::JUMP != 0 && prev & buttons::JUMP == 0 && b.on_ground {
        b.vel.z = JUMP_SPEED;
        b.on_ground = false;
    }
    work
}

/// Advances one body by `dt` seconds.
pub fn player_move(b: &mut Body, cmd: &MoveCmd, dt: f32, tr: &mut Tracer) {
    let (sy, cy) = cmd.yaw.sin_cos();
    let fwd = V3::new(cy, sy, 0.0);
    let right = V3::new(sy, -cy, 0.0);
    let wish = fwd * cmd.forward + right * cmd.right;
    let mut wishspeed = wish.len().min(1.0) * MAX_SPEED;
    let wishdir = wish.normalized();
    if b.crouching {
        wishspeed *= DUCK_SPEED_FACTOR;
    }
    if b.on_ground {
        b.vel.z = 0.0;
        friction(&mut b.vel, dt);
        accelerate(&mut b.vel, wishdir, wishspeed, ACCELERATE, dt);
        clamp_velocity(&mut b.vel);
        step_slide_move(b, dt, tr);
    } else {
        air_accelerate(&mut b.vel, wishdir, wishspeed, dt);
        b.vel.z -= GRAVITY * dt;
        clamp_velocity(&mut b.vel);
        slide_move(&mut b.pos, &mut b.vel, dt, b.crouching, tr);
    }
    categorize(b, tr);
}

fn friction(vel: &mut V3, dt: f32) {
    let speed = vel.flat().len();
    if speed < 0.0025 {
        vel.x = 0.0;
        vel.y = 0.0;
        return;
    }
    let control = speed.max(STOP_SPEED);
    let scale = (speed - control * FRICTION * dt).max(0.0) / speed;
    vel.x *= scale;
    vel.y *= scale;
}

fn accelerate(vel: &mut V3, wishdir: V3, wishspeed: f32, accel: f32, dt: f32) {
    let add = wishspeed - vel.dot(wishdir);
    if add <= 0.0 {
        return;
    }
    *vel += wishdir * (accel * dt * wishspeed).min(add);
}

fn air_accelerate(vel: &mut V3, wishdir: V3, wishspeed: f32, dt: f32) {
    let add = wishspeed.min(AIR_SPEED_CAP) - vel.dot(wishdir);
    if add <= 0.0 {
        return;
    }
    *vel += wishdir * (AIR_ACCELERATE * dt * wishspeed).min(add);
}

fn clamp_velocity(vel: &mut V3) {
    vel.x = vel.x.clamp(-MAX_VELOCITY, MAX_VELOCITY);
    vel.y = vel.y.clamp(-MAX_VELOCITY, MAX_VELOCITY);
    vel.z = vel.z.clamp(-MAX_VELOCITY, MAX_VELOCITY);
}

/// Moves by `vel * dt`, stopping at contacts and sliding along them.
/// Returns which kinds of faces were hit.
fn slide_move(pos: &mut V3, vel: &mut V3, dt: f32, crouching: bool, tr: &mut Tracer) -> u8 {
    let mut blocked = 0;
    let mut time_left = dt;
    for _ in 0..MAX_BUMPS {
        if *vel == V3::ZERO || time_left <= 0.0 {
            break;
        }
        let d = *vel * time_left;
        let Some(hit) = tr.trace(*pos, d, crouching) else {
            *pos += d;
            break;
        };
        let mut p = *pos + d * hit.t;
        p.set(hit.axis, hit.plane + hit.sign * SKIN);
        *pos = p;
        time_left *= 1.0 - hit.t;
        // Boxes are axis-aligned, so clipping against a face is zeroing
        // one component, and clipping against several faces in turn keeps
        // the velocity out of all of them.
        if vel.get(hit.axis) * hit.sign < 0.0 {
            vel.set(hit.axis, 0.0);
        }
        if hit.axis == 2 {
            if hit.sign > 0.0 {
                blocked |= BLOCKED_FLOOR;
            }
        } else {
            blocked |= BLOCKED_WALL;
        }
    }
    blocked
}

/// A ground move that, when blocked by a wall, also tries the same move
/// lifted by [`STEP_HEIGHT`] and pressed back down, keeping whichever went
/// farther (climbs stairs and low ledges).
fn step_slide_move(b: &mut Body, dt: f32, tr: &mut Tracer) {
    let start = b.pos;
    let start_vel = b.vel;
    if slide_move(&mut b.pos, &mut b.vel, dt, b.crouching, tr) & BLOCKED_WALL == 0 {
        return;
    }
    let (down_pos, down_vel) = (b.pos, b.vel);

    let lift = V3::new(0.0, 0.0, STEP_HEIGHT);
    let mut up = start + lift;
    if let Some(h) = tr.trace(start, lift, b.crouching) {
        up = start + lift * h.t;
        up.z = h.plane + h.sign * SKIN;
    }
    let mut up_vel = start_vel;
    slide_move(&mut up, &mut up_vel, dt, b.crouching, tr);
    let drop = V3::new(0.0, 0.0, start.z - up.z);
    match tr.trace(up, drop, b.crouching) {
        Some(h) if h.axis == 2 && h.sign > 0.0 => {
            up += drop * h.t;
            up.z = h.plane + SKIN;
        }
        // Nothing to stand on at the lifted spot: keep the plain move.
        _ => return,
    }
    let went_down = (down_pos - start).flat().len();
    let went_up = (up - start).flat().len();
    if went_up > went_down + 1e-4 {
        b.pos = up;
        b.vel = up_vel;
        b.vel.z = down_vel.z;
    }
}

/// Sets `on_ground` from a short probe below the feet, and puts the feet
/// on the ground found (GoldSrc's `PM_CategorizePosition`).
fn categorize(b: &mut Body, tr: &mut Tracer) {
    if b.vel.z > GROUND_ESCAPE_SPEED {
        b.on_ground = false;
        return;
    }
    let probe = V3::new(0.0, 0.0, -GROUND_PROBE);
    match tr.trace(b.pos, probe, b.crouching) {
        Some(h) if h.axis == 2 && h.sign > 0.0 => {
            b.on_ground = true;
            b.pos.z = h.plane + SKIN;
            b.vel.z = b.vel.z.max(0.0);
        }
        _ => b.on_ground = false,
    }
}
