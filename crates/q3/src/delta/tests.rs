use super::*;
use crate::msg::{Reader, Writer};
use proptest::prelude::*;

proptest! {
    #[test]
    fn random_bytes_never_panic_the_reader(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut r = Reader::new(&bytes);
        for _ in 0..200 {
            if r.read_bits(13).is_err() { break; }
        }
        let mut r = Reader::new(&bytes);
        let _ = read_delta_playerstate(&mut r, None);
        let mut r = Reader::new(&bytes);
        let _ = read_delta_entity(&mut r, &EntityState::default(), 5);
    }

    #[test]
    fn keyed_usercmds_round_trip(
        key in any::<i32>(),
        cmds in proptest::collection::vec(
            (0i32..300, [0i32..65536, 0i32..65536, 0i32..65536], 0i32..65536, any::<u8>(), -127i8..=127, -127i8..=127, -127i8..=127),
            1..20),
    ) {
        let mut t = 1000;
        let cmds: Vec<UserCmd> = cmds.into_iter().map(|(dt, angles, buttons, weapon, f, r, u)| {
            t += dt;
            UserCmd { server_time: t, angles, buttons, weapon, forwardmove: f, rightmove: r, upmove: u }
        }).collect();
        let mut w = Writer::new();
        let mut prev = UserCmd::default();
        for c in &cmds {
            write_delta_usercmd(&mut w, key, &prev, c);
            prev = *c;
        }
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        let mut prev = UserCmd::default();
        for c in &cmds {
            let got = read_delta_usercmd(&mut r, key, &prev).unwrap();
            prop_assert_eq!(got, *c);
            prev = got;
        }
    }

    #[test]
    fn entity_deltas_round_trip(
        from in proptest::collection::vec(small_field(), 51),
        to in proptest::collection::vec(small_field(), 51),
        number in 0i32..1023,
        force in any::<bool>(),
    ) {
        let mk = |v: &Vec<i32>| {
            let mut e = EntityState { number, fields: [0; 51] };
            for (i, f) in ENTITY_FIELDS.iter().enumerate() {
                e.fields[i] = fit(v[i], f.bits);
            }
            e
        };
        let (from, to) = (mk(&from), mk(&to));
        let mut w = Writer::new();
        write_delta_entity(&mut w, Some(&from), Some(&to), force);
        write_delta_entity(&mut w, Some(&to), None, false);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        if from != to || force {
            prop_assert_eq!(r.read_bits(GENTITYNUM_BITS).unwrap() as i32, number);
            let got = read_delta_entity(&mut r, &from, number).unwrap();
            prop_assert_eq!(got, Some(to));
        }
        prop_assert_eq!(r.read_bits(GENTITYNUM_BITS).unwrap() as i32, number);
        prop_assert_eq!(read_delta_entity(&mut r, &to, number).unwrap(), None);
    }

    #[test]
    fn playerstate_deltas_round_trip(
        from in proptest::collection::vec(small_field(), 48),
        to in proptest::collection::vec(small_field(), 48),
        arrays in proptest::collection::vec(any::<i16>(), 128),
        pow in proptest::collection::vec(any::<i32>(), 2),
        from_none in any::<bool>(),
    ) {
        let mk = |v: &Vec<i32>, off: usize| {
            let mut p = PlayerState::default();
            for (i, f) in PLAYER_FIELDS.iter().enumerate() {
                p.fields[i] = fit(v[i], f.bits);
            }
            for i in 0..16 {
                p.stats[i] = i32::from(arrays[off + i]) * i32::from(i % 3 == 0);
                p.persistant[i] = i32::from(arrays[off + 16 + i]) * i32::from(i % 2 == 0);
                p.ammo[i] = i32::from(arrays[off + 32 + i]);
                p.powerups[i] = if i == 3 { pow[off / 64] } else { 0 };
            }
            p
        };
        let from = if from_none { PlayerState::default() } else { mk(&from, 0) };
        let to = mk(&to, 64);
        let mut w = Writer::new();
        write_delta_playerstate(&mut w, (!from_none).then_some(&from), &to);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        let got = read_delta_playerstate(&mut r, (!from_none).then_some(&from)).unwrap();
        prop_assert_eq!(got, to);
    }
}

/// A field value: small integers, zero, or arbitrary bit patterns.
fn small_field() -> impl Strategy<Value = i32> {
    prop_oneof![Just(0), -5000i32..5000, any::<i32>()]
}

/// `v` made representable in a field of `bits` (0: float).
fn fit(v: i32, bits: i32) -> i32 {
    if bits == 0 {
        // An integral or arbitrary float; never NaN or -0.0 (which the
        // engine does not carry bit-exactly).
        let f = if v.unsigned_abs() < 5000 {
            v as f32
        } else {
            (v as f32) / 7.0
        };
        if f == 0.0 {
            0
        } else {
            f.to_bits() as i32
        }
    } else if bits < 0 {
        let b = bits.unsigned_abs();
        (v << (32 - b)) >> (32 - b)
    } else if bits == 32 {
        v
    } else {
        (v as u32 & ((1u32 << bits) - 1)) as i32
    }
}

#[test]
fn hash_key_matches_the_engine_formula() {
    assert_eq!(hash_key(b"", 32), 0);
    // 'a' * 119 = 11543; 11543 ^ (11543 >> 10) ^ (11543 >> 20) = 11543 ^ 11
    assert_eq!(hash_key(b"a", 32), 11543 ^ 11);
    // '%' and bytes above 127 hash as '.'
    assert_eq!(hash_key(b"%\x80", 32), hash_key(b"..", 32));
    // at most maxlen bytes count
    assert_eq!(hash_key(b"abcdef", 3), hash_key(b"abc", 32));
}
