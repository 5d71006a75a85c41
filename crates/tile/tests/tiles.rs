//! Tile files: the shipped one reads as documented, and every refusal
//! names its line (the binary exits 2 on them, before any work).

use std::path::Path;
use std::time::Duration;

use tickpack_curve::{Envelope, Rounds};
use tickpack_tile::{Kind, Tile, TileError, Variant};

fn parse(text: &str) -> Result<Tile, TileError> {
    Tile::parse("t.toml", text, tickpack_game::source::load)
}

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn the_shipped_evening_runs_four_games_and_a_lobby_over_a_compressed_day() {
    let tile = tickpack_tile::load(&repo().join("tiles/evening.toml")).unwrap();
    let got: Vec<(&str, &str, Kind, u16, u16)> = tile
        .members
        .iter()
        .map(|m| (m.name.as_str(), m.game(), m.kind(), m.players, m.bots()))
        .collect();
    assert_eq!(
        got,
        [
            ("reference", "reference", Kind::Players, 12, 0),
            ("openarena", "openarena", Kind::Players, 8, 0),
            ("teeworlds", "teeworlds", Kind::Players, 8, 0),
            ("nexuiz", "nexuiz", Kind::Bots, 0, 4),
            ("lobby", "openarena", Kind::Idle, 0, 0),
        ]
    );
    assert_eq!(tile.servers(), 5);
    // A day in 90 s; OpenArena's map cycle and a round fit in it.
    assert_eq!(tile.step_len(), Duration::from_secs(90));
    assert_eq!(tile.windows().len(), 18);
    let players = &tile.members[..2];
    assert!(players
        .iter()
        .all(|m| m.curve.envelope == Envelope::evening()));
    assert_eq!(tile.members[1].curve.rounds, Some(Rounds::default()));
    assert!(tile.members[0].curve.churn.is_some());
    // Teeworlds' players stay (tiles/evening.toml says why).
    assert_eq!(tile.members[2].curve, tickpack_curve::Curve::steady());
    // Bots and the lobby keep their load the whole step.
    assert_eq!(tile.members[3].curve, tickpack_curve::Curve::steady());
    assert_eq!(
        tile.members[1].server.settings.variables["map"],
        "oa_dm1,oa_dm4"
    );
    // OpenArena changes its map in the step, on each server at its own
    // moment.
    let a = tile.timeline(1, 0, tile.step_len());
    let b = tile.timeline(1, 1, tile.step_len());
    assert!(!a.map_changes().is_empty());
    assert_ne!(a.map_changes(), b.map_changes());
    // The lobby is judged on its query and run delay; the players' games
    // on their transactions.
    assert!(tile.members[4].qos.p99_query_us.is_some());
    assert!(tile.members[4].qos.p99_run_delay_us.is_some());
    assert_eq!(tile.members[0].qos.p99_run_delay_us, None);
    let words: Vec<String> = tile
        .compression(tile.step_len())
        .into_iter()
        .map(|(n, c)| format!("{n}: {c}"))
        .collect();
    assert_eq!(
        words,
        [
            "reference: a day in 90 s (960x), sessions 20x",
            "openarena: a day in 90 s (960x), rounds 8x",
            "teeworlds: none",
            "nexuiz: none",
            "lobby: none",
        ]
    );
}

/// The shipped tile runs where `scripts/setup.sh` ran: every member's
/// program is installed and OpenArena's rotation is in its data (the
/// check `bench` makes before any work).
#[test]
fn the_shipped_evening_runs_on_a_machine_set_up_by_setup_sh() {
    let tile = tickpack_tile::load(&repo().join("tiles/evening.toml")).unwrap();
    for m in &tile.members {
        if let Err(why) = m.server.check_system() {
            panic!(
                "member {}: {why} (scripts/setup.sh installs the shipped games)",
                m.name
            );
        }
        m.server.spec().unwrap();
    }
}

#[test]
fn the_three_load_variants_share_the_step_and_differ_in_rhythm() {
    let tile = tickpack_tile::load(&repo().join("tiles/evening.toml")).unwrap();
    let len = tile.step_len();
    let s = tile.variant(Variant::Static);
    assert_eq!(s.step_len(), len);
    let full = s.timeline(0, 0, len);
    assert!(full.events().is_empty() && full.present_at(Duration::ZERO) == 12);
    let phased = tile.variant(Variant::Phased);
    let aligned = tile.variant(Variant::Aligned);
    assert_ne!(
        phased.timeline(1, 0, len).map_changes(),
        phased.timeline(1, 1, len).map_changes()
    );
    assert_eq!(aligned.timeline(1, 0, len), aligned.timeline(1, 1, len));
    assert_eq!(aligned.timeline(0, 0, len), aligned.timeline(0, 7, len));
}

