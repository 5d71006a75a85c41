//! The launch contract's tests: words and placeholders, environment,
//! files, health checks, the reference server's spec.

use std::path::PathBuf;

use super::*;

fn slot<'a>(dir: &'a Path, tickpack: &'a Path) -> Slot<'a> {
    Slot {
        ip: "10.1.0.2",
        port: 27015,
        id: 3,
        dir,
        tickpack,
        rcon_password: None,
    }
}

#[test]
fn a_template_parses_to_typed_words_and_back() {
    let t = "{tickpack} server --bind {ip}:{port} --name s{id} --log {dir}/x";
    let spec = ServerSpec::parse(t).unwrap();
    assert_eq!(
        spec.argv[3],
        Word(vec![Piece::Ip, Piece::Text(":".into()), Piece::Port])
    );
    assert_eq!(spec.template(), t);
    assert_eq!(spec.health, Health::TickpackStats);
    let (d, x) = (PathBuf::from("/run/i3"), PathBuf::from("/bin/tp"));
    assert_eq!(
        spec.argv(&slot(&d, &x)),
        [
            "/bin/tp",
            "server",
            "--bind",
            "10.1.0.2:27015",
            "--name",
            "s3",
            "--log",
            "/run/i3/x"
        ]
    );
}

#[test]
fn every_instance_gets_home_in_its_own_directory() {
    let mut spec = ServerSpec::parse("/opt/game/run +set port {port}").unwrap();
    spec.env
        .push(("GAME_NAME".into(), Word::from("g{id}".to_string())));
    let (d, x) = (PathBuf::from("/run/i3"), PathBuf::from("/bin/tp"));
    assert_eq!(
        spec.env(&slot(&d, &x)),
        [
            ("GAME_NAME".to_string(), "g3".to_string()),
            ("HOME".to_string(), "/run/i3".to_string())
        ]
    );
    assert!(spec.check().is_ok());
    let reference = ServerSpec::parse("{tickpack} server --bind {ip}:{port}").unwrap();
    assert_eq!(
        reference.env(&slot(&d, &x)),
        [("HOME".to_string(), "/run/i3".to_string())]
    );
}

#[test]
fn config_files_expand_and_stay_inside_the_instance_dir() {
    let mut spec = ServerSpec::parse("/opt/game/run +exec server.cfg").unwrap();
    spec.files.push((
        PathBuf::from("baseq3/server.cfg"),
        Word::from("set net_port {port}\nset sv_hostname \"i{id}\"\n".to_string()),
    ));
    spec.check().unwrap();
    let (d, x) = (PathBuf::from("/run/i3"), PathBuf::from("/bin/tp"));
    assert_eq!(
        spec.files(&slot(&d, &x)),
        [(
            PathBuf::from("baseq3/server.cfg"),
            "set net_port 27015\nset sv_hostname \"i3\"\n".to_string()
        )]
    );
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(serde_json::from_str::<ServerSpec>(&json).unwrap(), spec);
    for p in ["/etc/passwd", "../x", "a/../../x", "./x", ""] {
        let mut s = spec.clone();
        s.files = vec![(PathBuf::from(p), Word::text("x"))];
        let e = s.check().expect_err(p).to_string();
        assert!(e.contains("config file"), "{p}: {e}");
    }
}

#[test]
fn bad_environment_names_and_home_are_refused() {
    for name in [
        "HOME",
        "A=B",
        "",
        "1X",
        "A B",
        "LD_PRELOAD",
        "GLIBC_TUNABLES",
    ] {
        let mut s = ServerSpec::parse("/opt/game/run").unwrap();
        s.env = vec![(name.into(), Word::text("x"))];
        let e = s.check().expect_err(name).to_string();
        assert!(e.contains("environment"), "{name}: {e}");
    }
}

#[test]
fn health_checks_are_spelled_as_before() {
    for (h, name) in [
        (Health::TickpackStats, "tickpack"),
        (Health::Q3, "q3"),
        (Health::A2s, "a2s"),
        (Health::None, "none"),
    ] {
        assert_eq!(name.parse::<Health>(), Ok(h));
        assert_eq!(serde_json::to_value(h).unwrap(), name);
        assert_eq!(h.to_string(), name);
    }
    let e = "ping".parse::<Health>().unwrap_err();
    assert!(e.contains("health check \"ping\""), "{e}");
}

#[test]
fn a_foreign_server_gets_no_tickpack_health_check() {
    let spec = ServerSpec::parse("/opt/game/srcds_run -port {port} +ip {ip}").unwrap();
    assert_eq!(spec.health, Health::None);
    assert!(!spec.is_reference_server());
}

#[test]
fn unknown_placeholders_and_empty_commands_are_refused() {
    let e = ServerSpec::parse("game --x {ipp}").unwrap_err().to_string();
    assert!(e.contains("unknown placeholder {ipp}"), "{e}");
    assert!(ServerSpec::parse("   ").is_err());
}

#[test]
fn the_reference_servers_spec_carries_its_typed_options() {
    let r = ReferenceServer {
        tick: TickRate::new(64).unwrap(),
        max_players: 10,
        bots: 2,
        cost: "heavy*2".into(),
        name: None,
    };
    let spec = r.spec();
    assert!(spec.is_reference_server());
    assert_eq!(
        spec.template(),
        "{tickpack} server --bind {ip}:{port} --tick-hz 64 --bots 2 --max-players 10 --cost heavy*2"
    );
    assert_eq!(ServerSpec::parse(&spec.template()).unwrap(), spec);
}

#[test]
fn a_spec_is_recorded_with_its_command_as_text() {
    let spec = ServerSpec::parse("/opt/game/run -port {port} +ip {ip}").unwrap();
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["command"], "/opt/game/run -port {port} +ip {ip}");
    assert_eq!(json["health"], "none");
    let back: ServerSpec = serde_json::from_value(json).unwrap();
    assert_eq!(back, spec);
    let old: ServerSpec =
        serde_json::from_str(r#"{"command": "{tickpack} server --bind {ip}:{port}"}"#).unwrap();
    assert_eq!(old.health, Health::TickpackStats);
    assert!(old.is_reference_server());
}
