//! Maps: a flat floor, four outer walls and a few dozen axis-aligned boxes
//! (walls, crates, pillars, steps), plus spawn points per team and a grid of
//! free waypoints for bots.
//!
//! Coordinates are meters, `z` up, the floor's top at `z = 0`, the play area
//! `0..size[0]` by `0..size[1]`.

use super::geom::{Aabb, V3};
use super::hull::{CROUCH_HEIGHT, HULL_HALF_WIDTH, STAND_HEIGHT};
use super::rng::Rng;

/// Height of the outer walls.
const OUTER_WALL_HEIGHT: f32 = 8.0;
/// Spacing of the bot waypoint grid.
const WAYPOINT_SPACING: f32 = 3.0;
/// Clearance a waypoint keeps from every box (on top of the player hull).
const WAYPOINT_CLEARANCE: f32 = 0.3;

/// A place and facing where a player (re)appears.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spawn {
    /// Feet position.
    pub pos: V3,
    /// Facing, radians.
    pub yaw: f32,
}

/// A map given box by box (tests, experiments).
#[derive(Debug, Clone, PartialEq)]
pub struct MapSpec {
    /// Play area extent in x and y, meters.
    pub size: [f32; 2],
    /// Solid boxes. The floor and the outer walls are added automatically.
    pub boxes: Vec<Aabb>,
    /// Spawn points of team 0 and team 1; an empty list falls back to the
    /// other team's, and two empty lists to the middle of the map.
    pub spawns: [Vec<Spawn>; 2],
}

/// Which map the world is built on.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum MapKind {
    /// A fixed 64 m x 64 m layout loosely after de_dust: two spawns at the
    /// south (team 0) and north (team 1) ends, two long walls with doors
    /// splitting it into three lanes, pillars, crates (some stacked), low
    /// cover walls, two stepped platforms and a bridge over mid: 38 boxes
    /// plus the floor and the outer walls.
    #[default]
    Dust,
    /// A 64 m x 64 m arena with `obstacles` crates, pillars and wall segments
    /// placed from the world seed (spawn areas kept clear), same spawns as
    /// [`MapKind::Dust`].
    Arena { obstacles: usize },
    /// Caller-supplied boxes and spawns.
    Custom(MapSpec),
}

/// A built map, with the per-hull expanded boxes the physics sweeps against.
#[derive(Debug, Clone)]
pub struct Map {
    size: [f32; 2],
    boxes: Vec<Aabb>,
    spawns: [Vec<Spawn>; 2],
    waypoints: Vec<V3>,
    pub(super) stand_boxes: Vec<Aabb>,
    pub(super) crouch_boxes: Vec<Aabb>,
}

impl Map {
    /// Builds `kind`; `seed` only matters for [`MapKind::Arena`].
    pub fn build(kind: &MapKind, seed: u64) -> Map {
        let spec = match kind {
            MapKind::Dust => dust(),
            MapKind::Arena { obstacles } => arena(*obstacles, seed),
            MapKind::Custom(spec) => spec.clone(),
        };
        Map::from_spec(spec)
    }

    fn from_spec(spec: MapSpec) -> Map {
        let [sx, sy] = spec.size;
        let mut boxes = vec![
            // Floor, then the outer walls.
            Aabb::new([-1.0, -1.0, -1.0], [sx + 1.0, sy + 1.0, 0.0]),
            Aabb::new([-1.0, -1.0, 0.0], [0.0, sy + 1.0, OUTER_WALL_HEIGHT]),
            Aabb::new([sx, -1.0, 0.0], [sx + 1.0, sy + 1.0, OUTER_WALL_HEIGHT]),
            Aabb::new([0.0, -1.0, 0.0], [sx, 0.0, OUTER_WALL_HEIGHT]),
            Aabb::new([0.0, sy, 0.0], [sx, sy + 1.0, OUTER_WALL_HEIGHT]),
        ];
        boxes.extend(spec.boxes);
        let stand_boxes: Vec<Aabb> = boxes
            .iter()
            .map(|b| b.expand_for_hull(HULL_HALF_WIDTH, STAND_HEIGHT))
            .collect();
        let crouch_boxes = boxes
            .iter()
            .map(|b| b.expand_for_hull(HULL_HALF_WIDTH, CROUCH_HEIGHT))
            .collect();
        let mut spawns = spec.spawns;
        if spawns[0].is_empty() && spawns[1].is_empty() {
            let mid = Spawn {
                pos: V3::new(sx * 0.5, sy * 0.5, 0.0),
                yaw: 0.0,
            };
            spawns = [vec![mid], vec![mid]];
        } else if spawns[0].is_empty() {
            spawns[0] = spawns[1].clone();
        } else if spawns[1].is_empty() {
            spawns[1] = spawns[0].clone();
        }
        let waypoints = waypoint_grid(spec.size, &stand_boxes);
        Map {
            size: spec.size,
            boxes,
            spawns,
            waypoints,
            stand_boxes,
            crouch_boxes,
        }
    }

