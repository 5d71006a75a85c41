//! The host's health checks, told apart from strangers' stats requests,
//! and never accepted twice.
//!
//! A reference server answers unproven stats requests from a budget that
//! every source shares; a peer flooding it once drained that budget, the
//! host's checks went unanswered, and the host killed a healthy server.
//! The host therefore gives each server it starts a secret [`HealthKey`]
//! (in the environment variable [`HEALTH_KEY_ENV`], which only the
//! server's own uid and root can read; a new key at every start) and signs
//! each check: [`HealthKey::check`] makes the `nonce` and the
//! [`CheckProof`] of a `StatsRequest`. A server keeps a [`CheckGate`] and
//! answers a check it admits from a budget of its own.
//!
//! A check carries:
//!
//! - `counter` (u64): check number 1, 2, 3, ... of this key. The gate
//!   admits only a counter above the highest it admitted, so a copy of a
//!   check (a replay), or any older one, is [`CheckVerdict::Stale`]: the
//!   server drops it before it takes anything of the check budget, and
//!   before any HMAC is computed. A copy resent 100 times a second once
//!   drained that budget and got a healthy server killed (issue 38).
//! - `nonce` (u64), echoed in the reply: `seq || HMAC-SHA256(secret,
//!   "tp-health-echo" || seq)[..4]` with `seq` the counter's low 32 bits,
//!   so the host knows a reply answers one of its checks
//!   ([`HealthKey::answers`]).
//! - `tag`: `HMAC-SHA256(secret, "tp-health-check" || counter || nonce)`,
//!   its first 16 bytes: a stranger forges one in 2^128 tries, far more
//!   than any flood can send.
//!
//! Freshness needs no clock: the key is new at every start of the server
//! (the host makes one in each start), so the gate's highest counter
//! starts again with it, and a check of an earlier start does not verify.
//! A server given a key that outlives its process (by hand) admits any
//! first counter, so each check captured before its restart could be
//! replayed once, until the host's next check passes it.
//!
//! Someone who sees a check on its way (root on the host, or on the path)
//! and gets a copy to the server before the original spends that check
//! (the original is then refused as stale); who is on the path can as
//! well drop it.

use hmac::{Mac, SimpleHmac};
use sha2::Sha256;

type HmacSha256 = SimpleHmac<Sha256>;

/// The variable through which the host hands a server its key (64 hex digits).
pub const HEALTH_KEY_ENV: &str = "TICKPACK_HEALTH_KEY";

/// Bytes of a [`CheckProof`]'s tag.
pub const CHECK_TAG_LEN: usize = 16;

/// Bytes a [`CheckProof`] takes in a `StatsRequest` (counter and tag).
pub const CHECK_PROOF_LEN: usize = 8 + CHECK_TAG_LEN;

/// What makes a `StatsRequest` one of the host's checks: its number and
/// its tag ([`HealthKey::check`]). Counter 0 is no proof (what a request
/// without one carries: zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckProof {
    pub counter: u64,
    pub tag: [u8; CHECK_TAG_LEN],
}

/// A server's health-check secret.
#[derive(Clone, PartialEq, Eq)]
pub struct HealthKey {
    secret: [u8; 32],
}

impl std::fmt::Debug for HealthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HealthKey(..)")
    }
}

impl HealthKey {
    pub fn new(secret: [u8; 32]) -> Self {
        Self { secret }
    }

