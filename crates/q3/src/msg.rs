//! The engine's message bit stream (msg.c).
//!
//! A [`Reader`] / [`Writer`] is in one of two modes, like the engine's
//! `msg_t`: OOB mode moves whole little-endian bytes (8/16/32 bits); the
//! normal (bitstream) mode writes the low `bits & 7` bits of a value raw,
//! LSB-first, then each remaining whole byte of it as a code of the fixed
//! [`MsgCoder`]. Netchan headers are OOB; message bodies are bitstream.
//! Both move whole 64-bit words ([`crate::bits`]): a read or write of up
//! to 32 bits is one load (and one store), its codes found by table.
//! The delta codecs that read and write through it are [`crate::delta`].
//!
//! Reader errors are values: reading past the end is [`Q3Error::Overrun`].

use crate::huffman::MsgCoder;
use crate::Q3Error;

/// The size limit of a message (`MAX_MSGLEN`).
pub const MAX_MSGLEN: usize = 16384;
/// `MAX_STRING_CHARS`: strings longer than this minus one are cut.
pub const MAX_STRING_CHARS: usize = 1024;
/// `BIG_INFO_STRING`: the limit of a big string (configstrings).
pub const BIG_INFO_STRING: usize = 8192;

/// Reads a message.
pub struct Reader<'a> {
    data: &'a [u8],
    bit: usize,
    oob: bool,
}

impl<'a> Reader<'a> {
    /// A bitstream reader of `data` from its start.
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader {
            data,
            bit: 0,
            oob: false,
        }
    }

    /// A reader in OOB (whole bytes) mode.
    pub fn new_oob(data: &'a [u8]) -> Reader<'a> {
        Reader {
            data,
            bit: 0,
            oob: true,
        }
    }

    /// Switch to bitstream mode at the current position (`MSG_Bitstream`).
    pub fn bitstream(&mut self) {
        self.oob = false;
    }

    /// The current position in bits.
    pub fn bit(&self) -> usize {
        self.bit
    }

    /// The bytes consumed so far (the engine's `readcount`).
    pub fn read_count(&self) -> usize {
        if self.oob {
            self.bit >> 3
        } else {
            (self.bit >> 3) + 1
        }
    }

    /// Whether every bit has been consumed.
    pub fn at_end(&self) -> bool {
        self.bit >= self.data.len() * 8
    }

    /// Read `bits` (1..=32) bits as an unsigned value.
    #[inline]
    pub fn read_bits(&mut self, bits: u32) -> Result<u32, Q3Error> {
        if bits == 0 || bits > 32 {
            return Err(Q3Error::Malformed("bad bit count"));
        }
        let limit = self.data.len() * 8;
        if self.oob {
            let n = (bits >> 3) as usize;
            let at = self.bit >> 3;
            if bits & 7 != 0 || !matches!(n, 1 | 2 | 4) {
                return Err(Q3Error::Malformed("OOB reads are 8, 16 or 32 bits"));
            }
            let bytes = self.data.get(at..at + n).ok_or(Q3Error::Overrun)?;
            let mut v = 0u32;
            for (i, b) in bytes.iter().enumerate() {
                v |= u32::from(*b) << (8 * i);
            }
            self.bit += 8 * n;
            return Ok(v);
        }
        // One load of the next 64 bits serves the raw bits (at most 7) and
        // up to four codes (at most 11 bits each).
        let nbits = bits & 7;
        let mut pos = self.bit + nbits as usize;
        if pos > limit {
            return Err(Q3Error::Overrun);
        }
        let mut window = crate::bits::peek(self.data, self.bit);
        let mut value = (window & ((1 << nbits) - 1)) as u32;
        window >>= nbits;
        let coder = MsgCoder::get();
        let mut shift = nbits;
        while shift < bits {
            let (sym, len) = coder.lookup(window);
            let end = pos + len as usize;
            if end > limit || sym.is_none() {
                self.bit = pos;
                return Err(if end > limit {
                    Q3Error::Overrun
                } else {
                    Q3Error::BadCode
                });
            }
            value |= u32::from(sym.unwrap_or(0)) << shift;
            window >>= len;
            pos = end;
            shift += 8;
        }
        self.bit = pos;
        Ok(value)
    }

    /// Read `bits` bits and sign-extend them (the engine's negative `bits`).
    pub fn read_signed(&mut self, bits: u32) -> Result<i32, Q3Error> {
        let v = self.read_bits(bits)?;
        if bits < 32 && v & (1 << (bits - 1)) != 0 {
            Ok((v | !((1u32 << bits) - 1)) as i32)
        } else {
            Ok(v as i32)
        }
    }

    /// One unsigned byte.
    #[inline]
    pub fn read_byte(&mut self) -> Result<u8, Q3Error> {
        Ok(self.read_bits(8)? as u8)
    }

    /// A signed 16-bit value.
    pub fn read_short(&mut self) -> Result<i32, Q3Error> {
        Ok(i32::from(self.read_bits(16)? as u16 as i16))
    }

    /// A 32-bit value.
    pub fn read_long(&mut self) -> Result<i32, Q3Error> {
        Ok(self.read_bits(32)? as i32)
    }

    /// A float sent as its bit pattern.
    pub fn read_float(&mut self) -> Result<f32, Q3Error> {
        Ok(f32::from_bits(self.read_bits(32)?))
    }

    fn read_string_max(&mut self, cap: usize) -> Result<String, Q3Error> {
        let mut s = String::new();
        loop {
            let c = self.read_byte()?;
            if c == 0 {
                break;
            }
            let c = if c == b'%' || c > 127 { b'.' } else { c };
            // Like the engine: stop reading once the buffer is full.
            if s.len() >= cap - 1 {
                break;
            }
            s.push(char::from(c));
        }
        Ok(s)
    }

    /// A NUL-ended string (at most `MAX_STRING_CHARS - 1` kept; `%` and
    /// bytes above 127 become `.`).
    pub fn read_string(&mut self) -> Result<String, Q3Error> {
        self.read_string_max(MAX_STRING_CHARS)
    }

    /// A NUL-ended string of up to `BIG_INFO_STRING - 1` bytes.
    pub fn read_big_string(&mut self) -> Result<String, Q3Error> {
        self.read_string_max(BIG_INFO_STRING)
    }

    /// `len` bytes.
    pub fn read_data(&mut self, len: usize) -> Result<Vec<u8>, Q3Error> {
        if len > self.data.len() {
            return Err(Q3Error::Overrun);
        }
        (0..len).map(|_| self.read_byte()).collect()
    }
}

