//! Flood protection for what unproven sources may ask: token buckets per
//! source and a global budget per kind of request. No clock: every call takes
//! `now_us`, so tests run it on a virtual clock.
//!
//! A source that has not completed the handshake can ask for four kinds of
//! answers ([`Ask`]): a handshake step (hello, connect), an A2S query, the
//! stats, or a pong. Each costs the server work and a reply, so each passes
//! two token buckets before any of that work is done:
//!
//! 1. the source's own bucket for that kind, kept in a fixed table (memory
//!    stays bounded however many sources there are). A source's entry sits
//!    at one of [`PROBE`] slots from where its address and port hash (with a
//!    per-start key), and holds its exact address: two sources never share
//!    an entry. An entry whose buckets have all refilled holds nothing a new
//!    entry would not, so it is reused. Only a source that finds all its
//!    slots held by sources still limited shares a bucket: the overflow
//!    bucket of all such sources (stricter, never looser);
//! 2. the kind's global bucket, shared by every unproven source, which bounds
//!    what a flood from many (spoofed) sources can cost.
//!
//! Only a request its source's bucket admits takes a global token, so one
//! flooding source cannot drain the global budget that others (a connecting
//! player, the host's health check) rely on. Connected players never pass
//! through here: their commands and pings are never rate limited.

use std::hash::{Hash, Hasher};
use std::net::SocketAddr;

/// Slots a source's entry may sit at, from its hashed slot on.
pub const PROBE: usize = 8;

/// Micro-tokens per token: buckets count in millionths so that refills by
/// the microsecond stay exact in integers.
const UNIT: u64 = 1_000_000;

/// What an unproven source asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Hello or connect: an HMAC and a challenge or accept.
    Handshake,
    /// An A2S query (info, players, rules), with or without a challenge.
    Query,
    /// The server's stats (the host's health check asks once a second).
    Stats,
    /// A ping (same-size echo; `tickpack ping` sends them closed-loop).
    Ping,
}

impl Ask {
    /// Every kind, in the order of [`Ask::index`].
    pub const ALL: [Ask; 4] = [Ask::Handshake, Ask::Query, Ask::Stats, Ask::Ping];

    /// Position in per-kind arrays such as [`FloodCounters::source_limited`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name, as used in metrics labels.
    pub fn name(self) -> &'static str {
        match self {
            Ask::Handshake => "handshake",
            Ask::Query => "a2s",
            Ask::Stats => "stats",
            Ask::Ping => "ping",
        }
    }
}

/// A sustained rate and a burst, in requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Tokens added per second.
    pub per_s: u32,
    /// Most tokens held (requests admitted back to back after a quiet spell).
    pub burst: u32,
}

impl Rate {
    pub const fn new(per_s: u32, burst: u32) -> Self {
        Self { per_s, burst }
    }
}

/// Per-source and global rates of each [`Ask`] (indexed by [`Ask::index`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FloodLimits {
    pub per_source: [Rate; 4],
    pub global: [Rate; 4],
    /// Slots of the per-source table (rounded up to a power of two).
    pub source_slots: usize,
}

impl FloodLimits {
    /// Pings answered per second to each unproven source by default: a
    /// `tickpack ping` run of 20 000 round trips fits in the burst.
    pub const DEFAULT_PING_PER_S: u32 = 20_000;

    /// Sets the ping rate per unproven source (burst: one second's worth)
    /// and the global ping budget to 2.5 times it; `0` lifts both limits.
    pub fn with_ping_rate(mut self, per_s: u32) -> Self {
        let i = Ask::Ping.index();
        if per_s == 0 {
            self.per_source[i] = Rate::new(u32::MAX, u32::MAX);
            self.global[i] = Rate::new(u32::MAX, u32::MAX);
        } else {
            self.per_source[i] = Rate::new(per_s, per_s);
            let all = per_s.saturating_mul(5) / 2;
            self.global[i] = Rate::new(all, all);
        }
        self
    }
}

