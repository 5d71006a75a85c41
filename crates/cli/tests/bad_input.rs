//! Bad input, end to end with the real binary: every rejected flag or
//! config value is one clear line on stderr and exit code 2, before any
//! work, and nothing is created (no files, no run dir, no namespace).
//!
//! Each command runs in an empty directory with `TMPDIR` inside it, so
//! anything it wrote (results, run dirs, temp dirs) is seen afterwards.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::bench::tco_of_ten_machines;
use support::{exe, tickpack, Leftovers};

/// An empty working directory (with an empty `tmp/` for TMPDIR).
fn workdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tp-bad-input-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("tmp")).unwrap();
    d
}

/// Everything under `dir`, relative, but the empty `tmp/` itself.
fn contents(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                stack.push(p.clone());
                if rel == "tmp" {
                    continue;
                }
            }
            out.push(rel);
        }
    }
    out
}

/// Network namespaces, links, tables and cgroups whose name starts with
/// `prefix`.
fn host_objects(prefix: &str) -> Vec<String> {
    Leftovers::of(prefix).scan()
}

/// Runs `cmd` (built for `dir`) and checks the rejection: exit code 2
/// within 20 s, one error line that contains every needle, nothing on
/// stdout, nothing created in `dir`.
fn expect_rejected(mut cmd: Command, dir: &Path, needles: &[&str]) {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .current_dir(dir)
        .env("TMPDIR", dir.join("tmp"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            // SIGTERM first: a command that started its work cleans up on it.
            // SAFETY: kill(2) on the PID of the child this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let stopped = Instant::now() + Duration::from_secs(15);
            while child.try_wait().unwrap().is_none() && Instant::now() < stopped {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!("{shown}: still running after 20 s: the input was not checked before the work");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{shown}: {stderr}{stdout}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let errors: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("error:") || l.starts_with("tickpack:"))
        .collect();
    assert_eq!(errors.len(), 1, "{shown}: one error line: {stderr}");
    // clap adds its usage, the possible values and "For more information"
    // lines; nothing else.
    for l in &lines {
        assert!(
            l.starts_with("error:")
                || l.starts_with("tickpack:")
                || l.starts_with("Usage:")
                || l.trim_start().starts_with("[possible values:")
                || l.starts_with("For more information"),
            "{shown}: unexpected output before the error: {stderr}"
        );
    }
    for n in needles {
        assert!(
            errors[0].contains(n),
            "{shown}: {n:?} not in {:?}",
            errors[0]
        );
    }
    assert!(stdout.trim().is_empty(), "{shown}: printed {stdout}");
    assert!(
        contents(dir).is_empty(),
        "{shown}: created {:?}",
        contents(dir)
    );
}

/// Runs `tickpack ARGS` in a fresh work dir `name` and checks the
/// rejection ([`expect_rejected`]).
fn rejected(name: &str, args: &[&str], needles: &[&str]) {
    let dir = workdir(name);
    expect_rejected(tickpack(args), &dir, needles);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `bench --quick --out out MORE`: a short bench that would write `out/`.
fn quick_bench<'a>(more: &[&'a str]) -> Vec<&'a str> {
    [&["bench", "--quick", "--out", "out"][..], more].concat()
}

/// `host up --name gbad --run-dir run MORE`: a host of the batch and
/// guard checks, its run dir in the work dir.
fn gbad_host_up<'a>(more: &[&'a str]) -> Vec<&'a str> {
    [
        &["host", "up", "--name", "gbad", "--run-dir", "run"][..],
        more,
    ]
    .concat()
}

