//! Any game from its definition file, end to end with the real binary:
//! `games list|show|check`, a bad definition refused before anything is
//! created, Nexuiz (shipped as a file only) climbing a ladder judged on run
//! delay and query latency, and a user's own definition doing the same.
//! As root (CI) the ladders run on the netns backend, otherwise on process.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use support::bench::{assert_no_leftovers, one_ladder, run_bench};
use support::{exe, serial, text};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tp-game-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Removes a test's directory even when the test fails.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A user's definition `mine.toml` in `dir`: tickpack's own server under
/// another name, no players, no query; `extra` is appended.
fn my_definition(dir: &TempDir, extra: &str) -> PathBuf {
    let mine = dir.0.join("mine.toml");
    let text = format!(
        "name = \"mine\"\ndescription = \"my own server\"\n\
         command = \"{{tickpack}} server --bind {{ip}}:{{port}} --tick-hz {{tick_hz}} --bots {{bots}} --cost light\"\n\
         port = 28000\nslots = 8\n{extra}"
    );
    std::fs::write(&mine, text).unwrap();
    mine
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("result.json exists"))
        .expect("valid JSON")
}

#[test]
fn games_list_shows_the_shipped_games_from_their_files() {
    let out = Command::new(exe())
        .args(["games", "list"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for (game, players, file) in [
        ("reference", "reference", "games/reference.toml"),
        ("openarena", "q3", "games/openarena.toml"),
        ("nexuiz", "none", "games/nexuiz.toml"),
    ] {
        let line = t
            .lines()
            .find(|l| l.starts_with(game))
            .unwrap_or_else(|| panic!("{game} listed: {t}"));
        assert!(line.contains(players) && line.contains(file), "{line}");
    }
    let show = Command::new(exe())
        .args(["games", "show", "nexuiz"])
        .output()
        .unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../games/nexuiz.toml"),
    )
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&show.stdout), shipped);
}

#[test]
fn games_check_accepts_every_shipped_file_and_refuses_a_broken_one_with_its_line() {
    let games = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../games");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&games)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 4);
    let out = Command::new(exe())
        .args(["games", "check"])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let dir = TempDir(tmp("check"));
    let bad = dir.0.join("broken.toml");
    let good_text = std::fs::read_to_string(games.join("nexuiz.toml")).unwrap();
    std::fs::write(
        &bad,
        good_text.replace("port = 26000", "port = 26000\nprot = 1"),
    )
    .unwrap();
    let out = Command::new(exe())
        .args(["games", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = good_text.lines().position(|l| l == "port = 26000").unwrap() + 2;
    assert!(
        err.contains(&format!("{}:{line}: unknown field `prot`", bad.display())),
        "{err}"
    );
}

#[test]
fn a_bad_definition_given_to_bench_is_refused_before_anything_is_created() {
    let _g = serial();
    let dir = TempDir(tmp("refused"));
    let bad = dir.0.join("mine.toml");
    std::fs::write(
        &bad,
        "name = \"mine\"\ndescription = \"x\"\ncommand = \"/bin/true --port {prot}\"\nport = 1\nslots = 1\n[tick]\nhz = 10\n",
    )
    .unwrap();
    let out_dir = dir.0.join("out");
    let out = Command::new(exe())
        .args(["bench", "--repeat", "1", "--game"])
        .arg(&bad)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:3: unknown placeholder {{prot}}",
            bad.display()
        )),
        "{err}"
    );
    assert!(!out_dir.exists(), "nothing was created");
    let out = Command::new(exe())
        .args(["bench", "--repeat", "1", "--game", "quake9", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reference, openarena, nexuiz"));
    assert!(!out_dir.exists(), "nothing was created");
}

/// A ladder of two one-server steps of `game` (whatever the first
/// verdict), with `extra` flags: its result and what it printed.
fn two_steps(dir: &TempDir, game: &str, extra: &[&str]) -> (Value, String) {
    bench_in(
        dir,
        one_ladder("2")
            .args(["--game", game, "--steps-past-failure", "1"])
            .args(extra),
    )
}

/// Runs `cmd` (a `tickpack bench`) with `--out` in `dir`: the result it
/// wrote, which must exist, and what it printed.
fn bench_in(dir: &TempDir, cmd: &mut Command) -> (Value, String) {
    let run = run_bench(cmd, &dir.0.join("out"));
    (run.result, run.text)
}

/// Two steps of a game judged without players: every step has its run
/// delay and query latency, and the verdict names only those limits.
fn assert_judged_without_players(r: &Value, text: &str, steps_wanted: usize) {
    assert_eq!(r["complete"], true, "{text}");
    let q = &r["settings"]["qos"];
    assert!(q["p99_run_delay_us"].as_u64().is_some(), "{q}");
    let steps = r["ladders"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), steps_wanted, "{text}");
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["servers"], (i + 1) as u64, "{s}");
        assert_eq!(s["players"], 0, "no players: {s}");
        let rd = &s["run_delay_us"];
        assert!(rd["count"].as_u64().unwrap() > 0, "run delay sampled: {s}");
        for p in ["p50", "p90", "p99", "p999", "max", "mean", "count"] {
            assert!(rd.get(p).is_some(), "{p} in {rd}");
        }
        assert!(!s["histograms"]["run_delay_us"].as_str().unwrap().is_empty());
        for f in s["failures"].as_array().unwrap() {
            let f = f.as_str().unwrap();
            assert!(
                f.contains("run delay") || f.contains("query"),
                "judged only on run delay and query: {f}"
            );
        }
    }
    assert!(text.contains("run delay"), "{text}");
    // The summary says n/a for the transaction latency nobody measured.
    let row = text
        .lines()
        .find(|l| {
            l.split_whitespace().take(3).collect::<Vec<_>>() == ["1", "0", "pass"]
                || l.split_whitespace().take(3).collect::<Vec<_>>() == ["1", "0", "fail"]
        })
        .unwrap_or_else(|| panic!("a summary row for 1 server: {text}"));
    assert_eq!(row.split_whitespace().nth(3), Some("n/a"), "{row}");
}

