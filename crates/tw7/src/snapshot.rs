//! tw7 (0.7 protocol) snapshots (src/engine/shared/snapshot.cpp; libtw2
//! doc/snapshot.md): the items, the delta codec, the checksum, part
//! reassembly, and a bounded history of baselines.
//!
//! A snapshot is a set of items, each a key (`type << 16 | id`) and an
//! array of ints, kept sorted by key. The server sends each snapshot as a
//! delta against the last one the client acknowledged (the `ack tick` of
//! its INPUT messages) or against the empty snapshot (delta tick -1):
//!
//! ```text
//! delta: num_deleted, num_updated, 0 (unused), deleted keys...,
//!        then per updated item: type, id, [size in ints if the type has no
//!        fixed size], ints (added to the base item's, wrapping, if the
//!        base had the key; else the new item's ints)
//! ```
//!
//! The delta's ints are packed with the variable-length int codec and
//! split into parts of at most 900 bytes. The checksum ("crc") the server
//! sends is the wrapping sum of every int of every item of the rebuilt
//! snapshot (`CSnapshot::Crc`); SNAPEMPTY carries none.
//!
//! Fixed item sizes: the 0.7.5 client and server register every object
//! type of datasrc/network.py with `SnapSetStaticsize`, so those types'
//! deltas carry no size; [`static_size`] lists them. Any other type must
//! carry its size.
//!
//! Bounds (the engine's): at most 64 parts, 1024 items, 64 KiB of
//! snapshot; an item's key type must fit 16 bits.
//!
//! What it does not do: build deltas (that is the server's job; tests
//! build them by hand), or allocate in steady state: [`SnapshotDecoder`]
//! reuses the buffers of snapshots that leave the history.
//!
//! Order: [`SnapshotDecoder::new`], then for every SNAP/SNAPSINGLE/
//! SNAPEMPTY part [`SnapshotDecoder::add_part`]; when a snapshot is
//! complete it is decoded, checked and stored, and its tick returned;
//! [`SnapshotDecoder::get`] reads it.

use std::collections::VecDeque;

use crate::msg::{SnapPart, MAX_SNAPSHOT_PACKSIZE, MAX_SNAPSHOT_PARTS};
use crate::packer::unpack_ints;
use crate::Tw7Error;

/// `CSnapshotBuilder::MAX_ITEMS`.
pub const MAX_ITEMS: usize = 1024;
/// `CSnapshot::MAX_SIZE` in bytes.
pub const MAX_SIZE: usize = MAX_SNAPSHOT_PARTS * 1024;
/// Ints of a whole snapshot at most.
pub const MAX_INTS: usize = MAX_SIZE / 4;
/// Baselines kept (about 1.3 s at 25 snapshots a second; the server deltas
/// against the last tick we acknowledged, normally the newest).
pub const HISTORY: usize = 32;

/// Object type ids (`NETOBJTYPE_*`, datasrc/network.py order from 1).
pub mod obj {
    /// `CNetObj_PlayerInput`.
    pub const PLAYER_INPUT: u16 = 1;
    /// `CNetObj_Projectile`.
    pub const PROJECTILE: u16 = 2;
    /// `CNetObj_Laser`.
    pub const LASER: u16 = 3;
    /// `CNetObj_Pickup`.
    pub const PICKUP: u16 = 4;
    /// `CNetObj_Flag`.
    pub const FLAG: u16 = 5;
    /// `CNetObj_GameData`.
    pub const GAME_DATA: u16 = 6;
    /// `CNetObj_GameDataTeam`.
    pub const GAME_DATA_TEAM: u16 = 7;
    /// `CNetObj_GameDataFlag`.
    pub const GAME_DATA_FLAG: u16 = 8;
    /// `CNetObj_CharacterCore`.
    pub const CHARACTER_CORE: u16 = 9;
    /// `CNetObj_Character` (id: the client id).
    pub const CHARACTER: u16 = 10;
    /// `CNetObj_PlayerInfo` (id: the client id).
    pub const PLAYER_INFO: u16 = 11;
    /// `CNetObj_SpectatorInfo`.
    pub const SPECTATOR_INFO: u16 = 12;
}

