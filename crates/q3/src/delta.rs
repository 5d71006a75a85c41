//! The delta codecs of the engine's messages (msg.c): keyed [`UserCmd`]
//! deltas (`MSG_WriteDeltaUsercmdKey`), [`EntityState`] deltas against the
//! [`ENTITY_FIELDS`] table and [`PlayerState`] deltas against the
//! [`PLAYER_FIELDS`] table plus its four 16-element arrays. Floats travel
//! as their bit patterns; a float that is an integer in `-4096..4096` is
//! sent in [`FLOAT_INT_BITS`] bits. They read and write through the bit
//! stream of [`crate::msg`].

use crate::msg::{Reader, Writer};
use crate::Q3Error;

/// Bits of an integral float sent in short form.
pub const FLOAT_INT_BITS: u32 = 13;
const FLOAT_INT_BIAS: i32 = 1 << (FLOAT_INT_BITS - 1);
/// Bits of an entity number.
pub const GENTITYNUM_BITS: u32 = 10;
/// Entity numbers are below this; `MAX_GENTITIES - 1` ends an entity list.
pub const MAX_GENTITIES: i32 = 1 << GENTITYNUM_BITS;

/// The engine's `MSG_HashKey`: a hash of at most `maxlen` bytes of `s`
/// (`%` and bytes above 127 count as `.`).
pub fn hash_key(s: &[u8], maxlen: usize) -> i32 {
    let mut hash: i32 = 0;
    for (i, &c) in s.iter().take(maxlen).enumerate() {
        if c == 0 {
            break;
        }
        let c = if c & 0x80 != 0 || c == b'%' { b'.' } else { c };
        hash = hash.wrapping_add(i32::from(c).wrapping_mul(119 + i as i32));
    }
    hash ^ (hash >> 10) ^ (hash >> 20)
}

/// A client's movement command (`usercmd_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserCmd {
    /// The server time the command is for, in ms.
    pub server_time: i32,
    /// View angles as 16-bit shorts (`ANGLE2SHORT`, 0..65536).
    pub angles: [i32; 3],
    /// Button bits (16 bits are sent).
    pub buttons: i32,
    /// The selected weapon.
    pub weapon: u8,
    /// Forward/back, -127..=127.
    pub forwardmove: i8,
    /// Right/left, -127..=127.
    pub rightmove: i8,
    /// Up/down, -127..=127.
    pub upmove: i8,
}

fn write_delta_key(w: &mut Writer, key: i32, old: i32, new: i32, bits: u32) {
    if old == new {
        w.write_bits(0, 1);
    } else {
        w.write_bits(1, 1);
        w.write_bits(new ^ key, bits);
    }
}

fn read_delta_key(r: &mut Reader, key: i32, old: i32, bits: u32) -> Result<i32, Q3Error> {
    if r.read_bits(1)? == 1 {
        let mask = if bits == 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        Ok((r.read_bits(bits)? ^ (key as u32 & mask)) as i32)
    } else {
        Ok(old)
    }
}

/// Write `to` as a delta from `from` keyed with `key`
/// (`MSG_WriteDeltaUsercmdKey`).
pub fn write_delta_usercmd(w: &mut Writer, key: i32, from: &UserCmd, to: &UserCmd) {
    let dt = to.server_time.wrapping_sub(from.server_time);
    // The engine's test is a signed `< 256`: a negative step also takes
    // the 8-bit form (and arrives garbled); keep its wire behaviour.
    if dt < 256 {
        w.write_bits(1, 1);
        w.write_bits(dt, 8);
    } else {
        w.write_bits(0, 1);
        w.write_bits(to.server_time, 32);
    }
    if from.angles == to.angles
        && from.forwardmove == to.forwardmove
        && from.rightmove == to.rightmove
        && from.upmove == to.upmove
        && from.buttons == to.buttons
        && from.weapon == to.weapon
    {
        w.write_bits(0, 1);
        return;
    }
    let key = key ^ to.server_time;
    w.write_bits(1, 1);
    for i in 0..3 {
        write_delta_key(w, key, from.angles[i], to.angles[i], 16);
    }
    write_delta_key(w, key, from.forwardmove.into(), to.forwardmove.into(), 8);
    write_delta_key(w, key, from.rightmove.into(), to.rightmove.into(), 8);
    write_delta_key(w, key, from.upmove.into(), to.upmove.into(), 8);
    write_delta_key(w, key, from.buttons, to.buttons, 16);
    write_delta_key(w, key, from.weapon.into(), to.weapon.into(), 8);
}

