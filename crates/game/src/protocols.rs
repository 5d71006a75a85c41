//! What a game speaks, resolved once from its definition
//! ([`GameDef::protocols`]): the protocol tickpack's players speak to it
//! ([`EmulatedProtocol`], none when it cannot be played), the check the
//! host keeps it alive with ([`Health`]) and what a prober asks it
//! ([`Probe`]: one of the sans-I/O query families or a gamedig protocol).
//! Every crate takes these values from here; none converts one enum into
//! another of its own.

use crate::def::{GameDef, PlayerProtocol, QueryProtocol};
use crate::gamedig::GamedigProtocol;
use crate::launch::Health;
use crate::query::Protocol as QueryFamily;

/// A protocol tickpack's emulated players speak.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum EmulatedProtocol {
    /// tickpack's own protocol (its reference server).
    #[default]
    Tickpack,
    /// Quake III Arena protocol 71, as ioquake3 dedicated servers speak it.
    Q3,
    /// The 0.7 protocol (0.7.5) of the tw7 engine.
    Tw7,
}

impl EmulatedProtocol {
    /// The definitions' name for it (`[players] protocol`).
    pub fn definition(self) -> PlayerProtocol {
        match self {
            EmulatedProtocol::Tickpack => PlayerProtocol::Reference,
            EmulatedProtocol::Q3 => PlayerProtocol::Q3,
            EmulatedProtocol::Tw7 => PlayerProtocol::Tw7,
        }
    }
}

impl EmulatedProtocol {
    /// The game results name for the players' protocol: the name of the
    /// first built-in game definition whose players speak it (the server
    /// the protocol was written against, so results from before keep
    /// reading), or the protocol's own name if none does.
    pub fn game_name(self) -> String {
        let protocol = self.definition();
        crate::registry::built_in()
            .into_iter()
            .find(|(def, _)| def.players.protocol == protocol)
            .map_or_else(|| protocol.as_str().to_string(), |(def, _)| def.name)
    }
}

impl PlayerProtocol {
    /// What tickpack's players speak for it; `None` for `none`.
    pub fn emulated(self) -> Option<EmulatedProtocol> {
        match self {
            PlayerProtocol::Reference => Some(EmulatedProtocol::Tickpack),
            PlayerProtocol::Q3 => Some(EmulatedProtocol::Q3),
            PlayerProtocol::Tw7 => Some(EmulatedProtocol::Tw7),
            PlayerProtocol::None => None,
        }
    }
}

/// What a prober asks a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Probe {
    /// One of tickpack's own sans-I/O query families.
    Own(QueryFamily),
    /// A protocol of the gamedig crate.
    Gamedig(GamedigProtocol),
}

impl Probe {
    /// What one query is called in a summary.
    pub fn query_name(self) -> String {
        match self {
            Probe::Own(QueryFamily::Q3) => "q3 getinfo".into(),
            Probe::Own(QueryFamily::A2s) => "A2S_INFO".into(),
            Probe::Gamedig(g) => format!("gamedig {g}"),
        }
    }
}

impl From<QueryFamily> for Probe {
    fn from(p: QueryFamily) -> Self {
        Probe::Own(p)
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Probe::Own(p) => f.pad(p.as_str()),
            Probe::Gamedig(g) => f.pad(&g.probe_name()),
        }
    }
}

impl std::str::FromStr for Probe {
    type Err = String;
    /// `q3`, `a2s` or `gamedig:NAME`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix("gamedig:") {
            Some(name) => name.parse().map(Probe::Gamedig),
            None => s.parse().map(Probe::Own).map_err(|_| {
                format!(
                    "unknown query protocol {:?} (expected q3, a2s or gamedig:NAME)",
                    s.chars().take(40).collect::<String>()
                )
            }),
        }
    }
}

/// A game's protocols, resolved from its definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocols {
    /// What tickpack's players speak to it; `None`: it cannot be played
    /// (judged on run delay and query latency).
    pub players: Option<EmulatedProtocol>,
    /// The query protocol its `[query]` names, as its check knows it:
    /// the host asks with this (`None` for gamedig games and games without
    /// a query: their process is watched).
    pub health: Health,
    /// What a prober asks it, if anything (the reference server answers
    /// A2S besides its stats).
    pub probe: Option<Probe>,
}

impl QueryProtocol {
    /// The host's check for a server that speaks this.
    pub fn health(self) -> Health {
        match self {
            QueryProtocol::Q3 => Health::Q3,
            QueryProtocol::A2s => Health::A2s,
            QueryProtocol::Tickpack => Health::TickpackStats,
            // The host checks gamedig games by their process only.
            QueryProtocol::None | QueryProtocol::Gamedig => Health::None,
        }
    }
}

impl GameDef {
    /// Its protocols, resolved once.
    pub fn protocols(&self) -> Protocols {
        let q = self.query.protocol;
        let probe = match q {
            QueryProtocol::Q3 => Some(Probe::Own(QueryFamily::Q3)),
            QueryProtocol::A2s | QueryProtocol::Tickpack => Some(Probe::Own(QueryFamily::A2s)),
            QueryProtocol::Gamedig => self.query.gamedig_protocol().map(Probe::Gamedig),
            QueryProtocol::None => None,
        };
        Protocols {
            players: self.players.protocol.emulated(),
            health: q.health(),
            probe,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_game_resolves_its_protocols_from_its_file() {
        let games = crate::registry::built_in();
        assert!(!games.is_empty());
        for (def, _) in games {
            let p = def.protocols();
            // The players' protocol goes back to the definition's name.
            assert_eq!(
                p.players.map_or(PlayerProtocol::None, |e| e.definition()),
                def.players.protocol,
                "{}",
                def.name
            );
            assert_eq!(p.health, def.query.protocol.health(), "{}", def.name);
            assert_eq!(
                p.probe.is_none(),
                def.query.protocol == QueryProtocol::None,
                "{}",
                def.name
            );
        }
    }

    #[test]
    fn probes_parse_from_the_names_results_record() {
        for s in ["q3", "a2s", "gamedig:unreal2", "gamedig:minecraft-java"] {
            assert_eq!(s.parse::<Probe>().unwrap().to_string(), s);
        }
        assert!("gamespy"
            .parse::<Probe>()
            .unwrap_err()
            .contains("gamedig:NAME"));
        assert!("gamedig:q3a"
            .parse::<Probe>()
            .unwrap_err()
            .contains("unknown gamedig protocol"));
    }

    #[test]
    fn the_reference_server_is_probed_with_a2s_and_checked_with_its_stats() {
        let (def, _) = crate::registry::built_in()
            .into_iter()
            .find(|(d, _)| d.query.protocol == QueryProtocol::Tickpack)
            .expect("a built-in game answers tickpack's stats");
        let p = def.protocols();
        assert_eq!(p.health, Health::TickpackStats);
        assert_eq!(p.probe, Some(Probe::Own(QueryFamily::A2s)));
        assert_eq!(p.players, Some(EmulatedProtocol::Tickpack));
    }
}