/// Ints of each object type's items (`sizeof(CNetObj_*) / 4`), types 1 to
/// 24 of datasrc/network.py: PlayerInput 10, Projectile 6, Laser 5, Pickup
/// 3, Flag 3, GameData 3, GameDataTeam 2, GameDataFlag 4, CharacterCore
/// 15, Character 22, PlayerInfo 3, SpectatorInfo 4, De_ClientInfo 58,
/// De_GameInfo 5, De_TuneParams 32, events Common 2, Explosion 2, Spawn 2,
/// HammerHit 2, Death 3, SoundWorld 3, Damage 7, PlayerInfoRace 1,
/// GameDataRace 3.
const STATIC_SIZES: [u8; 25] = [
    0, 10, 6, 5, 3, 3, 3, 2, 4, 15, 22, 3, 4, 58, 5, 32, 2, 2, 2, 2, 3, 3, 7, 1, 3,
];

/// The fixed size in ints of items of `type_id`, if it has one.
pub fn static_size(type_id: u16) -> Option<usize> {
    match STATIC_SIZES.get(usize::from(type_id)) {
        Some(&n) if n > 0 => Some(usize::from(n)),
        _ => None,
    }
}

/// An item key: `type << 16 | id`.
pub fn key(type_id: u16, id: u16) -> u32 {
    (u32::from(type_id) << 16) | u32::from(id)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ItemRef {
    key: u32,
    start: u32,
    len: u32,
}

/// One snapshot: items sorted by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    tick: i32,
    items: Vec<ItemRef>,
    data: Vec<i32>,
}

impl Snapshot {
    /// The game tick.
    pub fn tick(&self) -> i32 {
        self.tick
    }

    /// Items held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// No items?
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The wrapping sum of all item ints (`CSnapshot::Crc`).
    pub fn crc(&self) -> i32 {
        self.data.iter().fold(0i32, |a, &v| a.wrapping_add(v))
    }

    /// The ints of item (`type_id`, `id`).
    pub fn item(&self, type_id: u16, id: u16) -> Option<&[i32]> {
        let k = key(type_id, id);
        let i = self.items.binary_search_by_key(&k, |r| r.key).ok()?;
        Some(self.slice(self.items[i]))
    }

    /// All items: (type, id, ints), by key.
    pub fn items(&self) -> impl Iterator<Item = (u16, u16, &[i32])> + '_ {
        self.items
            .iter()
            .map(move |r| ((r.key >> 16) as u16, r.key as u16, self.slice(*r)))
    }

    fn slice(&self, r: ItemRef) -> &[i32] {
        &self.data[r.start as usize..(r.start + r.len) as usize]
    }

    fn clear(&mut self) {
        self.tick = 0;
        self.items.clear();
        self.data.clear();
    }

    fn push(&mut self, key: u32, ints: &[i32]) -> Result<(), Tw7Error> {
        if self.items.len() >= MAX_ITEMS {
            return Err(Tw7Error::TooLarge {
                what: "snapshot items",
                size: self.items.len() + 1,
                limit: MAX_ITEMS,
            });
        }
        // Each item also costs its key and offset in the engine's layout.
        let ints_after = self.data.len() + ints.len() + 3 * (self.items.len() + 1);
        if ints_after > MAX_INTS {
            return Err(Tw7Error::TooLarge {
                what: "snapshot",
                size: ints_after * 4,
                limit: MAX_SIZE,
            });
        }
        self.items.push(ItemRef {
            key,
            start: self.data.len() as u32,
            len: ints.len() as u32,
        });
        self.data.extend_from_slice(ints);
        Ok(())
    }

    /// Build a snapshot from items (tests and tools; any order).
    pub fn from_items(tick: i32, items: &[(u16, u16, &[i32])]) -> Result<Snapshot, Tw7Error> {
        let mut s = Snapshot {
            tick,
            ..Default::default()
        };
        for (t, id, ints) in items {
            s.push(key(*t, *id), ints)?;
        }
        s.items.sort_by_key(|r| r.key);
        if s.items.windows(2).any(|w| w[0].key == w[1].key) {
            return Err(Tw7Error::Malformed("snapshot with a duplicate item"));
        }
        Ok(s)
    }
}

