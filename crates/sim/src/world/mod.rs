//! The game world: players and bots moving, shooting and dying on a map of
//! boxes, one tick at a time, deterministic for a given seed and inputs.
//!
//! This is the part of the reference server that costs CPU the way a
//! GoldSrc-era game server (Counter-Strike 1.6) does on a LAN: Quake-style
//! player movement swept against the map and the other players in several
//! sub-steps, hit traces against map boxes and per-player hitboxes, bots
//! that look for enemies and steer with rays, and a line-of-sight test per
//! viewer and target when snapshots are built. It has no clock, no sockets
//! and no threads: the caller passes elapsed time to [`World::step`].
//!
//! It deliberately does not know about connections, commands' sequence
//! numbers or snapshots' encoding; ids are whatever the server assigns.
//!
//! # Order of calls
//!
//! 1. [`World::new`] with a [`WorldConfig`].
//! 2. [`World::add_player`] when a client joins (or to add a bot),
//!    [`World::remove_player`] when it leaves.
//! 3. [`World::set_input`] whenever a command arrives (the latest one wins;
//!    FIRE and JUMP presses are latched until the next step, so a press
//!    carried by a command that is overwritten before the tick still counts).
//! 4. [`World::step`] once per tick with the tick's length.
//! 5. [`World::visible_to`] per connected player to fill its snapshot.
//!
//! # Conventions
//!
//! Meters and seconds; `z` is up; the floor is at `z = 0`. An entity's
//! `pos` is its feet (bottom center of its box). `yaw` 0 looks along +x and
//! grows counter-clockwise (toward +y); `pitch` is positive looking up and is
//! clamped to ±89°. `Input::forward` / `right` in -1..=1 are fractions of the
//! top speed (6.35 m/s; a third of that crouched). Even ids play on team 0
//! (spawning at the south end), odd ids on team 1 (north end); there is no
//! friendly fire. Health is 100; a body shot takes 30, legs 22, a head shot
//! kills; a weapon fires every 100 ms while FIRE is held; the dead respawn
//! after [`WorldConfig::respawn_delay_us`]. Bots are server-side players
//! whose [`Input`] a brain writes each tick (see the `bots` module).
//!
//! # Cost
//!
//! [`CostProfile`] sets the work per tick: movement sub-steps (each sweeps
//! every player against every box and every other player, plus a ground
//! probe and a step-up retry on walls), line-of-sight samples per target
//! body (a hidden target costs one ray per sample, for bots' target search
//! and for every snapshot), and bots' steering rays. All of it is real
//! geometry; [`Counters::work_units`] counts the box tests. Measured on the
//! development machine (2 shared cores), with 12 entities (8 scripted
//! humans, 4 bots) on [`MapKind::Dust`] at 100 Hz, one `step` plus
//! `visible_to` for all 12, release build, by
//! `cargo run --release -p tickpack-sim --example world_cost`:
//!
//! | profile       | substeps | samples | nav rays | box tests / tick | median  | mean       |
//! |---------------|---------:|--------:|---------:|-----------------:|--------:|-----------:|
//! | `light`       |        1 |       1 |        3 |            5 000 | 0.03 ms | 0.05 ms    |
//! | `reference`   |       40 |      80 |       32 |          110 000 | 0.7 ms  | 0.8-1.0 ms |
//! | `heavy`       |      160 |     320 |      128 |          452 000 | 3.2 ms  | 3.5-4.1 ms |
//! | `scaled(2.0)` |       80 |     160 |       64 |          232 000 | 1.5 ms  | 1.7-2.2 ms |
//!
//! (Intel Xeon VM, load average about 3 on its 2 cores while measuring,
//! hence the spread of the means; the box-test counts are exact and the
//! same on every machine; about 7 ns per box test.) So `reference` is
//! 7-10% of a core at 100 Hz, `step` taking a bit over half and the twelve
//! `visible_to` calls the rest.
//!
//! The knobs of `reference` look large because a box test here costs
//! nanoseconds where a GoldSrc trace through a BSP clipping hull costs
//! around a microsecond: the reference does more, cheaper traces to cost
//! about the same. `reference` (the default) is meant to stand for one
//! CS 1.6 server with 12 players: the case study's servers each used about
//! a quarter of a 2008 Core 2 core, which is some 5-15% of a core of a
//! modern machine.

