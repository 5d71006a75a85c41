//! Which game server a host or a benchmark runs, chosen once: the reference
//! server (its spec comes from the caller's own flags), OpenArena with its
//! typed settings ([`crate::openarena`]: a map rotation, one `addbot` per
//! bot, maps checked in the game data), or any game from its definition
//! file. [`GameAsk`] is what a host file or `host up` flags ask for, as
//! typed; [`GameAsk::resolve`] turns it into a [`GameServer`] or says in
//! one line what is wrong, so the host names no game.

use std::borrow::Cow;

use crate::launch::ServerSpec;
use crate::openarena::{self, OpenArena};
use crate::{GameDef, GameSettings, PlayerProtocol};

/// The server every instance (or every benchmark step) runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum GameServer {
    /// `tickpack server`, built from the caller's own settings.
    #[default]
    Reference,
    /// The OpenArena dedicated server with these settings (its `players`
    /// is emulated players plus bots; its `sv_fps` the tick rate).
    OpenArena(OpenArena),
    /// Any game from its definition with the run's settings for it.
    Defined {
        def: Box<GameDef>,
        settings: GameSettings,
    },
}

impl GameServer {
    /// A game from its definition with the run's settings for it.
    pub fn new(def: GameDef, settings: GameSettings) -> GameServer {
        GameServer::Defined {
            def: Box::new(def),
            settings,
        }
    }

    /// The game's name, as results and host files record it.
    pub fn name(&self) -> &str {
        match self {
            GameServer::Reference => "reference",
            GameServer::OpenArena(_) => "openarena",
            GameServer::Defined { def, .. } => &def.name,
        }
    }

    /// The players tickpack can emulate for it; `None`: it cannot play
    /// this game (its steps are judged on run delay and query latency).
    pub fn player_protocol(&self) -> Option<PlayerProtocol> {
        match self.definition().players.protocol {
            PlayerProtocol::None => None,
            p => Some(p),
        }
    }

    /// The game's definition: its own, or the built-in file of the
    /// reference server or OpenArena.
    pub fn definition(&self) -> Cow<'_, GameDef> {
        match self {
            GameServer::Defined { def, .. } => Cow::Borrowed(def),
            other => Cow::Owned(
                crate::registry::find(other.name())
                    .expect("the reference server and OpenArena are built in")
                    .0,
            ),
        }
    }

    /// The port every instance binds in the netns backends (each has its
    /// own address); the process backend counts up from it.
    pub fn port(&self) -> u16 {
        self.definition().port
    }

    /// How long the servers started at once may take to answer their
    /// first health check (the definition's `[ready]`).
    pub fn start_limit(&self, servers: u32) -> std::time::Duration {
        self.definition().start_limit(servers)
    }

    /// How a host launches it; `None` for the reference server, whose spec
    /// the caller builds from its own flags.
    pub fn spec(&self) -> Result<Option<ServerSpec>, String> {
        match self {
            GameServer::Reference => Ok(None),
            GameServer::OpenArena(oa) => Ok(Some(oa.spec())),
            GameServer::Defined { def, settings } => def
                .server_spec(settings)
                .map(Some)
                .map_err(|e| format!("game {}: {e}", def.name)),
        }
    }

    /// What depends on this machine (the program is installed, OpenArena's
    /// maps are in its data): call before anything is created.
    pub fn check_system(&self) -> Result<(), String> {
        match self {
            GameServer::Reference => Ok(()),
            GameServer::OpenArena(oa) => oa.check_system().map_err(|e| e.to_string()),
            GameServer::Defined { def, .. } => match crate::source::missing_program(def) {
                Some(why) => Err(why),
                None => Ok(()),
            },
        }
    }
}

/// What a host file (or `host up`'s flags) asks of the game, as typed.
#[derive(Debug, Clone, Default)]
pub struct GameAsk {
    /// `game = NAME|FILE`; `None`: the reference server.
    pub game: Option<String>,
    /// `map = [...]`: OpenArena's rotation (commas split), or a defined
    /// game's `map` variable (the first).
    pub maps: Option<Vec<String>>,
    /// OpenArena: bots fill each server up to this many players.
    pub players_per_server: Option<u8>,
    /// Bots added at start.
    pub bots: Option<u8>,
    /// The tick rate (OpenArena's `sv_fps`).
    pub tick_hz: Option<u16>,
    /// OpenArena's extra cvars, `CVAR=VALUE`.
    pub game_args: Option<Vec<String>>,
    /// A defined game's variables, `NAME=VALUE`.
    pub game_vars: Option<Vec<String>>,
}

impl GameAsk {
    /// Whether anything beyond the game's name was asked.
    fn any_setting(&self) -> bool {
        self.maps.is_some()
            || self.players_per_server.is_some()
            || self.bots.is_some()
            || self.tick_hz.is_some()
            || self.game_args.is_some()
    }

