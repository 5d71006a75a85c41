//! tw7 (0.7 protocol) packet and chunk headers (src/engine/shared/network.h,
//! network.cpp; libtw2 doc/packet7.md).
//!
//! ```text
//! packet header, 7 bytes:  ffffffAA AAAAAAAA NNNNNNNN TTTTTTTT x4
//!   f: flags (control 1, resend 2, compression 4, connless 8)
//!   A: ack (10 bits), N: number of chunks, T: token (big-endian)
//! connless header, 9 bytes: ffffffVV then token and response token (BE),
//!   V: version, 1
//! chunk header, 2 or 3 bytes: FFssssss PPssssss [SSSSSSSS]
//!   F: flags (vital 1, resend 2), s: size (12 bits),
//!   P: the high 2 bits of the 10-bit sequence, present if vital
//! ```
//!
//! A control packet's payload is one message byte (keep-alive 0, connect 1,
//! accept 2, close 4, token 5) and its extra bytes: connect and token carry
//! the sender's own 4-byte token (a client pads a token request to 512
//! bytes, `NET_TOKENREQUEST_DATASIZE`, so a spoofed source cannot use the
//! server as an amplifier); close carries a NUL-terminated reason.
//!
//! What it does not do: keep state (sequences, acks, tokens: see
//! [`crate::conn`]), or allocate (everything works on caller slices).
//!
//! Order: [`PacketHeader::decode`] on a datagram, then (for a data packet)
//! [`Chunks`] over the decompressed payload; or `encode` the other way.

use crate::Tw7Error;

/// Bytes of a packet header.
pub const PACKET_HEADER_SIZE: usize = 7;
/// Bytes of a connectionless packet header.
pub const CONNLESS_HEADER_SIZE: usize = 9;
/// The largest datagram (`NET_MAX_PACKETSIZE`).
pub const MAX_PACKET_SIZE: usize = 1400;
/// The largest payload (`NET_MAX_PAYLOAD`).
pub const MAX_PAYLOAD: usize = MAX_PACKET_SIZE - CONNLESS_HEADER_SIZE;
/// The largest chunk header.
pub const MAX_CHUNK_HEADER_SIZE: usize = 3;
/// Sequences wrap here (`NET_MAX_SEQUENCE`).
pub const MAX_SEQUENCE: u16 = 1 << 10;
/// The token of a peer whose token is not known yet.
pub const TOKEN_NONE: u32 = 0xffff_ffff;
/// A token request's and a connect's padded payload after the message
/// byte (`NET_TOKENREQUEST_DATASIZE`).
pub const TOKEN_REQUEST_DATA_SIZE: usize = 512;

/// Packet flag: a control message.
pub const FLAG_CONTROL: u8 = 1;
/// Packet flag: the sender asks for a resend of unacknowledged chunks.
pub const FLAG_RESEND: u8 = 2;
/// Packet flag: the payload is Huffman-compressed.
pub const FLAG_COMPRESSION: u8 = 4;
/// Packet flag: connectionless.
pub const FLAG_CONNLESS: u8 = 8;

/// Chunk flag: reliable, sequenced, acknowledged.
pub const CHUNK_VITAL: u8 = 1;
/// Chunk flag: this is a resend.
pub const CHUNK_RESEND: u8 = 2;

/// Control message: keep-alive.
pub const CTRL_KEEPALIVE: u8 = 0;
/// Control message: connect (client to server, with the client's token).
pub const CTRL_CONNECT: u8 = 1;
/// Control message: connect accepted (server to client).
pub const CTRL_ACCEPT: u8 = 2;
/// Control message: close, with an optional NUL-terminated reason.
pub const CTRL_CLOSE: u8 = 4;
/// Control message: token request or response (`TKEN`).
pub const CTRL_TOKEN: u8 = 5;

/// A (non-connectionless) packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHeader {
    /// `FLAG_*` bits (6 bits).
    pub flags: u8,
    /// The last vital sequence the sender received in order (10 bits).
    pub ack: u16,
    /// Chunks in the payload (0 for control packets).
    pub num_chunks: u8,
    /// The receiver's token.
    pub token: u32,
}

impl PacketHeader {
    /// The 7 header bytes.
    pub fn encode(&self) -> [u8; PACKET_HEADER_SIZE] {
        let t = self.token.to_be_bytes();
        [
            ((self.flags << 2) & 0xfc) | ((self.ack >> 8) as u8 & 0x03),
            self.ack as u8,
            self.num_chunks,
            t[0],
            t[1],
            t[2],
            t[3],
        ]
    }

