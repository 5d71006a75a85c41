//! The game query protocols as health checks (`q3`, `a2s`), sans-I/O: what
//! to send to one instance, and what a reply tells (alive, map, players,
//! bots, the round trip). The socket, the clock and the liveness rules are
//! `health.rs`'s.
//!
//! - `q3`: `getinfo tp<N>` ([`tickpack_q3::query`]); the `infoResponse`
//!   echoes the challenge, so a reply is matched to its request. ioq3
//!   answers one query per second per source address after a burst of 10,
//!   so the host asks every [`QUERY_INTERVAL`].
//! - `a2s`: `A2S_INFO`; the server answers `S2C_CHALLENGE` first, which is
//!   echoed at once and then kept for the next queries (a server that
//!   answers with a new challenge gets the query again with that one).
//!
//! Round trips are measured between the send and the kernel's receive
//! time stamp of the reply (both on the wall clock, in nanoseconds), so
//! the supervisor's 50 ms poll does not blur them; they go into an
//! HdrHistogram per instance (microseconds).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tickpack_q3::query as q3;
use tickpack_wire::a2s;

use crate::launch::Health;

/// How often an instance is asked.
pub const QUERY_INTERVAL: Duration = Duration::from_secs(2);

/// A round trip summary, as `host status --json` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
    pub count: u64,
}

/// What one instance's query state holds.
#[derive(Debug)]
pub struct Probe {
    kind: Health,
    /// Requests sent, the q3 challenge of the next one.
    seq: u64,
    /// The request in flight: its q3 challenge number (0 for a2s) and when
    /// it was sent (wall clock, ns).
    pending: Option<(u64, i128)>,
    /// The A2S challenge to echo.
    a2s_challenge: Option<u32>,
    /// Round trips, microseconds.
    latency: Histogram<u64>,
    pub map: Option<String>,
    /// Humans and bots.
    pub players: Option<u8>,
    pub bots: Option<u8>,
    /// The longest round trip since the guard last asked.
    recent_max_us: Option<u64>,
    /// The last round trip.
    last_us: Option<u64>,
}

/// What a datagram from an instance meant.
#[derive(Debug, PartialEq, Eq)]
pub enum Heard {
    /// Not a reply of this protocol: ignored.
    Nothing,
    /// An answer: the instance is alive.
    Alive,
    /// An A2S challenge: alive; send this now.
    AliveSend(Vec<u8>),
}

impl Probe {
    pub fn new(kind: Health) -> Probe {
        Probe {
            kind,
            seq: 0,
            pending: None,
            recent_max_us: None,
            last_us: None,
            a2s_challenge: None,
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
            map: None,
            players: None,
            bots: None,
        }
    }

    /// Forgets what the last run of the server told (a restart).
    pub fn reset(&mut self) {
        self.pending = None;
        self.a2s_challenge = None;
        self.map = None;
        self.players = None;
        self.bots = None;
        self.recent_max_us = None;
        self.last_us = None;
    }

    /// The request to send at `now_ns` (wall clock).
    pub fn request(&mut self, now_ns: i128) -> Vec<u8> {
        self.seq += 1;
        self.pending = Some((self.seq, now_ns));
        match self.kind {
            Health::Q3 => q3::request(q3::Kind::Info, &format!("tp{}", self.seq)),
            _ => {
                let mut out = vec![];
                a2s::Query::Info {
                    challenge: self.a2s_challenge,
                }
                .encode(&mut out);
                out
            }
        }
    }

    /// Digests a datagram from the instance, received at `at_ns`; `now_ns`
    /// is when a request it asks for is sent.
    pub fn reply(&mut self, datagram: &[u8], at_ns: i128, now_ns: i128) -> Heard {
        match self.kind {
            Health::Q3 => {
                let Ok(reply) = q3::decode(datagram) else {
                    return Heard::Nothing;
                };
                let info = reply.info();
                let expected = self.pending.map(|(seq, _)| format!("tp{seq}"));
                if info.get("challenge").is_some() && info.get("challenge") == expected.as_deref() {
                    self.record(at_ns);
                }
                self.map = info.get("mapname").map(str::to_string);
                let num = |k: &str| info.get(k).and_then(|v| v.parse::<u8>().ok());
                self.players = num("clients");
                self.bots = match (num("clients"), num("g_humanplayers")) {
                    (Some(c), Some(h)) => Some(c.saturating_sub(h)),
                    _ => None,
                };
                Heard::Alive
            }
            _ => match a2s::Reply::decode(datagram) {
                Ok(a2s::Reply::Challenge(c)) => {
                    self.a2s_challenge = Some(c);
                    Heard::AliveSend(self.request(now_ns))
                }
                Ok(a2s::Reply::Info(i)) => {
                    self.record(at_ns);
                    self.map = Some(i.map);
                    self.players = Some(i.players);
                    self.bots = Some(i.bots);
                    Heard::Alive
                }
                Err(_) => Heard::Nothing,
            },
        }
    }

