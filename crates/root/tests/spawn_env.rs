//! An instance does not inherit the Agones SDK variables of the host: a
//! host run in an Agones GameServer pod would otherwise have every reference
//! server instance report to the pod's SDK server (`tickpack server` turns
//! Agones on when it sees them). Nor anything else of the host's
//! environment (issue 30): an instance gets its own variables, `HOME` and
//! a fixed `PATH`, never root's. Its own test binary: it sets variables of
//! this process, which no other test may race.

use std::time::Duration;

use tickpack_root::spawn::{spawn, Isolation, Spec};

#[test]
fn instances_do_not_inherit_the_hosts_agones_sdk_variables() {
    // SAFETY-relevant: the only test of this binary, so no thread reads the
    // environment while it changes.
    std::env::set_var("AGONES_SDK_HTTP_PORT", "9358");
    std::env::set_var("AGONES_SDK_GRPC_PORT", "9357");
    std::env::set_var("TP_SPAWN_ENV_KEPT", "host");
    std::env::set_var("PATH", "/tp-spawn-env-root-path:/usr/bin:/bin");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("out.log");
    let spec = Spec {
        argv: vec![
            "/bin/sh".into(),
            "-c".into(),
            "echo \"[${AGONES_SDK_HTTP_PORT-unset}][${AGONES_SDK_GRPC_PORT-unset}][${TP_SPAWN_ENV_KEPT-unset}][$OWN][$PATH]\"".into(),
        ],
        env: vec![("OWN".into(), "spec".into())],
        workdir: dir.path().to_path_buf(),
        log: log.clone(),
        log_bytes: tickpack_root::spawn::log::DEFAULT_LOG_BYTES,
        oom_score_adj: 0,
        cpus: None,
        cgroup_procs: vec![],
        isolation: Isolation::default(),
        init_exe: "/bin/false".into(),
        sched_idle: false,
        own_session: false,
    };
    let mut child = spawn(&spec).unwrap();
    let status =
        tickpack_testkit::wait_until(Duration::from_secs(10), Duration::from_millis(20), || {
            child.try_wait().unwrap()
        });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the instance did not exit within 10 s");
    }
    // The host's log thread copies the output from a pipe: the instance's
    // exit does not mean its line is in the file yet (a fresh clone once
    // read an empty log). Wait for the whole line.
    let out =
        tickpack_testkit::wait_until(Duration::from_secs(10), Duration::from_millis(20), || {
            std::fs::read_to_string(&log)
                .ok()
                .filter(|o| o.ends_with('\n'))
        })
        .unwrap_or_else(|| panic!("no line in the log within 10 s"));
    assert_eq!(
        out.trim(),
        format!(
            "[unset][unset][unset][spec][{}]",
            tickpack_root::spawn::env::DEFAULT_PATH
        ),
        "{out}"
    );
}
