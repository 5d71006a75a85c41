//! The engine's adaptive Huffman coder (Sayood's algorithm as the engine
//! implements it, ranks held implicitly by a doubly-linked node list), in
//! two uses:
//!
//! - [`MsgCoder`]: the fixed coder of every netchan message. Its tree is
//!   built once by adding each byte value `i` `MSG_HDATA[i]` times, in that
//!   order, to an empty adaptive tree (the engine's `MSG_initHuffman`), and
//!   is never updated afterwards. Bits go LSB-first within a byte. It codes
//!   by table: a (code, length) per byte to encode, and to decode one
//!   lookup of the next [`TABLE_BITS`] bits, as long as the longest code
//!   (the tests keep a tree-walking, bit-at-a-time coder as the reference
//!   it must agree with).
//! - [`compress`] / [`decompress`]: the engine's `Huff_Compress` /
//!   `Huff_Decompress`, adaptive from an empty tree, with a 2-byte
//!   big-endian length prefix; used for the `connect` packet's userinfo.
//!   Unlike the engine, [`compress`] never truncates its output when the
//!   coded form is longer than the input (the engine's bound there only
//!   corrupts short, incompressible inputs).

use crate::Q3Error;

const NONE: u32 = u32::MAX;
/// The "not yet transmitted" pseudo-symbol.
const NYT: u16 = 256;
const INTERNAL: u16 = 257;

#[derive(Clone, Copy)]
struct Node {
    left: u32,
    right: u32,
    parent: u32,
    next: u32,
    prev: u32,
    /// Index of the shared slot that points at the highest-ranked node of
    /// this node's weight block (the engine's `node_t **head`).
    head: u32,
    weight: u32,
    symbol: u16,
}

impl Node {
    fn new(symbol: u16, weight: u32) -> Node {
        Node {
            left: NONE,
            right: NONE,
            parent: NONE,
            next: NONE,
            prev: NONE,
            head: NONE,
            weight,
            symbol,
        }
    }
}

/// An adaptive Huffman tree, updated symbol by symbol.
struct Adaptive {
    nodes: Vec<Node>,
    slots: Vec<u32>,
    free_slots: Vec<u32>,
    tree: u32,
    /// The list head, which is always the NYT node.
    lhead: u32,
    loc: [u32; 257],
}

impl Adaptive {
    fn new() -> Adaptive {
        let mut loc = [NONE; 257];
        loc[NYT as usize] = 0;
        Adaptive {
            nodes: vec![Node::new(NYT, 0)],
            slots: Vec::new(),
            free_slots: Vec::new(),
            tree: 0,
            lhead: 0,
            loc,
        }
    }

