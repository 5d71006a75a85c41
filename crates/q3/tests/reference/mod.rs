//! The plain message coder the fast one must agree with, and its peer in
//! the benchmark: the message coder's tree (rebuilt from `MSG_CODES`),
//! a code sent by climbing from its leaf to the root and decoded by walking
//! down one bit at a time (the engine's `Huff_offsetTransmit` /
//! `Huff_offsetReceive`), over a bit stream written and read one bit at a
//! time (`Huff_putBit` / `Huff_getBit`), as msg.c's `MSG_WriteBits` /
//! `MSG_ReadBits` do.

#![allow(dead_code)]

use tickpack_q3::huffman::MSG_CODES;
use tickpack_q3::Q3Error;

const NONE: u32 = u32::MAX;
/// The leaf no byte has ("not yet transmitted").
const NYT: u16 = 256;
const INTERNAL: u16 = 257;

/// The message coder's tree.
pub struct Tree {
    left: Vec<u32>,
    right: Vec<u32>,
    parent: Vec<u32>,
    symbol: Vec<u16>,
    leaf: [u32; 256],
}

impl Tree {
    /// Each code is the path from the root (first bit first, 0 left, 1
    /// right) to its byte's leaf; the one free child is the NYT leaf.
    pub fn new() -> Tree {
        let mut t = Tree {
            left: vec![NONE],
            right: vec![NONE],
            parent: vec![NONE],
            symbol: vec![INTERNAL],
            leaf: [NONE; 256],
        };
        for (sym, &(bits, len)) in MSG_CODES.iter().enumerate() {
            let mut node = 0u32;
            for k in 0..u32::from(len) {
                let right = (bits >> k) & 1 == 1;
                let next = if right {
                    t.right[node as usize]
                } else {
                    t.left[node as usize]
                };
                node = if next == NONE {
                    t.add(node, right, INTERNAL)
                } else {
                    next
                };
            }
            t.symbol[node as usize] = sym as u16;
            t.leaf[sym] = node;
        }
        for n in 0..t.symbol.len() as u32 {
            if t.symbol[n as usize] == INTERNAL {
                for right in [false, true] {
                    let child = if right {
                        t.right[n as usize]
                    } else {
                        t.left[n as usize]
                    };
                    if child == NONE {
                        t.add(n, right, NYT);
                    }
                }
            }
        }
        t
    }

    fn add(&mut self, parent: u32, right: bool, symbol: u16) -> u32 {
        let n = self.symbol.len() as u32;
        self.left.push(NONE);
        self.right.push(NONE);
        self.parent.push(parent);
        self.symbol.push(symbol);
        if right {
            self.right[parent as usize] = n;
        } else {
            self.left[parent as usize] = n;
        }
        n
    }

    /// Send `sym`'s code: climb to the root, then send the path from the
    /// top down (recursively, as `Huff_offsetTransmit` does).
    fn transmit(&self, sym: u8, out: &mut Bits) {
        self.send_path(self.leaf[sym as usize], out);
    }

    fn send_path(&self, n: u32, out: &mut Bits) {
        let p = self.parent[n as usize];
        if p != NONE {
            self.send_path(p, out);
            out.put(self.right[p as usize] == n);
        }
    }

    /// Walk down from the root one bit at a time to a leaf.
    fn receive(&self, r: &mut RefReader) -> Result<u8, Q3Error> {
        let mut n = 0u32;
        while self.symbol[n as usize] == INTERNAL {
            n = if r.bit()? {
                self.right[n as usize]
            } else {
                self.left[n as usize]
            };
        }
        match self.symbol[n as usize] {
            NYT => Err(Q3Error::BadCode),
            s => Ok(s as u8),
        }
    }
}

/// A bit stream written one bit at a time; each byte is cleared as it is
/// started (`Huff_putBit`).
struct Bits {
    data: Vec<u8>,
    bit: usize,
}

impl Bits {
    fn put(&mut self, b: bool) {
        if self.bit & 7 == 0 {
            self.data.truncate(self.bit >> 3);
            self.data.push(0);
        }
        if b {
            self.data[self.bit >> 3] |= 1 << (self.bit & 7);
        }
        self.bit += 1;
    }
}

/// `MSG_WriteBits` over [`Bits`] and [`Tree`].
pub struct RefWriter<'t> {
    tree: &'t Tree,
    out: Bits,
    oob: bool,
}

impl<'t> RefWriter<'t> {
    /// A bitstream (`oob` false) or OOB writer.
    pub fn new(tree: &'t Tree, oob: bool) -> RefWriter<'t> {
        RefWriter {
            tree,
            out: Bits {
                data: Vec::new(),
                bit: 0,
            },
            oob,
        }
    }

    /// The low `bits` (1..=32) bits of `value`.
    pub fn write_bits(&mut self, value: i32, bits: u32) {
        let mut value = value as u32;
        if self.oob {
            for _ in 0..bits / 8 {
                for i in 0..8 {
                    self.out.put((value >> i) & 1 == 1);
                }
                value >>= 8;
            }
            return;
        }
        if bits < 32 {
            value &= (1 << bits) - 1;
        }
        let nbits = bits & 7;
        for i in 0..nbits {
            self.out.put((value >> i) & 1 == 1);
        }
        value = value.checked_shr(nbits).unwrap_or(0);
        for _ in 0..bits / 8 {
            self.tree.transmit(value as u8, &mut self.out);
            value >>= 8;
        }
    }

    /// The message: `cursize` bytes (bitstream: one byte past the byte of
    /// the last bit).
    pub fn bytes(&self) -> Vec<u8> {
        RefWriter {
            tree: self.tree,
            out: Bits {
                data: self.out.data.clone(),
                bit: self.out.bit,
            },
            oob: self.oob,
        }
        .into_bytes()
    }

    /// The message, consumed.
    pub fn into_bytes(self) -> Vec<u8> {
        let size = match (self.oob, self.out.bit) {
            (true, b) => b >> 3,
            (false, 0) => 0,
            (false, b) => (b >> 3) + 1,
        };
        let mut v = self.out.data;
        v.resize(size, 0);
        v
    }
}

/// `MSG_ReadBits` one bit at a time over [`Tree`].
pub struct RefReader<'a, 't> {
    tree: &'t Tree,
    data: &'a [u8],
    at: usize,
    oob: bool,
}

impl<'a, 't> RefReader<'a, 't> {
    /// A bitstream (`oob` false) or OOB reader of `data`.
    pub fn new(tree: &'t Tree, data: &'a [u8], oob: bool) -> RefReader<'a, 't> {
        RefReader {
            tree,
            data,
            at: 0,
            oob,
        }
    }

