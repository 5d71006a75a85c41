//! The real server as referee: what a Quake III protocol server itself says about
//! our players. It computes a ping for every client from its own side (the
//! average of acknowledged minus sent over its last 32 snapshots, in whole
//! milliseconds of its frame clock) and lists it in `getstatus` by name.
//! The referee asks each server for its status now and then, politely (ioq3
//! answers one source address once a second after a burst of 10, and the
//! host's health checks ask too), and keeps every emulated player's pings.
//!
//! [`Referee`] is sans-I/O: one `getstatus` session of the game query layer
//! (`tickpack_game::query`) per server, so each answer is matched to its
//! query (a duplicate, a late or a stranger's answer adds no pings). The
//! run loop sends what [`Referee::poll_transmit`] gives, hands replies to
//! [`Referee::handle`] and sleeps until [`Referee::next_timeout_us`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use tickpack_game::query::{Event, Query, Schedule, Session};

/// Time between two status queries to one server.
pub const INTERVAL_US: u64 = 2_000_000;
/// Names our players use in `getstatus` (`tp-N`), the referee's filter.
pub const NAME_PREFIX: &str = "tp-";

/// Pings (ms) the servers reported, per (server, player name).
#[derive(Debug, Default)]
pub struct Referee {
    /// One status session per server.
    sessions: Vec<(SocketAddr, Session)>,
    pub pings: BTreeMap<(SocketAddr, String), Vec<u32>>,
    /// Status replies received (each the answer to one of our queries).
    pub replies: u64,
}

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

impl Referee {
    /// Asks each of `servers` every [`INTERVAL_US`] from `first_us` (µs,
    /// the caller's clock); no query starts at or after `stop_us`.
    pub fn new(servers: &[SocketAddr], first_us: u64, stop_us: u64) -> Referee {
        let schedule = Schedule {
            interval: us(INTERVAL_US),
            timeout: us(INTERVAL_US),
        };
        let mut sessions: Vec<(SocketAddr, Session)> = vec![];
        for &s in servers {
            if sessions.iter().all(|(a, _)| *a != s) {
                let mut session = Session::new(Query::Q3Status, schedule, us(first_us));
                session.stop_at(us(stop_us));
                sessions.push((s, session));
            }
        }
        Referee {
            sessions,
            ..Referee::default()
        }
    }

    /// The next datagram due at `now_us`, written to `out`, and the server
    /// it goes to; call again until `None`.
    pub fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>) -> Option<SocketAddr> {
        for (addr, s) in &mut self.sessions {
            s.handle_timeout(us(now_us));
            if s.poll_transmit(us(now_us), out) {
                return Some(*addr);
            }
        }
        None
    }

    /// Takes one datagram from `from`, received at `now_us`; an answer to
    /// our status query adds our players' pings (a player still connecting
    /// shows 999: not a ping, skipped).
    pub fn handle(&mut self, now_us: u64, from: SocketAddr, datagram: &[u8]) {
        let Some((_, s)) = self.sessions.iter_mut().find(|(a, _)| *a == from) else {
            return;
        };
        let Some(Event::Answered { facts, .. }) = s.handle(us(now_us), datagram) else {
            return;
        };
        self.replies += 1;
        for p in facts.roster.unwrap_or_default() {
            if p.name.starts_with(NAME_PREFIX) && (0..999).contains(&p.ping) {
                self.pings
                    .entry((from, p.name))
                    .or_default()
                    .push(p.ping as u32);
            }
        }
    }

    /// When [`Referee::poll_transmit`] next has something to do (µs).
    pub fn next_timeout_us(&self) -> Option<u64> {
        self.sessions
            .iter()
            .filter_map(|(_, s)| s.next_timeout())
            .min()
            .map(|t| t.as_micros().min(u128::from(u64::MAX)) as u64)
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

    fn status(id: &str) -> Vec<u8> {
        tickpack_q3::oob::encode(&format!(
            "statusResponse\n\\mapname\\oa_dm1\\challenge\\{id}\n0 12 \"tp-0\"\n0 0 \"Angelyss\"\n0 999 \"tp-1\"\n"
        ))
    }

    fn asked(r: &mut Referee, now_us: u64) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut out = vec![];
        let mut all = vec![];
        while let Some(to) = r.poll_transmit(now_us, &mut out) {
            all.push((to, out.clone()));
        }
        all
    }

    #[test]
    fn only_our_players_pings_are_kept_and_999_is_not_a_ping() {
        let from: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let mut r = Referee::new(&[from], 0, u64::MAX);
        assert_eq!(
            asked(&mut r, 0),
            vec![(from, b"\xff\xff\xff\xffgetstatus tp1".to_vec())]
        );
        let d = status("tp1");
        r.handle(1_000, from, &d);
        r.handle(
            1_000,
            from,
            &tickpack_q3::oob::encode("infoResponse\n\\a\\b"),
        );
        assert_eq!(r.replies, 1);
        assert_eq!(r.pings.len(), 1);
        assert_eq!(r.median_us(from, "tp-0"), Some(12_000));
        assert_eq!(r.median_us(from, "tp-1"), None);
    }

    #[test]
    fn every_server_is_asked_on_the_schedule_until_the_stop() {
        let a: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:27961".parse().unwrap();
        let mut r = Referee::new(&[a, b, a], 100, 100 + 2 * INTERVAL_US);
        assert_eq!(r.next_timeout_us(), Some(100));
        let to: Vec<SocketAddr> = asked(&mut r, 100).into_iter().map(|(t, _)| t).collect();
        assert_eq!(to, vec![a, b], "each server once");
        assert!(asked(&mut r, 200).is_empty());
        assert_eq!(asked(&mut r, 100 + INTERVAL_US).len(), 2);
        assert!(asked(&mut r, 100 + 2 * INTERVAL_US).is_empty(), "stopped");
    }

    /// The referee took every `statusResponse` as a new reply: the same
    /// answer twice (a duplicated datagram) added its pings twice.
    #[test]
    fn referee_duplicate_status_reply_counted_twice_is_counted_once() {
        let from: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let mut r = Referee::new(&[from], 0, u64::MAX);
        asked(&mut r, 0);
        r.handle(1_000, from, &status("tp1"));
        r.handle(1_500, from, &status("tp1"));
        assert_eq!(r.replies, 1);
        assert_eq!(r.pings[&(from, "tp-0".to_string())], vec![12]);
    }

    /// The referee took a `statusResponse` from any address as a reply,
    /// even from a server it never asked.
    #[test]
    fn referee_reply_from_a_server_never_asked_adds_no_pings() {
        let asked_one: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let stranger: SocketAddr = "127.0.0.1:27999".parse().unwrap();
        let mut r = Referee::new(&[asked_one], 0, u64::MAX);
        asked(&mut r, 0);
        r.handle(1_000, stranger, &status("tp1"));
        assert_eq!(r.replies, 0);
        assert!(r.pings.is_empty());
    }
}
