//! Definition files as a user writes them: the shipped ones parse, a
//! minimal one gets its defaults, and every broken one is refused with the
//! file, the line and what is wrong.

use tickpack_game::def::{PlayerProtocol, QueryProtocol, ReadyBy, StopSignal, Transport};
use tickpack_game::launch::{HealthTiming, Ready};
use tickpack_game::{GameDef, GameSettings, Health};

const MINIMAL: &str = r#"
name = "mine"
description = "a game of mine"
command = "/opt/mine/server --ip {ip} --port {port}"
port = 7777
slots = 8
[tick]
hz = 30
"#;

#[test]
fn a_minimal_definition_gets_its_defaults() {
    let d = GameDef::parse("mine.toml", MINIMAL).unwrap();
    assert_eq!(d.name, "mine");
    assert_eq!(d.query.protocol, QueryProtocol::None);
    assert_eq!(d.players.protocol, PlayerProtocol::None);
    assert_eq!(d.ready_by(), ReadyBy::Process);
    assert_eq!(d.stop.signal, StopSignal::Term);
    assert_eq!((d.tick_range().0.hz(), d.tick_range().1.hz()), (30, 30));
    assert_eq!(d.bots_max(), 0);
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    assert_eq!(spec.template(), "/opt/mine/server --ip {ip} --port {port}");
    assert_eq!(spec.health, Health::None);
}

#[test]
fn a_gamedig_query_is_named_and_checked_by_process_only() {
    let text = format!("{MINIMAL}[query]\nprotocol = \"gamedig\"\ngamedig = \"unreal2\"\n");
    let d = GameDef::parse("mine.toml", &text).unwrap();
    assert_eq!(d.query.protocol, QueryProtocol::Gamedig);
    assert_eq!(
        d.query.gamedig_protocol().map(|g| g.name()),
        Some("unreal2")
    );
    // The host checks gamedig games by their process only (for now).
    assert_eq!(d.ready_by(), ReadyBy::Process);
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    assert_eq!(spec.health, Health::None);
    // Every name of the table is accepted.
    for (name, _) in tickpack_game::gamedig::GAMEDIG_PROTOCOLS {
        let text = format!("{MINIMAL}[query]\nprotocol = \"gamedig\"\ngamedig = \"{name}\"\n");
        GameDef::parse("mine.toml", &text).unwrap();
    }
}