/// Rebuild `out` from `base` and the unpacked `delta` ints
/// (`CSnapshotDelta::UnpackDelta`). `deleted` is scratch space.
pub fn apply_delta(
    base: &Snapshot,
    delta: &[i32],
    out: &mut Snapshot,
    deleted: &mut Vec<u32>,
) -> Result<(), Tw7Error> {
    out.clear();
    let [num_deleted, num_updated, _temp] = match delta.get(..3) {
        Some(&[a, b, c]) => [a, b, c],
        _ => return Err(Tw7Error::Truncated("snapshot delta header")),
    };
    let mut rest = &delta[3..];
    let num_deleted =
        usize::try_from(num_deleted).map_err(|_| Tw7Error::Malformed("deleted item count"))?;
    if num_deleted > rest.len() {
        return Err(Tw7Error::Truncated("deleted item keys"));
    }
    deleted.clear();
    deleted.extend(rest[..num_deleted].iter().map(|&k| k as u32));
    deleted.sort_unstable();
    rest = &rest[num_deleted..];
    for r in &base.items {
        if deleted.binary_search(&r.key).is_err() {
            out.push(r.key, base.slice(*r))?;
        }
    }
    let kept = out.items.len();
    let num_updated =
        usize::try_from(num_updated).map_err(|_| Tw7Error::Malformed("updated item count"))?;
    for _ in 0..num_updated {
        let (&t, &id) = match rest {
            [t, id, ..] => (t, id),
            _ => return Err(Tw7Error::Truncated("item delta header")),
        };
        rest = &rest[2..];
        let type_id =
            u16::try_from(t).map_err(|_| Tw7Error::Malformed("item type outside 0..=65535"))?;
        let size = match static_size(type_id) {
            Some(n) => n,
            None => {
                let (&n, r) = rest
                    .split_first()
                    .ok_or(Tw7Error::Truncated("item delta size"))?;
                rest = r;
                usize::try_from(n).map_err(|_| Tw7Error::Malformed("negative item size"))?
            }
        };
        if size > rest.len() {
            return Err(Tw7Error::Truncated("item delta data"));
        }
        let (ints, r) = rest.split_at(size);
        rest = r;
        let k = key(type_id, id as u16);
        match out.items[..kept].binary_search_by_key(&k, |r| r.key) {
            Ok(i) => {
                let it = out.items[i];
                if it.len as usize != size {
                    return Err(Tw7Error::Malformed("item delta size differs from its base"));
                }
                let dst = &mut out.data[it.start as usize..(it.start + it.len) as usize];
                for (d, v) in dst.iter_mut().zip(ints) {
                    *d = d.wrapping_add(*v);
                }
            }
            Err(_) => out.push(k, ints)?,
        }
    }
    if out.items.len() > kept {
        out.items.sort_by_key(|r| r.key);
        if out.items.windows(2).any(|w| w[0].key == w[1].key) {
            return Err(Tw7Error::Malformed("snapshot delta adds an item twice"));
        }
    }
    Ok(())
}

/// The local player's `CNetObj_Character` (type 10, id = client id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Character {
    /// The tick the core below was taken at (dead reckoning), 0 if current.
    pub tick: i32,
    /// Position.
    pub x: i32,
    /// Position.
    pub y: i32,
    /// Velocity (×256).
    pub vel_x: i32,
    /// Velocity (×256).
    pub vel_y: i32,
    /// Aim angle ×256 (from the input's target).
    pub angle: i32,
    /// The direction of the input the server last ran (always current).
    pub direction: i32,
    /// Jump state.
    pub jumped: i32,
    /// Hooked player.
    pub hooked_player: i32,
    /// Hook state.
    pub hook_state: i32,
    /// Hook tick.
    pub hook_tick: i32,
    /// Health (own character only).
    pub health: i32,
    /// Armor (own character only).
    pub armor: i32,
    /// Active weapon.
    pub weapon: i32,
    /// Tick of the last attack.
    pub attack_tick: i32,
}