    /// The header at the front of `datagram`; the payload follows at
    /// [`PACKET_HEADER_SIZE`]. A connectionless header is `Malformed` here
    /// (see [`ConnlessHeader::decode`]).
    pub fn decode(datagram: &[u8]) -> Result<PacketHeader, Tw7Error> {
        if datagram.len() < PACKET_HEADER_SIZE {
            return Err(Tw7Error::Truncated("packet header"));
        }
        if datagram.len() > MAX_PACKET_SIZE {
            return Err(Tw7Error::TooLarge {
                what: "datagram",
                size: datagram.len(),
                limit: MAX_PACKET_SIZE,
            });
        }
        let flags = datagram[0] >> 2;
        if flags & FLAG_CONNLESS != 0 {
            return Err(Tw7Error::Malformed("connectionless packet on a connection"));
        }
        Ok(PacketHeader {
            flags,
            ack: (u16::from(datagram[0] & 0x03) << 8) | u16::from(datagram[1]),
            num_chunks: datagram[2],
            token: u32::from_be_bytes([datagram[3], datagram[4], datagram[5], datagram[6]]),
        })
    }
}

/// A connectionless packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnlessHeader {
    /// The receiver's token.
    pub token: u32,
    /// The sender's token, for the answer.
    pub response_token: u32,
}

impl ConnlessHeader {
    /// The 9 header bytes (flags connless, version 1).
    pub fn encode(&self) -> [u8; CONNLESS_HEADER_SIZE] {
        let t = self.token.to_be_bytes();
        let r = self.response_token.to_be_bytes();
        [
            (FLAG_CONNLESS << 2) | 1,
            t[0],
            t[1],
            t[2],
            t[3],
            r[0],
            r[1],
            r[2],
            r[3],
        ]
    }

    /// The header at the front of `datagram` (version must be 1).
    pub fn decode(datagram: &[u8]) -> Result<ConnlessHeader, Tw7Error> {
        if datagram.len() < CONNLESS_HEADER_SIZE {
            return Err(Tw7Error::Truncated("connectionless header"));
        }
        if (datagram[0] >> 2) & FLAG_CONNLESS == 0 || datagram[0] & 3 != 1 {
            return Err(Tw7Error::Malformed("connectionless header"));
        }
        let be = |i: usize| {
            u32::from_be_bytes([
                datagram[i],
                datagram[i + 1],
                datagram[i + 2],
                datagram[i + 3],
            ])
        };
        Ok(ConnlessHeader {
            token: be(1),
            response_token: be(5),
        })
    }
}

/// A chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// `CHUNK_*` bits.
    pub flags: u8,
    /// Bytes of chunk data (12 bits).
    pub size: u16,
    /// The sequence (10 bits; meaningful only if vital).
    pub sequence: u16,
}

impl ChunkHeader {
    /// Whether the chunk is vital.
    pub fn vital(&self) -> bool {
        self.flags & CHUNK_VITAL != 0
    }

    /// Append the 2 or 3 header bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(((self.flags & 3) << 6) | ((self.size >> 6) as u8 & 0x3f));
        let mut b = (self.size & 0x3f) as u8;
        if self.vital() {
            b |= ((self.sequence >> 2) as u8) & 0xc0;
            out.push(b);
            out.push(self.sequence as u8);
        } else {
            out.push(b);
        }
    }

    /// The header at the front of `data` and its length.
    pub fn decode(data: &[u8]) -> Result<(ChunkHeader, usize), Tw7Error> {
        if data.len() < 2 {
            return Err(Tw7Error::Truncated("chunk header"));
        }
        let flags = (data[0] >> 6) & 3;
        let size = (u16::from(data[0] & 0x3f) << 6) | u16::from(data[1] & 0x3f);
        if flags & CHUNK_VITAL != 0 {
            let s = *data.get(2).ok_or(Tw7Error::Truncated("chunk header"))?;
            let sequence = (u16::from(data[1] & 0xc0) << 2) | u16::from(s);
            Ok((
                ChunkHeader {
                    flags,
                    size,
                    sequence,
                },
                3,
            ))
        } else {
            Ok((
                ChunkHeader {
                    flags,
                    size,
                    sequence: 0,
                },
                2,
            ))
        }
    }
}

/// The chunks of a data packet's (decompressed) payload. Yields `Err` once
/// and stops if a header or a chunk runs past the end.
pub struct Chunks<'a> {
    data: &'a [u8],
    left: u8,
}

