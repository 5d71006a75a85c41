//! The client side of the engine's sequenced channel (net_chan.c,
//! cl_net_chan.c), sans-I/O.
//!
//! Client → server datagram: `sequence:i32le`, `qport:u16le`, then (modern
//! mode only) `checksum:i32le` = [`checksum`]`(challenge, sequence)`, then
//! the message. Server → client: `sequence`, (modern mode) `checksum`, the
//! message. A fragment sets [`FRAGMENT_BIT`] in the sequence and carries
//! `start:u16le` and `length:u16le` after the header; a fragment shorter
//! than [`FRAGMENT_SIZE`] ends the message.
//!
//! Legacy ("compat") mode is what a server whose `com_legacyprotocol`
//! equals the protocol the client announces speaks (Debian's packaged
//! ioquake3 game server sets both to 71): no checksum, and message bodies are XORed with
//! a rolling key ([`legacy_encode`], [`legacy_decode`]).
//!
//! Outgoing fragmentation is not implemented: a client message of
//! [`FRAGMENT_SIZE`] bytes or more is refused with [`Q3Error::TooLarge`]
//! (the engine's client messages are far smaller).

use crate::msg::MAX_MSGLEN;
use crate::Q3Error;

/// `MAX_PACKETLEN`.
pub const MAX_PACKETLEN: usize = 1400;
/// The payload size of every fragment but the last.
pub const FRAGMENT_SIZE: usize = MAX_PACKETLEN - 100;
/// Set in the sequence of a fragment.
pub const FRAGMENT_BIT: u32 = 1 << 31;
/// Where the legacy XOR starts in a client message (after serverId,
/// messageAcknowledge, reliableAcknowledge).
pub const CL_ENCODE_START: usize = 12;
/// Where the legacy XOR starts in a server message, after its
/// reliableAcknowledge (relative to the message body).
pub const CL_DECODE_START: usize = 4;

/// `NETCHAN_GENCHECKSUM`: the anti-spoofing word of modern mode.
pub fn checksum(challenge: i32, sequence: i32) -> i32 {
    challenge ^ sequence.wrapping_mul(challenge)
}

/// One side of a channel, from the client's point of view.
#[derive(Debug, Clone)]
pub struct Netchan {
    qport: u16,
    challenge: i32,
    legacy: bool,
    outgoing_sequence: i32,
    incoming_sequence: i32,
    dropped: i32,
    dropped_total: u64,
    fragment_sequence: i32,
    fragment_buffer: Vec<u8>,
}

impl Netchan {
    /// A channel set up after `connectResponse` (`Netchan_Setup`):
    /// outgoing sequence 1, incoming 0.
    pub fn new(qport: u16, challenge: i32, legacy: bool) -> Netchan {
        Netchan {
            qport,
            challenge,
            legacy,
            outgoing_sequence: 1,
            incoming_sequence: 0,
            dropped: 0,
            dropped_total: 0,
            fragment_sequence: 0,
            fragment_buffer: Vec::new(),
        }
    }

    /// The sequence the next outgoing datagram gets.
    pub fn outgoing_sequence(&self) -> i32 {
        self.outgoing_sequence
    }

    /// The sequence of the last accepted incoming message.
    pub fn incoming_sequence(&self) -> i32 {
        self.incoming_sequence
    }

    /// How many server datagrams were skipped before the last accepted one.
    pub fn dropped(&self) -> i32 {
        self.dropped
    }

    /// Skipped server datagrams over the channel's life.
    pub fn dropped_total(&self) -> u64 {
        self.dropped_total
    }

    /// The datagram carrying `message` (`Netchan_Transmit`); the outgoing
    /// sequence advances.
    pub fn transmit(&mut self, message: &[u8]) -> Result<Vec<u8>, Q3Error> {
        let mut out = Vec::with_capacity(10 + message.len());
        self.transmit_into(message, &mut out)?;
        Ok(out)
    }

    /// [`Netchan::transmit`] into `out` (cleared first; its allocation is
    /// kept, so a caller reusing one buffer allocates nothing).
    pub fn transmit_into(&mut self, message: &[u8], out: &mut Vec<u8>) -> Result<(), Q3Error> {
        if message.len() >= FRAGMENT_SIZE {
            return Err(Q3Error::TooLarge(message.len()));
        }
        out.clear();
        out.extend_from_slice(&self.outgoing_sequence.to_le_bytes());
        out.extend_from_slice(&self.qport.to_le_bytes());
        if !self.legacy {
            out.extend_from_slice(&checksum(self.challenge, self.outgoing_sequence).to_le_bytes());
        }
        out.extend_from_slice(message);
        self.outgoing_sequence = self.outgoing_sequence.wrapping_add(1);
        Ok(())
    }