#[test]
fn a_nexuiz_ladder_is_judged_on_run_delay_and_query_latency() {
    if !Path::new("/usr/games/nexuiz-server").exists() {
        tickpack_testkit::skip_unless_ci(
            "bench --game nexuiz",
            "/usr/games/nexuiz-server is missing (apt-get install nexuiz-server nexuiz-data, or scripts/setup.sh)",
        );
        return;
    }
    let _g = serial();
    let dir = TempDir(tmp("nexuiz"));
    let (r, text) = two_steps(&dir, "nexuiz", &["--step-duration", "3s"]);
    assert_eq!(r["settings"]["game"], "nexuiz", "{text}");
    let g = &r["settings"]["game_settings"];
    assert_eq!(g["bots"], 8, "{g}");
    assert_eq!(g["tick_hz"], 60, "{g}");
    assert!(
        g["packages"]["nexuiz-server"].as_str().is_some(),
        "the engine's version is recorded: {g}"
    );
    assert_judged_without_players(&r, &text, 2);
    for s in r["ladders"][0]["steps"].as_array().unwrap() {
        let q = &s["query_latency_us"];
        assert!(
            q["count"].as_u64().unwrap() > 0,
            "Nexuiz answered getinfo: {s}"
        );
    }
    assert_no_leftovers();
}

/// A definition a user writes from docs/games.md for a server we do not
/// ship as a game: here tickpack's own server under another name, with
/// no players and no query (judged on run delay alone).
#[test]
fn a_users_own_definition_climbs_a_ladder() {
    let _g = serial();
    let dir = TempDir(tmp("mine"));
    let mine = my_definition(
        &dir,
        "[tick]\nhz = 30\nmin_hz = 10\nmax_hz = 100\n[bots]\ndefault = 4\nmax = 8\n",
    );
    let (r, text) = two_steps(
        &dir,
        mine.to_str().unwrap(),
        &["--step-duration", "2s", "--warmup", "1s"],
    );
    assert_eq!(r["settings"]["game"], "mine", "{text}");
    assert_eq!(r["settings"]["game_settings"]["bots"], 4);
    assert_eq!(r["settings"]["game_settings"]["tick_hz"], 30);
    assert!(
        r["settings"].get("probe").is_none_or(Value::is_null),
        "no query to probe"
    );
    assert_judged_without_players(&r, &text, 2);
    assert_no_leftovers();
}