impl Character {
    /// Read the 22 ints of a Character item.
    pub fn from_ints(v: &[i32]) -> Option<Character> {
        if v.len() != 22 {
            return None;
        }
        Some(Character {
            tick: v[0],
            x: v[1],
            y: v[2],
            vel_x: v[3],
            vel_y: v[4],
            angle: v[5],
            direction: v[6],
            jumped: v[7],
            hooked_player: v[8],
            hook_state: v[9],
            hook_tick: v[10],
            health: v[15],
            armor: v[16],
            weapon: v[18],
            attack_tick: v[20],
        })
    }
}

/// Reassembles snapshot parts, decodes deltas against a bounded history,
/// verifies checksums.
pub struct SnapshotDecoder {
    history: VecDeque<Snapshot>,
    /// Snapshots out of the history, kept for their buffers.
    spare: Vec<Snapshot>,
    empty: Snapshot,
    recv_tick: i32,
    parts_mask: u64,
    num_parts: i32,
    last_part_size: usize,
    incoming: Vec<u8>,
    ints: Vec<i32>,
    deleted: Vec<u32>,
    crc_errors: u32,
}

impl Default for SnapshotDecoder {
    fn default() -> Self {
        SnapshotDecoder::new()
    }
}

impl SnapshotDecoder {
    /// An empty decoder.
    pub fn new() -> SnapshotDecoder {
        SnapshotDecoder {
            history: VecDeque::with_capacity(HISTORY),
            spare: Vec::new(),
            empty: Snapshot::default(),
            recv_tick: i32::MIN,
            parts_mask: 0,
            num_parts: 0,
            last_part_size: 0,
            incoming: Vec::new(),
            ints: Vec::new(),
            deleted: Vec::new(),
            crc_errors: 0,
        }
    }

    /// The stored snapshot of `tick`.
    pub fn get(&self, tick: i32) -> Option<&Snapshot> {
        self.history.iter().rev().find(|s| s.tick == tick)
    }

    /// The newest stored snapshot.
    pub fn latest(&self) -> Option<&Snapshot> {
        self.history.back()
    }

    /// Snapshots whose checksum did not match so far.
    pub fn crc_errors(&self) -> u32 {
        self.crc_errors
    }

