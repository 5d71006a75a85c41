//! Line of sight and hit traces: rays against map boxes and against the
//! three hitboxes (head, body, legs) of each player.
//!
//! Line of sight from an eye to a body tests up to `samples` points spread
//! over the body's silhouette (center, head, feet, shoulders, knees, then a
//! Halton pattern) and stops at the first one that is not blocked, the way
//! GoldSrc-era visibility checks trace to several points of a target. An
//! unseen target costs all `samples` rays, which is where a heavier cost
//! profile spends its time.

use super::geom::{ray_box, Aabb, V3};
use super::map::Map;
use super::physics::{Body, HULL_HALF_WIDTH, STAND_HEIGHT};

/// Damage of one bullet to the body; head and legs scale it.
pub const BODY_DAMAGE: u32 = 30;

/// Which hitbox a bullet struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HitZone {
    Head,
    Body,
    Legs,
}

impl HitZone {
    /// Damage of one bullet in this zone (a head shot kills).
    pub fn damage(self) -> u32 {
        match self {
            HitZone::Head => BODY_DAMAGE * 4,
            HitZone::Body => BODY_DAMAGE,
            HitZone::Legs => BODY_DAMAGE * 3 / 4,
        }
    }
}

/// The hitboxes of a body, squeezed vertically when it crouches.
pub fn hitboxes(b: &Body) -> [(Aabb, HitZone); 3] {
    let s = b.height() / STAND_HEIGHT;
    let p = b.pos;
    let zone = |hw: f32, z0: f32, z1: f32| Aabb {
        min: p + V3::new(-hw, -hw, z0 * s),
        max: p + V3::new(hw, hw, z1 * s),
    };
    [
        (zone(0.13, 1.45, 1.80), HitZone::Head),
        (zone(0.25, 0.85, 1.45), HitZone::Body),
        (zone(0.18, 0.0, 0.85), HitZone::Legs),
    ]
}

/// Fraction `t` in `[0, 1]` along `o + d * t` of the nearest map box, or 1.
pub fn nearest_map_hit(map: &Map, o: V3, d: V3, work: &mut u64) -> f32 {
    let inv = d.recip();
    let mut best = 1.0f32;
    for b in map.boxes() {
        if let Some(t) = ray_box(o, inv, b, best) {
            best = best.min(t);
        }
    }
    *work += map.boxes().len() as u64;
    best
}

/// Whether any map box cuts the segment `a`..`b` (stops at the first one).
pub fn segment_blocked(map: &Map, a: V3, b: V3, work: &mut u64) -> bool {
    let d = b - a;
    let inv = d.recip();
    for (i, bx) in map.boxes().iter().enumerate() {
        if ray_box(a, inv, bx, 1.0).is_some() {
            *work += i as u64 + 1;
            return true;
        }
    }
    *work += map.boxes().len() as u64;
    false
}

/// Silhouette points, as (sideways in hull half-widths, up in heights).
pub fn sample_pattern(n: usize) -> Vec<[f32; 2]> {
    const BASE: [[f32; 2]; 9] = [
        [0.0, 0.6],
        [0.0, 0.93],
        [0.0, 0.08],
        [0.9, 0.6],
        [-0.9, 0.6],
        [0.6, 0.85],
        [-0.6, 0.85],
        [0.5, 0.25],
        [-0.5, 0.25],
    ];
    (0..n.max(1))
        .map(|i| match BASE.get(i) {
            Some(p) => *p,
            None => {
                let k = (i - BASE.len() + 1) as u32;
                [halton(k, 2) * 2.0 - 1.0, 0.05 + 0.9 * halton(k, 3)]
            }
        })
        .collect()
}

fn halton(mut i: u32, base: u32) -> f32 {
    let mut f = 1.0f32;
    let mut r = 0.0f32;
    while i > 0 {
        f /= base as f32;
        r += f * (i % base) as f32;
        i /= base;
    }
    r
}

/// Whether any of the `pattern` points of `target` is in clear view of
/// `eye`, testing them in order and stopping at the first clear one.
pub fn can_see(map: &Map, eye: V3, target: &Body, pattern: &[[f32; 2]], work: &mut u64) -> bool {
    let to = target.pos - eye;
    let side = V3::new(-to.y, to.x, 0.0).normalized() * HULL_HALF_WIDTH;
    let h = target.height();
    pattern.iter().any(|s| {
        let point = target.pos + side * s[0] + V3::new(0.0, 0.0, s[1] * h);
        !segment_blocked(map, eye, point, work)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_pattern_stays_on_the_body_and_has_no_duplicates() {
        let pat = sample_pattern(40);
        assert_eq!(pat.len(), 40);
        for (i, p) in pat.iter().enumerate() {
            assert!((-1.0..=1.0).contains(&p[0]) && (0.0..=1.0).contains(&p[1]));
            assert!(!pat[..i].contains(p), "duplicate sample {p:?}");
        }
    }

    #[test]
    fn crouching_lowers_the_head_hitbox() {
        let mut b = Body::default();
        let stand = hitboxes(&b)[0].0;
        b.crouching = true;
        let crouch = hitboxes(&b)[0].0;
        assert!(crouch.max.z < stand.min.z);
    }
}
