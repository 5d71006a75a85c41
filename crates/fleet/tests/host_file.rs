//! The host file's schema, loading and resolution, and the typed plan's
//! checks: what a user writing a host file (or the bench filling a plan)
//! is told.

use std::path::Path;

use tickpack_fleet::{parse_bytes, FleetFile, FleetPlan, DEFAULT_PIDS, MAX_BYTES};
use tickpack_game::launch::{ServerSpec, Word};
use tickpack_host::fleet::{FleetConfig, FleetError, Health};
use tickpack_host::netpath::NetKind;

fn resolve(toml_text: &str) -> Result<FleetConfig, FleetError> {
    FleetFile::from_toml(toml_text, Path::new("host.toml"))?.resolve(Path::new("/run/tickpack"))
}

/// A bug: a host with no `net` ran on a bridge while `bench` measured
/// on veth. Both default to veth now.
#[test]
fn a_host_without_a_net_runs_on_veth_as_the_bench_measured() {
    assert_eq!(resolve("").unwrap().net, NetKind::Veth);
    assert_eq!(resolve("net = \"bridge\"").unwrap().net, NetKind::Bridge);
}

#[test]
fn a_full_file_resolves_with_overrides() {
    let c = resolve(
        r#"
        name = "h1"
        instances = 4
        backend = "netns"
        net = "macvlan"
        memory = "256MiB"
        disk = "32MiB"
        [[instance]]
        id = 3
        memory = "64MiB"
        disk = "8MiB"
        command = "/opt/game/run -port {port} +ip {ip}"
        "#,
    )
    .unwrap();
    assert_eq!(c.instances.len(), 4);
    assert_eq!(c.run_dir, Path::new("/run/tickpack/h1"));
    assert_eq!(c.instances[0].memory_bytes, Some(256 << 20));
    assert_eq!(c.instances[2].memory_bytes, Some(64 << 20));
    assert_eq!(c.instances[0].disk_bytes, Some(32 << 20));
    assert_eq!(c.instances[2].disk_bytes, Some(8 << 20));
    assert!(c.instances[2]
        .server
        .template()
        .starts_with("/opt/game/run"));
    assert_eq!(c.health, Health::TickpackStats);
    assert!(c.allow_host_ports.is_empty(), "closed by default");
    let c = resolve("allow_host_ports = [8080, 53, 8080]").unwrap();
    assert_eq!(c.allow_host_ports, [53, 8080]);
}

#[test]
fn bad_settings_are_named() {
    for (text, needle) in [
        ("instances = 0", "instances"),
        ("name = \"Host_1\"", "host name"),
        ("backend = \"vm\"", "backend"),
        ("net = \"wifi\"", "wifi"),
        ("memory = \"lots\"", "memory size"),
        ("memory = \"1KiB\"", "minimum"),
        ("placement = \"random\"", "placement"),
        ("command = \"srv {address}\"", "{address}"),
        ("instances = 2\n[[instance]]\nid = 9", "override"),
        ("backend = \"process\"\nmemory = \"64MiB\"", "netns backend"),
        ("backend = \"process\"\ndisk = \"64MiB\"", "netns backend"),
        ("backend = \"process\"\npids = 64", "netns backend"),
        ("pids = 0", "pids (--pids) must be 1..=65536"),
        ("pids = 65537", "pids (--pids) must be 1..=65536"),
        ("pids = -1", "pids"),
        ("disk = \"lots\"", "disk size"),
        ("reserved_cpus = \"a-b\"", "reserved CPU"),
        ("cpu_quota = -2.0", "cpu_quota"),
        ("colour = \"blue\"", "colour"),
        ("allow_host_ports = [0]", "port 0"),
        ("range = \"8.8.8.0/24\"", "not a private"),
        ("allow_host_ports = [70000]", "allow_host_ports"),
        (
            "backend = \"process\"\nallow_host_ports = [53]",
            "netns backend",
        ),
    ] {
        let e = resolve(text).expect_err(text).to_string();
        assert!(e.contains(needle), "{text:?} gave {e:?}");
    }
}