    /// Accept a server datagram (`Netchan_Process`). On a complete message,
    /// `out` holds its body (after the header: the bytes the engine reads
    /// from `readcount` on) and its sequence is returned. `None` for a
    /// datagram the engine ignores: duplicate or out of order, a bad
    /// checksum, a fragment that is not the last or does not follow on.
    pub fn process(&mut self, datagram: &[u8], out: &mut Vec<u8>) -> Result<Option<i32>, Q3Error> {
        let word = |at: usize| -> Result<u32, Q3Error> {
            datagram
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or(Q3Error::Overrun)
        };
        let raw = word(0)?;
        let fragmented = raw & FRAGMENT_BIT != 0;
        let sequence = (raw & !FRAGMENT_BIT) as i32;
        let mut at = 4;
        if !self.legacy {
            let sum = word(4)? as i32;
            at = 8;
            if checksum(self.challenge, sequence) != sum {
                return Ok(None);
            }
        }
        let (mut start, mut length) = (0, 0);
        if fragmented {
            let b = datagram.get(at..at + 4).ok_or(Q3Error::Overrun)?;
            start = usize::from(u16::from_le_bytes([b[0], b[1]]));
            length = usize::from(u16::from_le_bytes([b[2], b[3]]));
            at += 4;
        }
        if sequence <= self.incoming_sequence {
            return Ok(None);
        }
        self.dropped = sequence - (self.incoming_sequence + 1);
        if fragmented {
            if sequence != self.fragment_sequence {
                self.fragment_sequence = sequence;
                self.fragment_buffer.clear();
            }
            if start != self.fragment_buffer.len() {
                return Ok(None);
            }
            if at + length > datagram.len() || self.fragment_buffer.len() + length > MAX_MSGLEN {
                return Ok(None);
            }
            self.fragment_buffer
                .extend_from_slice(&datagram[at..at + length]);
            if length == FRAGMENT_SIZE {
                return Ok(None);
            }
            out.clear();
            out.extend_from_slice(&self.fragment_buffer);
            self.fragment_buffer.clear();
        } else {
            out.clear();
            out.extend_from_slice(&datagram[at..]);
        }
        self.dropped_total += self.dropped.max(0) as u64;
        self.incoming_sequence = sequence;
        Ok(Some(sequence))
    }
}

/// XOR `data[start..]` with the engine's rolling key: the key starts as
/// `key` and before each byte `i` is XORed with the next byte of `string`
/// (cycled; `%` and bytes above 127 count as `.`) shifted left by `i & 1`.
/// `parity` is added to `i` for the shift (the engine counts from the start
/// of its buffer).
fn legacy_xor(data: &mut [u8], start: usize, mut key: u8, string: &[u8]) {
    let mut index = 0;
    for (i, b) in data.iter_mut().enumerate().skip(start) {
        if index >= string.len() || string[index] == 0 {
            index = 0;
        }
        let c = string.get(index).copied().unwrap_or(0);
        let c = if c > 127 || c == b'%' { b'.' } else { c };
        key ^= ((u32::from(c)) << (i & 1)) as u8;
        index += 1;
        *b ^= key;
    }
}

/// Legacy-encode a client message in place (`CL_Netchan_Encode`):
/// `server_id`, `message_acknowledge` are the message's first two longs and
/// `last_server_command` the text of the server command its third long
/// (the reliable acknowledge) names.
pub fn legacy_encode(
    message: &mut [u8],
    challenge: i32,
    server_id: i32,
    message_acknowledge: i32,
    last_server_command: &[u8],
) {
    if message.len() <= CL_ENCODE_START {
        return;
    }
    let key = (challenge ^ server_id ^ message_acknowledge) as u8;
    legacy_xor(message, CL_ENCODE_START, key, last_server_command);
}

