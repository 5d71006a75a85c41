//! The bench's side of the readers' pipe against children that misbehave
//! (shell scripts standing in for a `tickpack __readers` that a hostile
//! server's datagrams took over), and the messages' round trips.

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::*;

/// A script that ignores its arguments and runs `body` (`sh`), made
/// executable in a directory of its own; removed with the directory.
struct Script {
    dir: PathBuf,
    path: PathBuf,
}

impl Script {
    fn new(name: &str, body: &str) -> Script {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tp-readers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // The child runs as another user when the test runs as root.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.join("readers");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Script { dir, path }
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const NOBODY: User = User {
    uid: 65_534,
    gid: 65_534,
};

fn probe_job() -> Job {
    Job::Probe(ProbeConfig {
        targets: vec!["127.0.0.1:9".parse().unwrap()],
        protocol: "gamedig:quake3".parse().unwrap(),
        interval: Duration::from_millis(500),
        timeout: Duration::from_millis(400),
        duration: Duration::from_secs(1),
        start_delay: Duration::ZERO,
        cpus: vec![],
    })
}

/// Started and run to its end against a script: the error it gave.
fn error_of(name: &str, body: &str) -> String {
    let s = Script::new(name, body);
    let stop = AtomicBool::new(false);
    match Reader::start(&s.path, NOBODY, probe_job()) {
        Err(e) => e.to_string(),
        Ok(r) => match r.run(&stop, None) {
            Err(e) => e.to_string(),
            Ok(done) => panic!("{name}: answered {done:?}"),
        },
    }
}

#[test]
fn a_line_is_read_within_its_bound_and_no_further() {
    let mut r = Cursor::new(b"go\nstop".to_vec());
    assert_eq!(read_line(&mut r, 8).unwrap().as_deref(), Some("go"));
    assert_eq!(read_line(&mut r, 8).unwrap().as_deref(), Some("stop"));
    assert_eq!(read_line(&mut r, 8).unwrap(), None);
    let mut long = Cursor::new(vec![b'x'; 100]);
    let e = read_line(&mut long, 16).unwrap_err();
    assert!(e.to_string().contains("over 16 bytes"), "{e}");
    assert!(read_line(&mut Cursor::new(b"\xff\n".to_vec()), 8).is_err());
}

#[test]
fn an_order_keeps_its_job_through_the_pipe() {
    for protocol in ["q3", "a2s", "gamedig:quake3"] {
        let Job::Probe(mut cfg) = probe_job() else {
            unreachable!()
        };
        cfg.protocol = protocol.parse().unwrap();
        let line = serde_json::to_string(&Order {
            schema: SCHEMA.into(),
            job: Job::Probe(cfg.clone()),
        })
        .unwrap();
        let back: Order = serde_json::from_str(&line).unwrap();
        let Job::Probe(got) = back.job else {
            panic!("{line}")
        };
        assert_eq!(got.protocol, cfg.protocol, "{line}");
        assert_eq!(got.targets, cfg.targets);
    }
    let players = tickpack_players::PlayersConfig {
        targets: vec!["127.0.0.1:9".parse().unwrap()],
        ..Default::default()
    };
    let line = serde_json::to_string(&Job::Players(players.clone())).unwrap();
    let Job::Players(back) = serde_json::from_str(&line).unwrap() else {
        panic!("{line}")
    };
    assert_eq!(format!("{back:?}"), format!("{players:?}"));
}

#[test]
fn a_child_that_says_nothing_is_not_waited_for_past_its_start_limit() {
    let t = Instant::now();
    let e = error_of("silent", "sleep 30");
    assert!(e.contains("not ready within"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn a_child_that_says_what_is_not_a_message_is_refused() {
    let e = error_of(
        "garbage",
        "echo '\"Ready\"'; read order; read go; echo 'rm -rf / \u{1b}[2J'",
    );
    assert!(e.contains("not a message"), "{e}");
    assert!(!e.contains('\u{1b}'), "escaped: {e:?}");
}

#[test]
fn a_child_that_sends_a_line_without_end_is_refused_at_its_bound() {
    // A line of MAX_LINE + 1 bytes without a newline, then silence.
    let e = error_of(
        "long",
        &format!(
            "echo '\"Ready\"'; read order; read go; head -c {} /dev/zero | tr '\\0' x; sleep 30",
            MAX_LINE + 1
        ),
    );
    assert!(e.contains(&format!("over {MAX_LINE} bytes")), "{e}");
}

#[test]
fn a_child_that_ends_without_a_result_says_how_it_ended() {
    let e = error_of("exits", "echo '\"Ready\"'; read order; read go; exit 3");
    assert!(e.contains("ended without a result"), "{e}");
}

#[test]
fn a_child_that_says_ready_twice_or_answers_early_is_refused() {
    let e = error_of(
        "twice",
        "echo '\"Ready\"'; read order; read go; echo '\"Ready\"'; sleep 30",
    );
    assert!(e.contains("ready twice"), "{e}");
    let early = r#"echo '{"Done":{"ProbeWindows":[]}}'; sleep 30"#;
    let e = error_of("early", early);
    assert!(e.contains("before it was ready"), "{e}");
}

#[test]
fn a_result_comes_back_and_the_child_is_reaped() {
    let s = Script::new(
        "answers",
        r#"echo '"Ready"'; read order; read go; echo '{"Live":{"recent":null}}'; echo '{"Done":{"ProbeWindows":[null]}}'"#,
    );
    let stop = AtomicBool::new(false);
    let r = Reader::start(&s.path, NOBODY, probe_job()).unwrap();
    let pid = r.pid();
    match r.run(&stop, None).unwrap() {
        Done::ProbeWindows(w) => assert_eq!(w, vec![None]),
        other => panic!("{other:?}"),
    }
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "reaped"
    );
}

#[test]
fn a_reader_dropped_before_its_run_is_killed_and_reaped() {
    let s = Script::new("dropped", r#"echo '"Ready"'; sleep 30"#);
    let r = Reader::start(&s.path, NOBODY, probe_job()).unwrap();
    let pid = r.pid();
    drop(r);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn what_a_child_prints_reaches_our_stderr_escaped_and_bounded() {
    let mut printed = b"\x1b]0;owned\x07\x1b[2J hello\n".to_vec();
    printed.extend(vec![b'x'; 10_000]);
    printed.push(b'\n');
    for n in 0..100 {
        printed.extend(format!("line {n}\n").as_bytes());
    }
    let mut out = Vec::new();
    pass_on(Cursor::new(printed), "players", &mut out);
    let out = String::from_utf8(out).unwrap();
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.starts_with("tickpack __readers players: "), "{out}");
    assert_eq!(out.lines().count(), STDERR_LINES, "{out}");
    assert!(out.lines().all(|l| l.len() < 300), "{out}");
}

/// A bug: after its answer the bench waited for the child to exit,
/// unbounded: a child that answered and then hung held the step for ever.
#[test]
fn a_child_that_answered_and_then_hung_held_the_bench() {
    let s = Script::new(
        "hangs",
        r#"echo '"Ready"'; read order; read go; echo '{"Done":{"ProbeWindows":[null]}}'; sleep 30"#,
    );
    let stop = AtomicBool::new(false);
    let r = Reader::start(&s.path, NOBODY, probe_job()).unwrap();
    let pid = r.pid();
    let t = Instant::now();
    assert!(matches!(r.run(&stop, None), Ok(Done::ProbeWindows(_))));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "killed and reaped"
    );
}

/// A bug: a child whose input was closed before `go` was read for as long
/// as it kept talking.
#[test]
fn a_child_that_closed_its_input_and_kept_talking_held_the_bench() {
    let e_and_time = {
        let s = Script::new(
            "talks",
            r#"echo '"Ready"'; read order; exec 0<&-; for i in $(seq 150); do echo '{"Live":{"recent":null}}'; sleep 0.1; done"#,
        );
        let stop = AtomicBool::new(false);
        let r = Reader::start(&s.path, NOBODY, probe_job()).unwrap();
        // Its input closes with the `exec`: `go` meets no reader.
        std::thread::sleep(Duration::from_millis(300));
        let t = Instant::now();
        (r.run(&stop, None).map(|_| ()).unwrap_err(), t.elapsed())
    };
    let (e, took) = e_and_time;
    assert!(e.to_string().contains("ended without a result"), "{e}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}
