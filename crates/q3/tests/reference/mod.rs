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
    /// top down.
    fn transmit(&self, sym: u8, out: &mut Bits) {
        let mut path = Vec::new();
        let mut n = self.leaf[sym as usize];
        while self.parent[n as usize] != NONE {
            let p = self.parent[n as usize];
            path.push(self.right[p as usize] == n);
            n = p;
        }
        for &b in path.iter().rev() {
            out.put(b);
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
        let size = match (self.oob, self.out.bit) {
            (true, b) => b >> 3,
            (false, 0) => 0,
            (false, b) => (b >> 3) + 1,
        };
        let mut v = self.out.data.clone();
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
