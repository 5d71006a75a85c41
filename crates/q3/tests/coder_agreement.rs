//! The word-at-a-time, table-driven message reader and writer
//! (`msg::Reader`, `msg::Writer`) against the plain bit-at-a-time,
//! tree-walking coder in `reference/`, on random input: the same bytes out,
//! the same values (or the same error) back, for whole, cut-short and
//! garbled messages. Plus the bound on hostile input: every successful read
//! consumes bits, so reading a message ends within its length.

mod reference;

use proptest::prelude::*;
use reference::{RefReader, RefWriter, Tree};
use std::sync::OnceLock;
use tickpack_q3::msg::{Reader, Writer};

fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(Tree::new)
}

/// A write: a value and a width (1..=32), skewed like real messages (many
/// flags, zeros and small values, some 8/16/32-bit fields).
fn write() -> impl Strategy<Value = (i32, u32)> {
    prop_oneof![
        (0i32..2).prop_map(|v| (v, 1)),
        (any::<i32>(), 1u32..=32),
        (
            -300i32..300,
            prop_oneof![Just(8u32), Just(16), Just(32), Just(13), Just(10)]
        ),
        (any::<i32>(), prop_oneof![Just(8u32), Just(16), Just(32)]),
    ]
}

/// Read `widths` with both readers in step; every result must agree, and
/// both stop at the first error.
fn read_both(bytes: &[u8], widths: &[u32]) -> Result<(), TestCaseError> {
    let mut fast = Reader::new(bytes);
    let mut plain = RefReader::new(tree(), bytes, false);
    for &b in widths {
        let (f, p) = (fast.read_bits(b), plain.read_bits(b));
        prop_assert_eq!(&f, &p, "width {}", b);
        if f.is_err() {
            break;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_writers_agree_byte_for_byte(writes in proptest::collection::vec(write(), 0..200)) {
        let mut fast = Writer::new();
        // A reused buffer full of garbage must not leak into the message.
        let mut reused = Writer::reuse(vec![0xA5; 300]);
        let mut plain = RefWriter::new(tree(), false);
        for &(v, b) in &writes {
            fast.write_bits(v, b);
            reused.write_bits(v, b);
            plain.write_bits(v, b);
            // Partial bytes too: the message after every write.
            prop_assert_eq!(fast.as_bytes(), &plain.bytes()[..]);
        }
        prop_assert_eq!(reused.into_bytes(), plain.bytes());
    }

    #[test]
    fn the_oob_writers_agree(writes in proptest::collection::vec((any::<i32>(), prop_oneof![Just(8u32), Just(16), Just(32)]), 0..50)) {
        let mut fast = Writer::new_oob();
        let mut plain = RefWriter::new(tree(), true);
        for &(v, b) in &writes {
            fast.write_bits(v, b);
            plain.write_bits(v, b);
        }
        let bytes = fast.into_bytes();
        prop_assert_eq!(&bytes, &plain.bytes());
        let mut fast = Reader::new_oob(&bytes);
        let mut plain = RefReader::new(tree(), &bytes, true);
        for &(_, b) in writes.iter().chain([(0, 32)].iter()) {
            prop_assert_eq!(fast.read_bits(b), plain.read_bits(b));
        }
    }

    #[test]
    fn the_readers_agree_on_whole_cut_and_garbled_messages(
        writes in proptest::collection::vec(write(), 1..120),
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u32..8), 0..3),
    ) {
        let mut w = Writer::new();
        for &(v, b) in &writes {
            w.write_bits(v, b);
        }
        let whole = w.into_bytes();
        let widths: Vec<u32> = writes.iter().map(|&(_, b)| b).collect();
        read_both(&whole, &widths)?;
        // Cut anywhere (a partial last code), then garble a few bits.
        let mut part = whole[..cut.index(whole.len() + 1)].to_vec();
        read_both(&part, &widths)?;
        for (at, bit) in flips {
            if !part.is_empty() {
                let i = at.index(part.len());
                part[i] ^= 1 << bit;
            }
        }
        read_both(&part, &widths)?;
    }

    #[test]
    fn the_readers_agree_on_random_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..80),
        widths in proptest::collection::vec(1u32..=32, 1..100),
    ) {
        read_both(&bytes, &widths)?;
    }

    /// Every successful bitstream read takes at least one bit, so a loop
    /// reading a garbage message ends within its bit count.
    #[test]
    fn reading_garbage_ends_within_its_length(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        width in 1u32..=32,
    ) {
        let mut r = Reader::new(&bytes);
        let mut reads = 0usize;
        loop {
            let before = r.bit();
            match r.read_bits(width) {
                Ok(_) => prop_assert!(r.bit() > before),
                Err(_) => break,
            }
            reads += 1;
            prop_assert!(reads <= bytes.len() * 8);
        }
    }
}

/// Every byte value through both coders, at every bit offset.
#[test]
fn every_byte_at_every_offset_codes_the_same() {
    for offset in 0..8u32 {
        let mut fast = Writer::new();
        let mut plain = RefWriter::new(tree(), false);
        if offset > 0 {
            fast.write_bits(0x55, offset);
            plain.write_bits(0x55, offset);
        }
        for v in 0..=255 {
            fast.write_bits(v, 8);
            plain.write_bits(v, 8);
        }
        let bytes = fast.into_bytes();
        assert_eq!(bytes, plain.bytes(), "offset {offset}");
        let mut r = Reader::new(&bytes);
        if offset > 0 {
            assert_eq!(r.read_bits(offset).unwrap(), 0x55 & ((1 << offset) - 1));
        }
        for v in 0..=255u32 {
            assert_eq!(r.read_bits(8).unwrap(), v);
        }
    }
}