impl Default for FloodLimits {
    /// Far above what players, server browsers and the host's health check
    /// ask (a connect is 2 requests, a browser query 2, a health check 1/s),
    /// far below what costs a tick its deadline. Pings are cheap same-size
    /// echoes that `tickpack ping` sends closed-loop, so they get more room.
    fn default() -> Self {
        Self {
            per_source: [
                Rate::new(20, 40),
                Rate::new(20, 40),
                Rate::new(20, 20),
                Rate::new(0, 0),
            ],
            global: [
                Rate::new(2_000, 4_000),
                Rate::new(2_000, 4_000),
                Rate::new(1_000, 1_000),
                Rate::new(0, 0),
            ],
            source_slots: 2048,
        }
        .with_ping_rate(Self::DEFAULT_PING_PER_S)
    }
}

/// Requests from unproven sources that the buckets turned away, per
/// [`Ask`], since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloodCounters {
    /// Dropped because their source had used up its own bucket.
    pub source_limited: [u64; 4],
    /// Dropped because the global budget of their kind was used up.
    pub budget_limited: [u64; 4],
}

impl FloodCounters {
    /// All requests dropped, whatever the reason.
    pub fn total(&self) -> u64 {
        self.source_limited.iter().sum::<u64>() + self.budget_limited.iter().sum::<u64>()
    }
}

/// A token bucket on an external clock (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBucket {
    /// Micro-tokens held.
    level: u64,
    /// When `level` was last brought up to date.
    at_us: u64,
}

impl TokenBucket {
    /// A full bucket as of `now_us`.
    pub fn full(rate: Rate, now_us: u64) -> Self {
        Self {
            level: u64::from(rate.burst) * UNIT,
            at_us: now_us,
        }
    }

    /// The micro-tokens held at `now_us`, refilled for the time since the
    /// last take. A clock that goes backwards refills nothing.
    fn level_at(&self, rate: Rate, now_us: u64) -> u64 {
        let cap = u64::from(rate.burst) * UNIT;
        let elapsed = now_us.saturating_sub(self.at_us);
        // Enough time to fill from empty is enough: caps the product.
        let fill_us = if rate.per_s == 0 {
            0
        } else {
            cap / u64::from(rate.per_s) + 1
        };
        (self.level + elapsed.min(fill_us) * u64::from(rate.per_s)).min(cap)
    }

    /// Whether the bucket would be full at `now_us` (it then holds nothing
    /// a new full bucket does not).
    pub fn is_full(&self, rate: Rate, now_us: u64) -> bool {
        self.level_at(rate, now_us) == u64::from(rate.burst) * UNIT
    }

    /// Refills for the time since the last call, then takes one token if
    /// there is one. A clock that goes backwards refills nothing.
    pub fn take(&mut self, rate: Rate, now_us: u64) -> bool {
        self.level = self.level_at(rate, now_us);
        self.at_us = self.at_us.max(now_us);
        if self.level >= UNIT {
            self.level -= UNIT;
            true
        } else {
            false
        }
    }
}

/// One source's buckets, one per [`Ask`].
#[derive(Debug, Clone, Copy)]
struct SourceEntry {
    from: SocketAddr,
    buckets: [TokenBucket; 4],
}

/// Per-source buckets in a fixed hashed table, an overflow bucket per
/// [`Ask`] for sources that find no slot, and one global bucket per
/// [`Ask`]; see the module docs.
#[derive(Debug, Clone)]
pub struct FloodGuard {
    limits: FloodLimits,
    key: u64,
    /// `None` until a source first takes the slot.
    sources: Vec<Option<SourceEntry>>,
    /// Shared by the sources that found every one of their slots taken.
    overflow: Option<[TokenBucket; 4]>,
    global: [Option<TokenBucket>; 4],
    counters: FloodCounters,
}

impl FloodGuard {
    /// `key` seeds the slot hash (make it secret and per start, so a sender
    /// cannot aim at the slots of another).
    pub fn new(limits: FloodLimits, key: u64) -> Self {
        let slots = limits.source_slots.max(PROBE).next_power_of_two();
        Self {
            limits,
            key,
            sources: vec![None; slots],
            overflow: None,
            global: [None; 4],
            counters: FloodCounters::default(),
        }
    }

    pub fn limits(&self) -> &FloodLimits {
        &self.limits
    }

    pub fn counters(&self) -> FloodCounters {
        self.counters
    }

    fn home(&self, from: SocketAddr) -> usize {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write_u64(self.key);
        from.hash(&mut h);
        (h.finish() as usize) & (self.sources.len() - 1)
    }