/// Issue 31: a definition with no players, no bots and no load command
/// was benchmarked as idle servers and printed "AT LEAST 4.00 SERVERS PER
/// SERVER CORE". It is refused before anything starts, with what to give
/// and exit 7; `--allow-idle` measures the idle footprint and says so.
#[test]
fn idle_servers_got_a_servers_per_core_figure() {
    let _g = serial();
    let dir = TempDir(tmp("idle"));
    let mine = my_definition(&dir, "[tick]\nhz = 30\n[bots]\nmax = 8\n");
    let out_dir = dir.0.join("out");
    let out = Command::new(exe())
        .args(["bench", "--repeat", "1", "--game"])
        .arg(&mine)
        .args(["--tile-servers", "1", "--max-steps", "2", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(7), "{t}");
    assert!(t.contains("nothing would load its servers"), "{t}");
    assert!(
        t.contains("--bots N, up to 8") && t.contains("[load]"),
        "{t}"
    );
    assert!(t.contains("--allow-idle"), "{t}");
    assert!(!t.to_lowercase().contains("servers per server core"), "{t}");
    assert!(!out_dir.join("result.json").exists(), "nothing ran");
    // On purpose: the footprint, never read as a density.
    let (r, t) = two_steps(
        &dir,
        mine.to_str().unwrap(),
        &["--allow-idle", "--step-duration", "2s", "--warmup", "1s"],
    );
    assert_eq!(r["settings"]["allow_idle"], true, "{t}");
    assert!(
        t.contains("IDLE FOOTPRINT, NOT A DENSITY"),
        "the headline says what it is: {t}"
    );
    assert_no_leftovers();
}

/// Issue 31: a game asked for bots that never came (its program ignores
/// `{bots}` and sleeps) was judged like a loaded one. Its step is `idle`:
/// no density, exit 7.
#[test]
fn servers_that_did_nothing_got_a_verdict_of_pass_or_fail() {
    let _g = serial();
    let dir = TempDir(tmp("sleeper"));
    let def = dir.0.join("sleeper.toml");
    std::fs::write(
        &def,
        "name = \"sleeper\"\ndescription = \"asks for bots, does nothing\"\n\
         command = \"/bin/sh {dir}/run.sh {bots}\"\nport = 28100\nslots = 8\n\
         [tick]\nhz = 30\n[bots]\ndefault = 4\nmax = 8\n\
         [[file]]\npath = \"run.sh\"\ncontents = \"exec sleep 600\\n\"\n",
    )
    .unwrap();
    let out_dir = dir.0.join("out");
    let out = Command::new(exe())
        .args(["bench", "--repeat", "1", "--game"])
        .arg(&def)
        .args([
            "--tile-servers",
            "1",
            "--max-steps",
            "2",
            "--step-duration",
            "2s",
        ])
        .args(["--no-confirm", "--max-foreign", "100", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(7), "{t}");
    assert!(t.contains("NO DENSITY, THE SERVERS WERE IDLE"), "{t}");
    let r = read(&out_dir.join("result.json"));
    let steps = r["ladders"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "the ladder stopped at the idle step: {t}");
    assert_eq!(steps[0]["verdict"], "idle", "{t}");
    assert!(r["recommended_servers"].is_null(), "{t}");
    assert_no_leftovers();
}

/// Issue 41: a game whose bots do nothing until a human client connects
/// (here a server that sleeps, asked for 4 bots) was told to give bots,
/// its first line read "tiles of 1 server x 0 players", and the idle
/// verdict climbed every ladder of the run. The first line names the
/// bots, the verdict names what was asked and did nothing, and the run
/// ends at the idle step: one ladder of one step out of `--repeat 2`.
#[test]
fn an_idle_run_told_the_user_to_give_bots_and_climbed_every_ladder() {
    let _g = serial();
    let dir = TempDir(tmp("idle41"));
    let def = dir.0.join("sleepy.toml");
    std::fs::write(
        &def,
        "name = \"sleepy\"\ndescription = \"its bots play only with a human\"\n\
         command = \"/bin/sh {dir}/run.sh {bots}\"\nport = 28200\nslots = 8\n\
         [tick]\nhz = 20\n[bots]\ndefault = 4\nmax = 8\n\
         [[file]]\npath = \"run.sh\"\ncontents = \"exec sleep 600\\n\"\n",
    )
    .unwrap();
    let out_dir = dir.0.join("out");
    let out = Command::new(exe())
        .args(["bench", "--repeat", "2", "--game"])
        .arg(&def)
        .args([
            "--tile-servers",
            "1",
            "--max-steps",
            "3",
            "--step-duration",
            "2s",
            "--warmup",
            "0.5s",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(7), "{t}");
    let first = String::from_utf8_lossy(&out.stderr)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(first.contains("0 players and 4 bots per server"), "{first}");
    assert!(t.contains("4 bots were asked"), "{t}");
    assert!(t.contains("[load] command that connects one"), "{t}");
    assert!(
        !t.contains("--bots N"),
        "no advice to give what was given: {t}"
    );
    assert!(t.contains("the run ends after repetition 1 of 2"), "{t}");
    let r = read(&out_dir.join("result.json"));
    let ladders = r["ladders"].as_array().unwrap();
    assert_eq!(ladders.len(), 1, "no second repetition: {t}");
    let steps = ladders[0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{t}");
    assert_eq!(steps[0]["verdict"], "idle", "{t}");
    assert!(
        steps[0]["disturbed_attempts"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "no rerun for a disturbance: {t}"
    );
    assert_no_leftovers();
}

/// `--compare game` takes any two games: here the reference server (with
/// players) against a game judged without them, each with its own
/// defaults and its own rules.
#[test]
fn compare_game_takes_any_two_games() {
    let _g = serial();
    let dir = TempDir(tmp("compare"));
    let mine = my_definition(&dir, "[tick]\nhz = 30\n[bots]\ndefault = 4\nmax = 8\n");
    let (r, text) = bench_in(
        &dir,
        Command::new(exe())
            .args([
                "bench",
                "--compare",
                "game",
                "--game",
                "reference",
                "--game",
            ])
            .arg(&mine)
            .args(["--repeat", "1", "--tile-servers", "1", "--max-steps", "1"])
            .args(["--step-duration", "2s", "--cost", "light"]),
    );
    let ladders = r["ladders"].as_array().unwrap();
    assert_eq!(ladders.len(), 2, "{text}");
    let first = &ladders[0]["steps"][0];
    let second = &ladders[1]["steps"][0];
    assert_eq!(
        first["players"], 12,
        "the reference server's players: {first}"
    );
    assert_eq!(second["players"], 0, "mine has no players: {second}");
    assert!(
        second["run_delay_us"]["count"].as_u64().unwrap() > 0,
        "{second}"
    );
    assert_eq!(ladders[1]["game"]["game"], "mine", "{}", ladders[1]["game"]);
}