    /// The key from its 64 hex digits ([`HealthKey::to_hex`]); `None` for
    /// anything else.
    pub fn from_hex(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.len() != 64 || !text.is_ascii() {
            return None;
        }
        let mut secret = [0u8; 32];
        for (i, b) in secret.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self { secret })
    }

    pub fn to_hex(&self) -> String {
        self.secret.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn mac(&self, label: &[u8]) -> HmacSha256 {
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.secret).expect("hmac takes any key");
        m.update(label);
        m
    }

    /// The nonce echoed by the reply to a check whose counter's low 32
    /// bits are `seq`.
    fn echo(&self, seq: u32) -> u64 {
        let mut m = self.mac(b"tp-health-echo");
        m.update(&seq.to_le_bytes());
        let out = m.finalize().into_bytes();
        (u64::from(seq) << 32) | u64::from(u32::from_le_bytes(out[..4].try_into().expect("4")))
    }

    fn proof_mac(&self, counter: u64, nonce: u64) -> HmacSha256 {
        let mut m = self.mac(b"tp-health-check");
        m.update(&counter.to_le_bytes());
        m.update(&nonce.to_le_bytes());
        m
    }

    /// The `nonce` and proof of check number `counter` (1, 2, 3, ...:
    /// each larger than the last, or the server refuses it).
    pub fn check(&self, counter: u64) -> (u64, CheckProof) {
        let nonce = self.echo(counter as u32);
        let out = self.proof_mac(counter, nonce).finalize().into_bytes();
        let mut tag = [0u8; CHECK_TAG_LEN];
        tag.copy_from_slice(&out[..CHECK_TAG_LEN]);
        (nonce, CheckProof { counter, tag })
    }

    /// Whether `proof` and `nonce` were made together with this key (in
    /// constant time). Freshness is [`CheckGate`]'s.
    pub fn verify(&self, nonce: u64, proof: &CheckProof) -> bool {
        proof.counter != 0
            && self
                .proof_mac(proof.counter, nonce)
                .verify_truncated_left(&proof.tag)
                .is_ok()
    }

    /// Whether a reply's echoed `nonce` is that of a check made with this
    /// key.
    pub fn answers(&self, nonce: u64) -> bool {
        self.echo((nonce >> 32) as u32) == nonce
    }
}

/// What a server makes of a stats request ([`CheckGate::judge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckVerdict {
    /// The host's check, new: answer it from the host's budget.
    Fresh,
    /// A counter at or below the last check admitted (a replay, or an old
    /// check): drop it, count it, spend nothing on it.
    Stale,
    /// No proof, or one that does not verify: a stranger's request, under
    /// the rules every unproven source meets.
    Unproven,
}

/// A server's side of the checks: its key and the highest counter it
/// admitted. No clock, no I/O.
#[derive(Debug, Clone)]
pub struct CheckGate {
    key: HealthKey,
    highest: u64,
}

impl CheckGate {
    pub fn new(key: HealthKey) -> Self {
        Self { key, highest: 0 }
    }

    /// Judges one stats request; a [`CheckVerdict::Fresh`] one raises the
    /// bar to its counter. Costs at most one HMAC, none for a stale
    /// counter or a request without proof.
    pub fn judge(&mut self, nonce: u64, proof: Option<&CheckProof>) -> CheckVerdict {
        let Some(p) = proof.filter(|p| p.counter != 0) else {
            return CheckVerdict::Unproven;
        };
        if p.counter <= self.highest {
            return CheckVerdict::Stale;
        }
        if !self.key.verify(nonce, p) {
            return CheckVerdict::Unproven;
        }
        self.highest = p.counter;
        CheckVerdict::Fresh
    }

