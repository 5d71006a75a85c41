//! The query protocols a definition's `[query] protocol` names, in a file
//! of their own so the modules that read one (`agones`, `def`) need not
//! use each other.

use serde::{Deserialize, Serialize};

/// The query protocols tickpack speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryProtocol {
    /// id Tech 3 and DarkPlaces: `getinfo` / `getstatus`.
    Q3,
    /// Valve's `A2S_INFO` with its challenge.
    A2s,
    /// tickpack's own stats request (the reference server).
    Tickpack,
    /// One of the gamedig crate's protocols, named by `[query] gamedig`
    /// (asked by `tickpack-gamedig-query`, not by [`crate::query`]).
    Gamedig,
    /// No query: only the process is watched.
    #[default]
    None,
}

impl QueryProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            QueryProtocol::Q3 => "q3",
            QueryProtocol::A2s => "a2s",
            QueryProtocol::Tickpack => "tickpack",
            QueryProtocol::Gamedig => "gamedig",
            QueryProtocol::None => "none",
        }
    }

    /// The query that asks for the most (who plays, not only how many):
    /// `getstatus` for q3; `A2S_INFO` for A2S and for the reference
    /// server, which answers it beside its own stats request. `None`: no
    /// query of the sans-I/O layer (none, or a gamedig protocol).
    pub fn status_query(self) -> Option<crate::query::Query> {
        match self {
            QueryProtocol::Q3 => Some(crate::query::Query::Q3Status),
            QueryProtocol::A2s | QueryProtocol::Tickpack => Some(crate::query::Query::A2sInfo),
            // Asked through the gamedig crate, not the sans-I/O layer.
            QueryProtocol::Gamedig | QueryProtocol::None => None,
        }
    }
}
