//! What a host leaves and says beyond its instances (issue 41, as a new
//! user met it): no warning for what it need not do, the bots each
//! instance was given in its status, nothing it made left after `host
//! down` but the logs it says it keeps, and a definition's `[ready]` taken
//! at its word: its log line's placeholders filled, its kill delay.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use support::free_udp_ports;
use support::host::{events, instance, Host};
use support::{require_root, serial};

/// A definition in `dir`: a server that prints `prints` (with its `$1`
/// its address and `$2` its port), then sleeps; ready by the log line
/// `Bound socket to {ip}:{port}`, within 4 s + 2 s per server.
fn definition(dir: &Path, name: &str, prints: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\ndescription = \"a server that says where it bound\"\n\
             command = \"/bin/sh {{dir}}/run.sh {{ip}} {{port}}\"\nport = 27960\nslots = 4\n\
             [tick]\nhz = 20\n\
             [ready]\nby = \"log\"\nlog = \"Bound socket to {{ip}}:{{port}}\"\ntimeout_s = 4\nper_server_s = 2\n\
             [[file]]\npath = \"run.sh\"\ncontents = \"echo {prints}\\nexec sleep 600\\n\"\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tp-hygiene-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `[ready] log = "Bound socket to {ip}:{port}"` passed `games check`, but
/// the host looked for the text with its braces, so every instance was
/// killed after 15 s, where `timeout_s = 4` and `per_server_s = 2` said 6.
#[test]
fn a_ready_log_with_ip_and_port_was_never_matched_and_killed_after_15_s() {
    let _g = serial();
    let dir = temp("ready");
    let port = free_udp_ports(1);
    let bound = definition(&dir, "bound", "Bound socket to $1:$2");
    let mut host = Host::spawn(
        "hyr1",
        &dir.join("run1"),
        &[
            "--game",
            &bound,
            "--backend",
            "process",
            "--port",
            &port.to_string(),
        ],
        Stdio::null(),
    )
    .remove_on_drop(&dir);
    let st = host.wait_for(
        support::host::all_running,
        "the instance ready by its log line",
    );
    assert_eq!(instance(&st, 1)["restarts"], 0, "{st:#}");
    drop(host);
    // One that never prints it is killed after what [ready] says: 4 s +
    // 2 s for the one server started.
    let dir = temp("silent");
    let silent = definition(&dir, "silent", "loading");
    let mut host = Host::spawn(
        "hyr2",
        &dir.join("run2"),
        &[
            "--game",
            &silent,
            "--backend",
            "process",
            "--port",
            &port.to_string(),
        ],
        Stdio::null(),
    )
    .remove_on_drop(&dir);
    let never = |s: &Value| !events(s, "never_ready").is_empty();
    let st = host.wait_for(never, "the silent instance killed");
    let event = &events(&st, "never_ready")[0];
    assert_eq!(
        event["why"]["line"],
        format!("Bound socket to 127.0.0.1:{port}"),
        "{event}"
    );
    assert_eq!(event["limit_s"], 6.0, "{event}");
}

/// Every `host up` printed "cannot lower the supervisor's oom_score_adj
/// to -500 (Permission denied)" where it had no CAP_SYS_RESOURCE (the
/// instances go above it instead: nothing to warn about); `host status`
/// showed `bots -` when 4 were asked; `host down` left its run dir (an
/// empty `instances/` in it) and its lock file under /run/tickpack.
#[test]
fn root_a_host_warned_of_what_it_need_not_do_hid_its_bots_and_left_its_files() {
    require_root("a host lock under /run/tickpack/host-locks");
    let _g = serial();
    let name = "hyg1";
    let run_dir = Path::new("/run/tickpack").join(format!("tphygiene{}", std::process::id()));
    let lock = Path::new("/run/tickpack/host-locks").join(format!("{name}.lock"));
    let port = free_udp_ports(1);
    // As root without CAP_SYS_RESOURCE (as in some containers).
    let mut host = Host::spawn_wrapped(
        &["setpriv", "--bounding-set=-sys_resource"],
        name,
        &run_dir,
        &[
            "--backend",
            "process",
            "--port",
            &port.to_string(),
            "--bots",
            "4",
        ],
    )
    .remove_on_drop(&run_dir);
    let st = host.wait_for(support::host::all_running, "the instance running");
    assert_eq!(instance(&st, 1)["bots_asked"], 4, "{st:#}");
    assert!(lock.exists(), "held while up");
    let out = host.down();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{said}");
    let logs = run_dir.join("logs");
    assert!(
        said.contains("log file") && said.contains(&logs.display().to_string()),
        "down says which logs it keeps: {said}"
    );
    let mut up_said = String::new();
    if let Some(mut e) = host.up.stderr.take() {
        let _ = e.read_to_string(&mut up_said);
    }
    assert!(!up_said.contains("oom_score_adj"), "{up_said}");
    assert!(!lock.exists(), "the lock file went with the host");
    let mut left: Vec<String> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [".tickpack-run-dir", "logs"],
        "only the logs it keeps"
    );
    assert!(std::fs::read_dir(&logs).unwrap().count() > 0);
}