mod bots;
mod combat;
mod cost;
mod geom;
mod hull;
mod map;
mod physics;
mod rng;
pub mod script;

use std::cell::Cell;

use tickpack_wire::{buttons, entity_flags, EntityState, Input};

pub use combat::HitZone;
pub use cost::{CostProfile, CostProfileError, EffectiveCost};
pub use geom::{Aabb, V3};
pub use map::{Map, MapKind, MapSpec, Spawn};

use bots::{wrap_angle, Brain, ThinkCtx};
use physics::{Body, MoveCmd, Obstacle, Tracer, SKIN};
use rng::Rng;

/// Full health.
pub const MAX_HEALTH: u8 = 100;
/// Time between shots while FIRE is held.
pub const FIRE_INTERVAL_US: u64 = 100_000;
/// Longest step simulated at once; a longer `dt` (a stalled server) is
/// cut to this, so the game slows down instead of teleporting players.
pub const MAX_STEP_US: u64 = 250_000;
/// Range of a bullet, meters.
pub const SHOT_RANGE: f32 = 100.0;
/// Largest pitch, radians (89°).
pub const MAX_PITCH: f32 = 1.553;
/// Spread cone half-angle standing still, radians.
const BASE_SPREAD: f32 = 0.004;
/// Extra spread at full running speed.
const MOVE_SPREAD: f32 = 0.03;
/// Extra spread in the air.
const AIR_SPREAD: f32 = 0.08;

/// Everything that shapes a world.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldConfig {
    pub map: MapKind,
    /// Players plus bots; [`World::add_player`] refuses more.
    pub max_entities: usize,
    pub cost: CostProfile,
    /// Seeds spawn choice, bullet spread, bots and [`MapKind::Arena`].
    pub seed: u64,
    /// Entities farther than this from a viewer's eye are never visible.
    pub view_distance: f32,
    pub respawn_delay_us: u64,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            map: MapKind::Dust,
            max_entities: 64,
            cost: CostProfile::reference(),
            seed: 1,
            view_distance: 60.0,
            respawn_delay_us: 3_000_000,
        }
    }
}

/// Running totals, for tests and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Steps taken.
    pub ticks: u64,
    /// Shots fired.
    pub shots: u64,
    /// Shots that struck an enemy.
    pub hits: u64,
    pub kills: u64,
    pub respawns: u64,
    /// Box tests (ray or sweep against one box) in `step` and `visible_to`.
    pub work_units: u64,
}

/// One player's score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlayerStats {
    pub kills: u32,
    pub deaths: u32,
}

/// One player or bot.
#[derive(Debug, Clone)]
struct Player {
    id: u16,
    team: u8,
    is_bot: bool,
    body: Body,
    yaw: f32,
    pitch: f32,
    health: u8,
    /// When a dead player comes back.
    respawn_at_us: u64,
    /// Latest command (for bots: this tick's think).
    input: Input,
    /// FIRE/JUMP presses seen since the last step.
    latched: u32,
    /// Buttons in effect this tick and the last.
    cur_buttons: u32,
    prev_buttons: u32,
    next_fire_us: u64,
    fired: bool,
    brain: Option<Brain>,
    stats: PlayerStats,
}

impl Player {
    fn alive(&self) -> bool {
        self.health > 0
    }

    fn state(&self) -> EntityState {
        let mut flags = 0;
        if self.is_bot {
            flags |= entity_flags::BOT;
        }
        if self.fired {
            flags |= entity_flags::FIRING;
        }
        if self.body.crouching {
            flags |= entity_flags::CROUCHING;
        }
        if self.body.on_ground {
            flags |= entity_flags::ON_GROUND;
        }
        EntityState {
            id: self.id,
            pos: self.body.pos.to_array(),
            vel: self.body.vel.to_array(),
            yaw: self.yaw,
            pitch: self.pitch,
            health: self.health,
            flags,
        }
    }
}

/// The team of player `id`: even ids 0, odd ids 1.
pub fn team_of(id: u16) -> u8 {
    (id & 1) as u8
}

/// The game world. See the module docs for the order of calls.
#[derive(Debug)]
pub struct World {
    cfg: WorldConfig,
    cost: EffectiveCost,
    map: Map,
    /// Sorted by id.
    players: Vec<Player>,
    rng: Rng,
    now_us: u64,
    counters: Counters,
    /// Work done by `visible_to`, which takes `&self`.
    query_work: Cell<u64>,
    pattern: Vec<[f32; 2]>,
    obstacles: Vec<Obstacle>,
}