/// `(what is changed, the line the error names, a piece of its message)`.
#[test]
fn broken_definitions_are_refused_with_file_line_and_what_is_wrong() {
    let cases: &[(&str, usize, &str)] = &[
        // TOML and schema errors (the toml crate's span).
        ("nmae = \"x\"\n", 9, "unknown field `nmae`"),
        ("[players]\ndefault = \"x\"\n", 10, "invalid type"),
        ("rate = 2\n", 9, "unknown field `rate`"),
        ("[players]\nprotocol = \"doom\"\n", 10, "unknown variant `doom`"),
        ("[query]\nprotocol = \"gopher\"\n", 10, "unknown variant"),
        ("[stop]\nsignal = \"SIGHUP\"\n", 10, "unknown variant"),
        ("[[file]]\npath = \"a\"\n", 9, "missing field `contents`"),
        ("this is not toml\n", 9, ""),
        // Checks after parsing, at the key's line.
        ("[variables]\nmap = \"dm1; quit\"\n", 10, "a value is one word"),
        ("[variables]\nip = \"x\"\n", 10, "fills {ip} itself"),
        ("[variables]\nMap = \"x\"\n", 10, "lower-case"),
        ("[env]\nHOME = \"/\"\n", 10, "set by the host"),
        // Issue 38: the host's own health key in [env] was accepted, and
        // the server's environment held two values, the file's first.
        ("[env]\nTICKPACK_HEALTH_KEY = \"00\"\n", 10, "set by the host"),
        ("[env]\nA = \"1\"\nTICKPACK_FILE_1 = \"x\"\n", 11, "set by the host"),
        // Finding 1 of issue 30: LD_PRELOAD in [env] loaded a library into
        // the root init; loader variables are refused at parse time now.
        ("[env]\nLD_PRELOAD = \"/tmp/x.so\"\n", 10, "dynamic loader"),
        ("[env]\nGLIBC_TUNABLES = \"x\"\n", 10, "dynamic loader"),
        ("[env]\nX = \"{nope}\"\n", 10, "unknown placeholder {nope}"),
        ("[bots]\ndefault = 4\n", 9, "put {bots} in the command"),
        ("[bots]\ndefault = 4\nmax = 2\n", 10, "above the most"),
        ("[ready]\nby = \"query\"\n", 10, "needs a [query] protocol"),
        ("[ready]\ntimeout_s = 0\n", 9, "timeout_s must be"),
        ("[stop]\ngrace_s = 100\n", 10, "grace_s must be"),
        // Readiness by a log line or a port.
        ("[ready]\nby = \"socket\"\n", 10, "unknown variant `socket`"),
        ("[ready]\nby = \"log\"\n", 10, "needs ready.log"),
        ("[ready]\nby = \"log\"\nlog = \"a\\nb\"\n", 11, "printable ASCII"),
        ("[ready]\nby = \"log\"\nlog = \"\"\n", 11, "printable ASCII"),
        ("[ready]\nlog = \"up\"\n", 10, "only with ready.by = \"log\""),
        // The health check's timing.
        ("[health]\ninterval_s = 2\n", 9, "needs a [query] protocol"),
        (
            "[query]\nprotocol = \"gamedig\"\ngamedig = \"unreal2\"\n[health]\ninterval_s = 2\n",
            12,
            "by its process only",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[health]\ninterval_s = 0\n",
            12,
            "interval_s must be",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[health]\nunresponsive_after = 0\n",
            12,
            "unresponsive_after must be",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[health]\nunresponsive_after = 3\nkill_after = 2\n",
            13,
            "kill_after must be",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[health]\nkill_after = 101\n",
            12,
            "kill_after must be",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[health]\nretries = 2\n",
            12,
            "unknown field `retries`",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[ready]\nby = \"process\"\n[health]\ninterval_s = 1\n",
            13,
            "turns off",
        ),
        ("[players]\nprotocol = \"q3\"\n", 9, "needs q3_protocol"),
        ("[players]\ndefault = 3\n", 10, "needs a player protocol"),
        (
            "[players]\nprotocol = \"reference\"\ndefault = 30\n",
            11,
            "above the slots",
        ),
        (
            "[[file]]\npath = \"../etc/passwd\"\ncontents = \"x\"\n",
            10,
            "relative path inside",
        ),
        (
            "[[file]]\npath = \"/etc/passwd\"\ncontents = \"x\"\n",
            10,
            "relative path inside",
        ),
        (
            "[[file]]\npath = \"a\"\ncontents = \"x\"\n[[file]]\npath = \"a/b\"\ncontents = \"y\"\n",
            13,
            "clashes with file",
        ),
        (
            "[[file]]\npath = \"a\"\ncontents = \"x\"\n[[file]]\npath = \"a\"\ncontents = \"y\"\n",
            13,
            "clashes with file",
        ),
        (
            "[[file]]\npath = \"a\"\ncontents = \"x {mapp}\"\n",
            11,
            "unknown placeholder {mapp}",
        ),
        // gamedig protocols: by tickpack's name, known at parse time.
        (
            "[query]\nprotocol = \"gamedig\"\ngamedig = \"q3a\"\n",
            11,
            "unknown gamedig protocol \"q3a\"",
        ),
        (
            "[query]\nprotocol = \"gamedig\"\n",
            10,
            "needs gamedig = \"NAME\", one of: valve,",
        ),
        (
            "[query]\nprotocol = \"q3\"\ngamedig = \"unreal2\"\n",
            11,
            "goes with protocol = \"gamedig\"",
        ),
        (
            "[query]\nprotocol = \"gamedig\"\ngamedig = \"unreal2\"\n[ready]\nby = \"query\"\n",
            13,
            "by their process only",
        ),
        // Repetition lines in config files ({for ITEM in LIST}): at the
        // contents' line.
        (
            "[variables]\nmap = \"a\"\n[[file]]\npath = \"a\"\ncontents = \"{for m in}x\"\n",
            13,
            "expected {for ITEM in LIST}",
        ),
        (
            "[[file]]\npath = \"a\"\ncontents = \"{for m in maps}set {m}\"\n",
            11,
            "maps is not in [variables]",
        ),
        (
            "[variables]\nmap = \"a\"\n[[file]]\npath = \"a\"\ncontents = \"{for m in map up to ticks}x\"\n",
            13,
            "a count is one of bots, players",
        ),
        (
            "[variables]\nmap = \"a\"\n[[file]]\npath = \"a\"\ncontents = \"{for ip in map}x\"\n",
            13,
            "{ip} is already a placeholder",
        ),
        (
            "[variables]\nmap = \"a\"\n[[file]]\npath = \"a\"\ncontents = \"{for m in map}x {m} {n}\"\n",
            13,
            "unknown placeholder {n}",
        ),
        (
            "[variables]\nmap = \"a\"\n[[file]]\npath = \"a\"\ncontents = \"x {m_index}\"\n",
            13,
            "unknown placeholder {m_index}",
        ),
        // [data]: the maps checked in the game's data.
        (
            "[variables]\nmap = \"a\"\n[data]\npk3_maps = \"maps\"\n",
            12,
            "pk3_maps = \"maps\" is not in [variables]",
        ),
        (
            "[variables]\nmap = \"a\"\n[data]\npk3_maps = \"map\"\n",
            11,
            "pk3_maps needs pk3_dirs",
        ),
        ("[data]\npk3_dirs = [\"/x\"]\n", 10, "read only with pk3_maps"),
        (
            "[variables]\nmap = \"a\"\n[data]\npk3_maps = \"map\"\npk3_dirs = [\"rel\"]\n",
            13,
            "not an absolute directory",
        ),
        ("[players]\nmax_with_bots = 99\n", 10, "max_with_bots must be 1..=8"),
        // [agones]: the game in an Agones Fleet.
        (
            "[query]\nprotocol = \"q3\"\n[agones]\nimage = \"my game:1\"\ndir = \"/srv\"\n",
            12,
            "agones: image \"my game:1\"",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[agones]\nimage = \"mine:{tag}\"\ndir = \"/srv\"\n",
            12,
            "{version} for tickpack's version",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[agones]\nimage = \"mine:1\"\ndir = \"srv/../x\"\n",
            13,
            "agones: dir \"srv/../x\": an absolute path",
        ),
        (
            "[agones]\nimage = \"mine:1\"\ndir = \"/srv\"\n",
            9,
            "the sidecar asks the game's [query]",
        ),
        (
            "[agones]\nimage = \"mine:1\"\ndir = \"/srv\"\nreports = \"server\"\nargs = [\"--a b\"]\n",
            13,
            "agones: args \"--a b\": one word each",
        ),
        (
            "[query]\nprotocol = \"q3\"\n[agones]\nimage = \"mine:1\"\ndir = \"/srv\"\ncontainer = \"Mine\"\n",
            14,
            "agones: container \"Mine\"",
        ),
        (
            "[agones]\nimage = \"mine:1\"\ndir = \"/srv\"\nreports = \"itself\"\n",
            12,
            "unknown variant `itself`",
        ),
        (
            "[agones]\nimage = \"mine:1\"\n",
            9,
            "missing field `dir`",
        ),
    ];
    for (extra, line, needle) in cases {
        let text = format!("{MINIMAL}{extra}");
        let e = GameDef::parse("mine.toml", &text).expect_err(extra);
        let s = e.to_string();
        assert!(
            s.starts_with(&format!("mine.toml:{line}: ")),
            "{extra:?} -> {s}"
        );
        assert!(s.contains(needle), "{extra:?} -> {s}");
        assert!(!s.contains('\n'), "one line: {s:?}");
    }
}

