//! The generated manifests against Agones' real CRD schemas
//! (`../shared/agones/install.yaml`, see `tickpack_testkit::agones_crds`),
//! and the sizing read from whole bench results. The games come from their
//! definitions: the shipped ones, and one from a fixture file alone
//! (`fixtures/mygame.toml`, a game tickpack does not ship).

use serde_json::Value;
use tickpack_agones_fleet::sizing::Cpu;
use tickpack_agones_fleet::{definition, size, FleetError, FleetOptions};
use tickpack_game::GameDef;
use tickpack_report::bench::{BenchResult, BenchSettings, CoreUse, Ladder, Step, BENCH_SCHEMA};
use tickpack_testkit::agones_crds::{yaml_documents, AgonesCrds};
use tickpack_testkit::results::bench_settings;

fn step(servers: u32, rss: Option<u64>) -> Step {
    Step {
        duration_s: 10.0,
        server_peak_rss_bytes: rss,
        tile: None,
        ..Step::passed(servers, servers, servers * 12)
    }
}

fn ladder(label: &str, rss: &[Option<u64>]) -> Ladder {
    Ladder {
        label: label.into(),
        backend: "netns".into(),
        net: Some("veth".into()),
        placement: "spread".into(),
        steps: rss
            .iter()
            .enumerate()
            .map(|(i, r)| step(i as u32 + 1, *r))
            .collect(),
        max_servers: Some(rss.len() as u32),
        recommended_servers: Some(rss.len() as u32),
        stopped: "done".into(),
        limit_found: Some(true),
        repetition: None,
        game: None,
        load: None,
    }
}

/// A finished result: `recommended` servers on 2 server cores, one ladder
/// whose steps peaked at 40 and 60 MiB.
fn result(game: &str, recommended: Option<u32>) -> BenchResult {
    let mut game_settings = tickpack_report::game_settings::GameSettings::default();
    if game == "openarena" {
        game_settings.maps = vec!["oa_dm1".into(), "oa_dm4".into()];
        game_settings.tick_hz = tickpack_report::bench::TickRate::new(20);
        game_settings.bots = Some(4);
        game_settings.slots_filled = Some(8);
    }
    BenchResult {
        schema: BENCH_SCHEMA.into(),
        tickpack_version: "0.1.0".into(),
        system: tickpack_report::system::SystemInfo {
            cpu_model: "Test CPU".into(),
            logical_cpus: 4,
            kernel: "6.1".into(),
            unix_time: 0,
        },
        settings: BenchSettings {
            game: game.into(),
            game_settings,
            tile_servers: 1,
            players_per_server: 12,
            ..bench_settings()
        },
        cores: CoreUse {
            total: 4,
            load_generator: vec![0, 1],
            servers: vec![2, 3],
        },
        ladders: vec![ladder("tickpack", &[Some(40 << 20), Some(60 << 20)])],
        servers_per_core: None,
        servers_per_core_spread: None,
        limit_estimate: None,
        limit_found: Some(true),
        recommended_servers: recommended,
        max_servers: recommended,
        comparison_ratio: None,
        comparison: None,
        consolidation_ratio: None,
        before_servers: None,
        tco: None,
        complete: true,
        started_unix: 0,
        finished_unix: Some(1),
        machine_speed: None,
    }
}

/// The manifest for a result of a built-in game, its definition looked up
/// as `tickpack agones fleet` does without `--game`.
fn fleet_manifest(
    r: &BenchResult,
    memory_mib: Option<u64>,
    opts: &FleetOptions,
) -> Result<String, FleetError> {
    let s = size(r, memory_mib)?;
    let def = definition(&s.game, None)?;
    tickpack_agones_fleet::render(&s, &def, opts)
}

/// The value of a container's environment variable.
/// A container's command, word by word.
fn command(container: &Value) -> Vec<&str> {
    container["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

fn env<'a>(container: &'a Value, name: &str) -> &'a str {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("no {name} in {container}"))
}

fn opts() -> FleetOptions {
    FleetOptions {
        name: None,
        image: None,
        replicas: 2,
        buffer: 2,
        max_replicas: None,
        source: "result.json".into(),
        version: "0.1.0".into(),
    }
}