/// Read a keyed usercmd delta from `from` (`MSG_ReadDeltaUsercmdKey`).
pub fn read_delta_usercmd(r: &mut Reader, key: i32, from: &UserCmd) -> Result<UserCmd, Q3Error> {
    let mut to = *from;
    to.server_time = if r.read_bits(1)? == 1 {
        from.server_time.wrapping_add(r.read_bits(8)? as i32)
    } else {
        r.read_long()?
    };
    if r.read_bits(1)? == 1 {
        let key = key ^ to.server_time;
        for i in 0..3 {
            to.angles[i] = read_delta_key(r, key, from.angles[i], 16)?;
        }
        let mv = |v: i32| {
            let c = v as u8 as i8;
            if c == -128 {
                -127
            } else {
                c
            }
        };
        to.forwardmove = mv(read_delta_key(r, key, from.forwardmove.into(), 8)?);
        to.rightmove = mv(read_delta_key(r, key, from.rightmove.into(), 8)?);
        to.upmove = mv(read_delta_key(r, key, from.upmove.into(), 8)?);
        to.buttons = read_delta_key(r, key, from.buttons, 16)?;
        to.weapon = read_delta_key(r, key, from.weapon.into(), 8)? as u8;
    }
    Ok(to)
}

/// One field of a delta-coded struct: its name in the engine and its bit
/// width (0: a float; negative: a signed integer of `-bits` bits).
#[derive(Debug, Clone, Copy)]
pub struct NetField {
    /// The engine's field name.
    pub name: &'static str,
    /// 0 for a float, else the bit width (negative: signed).
    pub bits: i32,
}

const fn f(name: &'static str, bits: i32) -> NetField {
    NetField { name, bits }
}

/// `entityStateFields`: the order and widths of an entity state's fields.
pub const ENTITY_FIELDS: [NetField; 51] = [
    f("pos.trTime", 32),
    f("pos.trBase[0]", 0),
    f("pos.trBase[1]", 0),
    f("pos.trDelta[0]", 0),
    f("pos.trDelta[1]", 0),
    f("pos.trBase[2]", 0),
    f("apos.trBase[1]", 0),
    f("pos.trDelta[2]", 0),
    f("apos.trBase[0]", 0),
    f("event", 10),
    f("angles2[1]", 0),
    f("eType", 8),
    f("torsoAnim", 8),
    f("eventParm", 8),
    f("legsAnim", 8),
    f("groundEntityNum", GENTITYNUM_BITS as i32),
    f("pos.trType", 8),
    f("eFlags", 19),
    f("otherEntityNum", GENTITYNUM_BITS as i32),
    f("weapon", 8),
    f("clientNum", 8),
    f("angles[1]", 0),
    f("pos.trDuration", 32),
    f("apos.trType", 8),
    f("origin[0]", 0),
    f("origin[1]", 0),
    f("origin[2]", 0),
    f("solid", 24),
    f("powerups", 16),
    f("modelindex", 8),
    f("otherEntityNum2", GENTITYNUM_BITS as i32),
    f("loopSound", 8),
    f("generic1", 8),
    f("origin2[2]", 0),
    f("origin2[0]", 0),
    f("origin2[1]", 0),
    f("modelindex2", 8),
    f("angles[0]", 0),
    f("time", 32),
    f("apos.trTime", 32),
    f("apos.trDuration", 32),
    f("apos.trBase[2]", 0),
    f("apos.trDelta[0]", 0),
    f("apos.trDelta[1]", 0),
    f("apos.trDelta[2]", 0),
    f("time2", 32),
    f("angles[2]", 0),
    f("angles2[0]", 0),
    f("angles2[2]", 0),
    f("constantLight", 32),
    f("frame", 16),
];

