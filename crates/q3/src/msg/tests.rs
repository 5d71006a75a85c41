use super::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Bits(i32, u32),
    Signed(i32, u32),
    Byte(u8),
    Short(i16),
    Long(i32),
    Str(String),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<i32>(), 1u32..=32).prop_map(|(v, b)| Op::Bits(v, b)),
        (any::<i32>(), 1u32..=32).prop_map(|(v, b)| Op::Signed(v, b)),
        any::<u8>().prop_map(Op::Byte),
        any::<i16>().prop_map(Op::Short),
        any::<i32>().prop_map(Op::Long),
        "[a-zA-Z0-9 \\\\]{0,40}".prop_map(Op::Str),
    ]
}

proptest! {
    #[test]
    fn bitstream_writes_read_back(ops in proptest::collection::vec(op(), 0..60)) {
        let mut w = Writer::new();
        for o in &ops {
            match o {
                Op::Bits(v, b) | Op::Signed(v, b) => w.write_bits(*v, *b),
                Op::Byte(v) => w.write_byte(*v),
                Op::Short(v) => w.write_short(i32::from(*v)),
                Op::Long(v) => w.write_long(*v),
                Op::Str(s) => w.write_string(s),
            }
        }
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        for o in &ops {
            match o {
                Op::Bits(v, b) => {
                    let mask = if *b == 32 { u32::MAX } else { (1u32 << b) - 1 };
                    prop_assert_eq!(r.read_bits(*b).unwrap(), *v as u32 & mask);
                }
                Op::Signed(v, b) => {
                    let want = if *b == 32 { *v } else { (*v << (32 - b)) >> (32 - b) };
                    prop_assert_eq!(r.read_signed(*b).unwrap(), want);
                }
                Op::Byte(v) => prop_assert_eq!(r.read_byte().unwrap(), *v),
                Op::Short(v) => prop_assert_eq!(r.read_short().unwrap(), i32::from(*v)),
                Op::Long(v) => prop_assert_eq!(r.read_long().unwrap(), *v),
                Op::Str(s) => prop_assert_eq!(&r.read_string().unwrap(), s),
            }
        }
    }

    #[test]
    fn oob_writes_read_back(vals in proptest::collection::vec((any::<i32>(), 0usize..3), 0..40)) {
        let mut w = Writer::new_oob();
        for (v, k) in &vals {
            w.write_bits(*v, [8, 16, 32][*k]);
        }
        let bytes = w.into_bytes();
        prop_assert_eq!(bytes.len(), vals.iter().map(|(_, k)| [1, 2, 4][*k]).sum::<usize>());
        let mut r = Reader::new_oob(&bytes);
        for (v, k) in &vals {
            let b = [8, 16, 32][*k];
            let mask = if b == 32 { u32::MAX } else { (1u32 << b) - 1 };
            prop_assert_eq!(r.read_bits(b).unwrap(), *v as u32 & mask);
        }
        prop_assert_eq!(r.read_bits(8), Err(Q3Error::Overrun));
    }
}

#[test]
fn a_bitstream_message_ends_one_byte_past_its_last_bit() {
    let mut w = Writer::new();
    w.write_bits(1, 1);
    assert_eq!(w.as_bytes().len(), 1);
    let mut w = Writer::new();
    for _ in 0..8 {
        w.write_bits(1, 1);
    }
    assert_eq!(w.as_bytes(), &[0xFF, 0]);
}

#[test]
fn an_overlong_string_is_cut_like_the_engine_does() {
    let long = "x".repeat(2000);
    let mut w = Writer::new();
    w.write_big_string(&long);
    let bytes = w.into_bytes();
    let mut r = Reader::new(&bytes);
    assert_eq!(r.read_string().unwrap().len(), MAX_STRING_CHARS - 1);
}
