//! The one shape every game has: built-in games resolve from their files,
//! a host file's ask resolves or is refused in one line, and the shipped
//! definitions launch their servers exactly as the typed launchers they
//! replaced did (the argv and files below were taken from that code).

use std::path::Path;

use super::*;
use crate::launch::{Health, Ready, Slot, Stop};

fn built_in(name: &str) -> GameServer {
    GameServer::built_in(name).unwrap()
}

fn slot() -> Slot<'static> {
    Slot {
        ip: "198.19.60.2",
        port: 27960,
        id: 2,
        dir: Path::new("/run/i2"),
        tickpack: Path::new("/bin/tp"),
        rcon_password: None,
    }
}

/// An instance's argv and files, expanded.
fn launched(game: &GameServer) -> (Vec<String>, Vec<(String, String)>) {
    let spec = game.spec().unwrap();
    let files = spec
        .files(&slot())
        .into_iter()
        .map(|(p, c)| (p.display().to_string(), c))
        .collect();
    (spec.argv(&slot()), files)
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The facts callers took from literals come from the built-in
/// definition files, with the same values.
#[test]
fn the_built_in_games_ports_and_start_limits_come_from_their_files() {
    let reference = GameServer::default();
    assert_eq!(reference.name(), "reference");
    assert_eq!(reference.port(), 27015);
    assert_eq!(reference.start_limit(4).as_secs(), 20);
    let oa = built_in("openarena");
    assert_eq!(oa.port(), 27960);
    assert_eq!(oa.start_limit(1).as_secs(), 33);
    assert_eq!(oa.start_limit(4).as_secs(), 42);
}

/// The old bench's reference server at its defaults (tick 100, 12
/// players, no bots, cost "default"): the same words, and the server's
/// name the host file's default command gave it (`--name tickpack-{id}`;
/// the old bench left the server's own default name).
#[test]
fn the_reference_server_launches_as_the_old_bench_launched_it() {
    let game = built_in("reference");
    let (argv, files) = launched(&game);
    let old = OLD_REFERENCE;
    assert_eq!(argv[..old.len()], old);
    assert_eq!(argv[old.len()..], ["--name", "tickpack-2"]);
    assert!(files.is_empty());
    let spec = game.spec().unwrap();
    assert_eq!(spec.health, Health::TickpackStats);
    assert_eq!(
        (spec.ready, spec.stop, spec.health_timing),
        (Ready::Health, Stop::default(), None)
    );
    // The bench's flags reach it through the settings.
    let mut game = game;
    game.settings.tick_hz = tickpack_wire::TickRate::new(64).unwrap();
    game.settings.bots = 2;
    game.settings.players = 10;
    game.settings.set(&game.def.clone(), "cost=light").unwrap();
    assert_eq!(
        game.spec().unwrap().template(),
        "{tickpack} server --bind {ip}:{port} --tick-hz 64 --bots 2 --max-players 12 --cost light --name tickpack-{id}"
    );
    game.settings.tick_hz = tickpack_wire::TickRate::new(5000).unwrap();
    assert!(game.spec().unwrap_err().contains("1..=1000 Hz"));
}

const OLD_REFERENCE: [&str; 12] = [
    "/bin/tp",
    "server",
    "--bind",
    "198.19.60.2:27960",
    "--tick-hz",
    "100",
    "--bots",
    "0",
    "--max-players",
    "12",
    "--cost",
    "default",
];

/// The argv the old typed OpenArena launcher gave instance 2 with
/// `sv_fps` and `bot_minplayers` (players and bots each server is filled
/// to); everything else was the same at every setting.
fn typed_openarena_argv(sv_fps: &str, bot_minplayers: &str) -> Vec<String> {
    [
        "/usr/games/openarena-server",
        "+set",
        "dedicated",
        "1",
        "+set",
        "sv_master1",
        "\"\"",
        "+set",
        "sv_master2",
        "\"\"",
        "+set",
        "sv_master3",
        "\"\"",
        "+set",
        "sv_master4",
        "\"\"",
        "+set",
        "sv_master5",
        "\"\"",
        "+set",
        "net_ip",
        "198.19.60.2",
        "+set",
        "net_port",
        "27960",
        "+set",
        "sv_hostname",
        "tickpack-2",
        "+set",
        "sv_pure",
        "0",
        "+set",
        "sv_fps",
        sv_fps,
        "+set",
        "sv_maxclients",
        "24",
        "+set",
        "bot_minplayers",
        bot_minplayers,
        "+set",
        "bot_nochat",
        "1",
        "+set",
        "g_doWarmup",
        "0",
        "+set",
        "timelimit",
        "0",
        "+set",
        "fraglimit",
        "0",
        "+exec",
        "tickpack.cfg",
    ]
    .iter()
    .map(|w| w.to_string())
    .collect()
}

/// OpenArena as the old typed launcher ran it in a benchmark at its
/// defaults (oa_dm1, 12 players, no bots, sv_fps 20) and with a rotation,
/// bots and another tick rate: the same argv and the same config file.
#[test]
fn openarena_launches_as_its_typed_launcher_did() {
    let game = built_in("openarena");
    let (argv, files) = launched(&game);
    assert_eq!(argv, typed_openarena_argv("20", "12"));
    assert_eq!(files, owned(&[
            (".openarena/baseoa/tickpack.cfg", "// written by tickpack host before each start\nset rconpassword \"\"\nset tp_map1 \"map oa_dm1 ; set nextmap vstr tp_map1\"\nvstr tp_map1\n"),
        ]));
    let spec = game.spec().unwrap();
    assert_eq!(spec.health, Health::Q3);
    assert_eq!(
        (spec.ready, spec.stop, spec.health_timing),
        (Ready::Health, Stop::default(), None)
    );
    // Old: maps oa_dm1,oa_dm4, 8 players and bots of which 3 bots, sv_fps 40.
    let mut game = game;
    game.settings
        .set(&game.def.clone(), "map=oa_dm1,oa_dm4")
        .unwrap();
    game.settings.players = 5;
    game.settings.bots = 3;
    game.settings.tick_hz = tickpack_wire::TickRate::new(40).unwrap();
    let (argv, files) = launched(&game);
    assert_eq!(argv, typed_openarena_argv("40", "8"));
    assert_eq!(files, owned(&[
            (".openarena/baseoa/tickpack.cfg", "// written by tickpack host before each start\nset rconpassword \"\"\nset tp_map1 \"map oa_dm1 ; set nextmap vstr tp_map2\"\nset tp_map2 \"map oa_dm4 ; set nextmap vstr tp_map1\"\nvstr tp_map1\naddbot Sarge 2\naddbot Grism 2\naddbot Kyonshi 2\n"),
        ]));
}

/// Nexuiz was launched from its file before too: unchanged.
#[test]
fn nexuiz_launches_as_before() {
    let game = built_in("nexuiz");
    let (argv, files) = launched(&game);
    assert_eq!(
        argv,
        [
            "/usr/games/nexuiz-server",
            "-userdir",
            "/run/i2",
            "+exec",
            "tickpack.cfg",
            "+set",
            "sv_public",
            "0",
            "+set",
            "net_address",
            "198.19.60.2",
            "+set",
            "net_address_ipv6",
            "::1",
            "+set",
            "port",
            "27960",
            "+maxplayers",
            "16",
            "+set",
            "bot_number",
            "8",
            "+set",
            "bot_join_empty",
            "1",
            "+set",
            "minplayers",
            "0",
            "+set",
            "sys_ticrate",
            "0.0166667",
            "+set",
            "sys_colortranslation",
            "0",
            "+set",
            "g_start_delay",
            "0",
            "+set",
            "g_maplist",
            "ruiner",
            "+set",
            "timelimit_override",
            "0",
            "+set",
            "fraglimit_override",
            "0",
            "+set",
            "hostname",
            "tickpack-2",
            "+map",
            "ruiner",
        ]
    );
    assert_eq!(files, owned(&[
            ("data/tickpack.cfg", "// tickpack: never advertise, and leave no master server name to resolve\nsv_public 0\nsv_master1 \"\"\nsv_master2 \"\"\nsv_master3 \"\"\nsv_master4 \"\"\nsv_masterextra1 \"\"\nsv_masterextra2 \"\"\nsv_masterextra3 \"\"\nrcon_secure 0\nrcon_password \"\"\n"),
        ]));
    let spec = game.spec().unwrap();
    assert_eq!(spec.health, Health::Q3);
    assert_eq!(spec.stop.grace_s, 2.0);
}

#[test]
fn openarena_refuses_more_players_and_bots_than_it_carries() {
    let mut game = built_in("openarena");
    game.settings.players = 12;
    game.settings.bots = 5;
    let e = game.spec().unwrap_err();
    assert!(e.contains("at most 16 players and bots"), "{e}");
    game.settings.bots = 4;
    game.spec().unwrap();
    game.settings.players = 0;
    game.settings.bots = 16;
    let (_, files) = launched(&game);
    assert_eq!(files[0].1.matches("addbot ").count(), 16, "a name per bot");
}

#[test]
fn a_map_missing_from_the_game_data_is_one_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let mut game = built_in("openarena");
    game.def.data.pk3_dirs = vec![d.path().display().to_string()];
    game.settings
        .set(&game.def.clone(), "map=oa_dm1,nowhere")
        .unwrap();
    let e = game.check_data().unwrap_err();
    assert!(
        e.contains("map \"oa_dm1\" is not in the openarena data"),
        "{e}"
    );
    assert!(
        e.contains("some that are: none") && !e.contains('\n'),
        "{e}"
    );
    // Games without [data] have nothing to check.
    built_in("nexuiz").check_data().unwrap();
}