/// Writes a message, into a buffer it owns or one lent to it
/// ([`Writer::reuse`]) to save an allocation per message.
#[derive(Default)]
pub struct Writer {
    /// The bytes written; in bitstream mode every bit from `bit` on is
    /// zero, and there may be zero bytes past the message's end.
    data: Vec<u8>,
    bit: usize,
    oob: bool,
}

impl Writer {
    /// An empty bitstream writer.
    pub fn new() -> Writer {
        Writer::default()
    }

    /// An empty OOB (whole bytes) writer.
    pub fn new_oob() -> Writer {
        Writer {
            oob: true,
            ..Writer::default()
        }
    }

    /// An empty bitstream writer over `buf`'s allocation (its contents are
    /// dropped); [`Writer::into_bytes`] gives it back.
    pub fn reuse(mut buf: Vec<u8>) -> Writer {
        buf.clear();
        Writer {
            data: buf,
            ..Writer::default()
        }
    }

    /// The engine's `cursize`: whole bytes in OOB mode; in bitstream mode
    /// one byte past the byte holding the last bit (none if empty).
    fn cursize(&self) -> usize {
        if self.oob {
            self.bit >> 3
        } else if self.bit == 0 {
            0
        } else {
            (self.bit >> 3) + 1
        }
    }

    /// The message so far (the engine's `cursize` bytes).
    pub fn as_bytes(&self) -> &[u8] {
        &self.data[..self.cursize()]
    }

    /// The message, consumed.
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.data.truncate(self.cursize());
        self.data
    }

    /// Write the low `bits` (1..=32) bits of `value`.
    ///
    /// # Panics
    /// On a bit count outside 1..=32, or one other than 8/16/32 in OOB mode
    /// (a programming error, never data-dependent).
    #[inline]
    pub fn write_bits(&mut self, value: i32, bits: u32) {
        assert!((1..=32).contains(&bits), "bad bit count {bits}");
        let value = value as u32;
        if self.oob {
            assert!(
                matches!(bits, 8 | 16 | 32),
                "OOB writes are 8, 16 or 32 bits"
            );
            self.data.truncate(self.bit >> 3);
            self.data
                .extend_from_slice(&value.to_le_bytes()[..(bits / 8) as usize]);
            self.bit += bits as usize;
            return;
        }
        // The low `bits & 7` bits raw, then each whole byte's code, gathered
        // in one word (at most 7 + 4 * 11 bits) and written at once.
        let nbits = bits & 7;
        let mut word = u64::from(value) & ((1 << nbits) - 1);
        let mut n = nbits;
        let coder = MsgCoder::get();
        let mut shift = nbits;
        while shift < bits {
            let (code, len) = coder.code((value >> shift) as u8);
            word |= code << n;
            n += len;
            shift += 8;
        }
        crate::bits::put(&mut self.data, self.bit, word, n);
        self.bit += n as usize;
    }

    /// One byte.
    #[inline]
    pub fn write_byte(&mut self, c: u8) {
        self.write_bits(i32::from(c), 8);
    }

    /// A 16-bit value.
    pub fn write_short(&mut self, c: i32) {
        self.write_bits(c, 16);
    }

    /// A 32-bit value.
    pub fn write_long(&mut self, c: i32) {
        self.write_bits(c, 32);
    }

    /// A float as its bit pattern.
    pub fn write_float(&mut self, f: f32) {
        self.write_bits(f.to_bits() as i32, 32);
    }

    /// Bytes.
    pub fn write_data(&mut self, data: &[u8]) {
        for &b in data {
            self.write_byte(b);
        }
    }

    fn write_string_max(&mut self, s: &str, cap: usize) {
        if s.len() >= cap {
            // The engine sends an empty string instead.
            self.write_byte(0);
            return;
        }
        for &b in s.as_bytes() {
            self.write_byte(if b > 127 || b == b'%' { b'.' } else { b });
        }
        self.write_byte(0);
    }

    /// A NUL-ended string (`%` and bytes above 127 become `.`; one of
    /// `MAX_STRING_CHARS` or more is sent empty, like the engine does).
    pub fn write_string(&mut self, s: &str) {
        self.write_string_max(s, MAX_STRING_CHARS);
    }

    /// A NUL-ended string of up to `BIG_INFO_STRING - 1` bytes.
    pub fn write_big_string(&mut self, s: &str) {
        self.write_string_max(s, BIG_INFO_STRING);
    }
}

#[cfg(test)]
mod tests;
