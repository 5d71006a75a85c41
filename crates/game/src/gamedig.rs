//! The gamedig protocols a definition may name (`[query] protocol =
//! "gamedig"` with `gamedig = "NAME"`): a static table of names, so a
//! definition is checked without the gamedig crate or any I/O. The driver
//! that asks them (`tickpack-gamedig-query`) maps every name here to
//! gamedig's own value, and its tests fail if a name has no mapping.
//!
//! Names are tickpack's, not gamedig's enum spellings (which change with
//! its versions): one per protocol gamedig 0.9 speaks without TLS or
//! credentials. q3 and A2S have tickpack's own query (`protocol = "q3"`,
//! `"a2s"`); gamedig's `quake3` and `valve` stay for comparison and for
//! servers that differ from ours.

/// `(name, what it speaks)`, in the order messages and docs list them.
pub const GAMEDIG_PROTOCOLS: [(&str, &str); 21] = [
    ("valve", "Valve A2S (Source engine), any app id"),
    ("goldsrc", "Valve A2S, GoldSrc engine (Half-Life 1 mods)"),
    ("quake1", "Quake 1 `status` (player counts unknown)"),
    ("quake2", "Quake 2 `status` (player counts unknown)"),
    ("quake3", "Quake 3 `getstatus` (player counts unknown)"),
    ("gamespy1", "GameSpy 1"),
    ("gamespy2", "GameSpy 2"),
    ("gamespy3", "GameSpy 3"),
    (
        "unreal2",
        "Unreal Engine 2 (UT2003/2004, Killing Floor, Red Orchestra)",
    ),
    (
        "minecraft",
        "Minecraft: Java, then Bedrock, then the legacy pings",
    ),
    ("minecraft-java", "Minecraft Java Edition (TCP)"),
    ("minecraft-bedrock", "Minecraft Bedrock Edition"),
    ("minecraft-legacy16", "Minecraft Java 1.6 (TCP)"),
    ("minecraft-legacy14", "Minecraft Java 1.4-1.5 (TCP)"),
    ("minecraft-legacyb18", "Minecraft Java Beta 1.8-1.3 (TCP)"),
    ("theship", "The Ship (Valve-based)"),
    ("ffow", "Frontlines: Fuel of War"),
    ("jc2m", "Just Cause 2: Multiplayer"),
    ("savage2", "Savage 2"),
    ("mindustry", "Mindustry"),
    ("eco", "Eco (HTTP)"),
];

/// A gamedig protocol by its name in [`GAMEDIG_PROTOCOLS`]: `Copy`, and
/// only made from a name in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GamedigProtocol(&'static str);

impl GamedigProtocol {
    /// The protocol called `name`, if the table has it.
    pub fn from_name(name: &str) -> Option<GamedigProtocol> {
        GAMEDIG_PROTOCOLS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, _)| GamedigProtocol(n))
    }

    /// Every protocol, in the table's order.
    pub fn all() -> impl Iterator<Item = GamedigProtocol> {
        GAMEDIG_PROTOCOLS.iter().map(|(n, _)| GamedigProtocol(n))
    }

    /// Its name, as definitions and results write it.
    pub fn name(self) -> &'static str {
        self.0
    }

    /// As `--probe` and result.json name it: `gamedig:NAME`.
    pub fn probe_name(self) -> String {
        format!("gamedig:{}", self.0)
    }

    /// The names, comma-separated, for messages.
    pub fn known() -> String {
        GAMEDIG_PROTOCOLS
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for GamedigProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.0)
    }
}

impl std::str::FromStr for GamedigProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        GamedigProtocol::from_name(s).ok_or_else(|| {
            format!(
                "unknown gamedig protocol {:?} (known: {}; docs/games.md, \"gamedig protocols\", says how to find your game's)",
                s.chars().take(40).collect::<String>(),
                GamedigProtocol::known()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_to_itself_and_others_are_refused() {
        for p in GamedigProtocol::all() {
            assert_eq!(p.name().parse(), Ok(p));
        }
        assert_eq!(GamedigProtocol::all().count(), GAMEDIG_PROTOCOLS.len());
        let e = "q3a".parse::<GamedigProtocol>().unwrap_err();
        assert!(e.contains("unknown gamedig protocol \"q3a\""), "{e}");
        assert!(e.contains("unreal2"), "{e}");
        assert!("".parse::<GamedigProtocol>().is_err());
        assert!("Valve".parse::<GamedigProtocol>().is_err());
    }
}
