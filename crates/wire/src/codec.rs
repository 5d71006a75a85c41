//! Bounds-checked little-endian reader and writer. Never trusts a length.

use thiserror::Error;

/// Why a datagram could not be decoded. Servers count these and drop the
/// datagram; they never log one per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("datagram ends early: needed {needed} more bytes at offset {at}")]
    Truncated { at: usize, needed: usize },
    #[error("not a tickpack or A2S datagram (bad magic)")]
    BadMagic,
    #[error("unknown packet kind 0x{0:02x}")]
    UnknownKind(u8),
    #[error("field `{0}` has an invalid value")]
    Invalid(&'static str),
    #[error("packet shorter than its minimum of {min} bytes")]
    TooShort { min: usize },
}

pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated {
                at: self.pos,
                needed: n - self.remaining(),
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub(crate) fn f32(&mut self) -> Result<f32, DecodeError> {
        let v = f32::from_le_bytes(self.array()?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(DecodeError::Invalid("float"))
        }
    }
    /// A C string (NUL-terminated), as A2S uses.
    pub(crate) fn cstr(&mut self) -> Result<&'a [u8], DecodeError> {
        let rest = &self.buf[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                self.pos += n + 1;
                Ok(&rest[..n])
            }
            None => Err(DecodeError::Truncated {
                at: self.buf.len(),
                needed: 1,
            }),
        }
    }
}

pub(crate) struct Writer<'a> {
    pub(crate) out: &'a mut Vec<u8>,
}

impl Writer<'_> {
    pub(crate) fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    pub(crate) fn u16(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn f32(&mut self, v: f32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn bytes(&mut self, v: &[u8]) {
        self.out.extend_from_slice(v);
    }
    pub(crate) fn cstr(&mut self, v: &str) {
        self.out
            .extend(v.bytes().filter(|&b| b != 0).take(u16::MAX as usize));
        self.out.push(0);
    }
    /// Pads with zeros until the datagram that started at `start` is `len` long.
    pub(crate) fn pad_to(&mut self, start: usize, len: usize) {
        let have = self.out.len() - start;
        if have < len {
            self.out.resize(start + len, 0);
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char
/// boundary (names and A2S strings are clipped, never split mid-character).
pub(crate) fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
