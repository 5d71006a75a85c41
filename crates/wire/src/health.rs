//! The host's health checks, told apart from strangers' stats requests.
//!
//! A reference server answers unproven stats requests from a budget that
//! every source shares; a peer flooding it once drained that budget, the
//! host's checks went unanswered, and the host killed a healthy server.
//! The host therefore gives each server it starts a secret [`HealthKey`]
//! (in the environment variable [`HEALTH_KEY_ENV`], which only the
//! server's own uid and root can read) and puts a [`HealthKey::nonce`] in
//! the `nonce` of its `StatsRequest`. A server that can
//! [`HealthKey::verify`] the nonce answers it from a budget of its own.
//!
//! A nonce is `seq (u32) || HMAC-SHA256(secret, "tp-health" || seq)[..4]`:
//! a stranger guesses one in 2^32; one who sees a check on the wire (root
//! on the host) could replay it, which buys only answers from that small
//! budget.

use hmac::{Mac, SimpleHmac};
use sha2::Sha256;

/// The variable through which the host hands a server its key (64 hex digits).
pub const HEALTH_KEY_ENV: &str = "TICKPACK_HEALTH_KEY";

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

    fn tag(&self, seq: u32) -> u32 {
        let mut m =
            <SimpleHmac<Sha256> as Mac>::new_from_slice(&self.secret).expect("hmac takes any key");
        m.update(b"tp-health");
        m.update(&seq.to_le_bytes());
        let out = m.finalize().into_bytes();
        u32::from_le_bytes(out[..4].try_into().expect("4 bytes"))
    }

    /// The nonce of check number `seq`.
    pub fn nonce(&self, seq: u32) -> u64 {
        (u64::from(seq) << 32) | u64::from(self.tag(seq))
    }

    /// Whether `nonce` was made with this key.
    pub fn verify(&self, nonce: u64) -> bool {
        self.tag((nonce >> 32) as u32) == nonce as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_nonces_verify_and_strangers_do_not() {
        let k = HealthKey::new([7; 32]);
        let other = HealthKey::new([8; 32]);
        for seq in [0, 1, 2, 1000, u32::MAX] {
            assert!(k.verify(k.nonce(seq)));
            assert!(!other.verify(k.nonce(seq)));
        }
        // What flooders send: small counters and random numbers.
        let forged = (0..100_000u64).filter(|&n| k.verify(n)).count();
        assert_eq!(forged, 0);
        assert!(!k.verify(k.nonce(5) ^ 1));
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
}
