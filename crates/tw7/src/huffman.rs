//! The fixed Huffman code the 0.7 engine compresses packet payloads with
//! (src/engine/shared/huffman.cpp): 256 byte symbols plus an end-of-stream
//! symbol, one tree built once from a frequency table compiled into the
//! engine, bits packed LSB first.
//!
//! What it does not do: adapt (the table is fixed), or allocate per call
//! (both directions write into a caller's buffer).
//!
//! Order: [`Huffman::get`] (the tree, built on first use and shared), then
//! [`Huffman::compress`] / [`Huffman::decompress`].
//!
//! Facts from huffman.cpp: the end-of-stream symbol is 256 and counts with
//! frequency 1 (not the table's last entry); the tree is built by a stable
//! sort by descending frequency, merging the last two nodes (the least
//! frequent becomes branch 0); a symbol's code is its root-to-leaf path,
//! the first branch in the lowest bit. The compressor always appends one
//! more byte after the end-of-stream code, even when the bits already ended
//! on a byte boundary (libtw2's doc/huffman.md calls it a bug; we copy it
//! so our packets are byte-identical to the engine's). The engine's
//! decompressor treats the input as followed by zeros; we allow that for
//! at most one symbol's length, then call the stream malformed.

use std::sync::OnceLock;

use crate::Tw7Error;

/// The engine's frequency table (`gs_aFreqTable`); entry 256 is not used
/// (the end-of-stream symbol counts as 1).
#[rustfmt::skip]
const FREQUENCIES: [u32; 257] = [
    1 << 30, 4545, 2657, 431, 1950, 919, 444, 482, 2244, 617, 838, 542, 715, 1814, 304, 240,
    754, 212, 647, 186, 283, 131, 146, 166, 543, 164, 167, 136, 179, 859, 363, 113, 157, 154,
    204, 108, 137, 180, 202, 176, 872, 404, 168, 134, 151, 111, 113, 109, 120, 126, 129, 100,
    41, 20, 16, 22, 18, 18, 17, 19, 16, 37, 13, 21, 362, 166, 99, 78, 95, 88, 81, 70, 83, 284,
    91, 187, 77, 68, 52, 68, 59, 66, 61, 638, 71, 157, 50, 46, 69, 43, 11, 24, 13, 19, 10, 12,
    12, 20, 14, 9, 20, 20, 10, 10, 15, 15, 12, 12, 7, 19, 15, 14, 13, 18, 35, 19, 17, 14, 8, 5,
    15, 17, 9, 15, 14, 18, 8, 10, 2173, 134, 157, 68, 188, 60, 170, 60, 194, 62, 175, 71, 148,
    67, 167, 78, 211, 67, 156, 69, 1674, 90, 174, 53, 147, 89, 181, 51, 174, 63, 163, 80, 167,
    94, 128, 122, 223, 153, 218, 77, 200, 110, 190, 73, 174, 69, 145, 66, 277, 143, 141, 60,
    136, 53, 180, 57, 142, 57, 158, 61, 166, 112, 152, 92, 26, 22, 21, 28, 20, 26, 30, 21, 32,
    27, 20, 17, 23, 21, 30, 22, 22, 21, 27, 25, 17, 27, 23, 18, 39, 26, 15, 21, 12, 18, 18, 27,
    20, 18, 15, 19, 11, 17, 33, 12, 18, 15, 19, 18, 16, 26, 17, 18, 9, 10, 25, 22, 22, 17, 20,
    16, 6, 16, 15, 20, 14, 18, 24, 335, 1517,
];

/// The end-of-stream symbol.
pub const EOF_SYMBOL: usize = 256;
const NUM_SYMBOLS: usize = 257;
const NUM_NODES: usize = 2 * NUM_SYMBOLS - 1;
const NONE: u16 = u16::MAX;
/// Bits resolved per table lookup when decoding.
const LUT_BITS: u32 = 10;

#[derive(Clone, Copy)]
struct Node {
    /// Children for bit 0 and bit 1 (`NONE` for a leaf).
    children: [u16; 2],
}

