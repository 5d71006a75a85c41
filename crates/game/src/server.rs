//! Which game server a host or a benchmark runs, chosen once: a game's
//! definition and the run's settings for it ([`GameServer`], one shape for
//! every game, the reference server and OpenArena included: their
//! command, config files and checks are in `games/*.toml`). [`GameAsk`]
//! is what a host file or `host up` flags ask for, as typed;
//! [`GameAsk::resolve`] turns it into a [`GameServer`] or says in one line
//! what is wrong, so the host names no game.

use std::path::Path;

use tickpack_wire::TickRate;

use crate::launch::ServerSpec;
use crate::{GameDef, GameSettings};

/// The server every instance (or every benchmark step) runs: a game's
/// definition with the run's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GameServer {
    pub def: GameDef,
    pub settings: GameSettings,
}

impl Default for GameServer {
    /// The reference server (`games/reference.toml`) at its defaults:
    /// what a host runs when nothing names a game.
    fn default() -> Self {
        GameServer::built_in("reference").expect("the reference server is built in")
    }
}

impl GameServer {
    /// A game launched from its definition with the run's settings for it
    /// (every game, the reference server and OpenArena included).
    pub fn new(def: GameDef, settings: GameSettings) -> GameServer {
        GameServer { def, settings }
    }

    /// A built-in game (`games/NAME.toml`) at its defaults.
    pub fn built_in(name: &str) -> Option<GameServer> {
        let (def, _) = crate::registry::find(name)?;
        let settings = GameSettings::defaults(&def);
        Some(GameServer::new(def, settings))
    }

    /// The game's name, as results and host files record it.
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// The players tickpack can emulate for it; `None`: it cannot play
    /// this game (its steps are judged on run delay and query latency).
    pub fn player_protocol(&self) -> Option<crate::EmulatedProtocol> {
        self.def.protocols().players
    }

    /// The game's definition.
    pub fn definition(&self) -> &GameDef {
        &self.def
    }

    /// The port every instance binds in the netns backends (each has its
    /// own address); the process backend counts up from it.
    pub fn port(&self) -> u16 {
        self.def.port
    }

    /// How long the servers started at once may take to answer their
    /// first health check (the definition's `[ready]`).
    pub fn start_limit(&self, servers: u32) -> std::time::Duration {
        self.def.start_limit(servers)
    }

    /// How a host launches it: the definition's command, files and checks
    /// filled with the settings.
    pub fn spec(&self) -> Result<ServerSpec, String> {
        self.def
            .server_spec(&self.settings)
            .map_err(|e| format!("game {}: {e}", self.def.name))
    }

    /// What depends on this machine (the program is installed, the maps
    /// the definition's `[data]` checks are in the game's data): call
    /// before anything is created.
    pub fn check_system(&self) -> Result<(), String> {
        if let Some(why) = crate::source::missing_program(&self.def) {
            return Err(why);
        }
        self.check_data()
    }

    /// The definition's `[data]` checks alone (no program looked for).
    pub fn check_data(&self) -> Result<(), String> {
        let data = &self.def.data;
        let Some(variable) = &data.pk3_maps else {
            return Ok(());
        };
        let maps = self
            .settings
            .variables
            .get(variable)
            .map_or("", String::as_str);
        let dirs: Vec<&Path> = data.pk3_dirs.iter().map(Path::new).collect();
        let first = self.def.variables.get(variable).map_or("", String::as_str);
        match crate::pk3::missing_map(&self.def.name, variable, maps, first, &dirs) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}

/// What a host file (or `host up`'s flags) asks of the game, as typed.
#[derive(Debug, Clone, Default)]
pub struct GameAsk {
    /// `game = NAME|FILE`; `None`: the reference server.
    pub game: Option<String>,
    /// Bots per server.
    pub bots: Option<u8>,
    /// The tick rate.
    pub tick_hz: Option<TickRate>,
    /// The game's variables, `NAME=VALUE`.
    pub game_vars: Option<Vec<String>>,
}

impl GameAsk {
    /// Whether anything was asked of the game: without, a host runs its
    /// own command (or its default one).
    pub fn asks_anything(&self) -> bool {
        self.game.is_some()
            || self.bots.is_some()
            || self.tick_hz.is_some()
            || self.game_vars.is_some()
    }

    /// The game server asked for, checked (pure: no file but a game's
    /// definition is read; [`GameServer::check_system`] looks at the
    /// machine). The error is one line.
    pub fn resolve(self) -> Result<GameServer, String> {
        let name = self.game.as_deref().unwrap_or("reference");
        let def = crate::source::load(name)
            .map_err(|e| {
                // An unknown name is said as such; a file's refusal
                // keeps its FILE:LINE.
                if e.line == 0 && !crate::registry::is_path(name) {
                    format!("game (--game): {}", e.message)
                } else {
                    format!("game: {e}")
                }
            })?
            .0;
        let mut s = GameSettings::defaults(&def);
        // A host runs no emulated players (people join from outside), so
        // `{players}` is 0 and `{players_and_bots}` the bots asked for.
        s.players = 0;
        for v in self.game_vars.iter().flatten() {
            s.set(&def, v)?;
        }
        if let Some(b) = self.bots {
            s.bots = u16::from(b);
        }
        if let Some(t) = self.tick_hz {
            s.tick_hz = t;
        }
        s.check(&def)?;
        Ok(GameServer::new(def, s))
    }
}

#[cfg(test)]
mod tests;
