//! Small 3-D vector, axis-aligned boxes, and the two intersection tests
//! everything else is built on: a ray (segment) against a box, and a point
//! swept against a box (used with Minkowski-expanded boxes for hull moves).
//!
//! Every test is counted by its caller as one *work unit*; these functions
//! stay free of counters so they can be inlined.

use std::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

/// A 3-D vector in meters (or m/s). `z` is up.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct V3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

impl V3 {
    pub const ZERO: V3 = V3::new(0.0, 0.0, 0.0);

    pub const fn new(x: f32, y: f32, z: f32) -> Self {
        V3 { x, y, z }
    }

    pub const fn from_array(a: [f32; 3]) -> Self {
        V3::new(a[0], a[1], a[2])
    }

    pub const fn to_array(self) -> [f32; 3] {
        [self.x, self.y, self.z]
    }

    pub fn dot(self, o: V3) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    pub fn len(self) -> f32 {
        self.dot(self).sqrt()
    }

    /// The same vector with `z` set to zero.
    pub fn flat(self) -> V3 {
        V3::new(self.x, self.y, 0.0)
    }

    /// Unit vector in the same direction, or zero for a (near-)zero vector.
    pub fn normalized(self) -> V3 {
        let l = self.len();
        if l > 1e-9 {
            self * (1.0 / l)
        } else {
            V3::ZERO
        }
    }

