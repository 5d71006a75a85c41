//! The one error type of the crate, [`Tw7Error`]: why bytes from the server
//! could not be used (never a panic), or why a call was not possible in the
//! session's state.
//!
//! It does not carry the offending bytes or a backtrace (a load generator
//! counts and drops bad datagrams; it does not log each one). Every fallible
//! call of the crate returns it; match on the variant to count by cause.

/// Why a datagram, chunk, message or snapshot could not be decoded, or why
/// the session refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Tw7Error {
    /// A read needed bytes past the end of its input (`what` names the
    /// field or structure being read).
    #[error("truncated {0}: read past the end of the input")]
    Truncated(&'static str),
    /// The Huffman stream holds no end-of-stream symbol, or decodes to more
    /// bytes than a packet payload can hold.
    #[error("invalid Huffman stream: {0}")]
    Huffman(&'static str),
    /// A well-framed structure whose content the protocol does not allow.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// Something larger than the protocol's limit (`what`, the size seen,
    /// the limit).
    #[error("{what} too large: {size} > {limit}")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The size seen.
        size: usize,
        /// The limit it broke.
        limit: usize,
    },
    /// A packet whose token is not ours (not from our session; dropped).
    #[error("wrong token: got {got:#010x}, expected {expected:#010x}")]
    WrongToken {
        /// The token in the packet header.
        got: u32,
        /// Our token.
        expected: u32,
    },
    /// A snapshot delta against a tick we no longer (or never) had.
    #[error("snapshot delta base tick {0} is not in the history")]
    MissingBaseline(i32),
    /// A snapshot whose items do not add up to the checksum the server sent.
    #[error("snapshot crc mismatch at tick {tick}: server {expected}, ours {got}")]
    Crc {
        /// The snapshot's tick.
        tick: i32,
        /// The server's checksum.
        expected: i32,
        /// The checksum of what we rebuilt.
        got: i32,
    },
    /// The session is not in a state where this is possible.
    #[error("not possible in this state: {0}")]
    State(&'static str),
}
