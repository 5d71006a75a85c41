//! Whole datagrams and message bodies as a tw7 server sends them, each
//! built into a fresh `Vec`: for tests and scripted servers (this crate's
//! unit and integration tests, tickpack-players' scripted server). Not a
//! server: no state, no sequences or acks of its own (the caller passes
//! them), no compression.
//!
//! What it does not do: serve the client's path (a connection packs its own
//! packets into caller buffers, [`crate::conn`]).
//!
//! Order: [`message`] builds a chunk's body, [`one_chunk`] wraps it in a
//! data packet; [`control`] builds a control packet.

use crate::packer::Packer;
use crate::packet::{ChunkHeader, PacketHeader, CHUNK_VITAL, FLAG_CONTROL};

/// A control packet to `token`, acking `ack`: the control message `ctrl`
/// (`CTRL_*`) and its `extra` bytes.
pub fn control(token: u32, ack: u16, ctrl: u8, extra: &[u8]) -> Vec<u8> {
    let mut v = PacketHeader {
        flags: FLAG_CONTROL,
        ack,
        num_chunks: 0,
        token,
    }
    .encode()
    .to_vec();
    v.push(ctrl);
    v.extend_from_slice(extra);
    v
}

/// An uncompressed data packet to `token`, acking `ack`, holding one chunk
/// of `body`: vital with sequence `vital_seq` when it is `Some`, else not
/// vital.
pub fn one_chunk(token: u32, ack: u16, vital_seq: Option<u16>, body: &[u8]) -> Vec<u8> {
    let mut v = PacketHeader {
        flags: 0,
        ack,
        num_chunks: 1,
        token,
    }
    .encode()
    .to_vec();
    ChunkHeader {
        flags: if vital_seq.is_some() { CHUNK_VITAL } else { 0 },
        size: body.len() as u16,
        sequence: vital_seq.unwrap_or(0),
    }
    .encode(&mut v);
    v.extend_from_slice(body);
    v
}

/// The body of one message chunk: the id `(id << 1) | system`, then the
/// fields `fields` packs.
pub fn message(id: i32, system: bool, fields: impl FnOnce(&mut Packer<'_>)) -> Vec<u8> {
    let mut body = Vec::new();
    fields(&mut crate::msg::header(&mut body, id, system));
    body
}