#[test]
fn top_level_problems_name_their_line() {
    for (from, to, line, needle) in [
        (
            "name = \"mine\"",
            "name = \"My Game\"",
            2,
            "name \"My Game\"",
        ),
        ("port = 7777", "port = 0", 5, "port must be"),
        ("slots = 8", "slots = 0", 6, "slots must be"),
        (
            "--port {port}",
            "--port {prot}",
            4,
            "unknown placeholder {prot}",
        ),
        ("hz = 30", "hz = 0", 8, "tick"),
        (
            "command = \"/opt/mine/server --ip {ip} --port {port}\"",
            "command = \"  \"",
            4,
            "command is empty",
        ),
    ] {
        let text = MINIMAL.replace(from, to);
        let e = GameDef::parse("x.toml", &text).expect_err(to).to_string();
        assert!(e.starts_with(&format!("x.toml:{line}: ")), "{to}: {e}");
        assert!(e.contains(needle), "{to}: {e}");
    }
}

#[test]
fn an_oversized_definition_is_refused_before_it_is_parsed() {
    let text = format!("{MINIMAL}# {}\n", "x".repeat(70_000));
    let e = GameDef::parse("big.toml", &text).unwrap_err().to_string();
    assert!(
        e.starts_with("big.toml:1: ") && e.contains("larger than"),
        "{e}"
    );
}