impl World {
    pub fn new(cfg: WorldConfig) -> World {
        let cost = cfg.cost.effective();
        let map = Map::build(&cfg.map, cfg.seed);
        World {
            cost,
            map,
            players: Vec::with_capacity(cfg.max_entities.min(1024)),
            rng: Rng::new(cfg.seed),
            now_us: 0,
            counters: Counters::default(),
            query_work: Cell::new(0),
            pattern: combat::sample_pattern(cost.visibility_samples as usize),
            obstacles: Vec::new(),
            cfg,
        }
    }

    pub fn config(&self) -> &WorldConfig {
        &self.cfg
    }

    /// The cost knobs in use (after scaling).
    pub fn cost(&self) -> EffectiveCost {
        self.cost
    }

    pub fn map(&self) -> &Map {
        &self.map
    }

    /// Simulated time: the sum of the (capped) `dt`s passed to `step`.
    pub fn now_us(&self) -> u64 {
        self.now_us
    }

    /// Number of players and bots.
    pub fn len(&self) -> usize {
        self.players.len()
    }

    pub fn is_empty(&self) -> bool {
        self.players.is_empty()
    }

    fn index(&self, id: u16) -> Option<usize> {
        self.players.binary_search_by_key(&id, |p| p.id).ok()
    }

    /// Adds a player (or a bot) and spawns it at once at a spawn point of its
    /// team. False if `id` is taken or the world is full.
    pub fn add_player(&mut self, id: u16, is_bot: bool) -> bool {
        let Err(at) = self.players.binary_search_by_key(&id, |p| p.id) else {
            return false;
        };
        if self.players.len() >= self.cfg.max_entities {
            return false;
        }
        let player = Player {
            id,
            team: team_of(id),
            is_bot,
            body: Body::default(),
            yaw: 0.0,
            pitch: 0.0,
            health: 0,
            respawn_at_us: 0,
            input: Input::default(),
            latched: 0,
            cur_buttons: 0,
            prev_buttons: 0,
            next_fire_us: 0,
            fired: false,
            brain: is_bot.then(Brain::default),
            stats: PlayerStats::default(),
        };
        self.players.insert(at, player);
        self.respawn(at);
        true
    }

    /// Removes a player or bot. False if there was none with `id`.
    pub fn remove_player(&mut self, id: u16) -> bool {
        match self.index(id) {
            Some(i) => {
                self.players.remove(i);
                true
            }
            None => false,
        }
    }

    /// Records a human's latest command, applied at the next step. Values
    /// are sanitized (non-finite numbers ignored, movement clamped to
    /// -1..=1, pitch to ±89°). False for an unknown id or a bot.
    pub fn set_input(&mut self, id: u16, input: Input) -> bool {
        let Some(i) = self.index(id) else {
            return false;
        };
        let p = &mut self.players[i];
        if p.is_bot {
            return false;
        }
        let axis = |v: f32| {
            if v.is_finite() {
                v.clamp(-1.0, 1.0)
            } else {
                0.0
            }
        };
        let prev = p.input;
        p.input = Input {
            forward: axis(input.forward),
            right: axis(input.right),
            yaw: if input.yaw.is_finite() {
                wrap_angle(input.yaw)
            } else {
                prev.yaw
            },
            pitch: if input.pitch.is_finite() {
                input.pitch.clamp(-MAX_PITCH, MAX_PITCH)
            } else {
                prev.pitch
            },
            buttons: input.buttons,
        };
        p.latched |= input.buttons & (buttons::FIRE | buttons::JUMP);
        true
    }

    /// Moves a player to `pos` (feet) facing `yaw`/`pitch`, at rest. For
    /// tests and scripted scenarios; false for an unknown id.
    pub fn place(&mut self, id: u16, pos: [f32; 3], yaw: f32, pitch: f32) -> bool {
        let Some(i) = self.index(id) else {
            return false;
        };
        let p = &mut self.players[i];
        p.body.pos = V3::from_array(pos);
        p.body.vel = V3::ZERO;
        p.body.on_ground = false;
        p.yaw = wrap_angle(yaw);
        p.pitch = pitch.clamp(-MAX_PITCH, MAX_PITCH);
        p.input.yaw = p.yaw;
        p.input.pitch = p.pitch;
        true
    }