/// `playerStateFields`: the order and widths of a player state's fields.
pub const PLAYER_FIELDS: [NetField; 48] = [
    f("commandTime", 32),
    f("origin[0]", 0),
    f("origin[1]", 0),
    f("bobCycle", 8),
    f("velocity[0]", 0),
    f("velocity[1]", 0),
    f("viewangles[1]", 0),
    f("viewangles[0]", 0),
    f("weaponTime", -16),
    f("origin[2]", 0),
    f("velocity[2]", 0),
    f("legsTimer", 8),
    f("pm_time", -16),
    f("eventSequence", 16),
    f("torsoAnim", 8),
    f("movementDir", 4),
    f("events[0]", 8),
    f("legsAnim", 8),
    f("events[1]", 8),
    f("pm_flags", 16),
    f("groundEntityNum", GENTITYNUM_BITS as i32),
    f("weaponstate", 4),
    f("eFlags", 16),
    f("externalEvent", 10),
    f("gravity", 16),
    f("speed", 16),
    f("delta_angles[1]", 16),
    f("externalEventParm", 8),
    f("viewheight", -8),
    f("damageEvent", 8),
    f("damageYaw", 8),
    f("damagePitch", 8),
    f("damageCount", 8),
    f("generic1", 8),
    f("pm_type", 8),
    f("delta_angles[0]", 16),
    f("delta_angles[2]", 16),
    f("torsoTimer", 12),
    f("eventParms[0]", 8),
    f("eventParms[1]", 8),
    f("clientNum", 8),
    f("weapon", 5),
    f("viewangles[2]", 0),
    f("grapplePoint[0]", 0),
    f("grapplePoint[1]", 0),
    f("grapplePoint[2]", 0),
    f("jumppad_ent", GENTITYNUM_BITS as i32),
    f("loopSound", 16),
];

/// Index in [`ENTITY_FIELDS`] of `origin[0..3]`.
pub const ENTITY_ORIGIN: [usize; 3] = [24, 25, 26];
/// Index in [`PLAYER_FIELDS`] of `commandTime`.
pub const PS_COMMAND_TIME: usize = 0;
/// Index in [`PLAYER_FIELDS`] of `origin[0..3]`.
pub const PS_ORIGIN: [usize; 3] = [1, 2, 9];
/// Index in [`PLAYER_FIELDS`] of `clientNum`.
pub const PS_CLIENT_NUM: usize = 40;

/// An entity's state (`entityState_t`): its number and its fields in
/// [`ENTITY_FIELDS`] order (floats as bit patterns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityState {
    /// The entity number, `0..MAX_GENTITIES`.
    pub number: i32,
    /// The fields, in table order.
    pub fields: [i32; 51],
}

impl Default for EntityState {
    fn default() -> EntityState {
        EntityState {
            number: 0,
            fields: [0; 51],
        }
    }
}

impl EntityState {
    /// `origin` as floats.
    pub fn origin(&self) -> [f32; 3] {
        ENTITY_ORIGIN.map(|i| f32::from_bits(self.fields[i] as u32))
    }
}

/// A player's own state (`playerState_t`, the parts that are sent): the
/// fields in [`PLAYER_FIELDS`] order (floats as bit patterns) and the four
/// arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayerState {
    /// The fields, in table order.
    pub fields: [i32; 48],
    /// `stats[MAX_STATS]` (sent as shorts).
    pub stats: [i32; 16],
    /// `persistant[MAX_PERSISTANT]` (sent as shorts).
    pub persistant: [i32; 16],
    /// `ammo[MAX_WEAPONS]` (sent as shorts).
    pub ammo: [i32; 16],
    /// `powerups[MAX_POWERUPS]` (sent as longs).
    pub powerups: [i32; 16],
}

impl Default for PlayerState {
    fn default() -> PlayerState {
        PlayerState {
            fields: [0; 48],
            stats: [0; 16],
            persistant: [0; 16],
            ammo: [0; 16],
            powerups: [0; 16],
        }
    }
}

impl PlayerState {
    /// `commandTime`: the server time of the last usercmd the server ran.
    pub fn command_time(&self) -> i32 {
        self.fields[PS_COMMAND_TIME]
    }

    /// `origin` as floats.
    pub fn origin(&self) -> [f32; 3] {
        PS_ORIGIN.map(|i| f32::from_bits(self.fields[i] as u32))
    }

    /// `clientNum`.
    pub fn client_num(&self) -> i32 {
        self.fields[PS_CLIENT_NUM]
    }
}

fn write_float_field(w: &mut Writer, v: i32) {
    let full = f32::from_bits(v as u32);
    let trunc = full as i32;
    if trunc as f32 == full
        && trunc + FLOAT_INT_BIAS >= 0
        && trunc + FLOAT_INT_BIAS < (1 << FLOAT_INT_BITS)
    {
        w.write_bits(0, 1);
        w.write_bits(trunc + FLOAT_INT_BIAS, FLOAT_INT_BITS);
    } else {
        w.write_bits(1, 1);
        w.write_bits(v, 32);
    }
}