#[test]
fn game_variables_fill_the_command_and_files_once() {
    let text = format!(
        "{}{}",
        MINIMAL.replace(
            "--port {port}",
            "--port {port} +tick {tick_interval_s} +hz {tick_hz} +bots {bots} +max {slots} +map {map}"
        ),
        "[variables]\nmap = \"dm1\"\n[bots]\ndefault = 2\n[[file]]\npath = \"cfg/server.cfg\"\ncontents = \"map {map}\\nname s{id}\\n{\\\"json\\\": 1}\\n\"\n"
    )
    .replace("hz = 30", "hz = 60\nmin_hz = 10\nmax_hz = 100");
    let d = GameDef::parse("x.toml", &text).unwrap();
    let mut s = GameSettings::defaults(&d);
    s.set(&d, "map=dm2").unwrap();
    let spec = d.server_spec(&s).unwrap();
    assert_eq!(
        spec.template(),
        "/opt/mine/server --ip {ip} --port {port} +tick 0.0166667 +hz 60 +bots 2 +max 8 +map dm2"
    );
    assert_eq!(spec.files.len(), 1);
    assert_eq!(
        String::from(spec.files[0].1.clone()),
        "map dm2\nname s{id}\n{\"json\": 1}\n",
        "per-instance placeholders stay; other braces are text"
    );
    // What a run may set, and may not.
    for (bad, needle) in [
        ("map", "expected NAME=VALUE"),
        ("mapp=x", "not a variable of mine"),
        ("map=a b", "one word"),
        ("map=+quit", "one word"),
        ("map=x\"y", "one word"),
    ] {
        let e = GameSettings::defaults(&d).set(&d, bad).unwrap_err();
        assert!(e.contains(needle), "{bad}: {e}");
    }
    s.tick_hz = tickpack_wire::TickRate::new(200).unwrap();
    assert!(d.server_spec(&s).unwrap_err().contains("10..=100 Hz"));
    s.tick_hz = tickpack_wire::TickRate::new(60).unwrap();
    s.bots = 9;
    assert!(d.server_spec(&s).unwrap_err().contains("at most 8 bots"));
}

#[test]
fn a_fixed_tick_cannot_be_changed() {
    let d = GameDef::parse("mine.toml", MINIMAL).unwrap();
    let mut s = GameSettings::defaults(&d);
    s.tick_hz = tickpack_wire::TickRate::new(60).unwrap();
    let e = d.server_spec(&s).unwrap_err();
    assert!(e.contains("fixed 30 Hz"), "{e}");
}

/// docs/games.md's complete example is a definition that parses, so the
/// document a user writes from stays true.
#[test]
fn the_annotated_example_in_the_docs_parses() {
    let doc = include_str!("../../../docs/games.md");
    let start = doc.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let d = GameDef::parse("docs/games.md", &doc[start..end]).unwrap();
    assert_eq!(d.name, "mygame");
    assert_eq!(d.files.len(), 1);
    assert_eq!(d.port, 26000);
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    assert_eq!(
        spec.timing(),
        HealthTiming {
            interval_s: 2.0,
            unresponsive_after: 2,
            kill_after: 4
        }
    );
    assert!(
        spec.template().contains("+set sys_ticrate 0.0166667"),
        "{}",
        spec.template()
    );
}