    /// Add one part. `Ok(Some(tick))` when it completed a snapshot that
    /// decoded and matched its checksum (now [`SnapshotDecoder::latest`]);
    /// `Ok(None)` while parts are missing or for a part older than the
    /// snapshot being assembled; `Err` if the completed snapshot could not
    /// be rebuilt (its base is gone: the caller should acknowledge tick -1
    /// so the server sends a full one) or failed its checksum.
    pub fn add_part(&mut self, p: &SnapPart<'_>) -> Result<Option<i32>, Tw7Error> {
        if !(1..=MAX_SNAPSHOT_PARTS as i32).contains(&p.num_parts)
            || !(0..p.num_parts).contains(&p.part)
            || p.data.len() > MAX_SNAPSHOT_PACKSIZE
        {
            return Err(Tw7Error::Malformed("snapshot part index or size"));
        }
        if p.tick < self.recv_tick {
            return Ok(None);
        }
        if p.tick != self.recv_tick || p.num_parts != self.num_parts {
            self.recv_tick = p.tick;
            self.num_parts = p.num_parts;
            self.parts_mask = 0;
        }
        // Checked above: 0 <= part < num_parts <= 64, size <= 900.
        let part = p.part as usize;
        let at = part * MAX_SNAPSHOT_PACKSIZE;
        if self.incoming.len() < at + p.data.len() {
            // Grown on demand: most snapshots are one part, and a player
            // keeps this buffer for its lifetime.
            self.incoming.resize(at + p.data.len(), 0);
        }
        self.incoming[at..at + p.data.len()].copy_from_slice(p.data);
        self.parts_mask |= 1u64 << part;
        if part + 1 == p.num_parts as usize {
            self.last_part_size = p.data.len();
        }
        let all = if p.num_parts == 64 {
            u64::MAX
        } else {
            (1u64 << p.num_parts) - 1
        };
        if self.parts_mask != all {
            return Ok(None);
        }
        self.parts_mask = 0;
        let size = (p.num_parts as usize - 1) * MAX_SNAPSHOT_PACKSIZE + self.last_part_size;
        if p.empty || size == 0 {
            self.ints.clear();
            self.ints.extend_from_slice(&[0, 0, 0]);
        } else {
            unpack_ints(&self.incoming[..size], &mut self.ints, MAX_INTS)?;
        }
        let mut out = self.spare.pop().unwrap_or_default();
        let base = if p.delta_tick < 0 {
            &self.empty
        } else {
            match self.history.iter().rev().find(|s| s.tick == p.delta_tick) {
                Some(b) => b,
                None => {
                    self.spare.push(out);
                    return Err(Tw7Error::MissingBaseline(p.delta_tick));
                }
            }
        };
        if let Err(e) = apply_delta(base, &self.ints, &mut out, &mut self.deleted) {
            self.spare.push(out);
            return Err(e);
        }
        out.tick = p.tick;
        if !p.empty {
            let got = out.crc();
            if got != p.crc {
                self.crc_errors += 1;
                self.spare.push(out);
                return Err(Tw7Error::Crc {
                    tick: p.tick,
                    expected: p.crc,
                    got,
                });
            }
        }
        // Older than the base the server just used will not be used again.
        while self
            .history
            .front()
            .is_some_and(|s| p.delta_tick >= 0 && s.tick < p.delta_tick)
            || self.history.len() >= HISTORY
        {
            if let Some(old) = self.history.pop_front() {
                self.spare.push(old);
            }
        }
        self.history.push_back(out);
        Ok(Some(p.tick))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packer::pack_int;
    use proptest::prelude::*;

    fn pack(ints: &[i32]) -> Vec<u8> {
        let mut b = Vec::new();
        for &v in ints {
            pack_int(&mut b, v);
        }
        b
    }

    fn part(tick: i32, delta_tick: i32, crc: i32, data: &[u8]) -> SnapPart<'_> {
        SnapPart {
            tick,
            delta_tick,
            num_parts: 1,
            part: 0,
            crc,
            data,
            empty: false,
        }
    }

    /// A hand-built two-step example: a full snapshot from the empty one,
    /// then a delta that deletes, updates and adds.
    #[test]
    fn delta_and_crc_by_hand() {
        let mut d = SnapshotDecoder::new();
        // Tick 10 from nothing: PlayerInfo(11) id 0 = [1, 2, 3] (fixed
        // size, no size field) and an unknown type 100 id 7 = [5, -6]
        // (size field 2).
        let full = pack(&[0, 2, 0, 11, 0, 1, 2, 3, 100, 7, 2, 5, -6]);
        let crc = 1 + 2 + 3 + 5 - 6;
        assert_eq!(d.add_part(&part(10, -1, crc, &full)).unwrap(), Some(10));
        let s = d.get(10).unwrap();
        assert_eq!(s.item(11, 0), Some(&[1, 2, 3][..]));
        assert_eq!(s.item(100, 7), Some(&[5, -6][..]));
        assert_eq!(s.crc(), crc);
        // Tick 12 against 10: delete (100, 7); PlayerInfo += [0, 10, -3];
        // add Flag(5) id 1 = [7, 8, 9].
        let delta = pack(&[1, 2, 0, (100 << 16) | 7, 11, 0, 0, 10, -3, 5, 1, 7, 8, 9]);
        let crc2 = 1 + 12 + 7 + 8 + 9;
        assert_eq!(d.add_part(&part(12, 10, crc2, &delta)).unwrap(), Some(12));
        let s = d.latest().unwrap();
        assert_eq!(s.tick(), 12);
        let items: Vec<_> = s.items().map(|(t, i, v)| (t, i, v.to_vec())).collect();
        assert_eq!(items, vec![(5, 1, vec![7, 8, 9]), (11, 0, vec![1, 12, 0])]);
        // A wrong checksum is an error and stores nothing.
        let delta = pack(&[0, 1, 0, 11, 0, 1, 1, 1]);
        assert!(matches!(
            d.add_part(&part(14, 12, 0, &delta)),
            Err(Tw7Error::Crc { tick: 14, .. })
        ));
        assert_eq!(d.latest().unwrap().tick(), 12);
        assert_eq!(d.crc_errors(), 1);
        // A base we do not have.
        assert_eq!(
            d.add_part(&part(16, 3, 0, &delta)),
            Err(Tw7Error::MissingBaseline(3))
        );
        // SNAPEMPTY: the same snapshot at a new tick, no crc.
        let e = SnapPart {
            empty: true,
            ..part(18, 12, 0, &[])
        };
        assert_eq!(d.add_part(&e).unwrap(), Some(18));
        assert_eq!(d.latest().unwrap().crc(), crc2);
    }