fn read_float_field(r: &mut Reader) -> Result<i32, Q3Error> {
    if r.read_bits(1)? == 0 {
        let t = r.read_bits(FLOAT_INT_BITS)? as i32 - FLOAT_INT_BIAS;
        Ok((t as f32).to_bits() as i32)
    } else {
        r.read_long()
    }
}

fn read_int_field(r: &mut Reader, bits: i32) -> Result<i32, Q3Error> {
    if bits < 0 {
        r.read_signed(bits.unsigned_abs())
    } else {
        Ok(r.read_bits(bits as u32)? as i32)
    }
}

/// A state delta-coded against a field table: [`EntityState`] against
/// [`ENTITY_FIELDS`], [`PlayerState`] against [`PLAYER_FIELDS`].
trait FieldTable {
    /// The order and widths of the fields.
    const FIELDS: &'static [NetField];
    /// Whether a changed field's value is preceded by a bit saying it is
    /// non-zero, a zero value being that bit alone (entities only).
    const ZERO_BIT: bool;
    /// The error for a field count beyond the table.
    const BAD_COUNT: &'static str;
    /// The field values, in table order.
    fn fields(&self) -> &[i32];
    /// The field values, in table order, to change.
    fn fields_mut(&mut self) -> &mut [i32];
}

impl FieldTable for EntityState {
    const FIELDS: &'static [NetField] = &ENTITY_FIELDS;
    const ZERO_BIT: bool = true;
    const BAD_COUNT: &'static str = "invalid entityState field count";
    fn fields(&self) -> &[i32] {
        &self.fields
    }
    fn fields_mut(&mut self) -> &mut [i32] {
        &mut self.fields
    }
}

impl FieldTable for PlayerState {
    const FIELDS: &'static [NetField] = &PLAYER_FIELDS;
    const ZERO_BIT: bool = false;
    const BAD_COUNT: &'static str = "invalid playerState field count";
    fn fields(&self) -> &[i32] {
        &self.fields
    }
    fn fields_mut(&mut self) -> &mut [i32] {
        &mut self.fields
    }
}

/// How many leading fields a delta from `from` to `to` sends: up to the
/// last one that changed (the engine's `lc`), 0 if none did.
fn changed_count<T: FieldTable>(from: &T, to: &T) -> usize {
    let (from, to) = (from.fields(), to.fields());
    (0..T::FIELDS.len())
        .rev()
        .find(|&i| from[i] != to[i])
        .map_or(0, |i| i + 1)
}

/// Writes the field count `lc` and then the first `lc` fields of `to`:
/// a bit saying whether each changed from `from`, and each changed value.
fn write_fields<T: FieldTable>(w: &mut Writer, from: &T, to: &T, lc: usize) {
    w.write_byte(lc as u8);
    for (i, field) in T::FIELDS.iter().enumerate().take(lc) {
        let v = to.fields()[i];
        if from.fields()[i] == v {
            w.write_bits(0, 1);
            continue;
        }
        w.write_bits(1, 1);
        if T::ZERO_BIT {
            let zero = if field.bits == 0 {
                f32::from_bits(v as u32) == 0.0
            } else {
                v == 0
            };
            w.write_bits(i32::from(!zero), 1);
            if zero {
                continue;
            }
        }
        if field.bits == 0 {
            write_float_field(w, v);
        } else {
            w.write_bits(v, field.bits.unsigned_abs());
        }
    }
}

/// Reads what [`write_fields`] wrote into `to` (which holds the old values).
fn read_fields<T: FieldTable>(r: &mut Reader, to: &mut T) -> Result<(), Q3Error> {
    let lc = usize::from(r.read_byte()?);
    if lc > T::FIELDS.len() {
        return Err(Q3Error::Malformed(T::BAD_COUNT));
    }
    for (i, field) in T::FIELDS.iter().enumerate().take(lc) {
        if r.read_bits(1)? == 0 {
            continue;
        }
        to.fields_mut()[i] = if T::ZERO_BIT && r.read_bits(1)? == 0 {
            0
        } else if field.bits == 0 {
            read_float_field(r)?
        } else {
            read_int_field(r, field.bits)?
        };
    }
    Ok(())
}