    /// Advances the world by `dt_us` (at most [`MAX_STEP_US`]): respawns,
    /// bots think, buttons and view apply, bodies move in sub-steps, then
    /// shots are traced in id order.
    pub fn step(&mut self, dt_us: u64) {
        let dt_us = dt_us.min(MAX_STEP_US);
        if dt_us == 0 {
            return;
        }
        self.now_us += dt_us;
        self.counters.ticks += 1;
        let now = self.now_us;
        let dt = dt_us as f32 * 1e-6;
        let mut work = 0u64;

        for i in 0..self.players.len() {
            let p = &self.players[i];
            if !p.alive() && now >= p.respawn_at_us {
                self.respawn(i);
                self.counters.respawns += 1;
            }
        }

        let ctx = ThinkCtx {
            map: &self.map,
            pattern: &self.pattern,
            nav_rays: self.cost.bot_nav_rays,
            view_distance: self.cfg.view_distance,
            now_us: now,
            dt,
        };
        for i in 0..self.players.len() {
            if let Some(mut brain) = self.players[i].brain.take() {
                let input =
                    bots::think(&mut brain, i, &self.players, &ctx, &mut self.rng, &mut work);
                let p = &mut self.players[i];
                p.input = input;
                p.latched = input.buttons & (buttons::FIRE | buttons::JUMP);
                p.brain = Some(brain);
            }
        }

        for p in &mut self.players {
            p.fired = false;
            p.prev_buttons = p.cur_buttons;
            p.cur_buttons = 0;
            if p.alive() {
                p.cur_buttons = p.input.buttons | p.latched;
                p.yaw = p.input.yaw;
                p.pitch = p.input.pitch;
                work +=
                    physics::apply_buttons(&mut p.body, p.cur_buttons, p.prev_buttons, &self.map);
            }
            p.latched = 0;
        }

        let substeps = self.cost.physics_substeps;
        let sub_dt = dt / substeps as f32;
        let mut obstacles = std::mem::take(&mut self.obstacles);
        for _ in 0..substeps {
            obstacles.clear();
            obstacles.extend(
                self.players
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.alive())
                    .map(|(index, p)| Obstacle {
                        index,
                        pos: p.body.pos,
                        height: p.body.height(),
                    }),
            );
            for (i, p) in self.players.iter_mut().enumerate() {
                if !p.alive() {
                    continue;
                }
                let cmd = MoveCmd {
                    forward: p.input.forward,
                    right: p.input.right,
                    yaw: p.yaw,
                };
                let mut tr = Tracer {
                    map: &self.map,
                    others: &obstacles,
                    skip: i,
                    work: 0,
                };
                physics::player_move(&mut p.body, &cmd, sub_dt, &mut tr);
                work += tr.work;
            }
        }
        self.obstacles = obstacles;

        for i in 0..self.players.len() {
            let p = &self.players[i];
            if p.alive() && p.cur_buttons & buttons::FIRE != 0 && now >= p.next_fire_us {
                work += self.fire(i);
            }
        }