/// Commands whose refusal is all there is to check: each with the words its
/// one error line must hold, under the name of the test that checked it
/// first (a regression test's name says the bug).
#[test]
fn bad_values_are_one_error_line_before_any_work() {
    let tco = tco_of_ten_machines("-5", "300", "2");
    let refused: &[(&[&str], &[&str])] = &[
        // bench_tick_rate_out_of_range_is_rejected_not_clamped
        (
            &quick_bench(&["--tick-hz", "0"]),
            &["--tick-hz", "1..=1000"],
        ),
        (
            &quick_bench(&["--tick-hz", "100000"]),
            &["--tick-hz", "1..=1000"],
        ),
        // bench_cost_flags_without_the_rest_exit_2_naming_the_missing_ones,
        // after bench_used_hidden_cost_defaults: --before-watts alone was
        // costed against 6 servers, 1000 machines and 0.16 per kWh nobody
        // gave.
        (
            &quick_bench(&["--before-watts", "300"]),
            &[
                "--before-watts given",
                "--before-servers",
                "--machines",
                "--currency",
            ],
        ),
        // players_cpus_that_do_not_exist_exit_2_like_server_cpu
        (
            &["players", "--target", "127.0.0.1:9", "--cpus", "99"],
            &["--cpus", "CPU 99"],
        ),
        (
            &["server", "--bind", "127.0.0.1:0", "--cpu", "99"],
            &["--cpu", "CPU 99"],
        ),
        (
            &["ping", "--target", "127.0.0.1:9", "--cpu", "99"],
            &["--cpu", "CPU 99"],
        ),
        // players_zero_connect_timeout_is_rejected_not_unreachable
        (
            &[
                "players",
                "--target",
                "127.0.0.1:9",
                "--connect-timeout",
                "0s",
            ],
            &["--connect-timeout", "more than 0"],
        ),
        // server_duration_beyond_the_clock_is_rejected_not_wrapped:
        // 18446744074 s is just over 2^64 ns: it wrapped to 0.3 s.
        (
            &[
                "server",
                "--bind",
                "127.0.0.1:0",
                "--duration",
                "18446744074s",
            ],
            &["--duration", "365 days"],
        ),
        // absurd_warmups_and_zero_ping_limits_are_rejected
        (
            &["players", "--target", "127.0.0.1:9", "--warmup", "100000h"],
            &["--warmup"],
        ),
        (
            &["ping", "--target", "127.0.0.1:9", "--timeout", "0s"],
            &["--timeout", "more than 0"],
        ),
        (
            &["ping", "--target", "127.0.0.1:9", "--max-time", "0s"],
            &["--max-time", "more than 0"],
        ),
        // tco_negative_numbers_name_the_flag
        (&tco, &["--before-watts", "-5"]),
        // targets_with_port_0_are_rejected_not_unreachable
        (
            &["players", "--target", "127.0.0.1:0"],
            &["--target", "port 0"],
        ),
        (
            &["ping", "--target", "127.0.0.1:0"],
            &["--target", "port 0"],
        ),
        // bench_and_players_bad_game_settings_are_one_line_before_any_work
        (&quick_bench(&["--game", "quake9"]), &["quake9", "--game"]),
        (
            &["players", "--game", "quake9", "--target", "127.0.0.1:27960"],
            &["quake9"],
        ),
        // A game tickpack cannot play, given to the players.
        (
            &["players", "--game", "nexuiz", "--target", "127.0.0.1:26000"],
            &["--game nexuiz", "no players for this game"],
        ),
        // Every --game flag takes a name or a file, and refuses a bad one
        // alike.
        (&["host", "up", "--game", "quake9"], &["quake9", "--game"]),
        (
            &["probe", "--game", "quake9", "--target", "127.0.0.1:26000"],
            &["quake9", "--game"],
        ),
        (
            &["agones-sidecar", "--game", "quake9"],
            &["quake9", "--game"],
        ),
        (
            &["host", "up", "--game", "nexuiz", "--set", "map=a;quit"],
            &["map", "one word"],
        ),
        (
            &quick_bench(&["--map", "oa_dm2"]),
            &["--map is gone", "--set map=NAME"],
        ),
        // The definition's slots: 12 players and 14 bots do not fit 24.
        (
            &quick_bench(&["--game", "openarena", "--bots", "14"]),
            &["at most 24"],
        ),
        (
            &quick_bench(&["--game", "openarena", "--game-arg", "novalue"]),
            &["--game-arg is gone", "--set NAME=VALUE"],
        ),
        (
            &quick_bench(&["--game", "nexuiz", "--cost", "light"]),
            &["--cost", "no", "cost"],
        ),
        // host_up_guard_without_batch_or_with_the_process_backend_exits_2
        (&gbad_host_up(&["--guard"]), &["needs --batch"]),
        (
            &gbad_host_up(&["--backend", "process", "--guard", "--batch", "sh -c true"]),
            &["--guard needs the netns backend"],
        ),
        // bench_batch_command_not_found_or_compare_guard_without_batch_exits_2
        (
            &quick_bench(&[
                "--name",
                "gbad",
                "--compare",
                "guard",
                "--batch",
                "tickpack-no-such-batch-program",
            ]),
            &["--batch", "not found"],
        ),
        (
            &quick_bench(&["--name", "gbad", "--compare", "guard"]),
            &["--compare guard needs --batch"],
        ),
        // reserved_cpus_huge_range_is_refused_quickly, after
        // `--reserved-cpus 0-99999999` expanded the range and grew to 4.7 GB
        // before failing, and a wider one aborted allocating 32 GB.
        (
            &[
                "host",
                "up",
                "--name",
                "v5",
                "--reserved-cpus",
                "0-99999999",
            ],
            &["reserved CPU", "out of range"],
        ),
        (
            &[
                "host",
                "up",
                "--name",
                "v5",
                "--reserved-cpus",
                "0-18446744073709551615",
            ],
            &["reserved CPU", "out of range"],
        ),
        // host_up_public_range_is_refused_without_allow_public_range, after
        // `--range 8.8.8.0/24` was accepted and routed to the instances,
        // hiding those real hosts from the machine.
        (
            &["host", "up", "--name", "v5", "--range", "8.8.8.0/24"],
            &["8.8.8.0/24", "not a private", "--allow-public-range"],
        ),
        // absurd_memory_size_is_refused, after
        // `memory = "99999999999999999999999GiB"` was accepted.
        (
            &[
                "host",
                "up",
                "--name",
                "v5",
                "--memory",
                "99999999999999999999999GiB",
            ],
            &["memory size", "maximum"],
        ),
        // host_status_and_down_refuse_a_name_that_is_a_path, after
        // `host status --name ../../x` connected to any socket there and
        // echoed its answer.
        (
            &["host", "status", "--name", "../../x"],
            &["--name", "a-z and 0-9"],
        ),
        (
            &["host", "down", "--name", "../../x"],
            &["--name", "a-z and 0-9"],
        ),
        (
            &["host", "change-map", "--name", "../../x", "--instance", "1"],
            &["--name", "a-z and 0-9"],
        ),
    ];
    for (i, (args, needles)) in refused.iter().enumerate() {
        rejected(&format!("refused-{i}"), args, needles);
    }
    // bench_and_players_bad_game_settings_are_one_line_before_any_work,
    // where the OpenArena server is installed: a map it does not have.
    if Path::new("/usr/games/openarena-server").exists() {
        rejected(
            "game",
            &quick_bench(&["--game", "openarena", "--set", "map=nosuchmap"]),
            &["nosuchmap", "oa_dm1"],
        );
    }
}

