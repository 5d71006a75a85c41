//! Which game server the steps run: tickpack's reference server (its
//! options come from the bench settings) or the real OpenArena server
//! (`tickpack_host::game::OpenArena`), and how the players speak to it.

use tickpack_host::game::OpenArena;

/// The server every step brings up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum GameServer {
    /// `tickpack server`, built from the bench settings.
    #[default]
    Reference,
    /// The OpenArena dedicated server with these settings (its `players`
    /// is emulated players plus bots; its `sv_fps` the bench's tick rate).
    OpenArena(OpenArena),
}

impl GameServer {
    /// The players' protocol.
    pub fn players_game(&self) -> tickpack_players::Game {
        match self {
            GameServer::Reference => tickpack_players::Game::Reference,
            GameServer::OpenArena(_) => tickpack_players::Game::OpenArena,
        }
    }

    /// The port every instance binds in the netns backends (each has its
    /// own address); the process backend counts up from a private port.
    pub fn netns_port(&self) -> u16 {
        match self {
            GameServer::Reference => 27015,
            GameServer::OpenArena(_) => tickpack_host::game::openarena::PORT,
        }
    }

    /// How long the servers of one step may take to answer their first
    /// health check: an OpenArena server loads its map and bot files
    /// (about a second of CPU each), and a step starts them all at once on
    /// the server cores.
    pub fn start_limit(&self, servers: u32) -> std::time::Duration {
        match self {
            GameServer::Reference => std::time::Duration::from_secs(20),
            GameServer::OpenArena(_) => std::time::Duration::from_secs(30 + 3 * u64::from(servers)),
        }
    }
}
