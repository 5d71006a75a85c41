//! Which game server the steps run: tickpack's reference server (its
//! options come from the bench settings), the real OpenArena server
//! (`tickpack_host::game::OpenArena`), or any game from its definition
//! file (`tickpack_game::GameDef`, launched from its command template),
//! and how the players speak to it, if they can.

use tickpack_game::{GameDef, GameSettings, PlayerProtocol};
use tickpack_host::game::OpenArena;

/// The server every step brings up.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum GameServer {
    /// `tickpack server`, built from the bench settings.
    #[default]
    Reference,
    /// The OpenArena dedicated server with these settings (its `players`
    /// is emulated players plus bots; its `sv_fps` the bench's tick rate).
    OpenArena(OpenArena),
    /// Any game from its definition with the run's settings for it.
    Defined {
        def: Box<GameDef>,
        settings: GameSettings,
    },
}

impl GameServer {
    /// The game's name, as result.json records it.
    pub fn name(&self) -> &str {
        match self {
            GameServer::Reference => "reference",
            GameServer::OpenArena(_) => "openarena",
            GameServer::Defined { def, .. } => &def.name,
        }
    }

    /// The players' protocol; `None`: tickpack cannot play this game (its
    /// steps are judged on run delay and query latency).
    pub fn players_game(&self) -> Option<tickpack_players::Game> {
        match self {
            GameServer::Reference => Some(tickpack_players::Game::Reference),
            GameServer::OpenArena(_) => Some(tickpack_players::Game::OpenArena),
            GameServer::Defined { def, .. } => match def.players.protocol {
                PlayerProtocol::Reference => Some(tickpack_players::Game::Reference),
                PlayerProtocol::Q3 => Some(tickpack_players::Game::OpenArena),
                PlayerProtocol::None => None,
            },
        }
    }

    /// The port every instance binds in the netns backends (each has its
    /// own address); the process backend counts up from a private port.
    pub fn netns_port(&self) -> u16 {
        self.definition().port
    }

    /// The game's definition: its own, or the built-in file of the
    /// reference server or OpenArena.
    fn definition(&self) -> std::borrow::Cow<'_, GameDef> {
        match self {
            GameServer::Defined { def, .. } => std::borrow::Cow::Borrowed(def),
            other => std::borrow::Cow::Owned(
                tickpack_game::registry::find(other.name())
                    .expect("the reference server and OpenArena are built in")
                    .0,
            ),
        }
    }

    /// How long the servers of one step may take to answer their first
    /// health check (the definition's `[ready]`): an OpenArena server loads
    /// its map and bot files (about a second of CPU each), and a step
    /// starts them all at once on the server cores.
    pub fn start_limit(&self, servers: u32) -> std::time::Duration {
        self.definition().start_limit(servers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The facts the bench took from literals now come from the built-in
    /// definition files, with the same values.
    #[test]
    fn the_built_in_games_ports_and_start_limits_come_from_their_files() {
        assert_eq!(GameServer::Reference.netns_port(), 27015);
        assert_eq!(GameServer::Reference.start_limit(4).as_secs(), 20);
        let oa = GameServer::OpenArena(OpenArena::default());
        assert_eq!(oa.netns_port(), tickpack_host::game::openarena::PORT);
        assert_eq!(oa.start_limit(1).as_secs(), 33);
        assert_eq!(oa.start_limit(4).as_secs(), 42);
    }
}
