//! The OpenArena dedicated server (Debian's `openarena-server`: ioquake3
//! 1.36 `ioq3ded`, protocol 71) as a [`ServerSpec`].
//!
//! Everything that keeps the server on the LAN is on its command line,
//! where nothing the instance writes can change it: `dedicated 1` (a
//! dedicated server that never sends heartbeats; 2 would announce it),
//! `sv_master1`..`sv_master5` empty, `net_ip {ip}` and `net_port {port}`.
//! So are the match settings, as `+set`s (the engine applies every
//! command-line `+set` before it runs any other command): `sv_pure 0`
//! (emulated players send no pak checksums), `sv_fps` (20 by default, the
//! engine's and OpenArena's default, what public servers run),
//! `sv_maxclients 24` ([`SLOTS`]: up to 16 players and bots, and room for
//! players to join before the game removes surplus bots), `bot_minplayers` (bots fill each server up to that
//! many players, humans and bots: 12 by default; the game adds or removes
//! at most one bot per 10 s, `G_CheckMinimumPlayers` in g_bot.c, so the
//! config file also adds [`OpenArena::bots`] of them at once), `bot_nochat 1`,
//! `g_doWarmup 0`, `timelimit 0` and `fraglimit 0` (a match never ends in
//! the middle of a benchmark); `sv_floodProtect` and `com_hunkmegs` keep
//! their defaults. `--game-arg CVAR=VALUE` comes last, as `+set CVAR VALUE`
//! (but never for the settings that keep the server on the LAN).
//!
//! The map rotation is a config file, `tickpack.cfg`, written into the
//! instance's directory at `.openarena/baseoa/` (the wrapper sets
//! `com_homepath .openarena` and the host sets `HOME` to the instance's
//! directory, so that is where the engine's `exec` looks first): one
//! `vstr` per map, each loading its map and pointing `nextmap` at the
//! next, `vstr tp_map1` to start, then one `addbot NAME 2` per bot at
//! start (skill 2, what `bot_minplayers` uses: `g_spSkill`'s default).
//! The command line cannot carry it (a `;` there would split commands).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::launch::{Health, Piece, ServerSpec, Word};
use crate::pk3;

/// The server program (a wrapper that execs `ioq3ded`).
pub const PROGRAM: &str = "/usr/games/openarena-server";
/// Quake 3's port: every netns instance binds it on its own address.
pub const PORT: u16 = 27960;
/// Most players (humans and bots) a server is set to carry.
pub const MAX_CLIENTS: u8 = 16;
/// Client slots per server (`sv_maxclients`): [`MAX_CLIENTS`] and 8 more,
/// so emulated players can join a server full of bots at once (the game
/// removes a surplus bot only one per 10 s).
pub const SLOTS: u8 = MAX_CLIENTS + 8;
/// Where the game data (`*.pk3`) is.
pub const DATA_DIRS: [&str; 2] = [
    "/usr/lib/openarena-server/baseoa",
    "/usr/share/games/openarena/baseoa",
];
/// The config file, relative to the instance's directory (`$HOME`).
pub const CONFIG_FILE: &str = ".openarena/baseoa/tickpack.cfg";
/// Names of the bots added at start (the game's own, scripts/bots.txt),
/// one per client slot.
pub const BOT_NAMES: [&str; MAX_CLIENTS as usize] = [
    "Sarge", "Grism", "Kyonshi", "Angelyss", "Arachna", "Major", "Merman", "Penguin", "Ghost",
    "Beret", "Gargoyle", "Liz", "Tony", "Sergei", "Skelebot", "Ayumi",
];

/// Cvars the host sets and `--game-arg` may not: they keep the server
/// on the LAN, on its own address and port.
pub const HOST_CVARS: [&str; 8] = [
    "dedicated",
    "sv_master1",
    "sv_master2",
    "sv_master3",
    "sv_master4",
    "sv_master5",
    "net_ip",
    "net_port",
];

/// Why an OpenArena setting cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    #[error("OpenArena is not installed ({PROGRAM} is missing): apt-get install openarena-server (or run scripts/setup.sh)")]
    NotInstalled,
    #[error("map {map:?} is not in the OpenArena data ({dirs}/*.pk3); some that are: {some}")]
    UnknownMap {
        map: String,
        dirs: String,
        some: String,
    },
    #[error("{0}")]
    Invalid(String),
}