#[test]
fn the_installed_openarena_data_has_the_default_map() {
    let game = built_in("openarena");
    if !Path::new(game.def.program()).is_file() {
        eprintln!("skipped: {} is not installed", game.def.program());
        return;
    }
    game.check_system().unwrap();
    let mut other = game.clone();
    other
        .settings
        .set(&game.def, "map=oa_dm1,no_such_map")
        .unwrap();
    let e = other.check_system().unwrap_err();
    assert!(e.contains("no_such_map") && e.contains("oa_dm1"), "{e}");
}

#[test]
fn a_host_file_asks_for_a_game_by_name_with_its_settings() {
    let ask = |game: &str| GameAsk {
        game: Some(game.into()),
        ..Default::default()
    };
    assert!(!GameAsk::default().asks_anything());
    // A host runs no emulated players: `{players}` is 0 there.
    let mut reference = GameServer::default();
    reference.settings.players = 0;
    assert_eq!(GameAsk::default().resolve().unwrap(), reference);
    let oa = GameAsk {
        game_vars: Some(vec!["map=oa_dm1,oa_dm4".into()]),
        bots: Some(2),
        tick_hz: tickpack_wire::TickRate::new(40),
        ..ask("openarena")
    }
    .resolve()
    .unwrap();
    assert_eq!(oa.settings.variables["map"], "oa_dm1,oa_dm4");
    assert_eq!((oa.settings.bots, oa.settings.tick_hz.hz()), (2, 40));
    assert!(oa.spec().is_ok());
    let nexuiz = GameAsk {
        bots: Some(3),
        game_vars: Some(vec!["map=ruiner".into()]),
        ..ask("nexuiz")
    }
    .resolve()
    .unwrap();
    assert_eq!(nexuiz.settings.bots, 3);
    assert_eq!(nexuiz.settings.variables["map"], "ruiner");
    assert_eq!(nexuiz.player_protocol(), None);
}

#[test]
fn settings_a_game_does_not_have_are_refused_in_one_line() {
    for (ask, needle) in [
        (
            GameAsk {
                game_vars: Some(vec!["map=x".into()]),
                ..Default::default()
            },
            "map: not a variable of reference",
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
                bots: Some(17),
                ..Default::default()
            },
            "at most 16 bots",
        ),
        (
            GameAsk {
                game: Some("openarena".into()),
                game_vars: Some(vec!["map=oa dm1;quit".into()]),
                ..Default::default()
            },
            "a value is one word",
        ),
    ] {
        let e = ask.clone().resolve().expect_err(needle);
        assert!(e.contains(needle) && !e.contains('\n'), "{ask:?}: {e}");
    }
}