/// Legacy-decode a server message body in place (`CL_Netchan_Decode`):
/// `sequence` is the datagram's, `acked_command` the text of the client
/// command the body's first long (the reliable acknowledge) names. The
/// body starts 4 bytes into the engine's buffer, an even offset, so the
/// key's shifts line up.
pub fn legacy_decode(body: &mut [u8], challenge: i32, sequence: i32, acked_command: &[u8]) {
    let key = (challenge ^ sequence) as u8;
    legacy_xor(body, CL_DECODE_START, key, acked_command);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server-side sender for tests: header plus optional fragments.
    fn server_datagrams(seq: i32, challenge: i32, legacy: bool, msg: &[u8]) -> Vec<Vec<u8>> {
        let header = |s: u32| {
            let mut d = s.to_le_bytes().to_vec();
            if !legacy {
                d.extend_from_slice(&checksum(challenge, seq).to_le_bytes());
            }
            d
        };
        if msg.len() < FRAGMENT_SIZE {
            let mut d = header(seq as u32);
            d.extend_from_slice(msg);
            return vec![d];
        }
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let len = (msg.len() - start).min(FRAGMENT_SIZE);
            let mut d = header(seq as u32 | FRAGMENT_BIT);
            d.extend_from_slice(&(start as u16).to_le_bytes());
            d.extend_from_slice(&(len as u16).to_le_bytes());
            d.extend_from_slice(&msg[start..start + len]);
            out.push(d);
            start += len;
            if start == msg.len() && len != FRAGMENT_SIZE {
                return out;
            }
        }
    }

    #[test]
    fn transmit_writes_sequence_qport_and_checksum() {
        let mut c = Netchan::new(0x1234, 77, false);
        let d = c.transmit(&[9, 8]).unwrap();
        assert_eq!(&d[..4], &1i32.to_le_bytes());
        assert_eq!(&d[4..6], &0x1234u16.to_le_bytes());
        assert_eq!(&d[6..10], &checksum(77, 1).to_le_bytes());
        assert_eq!(&d[10..], &[9, 8]);
        let mut l = Netchan::new(5, 77, true);
        assert_eq!(l.transmit(&[1]).unwrap(), vec![1, 0, 0, 0, 5, 0, 1]);
        assert_eq!(l.outgoing_sequence(), 2);
        assert_eq!(
            c.transmit(&vec![0; FRAGMENT_SIZE]),
            Err(Q3Error::TooLarge(FRAGMENT_SIZE))
        );
        let mut out = vec![0xAA; 40];
        l.transmit_into(&[2], &mut out).unwrap();
        assert_eq!(out, vec![2, 0, 0, 0, 5, 0, 2]);
    }

    #[test]
    fn fragments_reassemble_including_an_exact_multiple() {
        for legacy in [false, true] {
            for len in [10, FRAGMENT_SIZE, FRAGMENT_SIZE * 2, 3000] {
                let msg: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let mut c = Netchan::new(1, 42, legacy);
                let mut out = Vec::new();
                let ds = server_datagrams(3, 42, legacy, &msg);
                for (i, d) in ds.iter().enumerate() {
                    let r = c.process(d, &mut out).unwrap();
                    if i + 1 < ds.len() {
                        assert_eq!(r, None);
                    } else {
                        assert_eq!(r, Some(3));
                        assert_eq!(out, msg);
                    }
                }
                assert_eq!(c.dropped(), 2);
            }
        }
    }

    #[test]
    fn duplicates_bad_checksums_and_gaps_are_ignored() {
        let mut c = Netchan::new(1, 42, false);
        let mut out = Vec::new();
        let d = &server_datagrams(5, 42, false, b"abc")[0];
        assert_eq!(c.process(d, &mut out).unwrap(), Some(5));
        assert_eq!(c.process(d, &mut out).unwrap(), None);
        let bad = &server_datagrams(6, 43, false, b"abc")[0];
        assert_eq!(c.process(bad, &mut out).unwrap(), None);
        // A fragment series with the first fragment missing.
        let ds = server_datagrams(7, 42, false, &[1; 3000]);
        assert_eq!(c.process(&ds[1], &mut out).unwrap(), None);
        assert_eq!(c.process(&ds[2], &mut out).unwrap(), None);
        assert_eq!(c.process(&[1, 2], &mut out), Err(Q3Error::Overrun));
    }

    #[test]
    fn legacy_xor_is_its_own_inverse() {
        let orig: Vec<u8> = (0..100u8).collect();
        let mut m = orig.clone();
        legacy_encode(&mut m, 1234, 99, 7, b"print \"hi%\"");
        assert_ne!(m, orig);
        assert_eq!(&m[..12], &orig[..12]);
        legacy_encode(&mut m, 1234, 99, 7, b"print \"hi%\"");
        assert_eq!(m, orig);
        let mut b = orig.clone();
        legacy_decode(&mut b, 5, 9, b"");
        assert_eq!(&b[..4], &orig[..4]);
        // An empty acknowledged command leaves the key constant.
        let k = (5 ^ 9) as u8;
        assert!(b[4..].iter().zip(&orig[4..]).all(|(x, y)| x ^ y == k));
    }
}