#[test]
fn member_settings_and_limits_are_the_games_unless_set() {
    let tile = parse(
        r#"
[[member]]
game = "openarena"
tick_hz = 40
[member.qos]
p99_ms = 80
loss_percent = 1
join_ms = 2500

[[member]]
game = "teeworlds"
name = "tw"
count = 3
"#,
    )
    .unwrap();
    let oa = &tile.members[0];
    assert_eq!(oa.players, 12, "the definition's players");
    assert_eq!(oa.server.settings.tick_hz.hz(), 40);
    assert_eq!(oa.qos.p99_transaction_us, 80_000);
    assert_eq!(oa.qos.max_snapshot_loss, 0.01);
    assert_eq!(oa.max_join, Some(Duration::from_millis(2500)));
    assert_eq!(tile.members[1].max_join, None, "the bench's default");
    assert_eq!(
        oa.qos.p99_tick_lateness_us,
        25_000 / 4,
        "a quarter tick at 40 Hz"
    );
    let tw = &tile.members[1];
    assert_eq!((tw.name.as_str(), tw.count, tw.players), ("tw", 3, 16));
    assert_eq!(tw.qos.p99_transaction_us, 45_000);
    assert_eq!(tile.servers(), 4);
    assert_eq!(tile.seed, tickpack_tile::DEFAULT_SEED);
    assert_eq!(tile.window, tickpack_tile::DEFAULT_WINDOW);
    // Steady curves need no length: the default step.
    assert_eq!(tile.step_len(), tickpack_tile::DEFAULT_STEP);
}

#[test]
fn a_member_may_follow_its_own_curve_and_points_are_the_users() {
    let tile = parse(
        r#"
curve = "evening"
aligned = true
step_s = 40

[[member]]
game = "reference"
points = [[0, 0.5], [0.5, 1], [1, 0]]
aligned = false

[[member]]
game = "teeworlds"
curve = "evening"
peak_to_mean = 3
[member.churn]
scale_s = 600
gap_s = 10
compress = 10
"#,
    )
    .unwrap();
    let r = &tile.members[0].curve;
    assert!(matches!(&r.envelope, Envelope::Points(p) if p.len() == 3));
    assert!(!r.aligned);
    let tw = &tile.members[1].curve;
    assert_eq!(tw.envelope, Envelope::Evening { peak_to_mean: 3.0 });
    assert!(tw.aligned, "the tile's");
    let c = tw.churn.unwrap();
    assert_eq!((c.scale_s(), c.gap_s()), (60.0, 1.0));
    assert_eq!(tile.step_len(), Duration::from_secs(40));
}

#[test]
fn a_members_definition_file_is_found_beside_the_tile() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("games")).unwrap();
    let (text, _, _) = tickpack_game::source::read("reference").unwrap();
    std::fs::write(
        dir.join("games/mine.toml"),
        text.replace("name = \"reference\"", "name = \"mine\""),
    )
    .unwrap();
    std::fs::write(dir.join("broken.toml"), "name = \"broken\"\nport = 0\n").unwrap();
    std::fs::write(
        dir.join("t.toml"),
        "[[member]]\ngame = \"games/mine.toml\"\nplayers = 4\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("bad.toml"),
        "[[member]]\ngame = \"reference\"\n\n[[member]]\ngame = \"broken.toml\"\n",
    )
    .unwrap();
    let tile = tickpack_tile::load(&dir.join("t.toml")).unwrap();
    assert_eq!(tile.members[0].game(), "mine");
    let e = tickpack_tile::load(&dir.join("bad.toml"))
        .unwrap_err()
        .to_string();
    let bad = dir.join("bad.toml").display().to_string();
    assert!(
        e.starts_with(&format!("{bad}:5: game \"broken.toml\": ")),
        "{e}"
    );
    assert!(e.contains("broken.toml:"), "the definition's own line: {e}");
    let e = tickpack_tile::load(&dir.join("missing.toml")).unwrap_err();
    assert_eq!(e.line, 0);
}

