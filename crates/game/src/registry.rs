//! The built-in games: the files in `games/` at the repository's root,
//! compiled in, so `--game NAME` works wherever the binary is copied.
//! A path (anything with a `/` or ending in `.toml`) names a user's file
//! instead; the caller reads it ([`crate::def::MAX_DEF_BYTES`] at most)
//! and hands the text to [`GameDef::parse`].

use crate::def::{DefError, GameDef};

/// The built-in definitions: the file each came from and its text.
pub const BUILT_IN: [(&str, &str); 4] = [
    (
        "games/reference.toml",
        include_str!("../../../games/reference.toml"),
    ),
    (
        "games/openarena.toml",
        include_str!("../../../games/openarena.toml"),
    ),
    (
        "games/nexuiz.toml",
        include_str!("../../../games/nexuiz.toml"),
    ),
    (
        "games/teeworlds.toml",
        include_str!("../../../games/teeworlds.toml"),
    ),
];

/// Where a definition came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Compiled in from this file of the repository.
    BuiltIn(&'static str),
    /// A user's file.
    File(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::BuiltIn(file) => write!(f, "{file} (built in)"),
            Source::File(path) => f.write_str(path),
        }
    }
}

/// The built-in definitions, parsed once (the bench asks for them every
/// step).
fn parsed() -> &'static [(GameDef, Source)] {
    static PARSED: std::sync::OnceLock<Vec<(GameDef, Source)>> = std::sync::OnceLock::new();
    PARSED.get_or_init(|| {
        BUILT_IN
            .iter()
            .map(|(file, text)| {
                let def = GameDef::parse(file, text)
                    .unwrap_or_else(|e| panic!("a built-in game definition is broken: {e}"));
                (def, Source::BuiltIn(file))
            })
            .collect()
    })
}

/// Every built-in definition, in the order of [`BUILT_IN`].
pub fn built_in() -> Vec<(GameDef, Source)> {
    parsed().to_vec()
}

/// The built-in game called `name`.
pub fn find(name: &str) -> Option<(GameDef, Source)> {
    parsed().iter().find(|(d, _)| d.name == name).cloned()
}

/// Whether `--game` names a file rather than a built-in game.
pub fn is_path(arg: &str) -> bool {
    arg.contains('/') || arg.ends_with(".toml")
}

/// The names of the built-in games, for messages.
pub fn names() -> Vec<String> {
    parsed().iter().map(|(d, _)| d.name.clone()).collect()
}

/// A built-in game by name, or an error that lists them.
pub fn by_name(name: &str) -> Result<(GameDef, Source), DefError> {
    find(name).ok_or_else(|| DefError {
        file: "--game".into(),
        line: 0,
        message: format!(
            "unknown game {name:?} (built in: {}; or give a definition file's path, see docs/games.md)",
            names().join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::def::PlayerProtocol;

    #[test]
    fn every_built_in_file_parses_and_is_named_after_its_file() {
        let all = built_in();
        assert_eq!(all.len(), BUILT_IN.len());
        for (def, source) in &all {
            let Source::BuiltIn(file) = source else {
                panic!("{source}")
            };
            assert_eq!(*file, format!("games/{}.toml", def.name));
        }
        assert_eq!(names(), ["reference", "openarena", "nexuiz", "teeworlds"]);
    }

    #[test]
    fn the_built_in_games_keep_their_facts() {
        let (r, _) = find("reference").unwrap();
        assert_eq!(r.players.protocol, PlayerProtocol::Reference);
        assert_eq!(r.port, 27015);
        assert_eq!(r.tick.hz.hz(), 100);
        let (oa, _) = find("openarena").unwrap();
        assert_eq!(oa.players.protocol, PlayerProtocol::Q3);
        assert_eq!(oa.players.q3_protocol, Some(71));
        assert_eq!(oa.port, 27960);
        assert_eq!(oa.tick.hz.hz(), 20);
        let (nx, _) = find("nexuiz").unwrap();
        assert_eq!(nx.players.protocol, PlayerProtocol::None);
        assert_eq!(nx.bots.default, 8);
        assert_eq!(nx.tick.hz.hz(), 60);
        assert_eq!(nx.packages, ["nexuiz-server", "nexuiz-data"]);
        let (tw, _) = find("teeworlds").unwrap();
        assert_eq!(tw.players.protocol, PlayerProtocol::Tw7);
        assert_eq!(tw.players.per_address, Some(4));
        assert_eq!(
            (tw.tick.hz.hz(), tw.tick.min_hz, tw.tick.max_hz),
            (50, None, None)
        );
        assert_eq!(tw.port, 8303);
    }

    #[test]
    fn an_unknown_name_lists_the_games() {
        let e = by_name("quake9").unwrap_err().to_string();
        assert!(e.contains("reference, openarena, nexuiz"), "{e}");
        assert!(is_path("./mine.toml") && is_path("mine.toml") && !is_path("nexuiz"));
    }
}
