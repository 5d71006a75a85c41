//! Entity lists delta-encoded against the last snapshot a player acknowledged.
//!
//! A record is `id (u16) | mask (u8) | changed fields`. Fields: position
//! (3 x f32), velocity (3 x f32), angles (2 x f32), health (u8), flags (u8).
//! An entity in the current list but not in the baseline gets every field; an
//! entity in the baseline but not in the current list gets [`REMOVED`];
//! an unchanged entity gets no record at all. Lists are sorted by id.

use crate::codec::{DecodeError, Reader, Writer};
use crate::types::EntityState;

pub const POS: u8 = 1 << 0;
pub const VEL: u8 = 1 << 1;
pub const ANGLES: u8 = 1 << 2;
pub const HEALTH: u8 = 1 << 3;
pub const FLAGS: u8 = 1 << 4;
pub const ALL: u8 = POS | VEL | ANGLES | HEALTH | FLAGS;
pub const REMOVED: u8 = 1 << 7;

fn changed(a: &EntityState, b: &EntityState) -> u8 {
    let mut m = 0;
    if a.pos != b.pos {
        m |= POS;
    }
    if a.vel != b.vel {
        m |= VEL;
    }
    if a.yaw != b.yaw || a.pitch != b.pitch {
        m |= ANGLES;
    }
    if a.health != b.health {
        m |= HEALTH;
    }
    if a.flags != b.flags {
        m |= FLAGS;
    }
    m
}

fn write_record(w: &mut Writer<'_>, e: &EntityState, mask: u8) {
    w.u16(e.id);
    w.u8(mask);
    if mask & POS != 0 {
        e.pos.iter().for_each(|&v| w.f32(v));
    }
    if mask & VEL != 0 {
        e.vel.iter().for_each(|&v| w.f32(v));
    }
    if mask & ANGLES != 0 {
        w.f32(e.yaw);
        w.f32(e.pitch);
    }
    if mask & HEALTH != 0 {
        w.u8(e.health);
    }
    if mask & FLAGS != 0 {
        w.u8(e.flags);
    }
}

/// Appends the records that turn `baseline` into `current` (both sorted by
/// id) and returns how many were written. An empty baseline gives full state.
pub fn encode(baseline: &[EntityState], current: &[EntityState], out: &mut Vec<u8>) -> u16 {
    debug_assert!(current.windows(2).all(|w| w[0].id < w[1].id));
    debug_assert!(baseline.windows(2).all(|w| w[0].id < w[1].id));
    let mut w = Writer { out };
    let mut count = 0u16;
    let (mut i, mut j) = (0, 0);
    while i < baseline.len() || j < current.len() {
        let b = baseline.get(i);
        let c = current.get(j);
        match (b, c) {
            (Some(b), Some(c)) if b.id == c.id => {
                let m = changed(b, c);
                if m != 0 {
                    write_record(&mut w, c, m);
                    count += 1;
                }
                i += 1;
                j += 1;
            }
            (Some(b), Some(c)) if b.id < c.id => {
                write_record(&mut w, b, REMOVED);
                count += 1;
                i += 1;
            }
            (Some(b), None) => {
                write_record(&mut w, b, REMOVED);
                count += 1;
                i += 1;
            }
            (_, Some(c)) => {
                write_record(&mut w, c, ALL);
                count += 1;
                j += 1;
            }
            (None, None) => unreachable!(),
        }
    }
    count
}

/// Rebuilds the current list into `out` from `baseline` and `count` records.
/// Fails (never panics) on truncated records, unknown mask bits, non-finite
/// floats, or a partial record for an entity the baseline lacks.
pub fn apply(
    baseline: &[EntityState],
    records: &[u8],
    count: u16,
    out: &mut Vec<EntityState>,
) -> Result<(), DecodeError> {
    out.clear();
    out.extend_from_slice(baseline);
    let mut r = Reader::new(records);
    for _ in 0..count {
        let id = r.u16()?;
        let mask = r.u8()?;
        if mask & !(ALL | REMOVED) != 0 {
            return Err(DecodeError::Invalid("delta mask"));
        }
        let idx = out.binary_search_by_key(&id, |e| e.id);
        if mask & REMOVED != 0 {
            if let Ok(k) = idx {
                out.remove(k);
            }
            continue;
        }
        let k = match idx {
            Ok(k) => k,
            Err(k) if mask == ALL => {
                out.insert(
                    k,
                    EntityState {
                        id,
                        ..Default::default()
                    },
                );
                k
            }
            Err(_) => return Err(DecodeError::Invalid("delta against unknown entity")),
        };
        let e = &mut out[k];
        if mask & POS != 0 {
            e.pos = [r.f32()?, r.f32()?, r.f32()?];
        }
        if mask & VEL != 0 {
            e.vel = [r.f32()?, r.f32()?, r.f32()?];
        }
        if mask & ANGLES != 0 {
            e.yaw = r.f32()?;
            e.pitch = r.f32()?;
        }
        if mask & HEALTH != 0 {
            e.health = r.u8()?;
        }
        if mask & FLAGS != 0 {
            e.flags = r.u8()?;
        }
    }
    Ok(())
}