/// Each refused file, the line blamed and a piece of the message.
#[test]
fn a_bad_tile_is_refused_with_its_line() {
    let cases: &[(&str, usize, &str)] = &[
        // An unknown game.
        ("[[member]]\ngame = \"quake9\"\n", 2, "unknown game \"quake9\""),
        // A curve above 100 % of the slots: a share above 1...
        (
            "curve = \"points\"\npoints = [[0, 0.5], [1, 1.5]]\n[[member]]\ngame = \"reference\"\n",
            2,
            "point 1: share 1.5 is above 1",
        ),
        (
            "[[member]]\ngame = \"reference\"\n\n[[member]]\ngame = \"teeworlds\"\nname = \"tw\"\npoints = [[0, 2]]\n",
            7,
            "above 1",
        ),
        // ... or more players than the game has slots.
        ("[[member]]\ngame = \"teeworlds\"\nplayers = 17\n", 3, "above the 16 slots"),
        ("[[member]]\ngame = \"nexuiz\"\nbots = 17\n", 3, "at most 16 bots"),
        (
            "[[member]]\ngame = \"openarena\"\nplayers = 12\nbots = 8\n",
            3,
            "at most 16 players and bots",
        ),
        // A window longer than the step.
        ("window_s = 60\nstep_s = 30\n[[member]]\ngame = \"reference\"\n", 1, "longer than the step (30 s, step_s)"),
        (
            "window_s = 100\ncurve = \"evening\"\n[[member]]\ngame = \"reference\"\n",
            1,
            "longer than the step (90 s, the curves' own length",
        ),
        ("window_s = 0.5\n[[member]]\ngame = \"reference\"\n", 1, "window_s 0.5"),
        ("step_s = 0\n[[member]]\ngame = \"reference\"\n", 1, "step_s 0"),
        // Unknown keys, at the tile's level and a member's.
        ("windows = 5\n[[member]]\ngame = \"reference\"\n", 1, "unknown field `windows`"),
        ("[[member]]\ngame = \"reference\"\nplayer = 3\n", 3, "unknown field `player`"),
        ("[[member]]\ngame = \"reference\"\n[member.rounds]\nround = 3\n", 4, "unknown field `round`"),
        // Counts of 0, and other numbers out of range.
        ("[[member]]\ngame = \"reference\"\ncount = 0\n", 3, "count 0: expected 1..=64"),
        ("[[member]]\ngame = \"reference\"\ncount = -2\n", 3, "count -2"),
        ("[[member]]\ngame = \"reference\"\n[member.rounds]\nmap_every = 0\n", 4, "map_every must be 1..="),
        ("[[member]]\ngame = \"reference\"\n[member.churn]\nshape = 0\n", 4, "shape 0"),
        ("[[member]]\ngame = \"reference\"\n[member.churn]\nscale_s = -1\n", 4, "scale_s -1"),
        ("[[member]]\ngame = \"reference\"\npeak_to_mean = 4\n", 3, "peak_to_mean 4"),
        ("[[member]]\ngame = \"reference\"\ntick_hz = 5000\n", 3, "tick_hz: reference takes 1..=1000 Hz"),
        ("[[member]]\ngame = \"teeworlds\"\ntick_hz = 60\n", 3, "tick_hz: teeworlds runs at a fixed 50 Hz"),
        ("[[member]]\ngame = \"reference\"\n[member.qos]\np99_ms = 0\n", 4, "p99_ms 0"),
        ("[[member]]\ngame = \"reference\"\n[member.qos]\nrelative = 0.5\n", 4, "relative 0.5"),
        ("[[member]]\ngame = \"reference\"\n[member.qos]\njoin_ms = -1\n", 4, "join_ms -1"),
        ("[[member]]\ngame = \"reference\"\n[member.set]\nmap = \"x\"\n", 4, "not a variable of reference"),
        ("[[member]]\ngame = \"openarena\"\n[member.set]\nmap = \"a;b\"\n", 4, "one word"),
        // A curve keys' clash.
        ("curve = \"steady\"\npeak_to_mean = 2\n[[member]]\ngame = \"reference\"\n", 2, "peak_to_mean is for curve = \"evening\""),
        ("curve = \"points\"\n[[member]]\ngame = \"reference\"\n", 1, "needs points"),
        ("points = [[0.5, 0.5], [0.2, 0.5]]\n[[member]]\ngame = \"reference\"\n", 1, "point 1: its time 0.2 comes before"),
        // What loads a member, and what it cannot follow.
        ("[[member]]\ngame = \"nexuiz\"\nbots = 0\n", 2, "nothing would load its servers"),
        ("[[member]]\ngame = \"nexuiz\"\nplayers = 4\n", 3, "tickpack has no players for nexuiz"),
        ("[[member]]\ngame = \"nexuiz\"\ncurve = \"evening\"\n", 3, "a curve needs emulated players"),
        ("[[member]]\ngame = \"nexuiz\"\n[member.churn]\n", 3, "churn: bots and a load command stay"),
        ("[[member]]\ngame = \"reference\"\nidle = true\nplayers = 3\n", 4, "an idle member has no players"),
        ("[[member]]\ngame = \"reference\"\nidle = true\n[member.rounds]\n", 4, "idle member plays no rounds"),
        (
            "[[member]]\ngame = \"reference\"\nplayers = 2\n[member.load]\ncommand = \"x {ip}\"\n",
            3,
            "a load command plays its own players",
        ),
        ("[[member]]\ngame = \"reference\"\n[member.load]\ncommand = \"x {nope}\"\n", 4, "{nope}"),
        // Names.
        ("[[member]]\ngame = \"reference\"\n[[member]]\ngame = \"reference\"\n", 4, "two members are called \"reference\""),
        ("[[member]]\ngame = \"reference\"\nname = \"A b\"\n", 3, "name \"A b\""),
        // The file as a whole.
        ("seed = 3\n", 1, "1..=8 members"),
        ("[[member]]\ngame = \"reference\"\ncount = 64\n[[member]]\ngame = \"teeworlds\"\ncount = 62\n", 1, "126 servers in one tile"),
        ("seed = \"x\"\n[[member]]\ngame = \"reference\"\n", 1, "invalid type"),
        ("description = \"\"\n[[member]]\ngame = \"reference\"\n", 1, "description"),
    ];
    for (text, line, words) in cases {
        let e = parse(text).map(|_| ()).unwrap_err();
        assert!(
            e.line == *line && e.message.contains(words),
            "{text:?}\nwanted line {line} with {words:?}, got: {e}"
        );
        assert!(
            e.to_string().starts_with(&format!("t.toml:{line}: ")),
            "{e}"
        );
    }
}
