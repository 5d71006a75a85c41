//! The report of an idle run as a new user met it (issue 41): a definition
//! whose 4 bots never played (`tests/fixtures/result-idle-run.json`, a real
//! `bench --game ./sleepy.toml --repeat 2`: its server sleeps), and one
//! CPU figure from the step's line to its verdict.

use std::path::Path;

use tickpack_report::bench::{BenchResult, Ladder};
use tickpack_report::qos::{idle_reason, StepLoad};
use tickpack_report::{html, text};

fn idle_run() -> BenchResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/result-idle-run.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn page(r: BenchResult) -> String {
    html::render(&[("result.json".into(), r)])
}

/// The page said "cost profile default" of a game without a `cost`
/// variable, "Densities above: ..., the lower median" with no density,
/// and its title and first heading were the file name `result.json`.
#[test]
fn the_report_of_an_idle_run_said_what_did_not_apply_and_was_titled_result_json() {
    let p = page(idle_run());
    assert!(!p.contains("cost profile"), "the game has no cost variable");
    assert!(!p.contains(", cost "), "nor in the comparison row");
    assert!(!p.contains("Densities above"), "no density to speak of");
    assert!(!p.contains("Variants over"), "no densities' medians of 0");
    let title = &p[p.find("<title>").unwrap()..p.find("</title>").unwrap()];
    assert!(!title.contains("result.json"), "{title}");
    assert!(
        title.contains("sleepy, 2026-11-28 04:41:05 UTC: no density, the servers were idle"),
        "{title}"
    );
    let h2 = &p[p.find("<h2>").unwrap()..p.find("</h2>").unwrap()];
    assert!(h2.contains("sleepy") && !h2.contains("result.json"), "{h2}");
    assert!(
        p.contains("From result.json."),
        "the file is still named, below"
    );
    // What the servers were given, bots named beside players.
    assert!(
        p.contains("0 players and 4 bots per server"),
        "the run's facts"
    );
    assert!(
        p.contains("the servers were idle, so there is no density to recommend"),
        "not a headroom story"
    );
    // A game with a cost variable still shows its profile.
    let mut r = idle_run();
    r.settings.cost = "light".into();
    r.settings
        .game_settings
        .variables
        .insert("cost".into(), "light".into());
    assert!(page(r).contains("cost profile light"));
}

/// The idle run's step as the bench writes it today: the server cores'
/// busy share 0.3 % from clock ticks, the servers' own 0.04 % of a core
/// from schedstat, judged idle on that same figure.
fn one_idle_step() -> (Ladder, BenchResult) {
    let mut r = idle_run();
    r.ladders.truncate(1);
    let l = &mut r.ladders[0];
    let s = &mut l.steps[0];
    s.cpu.servers_busy_percent = 0.3;
    s.cpu.servers_own_percent = Some(0.04);
    s.failures = vec![idle_reason(&StepLoad {
        players: 0,
        servers: s.servers,
        bots_asked: 4,
        load_command: false,
        clients_seen: None,
        servers_own_percent: s.cpu.servers_own_percent,
    })
    .expect("idle")];
    (l.clone(), r)
}

/// The steps table's CPU % read 0.3, the idle verdict 0.01 %, the step
/// line 0 %: three figures of one step. The step's line, both tables and
/// the verdict read the servers' own (schedstat) figure, 0.04 % of a
/// core; the cores' busy share stands beside it, named as such.
#[test]
fn the_steps_table_the_step_line_and_the_idle_verdict_read_three_cpu_figures() {
    let (l, r) = one_idle_step();
    let line = text::step_line(&l, &l.steps[0], false);
    assert!(line.contains("servers' CPU 0.04% of a core"), "{line}");
    assert!(line.contains("the servers used 0.04% of a core"), "{line}");
    let table = text::steps_table(&l);
    let row = table.lines().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[7], "0.04", "srv CPU%: {table}");
    assert_eq!(cells[8], "0.3", "busy %: {table}");
    let p = page(r);
    assert!(
        p.contains("<td class=\"num\">0.04 (busy 0.3)</td>"),
        "the HTML row"
    );
}