#[test]
fn the_stop_signal_and_grace_reach_the_launch_spec() {
    let text = format!("{MINIMAL}[stop]\nsignal = \"SIGINT\"\ngrace_s = 10\n");
    let d = GameDef::parse("x.toml", &text).unwrap();
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    assert_eq!(spec.stop.signal, StopSignal::Int);
    assert_eq!(spec.stop.signal.number(), 2);
    assert_eq!(spec.stop.grace(), std::time::Duration::from_secs(10));
    // Recorded with the spec (state.json), and absent when the default.
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["stop"]["signal"], "SIGINT");
    let plain = GameDef::parse("x.toml", MINIMAL).unwrap();
    let json =
        serde_json::to_value(plain.server_spec(&GameSettings::defaults(&plain)).unwrap()).unwrap();
    assert!(json.get("stop").is_none(), "{json}");
}

#[test]
fn readiness_by_a_log_line_or_a_port_reaches_the_launch_spec() {
    let text = format!("{MINIMAL}[ready]\nby = \"log\"\nlog = \"Server listening on\"\n");
    let d = GameDef::parse("x.toml", &text).unwrap();
    assert_eq!(d.ready_by(), ReadyBy::Log);
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    assert_eq!(spec.ready, Ready::Log("Server listening on".into()));
    assert_eq!(
        spec.health,
        Health::None,
        "no query: the process and its log"
    );
    let text = format!(
        "{}[ready]\nby = \"port\"\n",
        MINIMAL.replacen("port = 7777\n", "port = 7777\ntransport = \"tcp\"\n", 1)
    );
    let d = GameDef::parse("x.toml", &text).unwrap();
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    assert_eq!(spec.ready, Ready::Port(Transport::Tcp));
    // Recorded with the spec, and read back.
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(
        serde_json::from_str::<tickpack_game::ServerSpec>(&json).unwrap(),
        spec
    );
}

#[test]
fn health_timing_defaults_to_todays_and_a_definition_can_set_it() {
    let q3 = format!("{MINIMAL}[query]\nprotocol = \"q3\"\n");
    let d = GameDef::parse("x.toml", &q3).unwrap();
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    assert_eq!(spec.health_timing, None, "the protocol's own");
    let t = spec.timing();
    assert_eq!(
        (t.interval_s, t.unresponsive_after, t.kill_after),
        (2.0, 2, 4)
    );
    let t = Health::TickpackStats.default_timing();
    assert_eq!(
        (t.interval_s, t.unresponsive_after, t.kill_after),
        (1.0, 1, 4)
    );
    // Set in part: the rest stays the protocol's.
    let d = GameDef::parse(
        "x.toml",
        &format!("{q3}[health]\ninterval_s = 5\nkill_after = 0\n"),
    )
    .unwrap();
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    assert_eq!(
        spec.health_timing,
        Some(HealthTiming {
            interval_s: 5.0,
            unresponsive_after: 2,
            kill_after: 0
        })
    );
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["health_timing"]["interval_s"], 5.0);
    // A spec recorded before timing and readiness existed reads as today's.
    let old: tickpack_game::ServerSpec =
        serde_json::from_str(r#"{"command": "/opt/x {ip}", "health": "q3"}"#).unwrap();
    assert_eq!(
        (old.health_timing, old.ready.clone()),
        (None, Ready::Health)
    );
    assert_eq!(old.timing(), Health::Q3.default_timing());
}

