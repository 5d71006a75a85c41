//! The engine's variable-length integers and message packer
//! (src/engine/shared/compression.cpp `CVariableInt`, packer.cpp
//! `CPacker`/`CUnpacker`).
//!
//! An int is packed as `ESDDDDDD EDDDDDDD ...`: E extends to another byte,
//! S is the sign (the value is stored as `!v` when negative), the first
//! byte carries 6 data bits, each following byte 7, at most 5 bytes. A
//! string is its bytes and a NUL. Snapshot deltas are arrays of such ints.
//!
//! What it does not do: allocate per value. The [`Packer`] appends to a
//! caller's `Vec`; the [`Unpacker`] borrows the message and returns
//! slices into it (a string is bounded by the message it is in, at most a
//! packet payload).
//!
//! Order: `Packer::new(&mut buf)` then `int`/`string`/`raw`; or
//! `Unpacker::new(bytes)` then `int`/`string`/`raw`, each an `Err` past
//! the end.

use crate::Tw7Error;

/// The most bytes one packed int takes.
pub const MAX_INT_BYTES: usize = 5;

/// Append `v` packed to `out`.
pub fn pack_int(out: &mut Vec<u8>, v: i32) {
    let sign = if v < 0 { 0x40u8 } else { 0 };
    let mut u = (v ^ (v >> 31)) as u32;
    let mut b = sign | (u & 0x3f) as u8;
    u >>= 6;
    while u != 0 {
        out.push(b | 0x80);
        b = (u & 0x7f) as u8;
        u >>= 7;
    }
    out.push(b);
}

/// Unpack one int from the front of `data`: the value and the bytes used.
pub fn unpack_int(data: &[u8]) -> Result<(i32, usize), Tw7Error> {
    let first = *data.first().ok_or(Tw7Error::Truncated("int"))?;
    let sign = (first >> 6) & 1;
    let mut v = u32::from(first & 0x3f);
    let mut used = 1;
    let mut b = first;
    let mut shift = 6;
    while b & 0x80 != 0 && used < MAX_INT_BYTES {
        b = *data.get(used).ok_or(Tw7Error::Truncated("int"))?;
        v |= u32::from(b & 0x7f).wrapping_shl(shift);
        shift += 7;
        used += 1;
    }
    let v = v as i32;
    Ok((if sign == 1 { !v } else { v }, used))
}

/// Appends a message's fields to a caller's buffer.
pub struct Packer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Packer<'a> {
    /// A packer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Packer<'a> {
        Packer { out }
    }

    /// Append an int.
    pub fn int(&mut self, v: i32) -> &mut Self {
        pack_int(self.out, v);
        self
    }

    /// Append a string, cut to at most `limit` bytes (at a character
    /// boundary) with NUL bytes removed, then its terminating NUL.
    pub fn string(&mut self, s: &str, limit: usize) -> &mut Self {
        let mut end = s.len().min(limit);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.out
            .extend(s.as_bytes()[..end].iter().filter(|&&b| b != 0));
        self.out.push(0);
        self
    }

    /// Append raw bytes.
    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.out.extend_from_slice(b);
        self
    }
}

/// Reads a message's fields.
pub struct Unpacker<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Unpacker<'a> {
    /// An unpacker over `data`.
    pub fn new(data: &'a [u8]) -> Unpacker<'a> {
        Unpacker { data, pos: 0 }
    }

    /// The next int.
    pub fn int(&mut self) -> Result<i32, Tw7Error> {
        let (v, n) = unpack_int(&self.data[self.pos..])?;
        self.pos += n;
        Ok(v)
    }

    /// The next string's bytes, without its NUL (the engine's `GetString`
    /// fails if no NUL ends it).
    pub fn string(&mut self) -> Result<&'a [u8], Tw7Error> {
        let rest = &self.data[self.pos..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(Tw7Error::Truncated("string"))?;
        self.pos += end + 1;
        Ok(&rest[..end])
    }

    /// The next `n` raw bytes.
    pub fn raw(&mut self, n: usize) -> Result<&'a [u8], Tw7Error> {
        let rest = &self.data[self.pos..];
        if n > rest.len() {
            return Err(Tw7Error::Truncated("raw bytes"));
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }
}

/// Unpack a whole buffer of packed ints into `out` (cleared first), at most
/// `max` of them (`CVariableInt::Decompress`).
pub fn unpack_ints(data: &[u8], out: &mut Vec<i32>, max: usize) -> Result<(), Tw7Error> {
    out.clear();
    let mut pos = 0;
    while pos < data.len() {
        if out.len() >= max {
            return Err(Tw7Error::TooLarge {
                what: "snapshot delta",
                size: out.len() + 1,
                limit: max,
            });
        }
        let (v, n) = unpack_int(&data[pos..])?;
        out.push(v);
        pos += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn packed(v: i32) -> Vec<u8> {
        let mut b = Vec::new();
        pack_int(&mut b, v);
        b
    }

    /// Values worked by hand from compression.cpp's format comment
    /// (`ESDDDDDD EDDDDDDD`), and the ones libtw2 doc/int.md lists.
    #[test]
    fn known_encodings() {
        assert_eq!(packed(0), [0x00]);
        assert_eq!(packed(1), [0x01]);
        assert_eq!(packed(63), [0x3f]);
        assert_eq!(packed(64), [0x80, 0x01]);
        assert_eq!(packed(-1), [0x40]);
        assert_eq!(packed(-64), [0x7f]);
        assert_eq!(packed(-65), [0xc0, 0x01]);
        // NETMSG_INFO as a system message: (1 << 1) | 1.
        assert_eq!(packed(3), [0x03]);
        assert_eq!(packed(i32::MAX), [0xbf, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(packed(i32::MIN), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    #[test]
    fn truncated_and_overlong() {
        assert!(unpack_int(&[]).is_err());
        assert!(unpack_int(&[0x80]).is_err());
        // A sixth byte is never read (the engine stops after five).
        assert_eq!(
            unpack_int(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).unwrap().1,
            5
        );
    }

    #[test]
    fn strings_are_cut_and_terminated() {
        let mut b = Vec::new();
        Packer::new(&mut b).string("héllo", 2).string("a\0b", 10);
        assert_eq!(b, b"h\0ab\0");
        let mut u = Unpacker::new(&b);
        assert_eq!(u.string().unwrap(), b"h");
        assert_eq!(u.string().unwrap(), b"ab");
        assert!(u.string().is_err());
        assert!(Unpacker::new(b"abc").string().is_err());
    }

    proptest! {
        #[test]
        fn int_round_trip(v in any::<i32>()) {
            let b = packed(v);
            prop_assert!(b.len() <= MAX_INT_BYTES);
            prop_assert_eq!(unpack_int(&b).unwrap(), (v, b.len()));
        }

        #[test]
        fn unpack_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut out = Vec::new();
            let _ = unpack_ints(&data, &mut out, 16);
            let mut u = Unpacker::new(&data);
            let _ = u.int();
            let _ = u.string();
            let _ = u.raw(7);
        }
    }
}
