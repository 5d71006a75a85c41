//! The report of a tile run (`bench --tile`), read as a user sees it: a
//! real result of tiles/evening.toml on a 2-vCPU machine
//! (`tests/fixtures/result-tile-run.json`, its first step failed).

use std::path::Path;

use tickpack_report::bench::BenchResult;
use tickpack_report::html;

fn tile_run() -> BenchResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/result-tile-run.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The run facts of a tile run described one game (the reference server's
/// settings, 12 players a server, its one-game QoS limits with most "not
/// judged") instead of the tile's members and their own limits.
#[test]
fn a_tile_runs_report_described_one_game_instead_of_its_members() {
    let r = tile_run();
    let p = html::render(&[("result.json".into(), r.clone())]);
    let facts = &p[p.find("<h3>Run</h3>").unwrap()..];
    let facts = &facts[..facts.find("</dl>").unwrap()];
    assert!(!facts.contains("12 players per server"), "{facts}");
    assert!(!facts.contains("not judged"), "{facts}");
    for m in &r.settings.tile.as_ref().unwrap().members {
        assert!(
            facts.contains(&format!("<strong>{}</strong>", m.name)),
            "{facts}"
        );
    }
    assert!(facts.contains("judged in 5 s windows"), "{facts}");
    // The deciding step over time, with its failing window named.
    assert!(p.contains("Over time: step 1"));
    assert!(p.contains("Players present per member"));
    assert!(p.contains("p99 per member per window"));
    assert!(p.contains("the step failed: "));
}

/// A tile step's line said "p99 0.00 ms": the step's own transaction
/// latency is empty (its members measure theirs), so the line read a
/// histogram with no samples.
#[test]
fn a_tile_steps_line_said_p99_0_ms() {
    let r = tile_run();
    let l = &r.ladders[0];
    let line = tickpack_report::text::step_line(l, &l.steps[0], false);
    assert!(!line.contains("p99 0.00 ms"), "{line}");
    let members = r.settings.tile.as_ref().unwrap().members.len();
    assert!(
        line.contains(&format!("{members} members judged per window, below")),
        "{line}"
    );
}

/// The time chart's red dots mark windows, but its legend called them
/// "failed step" (read in headless Chromium on a tile run's report).
#[test]
fn a_tile_charts_red_dots_were_called_failed_steps() {
    let p = html::render(&[("result.json".into(), tile_run())]);
    let time = &p[p.find("<h3 id=\"over-time\">Over time").unwrap()..];
    let time = &time[..time.find("<table").unwrap_or(time.len())];
    assert!(time.contains(">failed window</text>"), "{time}");
    assert!(!time.contains(">failed step</text>"));
}
