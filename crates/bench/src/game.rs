//! Which game server the steps run: [`tickpack_game::GameServer`] (the
//! reference server, whose options come from the bench settings, the real
//! OpenArena server, or any game from its definition file), and how the
//! players speak to it, if they can.

pub use tickpack_game::GameServer;

/// The players' protocol for a game; `None`: tickpack cannot play it (its
/// steps are judged on run delay and query latency).
pub fn players_game(game: &GameServer) -> Option<tickpack_players::Protocol> {
    match game.player_protocol()? {
        tickpack_game::PlayerProtocol::Reference => Some(tickpack_players::Protocol::Tickpack),
        tickpack_game::PlayerProtocol::Q3 => Some(tickpack_players::Protocol::Q3),
        tickpack_game::PlayerProtocol::None => None,
    }
}