/// Write entity `to` as a delta from `from` (`MSG_WriteDeltaEntity`),
/// including its number. `to == None` removes `from`. Nothing is written
/// for an unchanged entity unless `force`.
///
/// # Panics
/// If `to.number` is outside `0..MAX_GENTITIES` (the engine's fatal error).
pub fn write_delta_entity(
    w: &mut Writer,
    from: Option<&EntityState>,
    to: Option<&EntityState>,
    force: bool,
) {
    let Some(to) = to else {
        if let Some(from) = from {
            w.write_bits(from.number, GENTITYNUM_BITS);
            w.write_bits(1, 1);
        }
        return;
    };
    assert!((0..MAX_GENTITIES).contains(&to.number), "bad entity number");
    let zero = EntityState::default();
    let from = from.unwrap_or(&zero);
    let lc = changed_count(from, to);
    if lc == 0 {
        if force {
            w.write_bits(to.number, GENTITYNUM_BITS);
            w.write_bits(0, 1);
            w.write_bits(0, 1);
        }
        return;
    }
    w.write_bits(to.number, GENTITYNUM_BITS);
    w.write_bits(0, 1);
    w.write_bits(1, 1);
    write_fields(w, from, to, lc);
}

/// Read an entity delta from `from` for entity `number` (already read),
/// like `MSG_ReadDeltaEntity`. `None` means the entity was removed.
pub fn read_delta_entity(
    r: &mut Reader,
    from: &EntityState,
    number: i32,
) -> Result<Option<EntityState>, Q3Error> {
    if !(0..MAX_GENTITIES).contains(&number) {
        return Err(Q3Error::Malformed("bad delta entity number"));
    }
    if r.read_bits(1)? == 1 {
        return Ok(None);
    }
    let mut to = *from;
    to.number = number;
    if r.read_bits(1)? == 0 {
        return Ok(Some(to));
    }
    read_fields(r, &mut to)?;
    Ok(Some(to))
}

/// Write player state `to` as a delta from `from` (zeros if `None`), like
/// `MSG_WriteDeltaPlayerstate`.
pub fn write_delta_playerstate(w: &mut Writer, from: Option<&PlayerState>, to: &PlayerState) {
    let zero = PlayerState::default();
    let from = from.unwrap_or(&zero);
    write_fields(w, from, to, changed_count(from, to));
    let mask = |a: &[i32; 16], b: &[i32; 16]| {
        (0..16)
            .filter(|&i| a[i] != b[i])
            .fold(0i32, |m, i| m | 1 << i)
    };
    let stats = mask(&from.stats, &to.stats);
    let pers = mask(&from.persistant, &to.persistant);
    let ammo = mask(&from.ammo, &to.ammo);
    let pow = mask(&from.powerups, &to.powerups);
    if stats == 0 && pers == 0 && ammo == 0 && pow == 0 {
        w.write_bits(0, 1);
        return;
    }
    w.write_bits(1, 1);
    for (bits, arr, long) in [
        (stats, &to.stats, false),
        (pers, &to.persistant, false),
        (ammo, &to.ammo, false),
        (pow, &to.powerups, true),
    ] {
        if bits == 0 {
            w.write_bits(0, 1);
            continue;
        }
        w.write_bits(1, 1);
        w.write_bits(bits, 16);
        for (i, &v) in arr.iter().enumerate() {
            if bits & (1 << i) != 0 {
                if long {
                    w.write_long(v);
                } else {
                    w.write_short(v);
                }
            }
        }
    }
}

/// Read a player state delta from `from` (zeros if `None`), like
/// `MSG_ReadDeltaPlayerstate`.
pub fn read_delta_playerstate(
    r: &mut Reader,
    from: Option<&PlayerState>,
) -> Result<PlayerState, Q3Error> {
    let mut to = from.copied().unwrap_or_default();
    read_fields(r, &mut to)?;
    if r.read_bits(1)? == 1 {
        for k in 0..4 {
            if r.read_bits(1)? == 0 {
                continue;
            }
            let bits = r.read_bits(16)?;
            for i in 0..16 {
                if bits & (1 << i) == 0 {
                    continue;
                }
                match k {
                    0 => to.stats[i] = r.read_short()?,
                    1 => to.persistant[i] = r.read_short()?,
                    2 => to.ammo[i] = r.read_short()?,
                    _ => to.powerups[i] = r.read_long()?,
                }
            }
        }
    }
    Ok(to)
}

#[cfg(test)]
mod tests;