        self.counters.work_units += work;
    }

    /// Traces one shot of `players[i]`; returns the box tests spent.
    fn fire(&mut self, i: usize) -> u64 {
        let mut work = 0;
        let now = self.now_us;
        let (eye, yaw, pitch, spread, team) = {
            let p = &mut self.players[i];
            p.fired = true;
            p.next_fire_us = now + FIRE_INTERVAL_US;
            let b = &p.body;
            let mut spread =
                BASE_SPREAD + MOVE_SPREAD * (b.vel.flat().len() / physics::MAX_SPEED).min(1.0);
            if !b.on_ground {
                spread += AIR_SPREAD;
            }
            if b.crouching {
                spread *= 0.5;
            }
            (b.eye(), p.yaw, p.pitch, spread, p.team)
        };
        self.counters.shots += 1;
        let a = self.rng.range(0.0, std::f32::consts::TAU);
        let r = spread * self.rng.unit().sqrt();
        let d = geom::view_dir(yaw + r * a.cos(), pitch + r * a.sin()) * SHOT_RANGE;
        let mut best_t = combat::nearest_map_hit(&self.map, eye, d, &mut work);
        let inv = d.recip();
        let mut victim = None;
        for (j, q) in self.players.iter().enumerate() {
            if j == i || !q.alive() {
                continue;
            }
            // Whole-body box first, then the hitboxes.
            let h = q.body.height();
            let hull = Aabb {
                min: q.body.pos - V3::new(physics::HULL_HALF_WIDTH, physics::HULL_HALF_WIDTH, 0.0),
                max: q.body.pos + V3::new(physics::HULL_HALF_WIDTH, physics::HULL_HALF_WIDTH, h),
            };
            work += 1;
            if geom::ray_box(eye, inv, &hull, best_t).is_none() {
                continue;
            }
            for (bx, zone) in combat::hitboxes(&q.body) {
                work += 1;
                if let Some(t) = geom::ray_box(eye, inv, &bx, best_t) {
                    if t < best_t {
                        best_t = t;
                        victim = Some((j, zone));
                    }
                }
            }
        }
        let Some((j, zone)) = victim else {
            return work;
        };
        if self.players[j].team == team {
            return work;
        }
        self.counters.hits += 1;
        let q = &mut self.players[j];
        let dmg = zone.damage().min(u32::from(q.health)) as u8;
        q.health -= dmg;
        if q.health == 0 {
            q.stats.deaths += 1;
            q.respawn_at_us = now + self.cfg.respawn_delay_us;
            q.body.vel = V3::ZERO;
            self.players[i].stats.kills += 1;
            self.counters.kills += 1;
        }
        work
    }

    fn respawn(&mut self, i: usize) {
        let team = self.players[i].team;
        let spawns = self.map.spawns(team);
        let start = self.rng.below(spawns.len());
        let occupied = |s: &Spawn| {
            self.players.iter().any(|q| {
                q.alive()
                    && (q.body.pos - s.pos).flat().len() < 2.0 * physics::HULL_HALF_WIDTH + 0.1
            })
        };
        let spawn = (0..spawns.len())
            .map(|k| spawns[(start + k) % spawns.len()])
            .find(|s| !occupied(s))
            .unwrap_or(spawns[start]);
        let now = self.now_us;
        let p = &mut self.players[i];
        p.body = Body {
            pos: spawn.pos + V3::new(0.0, 0.0, SKIN),
            vel: V3::ZERO,
            on_ground: true,
            crouching: false,
        };
        p.yaw = wrap_angle(spawn.yaw);
        p.pitch = 0.0;
        p.input.yaw = p.yaw;
        p.input.pitch = 0.0;
        p.health = MAX_HEALTH;
        p.next_fire_us = now;
        if let Some(brain) = &mut p.brain {
            *brain = Brain::default();
        }
    }

    /// Fills `out` (cleared first) with what player `viewer` sees: itself
    /// first, then every other entity within the view distance that passes
    /// the line-of-sight test, in id order. Dead entities are included (with
    /// health 0) when in sight. Leaves `out` empty for an unknown id.
    pub fn visible_to(&self, viewer: u16, out: &mut Vec<EntityState>) {
        out.clear();
        let Some(vi) = self.index(viewer) else {
            return;
        };
        let v = &self.players[vi];
        out.push(v.state());
        let eye = v.body.eye();
        let mut work = 0;
        for (j, q) in self.players.iter().enumerate() {
            if j == vi {
                continue;
            }
            let center = q.body.pos + V3::new(0.0, 0.0, q.body.height() * 0.5);
            if (center - eye).len() > self.cfg.view_distance {
                continue;
            }
            if combat::can_see(&self.map, eye, &q.body, &self.pattern, &mut work) {
                out.push(q.state());
            }
        }
        self.query_work.set(self.query_work.get() + work);
    }

    /// The current state of entity `id`.
    pub fn entity(&self, id: u16) -> Option<EntityState> {
        self.index(id).map(|i| self.players[i].state())
    }

    /// Every entity, in id order.
    pub fn entities(&self) -> impl Iterator<Item = EntityState> + '_ {
        self.players.iter().map(Player::state)
    }

    /// Kills and deaths of player `id`.
    pub fn stats(&self, id: u16) -> Option<PlayerStats> {
        self.index(id).map(|i| self.players[i].stats)
    }

    /// Running totals, including the work done by `visible_to`.
    pub fn counters(&self) -> Counters {
        Counters {
            work_units: self.counters.work_units + self.query_work.get(),
            ..self.counters
        }
    }
}

#[cfg(test)]
mod tests;
