//! [`Heard`]: what a datagram read from a queried server means, the one
//! type every protocol's decoder returns. Its own file so that the
//! protocols (`q3.rs`, `a2s.rs`) and the dispatch over them
//! (`protocol.rs`) import it from below, never from each other.

use super::facts::Facts;

/// What a datagram from a queried server means.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Heard {
    /// An answer of the kind asked: the id it echoes (q3's `challenge`;
    /// `None` for A2S, which has none) and what it says.
    Answer { id: Option<String>, facts: Facts },
    /// A2S `S2C_CHALLENGE`: ask again with this number.
    Challenge(u32),
    /// Anything else: another protocol, another kind of answer, junk.
    NotOurs,
}