    /// The buckets of `from`: its entry, a new one in a free or idle slot,
    /// or the overflow buckets.
    fn buckets_of(&mut self, now_us: u64, from: SocketAddr) -> &mut [TokenBucket; 4] {
        let (home, mask) = (self.home(from), self.sources.len() - 1);
        let slots = (0..PROBE).map(|k| (home + k) & mask);
        let rates = self.limits.per_source;
        let fresh = || rates.map(|r| TokenBucket::full(r, now_us));
        let at = slots
            .clone()
            .find(|&s| self.sources[s].is_some_and(|e| e.from == from))
            .or_else(|| {
                let free = slots.clone().find(|&s| match &self.sources[s] {
                    None => true,
                    Some(e) => e
                        .buckets
                        .iter()
                        .zip(rates)
                        .all(|(b, r)| b.is_full(r, now_us)),
                })?;
                self.sources[free] = Some(SourceEntry {
                    from,
                    buckets: fresh(),
                });
                Some(free)
            });
        match at {
            Some(s) => &mut self.sources[s].as_mut().expect("found or made").buckets,
            None => self.overflow.get_or_insert_with(fresh),
        }
    }

    /// Whether to serve `ask` from the unproven source `from` at `now_us`;
    /// a refusal is counted. Cost: a hash, at most [`PROBE`] slots looked
    /// at, and two bucket updates.
    pub fn admit(&mut self, now_us: u64, from: SocketAddr, ask: Ask) -> bool {
        let i = ask.index();
        let (local, global) = (self.limits.per_source[i], self.limits.global[i]);
        if !self.buckets_of(now_us, from)[i].take(local, now_us) {
            self.counters.source_limited[i] += 1;
            return false;
        }
        let g = self.global[i].get_or_insert_with(|| TokenBucket::full(global, now_us));
        if !g.take(global, now_us) {
            self.counters.budget_limited[i] += 1;
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(i: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27000 + i))
    }

    #[test]
    fn bucket_gives_its_burst_then_its_rate() {
        let r = Rate::new(10, 5);
        let mut b = TokenBucket::full(r, 0);
        let burst = (0..100).filter(|_| b.take(r, 0)).count();
        assert_eq!(burst, 5);
        // One second later: 10 more, not 11 and not more than the burst.
        let later = (0..100).filter(|_| b.take(r, 1_000_000)).count();
        assert_eq!(later, 5, "capped at the burst");
        // Over 10 s at 1 kHz of asks, the bucket admits its rate.
        let mut admitted = 0;
        for t in 0..10_000u64 {
            admitted += usize::from(b.take(r, 1_000_000 + t * 1_000));
        }
        assert!((99..=101).contains(&admitted), "admitted {admitted}");
    }

    #[test]
    fn bucket_ignores_a_clock_that_goes_backwards() {
        let r = Rate::new(1, 1);
        let mut b = TokenBucket::full(r, 5_000_000);
        assert!(b.take(r, 5_000_000));
        assert!(!b.take(r, 0), "going back in time must not refill");
        assert!(!b.take(r, 5_500_000));
        assert!(b.take(r, 6_000_001));
    }

    #[test]
    fn ping_rate_sets_both_limits_and_zero_lifts_them() {
        let l = FloodLimits::default().with_ping_rate(1_000);
        let i = Ask::Ping.index();
        assert_eq!(l.per_source[i], Rate::new(1_000, 1_000));
        assert_eq!(l.global[i], Rate::new(2_500, 2_500));
        let mut g = FloodGuard::new(FloodLimits::default().with_ping_rate(0), 1);
        assert!((0..1_000_000).all(|_| g.admit(0, addr(1), Ask::Ping)));
    }

    #[test]
    fn bucket_survives_huge_gaps_and_rates() {
        let r = Rate::new(u32::MAX, u32::MAX);
        let mut b = TokenBucket::full(r, 0);
        assert!(b.take(r, u64::MAX));
        let z = Rate::new(0, 0);
        let mut e = TokenBucket::full(z, 0);
        assert!(!e.take(z, u64::MAX));
    }

