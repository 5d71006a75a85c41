//! Which game server the steps run: [`tickpack_game::GameServer`] (any
//! game from its definition file with the run's settings; each step's tick
//! rate, bots and players per server fill its placeholders), and how the
//! players speak to it, if they can.

pub use tickpack_game::GameServer;

/// The players' protocol for a game; `None`: tickpack cannot play it (its
/// steps are judged on run delay and query latency).
pub fn players_game(game: &GameServer) -> Option<tickpack_players::Protocol> {
    game.player_protocol()
}

/// How many source addresses the load generator needs so that no server
/// sees more players from one address than the game allows (its
/// definition's `[players] per_address`): 0 (the kernel's one address)
/// when the game sets no limit, the players fit one address, or there are
/// none.
pub fn source_addrs_for(game: &GameServer, players_per_server: u32) -> u32 {
    if players_game(game).is_none() || players_per_server == 0 {
        return 0;
    }
    match game.definition().players.per_address {
        Some(limit) if players_per_server > u32::from(limit) => {
            tickpack_players::sources::sources_needed(
                players_per_server as usize,
                usize::from(limit),
            ) as u32
        }
        _ => 0,
    }
}

/// The game's limit of players per source address, if it has one.
pub fn per_source_limit(game: &GameServer) -> Option<usize> {
    game.definition().players.per_address.map(usize::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openarena() -> GameServer {
        GameServer::built_in("openarena").unwrap()
    }

    #[test]
    fn openarena_with_twelve_players_takes_three_source_addresses() {
        let oa = openarena();
        assert_eq!(per_source_limit(&oa), Some(4), "games/openarena.toml");
        assert_eq!(source_addrs_for(&oa, 12), 3);
        assert_eq!(source_addrs_for(&oa, 13), 4);
        assert_eq!(source_addrs_for(&oa, 4), 0, "one address holds them");
        assert_eq!(source_addrs_for(&oa, 0), 0);
        // No limit in the reference server's definition.
        assert_eq!(source_addrs_for(&GameServer::default(), 1000), 0);
    }
}