    fn record(&mut self, at_ns: i128) {
        if let Some((_, sent)) = self.pending.take() {
            let us = ((at_ns - sent) / 1_000).max(1);
            let us = u64::try_from(us).unwrap_or(u64::MAX);
            let _ = self.latency.record(us);
            self.recent_max_us = Some(self.recent_max_us.map_or(us, |m| m.max(us)));
            self.last_us = Some(us);
        }
    }

    /// The longest round trip since the last call (the guard's per-period
    /// query signal), else the last one measured.
    pub fn take_recent_max(&mut self) -> Option<u64> {
        self.recent_max_us.take().or(self.last_us)
    }

    /// The round trips so far (none before the first).
    pub fn latency(&self) -> Option<LatencySummary> {
        let h = &self.latency;
        (!h.is_empty()).then(|| LatencySummary {
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
            count: h.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_q3::oob;

    #[test]
    fn a_q3_reply_to_the_pending_request_gives_map_players_and_its_round_trip() {
        let mut p = Probe::new(Health::Q3);
        assert_eq!(p.request(1_000_000), b"\xff\xff\xff\xffgetinfo tp1");
        let reply = oob::encode(
            "infoResponse\n\\g_humanplayers\\2\\clients\\12\\mapname\\oa_dm1\\sv_maxclients\\16\\challenge\\tp1",
        );
        assert_eq!(p.reply(&reply, 1_250_000, 1_250_000), Heard::Alive);
        assert_eq!(p.map.as_deref(), Some("oa_dm1"));
        assert_eq!((p.players, p.bots), (Some(12), Some(10)));
        let l = p.latency().unwrap();
        assert_eq!((l.count, l.max), (1, 250));
        // A late reply to an old request is a sign of life, not a round trip.
        p.request(2_000_000);
        assert_eq!(p.reply(&reply, 9_000_000, 9_000_000), Heard::Alive);
        assert_eq!(p.latency().unwrap().count, 1);
        // Anything else is ignored.
        assert_eq!(p.reply(&oob::encode("print\nhi"), 0, 0), Heard::Nothing);
        assert_eq!(p.reply(b"\x01\x02", 0, 0), Heard::Nothing);
        p.reset();
        assert_eq!((p.map.as_deref(), p.players), (None, None));
    }

    #[test]
    fn an_a2s_challenge_is_echoed_at_once_then_the_info_is_read() {
        let mut p = Probe::new(Health::A2s);
        let first = p.request(0);
        assert_eq!(
            a2s::Query::decode(&first),
            Ok(a2s::Query::Info { challenge: None })
        );
        let mut challenge = vec![];
        a2s::encode_challenge(77, &mut challenge);
        // Received at 100 us, asked again at 150 us (the supervisor's loop).
        let Heard::AliveSend(again) = p.reply(&challenge, 100_000, 150_000) else {
            panic!("the query again, with the challenge")
        };
        assert_eq!(
            a2s::Query::decode(&again),
            Ok(a2s::Query::Info {
                challenge: Some(77)
            })
        );
        assert!(p.latency().is_none(), "a challenge is not the answer");
        let mut info = vec![];
        a2s::encode_info(
            &a2s::ServerInfo {
                name: "tp",
                map: "arena",
                folder: "tickpack",
                game: "tickpack",
                app_id: 0,
                players: 5,
                max_players: 12,
                bots: 2,
                version: "0",
                port: 27015,
                keywords: "",
            },
            &mut info,
        );
        assert_eq!(p.reply(&info, 400_000, 400_000), Heard::Alive);
        assert_eq!(
            p.latency().unwrap().max,
            250,
            "from the query with the challenge"
        );
        assert_eq!((p.players, p.bots), (Some(5), Some(2)));
        assert_eq!(p.map.as_deref(), Some("arena"));
        // The next query carries the kept challenge.
        assert_eq!(
            a2s::Query::decode(&p.request(500_000)),
            Ok(a2s::Query::Info {
                challenge: Some(77)
            })
        );
    }
}