    #[test]
    fn one_source_is_held_to_its_bucket_and_others_still_get_theirs() {
        let mut g = FloodGuard::new(FloodLimits::default(), 7);
        let flooder = addr(1);
        // 1 s of hellos at 100 kHz from one source.
        let mut admitted = 0;
        for i in 0..100_000u64 {
            admitted += usize::from(g.admit(i * 10, flooder, Ask::Handshake));
        }
        // Burst 40 + 20/s for 1 s.
        assert!(admitted <= 40 + 20 + 1, "admitted {admitted}");
        assert_eq!(
            g.counters().source_limited[Ask::Handshake.index()],
            100_000 - admitted as u64
        );
        assert!(g.admit(1_000_000, addr(2), Ask::Handshake));
        assert!(g.admit(1_000_000, addr(3), Ask::Stats));
        // Other kinds of the flooding source have their own buckets.
        assert!(g.admit(1_000_000, flooder, Ask::Stats));
    }

    #[test]
    fn many_sources_are_held_to_the_global_budget() {
        let limits = FloodLimits::default();
        let budget = limits.global[Ask::Query.index()];
        let mut g = FloodGuard::new(limits, 7);
        // 10 s of A2S queries, each from a new port, 20 kHz.
        let mut admitted = 0u64;
        for i in 0..200_000u64 {
            let from = SocketAddr::from(([10, 1, 0, 1], (i % 60_000) as u16 + 1024));
            admitted += u64::from(g.admit(i * 50, from, Ask::Query));
        }
        let most = u64::from(budget.burst) + 10 * u64::from(budget.per_s) + 1;
        assert!(admitted <= most, "admitted {admitted} > {most}");
        assert!(g.counters().budget_limited[Ask::Query.index()] > 0);
        assert_eq!(g.counters().total(), 200_000 - admitted);
    }

    #[test]
    fn a_source_sharing_a_flooders_slot_was_held_to_the_flooders_bucket() {
        // The bug: sources were hashed into slots and two in one slot
        // shared a bucket. A health check whose port hashed where one
        // flooding source did went unanswered for the whole flood (1 in
        // 2,048 checks; seen once in the end-to-end flood test).
        let mut g = FloodGuard::new(FloodLimits::default(), 7);
        let flooder = addr(1);
        let checker = (1024..u16::MAX)
            .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
            .find(|&a| a != flooder && g.home(a) == g.home(flooder))
            .expect("some port shares the flooder's slot");
        for i in 0..10_000u64 {
            g.admit(i * 100, flooder, Ask::Stats);
        }
        assert!(
            !g.admit(999_900, flooder, Ask::Stats),
            "the flooder is held"
        );
        assert!(
            g.admit(999_900, checker, Ask::Stats),
            "the checker has a bucket of its own"
        );
    }

    #[test]
    fn sources_beyond_the_table_share_one_bucket_until_slots_go_idle() {
        let limits = FloodLimits {
            source_slots: PROBE,
            ..FloodLimits::default()
        };
        let stats = limits.per_source[Ask::Stats.index()];
        let mut g = FloodGuard::new(limits, 7);
        // 8 sources take every slot and drain their stats buckets.
        let first: Vec<_> = (0..PROBE as u16).map(addr).collect();
        for &a in &first {
            let n = (0..100).filter(|_| g.admit(0, a, Ask::Stats)).count();
            assert_eq!(n, stats.burst as usize, "each its own burst");
        }
        // More sources find no slot: they share the overflow bucket.
        let shared: usize = (100..200u16)
            .map(|i| (0..100).filter(|_| g.admit(0, addr(i), Ask::Stats)).count())
            .sum();
        assert_eq!(shared, stats.burst as usize, "one burst among them all");
        assert_eq!(g.sources.len(), PROBE, "the table did not grow");
        // Once the first ones have refilled, their slots are reused.
        let later = 2_000_000;
        assert!(first.iter().all(|a| {
            let e = g.sources.iter().flatten().find(|e| e.from == *a).unwrap();
            e.buckets[Ask::Stats.index()].is_full(stats, later)
        }));
        let n = (0..100)
            .filter(|_| g.admit(later, addr(300), Ask::Stats))
            .count();
        assert_eq!(n, stats.burst as usize, "a fresh entry of its own");
    }

    #[test]
    fn a_bucket_is_full_once_it_has_refilled_and_not_before() {
        let r = Rate::new(10, 2);
        let mut b = TokenBucket::full(r, 0);
        assert!(b.is_full(r, 0));
        assert!(b.take(r, 0));
        assert!(!b.is_full(r, 99_999));
        assert!(b.is_full(r, 100_000));
        assert!(!b.is_full(r, 0), "a clock that goes back refills nothing");
    }
}
