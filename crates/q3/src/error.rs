//! The one error type of the crate: why a datagram or message could not be
//! decoded (never a panic).

/// Why bytes from the network could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Q3Error {
    /// A read needed bits past the end of the message.
    #[error("read past the end of the message")]
    Overrun,
    /// A Huffman code that the tree does not hold.
    #[error("invalid Huffman code")]
    BadCode,
    /// A well-framed message whose content the protocol does not allow.
    #[error("malformed message: {0}")]
    Malformed(&'static str),
    /// A message too large for the operation.
    #[error("message too large: {0} bytes")]
    TooLarge(usize),
    /// The session is not in a state where this is possible.
    #[error("not possible in this state: {0}")]
    State(&'static str),
}
