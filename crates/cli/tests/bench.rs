//! `tickpack bench`, `report` and `tco` end to end with the real binary.
//! As root (CI) the ladder runs on the netns backend, otherwise on process.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use support::bench::{
    assert_no_leftovers, one_ladder, run_bench, tco_of_ten_machines, BenchRun, LENIENT,
};
use support::host::{children_running, BenchHosts};
use support::{assert_success, exe, run, serial, text, tickpack};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tp-bench-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("result.json exists"))
        .expect("valid JSON")
}

#[test]
fn quick_ladder_writes_a_result_that_report_renders() {
    let _g = serial();
    let out_dir = tmp("quick");
    let BenchRun {
        out,
        text,
        result: r,
    } = run_bench(
        &mut tickpack(&["bench", "--quick", "--cost", "light"]),
        &out_dir,
    );
    assert_eq!(r["schema"], "tickpack.bench/1");
    assert_eq!(r["complete"], true, "{text}");
    let ladder = &r["ladders"][0];
    let steps = ladder["steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.len() <= 2, "{text}");
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(
            s["servers"],
            (i + 1) as u64,
            "tiles of one server in --quick"
        );
        assert!(s["verdict"] == "pass" || s["verdict"] == "fail");
        assert_eq!(
            s["verdict"] == "pass",
            s["failures"].as_array().unwrap().is_empty(),
            "{s}"
        );
        for p in ["p50", "p90", "p99", "p999", "max", "count"] {
            assert!(s["transaction_latency_us"][p].is_u64(), "{p}");
        }
        assert!(
            s["transaction_latency_us"]["count"].as_u64().unwrap() > 100,
            "transactions measured"
        );
        let h = tickpack_report::decode_histogram(
            s["histograms"]["transaction_latency_us"].as_str().unwrap(),
        )
        .unwrap();
        assert_eq!(
            h.len(),
            s["transaction_latency_us"]["count"].as_u64().unwrap(),
            "histogram kept with the step"
        );
        // A light server's CPU over 2 s can round to zero clock ticks, so
        // assert that it was measured and is a share, not that it is > 0.
        let busy = s["cpu"]["servers_busy_percent"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&busy), "server CPU measured: {busy}");
        let per_cpu = s["cpu"]["per_cpu_percent"].as_array().unwrap();
        assert!(!per_cpu.is_empty(), "per-CPU busy shares measured");
        for c in per_cpu {
            assert!((0.0..=100.0).contains(&c.as_f64().unwrap()), "{c}");
        }
        assert!(s["power"]["watts"].as_f64().unwrap() > 0.0);
        // Foreign load is recorded for each server core, whatever it was
        // (other programs on this machine may well have run).
        let foreign = &s["cpu"]["foreign_percent"];
        let per_core = foreign["per_core"].as_object().expect("per server core");
        let mut server_cores: Vec<String> = r["cores"]["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.to_string())
            .collect();
        server_cores.sort();
        let mut recorded: Vec<String> = per_core.keys().cloned().collect();
        recorded.sort();
        assert_eq!(recorded, server_cores, "{foreign}");
        let worst = foreign["worst"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&worst), "{foreign}");
        assert!(s["cpu"]["servers_own_percent"].is_f64(), "{s}");
    }
    // Exit code agrees with the verdict of the first step.
    let first_failed = steps[0]["verdict"] == "fail";
    assert_eq!(
        out.status.code(),
        Some(if first_failed { 4 } else { 0 }),
        "{text}"
    );
    assert!(text.contains("maximum density"), "terminal summary: {text}");
    // The headline: servers per server core, first, no ratio without a before.
    if !first_failed {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.trim_start().contains("SERVERS PER SERVER CORE"),
            "{stdout}"
        );
        assert!(r["servers_per_core"].as_f64().is_some() || r["recommended_servers"].is_null());
        assert!(r["limit_found"].is_boolean(), "{r}");
    }
    assert!(
        r["consolidation_ratio"].is_null(),
        "no --before-servers, no ratio"
    );
    assert!(r["tco"].is_null());
    assert!(out_dir.join("report.html").exists());

    // `report` rebuilds the page from the file, and compares two side by side.
    let html_path = out_dir.join("again.html");
    let res = out_dir.join("result.json");
    let rep = Command::new(exe())
        .arg("report")
        .arg(&res)
        .arg(&res)
        .arg("--out")
        .arg(&html_path)
        .output()
        .unwrap();
    assert_success(&rep);
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains("<svg") && !html.contains("http://") && !html.contains("https://"),
        "self-contained page with charts"
    );
    // A file that is not what its schema says is refused, the schema named.
    let players = out_dir.join("players.json");
    std::fs::write(&players, r#"{"schema":"tickpack.players/1"}"#).unwrap();
    let bad = Command::new(exe())
        .arg("report")
        .arg(&players)
        .arg("--out")
        .arg(out_dir.join("x.html"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("tickpack.players/1"));
    assert_no_leftovers();
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn an_openarena_ladder_of_two_steps_completes_with_real_servers() {
    if !tickpack_testkit::Q3Server::available("bench --game openarena") {
        return;
    }
    let _g = serial();
    let out_dir = tmp("openarena");
    // Two steps whatever the first verdict (one past a failure).
    let BenchRun {
        text, result: r, ..
    } = run_bench(
        &mut tickpack(&[
            "bench",
            "--game",
            "openarena",
            "--quick",
            "--steps-past-failure",
            "1",
        ]),
        &out_dir,
    );
    assert_eq!(r["complete"], true, "{text}");
    assert_eq!(r["settings"]["game"], "openarena", "{text}");
    let g = &r["settings"]["game_settings"];
    assert_eq!(g["variables"]["map"], "oa_dm1");
    assert_eq!(g["tick_hz"], 20);
    assert!(
        g["packages"]["ioquake3-server"].as_str().is_some(),
        "engine version recorded: {g}"
    );
    let steps = r["ladders"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{text}");
    for (i, s) in steps.iter().enumerate() {
        let servers = (i + 1) as u64;
        assert_eq!(s["servers"], servers);
        assert_eq!(s["players"], 12 * servers, "12 emulated players per server");
        assert_eq!(s["connected"], 12 * servers, "every player connected: {s}");
        // 20 snapshots a second per player were expected and counted.
        let expected = s["snapshots"]["expected"].as_u64().unwrap();
        assert!(expected >= 12 * servers * 20, "{s}");
        assert!(
            s["transaction_latency_us"]["count"].as_u64().unwrap() > 0,
            "{s}"
        );
        // OpenArena reports no tick lateness of its own.
        assert_eq!(s["tick_lateness_us"]["count"], 0);
    }
    assert!(text.contains("n/a"), "tick figures shown as n/a: {text}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("OpenArena"), "the report names the game");
    assert_no_leftovers();
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// Regression: ioquake3 answers 10 connection requests per source address
/// and then one a second, so the bench ran 4 emulated players per
/// OpenArena server (and 8 bots). With 12 per server spread over 3 source
/// addresses on the host side of each path, every player of every step
/// connects within the 2 s warm-up.
#[test]
fn root_an_openarena_bench_connects_twelve_players_on_every_server() {
    if !tickpack_testkit::root_or_skip(
        "root_an_openarena_bench_connects_twelve_players_on_every_server",
    ) {
        return;
    }
    if !tickpack_testkit::Q3Server::available("root openarena 12 players") {
        return;
    }
    let _g = serial();
    // Whatever the bench named `bs` left is taken down, and nothing named
    // `tpbs` may be left.
    let _down = BenchHosts {
        name: "bs",
        check_leftovers: true,
    };
    let out_dir = tmp("openarena12");
    for net in ["veth", "bridge"] {
        let BenchRun {
            text, result: r, ..
        } = run_bench(
            one_ladder("2").args([
                "--game",
                "openarena",
                "--players-per-server",
                "12",
                "--bots",
                "0",
                "--backend",
                "netns",
                "--net",
                net,
                "--name",
                "bs",
                "--range",
                "198.19.96.0/24",
                "--steps-past-failure",
                "2",
                "--no-confirm",
                "--step-duration",
                "2s",
                "--max-steal",
                "100",
                "--max-foreign",
                "100",
            ]),
            &out_dir,
        );
        assert_eq!(r["complete"], true, "{net}: {text}");
        let steps = r["ladders"][0]["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2, "{net}: {text}");
        for (i, s) in steps.iter().enumerate() {
            let players = 12 * (i as u64 + 1);
            assert_eq!(s["players"], players, "{net}: {s}");
            assert_eq!(
                s["connected"], players,
                "{net}: every player connected: {s}"
            );
            let failures = s["failures"].to_string();
            assert!(!failures.contains("connected"), "{net}: {failures}");
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn an_interrupted_run_keeps_its_finished_steps() {
    let _g = serial();
    let out_dir = tmp("int");
    let child = one_ladder("6")
        .args(["--step-duration", "1s", "--warmup", "200ms"])
        .args(LENIENT)
        .arg("--out")
        .arg(&out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let path = out_dir.join("result.json");
    let t0 = Instant::now();
    loop {
        if path.exists()
            && read(&path)["ladders"][0]["steps"]
                .as_array()
                .is_some_and(|s| !s.is_empty())
        {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no step finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "interrupted runs exit 1");
    let r = read(&path);
    assert_eq!(r["complete"], false);
    let steps = r["ladders"][0]["steps"].as_array().unwrap();
    assert!(
        !steps.is_empty() && steps.len() < 6,
        "finished steps kept: {}",
        steps.len()
    );
    // With these lenient limits the steps pass: the ladder never found its
    // limit and must not claim a maximum density. (Should a step fail on a
    // starved machine, the ladder did find its limit and says so.)
    let stopped = r["ladders"][0]["stopped"].as_str().unwrap();
    match steps.iter().position(|s| s["verdict"] != "pass") {
        None => {
            let passed = match steps.len() {
                1 => "1 server".to_string(),
                n => format!("{n} servers"),
            };
            assert_eq!(
                stopped,
                format!("interrupted before its limit: at least {passed} passed")
            );
            assert!(
                stdout.contains(&format!(
                    "maximum density at least {passed} (interrupted before a step failed)"
                )),
                "{stdout}"
            );
            assert!(!stdout.contains("maximum density 1 servers"), "{stdout}");
        }
        Some(_) => assert!(!stopped.contains("before its limit"), "{stopped}"),
    }
    assert!(steps
        .iter()
        .all(|s| s["transaction_latency_us"]["count"].as_u64().unwrap() > 0));
    assert_no_leftovers();
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn tco_reproduces_the_case_study_table() {
    let out = Command::new(exe())
        .args([
            "tco",
            "--before-watts",
            "350",
            "--after-watts",
            "710",
            "--ratio",
            "18",
            "--machines",
            "1000",
            "--price-per-kwh",
            "0.16",
            "--currency-rate",
            "1.49",
            "--currency",
            "USD",
            "--json",
        ])
        .output()
        .unwrap();
    assert_success(&out);
    let t: Value = serde_json::from_slice(&out.stdout).unwrap();
    // By hand: 1000 x 350 W x 8760 h = 3,066,000 kWh x 0.16 x 1.49 = 730,934.40;
    // ceil(1000/18) = 56 x 710 W x 8760 h = 348,297.6 kWh x 0.16 x 1.49 = 83,034.15.
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 0.01;
    assert!(close(&t["before"]["annual_cost"], 730_934.40), "{t}");
    assert!(close(&t["after"]["annual_cost"], 83_034.15), "{t}");
    assert!(close(&t["savings"]["annual"], 647_900.25), "{t}");
    assert_eq!(t["after"]["machines"], 56);
    assert_eq!(t["currency"], "USD");
    // A ratio below 1 is computed and said to be no consolidation.
    let below = run(&tco_of_ten_machines("350", "710", "0.5"));
    assert_success(&below);
    let table = String::from_utf8_lossy(&below.stdout);
    assert!(table.starts_with("ratio 0.5 is below 1"), "{table}");
    assert!(table.contains("need 20 machines instead of 10"), "{table}");
}

#[test]
fn a_repeated_placement_comparison_keeps_every_repetition_and_reports_the_ratio() {
    let _g = serial();
    let out_dir = tmp("cmp");
    let BenchRun {
        text, result: r, ..
    } = run_bench(
        tickpack(&[
            "bench",
            "--quick",
            "--backend",
            "process",
            "--compare",
            "placement",
            "--repeat",
            "2",
            "--max-steps",
            "1",
            "--step-duration",
            "1s",
            "--warmup",
            "0s",
        ])
        .args(LENIENT),
        &out_dir,
    );
    assert_eq!(r["complete"], true, "{text}");
    let ladders = r["ladders"].as_array().unwrap();
    let seen: Vec<(String, u64)> = ladders
        .iter()
        .map(|l| {
            (
                l["placement"].as_str().unwrap().to_string(),
                l["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("spread".to_string(), 1),
            ("none".to_string(), 1),
            ("spread".to_string(), 2),
            ("none".to_string(), 2)
        ],
        "{text}"
    );
    let c = &r["comparison"];
    assert_eq!(c["kind"], "placement");
    assert_eq!(c["repetitions"], 2);
    assert_eq!(c["variants"].as_array().unwrap().len(), 2);
    let ratio = &c["ratios"][0];
    assert_eq!(ratio["numerator"], ladders[0]["label"]);
    assert_eq!(ratio["denominator"], ladders[1]["label"]);
    assert_eq!(
        ratio["ratio"]["per_repetition"].as_array().unwrap().len(),
        2
    );
    assert!(
        text.contains("comparison (placement): 2 of 2 repetitions finished, steps interleaved"),
        "{text}"
    );
    assert!(text.contains("tickpack's placement (spread)"), "{text}");
    assert!(text.contains(", repetition 2 ("), "{text}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("Variants over 2 repetitions"));
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn compare_game_with_one_game_or_repeat_zero_is_a_bad_flag() {
    for args in [
        &["--compare", "game", "--game", "openarena"][..],
        &["--repeat", "0"][..],
    ] {
        let out = Command::new(exe())
            .arg("bench")
            .args(args)
            .args(["--out", "/nonexistent/never-made"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
    }
}

/// The `tickpack __readers` and `__decoder` children of `bench`
/// (whichever of its threads started them), named by their job
/// (`players`, `probe`, `decoder`), with the privilege of each of their
/// threads.
fn readers_of(bench: u32) -> Vec<(String, Vec<tickpack_sys::unprivileged::Privilege>)> {
    let job = |pid: u32| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let arg = cmdline.split(|&b| b == 0).nth(2).unwrap_or_default();
        String::from_utf8_lossy(arg).into_owned()
    };
    let mut found: Vec<_> = children_running(bench, "__readers")
        .into_iter()
        .map(|(pid, threads)| (job(pid), threads))
        .collect();
    found.extend(
        children_running(bench, "__decoder")
            .into_iter()
            .map(|(_, threads)| ("decoder".to_string(), threads)),
    );
    found
}

/// Least privilege: the players, the prober and the host's decoder of its
/// health checks' answers, which parse every datagram the hosted servers
/// send, run as the host's readers user (the last uid of its block) with
/// no capability, every one of their threads, while the bench beside them
/// stays root (it makes the namespaces).
#[test]
fn root_players_and_prober_parse_the_servers_datagrams_without_root() {
    if !tickpack_testkit::root_or_skip(
        "root_players_and_prober_parse_the_servers_datagrams_without_root",
    ) {
        return;
    }
    let _g = serial();
    let _down = BenchHosts {
        name: "br",
        check_leftovers: true,
    };
    let out_dir = tmp("readers");
    let mut bench = one_ladder("1")
        .args(LENIENT)
        .args([
            "--probe",
            "a2s",
            "--name",
            "br",
            "--range",
            "198.19.97.0/24",
            "--step-duration",
            "3s",
            "--no-confirm",
            "--max-steal",
            "100",
            "--max-foreign",
            "100",
            "--out",
        ])
        .arg(&out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tickpack bench");
    let pid = bench.id();
    let mut seen: Vec<(String, Vec<tickpack_sys::unprivileged::Privilege>)> = vec![];
    let deadline = Instant::now() + Duration::from_secs(240);
    while bench.try_wait().unwrap().is_none() && Instant::now() < deadline {
        seen.extend(readers_of(pid).into_iter().filter(|(_, t)| !t.is_empty()));
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = bench.kill();
    let out = bench.wait_with_output().unwrap();
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    for job in ["players", "probe", "decoder"] {
        assert!(
            seen.iter().any(|(j, _)| j == job),
            "no {job} readers seen: {seen:?}\n{text}"
        );
    }
    let last_of_block = |uid: u32| {
        uid >= tickpack_host::supervisor::BLOCKS_BASE
            && (uid - tickpack_host::supervisor::BLOCKS_BASE)
                % tickpack_host::supervisor::BLOCK_SIZE
                == tickpack_host::supervisor::READERS_UID_OFFSET
    };
    for (job, threads) in &seen {
        for t in threads {
            assert!(t.is_unprivileged(), "a {job} thread: {t:?}");
            let uids = t.uids.expect("uids");
            assert!(uids.iter().all(|&u| last_of_block(u)), "{job}: {t:?}");
        }
    }
    // The players had their threads (a load generator's and the main).
    assert!(
        seen.iter().any(|(j, t)| j == "players" && t.len() >= 2),
        "{seen:?}"
    );
    let r = read(&out_dir.join("result.json"));
    let step = &r["ladders"][0]["steps"][0];
    assert_eq!(step["connected"], step["players"], "{step}");
    assert!(step["queries"]["answered"].as_u64() > Some(0), "{step}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