impl<'a> Chunks<'a> {
    /// The `num_chunks` chunks in `payload`.
    pub fn new(payload: &'a [u8], num_chunks: u8) -> Chunks<'a> {
        Chunks {
            data: payload,
            left: num_chunks,
        }
    }
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Result<(ChunkHeader, &'a [u8]), Tw7Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let r = ChunkHeader::decode(self.data).and_then(|(h, n)| {
            let end = n + usize::from(h.size);
            if end > self.data.len() {
                return Err(Tw7Error::Truncated("chunk data"));
            }
            let body = &self.data[n..end];
            self.data = &self.data[end..];
            Ok((h, body))
        });
        if r.is_err() {
            self.left = 0;
        }
        Some(r)
    }
}

/// Whether `seq` is at or up to half the sequence space before `ack`
/// (`CNetConnection::IsSeqInBackroom`): already received or acknowledged.
pub fn seq_in_backroom(seq: u16, ack: u16) -> bool {
    let (seq, ack) = (i32::from(seq), i32::from(ack));
    let bottom = ack - i32::from(MAX_SEQUENCE) / 2;
    if bottom < 0 {
        seq <= ack || seq >= bottom + i32::from(MAX_SEQUENCE)
    } else {
        seq <= ack && seq >= bottom
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn header_layout_matches_network_h() {
        let h = PacketHeader {
            flags: FLAG_CONTROL | FLAG_COMPRESSION,
            ack: 0x3ab,
            num_chunks: 7,
            token: 0x1234_5678,
        };
        let b = h.encode();
        assert_eq!(b, [0b0001_0111, 0xab, 7, 0x12, 0x34, 0x56, 0x78]);
        assert_eq!(PacketHeader::decode(&b).unwrap(), h);
        let c = ConnlessHeader {
            token: 1,
            response_token: TOKEN_NONE,
        };
        let b = c.encode();
        assert_eq!(b, [0x21, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(ConnlessHeader::decode(&b).unwrap(), c);
        assert!(PacketHeader::decode(&b).is_err());
    }

    #[test]
    fn chunk_header_layout() {
        let mut b = Vec::new();
        let v = ChunkHeader {
            flags: CHUNK_VITAL,
            size: 0x0abc,
            sequence: 0x3cd,
        };
        v.encode(&mut b);
        assert_eq!(b, [0x40 | 0x2a, 0xc0 | 0x3c, 0xcd]);
        assert_eq!(ChunkHeader::decode(&b).unwrap(), (v, 3));
        b.clear();
        let n = ChunkHeader {
            flags: 0,
            size: 5,
            sequence: 0,
        };
        n.encode(&mut b);
        assert_eq!(b, [0, 5]);
        assert_eq!(ChunkHeader::decode(&b).unwrap(), (n, 2));
    }

    #[test]
    fn backroom() {
        assert!(seq_in_backroom(5, 5));
        assert!(seq_in_backroom(4, 5));
        assert!(!seq_in_backroom(6, 5));
        assert!(seq_in_backroom(1000, 5));
        assert!(!seq_in_backroom(516, 5));
        assert!(seq_in_backroom(517, 5));
        assert!(seq_in_backroom(500, 900));
        assert!(!seq_in_backroom(300, 900));
    }

    #[test]
    fn chunks_stop_at_truncation() {
        let mut p = Vec::new();
        ChunkHeader {
            flags: 0,
            size: 2,
            sequence: 0,
        }
        .encode(&mut p);
        p.extend_from_slice(&[9, 9]);
        ChunkHeader {
            flags: CHUNK_VITAL,
            size: 10,
            sequence: 1,
        }
        .encode(&mut p);
        let v: Vec<_> = Chunks::new(&p, 3).collect();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].as_ref().unwrap().1, &[9, 9]);
        assert!(v[1].is_err());
    }

    proptest! {
        #[test]
        fn chunk_round_trip(vital in any::<bool>(), size in 0u16..4096, seq in 0u16..1024) {
            let h = ChunkHeader { flags: if vital { CHUNK_VITAL } else { 0 }, size, sequence: if vital { seq } else { 0 } };
            let mut b = Vec::new();
            h.encode(&mut b);
            prop_assert_eq!(ChunkHeader::decode(&b).unwrap(), (h, b.len()));
        }

        #[test]
        fn header_round_trip(flags in 0u8..8, ack in 0u16..1024, n in any::<u8>(), token in any::<u32>()) {
            let h = PacketHeader { flags, ack, num_chunks: n, token };
            prop_assert_eq!(PacketHeader::decode(&h.encode()).unwrap(), h);
        }

        #[test]
        fn chunks_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64), n in any::<u8>()) {
            for c in Chunks::new(&data, n) { let _ = c; }
        }
    }
}
