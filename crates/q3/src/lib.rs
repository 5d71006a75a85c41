//! The Quake III Arena network protocol (ioquake3, protocol 71, as
//! Debian's packaged ioquake3 game servers speak it), sans-I/O: no sockets, no clock.
//! Bytes in, values and bytes out; fuzzed like tickpack's own decoder.
//!
//! Facts about the protocol come from the engine's source (ioquake/ioq3:
//! code/qcommon/msg.c, huffman.c, net_chan.c, code/client/cl_parse.c,
//! cl_input.c, code/server/sv_client.c, sv_snapshot.c); the code here is
//! written from those facts, not copied.
//!
//! - [`oob`]: connectionless ("out of band") datagrams, the four 0xFF bytes
//!   and a text command.
//! - [`bits`]: word-at-a-time reads and writes of an LSB-first bit stream.
//! - [`huffman`]: the engine's Huffman coders (the fixed message coder and
//!   the adaptive `connect` userinfo compressor).
//! - [`msg`]: the bit-level message reader/writer.
//! - [`delta`]: the delta codecs (usercmds, entity states, player states).
//! - [`netchan`]: the client side of the sequenced channel (headers,
//!   checksums or legacy XOR encoding, fragment reassembly).
//! - [`client`]: a client session state machine, handshake to snapshots.
//! - [`session`]: its public shapes (config, state, events, snapshot info).
//! - [`error`]: the crate's error type, `Q3Error`.
//! - [`query`]: `getinfo` / `getstatus` and their replies (info strings,
//!   the status player lines), used by the host's health check and
//!   `tickpack probe`.
//! - [`rcon`]: the remote console's request (`rcon PASSWORD COMMAND`) and
//!   the text of its answers (ioquake3's `print`, DarkPlaces' `n`), used
//!   by the host to change an instance's map.

pub mod bits;
pub mod client;
pub mod delta;
pub mod error;
pub mod huffman;
pub mod msg;
pub mod netchan;
pub mod oob;
pub mod query;
pub mod rcon;
pub mod session;

pub use client::{Client, ClientConfig, ClientState, Event, SnapshotInfo};
pub use delta::UserCmd;
pub use error::Q3Error;