    #[test]
    fn parts_reassemble_in_any_order() {
        // One item of type 100 with 400 ints: more than 900 packed bytes.
        let mut ints = vec![0, 1, 0, 100, 1, 400];
        ints.extend((0..400).map(|i| i * 1000));
        let bytes = pack(&ints);
        assert!(bytes.len() > MAX_SNAPSHOT_PACKSIZE);
        let crc = (0..400)
            .map(|i| i * 1000)
            .fold(0i32, |a: i32, v| a.wrapping_add(v));
        let n = bytes.len().div_ceil(MAX_SNAPSHOT_PACKSIZE) as i32;
        let mut d = SnapshotDecoder::new();
        let chunks: Vec<_> = bytes.chunks(MAX_SNAPSHOT_PACKSIZE).collect();
        for (i, c) in chunks.iter().enumerate().rev() {
            let r = d
                .add_part(&SnapPart {
                    num_parts: n,
                    part: i as i32,
                    ..part(50, -1, crc, c)
                })
                .unwrap();
            assert_eq!(r, if i == 0 { Some(50) } else { None });
        }
        assert_eq!(d.get(50).unwrap().item(100, 1).unwrap().len(), 400);
    }

    #[test]
    fn malformed_deltas() {
        let base = Snapshot::from_items(1, &[(11, 0, &[1, 2, 3])]).unwrap();
        let mut out = Snapshot::default();
        let mut del = Vec::new();
        for bad in [
            &[][..],
            &[0, 0],
            &[5, 0, 0],
            &[-1, 0, 0],
            &[0, 1, 0, 11],
            &[0, 1, 0, 11, 0, 1],
            &[0, 1, 0, 100, 0, -1],
            &[0, 1, 0, 100, 0, 1],
            &[0, 1, 0, 70000, 0, 0],
            &[0, 2, 0, 5, 0, 1, 1, 1, 5, 0, 1, 1, 1],
        ] {
            assert!(
                apply_delta(&base, bad, &mut out, &mut del).is_err(),
                "{bad:?}"
            );
        }
        // An update whose size differs from its base item.
        let base = Snapshot::from_items(1, &[(100, 0, &[1, 2, 3])]).unwrap();
        assert!(apply_delta(&base, &[0, 1, 0, 100, 0, 1, 1], &mut out, &mut del).is_err());
    }

    proptest! {
        #[test]
        fn decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..1000),
                                delta_tick in -2i32..3, n in -1i32..66, p in -1i32..66) {
            let mut d = SnapshotDecoder::new();
            let _ = d.add_part(&part(1, -1, 0, &pack(&[0, 1, 0, 11, 0, 1, 2, 3])));
            let sp = SnapPart { num_parts: n, part: p, ..part(2, delta_tick, 0, &data) };
            let _ = d.add_part(&sp);
        }

        #[test]
        fn apply_never_panics(ints in proptest::collection::vec(-3i32..200, 0..64)) {
            let base = Snapshot::from_items(1, &[(11, 0, &[1, 2, 3]), (100, 1, &[4])]).unwrap();
            let mut out = Snapshot::default();
            let mut del = Vec::new();
            let _ = apply_delta(&base, &ints, &mut out, &mut del);
        }
    }
}
