//! Property tests of [`Client::handle`] on hostile input: random bytes and
//! random mutations of the captured real-server datagrams, fed to clients
//! in every state, and every cut and garbled body of them fed to the client
//! expecting it (so they reach the bit reader and the Huffman decoder). It
//! must never panic, and a call must never allocate more than a bound (a
//! counting global allocator measures the peak).

mod fixture_data;

use fixture_data::{capture_config, captured};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use tickpack_q3::Client;

/// Bytes allocated and not yet freed, and the peak since the last reset.
struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to the system allocator unchanged; the
// counters are only statistics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// What one `handle` call may allocate at most (other test threads share
/// the counter, so this is generous; an unbounded allocation would blow
/// far past it).
const ALLOC_BOUND: usize = 8 << 20;

/// Clients after replaying 0, 1, 2, 5, 6 and 16 captured datagrams: every
/// state, plus one with half a gamestate in its fragment buffer.
fn clients() -> Vec<Client> {
    let d = captured();
    [0, 1, 2, 5, 6, 16]
        .iter()
        .map(|&n| {
            let mut c = Client::new(capture_config());
            let mut ev = Vec::new();
            for x in &d[..n] {
                c.handle(x, &mut ev).unwrap();
            }
            c
        })
        .collect()
}

fn feed(datagram: &[u8]) {
    for c in clients() {
        feed_one(c, datagram);
    }
}

fn feed_one(mut c: Client, datagram: &[u8]) {
    let mut ev = Vec::new();
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let _ = c.handle(datagram, &mut ev);
    let grew = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    assert!(grew < ALLOC_BOUND, "handle allocated {grew} bytes");
    assert!(ev.len() < 10_000);
    // The session stays usable.
    let _ = c.usercmd_packet(&[]);
    let mut out = Vec::new();
    let _ = c.usercmd_packet_into(&[], &mut out);
    let _ = c.handshake_packet();
}

/// A client that has taken the captured datagrams before `n`, so datagram
/// `n` passes the channel's sequence check and reaches the bit reader.
fn client_before(n: usize) -> Client {
    let d = captured();
    let mut c = Client::new(capture_config());
    let mut ev = Vec::new();
    for x in &d[..n] {
        c.handle(x, &mut ev).unwrap();
    }
    c
}

/// Every captured datagram cut at every length (a partial last code, a
/// message ending mid-field), and with the bits after every position
/// cleared, fed to the client expecting it: an error or a shorter message,
/// never a panic.
#[test]
fn every_cut_of_every_captured_datagram_is_handled() {
    let d = captured();
    for (n, whole) in d.iter().enumerate() {
        let before = client_before(n);
        for cut in 0..whole.len() {
            feed_one(before.clone(), &whole[..cut]);
            for keep in 0..8 {
                let mut part = whole[..=cut].to_vec();
                part[cut] &= (1u8 << keep) - 1;
                feed_one(before.clone(), &part);
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        any::<usize>().prop_map(Mutation::Truncate),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Garbled message bodies (the channel header kept, so they reach the
    /// bit reader and the Huffman decoder) fed to the client expecting them.
    #[test]
    fn garbled_bodies_reach_the_decoder_and_never_panic(
        which in 0usize..16,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut d = captured()[which].clone();
        let header = 4.min(d.len());
        for (at, x) in flips {
            if d.len() > header {
                let i = header + at.index(d.len() - header);
                d[i] ^= x;
            }
        }
        d.truncate(header + cut.index(d.len() - header + 1));
        feed_one(client_before(which), &d);
    }

    #[test]
    fn random_datagrams_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1500), oob in any::<bool>()) {
        let mut d = bytes;
        if oob {
            d.splice(0..0, [0xFF; 4]);
        }
        feed(&d);
    }

    #[test]
    fn mutated_captures_never_panic(
        which in 0usize..16,
        muts in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut d = captured()[which].clone();
        for m in muts {
            match m {
                Mutation::Flip(i, x) if !d.is_empty() => {
                    let n = d.len();
                    d[i % n] ^= x;
                }
                Mutation::Truncate(i) => d.truncate(i % (d.len() + 1)),
                Mutation::Insert(i, v) => {
                    let at = i % (d.len() + 1);
                    d.splice(at..at, v);
                }
                Mutation::Flip(..) => {}
            }
        }
        feed(&d);
    }
}