#[test]
fn bench_qos_limits_that_are_negative_zero_or_nan_are_rejected() {
    for (flag, value) in [
        ("--qos-p99-ms", "-5"),
        ("--qos-p99-ms", "0"),
        ("--qos-tick-lateness-ms", "inf"),
        ("--qos-loss-percent", "-1"),
        ("--qos-loss-percent", "101"),
        ("--qos-relative", "0"),
        ("--qos-frame-budget", "NaN"),
        ("--qos-frame-budget", "0"),
    ] {
        rejected("qos", &quick_bench(&[flag, value]), &[flag]);
    }
}

#[test]
fn bench_cost_inputs_are_checked_before_the_ladder() {
    for (flag, value) in [
        ("--before-servers", "0"),
        ("--machines", "0"),
        ("--price-per-kwh", "-1"),
        ("--currency-rate", "NaN"),
        ("--before-watts", "0"),
    ] {
        rejected("cost", &quick_bench(&[flag, value]), &[flag]);
    }
}

#[test]
fn bench_load_cpus_that_do_not_exist_exit_2_and_leave_nothing() {
    let before = host_objects("tpbn");
    rejected(
        "loadcpus",
        &quick_bench(&["--load-cpus", "99"]),
        &["--load-cpus", "CPU 99"],
    );
    assert_eq!(host_objects("tpbn"), before, "no bench namespace or link");
}