    /// The game server asked for, checked (pure: no file but a game's
    /// definition is read; [`GameServer::check_system`] looks at the
    /// machine). The error is one line.
    pub fn resolve(self) -> Result<GameServer, String> {
        match self.game.as_deref() {
            None | Some("reference") => {
                if self.game_vars.is_some() {
                    return Err(
                        "game_vars (--set) are a defined game's variables: add --game NAME|FILE"
                            .into(),
                    );
                }
                if self.any_setting() {
                    return Err("map, players per server, bots, sv_fps and game arguments are OpenArena settings: add --game openarena (game = \"openarena\")".into());
                }
                Ok(GameServer::Reference)
            }
            Some("openarena") => {
                if self.game_vars.is_some() {
                    return Err(
                        "game_vars (--set) are a defined game's variables: add --game NAME|FILE"
                            .into(),
                    );
                }
                let mut oa = OpenArena::default();
                if let Some(maps) = self.maps {
                    oa.maps = maps
                        .iter()
                        .flat_map(|m| m.split(','))
                        .map(|m| m.trim().to_string())
                        .collect();
                }
                oa.players = self.players_per_server.unwrap_or(oa.players);
                oa.bots = self.bots.unwrap_or(oa.players);
                oa.sv_fps = self.tick_hz.unwrap_or(oa.sv_fps);
                for a in self.game_args.unwrap_or_default() {
                    oa.args
                        .push(openarena::parse_game_arg(&a).map_err(|e| e.to_string())?);
                }
                oa.check().map_err(|e| e.to_string())?;
                Ok(GameServer::OpenArena(oa))
            }
            Some(other) => {
                let def = crate::source::load(other)
                    .map_err(|e| {
                        // An unknown name is said as such; a file's refusal
                        // keeps its FILE:LINE.
                        if e.line == 0 && !crate::registry::is_path(other) {
                            format!("game (--game): {}", e.message)
                        } else {
                            format!("game: {e}")
                        }
                    })?
                    .0;
                if self.players_per_server.is_some() || self.game_args.is_some() {
                    return Err(format!(
                        "players per server and game arguments are OpenArena settings; set {}'s variables with game_vars (--set NAME=VALUE)",
                        def.name
                    ));
                }
                let mut s = GameSettings::defaults(&def);
                if let Some(map) = self.maps.as_ref().and_then(|m| m.first()) {
                    s.set(&def, &format!("map={map}"))?;
                }
                for v in self.game_vars.iter().flatten() {
                    s.set(&def, v)?;
                }
                if let Some(b) = self.bots {
                    s.bots = u16::from(b);
                }
                if let Some(t) = self.tick_hz {
                    s.tick_hz = t;
                }
                Ok(GameServer::Defined {
                    def: Box::new(def),
                    settings: s,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The facts callers took from literals come from the built-in
    /// definition files, with the same values.
    #[test]
    fn the_built_in_games_ports_and_start_limits_come_from_their_files() {
        assert_eq!(GameServer::Reference.port(), 27015);
        assert_eq!(GameServer::Reference.start_limit(4).as_secs(), 20);
        let oa = GameServer::OpenArena(OpenArena::default());
        assert_eq!(oa.port(), openarena::PORT);
        assert_eq!(oa.start_limit(1).as_secs(), 33);
        assert_eq!(oa.start_limit(4).as_secs(), 42);
    }

    #[test]
    fn a_host_file_asks_for_a_game_by_name_with_its_settings() {
        let ask = |game: &str| GameAsk {
            game: Some(game.into()),
            ..Default::default()
        };
        assert_eq!(GameAsk::default().resolve().unwrap(), GameServer::Reference);
        let oa = GameAsk {
            maps: Some(vec!["oa_dm1, oa_dm4".into()]),
            players_per_server: Some(6),
            ..ask("openarena")
        }
        .resolve()
        .unwrap();
        let GameServer::OpenArena(o) = &oa else {
            panic!("{oa:?}")
        };
        assert_eq!((o.maps.len(), o.players, o.bots), (2, 6, 6));
        assert!(oa.spec().unwrap().is_some());
        let nexuiz = GameAsk {
            bots: Some(3),
            game_vars: Some(vec!["map=ruiner".into()]),
            ..ask("nexuiz")
        }
        .resolve()
        .unwrap();
        let GameServer::Defined { settings, .. } = &nexuiz else {
            panic!("{nexuiz:?}")
        };
        assert_eq!(settings.bots, 3);
        assert_eq!(settings.variables["map"], "ruiner");
        assert_eq!(nexuiz.player_protocol(), None);
        assert_eq!(GameServer::Reference.spec(), Ok(None));
    }

    #[test]
    fn settings_a_game_does_not_have_are_refused_in_one_line() {
        for (ask, needle) in [
            (
                GameAsk {
                    bots: Some(2),
                    ..Default::default()
                },
                "add --game openarena",
            ),
            (
                GameAsk {
                    game_vars: Some(vec!["map=x".into()]),
                    ..Default::default()
                },
                "add --game NAME|FILE",
            ),
            (
                GameAsk {
                    game: Some("nexuiz".into()),
                    players_per_server: Some(2),
                    ..Default::default()
                },
                "set nexuiz's variables",
            ),
            (
                GameAsk {
                    game: Some("quake9".into()),
                    ..Default::default()
                },
                "game (--game): unknown game",
            ),
            (
                GameAsk {
                    game: Some("openarena".into()),
                    game_args: Some(vec!["dedicated=2".into()]),
                    ..Default::default()
                },
                "set by the host",
            ),
        ] {
            let e = ask.clone().resolve().expect_err(needle);
            assert!(e.contains(needle) && !e.contains('\n'), "{ask:?}: {e}");
        }
    }
}
