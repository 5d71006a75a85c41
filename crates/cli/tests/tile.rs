//! `tickpack bench --tile FILE` end to end, as root: a tile of the
//! reference server (players who come and go), OpenArena (rounds with a
//! map change the host sends the real server) and an idle OpenArena lobby,
//! one step; every member judged in every window, the report's time
//! section, and nothing left behind.

mod support;

use std::process::Command;

use support::bench::run_bench;
use support::{exe, serial, Leftovers};

/// Takes down every member's host of a tile bench named `name`, pass or
/// fail, and checks nothing named `tp<name>...` is left.
struct TileHosts {
    name: &'static str,
    members: usize,
}

impl Drop for TileHosts {
    fn drop(&mut self) {
        let run_dir = std::path::Path::new("/run/tickpack").join(self.name);
        for m in 0..self.members {
            let _ = Command::new(exe())
                .args(["host", "down", "--name", &format!("{}{m:x}", self.name)])
                .arg("--run-dir")
                .arg(run_dir.join(format!("member{m}")))
                .output();
        }
        let left = Leftovers::of(&format!("tp{}", self.name)).scan();
        if !std::thread::panicking() {
            assert!(left.is_empty(), "left over: {left:?}");
        }
    }
}

const TILE: &str = r#"
seed = 3
window_s = 5
step_s = 20
curve = "evening"

[[member]]
game = "reference"
players = 4
[member.churn]

[[member]]
game = "openarena"
players = 4
[member.set]
map = "oa_dm1,oa_dm4"
[member.rounds]
round_s = 30
freeze_s = 5
map_every = 1

[[member]]
name = "lobby"
game = "openarena"
idle = true
"#;

#[test]
fn root_a_tile_judges_every_member_in_every_window_and_changes_maps_mid_step_beside_batch_work() {
    if !tickpack_testkit::root_or_skip(
        "root_a_tile_judges_every_member_in_every_window_and_changes_maps_mid_step_beside_batch_work",
    ) {
        return;
    }
    if !tickpack_testkit::Q3Server::available("root tile") {
        return;
    }
    let _g = serial();
    let _down = TileHosts {
        name: "tn",
        members: 3,
    };
    let dir = std::env::temp_dir().join(format!("tp-tile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("small.toml");
    std::fs::write(&file, TILE).unwrap();
    let out_dir = dir.join("out");
    let run = run_bench(
        Command::new(exe())
            .args(["bench", "--tile"])
            .arg(&file)
            .args([
                "--repeat",
                "1",
                "--max-steps",
                "1",
                "--no-confirm",
                "--name",
                "tn",
                "--range",
                "198.19.192.0/20",
                "--max-steal",
                "100",
                "--max-foreign",
                "100",
                // Batch work in the valleys, under the guard: its CPU is
                // recorded in every window beside the players' curve.
                "--batch",
                "stress-ng --cpu 1 --timeout 60s --quiet",
            ]),
        &out_dir,
    );
    let text = &run.text;
    // Passed or failed QoS (a loaded machine): a finished run either way.
    assert!(matches!(run.out.status.code(), Some(0) | Some(4)), "{text}");
    let r = &run.result;
    assert_eq!(
        r["settings"]["tile"]["members"].as_array().unwrap().len(),
        3
    );
    let step = &r["ladders"][0]["steps"][0];
    let tile = &step["tile"];
    assert_eq!(tile["load"], "phased", "{tile}");
    let members = tile["members"].as_array().unwrap();
    let names: Vec<&str> = members
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["reference", "openarena", "lobby"]);
    for m in members {
        let windows = m["windows"].as_array().unwrap();
        // 20 s in windows of 5 s: every member judged in each.
        assert_eq!(windows.len(), 4, "{m}");
    }
    // The reference server's players came and went: the evening takes
    // its 4 seats from 1 player (25 %) to all 4 at its peak, so at least 3
    // joins fall in the windows (done or failed).
    let joins: u64 = members[0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["joins"].as_u64().unwrap() + w["failed_joins"].as_u64().unwrap())
        .sum();
    assert!(joins >= 3, "{}", members[0]);
    // OpenArena's maps changed in the middle of the step, sent by the host.
    let changes: u64 = members[1]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["map_changes"].as_u64().unwrap_or(0))
        .sum();
    assert!(changes >= 1, "{}", members[1]);
    // The idle lobby was judged on its query and run delay, never played.
    assert!(members[2]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["joins"].as_u64() == Some(0)));
    // The batch work was measured in every window of the step.
    let host = tile["windows"].as_array().unwrap();
    assert_eq!(host.len(), 4, "{tile}");
    for w in host {
        assert!(w["batch_cpu_percent"].as_f64().is_some(), "{w}");
    }
    // The step's verdict is the windows': failed exactly when a window did.
    let failed = tile.get("failure").is_some_and(|f| !f.is_null());
    assert_eq!(step["verdict"] == "fail", failed, "{step}");
    // The terminal gave one line per member; the report draws the step
    // over time.
    for name in ["reference: ", "openarena: ", "lobby: "] {
        assert!(text.contains(name), "{text}");
    }
    let report = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(report.contains("Over time: step 1"), "no time section");
    assert!(report.contains("Players present per member"));
    let _ = std::fs::remove_dir_all(&dir);
}