/// `[rcon]` and `{rcon_password}` go together, each refused without the
/// other where it stands: a password the host never fills, a console
/// whose server never gets its password.
#[test]
fn a_console_and_its_password_are_refused_one_without_the_other() {
    let rcon = "[rcon]\nprotocol = \"q3\"\nmap_change = \"map {next_map}\"\nrotation = \"map\"\n";
    let vars = "[variables]\nmap = \"dm1\"\n";
    let file = "[[file]]\npath = \"s.cfg\"\ncontents = \"set rconpassword {rcon_password}\\n\"\n";
    let cases: Vec<(String, usize, &str)> = vec![
        // A console without the password.
        (format!("{vars}{rcon}"), 11, "never gets its password"),
        // The password without a console: in the command, [env], a file.
        (format!("{vars}{file}{rcon}"), 0, ""),
        (
            "[env]\nPW = \"{rcon_password}\"\n".to_string(),
            10,
            "only for a game with an [rcon] table",
        ),
        (file.to_string(), 11, "only for a game with an [rcon] table"),
        // The console's own keys.
        (
            format!(
                "{vars}{file}{}",
                rcon.replace("rotation = \"map\"", "rotation = \"maps\"")
            ),
            17,
            "rotation = \"maps\" is not in [variables]",
        ),
        (
            format!("{vars}{file}{}", rcon.replace("{next_map}", "{map}")),
            16,
            "unknown placeholder {map}",
        ),
        (
            format!(
                "{vars}{file}{}",
                rcon.replace("{next_map}", "{next_map}; quit")
            ),
            16,
            "printable ASCII without ;",
        ),
        (
            format!("{vars}{file}{}", rcon.replace("\"q3\"", "\"source\"")),
            15,
            "unknown variant `source`",
        ),
        // A variable cannot stand in for the host's password, nor a load
        // command get it.
        (
            format!("[variables]\nmap = \"dm1\"\nrcon_password = \"known\"\n{file}{rcon}"),
            11,
            "fills {rcon_password} itself",
        ),
        (
            format!("{vars}{file}{rcon}[load]\ncommand = \"/bin/x {{rcon_password}}\"\n"),
            19,
            "unknown placeholder {rcon_password}",
        ),
    ];
    for (extra, line, needle) in &cases {
        let text = format!("{MINIMAL}{extra}");
        if *line == 0 {
            GameDef::parse("mine.toml", &text).expect(extra);
            continue;
        }
        let e = GameDef::parse("mine.toml", &text)
            .expect_err(extra)
            .to_string();
        assert!(
            e.starts_with(&format!("mine.toml:{line}: ")),
            "{extra:?} -> {e}"
        );
        assert!(e.contains(needle), "{extra:?} -> {e}");
    }
    // A game on TCP has no rcon over UDP.
    let text = MINIMAL.replace("port = 7777", "port = 7777\ntransport = \"tcp\"")
        + &format!("{vars}{file}{rcon}");
    let e = GameDef::parse("mine.toml", &text).unwrap_err().to_string();
    assert!(
        e.starts_with("mine.toml:16: ") && e.contains("speaks UDP"),
        "{e}"
    );
    // The password in the command without [rcon], at the command's line.
    let text = MINIMAL.replace("--port {port}", "--port {port} --rcon {rcon_password}");
    let e = GameDef::parse("mine.toml", &text).unwrap_err().to_string();
    assert!(
        e.starts_with("mine.toml:4: ") && e.contains("[rcon] table"),
        "{e}"
    );
}

/// A console reaches the launch spec with the run's rotation, and the
/// password only the slot's expansion: the spec as recorded keeps the
/// placeholder.
#[test]
fn a_console_reaches_the_spec_with_the_runs_rotation_and_no_password() {
    let text = format!(
        "{MINIMAL}[variables]\nmap = \"dm1\"\n[[file]]\npath = \"s.cfg\"\ncontents = \"set rconpassword \\\"{{rcon_password}}\\\"\\n\"\n[rcon]\nprotocol = \"q3\"\nmap_change = \"map {{next_map}}\"\nrotation = \"map\"\n"
    );
    let d = GameDef::parse("mine.toml", &text).unwrap();
    let mut s = GameSettings::defaults(&d);
    s.set(&d, "map=dm1,dm7").unwrap();
    let spec = d.server_spec(&s).unwrap();
    let console = spec.console.clone().expect("a console");
    assert_eq!(console.map_change.maps, ["dm1", "dm7"]);
    assert_eq!(console.map_change.nth(1), ("dm7".into(), "map dm7".into()));
    let password = tickpack_game::console::Password::from_random([7; 16]);
    let dir = std::path::Path::new("/run/i1");
    let slot = tickpack_game::launch::Slot {
        ip: "10.0.0.2",
        port: 7777,
        id: 1,
        dir,
        tickpack: dir,
        rcon_password: Some(&password),
    };
    let files = spec.files(&slot);
    assert_eq!(
        files[0].1,
        format!("set rconpassword \"{}\"\n", "07".repeat(16))
    );
    let recorded = serde_json::to_string(&spec).unwrap();
    assert!(!recorded.contains(password.as_str()), "{recorded}");
    assert!(recorded.contains("{rcon_password}"), "{recorded}");
    let back: tickpack_game::ServerSpec = serde_json::from_str(&recorded).unwrap();
    assert_eq!(back, spec);
    // Without a slot's password (no host made one) the server's rcon is off.
    let no = tickpack_game::launch::Slot {
        rcon_password: None,
        ..slot
    };
    assert_eq!(spec.files(&no)[0].1, "set rconpassword \"\"\n");
    // A spec that names the password without a console is refused.
    let mut bare = spec.clone();
    bare.console = None;
    assert!(bare.check().unwrap_err().to_string().contains("[rcon]"));
}