/// Regression: nested, 5,000-character, NUL-holding or duplicate
/// `[[file]]` paths were accepted and failed only when an instance
/// started (exit 1), or the last one silently won.
#[test]
fn file_paths_nested_long_nul_or_duplicate_are_refused_before_start() {
    let long = "x".repeat(5000);
    for (paths, needle) in [
        (vec!["cfg", "cfg/server.cfg"], "clashes"),
        (vec!["a.cfg", "a.cfg"], "clashes"),
        (vec![long.as_str()], "relative path"),
        (vec!["a\\u0000b"], "relative path"),
    ] {
        let mut text = String::from("command = \"/opt/game/run\"\n");
        for p in &paths {
            text.push_str(&format!("[[file]]\npath = \"{p}\"\ncontents = \"x\"\n"));
        }
        let e = resolve(&text).expect_err(&text).to_string();
        assert!(
            e.contains("[[file]]") && e.contains(needle),
            "{paths:?}: {e}"
        );
        assert!(e.len() < 400 && !e.contains('\0'), "bounded, escaped: {e}");
    }
    // A game's own file and the host file's, as one set.
    let e =
        resolve("game = \"nexuiz\"\n[[file]]\npath = \"data/tickpack.cfg\"\ncontents = \"x\"\n")
            .unwrap_err()
            .to_string();
    assert!(e.contains("clashes"), "{e}");
}

#[test]
fn pids_default_to_the_rlimit_on_netns_and_to_none_on_process() {
    assert_eq!(resolve("").unwrap().pids_max, Some(DEFAULT_PIDS));
    assert_eq!(DEFAULT_PIDS, 512);
    assert_eq!(resolve("pids = 64").unwrap().pids_max, Some(64));
    assert_eq!(resolve("pids = 65536").unwrap().pids_max, Some(65_536));
    assert_eq!(resolve("backend = \"process\"").unwrap().pids_max, None);
}

/// Regression: `memory = "99999999999999999999999GiB"` was accepted
/// (saturated to 16 EiB).
#[test]
fn absurd_memory_sizes_are_refused() {
    for m in ["99999999999999999999999GiB", "65537GiB", "1e999"] {
        let text = format!("memory = \"{m}\"");
        let e = resolve(&text).expect_err(&text).to_string();
        assert!(e.contains("memory size"), "{m}: {e}");
    }
    assert_eq!(parse_bytes("64GiB").unwrap(), 64 << 30);
    assert_eq!(parse_bytes("65536GiB").unwrap(), MAX_BYTES);
}

