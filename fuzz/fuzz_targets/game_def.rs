//! Run: `cargo +nightly fuzz run game_def` (from the repository root).
//! Any bytes as a game definition file: parsing and checking never panic,
//! and a definition that is accepted makes a launch spec from its defaults
//! without panicking either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickpack_game::{GameDef, GameSettings};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(def) = GameDef::parse("fuzz.toml", text) {
        let _ = def.server_spec(&GameSettings::defaults(&def));
    }
});
