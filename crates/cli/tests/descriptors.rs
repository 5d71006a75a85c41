//! Descriptors that cross the walls (issue 38): whatever the host's parent
//! left open must not reach what the host starts. `tickpack host up ...
//! 9</` gave every instance a directory descriptor of the host's `/`, and
//! with `openat(9, "tmp/x", O_CREAT)` an instance wrote the host's `/tmp`
//! past its read-only mounts and private `/tmp`; every instance, init and
//! batch job also held the harness's pipe. Needs root (namespaces,
//! cgroups, instance uids); the host is taken down by [`Host`]'s drop,
//! pass or fail, and the definition file removed by [`Scratch`]'s.

mod support;

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use support::host::{one_netns_instance, temp_run_dir, Host};
use support::{children, require_root, serial, wait_until};

const ROOT: &str = "instances in their own namespaces and cgroups as their own uids";

/// A scratch file removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The processes below `pid` (children, grandchildren, ...).
fn descendants(pid: u64) -> Vec<u64> {
    let mut out = vec![];
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for c in children(p) {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

fn cmdline(pid: u64) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .replace('\0', " ")
        .trim()
        .to_string()
}

/// The descriptors of `pid` above stderr, as `fd -> what it names` (empty
/// if the process is gone).
fn extra_fds(pid: u64) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return vec![];
    };
    dir.flatten()
        .filter(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) > Some(2))
        .map(|e| {
            let to = std::fs::read_link(e.path()).unwrap_or_default();
            format!("{} -> {}", e.file_name().to_string_lossy(), to.display())
        })
        .collect()
}

/// The host's parent left `/` open as descriptor 9 and a pipe as 251 (what
/// a CI harness had): no instance process, init or batch job may hold
/// either, nor any descriptor beyond its stdin, stdout and stderr.
#[test]
fn root_a_directory_descriptor_the_hosts_parent_left_open_reached_every_instance() {
    let _g = serial();
    require_root(ROOT);
    let def = Scratch(std::env::temp_dir().join(format!("tp-fds-{}.toml", std::process::id())));
    std::fs::write(
        &def.0,
        "name = \"fdin\"\ndescription = \"a test server\"\ncommand = \"/bin/sh {dir}/run.sh\"\nport = 27500\nslots = 4\n[tick]\nhz = 10\n[[file]]\npath = \"run.sh\"\ncontents = \"\"\"\necho started\nexec sleep 600\n\"\"\"\n",
    )
    .unwrap();
    let root = std::fs::File::open("/").unwrap();
    let (_pipe_r, pipe_w) = std::io::pipe().unwrap();
    let dir = temp_run_dir("fds", "fdin");
    let args = one_netns_instance(
        "198.19.181.0/24",
        &[
            "--game",
            def.0.to_str().unwrap(),
            "--batch",
            "/bin/sleep 601",
        ],
    );
    let host = Host::spawn_inheriting(
        "fdin",
        &dir,
        &args,
        Stdio::null(),
        &[(root.as_raw_fd(), 9), (pipe_w.as_raw_fd(), 251)],
    )
    .remove_on_drop(&dir);
    host.wait_log(1, "started");
    let supervisor = u64::from(host.up.id());
    // The instance's server and the batch job both run (each below an init).
    let procs = wait_until(Duration::from_secs(20), Duration::from_millis(50), || {
        let all = descendants(supervisor);
        let lines: Vec<String> = all.iter().map(|&p| cmdline(p)).collect();
        (lines.iter().any(|c| c == "sleep 600") && lines.iter().any(|c| c == "/bin/sleep 601"))
            .then_some(all)
    })
    .unwrap_or_else(|| {
        let all: Vec<String> = descendants(supervisor).into_iter().map(cmdline).collect();
        panic!("the instance and the batch job never both ran: {all:?}")
    });
    assert!(
        extra_fds(supervisor)
            .iter()
            .any(|f| f.starts_with("9 -> /")),
        "the test handed the host its descriptor 9: {:?}",
        extra_fds(supervisor)
    );
    let inits = procs
        .iter()
        .filter(|&&p| cmdline(p).contains("__instance-init"))
        .count();
    assert!(inits >= 2, "an init for the instance and for the batch job");
    let leaked: Vec<String> = procs
        .iter()
        .filter_map(|&p| {
            let mut fds = extra_fds(p);
            // The host's root process holds its host's lock and its run
            // dir (what it does there is done beneath that descriptor),
            // its own.
            if cmdline(p).contains("__root") {
                let run_dir = format!("-> {}", dir.display());
                fds.retain(|f| !f.contains("-> /run/tickpack/root/") && !f.ends_with(&run_dir));
            }
            (!fds.is_empty()).then(|| format!("pid {p} ({}): {fds:?}", cmdline(p)))
        })
        .collect();
    assert!(leaked.is_empty(), "inherited descriptors: {leaked:#?}");
}