/// Issue 41: `[ready] log = "Bound socket to {ip}:{port}"` passed `games
/// check`, but the host matched the text with its braces, so no server was
/// ever ready. Every placeholder a key can hold is filled where it is
/// used (the log line per instance, the game's own once) or refused with
/// its line where the text is used as written.
#[test]
fn a_ready_log_with_placeholders_passed_games_check_and_was_never_filled() {
    let text = format!(
        "{MINIMAL}[variables]\nmode = \"ctf\"\n[ready]\nby = \"log\"\nlog = \"Bound socket to {{ip}}:{{port}} ({{mode}}, {{tick_hz}} Hz)\"\n"
    );
    let d = GameDef::parse("x.toml", &text).unwrap();
    let spec = d.server_spec(&GameSettings::defaults(&d)).unwrap();
    let slot = tickpack_game::launch::Slot {
        ip: "198.18.0.6",
        port: 7777,
        id: 1,
        dir: std::path::Path::new("/run/tickpack/h/instances/1"),
        tickpack: std::path::Path::new("/usr/bin/tickpack"),
        rcon_password: None,
    };
    assert_eq!(
        spec.ready.log_for(&slot).as_deref(),
        Some("Bound socket to 198.18.0.6:7777 (ctf, 30 Hz)")
    );
    // Refused with its line: an unknown name in the log line, and a
    // placeholder where the text is used as written.
    let cases: &[(&str, usize, &str)] = &[
        (
            "[ready]\nby = \"log\"\nlog = \"up on {addr}\"\n",
            11,
            "ready.log: unknown placeholder {addr}",
        ),
        (
            "[[file]]\npath = \"cfg/{id}.cfg\"\ncontents = \"x\"\n",
            10,
            "{id}: placeholders are not filled in a [[file]] path",
        ),
        (
            "[variables]\nmap = \"dm1\"\n[data]\npk3_maps = \"map\"\npk3_dirs = [\"/srv/{map}\"]\n",
            13,
            "placeholders are not filled there",
        ),
        (
            "[agones]\nimage = \"mine:1\"\ndir = \"/srv\"\nreports = \"server\"\nargs = [\"--port={port}\"]\n",
            13,
            "agones: args \"--port={port}\": placeholders are not filled in args",
        ),
    ];
    // Never the rcon password: the line is shown in the host's events.
    let rcon = "[variables]\nmap = \"dm1\"\n[[file]]\npath = \"s.cfg\"\ncontents = \"set rconpassword {rcon_password}\\n\"\n\
                [rcon]\nprotocol = \"q3\"\nmap_change = \"map {next_map}\"\nrotation = \"map\"\n\
                [ready]\nby = \"log\"\nlog = \"rcon {rcon_password}\"\n";
    let e = GameDef::parse("mine.toml", &format!("{MINIMAL}{rcon}"))
        .expect_err("a password in the log line")
        .to_string();
    assert!(
        e.starts_with("mine.toml:20: ")
            && e.contains("ready.log: unknown placeholder {rcon_password}"),
        "{e}"
    );
    for (extra, line, needle) in cases {
        let e = GameDef::parse("mine.toml", &format!("{MINIMAL}{extra}")).expect_err(extra);
        let s = e.to_string();
        assert!(
            s.starts_with(&format!("mine.toml:{line}: ")),
            "{extra:?} -> {s}"
        );
        assert!(s.contains(needle), "{extra:?} -> {s}");
    }
}
