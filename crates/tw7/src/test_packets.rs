//! Datagrams a test server sends, shared by the unit tests of
//! [`crate::conn`] and [`crate::client`] (test builds only).

use crate::packet::{PacketHeader, FLAG_CONTROL};

/// A control packet to `token`: `msg` and its `extra` bytes, acking `ack`.
pub(crate) fn server_control(token: u32, msg: u8, extra: &[u8], ack: u16) -> Vec<u8> {
    let mut v = PacketHeader {
        flags: FLAG_CONTROL,
        ack,
        num_chunks: 0,
        token,
    }
    .encode()
    .to_vec();
    v.push(msg);
    v.extend_from_slice(extra);
    v
}