/// Regression: `--config /etc/shadow` printed the file's first line in
/// its error; `--config /dev/zero` read until 4 GB.
#[test]
fn config_error_never_quotes_a_file_that_is_not_toml() {
    let dir = std::env::temp_dir().join(format!("tp-fleet-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shadow");
    std::fs::write(&path, "root:$6$secrethash:19000:0:99999:7:::\n").unwrap();
    let e = FleetFile::load(&path).unwrap_err().to_string();
    assert!(!e.contains("secrethash") && !e.contains("root:"), "{e}");
    assert!(e.contains("line 1") && e.contains("not a host file"), "{e}");
    let e = FleetFile::load(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a regular file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_negative_cpu_quota_override_is_rejected_before_the_network_is_built() {
    for q in ["-2.0", "0.0", "nan", "2000.0"] {
        let text = format!("instances = 2\n[[instance]]\nid = 2\ncpu_quota = {q}");
        let e = resolve(&text).expect_err(&text).to_string();
        assert!(e.contains("cpu_quota"), "{text:?} gave {e:?}");
    }
}

#[test]
fn a_bad_value_in_a_file_is_one_line_naming_the_key() {
    let dir = std::env::temp_dir().join(format!("tp-fleet-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fleet.toml");
    std::fs::write(&path, "instances = 2\nbackend = \"vm\"\n").unwrap();
    let e = FleetFile::load(&path).unwrap_err().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("line 2 (backend = \"vm\")"), "{e}");
    assert!(e.contains("`process` or `netns`"), "{e}");
}

#[test]
fn a_typed_server_is_checked_like_a_command() {
    let mut spec = ServerSpec::parse("/opt/game/run").unwrap();
    spec.files = vec![("server.cfg".into(), Word::text("x"))];
    let plan = |disk_bytes: Option<u64>| FleetPlan {
        server: Some(spec.clone()),
        disk_bytes,
        ..Default::default()
    };
    let c = plan(None).build(Path::new("/run/tickpack")).unwrap();
    assert_eq!(c.instances[0].server.files, spec.files);
    assert_eq!(c.health, Health::None, "a foreign server's own check");
    // Config files live on the disk limit's tmpfs (mounted before
    // they are written): both together are fine.
    let c = plan(Some(16 << 20))
        .build(Path::new("/run/tickpack"))
        .unwrap();
    assert_eq!(c.instances[0].disk_bytes, Some(16 << 20));
    let c = resolve(
        r#"
        command = "/opt/q3/ioq3ded +exec server.cfg"
        [env]
        GAME_ID = "g{id}"
        [[file]]
        path = "baseq3/server.cfg"
        contents = "set net_port {port}"
        "#,
    )
    .unwrap();
    let s = &c.instances[0].server;
    assert_eq!(
        s.env,
        [("GAME_ID".to_string(), Word::from("g{id}".to_string()))]
    );
    assert_eq!(s.files[0].0, Path::new("baseq3/server.cfg"));
    assert_eq!(s.files[0].1.template(), "set net_port {port}");
    let mut home = plan(None);
    home.server.as_mut().unwrap().env = vec![("HOME".into(), Word::text("/"))];
    let e = home
        .build(Path::new("/run/tickpack"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("HOME"), "{e}");
}

#[test]
fn a_defined_game_is_launched_from_its_definition() {
    let c = resolve(
        "game = \"nexuiz\"\ninstances = 3\ngame_vars = [\"map=ruiner\"]\nbots = 4\ntick_hz = 30",
    )
    .unwrap();
    let spec = &c.instances[0].server;
    let t = spec.template();
    assert!(t.starts_with("/usr/games/nexuiz-server "), "{t}");
    for w in [
        "+map ruiner",
        "bot_number 4",
        "sys_ticrate 0.0333333",
        "net_address {ip}",
        "port {port}",
    ] {
        assert!(t.contains(w), "{w} in {t}");
    }
    assert_eq!(spec.files.len(), 1, "its tickpack.cfg");
    assert_eq!(c.port, 26000, "the definition's port");
    assert_eq!(c.health, Health::Q3, "checked with its query");
    assert_eq!(c.restart.start_timeout_s, 39.0, "30 s + 3 s per server");
    assert_eq!(c.game.name(), "nexuiz");
    for (file, needle) in [
        (
            "game = \"nexuiz\"\ngame_vars = [\"mapp=x\"]",
            "not a variable of nexuiz",
        ),
        ("game = \"nexuiz\"\ncommand = \"x\"", "not both"),
        // No game named: the reference server, which has no map.
        ("game_vars = [\"map=x\"]", "not a variable of reference"),
        ("game = \"./no-such-game.toml\"", "no-such-game.toml"),
    ] {
        let e = resolve(file).unwrap_err().to_string();
        assert!(e.contains(needle), "{file}: {e}");
    }
}

#[test]
fn templates_expand() {
    let argv = ServerSpec::parse("{tickpack} server --bind {ip}:{port} --name s{id} --log {dir}/x")
        .unwrap()
        .argv(&tickpack_game::launch::Slot {
            ip: "198.18.0.2",
            port: 27015,
            id: 7,
            dir: Path::new("/r/7"),
            tickpack: Path::new("/bin/tp"),
            rcon_password: None,
        });
    assert_eq!(
        argv,
        [
            "/bin/tp",
            "server",
            "--bind",
            "198.18.0.2:27015",
            "--name",
            "s7",
            "--log",
            "/r/7/x"
        ]
    );
}

/// The keys of one game (`map`, `players_per_server`, `sv_fps`,
/// `game_args`) are gone from host files: a file that still has one is
/// refused at load, in one line naming the line and what to write instead.
#[test]
fn a_host_file_with_one_games_keys_is_told_what_to_write_instead() {
    for (text, line, instead) in [
        (
            "game = \"nexuiz\"\nmap = [\"oa_dm1,oa_dm2\", \"oa_dm3\"]",
            2,
            "write game_vars = [\"map=oa_dm1,oa_dm2,oa_dm3\"] instead",
        ),
        ("sv_fps = 40", 1, "write tick_hz = 40 instead"),
        (
            "instances = 2\n\n  players_per_server = 12",
            3,
            "write bots = 12 instead",
        ),
        (
            "game_args = [\"g_gravity=600\"]",
            1,
            "write game_vars = [\"g_gravity=600\"]",
        ),
    ] {
        let e = FleetFile::from_toml(text, Path::new("old.toml"))
            .unwrap_err()
            .to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.contains(&format!("old.toml line {line}:")),
            "{text:?}: {e}"
        );
        assert!(e.contains("no longer a host file key"), "{text:?}: {e}");
        assert!(e.contains(instead), "{text:?}: {e}");
    }
    // The replacements are what the file takes now.
    let c =
        resolve("game = \"nexuiz\"\ngame_vars = [\"map=ruiner\"]\ntick_hz = 40\nbots = 2").unwrap();
    let t = c.instances[0].server.template();
    assert!(
        t.contains("+map ruiner") && t.contains("sys_ticrate 0.025"),
        "{t}"
    );
}

/// The bench's path: a plan of typed values goes through the checks a
/// host file does, and a file resolves to the plan a caller would write.
#[test]
fn a_typed_plan_is_checked_by_the_same_rules_as_a_file() {
    use tickpack_host::fleet::Backend;
    let ok = FleetPlan {
        name: Some("b1".into()),
        instances: Some(4),
        reserved_cpus: Some(vec![0, 1]),
        port: Some(40000),
        source_addrs: 3,
        ..Default::default()
    };
    let c = ok.clone().build(Path::new("/run/tickpack")).unwrap();
    assert_eq!(c.reserved_cpus, Some(vec![0, 1]));
    assert_eq!((c.instances.len(), c.port, c.source_addrs), (4, 40000, 3));
    assert_eq!(c.run_dir, Path::new("/run/tickpack/b1"));
    let from_file =
        resolve("name = \"b1\"\ninstances = 4\nreserved_cpus = \"0-1\"\nport = 40000").unwrap();
    assert_eq!(
        (from_file.instances, from_file.reserved_cpus),
        (c.instances, c.reserved_cpus)
    );
    for (plan, needle) in [
        (
            FleetPlan {
                instances: Some(0),
                ..ok.clone()
            },
            "instances must be 1..=250",
        ),
        (
            FleetPlan {
                memory_bytes: Some(1024),
                ..ok.clone()
            },
            "minimum",
        ),
        (
            FleetPlan {
                disk_bytes: Some(u64::MAX),
                ..ok.clone()
            },
            "disk size",
        ),
        (
            FleetPlan {
                backend: Some(Backend::Process),
                memory_bytes: Some(64 << 20),
                ..ok.clone()
            },
            "netns backend",
        ),
        (
            FleetPlan {
                backend: Some(Backend::Process),
                source_addrs: 251,
                ..ok.clone()
            },
            "loopback",
        ),
        (
            FleetPlan {
                log_bytes: Some(1),
                ..ok.clone()
            },
            "log_size",
        ),
    ] {
        let e = plan
            .build(Path::new("/run/tickpack"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{needle}: {e}");
    }
}

/// Issue 38: `TICKPACK_HEALTH_KEY` (a name the host sets for every
/// instance) in a host file's `[env]` was accepted, and the server's
/// environment then held two values, the file's first. Every name the host
/// sets, and every name the loader reads, is refused at parse time with its
/// line.
#[test]
fn the_hosts_own_health_key_in_a_host_files_env_was_accepted() {
    for (text, line, says) in [
        (
            "name = \"h\"\n[env]\nTICKPACK_HEALTH_KEY = \"00\"\n",
            3,
            "set by the host",
        ),
        ("[env]\nA = \"1\"\nHOME = \"/\"\n", 3, "set by the host"),
        ("[env]\nTICKPACK_X = \"1\"\n", 2, "set by the host"),
        ("[env]\n\"LD_PRELOAD\" = \"/x.so\"\n", 2, "dynamic loader"),
    ] {
        let e = FleetFile::from_toml(text, Path::new("h.toml"))
            .unwrap_err()
            .to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(&format!("h.toml line {line}:")), "{text:?}: {e}");
        assert!(e.contains(says), "{text:?}: {e}");
    }
}

/// Issue 41: `--range` with a /25 was refused ("the prefix length must be
/// /8..=/24"), though it holds the instances. Any range that holds them
/// is taken; one too small says why and which prefix would do.
#[test]
fn a_slash_25_range_was_refused_though_it_holds_the_instances() {
    let c = resolve("instances = 4\nrange = \"198.18.0.0/25\"").unwrap();
    assert_eq!(c.range, "198.18.0.0/25");
    let e = resolve("instances = 4\nrange = \"198.18.0.0/29\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("198.18.0.0/29 for 4 instances")
            && e.contains("a /27 at 198.18.0.0 or wider holds them"),
        "{e}"
    );
}

/// Issue 41: `host status` showed `bots -` when 4 were asked: each
/// instance records the bots its game's command asks for.
#[test]
fn the_bots_each_instance_was_given_are_recorded() {
    let c = resolve("instances = 2\ngame = \"reference\"\nbots = 4").unwrap();
    assert!(
        c.instances.iter().all(|i| i.bots == Some(4)),
        "{:?}",
        c.instances
    );
    let c = resolve("instances = 1\ncommand = \"/bin/sleep 60\"").unwrap();
    assert_eq!(c.instances[0].bots, None, "not a game's command");
}
