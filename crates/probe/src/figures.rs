//! One target's figures at the end of a run, whoever asked it (a
//! [`crate::QueryTarget`] session or the gamedig prober): round trips, the
//! counts as the result schema keeps them, the server's last facts, and
//! why it last failed.

use std::net::SocketAddr;

use hdrhistogram::Histogram;
use tickpack_report::probe::{QueryCounts, ServerFacts};

#[derive(Debug, Clone)]
pub struct TargetFigures {
    pub addr: SocketAddr,
    pub(crate) hist: Histogram<u64>,
    pub(crate) counts: QueryCounts,
    pub(crate) facts: Option<ServerFacts>,
    /// The last query's error when it failed for another reason than
    /// silence (gamedig: a malformed answer, a caught panic), bounded.
    pub last_error: Option<String>,
}

impl TargetFigures {
    /// A target nothing was asked of yet.
    pub fn new(addr: SocketAddr) -> TargetFigures {
        TargetFigures {
            addr,
            hist: tickpack_report::new_histogram(),
            counts: QueryCounts::default(),
            facts: None,
            last_error: None,
        }
    }

    /// Round trips of answered queries, µs.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    pub fn counts(&self) -> QueryCounts {
        self.counts
    }

    /// What the server said in its last reply.
    pub fn facts(&self) -> Option<&ServerFacts> {
        self.facts.as_ref()
    }
}