/// An OpenArena server's settings; [`OpenArena::spec`] builds how the host
/// launches it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenArena {
    /// The map rotation, played in order (at least one).
    pub maps: Vec<String>,
    /// Players per server, humans and bots: bots fill up to this many
    /// (`bot_minplayers`), 0..=16.
    pub players: u8,
    /// Bots added at start (`addbot`), 0..=`players`; `bot_minplayers`
    /// then keeps the total at `players` (removing one bot per 10 s while
    /// humans join). [`SLOTS`] leaves 8 slots free beyond [`MAX_CLIENTS`],
    /// so up to 8 humans find a slot at once whatever the bots.
    pub bots: u8,
    /// Server frames per second (`sv_fps`), 1..=1000.
    pub sv_fps: u16,
    /// Extra cvars, `+set NAME VALUE` after the host's own.
    #[serde(default)]
    pub args: Vec<(String, String)>,
}

impl Default for OpenArena {
    fn default() -> Self {
        OpenArena {
            maps: vec!["oa_dm1".into()],
            players: 12,
            bots: 12,
            sv_fps: 20,
            args: vec![],
        }
    }
}

/// A name of letters, digits and `_` (a cvar) or also `-` (a map).
fn plain(s: &str, dash: bool) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || (dash && c == '-'))
}

/// `CVAR=VALUE` of `--game-arg` / `game_args`.
pub fn parse_game_arg(s: &str) -> Result<(String, String), GameError> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(GameError::Invalid(format!(
            "game argument {s:?}: expected CVAR=VALUE, e.g. g_gravity=600"
        )));
    };
    let arg = (name.to_string(), value.to_string());
    check_arg(&arg)?;
    Ok(arg)
}

fn check_arg((name, value): &(String, String)) -> Result<(), GameError> {
    let bad = |m: String| Err(GameError::Invalid(m));
    if !plain(name, false) {
        return bad(format!(
            "game argument {name}={value}: a cvar name is letters, digits and _"
        ));
    }
    if HOST_CVARS.iter().any(|c| c.eq_ignore_ascii_case(name)) {
        return bad(format!(
            "game argument {name}: set by the host (it keeps the server on the LAN, on its own address and port)"
        ));
    }
    if value.is_empty()
        || value.starts_with('+')
        || value
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | ';' | '{' | '}'))
    {
        return bad(format!(
            "game argument {name}={value}: the value must be one word, without quotes, ; or braces, not starting with +"
        ));
    }
    Ok(())
}

impl OpenArena {
    /// Refuses settings the server could not honour (pure: no files read).
    pub fn check(&self) -> Result<(), GameError> {
        let bad = |m: String| Err(GameError::Invalid(m));
        if self.maps.is_empty() {
            return bad("at least one map is needed (--map oa_dm1)".into());
        }
        if let Some(m) = self.maps.iter().find(|m| !plain(m, true)) {
            return bad(format!("map name {m:?}: expected letters, digits, _ and -"));
        }
        if self.players > MAX_CLIENTS {
            return bad(format!(
                "players per server must be 0..={MAX_CLIENTS} (sv_maxclients), got {}",
                self.players
            ));
        }
        if self.bots > self.players {
            return bad(format!(
                "bots at start ({}) must not exceed the players per server ({})",
                self.bots, self.players
            ));
        }
        if !(1..=1000).contains(&self.sv_fps) {
            return bad(format!("sv_fps must be 1..=1000, got {}", self.sv_fps));
        }
        self.args.iter().try_for_each(check_arg)
    }

    /// What depends on this machine: the program is installed and every
    /// map is in its data. Call before anything is created.
    pub fn check_system(&self) -> Result<(), GameError> {
        self.check_system_at(
            Path::new(PROGRAM),
            &DATA_DIRS.iter().map(Path::new).collect::<Vec<_>>(),
        )
    }

    /// [`OpenArena::check_system`] with another program and data.
    pub fn check_system_at(&self, program: &Path, data: &[&Path]) -> Result<(), GameError> {
        if !program.is_file() {
            return Err(GameError::NotInstalled);
        }
        let maps = pk3::maps_in(data);
        if let Some(m) = self
            .maps
            .iter()
            .find(|m| !maps.contains(&m.to_ascii_lowercase()))
        {
            let (mut some, others): (Vec<&str>, Vec<&str>) = maps
                .iter()
                .map(String::as_str)
                .partition(|m| m.starts_with("oa_dm"));
            some.extend(others);
            some.truncate(6);
            return Err(GameError::UnknownMap {
                map: m.clone(),
                dirs: data
                    .first()
                    .map_or(String::new(), |d| d.display().to_string()),
                some: if some.is_empty() {
                    "none".into()
                } else {
                    some.join(", ")
                },
            });
        }
        Ok(())
    }