    fn n(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    fn get(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    fn new_slot(&mut self, value: u32) -> u32 {
        if let Some(s) = self.free_slots.pop() {
            self.slots[s as usize] = value;
            s
        } else {
            self.slots.push(value);
            (self.slots.len() - 1) as u32
        }
    }

    /// Swap the tree positions of two nodes.
    fn swap(&mut self, n1: u32, n2: u32) {
        let par1 = self.get(n1).parent;
        let par2 = self.get(n2).parent;
        if par1 != NONE {
            if self.get(par1).left == n1 {
                self.n(par1).left = n2;
            } else {
                self.n(par1).right = n2;
            }
        } else {
            self.tree = n2;
        }
        if par2 != NONE {
            if self.get(par2).left == n2 {
                self.n(par2).left = n1;
            } else {
                self.n(par2).right = n1;
            }
        } else {
            self.tree = n1;
        }
        self.n(n1).parent = par2;
        self.n(n2).parent = par1;
    }

    /// Swap two nodes in the rank list.
    fn swaplist(&mut self, n1: u32, n2: u32) {
        let t = self.get(n1).next;
        self.n(n1).next = self.get(n2).next;
        self.n(n2).next = t;
        let t = self.get(n1).prev;
        self.n(n1).prev = self.get(n2).prev;
        self.n(n2).prev = t;
        if self.get(n1).next == n1 {
            self.n(n1).next = n2;
        }
        if self.get(n2).next == n2 {
            self.n(n2).next = n1;
        }
        for n in [n1, n2] {
            let next = self.get(n).next;
            if next != NONE {
                self.n(next).prev = n;
            }
        }
        for n in [n1, n2] {
            let prev = self.get(n).prev;
            if prev != NONE {
                self.n(prev).next = n;
            }
        }
    }

    fn increment(&mut self, node: u32) {
        if node == NONE {
            return;
        }
        let next = self.get(node).next;
        if next != NONE && self.get(next).weight == self.get(node).weight {
            let lnode = self.slots[self.get(node).head as usize];
            if lnode != self.get(node).parent {
                self.swap(lnode, node);
            }
            self.swaplist(lnode, node);
        }
        let prev = self.get(node).prev;
        let head = self.get(node).head;
        if prev != NONE && self.get(prev).weight == self.get(node).weight {
            self.slots[head as usize] = prev;
        } else {
            self.slots[head as usize] = NONE;
            self.free_slots.push(head);
        }
        self.n(node).weight += 1;
        let next = self.get(node).next;
        if next != NONE && self.get(next).weight == self.get(node).weight {
            self.n(node).head = self.get(next).head;
        } else {
            let s = self.new_slot(node);
            self.n(node).head = s;
        }
        let parent = self.get(node).parent;
        if parent != NONE {
            self.increment(parent);
            if self.get(node).prev == parent {
                self.swaplist(node, parent);
                let head = self.get(node).head as usize;
                if self.slots[head] == node {
                    self.slots[head] = parent;
                }
            }
        }
    }

    /// Count one more occurrence of `ch` (the engine's `Huff_addRef`).
    fn add_ref(&mut self, ch: u8) {
        if self.loc[ch as usize] != NONE {
            self.increment(self.loc[ch as usize]);
            return;
        }
        let lhead = self.lhead;
        let tnode = self.nodes.len() as u32;
        let tnode2 = tnode + 1;
        self.nodes.push(Node::new(ch as u16, 1));
        self.nodes.push(Node::new(INTERNAL, 1));

        let first = self.get(lhead).next;
        self.n(tnode2).next = first;
        if first != NONE {
            self.n(first).prev = tnode2;
            if self.get(first).weight == 1 {
                self.n(tnode2).head = self.get(first).head;
            } else {
                let s = self.new_slot(tnode2);
                self.n(tnode2).head = s;
            }
        } else {
            let s = self.new_slot(tnode2);
            self.n(tnode2).head = s;
        }
        self.n(lhead).next = tnode2;
        self.n(tnode2).prev = lhead;

        let first = self.get(lhead).next;
        self.n(tnode).next = first;
        // `first` is tnode2 here, of weight 1.
        self.n(first).prev = tnode;
        if self.get(first).weight == 1 {
            self.n(tnode).head = self.get(first).head;
        } else {
            let s = self.new_slot(tnode2);
            self.n(tnode).head = s;
        }
        self.n(lhead).next = tnode;
        self.n(tnode).prev = lhead;

        let lparent = self.get(lhead).parent;
        if lparent != NONE {
            if self.get(lparent).left == lhead {
                self.n(lparent).left = tnode2;
            } else {
                self.n(lparent).right = tnode2;
            }
        } else {
            self.tree = tnode2;
        }
        self.n(tnode2).right = tnode;
        self.n(tnode2).left = lhead;
        self.n(tnode2).parent = lparent;
        self.n(lhead).parent = tnode2;
        self.n(tnode).parent = tnode2;
        self.loc[ch as usize] = tnode;
        self.increment(lparent);
    }

    /// The code of `node`: bits in transmission order (first bit in bit 0)
    /// and their count.
    fn code(&self, node: u32) -> (u64, u32) {
        let mut path = Vec::new();
        let mut n = node;
        while self.get(n).parent != NONE {
            let p = self.get(n).parent;
            path.push(u64::from(self.get(p).right == n));
            n = p;
        }
        let mut bits = 0u64;
        for (i, b) in path.iter().rev().enumerate() {
            bits |= b << i;
        }
        (bits, path.len() as u32)
    }

    fn transmit(&self, ch: u16, out: &mut BitSink) {
        let loc = self.loc[ch as usize];
        if loc == NONE {
            self.transmit(NYT, out);
            for i in (0..8).rev() {
                out.put((ch >> i) & 1 == 1);
            }
        } else {
            let (bits, len) = self.code(loc);
            for i in 0..len {
                out.put((bits >> i) & 1 == 1);
            }
        }
    }
}

struct BitSink {
    bytes: Vec<u8>,
    bit: usize,
}

impl BitSink {
    fn put(&mut self, b: bool) {
        if self.bit & 7 == 0 {
            self.bytes.push(0);
        }
        if b {
            *self.bytes.last_mut().expect("pushed above") |= 1 << (self.bit & 7);
        }
        self.bit += 1;
    }
}

/// The bit at `bit` of `data` (LSB-first), or `None` past the end.
fn bit_at(data: &[u8], bit: usize) -> Option<u32> {
    data.get(bit >> 3).map(|b| u32::from((b >> (bit & 7)) & 1))
}

/// The engine's `Huff_Compress` from `offset` on: `data[..offset]` is kept,
/// the rest becomes a 2-byte big-endian length and its adaptive code.
pub fn compress(data: &[u8], offset: usize) -> Vec<u8> {
    let mut out = data[..offset.min(data.len())].to_vec();
    let body = &data[offset.min(data.len())..];
    if body.is_empty() {
        return out;
    }
    let mut huff = Adaptive::new();
    let len = body.len().min(0xFFFF);
    let mut sink = BitSink {
        bytes: vec![(len >> 8) as u8, len as u8],
        bit: 16,
    };
    for &ch in &body[..len] {
        huff.transmit(u16::from(ch), &mut sink);
        huff.add_ref(ch);
    }
    // The engine then counts one more byte (`bloc += 8`).
    sink.bit += 8;
    sink.bytes.resize(sink.bit >> 3, 0);
    out.extend_from_slice(&sink.bytes);
    out
}

/// The engine's `Huff_Decompress` from `offset` on, for at most `max_len`
/// decoded bytes: an error if the code runs past the end of `data` or is
/// not a valid code.
pub fn decompress(data: &[u8], offset: usize, max_len: usize) -> Result<Vec<u8>, Q3Error> {
    let mut out = data[..offset.min(data.len())].to_vec();
    let body = &data[offset.min(data.len())..];
    if body.is_empty() {
        return Ok(out);
    }
    if body.len() < 2 {
        return Err(Q3Error::Overrun);
    }
    let cch = (usize::from(body[0]) << 8 | usize::from(body[1])).min(max_len);
    let mut huff = Adaptive::new();
    let mut bit = 16usize;
    out.reserve(cch);
    for _ in 0..cch {
        let mut node = huff.tree;
        while huff.get(node).symbol == INTERNAL {
            let b = bit_at(body, bit).ok_or(Q3Error::Overrun)?;
            bit += 1;
            node = if b == 1 {
                huff.get(node).right
            } else {
                huff.get(node).left
            };
            if node == NONE {
                return Err(Q3Error::BadCode);
            }
        }
        let mut ch = huff.get(node).symbol;
        if ch == NYT {
            ch = 0;
            for _ in 0..8 {
                ch = (ch << 1) | bit_at(body, bit).ok_or(Q3Error::Overrun)? as u16;
                bit += 1;
            }
        }
        out.push(ch as u8);
        huff.add_ref(ch as u8);
    }
    Ok(out)
}

/// The longest code of the message coder, in bits (the engine's "not yet
/// transmitted" leaf is that deep too): one lookup of this many bits
/// always ends at a leaf.
pub const MAX_CODE_BITS: u32 = 11;
/// How many bits the fixed decoder looks up at once: every code.
pub const TABLE_BITS: u32 = MAX_CODE_BITS;

/// A decode-table entry: the leaf a window's first bits reach (a byte, or
/// [`NYT`] for the one leaf no byte has) and its depth.
#[derive(Clone, Copy)]
struct Entry {
    symbol: u16,
    len: u8,
}

/// The fixed message coder (the engine's `msgHuff` after `MSG_initHuffman`)
/// as two tables: a (code, length) per byte for encoding, and for decoding
/// the leaf every [`TABLE_BITS`]-bit window starts with. Built at compile
/// time from [`MSG_CODES`]; no tree is walked.
pub struct MsgCoder {
    /// Per byte: code bits (first bit in bit 0) and length.
    codes: [(u64, u8); 256],
    /// Per window of the next [`TABLE_BITS`] bits (first bit in bit 0).
    table: [Entry; 1 << TABLE_BITS],
}

/// The coder, built by the compiler.
static CODER: MsgCoder = MsgCoder::build();

impl MsgCoder {
    /// The codes the engine's construction gives: every symbol added to an
    /// adaptive tree as often as `msg_hData` says, in order (`msg.c`,
    /// `MSG_initHuffman`). About a million additions: slow (100 ms), so
    /// [`MSG_CODES`] holds the result and a test checks they agree.
    #[cfg(test)]
    fn adaptive_codes() -> [(u64, u8); 256] {
        let mut huff = Adaptive::new();
        for (i, &count) in MSG_HDATA.iter().enumerate() {
            for _ in 0..count {
                huff.add_ref(i as u8);
            }
        }
        let mut codes = [(0u64, 0u8); 256];
        for (sym, code) in codes.iter_mut().enumerate() {
            let (bits, len) = huff.code(huff.loc[sym]);
            assert!(len <= 64, "msg Huffman code longer than 64 bits");
            *code = (bits, len as u8);
        }
        codes
    }

    /// Every window whose first `len` bits are a byte's code decodes to
    /// that byte; the windows left over start with the NYT leaf's code
    /// (the tests check there is exactly one, of [`MAX_CODE_BITS`] bits).
    const fn build() -> MsgCoder {
        let codes = MSG_CODES;
        let mut table = [Entry {
            symbol: NYT,
            len: MAX_CODE_BITS as u8,
        }; 1 << TABLE_BITS];
        let mut sym = 0;
        while sym < 256 {
            let (bits, len) = codes[sym];
            assert!(len as u32 <= MAX_CODE_BITS && len > 0);
            let mut rest = 0usize;
            while rest < 1 << (TABLE_BITS - len as u32) {
                table[bits as usize | rest << len] = Entry {
                    symbol: sym as u16,
                    len,
                };
                rest += 1;
            }
            sym += 1;
        }
        MsgCoder { codes, table }
    }

    /// The coder.
    #[inline]
    pub fn get() -> &'static MsgCoder {
        &CODER
    }

    /// The code of `sym`: bits in transmission order and their count.
    #[inline]
    pub fn code(&self, sym: u8) -> (u64, u32) {
        let (bits, len) = self.codes[sym as usize];
        (bits, u32::from(len))
    }

    /// The leaf `window` starts with (its next bits, first in bit 0; at
    /// least [`MAX_CODE_BITS`] of them, zeros past the data's end): the
    /// byte, or `None` for the NYT leaf (which no real encoder sends), and
    /// the code's length.
    #[inline]
    pub fn lookup(&self, window: u64) -> (Option<u8>, u32) {
        let e = self.table[(window & ((1 << TABLE_BITS) - 1)) as usize];
        let sym = if e.symbol < 256 {
            Some(e.symbol as u8)
        } else {
            None
        };
        (sym, u32::from(e.len))
    }

    /// Decode one symbol from `data` starting at bit `bit`, reading no bit
    /// at or past `limit` bits. Returns the symbol and the new position.
    #[inline]
    pub fn decode(&self, data: &[u8], bit: usize, limit: usize) -> Result<(u8, usize), Q3Error> {
        let (sym, len) = self.lookup(crate::bits::peek(data, bit));
        let end = bit + len as usize;
        if end > limit {
            return Err(Q3Error::Overrun);
        }
        let sym = sym.ok_or(Q3Error::BadCode)?;
        Ok((sym, end))
    }
}

/// The byte frequencies the engine's message coder is trained with
/// (`msg_hData` in msg.c).
pub const MSG_HDATA: [u32; 256] = [
    250315, 41193, 6292, 7106, 3730, 3750, 6110, 23283, 33317, 6950, 7838, 9714, 9257, 17259, 3949,
    1778, 8288, 1604, 1590, 1663, 1100, 1213, 1238, 1134, 1749, 1059, 1246, 1149, 1273, 4486, 2805,
    3472, 21819, 1159, 1670, 1066, 1043, 1012, 1053, 1070, 1726, 888, 1180, 850, 960, 780, 1752,
    3296, 10630, 4514, 5881, 2685, 4650, 3837, 2093, 1867, 2584, 1949, 1972, 940, 1134, 1788, 1670,
    1206, 5719, 6128, 7222, 6654, 3710, 3795, 1492, 1524, 2215, 1140, 1355, 971, 2180, 1248, 1328,
    1195, 1770, 1078, 1264, 1266, 1168, 965, 1155, 1186, 1347, 1228, 1529, 1600, 2617, 2048, 2546,
    3275, 2410, 3585, 2504, 2800, 2675, 6146, 3663, 2840, 14253, 3164, 2221, 1687, 3208, 2739,
    3512, 4796, 4091, 3515, 5288, 4016, 7937, 6031, 5360, 3924, 4892, 3743, 4566, 4807, 5852, 6400,
    6225, 8291, 23243, 7838, 7073, 8935, 5437, 4483, 3641, 5256, 5312, 5328, 5370, 3492, 2458,
    1694, 1821, 2121, 1916, 1149, 1516, 1367, 1236, 1029, 1258, 1104, 1245, 1006, 1149, 1025, 1241,
    952, 1287, 997, 1713, 1009, 1187, 879, 1099, 929, 1078, 951, 1656, 930, 1153, 1030, 1262, 1062,
    1214, 1060, 1621, 930, 1106, 912, 1034, 892, 1158, 990, 1175, 850, 1121, 903, 1087, 920, 1144,
    1056, 3462, 2240, 4397, 12136, 7758, 1345, 1307, 3278, 1950, 886, 1023, 1112, 1077, 1042, 1061,
    1071, 1484, 1001, 1096, 915, 1052, 995, 1070, 876, 1111, 851, 1059, 805, 1112, 923, 1103, 817,
    1899, 1872, 976, 841, 1127, 956, 1159, 950, 7791, 954, 1289, 933, 1127, 3207, 1020, 927, 1355,
    768, 1040, 745, 952, 805, 1073, 740, 1013, 805, 1008, 796, 996, 1057, 11457, 13504,
];

/// The message coder's code per symbol (bits in transmission order, first
/// bit in bit 0; length), as [`MsgCoder::adaptive_codes`] builds them from
/// [`MSG_HDATA`]; the test `the_message_code_table_is_what_the_engines_construction_builds`
/// checks the two agree.
#[rustfmt::skip]
pub const MSG_CODES: [(u64, u8); 256] = [
    (0x2, 2), (0x1b, 5), (0x48, 7), (0x6c, 7),
    (0xa1, 8), (0x11, 8), (0x10, 7), (0x3f, 6),
    (0x15, 5), (0x34, 7), (0x69, 7), (0xb, 7),
    (0x13, 7), (0x2d, 6), (0x39, 8), (0xac, 9),
    (0x25, 7), (0x58, 9), (0x1f0, 9), (0x1f8, 9),
    (0x1dd, 10), (0x3f3, 10), (0x22b, 10), (0x323, 10),
    (0xf4, 9), (0x18d, 10), (0xab, 10), (0x363, 10),
    (0x1eb, 10), (0x43, 8), (0x4f, 9), (0xd4, 8),
    (0x37, 6), (0xd3, 10), (0x44, 9), (0x2cd, 10),
    (0x3c5, 10), (0x3f9, 10), (0x30d, 10), (0x3cd, 10),
    (0x94, 9), (0x1ac, 10), (0x33, 10), (0x14, 10),
    (0x271, 10), (0x2f0, 10), (0x1f4, 9), (0x78, 8),
    (0x27, 7), (0xc3, 8), (0xef, 8), (0x197, 9),
    (0x53, 8), (0xb1, 8), (0xd, 9), (0x161, 9),
    (0x7, 9), (0xf1, 9), (0x199, 9), (0x191, 10),
    (0x123, 10), (0xbc, 9), (0x144, 9), (0x1f3, 10),
    (0xcf, 8), (0x50, 7), (0x7c, 7), (0x4, 7),
    (0x21, 8), (0x51, 8), (0x80, 9), (0x70, 9),
    (0x13d, 9), (0x63, 10), (0x2d7, 10), (0x371, 10),
    (0x19d, 9), (0x2ab, 10), (0x1c7, 10), (0x333, 10),
    (0x12c, 9), (0x9d, 10), (0x16b, 10), (0x36b, 10),
    (0x1d3, 10), (0x171, 10), (0x1e3, 10), (0x233, 10),
    (0xd7, 10), (0x2cb, 10), (0x170, 9), (0xa8, 9),
    (0xc7, 9), (0x105, 9), (0xeb, 9), (0xd8, 8),
    (0xf3, 9), (0x3c, 8), (0x1ab, 9), (0x18f, 9),
    (0x97, 9), (0x30, 7), (0x41, 8), (0x14f, 9),
    (0x1c, 6), (0x28, 8), (0xbd, 9), (0xc4, 9),
    (0x98, 8), (0x8f, 9), (0xc, 8), (0xb3, 8),
    (0x85, 8), (0x8c, 8), (0x47, 8), (0x79, 8),
    (0x59, 7), (0x40, 7), (0x17, 8), (0x19, 8),
    (0x4b, 8), (0xe1, 8), (0xa3, 8), (0x73, 8),
    (0x6f, 8), (0x68, 7), (0x8, 7), (0x65, 7),
    (0x1f, 6), (0x29, 7), (0x4c, 7), (0x7d, 7),
    (0xf, 8), (0x83, 8), (0x1, 8), (0x87, 8),
    (0x67, 8), (0xe7, 8), (0x57, 8), (0x74, 8),
    (0x1cb, 9), (0x1c4, 9), (0x81, 9), (0x4d, 9),
    (0x131, 9), (0x163, 10), (0x180, 9), (0x3d7, 10),
    (0x2b, 10), (0x145, 10), (0x6b, 10), (0x3d, 10),
    (0x32b, 10), (0xf9, 10), (0xe3, 10), (0x245, 10),
    (0x12b, 10), (0x31, 10), (0x3eb, 10), (0x1b9, 10),
    (0x114, 9), (0x1f9, 10), (0x133, 10), (0x2c, 10),
    (0x2dd, 10), (0x1c1, 10), (0x31d, 10), (0x1d1, 10),
    (0x138, 9), (0x61, 10), (0x2e3, 10), (0x345, 10),
    (0x26b, 10), (0xcd, 10), (0xcb, 10), (0x14d, 10),
    (0x38, 9), (0x3c1, 10), (0x23d, 10), (0x3bc, 10),
    (0xc5, 10), (0x3ac, 10), (0x3e3, 10), (0x299, 10),
    (0x3d3, 10), (0x214, 10), (0x203, 10), (0x1bc, 10),
    (0x29d, 10), (0x381, 10), (0x263, 10), (0x8d, 10),
    (0x54, 8), (0x103, 9), (0x5d, 8), (0x20, 6),
    (0x9, 7), (0x3c7, 10), (0x307, 10), (0xb8, 8),
    (0x1f1, 9), (0x22c, 10), (0x45, 10), (0x3, 10),
    (0x11d, 10), (0x1c5, 10), (0x34d, 10), (0x1d, 10),
    (0x0, 9), (0x3b9, 10), (0xdd, 10), (0x181, 10),
    (0x10d, 10), (0xb9, 10), (0x1cd, 10), (0x394, 10),
    (0x1bd, 10), (0x194, 10), (0x38d, 10), (0x158, 10),
    (0x3bd, 10), (0xc1, 10), (0x3dd, 10), (0xf8, 10),
    (0xd1, 9), (0x91, 9), (0x99, 10), (0x2f8, 10),
    (0x23, 10), (0x71, 10), (0x2d3, 10), (0x391, 10),
    (0x49, 7), (0x231, 10), (0x107, 10), (0x261, 10),
    (0x223, 10), (0x18, 8), (0x205, 10), (0x2c1, 10),
    (0x1d7, 10), (0xf0, 10), (0x2c5, 10), (0x300, 10),
    (0x3d1, 10), (0x3a8, 10), (0x21d, 10), (0x500, 11),
    (0x5, 10), (0x358, 10), (0x2f9, 10), (0x1a8, 10),
    (0x2b9, 10), (0x28d, 10), (0x2f, 7), (0x24, 6),
];

#[cfg(test)]
mod tests;