    pub fn get(self, axis: usize) -> f32 {
        match axis {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }

    pub fn set(&mut self, axis: usize, v: f32) {
        match axis {
            0 => self.x = v,
            1 => self.y = v,
            _ => self.z = v,
        }
    }

    /// Component-wise reciprocal, for slab tests. Zero components become ±inf.
    pub fn recip(self) -> V3 {
        V3::new(1.0 / self.x, 1.0 / self.y, 1.0 / self.z)
    }

    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
}

impl Add for V3 {
    type Output = V3;
    fn add(self, o: V3) -> V3 {
        V3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl Sub for V3 {
    type Output = V3;
    fn sub(self, o: V3) -> V3 {
        V3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Mul<f32> for V3 {
    type Output = V3;
    fn mul(self, s: f32) -> V3 {
        V3::new(self.x * s, self.y * s, self.z * s)
    }
}

impl Neg for V3 {
    type Output = V3;
    fn neg(self) -> V3 {
        V3::new(-self.x, -self.y, -self.z)
    }
}

impl AddAssign for V3 {
    fn add_assign(&mut self, o: V3) {
        *self = *self + o;
    }
}

impl SubAssign for V3 {
    fn sub_assign(&mut self, o: V3) {
        *self = *self - o;
    }
}

/// Unit view vector for `yaw` (0 = +x, counter-clockwise toward +y) and
/// `pitch` (positive looks up), both in radians.
pub fn view_dir(yaw: f32, pitch: f32) -> V3 {
    let (sy, cy) = yaw.sin_cos();
    let (sp, cp) = pitch.sin_cos();
    V3::new(cp * cy, cp * sy, sp)
}

/// An axis-aligned box, `min <= max` on every axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aabb {
    pub min: V3,
    pub max: V3,
}

impl Aabb {
    /// A box from two opposite corners (in any order).
    pub fn new(a: [f32; 3], b: [f32; 3]) -> Self {
        Aabb {
            min: V3::new(a[0].min(b[0]), a[1].min(b[1]), a[2].min(b[2])),
            max: V3::new(a[0].max(b[0]), a[1].max(b[1]), a[2].max(b[2])),
        }
    }

    /// Strictly inside (points on the surface are outside).
    pub fn contains(&self, p: V3) -> bool {
        p.x > self.min.x
            && p.x < self.max.x
            && p.y > self.min.y
            && p.y < self.max.y
            && p.z > self.min.z
            && p.z < self.max.z
    }

    /// Minkowski sum with a hull that spans `[-hw, hw]` horizontally and
    /// `[0, height]` vertically around its origin (the feet). Sweeping the
    /// hull's origin as a point against the result is the same as sweeping
    /// the hull against `self`.
    pub fn expand_for_hull(&self, hw: f32, height: f32) -> Aabb {
        Aabb {
            min: V3::new(self.min.x - hw, self.min.y - hw, self.min.z - height),
            max: V3::new(self.max.x + hw, self.max.y + hw, self.max.z),
        }
    }

    pub fn center(&self) -> V3 {
        (self.min + self.max) * 0.5
    }
}

/// Entry parameter `t` of the segment `o + d * t`, `t` in `[0, t_max]`, into
/// `b`, given `inv_d = d.recip()`. An origin inside the box gives `Some(0)`.
///
/// The slab test; `f32::min`/`max` ignore the NaN that `0 * inf` produces for
/// a ray lying exactly in a slab plane, which keeps that case well defined.
#[inline]
pub fn ray_box(o: V3, inv_d: V3, b: &Aabb, t_max: f32) -> Option<f32> {
    let tx1 = (b.min.x - o.x) * inv_d.x;
    let tx2 = (b.max.x - o.x) * inv_d.x;
    let mut t0 = tx1.min(tx2);
    let mut t1 = tx1.max(tx2);
    let ty1 = (b.min.y - o.y) * inv_d.y;
    let ty2 = (b.max.y - o.y) * inv_d.y;
    t0 = t0.max(ty1.min(ty2));
    t1 = t1.min(ty1.max(ty2));
    let tz1 = (b.min.z - o.z) * inv_d.z;
    let tz2 = (b.max.z - o.z) * inv_d.z;
    t0 = t0.max(tz1.min(tz2)).max(0.0);
    t1 = t1.min(tz1.max(tz2)).min(t_max);
    (t0 <= t1).then_some(t0)
}

/// Where a swept point first touches a box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepHit {
    /// Fraction of the move, `0.0..=1.0`.
    pub t: f32,
    /// Axis of the face that was hit (0 = x, 1 = y, 2 = z).
    pub axis: usize,
    /// Outward normal of that face along `axis`: `-1.0` or `1.0`.
    pub sign: f32,
    /// Coordinate of that face on `axis`.
    pub plane: f32,
}

/// First contact of the point `p` moving by `d` with box `b`: the moment it
/// comes within `skin` of a face it is moving toward.
///
/// Touching a face while moving parallel to it is not a hit, so a body
/// resting on a floor slides freely. A point already within `skin` of the
/// face it moves toward (or a rounding sliver past it) hits at `t = 0`, so
/// a body pushing against a wall has its velocity clipped every move and
/// float rounding never lets it tunnel. A point deeper inside is ignored, so
/// bodies that overlap (two players at one spawn) can move apart.
#[inline]
pub fn sweep_point_box(p: V3, d: V3, b: &Aabb, skin: f32) -> Option<SweepHit> {
    let mut t_enter = f32::NEG_INFINITY;
    let mut t_exit = f32::INFINITY;
    let mut hit = SweepHit {
        t: 0.0,
        axis: 0,
        sign: 0.0,
        plane: 0.0,
    };
    let mut speed_on_axis = 0.0f32;
    for axis in 0..3 {
        let pa = p.get(axis);
        let da = d.get(axis);
        let lo = b.min.get(axis);
        let hi = b.max.get(axis);
        if da.abs() < 1e-12 {
            if pa <= lo || pa >= hi {
                return None;
            }
            continue;
        }
        let inv = 1.0 / da;
        let (t0, t1, sign, plane) = if da > 0.0 {
            ((lo - skin - pa) * inv, (hi - pa) * inv, -1.0, lo)
        } else {
            ((hi + skin - pa) * inv, (lo - pa) * inv, 1.0, hi)
        };
        if t0 > t_enter {
            t_enter = t0;
            hit.axis = axis;
            hit.sign = sign;
            hit.plane = plane;
            speed_on_axis = da.abs();
        }
        t_exit = t_exit.min(t1);
    }
    if t_enter > 1.0 || t_enter >= t_exit || t_exit <= 0.0 {
        return None;
    }
    if t_enter < 0.0 {
        // Inside the skin zone or a sliver past the face: contact now.
        // Deeper: truly inside, let it out.
        if t_enter == f32::NEG_INFINITY || -t_enter * speed_on_axis > 2.0 * skin {
            return None;
        }
        t_enter = 0.0;
    }
    hit.t = t_enter;
    Some(hit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ray_hits_box_in_front_and_misses_box_behind() {
        let b = Aabb::new([2.0, -1.0, -1.0], [3.0, 1.0, 1.0]);
        let o = V3::ZERO;
        let d = V3::new(10.0, 0.0, 0.0);
        let t = ray_box(o, d.recip(), &b, 1.0).unwrap();
        assert!((t - 0.2).abs() < 1e-6);
        let back = V3::new(-10.0, 0.0, 0.0);
        assert_eq!(ray_box(o, back.recip(), &b, 1.0), None);
        // Segment too short to reach the box.
        let short = V3::new(1.0, 0.0, 0.0);
        assert_eq!(ray_box(o, short.recip(), &b, 1.0), None);
    }

    #[test]
    fn sweep_stops_at_face_and_slides_along_it() {
        let b = Aabb::new([5.0, -10.0, -10.0], [6.0, 10.0, 10.0]);
        let h = sweep_point_box(V3::ZERO, V3::new(10.0, 0.0, 0.0), &b, 0.001).unwrap();
        assert!((h.t - 0.4999).abs() < 1e-6, "{}", h.t);
        assert_eq!((h.axis, h.sign, h.plane), (0, -1.0, 5.0));
        // Resting against the face, moving along it: no hit.
        let p = V3::new(5.0, 0.0, 0.0);
        assert_eq!(sweep_point_box(p, V3::new(0.0, 3.0, 0.0), &b, 0.001), None);
        // Within the skin, moving toward the face: contact at once.
        let p = V3::new(4.999_5, 0.0, 0.0);
        let h = sweep_point_box(p, V3::new(1e-4, 0.0, 0.0), &b, 0.001).unwrap();
        assert_eq!(h.t, 0.0);
        // A rounding sliver inside the face still blocks.
        let p = V3::new(5.000_1, 0.0, 0.0);
        let h = sweep_point_box(p, V3::new(1.0, 0.0, 0.0), &b, 0.001).unwrap();
        assert_eq!(h.t, 0.0);
    }
}
