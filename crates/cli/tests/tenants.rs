//! Tenants that cannot hurt each other: what one instance leaves, prints,
//! or holds never reaches the host or the next tenant. Each test is named
//! after the finding it guards against; all need root (namespaces, cgroups,
//! instance uids) and clean up through [`Host`]'s drop and [`Scratch`].

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::host::Host;
use support::{require_root, serial};

const ROOT: &str = "instances in their own namespaces and cgroups as their own uids";

/// Paths removed on drop, pass or fail.
struct Scratch(Vec<PathBuf>);

impl Scratch {
    /// A fresh directory `/var/tmp/tp-tenants-TAG-PID` anyone may read
    /// (instance uids run scripts from it).
    fn dir(&mut self, tag: &str) -> PathBuf {
        let d = PathBuf::from(format!("/var/tmp/tp-tenants-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        self.0.push(d.clone());
        d
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[allow(dead_code)]
/// Waits (at most 20 s) until `ok` holds.
fn wait(what: &str, ok: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < Duration::from_secs(20), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Finding 6: instance directories survived `host down` and were reused by
/// the next `host up` of the same name; the next tenant read the last
/// one's `$HOME/secret.txt`. They are removed at `down` now, without
/// following the tenant's links.
#[test]
fn root_next_tenant_cannot_read_the_last_ones_files() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let tools = scratch.dir("t6");
    // Something root's removal must not reach through a tenant's link.
    let canary = scratch.dir("t6-canary");
    std::fs::write(canary.join("keep"), "keep").unwrap();
    let leave = tools.join("leave.sh");
    script(
        &leave,
        &format!(
            "echo secret > \"$1/secret.txt\"; mkdir -p \"$1/sub\"; echo x > \"$1/sub/f\"; \
             ln -s {} \"$1/link\"; echo written; exec sleep 600\n",
            canary.display()
        ),
    );
    let read = tools.join("read.sh");
    script(
        &read,
        "if [ -e \"$1/secret.txt\" ]; then echo FOUND; else echo CLEAN; fi; exec sleep 600\n",
    );
    let run = scratch.dir("t6-run");
    std::fs::remove_dir(&run).unwrap();
    let args = |cmd: &Path| {
        vec![
            "--range".to_string(),
            "198.19.66.0/24".into(),
            "--health".into(),
            "none".into(),
            "--command".into(),
            format!("/bin/sh {} {{dir}}", cmd.display()),
        ]
    };
    let a = args(&leave);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let mut first = Host::up("tn6", &run, &a);
    first.wait_log(1, "written");
    assert!(first.instance_dir(1).join("secret.txt").exists());
    let out = first.down();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        !first.instance_dir(1).exists(),
        "the instance directory is gone after down"
    );
    assert!(
        canary.join("keep").exists(),
        "removal did not follow the tenant's link"
    );
    drop(first);
    let b = args(&read);
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let second = Host::up("tn6", &run, &b);
    let log = second.wait_log(1, "CLEAN\n");
    assert!(!log.contains("FOUND"), "{log}");
}

/// Finding 2: an instance writing to stdout put 4.6 GB into its log in 8 s,
/// `--disk` notwithstanding. The log is capped and rotated now: here 20 MB
/// of output leave at most two files of `--log-size` each.
#[test]
fn root_an_instance_flooding_stdout_cannot_fill_the_disk() {
    let _g = serial();
    require_root(ROOT);
    let mut scratch = Scratch(vec![]);
    let tools = scratch.dir("t2");
    let flood = tools.join("flood.sh");
    script(
        &flood,
        "yes 0123456789abcdef0123456789abcdef | head -c 20000000; echo; echo flooded; exec sleep 600\n",
    );
    let run = scratch.dir("t2-run");
    std::fs::remove_dir(&run).unwrap();
    let cmd = format!("/bin/sh {}", flood.display());
    let host = Host::up(
        "tn2",
        &run,
        &[
            "--range",
            "198.19.67.0/24",
            "--health",
            "none",
            "--log-size",
            "4MiB",
            "--command",
            &cmd,
        ],
    );
    host.wait_log(1, "flooded");
    let logs = run.join("logs");
    let mut total = 0;
    for e in std::fs::read_dir(&logs).unwrap().flatten() {
        let len = e.metadata().unwrap().len();
        assert!(len <= 4 << 20, "{:?} holds {len} bytes", e.path());
        total += len;
    }
    assert!(total <= 2 * (4 << 20), "logs hold {total} bytes");
    assert!(
        logs.join("1.log.1").exists(),
        "the older output was rotated"
    );
}