/// One decode-table entry: after `LUT_BITS` bits (or fewer, for a short
/// code) from the root, the node reached and the bits used.
#[derive(Clone, Copy)]
struct LutEntry {
    node: u16,
    bits: u8,
}

/// The engine's Huffman code: per-symbol codes and the decode tree.
pub struct Huffman {
    /// Code of each symbol, first branch in bit 0.
    codes: [u32; NUM_SYMBOLS],
    /// Code length of each symbol.
    lengths: [u8; NUM_SYMBOLS],
    nodes: [Node; NUM_NODES],
    lut: Vec<LutEntry>,
}

impl Huffman {
    /// The shared code, built on first use.
    pub fn get() -> &'static Huffman {
        static CODE: OnceLock<Huffman> = OnceLock::new();
        CODE.get_or_init(Huffman::build)
    }

    fn build() -> Huffman {
        let mut nodes = [Node {
            children: [NONE, NONE],
        }; NUM_NODES];
        // (node id, frequency), kept sorted by descending frequency with a
        // stable sort: the engine's bubble sort swaps only on strictly less,
        // so it is stable, and a stable sort has one result.
        let mut left: Vec<(u16, u64)> = (0..NUM_SYMBOLS)
            .map(|i| {
                let f = if i == EOF_SYMBOL { 1 } else { FREQUENCIES[i] };
                (i as u16, u64::from(f))
            })
            .collect();
        let mut next = NUM_SYMBOLS;
        while left.len() > 1 {
            left.sort_by_key(|e| std::cmp::Reverse(e.1));
            let n = left.len();
            let (last, second) = (left[n - 1], left[n - 2]);
            nodes[next].children = [last.0, second.0];
            left[n - 2] = (next as u16, last.1 + second.1);
            left.pop();
            next += 1;
        }
        let root = (next - 1) as u16;
        let mut codes = [0u32; NUM_SYMBOLS];
        let mut lengths = [0u8; NUM_SYMBOLS];
        // Iterative depth-first walk: (node, code so far, depth).
        let mut stack = vec![(root, 0u32, 0u32)];
        while let Some((n, code, depth)) = stack.pop() {
            let node = nodes[usize::from(n)];
            if node.children[0] == NONE {
                codes[usize::from(n)] = code;
                lengths[usize::from(n)] = depth as u8;
                continue;
            }
            stack.push((node.children[1], code | (1 << depth), depth + 1));
            stack.push((node.children[0], code, depth + 1));
        }
        let mut lut = Vec::with_capacity(1 << LUT_BITS);
        for i in 0..(1u32 << LUT_BITS) {
            let mut n = root;
            let mut used = 0u8;
            for k in 0..LUT_BITS {
                n = nodes[usize::from(n)].children[((i >> k) & 1) as usize];
                used += 1;
                if nodes[usize::from(n)].children[0] == NONE {
                    break;
                }
            }
            lut.push(LutEntry {
                node: n,
                bits: used,
            });
        }
        Huffman {
            codes,
            lengths,
            nodes,
            lut,
        }
    }

    /// The code length of `symbol` (0..=256) in bits.
    pub fn code_len(&self, symbol: usize) -> u32 {
        u32::from(self.lengths[symbol])
    }

    /// Compress `input` into `out` (cleared first) the way the engine does,
    /// end-of-stream symbol and the extra final byte included. Fails only if
    /// the result would exceed `limit` bytes.
    pub fn compress(&self, input: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), Tw7Error> {
        out.clear();
        let mut bits: u64 = 0;
        let mut count: u32 = 0;
        let symbols = input
            .iter()
            .map(|&b| usize::from(b))
            .chain(std::iter::once(EOF_SYMBOL));
        for s in symbols {
            bits |= u64::from(self.codes[s]) << count;
            count += u32::from(self.lengths[s]);
            while count >= 8 {
                out.push(bits as u8);
                bits >>= 8;
                count -= 8;
            }
            if out.len() >= limit {
                return Err(Tw7Error::TooLarge {
                    what: "compressed payload",
                    size: out.len() + 1,
                    limit,
                });
            }
        }
        out.push(bits as u8);
        Ok(())
    }

    /// Decompress `input` into `out` (cleared first), at most `limit` bytes.
    pub fn decompress(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Tw7Error> {
        out.clear();
        let mut bits: u64 = 0;
        let mut count: u32 = 0;
        let mut pos = 0usize;
        // Zero bits assumed past the end of `input` so far.
        let mut padding: u32 = 0;
        loop {
            while count <= 56 && pos < input.len() {
                bits |= u64::from(input[pos]) << count;
                pos += 1;
                count += 8;
            }
            if count < 32 && pos == input.len() {
                // The engine reads zeros past the end; allow that for at
                // most one code's length.
                padding += 32 - count;
                if padding > 64 {
                    return Err(Tw7Error::Huffman("no end-of-stream symbol"));
                }
                count = 32;
            }
            let e = self.lut[(bits & ((1 << LUT_BITS) - 1)) as usize];
            let mut n = e.node;
            bits >>= e.bits;
            count -= u32::from(e.bits);
            while self.nodes[usize::from(n)].children[0] != NONE {
                if count == 0 {
                    return Err(Tw7Error::Huffman("code longer than the stream"));
                }
                n = self.nodes[usize::from(n)].children[(bits & 1) as usize];
                bits >>= 1;
                count -= 1;
            }
            let sym = usize::from(n);
            if sym == EOF_SYMBOL {
                return Ok(());
            }
            if out.len() >= limit {
                return Err(Tw7Error::Huffman("output larger than a packet payload"));
            }
            out.push(sym as u8);
        }
    }

    #[cfg(test)]
    fn max_len(&self) -> u32 {
        self.lengths
            .iter()
            .map(|&l| u32::from(l))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// libtw2 doc/huffman.md's worked example.
    #[test]
    fn libtw2_doc_example() {
        let h = Huffman::get();
        let mut out = Vec::new();
        h.compress(&[0x00, 0x01, 0x00, 0x02, 0x00, 0x80, 0x00], &mut out, 100)
            .unwrap();
        assert_eq!(out, [0xb1, 0x08, 0x2a, 0x6e, 0x00]);
        let mut back = Vec::new();
        h.decompress(&out, &mut back, 100).unwrap();
        assert_eq!(back, [0x00, 0x01, 0x00, 0x02, 0x00, 0x80, 0x00]);
    }

    /// Code lengths from the same document's table: 0x00 is 1 bit, 0x01 is
    /// 4, 0x02 and 0x80 are 5, EOF is 15.
    #[test]
    fn code_lengths_match_the_doc() {
        let h = Huffman::get();
        assert_eq!(h.code_len(0x00), 1);
        assert_eq!(h.code_len(0x01), 4);
        assert_eq!(h.code_len(0x02), 5);
        assert_eq!(h.code_len(0x80), 5);
        assert_eq!(h.code_len(EOF_SYMBOL), 15);
        assert!(h.max_len() <= 32, "codes fit the engine's 32-bit words");
    }

    #[test]
    fn empty_input_is_just_eof() {
        let h = Huffman::get();
        let mut out = Vec::new();
        h.compress(&[], &mut out, 100).unwrap();
        let mut back = vec![1, 2, 3];
        h.decompress(&out, &mut back, 100).unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn limits_are_errors() {
        let h = Huffman::get();
        let mut out = Vec::new();
        assert!(h.compress(&[0xff; 64], &mut out, 8).is_err());
        h.compress(&[0u8; 64], &mut out, 100).unwrap();
        let mut back = Vec::new();
        assert!(h.decompress(&out, &mut back, 10).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 0..1400)) {
            let h = Huffman::get();
            let mut c = Vec::new();
            h.compress(&data, &mut c, 4096).unwrap();
            let mut d = Vec::new();
            h.decompress(&c, &mut d, 4096).unwrap();
            prop_assert_eq!(d, data);
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let mut d = Vec::new();
            let _ = Huffman::get().decompress(&data, &mut d, 1391);
            prop_assert!(d.len() <= 1391);
        }
    }
}
