//! What a prober asks: one of tickpack's own query protocols (q3, a2s;
//! sans-I/O sessions on the prober's sockets) or a gamedig protocol
//! (asked through `tickpack-gamedig-query`'s driver, a thread per call).
//! Named `q3`, `a2s` or `gamedig:NAME` on the command line and in results.
//! The value is the game crate's one ([`tickpack_game::Probe`]), which a
//! definition resolves to with [`tickpack_game::GameDef::protocols`].

/// A prober's protocol.
pub use tickpack_game::Probe as ProbeProtocol;