    /// Play area extent in x and y.
    pub fn size(&self) -> [f32; 2] {
        self.size
    }

    /// Every solid box: floor, outer walls, then the map's own.
    pub fn boxes(&self) -> &[Aabb] {
        &self.boxes
    }

    /// Spawn points of `team` (0 or 1).
    pub fn spawns(&self, team: u8) -> &[Spawn] {
        &self.spawns[usize::from(team & 1)]
    }

    /// Free floor points bots wander between.
    pub fn waypoints(&self) -> &[V3] {
        &self.waypoints
    }

    /// Whether a standing (or crouching) hull with its feet at `p` overlaps
    /// no box.
    pub fn hull_fits(&self, p: V3, crouching: bool) -> bool {
        let boxes = if crouching {
            &self.crouch_boxes
        } else {
            &self.stand_boxes
        };
        !boxes.iter().any(|b| b.contains(p))
    }
}

fn waypoint_grid(size: [f32; 2], stand_boxes: &[Aabb]) -> Vec<V3> {
    let mut out = Vec::new();
    let mut y = WAYPOINT_SPACING * 0.5;
    while y < size[1] {
        let mut x = WAYPOINT_SPACING * 0.5;
        while x < size[0] {
            let p = V3::new(x, y, 0.01);
            let c = WAYPOINT_CLEARANCE;
            let free = !stand_boxes.iter().any(|b| {
                p.x > b.min.x - c
                    && p.x < b.max.x + c
                    && p.y > b.min.y - c
                    && p.y < b.max.y + c
                    && p.z > b.min.z
                    && p.z < b.max.z
            });
            if free {
                out.push(p);
            }
            x += WAYPOINT_SPACING;
        }
        y += WAYPOINT_SPACING;
    }
    out
}

/// Box from a floor rectangle and a height range.
fn block(x0: f32, y0: f32, x1: f32, y1: f32, z0: f32, z1: f32) -> Aabb {
    Aabb::new([x0, y0, z0], [x1, y1, z1])
}

/// Eight spawns at each end of a 64 m map, facing the other end.
fn end_spawns() -> [Vec<Spawn>; 2] {
    let row = |y: f32, yaw: f32| -> Vec<Spawn> {
        let mut v: Vec<Spawn> = [27.0, 29.0, 31.0, 33.0, 35.0, 37.0]
            .iter()
            .map(|&x| Spawn {
                pos: V3::new(x, y, 0.0),
                yaw,
            })
            .collect();
        let y2 = if y < 32.0 { y + 3.0 } else { y - 3.0 };
        for x in [28.0, 36.0] {
            v.push(Spawn {
                pos: V3::new(x, y2, 0.0),
                yaw,
            });
        }
        v
    };
    let half_pi = std::f32::consts::FRAC_PI_2;
    [row(4.0, half_pi), row(60.0, -half_pi)]
}

