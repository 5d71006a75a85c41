//! The real server as referee: what an OpenArena server itself says about
//! our players. It computes a ping for every client from its own side (the
//! average of acknowledged minus sent over its last 32 snapshots, in whole
//! milliseconds of its frame clock) and lists it in `getstatus` by name.
//! The referee asks each server for its status now and then, politely (ioq3
//! answers one source address once a second after a burst of 10, and the
//! host's health checks ask too), and keeps every emulated player's pings.
//!
//! [`Referee`] is sans-I/O: the run loop sends [`Referee::request`] and
//! hands replies to [`Referee::handle`].

use std::collections::BTreeMap;
use std::net::SocketAddr;

use tickpack_q3::query::{self, Kind, Reply};

/// Time between two status queries to one server.
pub const INTERVAL_US: u64 = 2_000_000;
/// Names our players use in `getstatus` (`tp-N`), the referee's filter.
pub const NAME_PREFIX: &str = "tp-";

/// Pings (ms) the servers reported, per (server, player name).
#[derive(Debug, Default)]
pub struct Referee {
    pub pings: BTreeMap<(SocketAddr, String), Vec<u32>>,
    /// Status replies received.
    pub replies: u64,
}

impl Referee {
    /// The status request (the challenge names the query's round).
    pub fn request(round: u64) -> Vec<u8> {
        query::request(Kind::Status, &format!("tpref{round}"))
    }

    /// Takes one datagram from `from`; status replies add our players'
    /// pings (a player still connecting shows 999: not a ping, skipped).
    pub fn handle(&mut self, from: SocketAddr, datagram: &[u8]) {
        let Ok(Reply::Status { players, .. }) = query::decode(datagram) else {
            return;
        };
        self.replies += 1;
        for p in players {
            if p.name.starts_with(NAME_PREFIX) && (0..999).contains(&p.ping) {
                self.pings
                    .entry((from, p.name))
                    .or_default()
                    .push(p.ping as u32);
            }
        }
    }

    /// The median ping the server reported for `name` on `server`, in µs.
    pub fn median_us(&self, server: SocketAddr, name: &str) -> Option<u64> {
        median(self.pings.get(&(server, name.to_string()))?).map(|ms| u64::from(ms) * 1000)
    }
}

/// The median of `v` (its upper middle for an even count), or `None` if
/// empty.
pub(crate) fn median(v: &[u32]) -> Option<u32> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_players_pings_are_kept_and_999_is_not_a_ping() {
        let from: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let mut r = Referee::default();
        let d = tickpack_q3::oob::encode(
            "statusResponse\n\\mapname\\oa_dm1\n0 12 \"tp-0\"\n0 0 \"Angelyss\"\n0 999 \"tp-1\"\n",
        );
        r.handle(from, &d);
        r.handle(from, &tickpack_q3::oob::encode("infoResponse\n\\a\\b"));
        assert_eq!(r.replies, 1);
        assert_eq!(r.pings.len(), 1);
        assert_eq!(r.median_us(from, "tp-0"), Some(12_000));
        assert_eq!(r.median_us(from, "tp-1"), None);
    }
}