/// Parses the manifest back and checks both documents against the CRDs.
fn valid_documents(crds: &AgonesCrds, yaml: &str) -> Vec<Value> {
    let docs = yaml_documents(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert_eq!(docs.len(), 2, "{yaml}");
    for d in &docs {
        let errors = crds.errors(d);
        assert!(errors.is_empty(), "{errors:#?}\n{yaml}");
    }
    docs
}

#[test]
fn reference_fleet_with_shared_cores_is_valid_against_the_crds() {
    let yaml = fleet_manifest(&result("reference", Some(7)), None, &opts()).unwrap();
    let Some(crds) =
        AgonesCrds::load_or_skip("reference_fleet_with_shared_cores_is_valid_against_the_crds")
    else {
        return;
    };
    let docs = valid_documents(crds, &yaml);
    let (fleet, fas) = (&docs[0], &docs[1]);
    assert_eq!(fleet["kind"], "Fleet");
    let gs = &fleet["spec"]["template"]["spec"];
    assert_eq!(gs["ports"][0]["containerPort"], 27015);
    assert_eq!(gs["ports"][0]["protocol"], "UDP");
    assert_eq!(gs["ports"][0]["portPolicy"], "Dynamic");
    assert_eq!(gs["health"]["periodSeconds"], 5);
    let c = &gs["template"]["spec"]["containers"][0];
    // 2 server cores over 7 servers: 285.7 -> 286 millicores, no CPU limit.
    assert_eq!(c["resources"]["requests"]["cpu"], "286m");
    assert!(c["resources"]["limits"].get("cpu").is_none());
    // 60 MiB peak x 3/2.
    assert_eq!(c["resources"]["requests"]["memory"], "90Mi");
    assert_eq!(c["resources"]["limits"]["memory"], "90Mi");
    let cmd = command(c);
    assert_eq!(
        cmd,
        [
            "/usr/local/bin/tickpack",
            "server",
            "--bind",
            "0.0.0.0:27015",
            "--tick-hz",
            "64",
            "--bots",
            "2",
            "--max-players",
            "12",
            "--cost",
            "default",
            "--name",
            "tickpack-1",
            "--agones"
        ]
    );
    // The server calls the SDK itself: no sidecar.
    assert_eq!(
        gs["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(gs["container"], "tickpack-server");
    assert_eq!(c["image"], "tickpack-server:0.1.0");
    assert_eq!(fas["spec"]["fleetName"], fleet["metadata"]["name"]);
    assert_eq!(fas["spec"]["policy"]["buffer"]["bufferSize"], 2);
    assert_eq!(fas["spec"]["policy"]["buffer"]["maxReplicas"], 7);
    // Every derived number is explained beside it.
    for words in [
        "286m per server",
        "60.0 MiB",
        "pings Health",
        "bufferSize:",
        "maxReplicas:",
    ] {
        assert!(yaml.contains(words), "no comment with {words:?}:\n{yaml}");
    }
}

#[test]
fn openarena_fleet_with_pinning_is_guaranteed_and_valid_against_the_crds() {
    let mut r = result("openarena", Some(6));
    r.settings.compare = "placement".into();
    r.comparison_ratio = Some(1.25);
    r.ladders.push(ladder("kernel", &[Some(50 << 20)]));
    let yaml = fleet_manifest(&r, None, &opts()).unwrap();
    let Some(crds) = AgonesCrds::load_or_skip(
        "openarena_fleet_with_pinning_is_guaranteed_and_valid_against_the_crds",
    ) else {
        return;
    };
    let docs = valid_documents(crds, &yaml);
    let gs = &docs[0]["spec"]["template"]["spec"];
    assert_eq!(gs["container"], "openarena");
    assert_eq!(gs["ports"][0]["containerPort"], 27960);
    let containers = gs["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 2);
    // Guaranteed: every container's requests equal its limits; whole CPUs.
    for c in containers {
        assert_eq!(c["resources"]["requests"], c["resources"]["limits"], "{c}");
    }
    assert_eq!(containers[0]["resources"]["limits"]["cpu"], "1");
    let sidecar = command(&containers[1]);
    assert_eq!(
        sidecar,
        [
            "/usr/local/bin/tickpack",
            "agones-sidecar",
            "--query",
            "q3",
            "--target",
            "127.0.0.1:27960"
        ]
    );
    assert_eq!(containers[0]["image"], "tickpack-openarena:0.1.0");
    assert_eq!(containers[1]["image"], "tickpack-openarena:0.1.0");
    let text = command(&containers[0]);
    assert!(text.contains(&"/usr/games/openarena-server"), "{text:?}");
    assert!(
        text.windows(3).any(|w| w == ["+set", "sv_fps", "20"]),
        "{text:?}"
    );
    assert!(
        text.windows(3).any(|w| w == ["+set", "net_port", "27960"]),
        "{text:?}"
    );
    assert_eq!(env(&containers[0], "HOME"), "/home/openarena");
    // The config file of the definition, written by the shell before the
    // server starts. A result before OpenArena was a definition only
    // recorded its maps: the first is the definition's `map`.
    let cfg = env(&containers[0], "TICKPACK_FILE_1");
    assert!(cfg.contains("map oa_dm1"), "the map in the config: {cfg}");
    assert_eq!(text[0], "/bin/sh");
    assert!(
        text[2].contains("'/home/openarena/.openarena/baseoa/tickpack.cfg'"),
        "{text:?}"
    );
    assert!(text[2].ends_with("exec \"$@\""), "{text:?}");
    assert!(yaml.contains("1.25x"), "the evidence for pinning: {yaml}");
}

#[test]
fn a_broken_manifest_fails_validation() {
    let yaml = fleet_manifest(&result("reference", Some(4)), None, &opts()).unwrap();
    let Some(crds) = AgonesCrds::load_or_skip("a_broken_manifest_fails_validation") else {
        return;
    };
    let mut docs = yaml_documents(&yaml).unwrap();
    assert!(crds.errors(&docs[0]).is_empty());
    // A wrong type, a value outside an enum, a misspelled field.
    let mut wrong_type = docs[0].clone();
    wrong_type["spec"]["template"]["spec"]["ports"][0]["containerPort"] = "27015".into();
    let mut bad_enum = docs[0].clone();
    bad_enum["spec"]["template"]["spec"]["ports"][0]["portPolicy"] = "Random".into();
    let mut typo = docs[0].clone();
    typo["spec"]["template"]["spec"]["health"]["periodSecond"] = 5.into();
    for (what, d) in [
        ("wrong type", wrong_type),
        ("bad enum", bad_enum),
        ("typo", typo),
    ] {
        assert!(!crds.errors(&d).is_empty(), "{what} passed validation");
    }
    docs[1]["spec"]["policy"]["buffer"]["maxReplicas"] = 0.into();
    assert!(!crds.errors(&docs[1]).is_empty(), "maxReplicas 0 passed");
}

#[test]
fn a_result_without_a_recommended_density_sizes_nothing() {
    let e = size(&result("reference", None), None).unwrap_err();
    assert!(e.to_string().contains("no recommended density"), "{e}");
    let e = size(&result("reference", Some(0)), None).unwrap_err();
    assert!(e.to_string().contains("no recommended density"), "{e}");
}

#[test]
fn a_result_without_measured_memory_needs_memory_mib() {
    let mut r = result("reference", Some(4));
    r.ladders = vec![ladder("old", &[None, None])];
    let e = size(&r, None).unwrap_err();
    assert!(e.to_string().contains("--memory-mib"), "{e}");
    let s = size(&r, Some(200)).unwrap();
    assert_eq!(s.memory_mib, 200);
}

#[test]
fn pinning_needs_a_placement_comparison_that_shows_it() {
    let mut r = result("reference", Some(8));
    assert_eq!(size(&r, None).unwrap().cpu, Cpu::Shared { millis: 250 });
    r.settings.compare = "placement".into();
    r.comparison_ratio = Some(1.05);
    assert!(
        !size(&r, None).unwrap().pinning.matters,
        "5 % is noise in one run"
    );
    r.comparison_ratio = Some(1.5);
    let s = size(&r, None).unwrap();
    assert_eq!(s.cpu, Cpu::Whole { cpus: 1 });
    assert_eq!(s.game, "reference");
}

#[test]
fn bad_options_are_refused_before_writing() {
    let r = result("reference", Some(4));
    for (o, words) in [
        (
            FleetOptions {
                buffer: 0,
                ..opts()
            },
            "--buffer",
        ),
        (
            FleetOptions {
                replicas: 1,
                ..opts()
            },
            "bufferSize <= minReplicas",
        ),
        (
            FleetOptions {
                max_replicas: Some(1),
                ..opts()
            },
            "minReplicas <= maxReplicas",
        ),
        (
            FleetOptions {
                name: Some("Bad_Name".into()),
                ..opts()
            },
            "--name",
        ),
    ] {
        let e = fleet_manifest(&r, None, &o).unwrap_err();
        assert!(e.to_string().contains(words), "{e}");
    }
}

/// A placement comparison over three repetitions: pinned maximum densities
/// `pinned`, the kernel's `kernel`; pinned recommended 5, 4 and 6.
fn repeated(pinned: [f64; 3], kernel: [f64; 3]) -> BenchResult {
    use tickpack_report::comparison::{
        Comparison, DensityRatio, Separation, Spread, VariantSummary,
    };
    let spread = |v: [f64; 3]| Spread::of(v.iter().map(|x| Some(*x)).collect());
    let (p, k) = (spread(pinned), spread(kernel));
    let mut r = result("reference", Some(9));
    r.settings.compare = "placement".into();
    r.comparison_ratio = Some(9.0);
    r.comparison = Some(Comparison {
        kind: "placement".into(),
        repetitions: 3,
        repetitions_finished: 3,
        variants: vec![
            VariantSummary {
                label: "spread".into(),
                name: "tickpack's placement (spread)".into(),
                max_servers: p.clone(),
                recommended_servers: spread([5.0, 4.0, 6.0]),
            },
            VariantSummary {
                label: "none".into(),
                name: "the kernel's scheduling (none)".into(),
                max_servers: k.clone(),
                recommended_servers: spread([4.0, 4.0, 4.0]),
            },
        ],
        ratios: vec![DensityRatio {
            numerator: "spread".into(),
            denominator: "none".into(),
            numerator_name: "tickpack's placement (spread)".into(),
            denominator_name: "the kernel's scheduling (none)".into(),
            ratio: Spread::of(
                pinned
                    .iter()
                    .zip(kernel)
                    .map(|(a, b)| Some(a / b))
                    .collect(),
            ),
            separation: Separation::judge(&p, &k),
        }],
    });
    r
}

#[test]
fn over_repetitions_pinning_needs_separated_ranges_and_the_density_is_the_lower_median() {
    let s = size(&repeated([8.0, 9.0, 8.0], [6.0, 7.0, 6.0]), None).unwrap();
    assert!(s.pinning.matters, "{}", s.pinning.why);
    assert_eq!(
        s.recommended_servers, 5,
        "lower median of 5, 4, 6, not the result's 9"
    );
    assert_eq!(s.over_repetitions, Some(3));
    // Overlapping ranges: pinning is not shown, whatever one run's ratio says.
    let s = size(&repeated([8.0, 9.0, 6.0], [6.0, 7.0, 6.0]), None).unwrap();
    assert!(!s.pinning.matters, "{}", s.pinning.why);
    assert!(s.pinning.why.contains("cannot tell"), "{}", s.pinning.why);
    assert_eq!(s.cpu, Cpu::Shared { millis: 400 }, "2 cores / 5 servers");
}

/// The fixture's definition, read as `--game FILE` reads a file.
fn mygame() -> GameDef {
    GameDef::parse("fixtures/mygame.toml", include_str!("fixtures/mygame.toml")).unwrap()
}

#[test]
fn a_game_from_its_definition_file_alone_gets_a_valid_fleet() {
    let mut r = result("mygame", Some(5));
    r.settings.game_settings.tick_hz = tickpack_report::bench::TickRate::new(60);
    r.settings.game_settings.bots = Some(3);
    r.settings
        .game_settings
        .variables
        .insert("map".into(), "arena2".into());
    let s = size(&r, None).unwrap();
    assert_eq!(s.game, "mygame");
    let def = definition(&s.game, Some(mygame())).unwrap();
    let yaml = tickpack_agones_fleet::render(&s, &def, &opts()).unwrap();
    let Some(crds) =
        AgonesCrds::load_or_skip("a_game_from_its_definition_file_alone_gets_a_valid_fleet")
    else {
        return;
    };
    let docs = valid_documents(crds, &yaml);
    let fleet = &docs[0];
    assert_eq!(fleet["metadata"]["name"], "tickpack-mygame");
    assert_eq!(fleet["metadata"]["labels"]["tickpack.dev/game"], "mygame");
    let gs = &fleet["spec"]["template"]["spec"];
    assert_eq!(gs["container"], "mygame-server");
    assert_eq!(gs["ports"][0]["containerPort"], 7777);
    assert_eq!(gs["ports"][0]["protocol"], "UDP");
    assert_eq!(gs["health"]["initialDelaySeconds"], 15, "[ready] timeout_s");
    let containers = gs["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 2, "the game and the sidecar");
    let (game, sidecar) = (&containers[0], &containers[1]);
    assert_eq!(game["name"], "mygame-server");
    assert_eq!(game["image"], "registry.example.com/mygame:1.4");
    let cmd = command(game);
    assert_eq!(
        &cmd[..2],
        ["/bin/sh", "-c"],
        "the shell writes the files first"
    );
    assert_eq!(cmd[3], "mygame", "the shell's $0");
    assert_eq!(
        &cmd[4..],
        [
            "/opt/mygame/server",
            "-ip",
            "0.0.0.0",
            "-port",
            "7777",
            "-tickrate",
            "60",
            "-bots",
            "3",
            "-config",
            "/srv/mygame/cfg/server.cfg"
        ],
        "the definition's command with the result's settings"
    );
    assert_eq!(
        cmd[2],
        "mkdir -p '/srv/mygame/cfg' && printf '%s' \"$TICKPACK_FILE_1\" > '/srv/mygame/cfg/server.cfg' && exec \"$@\""
    );
    assert_eq!(env(game, "HOME"), "/srv/mygame");
    assert_eq!(env(game, "MYGAME_DATA"), "/srv/mygame/data");
    assert_eq!(
        env(game, "TICKPACK_FILE_1"),
        "map arena2\nmode duel\nmaxplayers 16\n",
        "the recorded variable, the default one, the slots"
    );
    assert_eq!(game["resources"]["requests"]["cpu"], "400m", "2 cores / 5");
    assert_eq!(sidecar["image"], "registry.example.com/tickpack:0.1.0");
    let side = command(sidecar);
    assert_eq!(
        side,
        [
            "/usr/local/bin/tickpack",
            "agones-sidecar",
            "--query",
            "a2s",
            "--target",
            "127.0.0.1:7777"
        ]
    );
}

#[test]
fn a_recorded_variable_reaches_the_config_of_a_shipped_game() {
    let mut r = result("openarena", Some(4));
    r.settings
        .game_settings
        .variables
        .insert("map".into(), "oa_dm4".into());
    let yaml = fleet_manifest(&r, None, &opts()).unwrap();
    let docs = yaml_documents(&yaml).unwrap();
    let c = &docs[0]["spec"]["template"]["spec"]["template"]["spec"]["containers"][0];
    assert!(env(c, "TICKPACK_FILE_1").contains("map oa_dm4"), "{yaml}");
}

#[test]
fn the_definition_must_be_the_results_game_and_have_an_agones_table() {
    let e = definition("mygame", None).unwrap_err().to_string();
    assert!(e.contains("--game FILE"), "{e}");
    let e = definition("reference", Some(mygame()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("the result measured \"reference\""), "{e}");
    let mut no_table = mygame();
    no_table.agones = None;
    let e = definition("mygame", Some(no_table))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no [agones] table"), "{e}");
    assert!(e.contains("openarena") && e.contains("reference"), "{e}");
    // A game setting the definition refuses is refused, not deployed.
    let mut r = result("mygame", Some(5));
    r.settings.game_settings.tick_hz = tickpack_report::bench::TickRate::new(500);
    let s = size(&r, None).unwrap();
    let e = tickpack_agones_fleet::render(&s, &mygame(), &opts()).unwrap_err();
    assert!(e.to_string().contains("10..=120"), "{e}");
}

/// A tile run of one reference server and one OpenArena server per tile
/// that recommends 2 tiles (4 servers) on 2 server cores.
fn tile_result() -> BenchResult {
    use tickpack_report::tile::{MemberStep, TileMember, TileSettings, TileStep};
    let mut r = result("tile:evening", Some(4));
    let member = |name: &str, players: u32, bots: u32, tick: u16| TileMember {
        name: name.into(),
        game: name.into(),
        count: 1,
        players,
        bots,
        tick_hz: tickpack_report::bench::TickRate::new(tick).unwrap(),
        game_settings: Default::default(),
        curve: "evening".into(),
        idle: false,
        qos: tickpack_report::qos::default_limits(
            tickpack_report::bench::TickRate::new(tick).unwrap(),
        ),
        max_join_ms: 5000,
    };
    r.settings.tile_servers = 2;
    r.settings.tile = Some(TileSettings {
        name: "evening".into(),
        file: "tiles/evening.toml".into(),
        window_s: 5.0,
        seed: 1,
        compression: "a day in 60 s".into(),
        members: vec![
            member("reference", 12, 0, 64),
            member("openarena", 8, 4, 20),
        ],
    });
    let rss = |a: u64, b: u64| TileStep {
        load: tickpack_report::tile::LoadVariant::Phased,
        window_s: 5.0,
        windows: vec![],
        peak_to_mean_cpu: None,
        members: vec![
            MemberStep {
                name: "reference".into(),
                servers: 1,
                server_peak_rss_bytes: Some(a << 20),
                windows: vec![],
                events: vec![],
            },
            MemberStep {
                name: "openarena".into(),
                servers: 1,
                server_peak_rss_bytes: Some(b << 20),
                windows: vec![],
                events: vec![],
            },
        ],
        failure: None,
    };
    for (i, s) in r.ladders[0].steps.iter_mut().enumerate() {
        s.tile = Some(rss(10 + i as u64, 100 + 20 * i as u64));
    }
    r
}

#[test]
fn a_tile_run_sizes_one_fleet_per_member_from_the_tiles_density_at_the_peak() {
    let r = tile_result();
    let reference = tickpack_agones_fleet::sizing::size_member(&r, 0, None).unwrap();
    let openarena = tickpack_agones_fleet::sizing::size_member(&r, 1, None).unwrap();
    // 4 servers = 2 tiles of 2: 2 servers of each member.
    assert_eq!(reference.recommended_servers, 2);
    assert_eq!(openarena.recommended_servers, 2);
    assert_eq!(
        (reference.game.as_str(), openarena.game.as_str()),
        ("reference", "openarena")
    );
    // Each member's memory from its own servers' peak (11 and 120 MiB).
    assert_eq!(
        reference.memory_mib,
        tickpack_agones_fleet::sizing::memory_mib(11 << 20)
    );
    assert_eq!(
        openarena.memory_mib,
        tickpack_agones_fleet::sizing::memory_mib(120 << 20)
    );
    // Every server of the tiles shares the 2 cores: 500 millicores each.
    assert_eq!(reference.shared_millis, 500);
    assert!(reference.tile.as_deref().unwrap().contains("2 tile(s)"));
    let Some(crds) = AgonesCrds::load_or_skip(
        "a_tile_run_sizes_one_fleet_per_member_from_the_tiles_density_at_the_peak",
    ) else {
        return;
    };
    for s in [&reference, &openarena] {
        let def = definition(&s.game, None).unwrap();
        let yaml = tickpack_agones_fleet::render(s, &def, &opts()).unwrap();
        let docs = valid_documents(crds, &yaml);
        assert_eq!(
            docs[0]["metadata"]["labels"]["tickpack.dev/game"],
            s.game.as_str()
        );
        assert!(yaml.contains("Sized from a tile run: member"), "{yaml}");
    }
    assert!(tickpack_agones_fleet::sizing::size_member(&r, 2, None).is_err());
}