    /// The config file's contents: the map rotation as a `vstr` chain,
    /// the first map, then the bots.
    pub fn config(&self) -> String {
        let mut text = String::from("// written by tickpack host before each start\n");
        let n = self.maps.len();
        for (k, map) in self.maps.iter().enumerate() {
            let next = (k + 1) % n + 1;
            text.push_str(&format!(
                "set tp_map{} \"map {map} ; set nextmap vstr tp_map{next}\"\n",
                k + 1
            ));
        }
        text.push_str("vstr tp_map1\n");
        for name in &BOT_NAMES[..usize::from(self.bots)] {
            text.push_str(&format!("addbot {name} 2\n"));
        }
        text
    }

    /// How a host launches it: [`PROGRAM`] with `+set`s, the rotation in
    /// [`CONFIG_FILE`], checked with the Quake 3 `getinfo` query.
    pub fn spec(&self) -> ServerSpec {
        let mut argv = vec![Word::text(PROGRAM)];
        let mut set = |name: &str, value: Word| {
            argv.push(Word::text("+set"));
            argv.push(Word::text(name));
            argv.push(value);
        };
        set("dedicated", Word::text("1"));
        for k in 1..=5 {
            // The engine reads `""` as an empty value.
            set(&format!("sv_master{k}"), Word::text("\"\""));
        }
        set("net_ip", Word(vec![Piece::Ip]));
        set("net_port", Word(vec![Piece::Port]));
        set(
            "sv_hostname",
            Word(vec![Piece::Text("tickpack-".into()), Piece::Id]),
        );
        set("sv_pure", Word::text("0"));
        set("sv_fps", Word::text(self.sv_fps.to_string()));
        set("sv_maxclients", Word::text(SLOTS.to_string()));
        set("bot_minplayers", Word::text(self.players.to_string()));
        set("bot_nochat", Word::text("1"));
        set("g_doWarmup", Word::text("0"));
        set("timelimit", Word::text("0"));
        set("fraglimit", Word::text("0"));
        for (name, value) in &self.args {
            set(name, Word::text(value.clone()));
        }
        argv.push(Word::text("+exec"));
        argv.push(Word::text("tickpack.cfg"));
        ServerSpec {
            argv,
            env: vec![],
            files: vec![(PathBuf::from(CONFIG_FILE), Word::text(self.config()))],
            health: Health::Q3,
            health_timing: None,
            ready: Default::default(),
            stop: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::Slot;

    fn argv(oa: &OpenArena) -> Vec<String> {
        oa.spec().argv(&Slot {
            ip: "198.19.60.2",
            port: PORT,
            id: 2,
            dir: Path::new("/run/i2"),
            tickpack: Path::new("/bin/tp"),
        })
    }

    /// The value after `+set NAME`, if set.
    fn cvar<'a>(argv: &'a [String], name: &str) -> Vec<&'a str> {
        argv.windows(3)
            .filter(|w| w[0] == "+set" && w[1] == name)
            .map(|w| w[2].as_str())
            .collect()
    }

    #[test]
    fn the_spec_keeps_the_server_on_the_lan_with_the_match_settings() {
        let oa = OpenArena::default();
        oa.check().unwrap();
        let a = argv(&oa);
        assert_eq!(a[0], PROGRAM);
        assert_eq!(cvar(&a, "dedicated"), ["1"]);
        for k in 1..=5 {
            assert_eq!(cvar(&a, &format!("sv_master{k}")), ["\"\""], "{a:?}");
        }
        assert_eq!(cvar(&a, "net_ip"), ["198.19.60.2"]);
        assert_eq!(cvar(&a, "net_port"), ["27960"]);
        assert_eq!(cvar(&a, "sv_fps"), ["20"]);
        assert_eq!(cvar(&a, "sv_pure"), ["0"]);
        assert_eq!(cvar(&a, "sv_maxclients"), ["24"]);
        assert_eq!(cvar(&a, "bot_minplayers"), ["12"]);
        assert_eq!(cvar(&a, "bot_nochat"), ["1"]);
        assert_eq!(cvar(&a, "g_doWarmup"), ["0"]);
        assert_eq!(cvar(&a, "timelimit"), ["0"]);
        assert_eq!(cvar(&a, "fraglimit"), ["0"]);
        assert_eq!(cvar(&a, "sv_hostname"), ["tickpack-2"]);
        assert!(cvar(&a, "sv_floodProtect").is_empty(), "the default");
        assert!(cvar(&a, "com_hunkmegs").is_empty(), "the default");
        assert_eq!(a[a.len() - 2..], ["+exec", "tickpack.cfg"]);
        let spec = oa.spec();
        assert_eq!(spec.health, Health::Q3);
        spec.check().unwrap();
        assert_eq!(ServerSpec::parse(&spec.template()).unwrap().argv, spec.argv);
    }