    fn bit(&mut self) -> Result<bool, Q3Error> {
        let b = self.data.get(self.at >> 3).ok_or(Q3Error::Overrun)?;
        let v = (b >> (self.at & 7)) & 1 == 1;
        self.at += 1;
        Ok(v)
    }

    /// `bits` (1..=32) bits, unsigned.
    pub fn read_bits(&mut self, bits: u32) -> Result<u32, Q3Error> {
        let mut value = 0u32;
        if self.oob {
            if self.at + bits as usize > self.data.len() * 8 {
                return Err(Q3Error::Overrun);
            }
            for i in 0..bits {
                value |= u32::from(self.bit()?) << i;
            }
            return Ok(value);
        }
        let nbits = bits & 7;
        for i in 0..nbits {
            value |= u32::from(self.bit()?) << i;
        }
        for k in 0..bits / 8 {
            let tree = self.tree;
            value |= u32::from(tree.receive(self)?) << (nbits + 8 * k);
        }
        Ok(value)
    }
}

/// The coder main had before the word-at-a-time one (commit 29e454b),
/// bitstream mode only: bits written a byte's worth at a time, raw bits
/// read one at a time, each code found by a table lookup on three bytes
/// loaded one by one. The benchmark's second peer.
pub mod prev {
    use tickpack_q3::huffman::MsgCoder;
    use tickpack_q3::Q3Error;

    /// The previous `msg::Writer`, bitstream mode.
    #[derive(Default)]
    pub struct PrevWriter {
        data: Vec<u8>,
        bit: usize,
        cursize: usize,
    }

    impl PrevWriter {
        fn put_bits(&mut self, mut v: u64, mut n: u32) {
            while n > 0 {
                let off = (self.bit & 7) as u32;
                if off == 0 {
                    self.data.truncate(self.bit >> 3);
                    self.data.push(0);
                }
                let take = (8 - off).min(n);
                self.data[self.bit >> 3] |= ((v & ((1 << take) - 1)) as u8) << off;
                v >>= take;
                n -= take;
                self.bit += take as usize;
            }
        }

        /// The low `bits` (1..=32) bits of `value`.
        pub fn write_bits(&mut self, value: i32, bits: u32) {
            let mut value = value as u32;
            if bits < 32 {
                value &= (1u32 << bits) - 1;
            }
            let nbits = bits & 7;
            self.put_bits(u64::from(value), nbits);
            value = value.checked_shr(nbits).unwrap_or(0);
            let coder = MsgCoder::get();
            for _ in 0..(bits - nbits) / 8 {
                let (code, len) = coder.code(value as u8);
                self.put_bits(code, len);
                value >>= 8;
            }
            self.cursize = (self.bit >> 3) + 1;
            if self.data.len() < self.cursize {
                self.data.resize(self.cursize, 0);
            }
        }

        /// The message, consumed.
        pub fn into_bytes(mut self) -> Vec<u8> {
            self.data.truncate(self.cursize);
            self.data
        }
    }

    /// The previous `MsgCoder::decode`: three bytes loaded one by one.
    fn decode(data: &[u8], bit: usize, limit: usize) -> Result<(u8, usize), Q3Error> {
        let byte = bit >> 3;
        let mut w = 0u32;
        for k in 0..3 {
            if let Some(&b) = data.get(byte + k) {
                w |= u32::from(b) << (8 * k);
            }
        }
        let (sym, len) = MsgCoder::get().lookup(u64::from(w >> (bit & 7)));
        let end = bit + len as usize;
        if end > limit {
            return Err(Q3Error::Overrun);
        }
        Ok((sym.ok_or(Q3Error::BadCode)?, end))
    }

    /// The previous `msg::Reader`, bitstream mode.
    pub struct PrevReader<'a> {
        data: &'a [u8],
        bit: usize,
    }

    impl<'a> PrevReader<'a> {
        /// A reader of `data` from its start.
        pub fn new(data: &'a [u8]) -> PrevReader<'a> {
            PrevReader { data, bit: 0 }
        }

        /// `bits` (1..=32) bits, unsigned.
        pub fn read_bits(&mut self, bits: u32) -> Result<u32, Q3Error> {
            let limit = self.data.len() * 8;
            let mut value = 0u32;
            let nbits = bits & 7;
            if nbits != 0 {
                if self.bit + nbits as usize > limit {
                    return Err(Q3Error::Overrun);
                }
                for i in 0..nbits {
                    let b = (self.data[self.bit >> 3] >> (self.bit & 7)) & 1;
                    value |= u32::from(b) << i;
                    self.bit += 1;
                }
            }
            let mut i = 0;
            while i < bits - nbits {
                let (sym, next) = decode(self.data, self.bit, limit)?;
                value |= u32::from(sym) << (i + nbits);
                self.bit = next;
                i += 8;
            }
            Ok(value)
        }
    }
}