    /// The highest counter admitted (0: none yet).
    pub fn highest(&self) -> u64 {
        self.highest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_checks_verify_and_strangers_do_not() {
        let k = HealthKey::new([7; 32]);
        let other = HealthKey::new([8; 32]);
        for counter in [1, 2, 1000, u64::from(u32::MAX) + 5, u64::MAX] {
            let (nonce, proof) = k.check(counter);
            assert!(k.verify(nonce, &proof));
            assert!(k.answers(nonce));
            assert!(!other.verify(nonce, &proof));
            assert!(!other.answers(nonce));
            // Another nonce, counter or tag bit: not this check.
            assert!(!k.verify(nonce ^ 1, &proof));
            let mut p = proof;
            p.counter += 1;
            assert!(!k.verify(nonce, &p));
            let mut p = proof;
            p.tag[15] ^= 1;
            assert!(!k.verify(nonce, &p));
        }
        // What flooders send: small counters and random numbers.
        let forged = (0..100_000u64).filter(|&n| k.answers(n)).count();
        assert_eq!(forged, 0);
        let zero = CheckProof {
            counter: 0,
            tag: [0; CHECK_TAG_LEN],
        };
        assert!(!k.verify(0, &zero), "zeros are no proof");
    }

    #[test]
    fn a_key_travels_as_hex_and_nothing_else_is_one() {
        let k = HealthKey::new(core::array::from_fn(|i| i as u8 * 7));
        assert_eq!(HealthKey::from_hex(&k.to_hex()), Some(k.clone()));
        assert_eq!(format!("{k:?}"), "HealthKey(..)");
        for bad in ["", "00", &"g".repeat(64), &"0".repeat(63), &"é".repeat(32)] {
            assert_eq!(HealthKey::from_hex(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_copy_of_a_check_is_stale_and_a_later_check_is_fresh() {
        let k = HealthKey::new([1; 32]);
        let mut gate = CheckGate::new(k.clone());
        let (n1, p1) = k.check(1);
        assert_eq!(gate.judge(n1, Some(&p1)), CheckVerdict::Fresh);
        for _ in 0..1000 {
            assert_eq!(gate.judge(n1, Some(&p1)), CheckVerdict::Stale);
        }
        // Checks lost on the way leave gaps: fine, the counter only rises.
        let (n5, p5) = k.check(5);
        assert_eq!(gate.judge(n5, Some(&p5)), CheckVerdict::Fresh);
        let (n3, p3) = k.check(3);
        assert_eq!(gate.judge(n3, Some(&p3)), CheckVerdict::Stale, "older");
        assert_eq!(gate.highest(), 5);
    }

    #[test]
    fn a_forged_proof_never_raises_the_bar() {
        let k = HealthKey::new([2; 32]);
        let mut gate = CheckGate::new(k.clone());
        let forged = CheckProof {
            counter: u64::MAX,
            tag: [0xAB; CHECK_TAG_LEN],
        };
        assert_eq!(gate.judge(9, Some(&forged)), CheckVerdict::Unproven);
        assert_eq!(gate.judge(9, None), CheckVerdict::Unproven);
        assert_eq!(gate.highest(), 0);
        let (n, p) = k.check(1);
        assert_eq!(gate.judge(n, Some(&p)), CheckVerdict::Fresh);
        // Another key's check (an earlier start's) is no check of this one.
        let old = HealthKey::new([3; 32]);
        let (n, p) = old.check(7);
        assert_eq!(gate.judge(n, Some(&p)), CheckVerdict::Unproven);
        assert_eq!(gate.highest(), 1);
    }

    proptest::proptest! {
        /// Whatever mix of the host's checks, copies of them and forgeries
        /// arrives in whatever order, the gate admits only genuine checks,
        /// each at most once, each above every one before it.
        #[test]
        fn the_gate_admits_each_genuine_check_once_and_in_order(
            arrivals in proptest::collection::vec((1u64..64, proptest::prelude::any::<u8>()), 0..300),
        ) {
            let k = HealthKey::new([5; 32]);
            let mut gate = CheckGate::new(k.clone());
            let mut admitted = vec![];
            for (counter, how) in arrivals {
                let (nonce, mut proof) = k.check(counter);
                let forged = how % 4 == 0;
                if forged {
                    proof.tag[usize::from(how) % CHECK_TAG_LEN] ^= 1 | how;
                }
                let before = gate.highest();
                let v = gate.judge(nonce, Some(&proof));
                match v {
                    CheckVerdict::Fresh => {
                        proptest::prop_assert!(!forged);
                        proptest::prop_assert!(counter > before);
                        admitted.push(counter);
                    }
                    CheckVerdict::Stale => proptest::prop_assert!(counter <= before),
                    CheckVerdict::Unproven => proptest::prop_assert!(forged && counter > before),
                }
            }
            proptest::prop_assert!(admitted.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