    #[test]
    fn game_args_come_after_the_hosts_settings() {
        let oa = OpenArena {
            sv_fps: 40,
            players: 4,
            bots: 1,
            args: vec![
                parse_game_arg("g_gravity=600").unwrap(),
                parse_game_arg("sv_fps=30").unwrap(),
            ],
            ..Default::default()
        };
        oa.check().unwrap();
        let a = argv(&oa);
        assert_eq!(cvar(&a, "sv_fps"), ["40", "30"], "the last one wins");
        assert_eq!(cvar(&a, "bot_minplayers"), ["4"]);
        let gravity = a.iter().position(|w| w == "g_gravity").unwrap();
        let fraglimit = a.iter().position(|w| w == "fraglimit").unwrap();
        assert!(gravity > fraglimit, "{a:?}");
        assert_eq!(a[gravity + 1], "600");
    }

    #[test]
    fn bad_game_args_are_refused_with_what_is_wrong() {
        for (arg, needle) in [
            ("g_gravity", "CVAR=VALUE"),
            ("=5", "cvar name"),
            ("g gravity=5", "cvar name"),
            ("dedicated=2", "set by the host"),
            ("SV_MASTER1=master.example", "set by the host"),
            ("net_port=1", "set by the host"),
            ("g_motd=hello world", "one word"),
            ("g_motd=a;quit", "one word"),
            ("g_motd=", "one word"),
            ("g_motd=+quit", "one word"),
        ] {
            let e = parse_game_arg(arg).expect_err(arg).to_string();
            assert!(e.contains(needle), "{arg}: {e}");
        }
    }

    #[test]
    fn a_rotation_chains_its_maps_through_nextmap() {
        let oa = OpenArena {
            maps: vec!["oa_dm1".into(), "oa_dm2".into()],
            bots: 2,
            ..Default::default()
        };
        assert_eq!(
            oa.config().lines().skip(1).collect::<Vec<_>>(),
            [
                "set tp_map1 \"map oa_dm1 ; set nextmap vstr tp_map2\"",
                "set tp_map2 \"map oa_dm2 ; set nextmap vstr tp_map1\"",
                "vstr tp_map1",
                "addbot Sarge 2",
                "addbot Grism 2"
            ]
        );
        let spec = oa.spec();
        assert_eq!(spec.files[0].0, Path::new(CONFIG_FILE));
    }

    #[test]
    fn bad_settings_are_refused() {
        for (oa, needle) in [
            (
                OpenArena {
                    maps: vec![],
                    ..Default::default()
                },
                "at least one map",
            ),
            (
                OpenArena {
                    maps: vec!["oa dm1;quit".into()],
                    ..Default::default()
                },
                "map name",
            ),
            (
                OpenArena {
                    players: 17,
                    ..Default::default()
                },
                "0..=16",
            ),
            (
                OpenArena {
                    players: 4,
                    bots: 5,
                    ..Default::default()
                },
                "bots at start",
            ),
            (
                OpenArena {
                    sv_fps: 0,
                    ..Default::default()
                },
                "sv_fps",
            ),
        ] {
            let e = oa.check().expect_err(needle).to_string();
            assert!(e.contains(needle), "{e}");
        }
    }

    #[test]
    fn a_missing_program_or_an_unknown_map_is_one_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let e = OpenArena::default()
            .check_system_at(&d.path().join("openarena-server"), &[d.path()])
            .unwrap_err();
        assert_eq!(e, GameError::NotInstalled);
        assert!(e.to_string().contains("apt-get install openarena-server"));
        let program = d.path().join("server");
        std::fs::write(&program, "").unwrap();
        let e = OpenArena {
            maps: vec!["nowhere".into()],
            ..Default::default()
        }
        .check_system_at(&program, &[d.path()])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("map \"nowhere\" is not in the OpenArena data"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn the_installed_data_has_the_default_map() {
        if !Path::new(PROGRAM).is_file() {
            eprintln!("skipped: {PROGRAM} is not installed");
            return;
        }
        OpenArena::default().check_system().unwrap();
        let e = OpenArena {
            maps: vec!["oa_dm1".into(), "no_such_map".into()],
            ..Default::default()
        }
        .check_system()
        .unwrap_err()
        .to_string();
        assert!(e.contains("no_such_map") && e.contains("oa_dm1"), "{e}");
    }
}