#[test]
fn host_up_reserved_cpus_that_do_not_exist_exit_2() {
    assert!(
        !Path::new("/run/tickpack/v1").exists(),
        "/run/tickpack/v1 exists before the test: remove it"
    );
    rejected(
        "reserved",
        &["host", "up", "--name", "v1", "--reserved-cpus", "99"],
        &["--reserved-cpus", "CPU 99"],
    );
    assert!(
        host_objects("tpv1").is_empty(),
        "{:?}",
        host_objects("tpv1")
    );
    assert!(!Path::new("/run/tickpack/v1").exists(), "no run dir");
}

#[test]
fn host_up_run_dir_that_is_a_file_exits_2() {
    let dir = workdir("rundirfile");
    let file = std::env::temp_dir().join(format!("tp-bad-input-file-{}", std::process::id()));
    std::fs::write(&file, "not a directory").unwrap();
    let mut cmd = tickpack(&["host", "up", "--name", "v2", "--backend", "process"]);
    cmd.arg("--run-dir").arg(&file);
    expect_rejected(cmd, &dir, &["--run-dir", "not a directory"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
    std::fs::remove_file(&file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn host_up_negative_cpu_quota_override_in_toml_exits_2() {
    let dir = workdir("quota");
    let conf = std::env::temp_dir().join(format!("tp-bad-input-quota-{}.toml", std::process::id()));
    std::fs::write(
        &conf,
        "name = \"v3\"\ninstances = 2\n[[instance]]\nid = 2\ncpu_quota = -2\n",
    )
    .unwrap();
    let mut cmd = tickpack(&["host", "up", "--config"]);
    cmd.arg(&conf).arg("--run-dir").arg(dir.join("run"));
    expect_rejected(cmd, &dir, &["cpu_quota", "-2"]);
    assert!(
        host_objects("tpv3").is_empty(),
        "{:?}",
        host_objects("tpv3")
    );
    std::fs::remove_file(&conf).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn negative_durations_say_they_must_be_positive() {
    for args in [
        &["server", "--bind", "127.0.0.1:0", "--duration", "-5s"][..],
        &["players", "--target", "127.0.0.1:9", "--duration", "-5s"],
        &["ping", "--target", "127.0.0.1:9", "--timeout", "-1s"],
        &["bench", "--quick", "--out", "out", "--step-duration", "-2s"],
        &["demo", "--duration", "-5s"],
    ] {
        rejected("negative", args, &["-", "positive"]);
    }
    rejected(
        "negwarmup",
        &["players", "--target", "127.0.0.1:9", "--warmup", "-1s"],
        &["--warmup", "negative"],
    );
}

#[test]
fn too_many_players_for_the_open_file_limit_is_rejected_before_any_socket() {
    let dir = workdir("nofile");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -n 1024 && exec \"$0\" players --target 127.0.0.1:9 --players 5000")
        .arg(exe());
    expect_rejected(cmd, &dir, &["--players 5000", "open files", "ulimit -n"]);
    // The bench's last step holds max-steps x tile-servers x players sockets.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -n 1024 && exec \"$0\" bench --out out --max-steps 30 --tile-servers 10 --players-per-server 12")
        .arg(exe());
    expect_rejected(cmd, &dir, &["3600 players", "open files", "ulimit -n"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_files_in_a_missing_directory_are_rejected_before_measuring() {
    // `latency` writes either of its two outputs there.
    let latency = |output: [&'static str; 2]| {
        [&["latency", "--quick", "--paths", "native"][..], &output].concat()
    };
    for args in [
        vec![
            "players",
            "--target",
            "127.0.0.1:9",
            "--connect-timeout",
            "1s",
            "--duration",
            "1s",
            "--json",
            "missing/r.json",
        ],
        latency(["--json", "missing/r.json"]),
        latency(["--html", "missing/r.html"]),
        vec![
            "ping",
            "--target",
            "127.0.0.1:9",
            "--max-time",
            "2s",
            "--json",
            "missing/r.json",
        ],
        vec!["demo", "--duration", "1s", "--json", "missing/r.json"],
        vec!["report", "--out", "missing/r.html", "result.json"],
        vec![
            "report",
            "merge",
            "a.json",
            "b.json",
            "--out",
            "missing/all.json",
        ],
    ] {
        rejected("outdir", &args, &["missing", "does not exist"]);
    }
}

#[test]
fn demo_bad_values_are_rejected_before_the_server_starts() {
    for (flag, value) in [
        ("--players", "0"),
        ("--players", "1000"),
        ("--tick-hz", "0"),
        ("--bots", "200"),
    ] {
        rejected("demo", &["demo", "--duration", "1s", flag, value], &[flag]);
    }
}

#[test]
fn negative_numbers_name_their_flag() {
    for (args, flag) in [
        (
            &["players", "--target", "127.0.0.1:9", "--ping-rate", "-1"][..],
            "--ping-rate",
        ),
        (
            &["players", "--target", "127.0.0.1:9", "--cmd-size", "-5"],
            "command size",
        ),
        (
            &["bench", "--out", "out", "--tile-servers", "-1"],
            "--tile-servers",
        ),
        (
            &["host", "up", "--name", "v4", "--memory", "-5MiB"],
            "memory size",
        ),
        (
            &["host", "up", "--name", "v4", "--cpu-quota", "-2"],
            "cpu_quota",
        ),
    ] {
        rejected("negnumber", args, &[flag, "-"]);
    }
}

/// Regression: `bench --out` under a file printed the bench's banner, then
/// failed making the directory; the error must come first and alone.
#[test]
fn bench_out_that_cannot_be_created_is_one_line_before_the_banner() {
    let dir = workdir("benchout");
    std::fs::write(dir.join("afile"), "x").unwrap();
    let out = tickpack(&["bench", "--quick", "--out", "afile/results"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].contains("--out"), "{stderr}");
    assert!(
        !stderr.contains("tiles of"),
        "no banner before the error: {stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn host_up_batch_command_empty_or_not_found_exits_2_and_creates_nothing() {
    for (cmd, needles) in [
        ("", &["--batch", "empty"][..]),
        ("   ", &["--batch", "empty"][..]),
        (
            "tickpack-no-such-batch-program --cpu 1",
            &["--batch", "tickpack-no-such-batch-program", "not found"][..],
        ),
    ] {
        rejected(
            "batch",
            &gbad_host_up(&["--batch", cmd, "--guard"]),
            needles,
        );
        assert!(
            host_objects("tpgbad").is_empty(),
            "{:?}",
            host_objects("tpgbad")
        );
    }
}

/// Regression: `--config /dev/zero`, `report /dev/zero` and `players
/// --targets-file /dev/zero` read until 4 GB.
#[test]
fn files_that_are_not_regular_are_refused_unread() {
    for args in [
        &["host", "up", "--config", "/dev/zero"][..],
        &["report", "/dev/zero"],
        &["players", "--targets-file", "/dev/zero"],
    ] {
        rejected("devzero", args, &["/dev/zero", "not a regular file"]);
    }
}

/// Regression: `--config /etc/shadow` printed the file's first line in its
/// error. A file that is not TOML is named with a line number only.
#[test]
fn config_error_does_not_quote_a_file_that_is_not_toml() {
    let dir = workdir("secret");
    let secret = std::env::temp_dir().join(format!("tp-bad-input-shadow-{}", std::process::id()));
    std::fs::write(&secret, "root:$6$s3cr3thash:19000:0:99999:7:::\n").unwrap();
    let mut cmd = tickpack(&["host", "up", "--config"]);
    cmd.arg(&secret);
    expect_rejected(cmd, &dir, &["line 1", "not a host file"]);
    let out = tickpack(&["host", "up", "--config"])
        .arg(&secret)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("s3cr3thash"), "{stderr}");
    std::fs::remove_file(&secret).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression: nested, 5,000-character, NUL-holding or duplicate
/// `[[file]]` paths failed only after the start (exit 1), or the last
/// duplicate silently won.
#[test]
fn file_paths_that_cannot_be_written_are_refused_before_start() {
    let long = "x".repeat(5000);
    for (n, paths) in [
        vec!["cfg", "cfg/server.cfg"],
        vec!["a.cfg", "a.cfg"],
        vec![long.as_str()],
        vec!["a\\u0000b"],
    ]
    .iter()
    .enumerate()
    {
        let dir = workdir("filepaths");
        let conf = std::env::temp_dir().join(format!(
            "tp-bad-input-files-{n}-{}.toml",
            std::process::id()
        ));
        let mut text = String::from("name = \"v6\"\ncommand = \"/bin/true\"\n");
        for p in paths {
            text.push_str(&format!("[[file]]\npath = \"{p}\"\ncontents = \"x\"\n"));
        }
        std::fs::write(&conf, text).unwrap();
        let mut cmd = tickpack(&["host", "up", "--config"]);
        cmd.arg(&conf).arg("--run-dir").arg(dir.join("run"));
        expect_rejected(cmd, &dir, &["[[file]]"]);
        std::fs::remove_file(&conf).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Regression: `--run-dir /etc` chmodded /etc 0700 and left `instances/`
/// and `logs/` there; `host down --run-dir DIR` on a directory tickpack did
/// not make deleted its `state.json` and `control.sock` and said "nothing
/// was left over". (A stand-in for /etc: a directory holding files of
/// someone else's, mode 0755.)
#[test]
fn run_dir_pointed_at_etc_is_refused_and_left_untouched() {
    use std::os::unix::fs::PermissionsExt;
    let dir = workdir("etc");
    let etc = std::env::temp_dir().join(format!("tp-bad-input-fake-etc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&etc);
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).unwrap();
    for f in ["passwd", "state.json", "control.sock"] {
        std::fs::write(etc.join(f), "someone else's").unwrap();
    }
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(&etc)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = listing();
    for sub in ["up", "status", "change-map", "down"] {
        let mut cmd = tickpack(&["host", sub, "--name", "v7"]);
        if sub == "up" {
            cmd.args(["--backend", "process", "--port", "27650"]);
        }
        if sub == "change-map" {
            cmd.args(["--instance", "1"]);
        }
        cmd.arg("--run-dir").arg(&etc);
        expect_rejected(cmd, &dir, &["--run-dir", "not a tickpack run dir"]);
        assert_eq!(listing(), before, "host {sub} changed nothing there");
        let mode = std::fs::metadata(&etc).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "host {sub} left its mode alone");
    }
    std::fs::remove_dir_all(&etc).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tile file that cannot run is refused with its line and exit 2 before
/// any work: an unknown game, a curve above 100 % of the slots, a window
/// longer than the step; and `--compare load` needs a tile.
#[test]
fn a_bad_tile_file_is_refused_with_its_line_before_any_work() {
    let files = std::env::temp_dir().join(format!("tp-bad-tiles-{}", std::process::id()));
    std::fs::create_dir_all(&files).unwrap();
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            "unknown-game",
            "window_s = 5\n\n[[member]]\ngame = \"nosuchgame\"\nplayers = 4\n",
            &[":4:", "nosuchgame"],
        ),
        (
            "above-slots",
            "window_s = 5\ncurve = \"points\"\npoints = [[0.0, 0.5], [1.0, 1.5]]\n\n[[member]]\ngame = \"reference\"\nplayers = 4\n",
            &[":3:", "above 1"],
        ),
        (
            "long-window",
            "window_s = 60\nstep_s = 30\n\n[[member]]\ngame = \"reference\"\nplayers = 4\n",
            &[":1:", "window"],
        ),
    ];
    for (name, text, needles) in cases {
        let path = files.join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let path = path.display().to_string();
        rejected(
            &format!("tile-{name}"),
            &["bench", "--tile", &path, "--out", "out"],
            &[needles, &[path.as_str()][..]].concat(),
        );
    }
    rejected(
        "compare-load-without-tile",
        &quick_bench(&["--compare", "load"]),
        &["--compare load needs --tile"],
    );
    std::fs::remove_dir_all(&files).unwrap();
}

/// `--step-duration` and `--tick-hz` beside `--tile` were accepted and
/// ignored (a tile's step is its file's `step_s` or its curves', each
/// member's tick its game's): the run took 90 s steps when 45 were asked.
#[test]
fn a_step_duration_beside_a_tile_was_silently_ignored() {
    for flag in [["--step-duration", "45s"], ["--tick-hz", "60"]] {
        rejected(
            &format!("tile-{}", flag[0]),
            &[
                "bench",
                "--tile",
                "tiles/evening.toml",
                flag[0],
                flag[1],
                "--out",
                "out",
            ],
            &["cannot be used with", flag[0]],
        );
    }
}

/// A directory or file removed on drop, also when the test failed.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Issue 38: a FIFO (or another special file) named `*.pk3` in a
/// definition's `pk3_dirs` hung `host up` in `openat` for ever, and so did
/// `--game` naming a FIFO. Both are refused at once, with their path.
#[test]
fn a_fifo_in_pk3_dirs_hung_host_up_in_openat() {
    let dir = Removed(workdir("pk3fifo"));
    let data = std::env::temp_dir().join(format!("tp-bad-input-pk3-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let _data = Removed(data.clone());
    let fifo = data.join("maps.pk3");
    mkfifo(&fifo);
    let def = data.join("fifogame.toml");
    std::fs::write(
        &def,
        format!(
            "name = \"fifogame\"\ndescription = \"a test server\"\ncommand = \"/bin/sleep 600 {{map}}\"\nport = 27500\nslots = 4\n[tick]\nhz = 10\n[variables]\nmap = \"dm1\"\n[data]\npk3_maps = \"map\"\npk3_dirs = [\"{}\"]\n",
            data.display()
        ),
    )
    .unwrap();
    let mut cmd = tickpack(&["host", "up", "--name", "v8", "--run-dir", "run", "--game"]);
    cmd.arg(&def);
    expect_rejected(cmd, &dir.0, &[fifo.to_str().unwrap(), "not a regular file"]);
    let fifo_def = data.join("def.toml");
    mkfifo(&fifo_def);
    let mut cmd = tickpack(&["host", "up", "--name", "v8", "--run-dir", "run", "--game"]);
    cmd.arg(&fifo_def);
    expect_rejected(
        cmd,
        &dir.0,
        &[fifo_def.to_str().unwrap(), "not a regular file"],
    );
}

/// Issue 38: `TICKPACK_HEALTH_KEY` (a name the host itself sets for an
/// instance) in a host file's or a definition's `[env]` was accepted, and
/// the server's environment then held two values, the file's first. Each
/// row is a host file's or a definition's text, the line its refusal names
/// and a word of the refusal.
#[test]
fn the_hosts_own_health_key_in_env_was_accepted() {
    const DEF: &str = "name = \"envgame\"\ndescription = \"a test server\"\ncommand = \"/bin/sleep 600\"\nport = 27500\nslots = 4\n[tick]\nhz = 10\n";
    let def_with = |env: &str| format!("{DEF}[env]\n{env}");
    let refused: &[(&str, String, usize, &str)] = &[
        (
            "host",
            "name = \"v9\"\ncommand = \"/bin/true\"\n[env]\nTICKPACK_HEALTH_KEY = \"00\"\n".into(),
            4,
            "TICKPACK_HEALTH_KEY",
        ),
        (
            "host",
            "name = \"v9\"\ncommand = \"/bin/true\"\n[env]\nA = \"1\"\nLD_PRELOAD = \"/x.so\"\n"
                .into(),
            5,
            "dynamic loader",
        ),
        (
            "def",
            def_with("TICKPACK_HEALTH_KEY = \"00\"\n"),
            9,
            "TICKPACK_HEALTH_KEY",
        ),
        ("def", def_with("HOME = \"/\"\n"), 9, "set by the host"),
    ];
    for (i, (kind, text, line, says)) in refused.iter().enumerate() {
        let dir = Removed(workdir(&format!("env-{i}")));
        let guard = Removed(std::env::temp_dir().join(format!(
            "tp-bad-input-env-{i}-{}-{kind}.toml",
            std::process::id()
        )));
        let file = &guard.0;
        std::fs::write(file, text).unwrap();
        let at = if *kind == "host" {
            format!("{} line {line}:", file.display())
        } else {
            format!("{}:{line}:", file.display())
        };
        let mut cmd = if *kind == "host" {
            tickpack(&["host", "up", "--run-dir", "run", "--config"])
        } else {
            tickpack(&["host", "up", "--name", "v9", "--run-dir", "run", "--game"])
        };
        cmd.arg(file);
        expect_rejected(cmd, &dir.0, &[&at, says]);
    }
}
