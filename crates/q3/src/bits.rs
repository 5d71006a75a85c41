//! Word-at-a-time access to an LSB-first bit stream: [`peek`] loads the
//! next 64 bits in one read, [`put`] ORs up to [`PUT_MAX_BITS`] bits in
//! with one read and one write. The message reader and writer ([`crate::msg`])
//! and the message coder's decoder ([`crate::huffman::MsgCoder`]) use them
//! instead of moving one bit at a time.

/// The most bits one [`put`] takes (a window of 64 bits starting up to 7
/// bits into its first byte, and one byte to spare).
pub const PUT_MAX_BITS: u32 = 56;

/// The bits of `data` from bit `bit` on, first in bit 0; bits past the end
/// of `data` read as zero. At least 57 of the 64 are `data`'s own (or the
/// zeros past its end); the top `bit & 7` are zero.
#[inline]
pub fn peek(data: &[u8], bit: usize) -> u64 {
    let byte = bit >> 3;
    let word = match data.get(byte..byte + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => {
            let mut buf = [0u8; 8];
            let rest = data.get(byte..).unwrap_or(&[]);
            buf[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(buf)
        }
    };
    word >> (bit & 7)
}

/// OR the low `n` (at most [`PUT_MAX_BITS`]) bits of `v` into `data` at
/// bit `bit`, growing `data` with zeros so that at least one byte past the
/// last bit written exists. `v` must have no bits at or above `n`; the
/// bits of `data` from `bit` on must be zero (a writer that only appends
/// keeps them so).
#[inline]
pub fn put(data: &mut Vec<u8>, bit: usize, v: u64, n: u32) {
    debug_assert!(n <= PUT_MAX_BITS && v.checked_shr(n).unwrap_or(0) == 0);
    let byte = bit >> 3;
    if data.len() < byte + 8 {
        data.resize(byte + 16, 0);
    }
    let b = &mut data[byte..byte + 8];
    let word = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    b.copy_from_slice(&(word | v << (bit & 7)).to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_reads_lsb_first_across_bytes_and_zeros_past_the_end() {
        let d = [0b1010_0000u8, 0xFF, 0x01];
        assert_eq!(peek(&d, 5) & 0b111, 0b101);
        assert_eq!(peek(&d, 5), 0b1111_1111_1101);
        assert_eq!(peek(&d, 24), 0);
        assert_eq!(peek(&d, 1000), 0);
        let long: Vec<u8> = (1..=12).collect();
        assert_eq!(peek(&long, 8), u64::from_le_bytes([2, 3, 4, 5, 6, 7, 8, 9]));
        assert_eq!(
            peek(&long, 8 * 7 + 4),
            u64::from_le_bytes([8, 9, 10, 11, 12, 0, 0, 0]) >> 4
        );
    }

    #[test]
    fn put_appends_and_leaves_a_spare_byte() {
        let mut d = Vec::new();
        put(&mut d, 0, 0b101, 3);
        put(&mut d, 3, 0x3F_FFFF_FFFF_FFFF, PUT_MAX_BITS);
        let bit = 3 + PUT_MAX_BITS as usize;
        assert!(d.len() > bit >> 3);
        assert_eq!(peek(&d, 0) & 0b111, 0b101);
        assert_eq!(peek(&d, 3) & ((1 << PUT_MAX_BITS) - 1), 0x3F_FFFF_FFFF_FFFF);
        assert_eq!(peek(&d, bit), 0);
    }
}
