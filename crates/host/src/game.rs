//! Which game server a host runs: the reference server (tickpack's own,
//! [`crate::launch::ReferenceServer`]) or a real one. Each game is a
//! producer of a [`crate::launch::ServerSpec`]: its program, its flags, the
//! config files written into the instance's directory, its health check.
//!
//! - [`openarena`]: the OpenArena dedicated server (ioquake3), on LAN
//!   settings that never reach a master server, checked with the Quake 3
//!   `getinfo` query.
//! - [`pk3`]: the maps inside a Quake 3 data file (a zip), so an unknown
//!   map is refused before anything is started.

pub mod openarena;
pub mod pk3;

use serde::{Deserialize, Serialize};

pub use openarena::{GameError, OpenArena};

/// A game a host can run; spelled `reference` and `openarena` in host
/// files and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Game {
    /// `tickpack server` (the default).
    #[default]
    Reference,
    /// `/usr/games/openarena-server` (ioquake3 1.36, protocol 71).
    OpenArena,
}

impl Game {
    /// The name host files and flags use.
    pub fn as_str(self) -> &'static str {
        match self {
            Game::Reference => "reference",
            Game::OpenArena => "openarena",
        }
    }

    /// The port a game's servers bind by default (netns: every instance;
    /// process: port + id - 1).
    pub fn default_port(self) -> u16 {
        match self {
            Game::Reference => 27015,
            Game::OpenArena => openarena::PORT,
        }
    }
}

impl std::fmt::Display for Game {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Game {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Game::Reference, Game::OpenArena]
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| format!("unknown game {s:?} (expected reference or openarena)"))
    }
}