fn dust() -> MapSpec {
    const H: f32 = 4.0;
    let boxes = vec![
        // Two long walls with doors, splitting the map into B / mid / A lanes.
        block(20.0, 10.0, 22.0, 28.0, 0.0, H),
        block(20.0, 34.0, 22.0, 54.0, 0.0, H),
        block(42.0, 10.0, 44.0, 24.0, 0.0, H),
        block(42.0, 30.0, 44.0, 54.0, 0.0, H),
        // Cross walls near each spawn.
        block(4.0, 14.0, 16.0, 16.0, 0.0, H),
        block(48.0, 14.0, 60.0, 16.0, 0.0, H),
        block(4.0, 48.0, 16.0, 50.0, 0.0, H),
        block(48.0, 48.0, 60.0, 50.0, 0.0, H),
        // Low cover walls in mid.
        block(27.0, 20.0, 37.0, 21.0, 0.0, 1.2),
        block(27.0, 43.0, 37.0, 44.0, 0.0, 1.2),
        // Mid block and pillars.
        block(30.0, 30.0, 34.0, 34.0, 0.0, 3.0),
        block(8.0, 28.0, 10.0, 30.0, 0.0, H),
        block(8.0, 36.0, 10.0, 38.0, 0.0, H),
        block(54.0, 28.0, 56.0, 30.0, 0.0, H),
        block(54.0, 36.0, 56.0, 38.0, 0.0, H),
        // Crates, two of them stacked.
        block(12.0, 22.0, 13.2, 23.2, 0.0, 1.2),
        block(13.2, 22.0, 14.4, 23.2, 0.0, 0.9),
        block(5.0, 40.0, 6.2, 41.2, 0.0, 1.2),
        block(50.0, 20.0, 51.2, 21.2, 0.0, 1.2),
        block(50.0, 21.2, 51.2, 22.4, 0.0, 1.2),
        block(50.0, 21.2, 51.2, 22.4, 1.2, 2.4),
        block(58.0, 42.0, 59.2, 43.2, 0.0, 1.2),
        block(24.0, 6.0, 25.2, 7.2, 0.0, 1.2),
        block(39.0, 57.0, 40.2, 58.2, 0.0, 1.2),
        block(26.0, 36.0, 27.5, 37.5, 0.0, 1.5),
        block(36.5, 26.5, 38.0, 28.0, 0.0, 1.5),
        block(16.5, 40.0, 17.7, 41.2, 0.0, 1.2),
        block(46.0, 40.0, 47.2, 41.2, 0.0, 1.2),
        block(30.0, 12.0, 31.2, 13.2, 0.0, 0.9),
        block(33.0, 50.0, 34.2, 51.2, 0.0, 0.9),
        block(8.0, 44.0, 9.2, 45.2, 0.0, 1.2),
        block(56.0, 18.0, 57.2, 19.2, 0.0, 1.2),
        // Stepped platforms in the north corners (0.4 m steps: walkable).
        block(58.0, 52.0, 64.0, 54.0, 0.0, 0.4),
        block(58.0, 54.0, 64.0, 56.0, 0.0, 0.8),
        block(58.0, 56.0, 64.0, 64.0, 0.0, 1.2),
        block(0.0, 52.0, 4.0, 54.0, 0.0, 0.4),
        block(0.0, 54.0, 4.0, 64.0, 0.0, 0.8),
        // Bridge over mid: walk under it.
        block(22.0, 26.5, 42.0, 28.0, 3.0, 3.4),
    ];
    MapSpec {
        size: [64.0, 64.0],
        boxes,
        spawns: end_spawns(),
    }
}

fn arena(obstacles: usize, seed: u64) -> MapSpec {
    let mut rng = Rng::new(seed ^ 0xA5E4_A000_0000_0001);
    let spawns = end_spawns();
    let mut boxes = Vec::with_capacity(obstacles);
    let mut attempts = 0;
    while boxes.len() < obstacles && attempts < obstacles * 50 {
        attempts += 1;
        let x = rng.range(2.0, 60.0);
        let y = rng.range(10.0, 54.0);
        let b = match rng.below(3) {
            0 => {
                let h = if rng.chance(0.5) { 0.9 } else { 1.2 };
                block(x, y, x + 1.2, y + 1.2, 0.0, h)
            }
            1 => block(x, y, x + 1.5, y + 1.5, 0.0, 4.0),
            _ => {
                let len = rng.range(4.0, 10.0);
                if rng.chance(0.5) {
                    block(x, y, (x + len).min(62.0), y + 0.8, 0.0, 3.0)
                } else {
                    block(x, y, x + 0.8, (y + len).min(54.0), 0.0, 3.0)
                }
            }
        };
        let near_spawn = spawns.iter().flatten().any(|s| {
            b.expand_for_hull(HULL_HALF_WIDTH + 1.0, STAND_HEIGHT)
                .contains(s.pos + V3::new(0.0, 0.0, 0.01))
        });
        if !near_spawn {
            boxes.push(b);
        }
    }
    MapSpec {
        size: [64.0, 64.0],
        boxes,
        spawns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_map_has_free_spawns_and_waypoints() {
        for kind in [MapKind::Dust, MapKind::Arena { obstacles: 36 }] {
            let map = Map::build(&kind, 42);
            assert!(map.boxes().len() >= 30, "{kind:?}: too few boxes");
            for team in 0..2 {
                for s in map.spawns(team) {
                    let p = s.pos + V3::new(0.0, 0.0, 0.01);
                    assert!(map.hull_fits(p, false), "{kind:?}: spawn {s:?} blocked");
                }
            }
            assert!(map.waypoints().len() > 100, "{kind:?}: few waypoints");
            for w in map.waypoints() {
                assert!(map.hull_fits(*w, false), "{kind:?}: waypoint {w:?} blocked");
            }
        }
    }

    #[test]
    fn arena_layout_follows_the_seed() {
        let a = Map::build(&MapKind::Arena { obstacles: 36 }, 1);
        let b = Map::build(&MapKind::Arena { obstacles: 36 }, 1);
        let c = Map::build(&MapKind::Arena { obstacles: 36 }, 2);
        assert_eq!(a.boxes(), b.boxes());
        assert_ne!(a.boxes(), c.boxes());
    }
}
