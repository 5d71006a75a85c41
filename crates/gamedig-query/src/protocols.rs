//! Each gamedig protocol name of a definition (`tickpack_game::gamedig`)
//! as gamedig's own [`Protocol`] value, in an ad-hoc [`Game`], and what
//! tickpack trusts of its answers.

use gamedig::games::minecraft::types::{LegacyGroup, Server};
use gamedig::protocols::gamespy::GameSpyVersion;
use gamedig::protocols::quake::QuakeVersion;
use gamedig::protocols::types::{GatherToggle, ProprietaryProtocol, Protocol};
use gamedig::protocols::valve::Engine;
use gamedig::{ExtraRequestSettings, Game};
use tickpack_game::GamedigProtocol;

/// gamedig's value for a name of the table; `None` only if the table has a
/// name this crate does not know (a test keeps that from shipping).
pub fn protocol(p: GamedigProtocol) -> Option<Protocol> {
    use ProprietaryProtocol as P;
    let mc = |s| Protocol::PROPRIETARY(P::Minecraft(s));
    Some(match p.name() {
        "valve" => Protocol::Valve(Engine::Source(None)),
        "goldsrc" => Protocol::Valve(Engine::GoldSrc(false)),
        "quake1" => Protocol::Quake(QuakeVersion::One),
        "quake2" => Protocol::Quake(QuakeVersion::Two),
        "quake3" => Protocol::Quake(QuakeVersion::Three),
        "gamespy1" => Protocol::Gamespy(GameSpyVersion::One),
        "gamespy2" => Protocol::Gamespy(GameSpyVersion::Two),
        "gamespy3" => Protocol::Gamespy(GameSpyVersion::Three),
        "unreal2" => Protocol::Unreal2,
        "minecraft" => mc(None),
        "minecraft-java" => mc(Some(Server::Java)),
        "minecraft-bedrock" => mc(Some(Server::Bedrock)),
        "minecraft-legacy16" => mc(Some(Server::Legacy(LegacyGroup::V1_6))),
        "minecraft-legacy14" => mc(Some(Server::Legacy(LegacyGroup::V1_4))),
        "minecraft-legacyb18" => mc(Some(Server::Legacy(LegacyGroup::VB1_8))),
        "theship" => Protocol::PROPRIETARY(P::TheShip),
        "ffow" => Protocol::PROPRIETARY(P::FFOW),
        "jc2m" => Protocol::PROPRIETARY(P::JC2M),
        "savage2" => Protocol::PROPRIETARY(P::Savage2),
        "mindustry" => Protocol::PROPRIETARY(P::Mindustry),
        "eco" => Protocol::PROPRIETARY(P::Eco),
        _ => return None,
    })
}

/// The ad-hoc game gamedig is asked as (the port is always given).
pub fn game(p: GamedigProtocol) -> Option<Game> {
    Some(Game {
        name: p.name(),
        default_port: 0,
        protocol: protocol(p)?,
        request_settings: extra(),
    })
}

/// What every call asks: the server's info only. No player list or rules
/// requests (each would be another round trip with its own timeout, and
/// gamedig's Unreal 2 rules parser prints to stdout on a bad packet), and
/// any Valve app id.
pub fn extra() -> ExtraRequestSettings {
    ExtraRequestSettings::default()
        .set_gather_players(GatherToggle::Skip)
        .set_gather_rules(GatherToggle::Skip)
        .set_check_app_id(false)
}

/// Whether gamedig's player count can be believed: not for Quake 1/2/3,
/// whose player lines gamedig 0.9 never parses (it always says 0).
pub fn players_known(p: GamedigProtocol) -> bool {
    !matches!(protocol(p), Some(Protocol::Quake(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_of_the_definition_table_has_a_gamedig_protocol() {
        for p in GamedigProtocol::all() {
            assert!(game(p).is_some(), "{p} has no gamedig protocol");
        }
        let quake = ["quake1", "quake2", "quake3"];
        for p in GamedigProtocol::all() {
            assert_eq!(players_known(p), !quake.contains(&p.name()), "{p}");
        }
    }
}
