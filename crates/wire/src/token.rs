//! Connect tokens and A2S challenges bound to the sender's address.
//!
//! A token is `window (u32) || HMAC-SHA256(secret, label || window || addr)[..16]`.
//! The window is `now_us / WINDOW_US`; a token is accepted in its own window
//! and the next, so it lives between [`WINDOW_US`] and twice that. Without
//! the server's secret nobody can make a token for an address they cannot
//! receive at, which is what proves the address before the server sends it
//! anything larger than what it sent.

use hmac::{Mac, SimpleHmac};
use sha2::Sha256;
use std::net::SocketAddr;

type HmacSha256 = SimpleHmac<Sha256>;

/// Bytes of a [`Token`].
pub const TOKEN_LEN: usize = 20;
/// Length of one token window in microseconds (10 s).
pub const WINDOW_US: u64 = 10_000_000;

/// An opaque connect token as carried on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token(pub [u8; TOKEN_LEN]);

/// The server's secret. Make one per server start from a random source.
#[derive(Clone)]
pub struct TokenKey {
    secret: [u8; 32],
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

impl TokenKey {
    pub fn new(secret: [u8; 32]) -> Self {
        Self { secret }
    }

    fn mac(&self, label: &[u8], window: u32, addr: SocketAddr) -> HmacSha256 {
        // A key of any length is valid for HMAC.
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.secret).expect("hmac takes any key");
        m.update(label);
        m.update(&window.to_le_bytes());
        match addr {
            SocketAddr::V4(a) => {
                m.update(&[4]);
                m.update(&a.ip().octets());
            }
            SocketAddr::V6(a) => {
                m.update(&[6]);
                m.update(&a.ip().octets());
            }
        }
        m.update(&addr.port().to_le_bytes());
        m
    }

    fn window(now_us: u64) -> u32 {
        (now_us / WINDOW_US) as u32
    }

    /// A token for `addr`, valid from now for at least [`WINDOW_US`].
    pub fn issue(&self, addr: SocketAddr, now_us: u64) -> Token {
        let window = Self::window(now_us);
        let tag = self
            .mac(b"tp-connect", window, addr)
            .finalize()
            .into_bytes();
        let mut t = [0u8; TOKEN_LEN];
        t[..4].copy_from_slice(&window.to_le_bytes());
        t[4..].copy_from_slice(&tag[..TOKEN_LEN - 4]);
        Token(t)
    }

    /// True when `token` was issued by this key for `addr` and has not expired.
    pub fn verify(&self, addr: SocketAddr, token: &Token, now_us: u64) -> bool {
        let window = u32::from_le_bytes(token.0[..4].try_into().expect("4 bytes"));
        let current = Self::window(now_us);
        if window != current && window.wrapping_add(1) != current {
            return false;
        }
        self.mac(b"tp-connect", window, addr)
            .verify_truncated_left(&token.0[4..])
            .is_ok()
    }

    /// The A2S challenge number for `addr` in the current window. Never
    /// `0xFFFFFFFF`, which A2S uses to ask for a challenge.
    pub fn a2s_challenge(&self, addr: SocketAddr, now_us: u64) -> u32 {
        self.a2s_challenge_in(addr, Self::window(now_us))
    }

    fn a2s_challenge_in(&self, addr: SocketAddr, window: u32) -> u32 {
        let tag = self.mac(b"tp-a2s", window, addr).finalize().into_bytes();
        let v = u32::from_le_bytes(tag[..4].try_into().expect("4 bytes"));
        if v == u32::MAX {
            0
        } else {
            v
        }
    }

    /// True when `challenge` is what [`Self::a2s_challenge`] gave `addr` in
    /// this window or the previous one.
    pub fn verify_a2s(&self, addr: SocketAddr, challenge: u32, now_us: u64) -> bool {
        let w = Self::window(now_us);
        challenge == self.a2s_challenge_in(addr, w)
            || challenge == self.a2s_challenge_in(addr, w.wrapping_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn token_is_bound_to_address_and_key() {
        let k = TokenKey::new([7; 32]);
        let t = k.issue(a("10.0.0.1:5000"), 1_000);
        assert!(k.verify(a("10.0.0.1:5000"), &t, 1_000));
        assert!(!k.verify(a("10.0.0.1:5001"), &t, 1_000), "other port");
        assert!(!k.verify(a("10.0.0.2:5000"), &t, 1_000), "other ip");
        assert!(!TokenKey::new([8; 32]).verify(a("10.0.0.1:5000"), &t, 1_000));
        let mut forged = t;
        forged.0[10] ^= 1;
        assert!(!k.verify(a("10.0.0.1:5000"), &forged, 1_000));
    }

    #[test]
    fn token_expires_after_two_windows() {
        let k = TokenKey::new([1; 32]);
        let addr = a("[::1]:27015");
        let t = k.issue(addr, 5 * WINDOW_US + 1);
        assert!(k.verify(addr, &t, 6 * WINDOW_US - 1));
        assert!(
            k.verify(addr, &t, 6 * WINDOW_US + 1),
            "next window still ok"
        );
        assert!(!k.verify(addr, &t, 7 * WINDOW_US), "expired");
        assert!(!k.verify(addr, &t, 4 * WINDOW_US), "not before issue");
    }

    #[test]
    fn a2s_challenge_bound_and_never_minus_one() {
        let k = TokenKey::new([3; 32]);
        let c = k.a2s_challenge(a("127.0.0.1:1"), 0);
        assert_ne!(c, u32::MAX);
        assert!(k.verify_a2s(a("127.0.0.1:1"), c, WINDOW_US + 5));
        assert!(!k.verify_a2s(a("127.0.0.1:2"), c, 0));
        assert!(!k.verify_a2s(a("127.0.0.1:1"), c, 2 * WINDOW_US));
    }
}
