//! `tickpack.players/1` documents written before the players' tick rate
//! was typed still read, and write back byte for byte the same
//! (`tests/fixtures/players-*.json`: real `tickpack players --json` runs of
//! 2 s on loopback, one against the reference server at `--tick-hz 60`,
//! one against a port where nothing listened, whose players never learned
//! a rate and wrote `"tick_hz": 0`).

use std::path::Path;

use tickpack_report::PlayersResult;
use tickpack_units::TickRate;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// As `tickpack players --json FILE` writes it (`write_json_atomic`).
fn written(r: &PlayersResult) -> String {
    serde_json::to_string_pretty(r).unwrap() + "\n"
}

fn read(name: &str) -> (String, PlayersResult) {
    let text = fixture(name);
    let r: PlayersResult = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    (text, r)
}

#[test]
fn a_players_result_written_before_tick_rates_were_typed_reads_and_writes_back_the_same() {
    for (name, hz) in [
        ("players-reference-60hz.json", 60),
        ("players-unreachable.json", 0),
    ] {
        let (text, r) = read(name);
        assert_eq!(r.tick_hz, TickRate::new(hz), "{name}");
        assert_eq!(written(&r), text, "{name} did not write back the same");
        let again: serde_json::Value = serde_json::from_str(&written(&r)).unwrap();
        assert_eq!(again["tick_hz"], hz, "{name}");
    }
}

#[test]
fn a_rate_never_learned_is_shown_as_before() {
    let (_, known) = read("players-reference-60hz.json");
    let (_, unknown) = read("players-unreachable.json");
    let page = tickpack_report::html::render_all(
        &[],
        &[("a.json".into(), known), ("b.json".into(), unknown)],
    );
    assert!(page.contains("server tick 60 Hz"), "{page}");
    assert!(page.contains("server tick 0 Hz"), "{page}");
}
