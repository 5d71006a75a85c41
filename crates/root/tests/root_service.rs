//! The root process refuses, with a sentence and nothing changed, what is
//! not its host's to ask: another host's run dir, a path outside the
//! instances' directories, a name it did not make, walls, cgroups and
//! processes not its host's, a message that is not one request. Served in this process (`serve` on a thread, over the
//! same socket pair `tickpack __root` reads) with its records in a
//! temporary directory; the network is real (root).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::net::{AddressFamily, SendFlags, SocketFlags, SocketType};
use tickpack_root::netpath::{NetKind, NetRecord, NETNS_DIR};
use tickpack_root::service::protocol::{self, Answer, Walls, MAX_MESSAGE};
use tickpack_root::service::{serve, Config, Root, RootError, WalledCommand};
use tickpack_testkit::{require_root, Leftovers};

struct World {
    dir: tempfile::TempDir,
    cfg: Config,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            registry: dir.path().join("registry"),
            block_dir: dir.path().join("blocks"),
        };
        World { dir, cfg }
    }

    /// A run dir of root's, 0700.
    fn run_dir(&self, name: &str) -> PathBuf {
        let d = std::fs::canonicalize(self.dir.path()).unwrap().join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    /// A root process of our own, on a thread.
    fn connect(&self) -> (Root, std::os::fd::OwnedFd, std::thread::JoinHandle<i32>) {
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        let raw = ours.try_clone().unwrap();
        let cfg = self.cfg.clone();
        let t = std::thread::spawn(move || serve(theirs, &cfg));
        (Root::over(ours).unwrap(), raw, t)
    }
}

/// Removes the test hosts' network and its guard route whatever happened.
struct Clean(Vec<&'static str>, &'static str);

impl Drop for Clean {
    fn drop(&mut self) {
        for h in &self.0 {
            let _ = tickpack_root::netpath::cleanup_host(h);
            let _ = tickpack_root::netpath::filter::remove_firewall(h);
        }
        let range = self.1.parse().expect("a range");
        let _ = tickpack_root::netpath::remove_guard_route(range);
    }
}

fn refused(r: Result<impl std::fmt::Debug, RootError>) -> String {
    match r {
        Err(RootError::Refused(why)) => why,
        other => panic!("not refused: {other:?}"),
    }
}

/// Asks `root` to start `/bin/true` in `walls`, a member of `cgroups`.
fn spawn_in(
    root: &Root,
    walls: Walls,
    cgroups: &[&str],
) -> Result<(u32, std::os::fd::OwnedFd), RootError> {
    let cgroups: Vec<PathBuf> = cgroups.iter().map(PathBuf::from).collect();
    let cmd = WalledCommand {
        argv: &["/bin/true".to_string()],
        env: &[],
        cpus: None,
        cgroups: &cgroups,
        oom_score_adj: 0,
        sched_idle: false,
    };
    root.spawn(walls, &cmd)
}

fn netns(name: &str) -> bool {
    Path::new(NETNS_DIR).join(name).exists()
}

#[test]
fn the_root_process_refuses_what_is_not_its_hosts_and_changes_nothing() {
    require_root("namespaces, links, routes, files given to another user");
    let _clean = Clean(vec!["rsa", "rsb"], "198.19.230.0/24");
    let w = World::new();
    let dir_a = w.run_dir("a");
    std::fs::create_dir_all(dir_a.join("instances/1")).unwrap();

    // Host rsa, its network of one instance.
    let (a, raw_a, serve_a) = w.connect();
    assert_eq!(a.hello("rsa", &dir_a).unwrap(), NetRecord::default());
    // Its uid block (from the test's own records).
    let (base, _) = a.take_uid_block().unwrap();
    let why = refused(a.take_uid_block());
    assert!(why.contains("holds a uid block already"), "{why}");
    let made = a.net_up(NetKind::Veth, "198.19.230.0/24", 0, &[1]).unwrap();
    assert!(made.namespaces.contains(&"tprsa-1".to_string()), "{made:?}");
    assert!(netns("tprsa-1"));

    // Another host asking for rsa's run dir.
    let (b, _raw_b, serve_b) = w.connect();
    let why = refused(b.hello("rsb", &dir_a));
    assert!(
        why.contains(&format!("run dir {} is host rsa's", dir_a.display())),
        "{why}"
    );
    // A second process for rsa itself.
    let (a2, _raw, serve_a2) = w.connect();
    let why = refused(a2.hello("rsa", &dir_a));
    assert!(
        why.contains("host rsa is served by another root process"),
        "{why}"
    );
    // And a run dir open to others.
    let open = w.dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let open = std::fs::canonicalize(open).unwrap();
    let why = refused(b.hello("rsb", &open));
    assert!(why.contains("writable by others"), "{why}");

    // Paths outside the instance's directory; a file in it is the
    // instance's user's.
    for bad in [
        "../../etc/tp-root-test",
        "/etc/tp-root-test",
        "a/../../../x",
    ] {
        let why = refused(a.write_file(1, Path::new(bad), "x"));
        assert!(
            why.contains("is not beneath instance 1's directory"),
            "{bad}: {why}"
        );
    }
    assert!(!Path::new("/etc/tp-root-test").exists());
    let why = refused(a.write_file(2, Path::new("x.cfg"), "x"));
    assert!(why.contains("instance 2 is not one of host rsa's"), "{why}");
    a.write_file(1, Path::new("conf/server.cfg"), "set a 1\n")
        .unwrap();
    let m = std::fs::metadata(dir_a.join("instances/1/conf/server.cfg")).unwrap();
    assert_eq!(
        (m.uid(), m.gid(), m.mode() & 0o777),
        (base + 1, base + 1, 0o600)
    );
    // A link planted on the way is not followed.
    std::os::unix::fs::symlink("/etc", dir_a.join("instances/1/etc")).unwrap();
    let e = a
        .write_file(1, Path::new("etc/tp-root-test"), "x")
        .unwrap_err();
    assert!(matches!(e, RootError::Failed(_)), "{e}");
    assert!(!Path::new("/etc/tp-root-test").exists());

    // Commands: only in its own instances' walls and cgroups, never
    // through a link planted for its working directory; a signal or a
    // wait only for a process it started.
    let why = refused(spawn_in(&a, Walls::Instance { id: 2 }, &[]));
    assert!(why.contains("instance 2 is not one of host rsa's"), "{why}");
    for cg in [
        "/sys/fs/cgroup/tprsb/tprsb-1",
        "/sys/fs/cgroup/tprsa/../x",
        "/etc",
    ] {
        let why = refused(spawn_in(&a, Walls::Instance { id: 1 }, &[cg]));
        assert!(why.contains("cgroup"), "{cg}: {why}");
    }
    std::fs::create_dir(dir_a.join("batch")).unwrap();
    std::os::unix::fs::symlink("/etc", dir_a.join("batch/load-1")).unwrap();
    match spawn_in(&a, Walls::Load { id: 1 }, &[]) {
        Err(RootError::Failed(e)) => assert!(e.contains("without a link"), "{e}"),
        other => panic!("started through a link: {other:?}"),
    }
    for (pid, group) in [(1, false), (1, true), (std::process::id(), false)] {
        let why = refused(a.signal(pid, 9, group));
        assert!(why.contains("not one it started"), "{why}");
    }
    let why = refused(a.wait(1));
    assert!(why.contains("not one it started"), "{why}");

    // Names it did not make: the loopback link, another host's namespace.
    for asked in [
        NetRecord {
            links: vec!["lo".into()],
            ..NetRecord::default()
        },
        NetRecord {
            namespaces: vec!["tprsb-1".into()],
            ..NetRecord::default()
        },
        NetRecord {
            namespaces: vec!["tprsa-1".into()],
            ..NetRecord::default()
        },
    ] {
        let why = refused(a.remove_leftovers(&asked));
        assert!(why.contains("was not made for host rsa"), "{why}");
    }
    assert!(Path::new("/sys/class/net/lo").exists());
    assert!(netns("tprsa-1"), "its live network is not a leftover");

    // Messages that are not one request: garbage, an unknown request,
    // one over the limit. The session goes on.
    let raw = |bytes: &[u8]| {
        rustix::net::send(&raw_a, bytes, SendFlags::NOSIGNAL).unwrap();
        let mut buf = vec![0u8; MAX_MESSAGE + 1];
        protocol::recv::<Answer>(&raw_a, &mut buf).unwrap()
    };
    for (bytes, says) in [
        (
            b"\x00\xffnot json".to_vec(),
            "not a message of tickpack.root/1",
        ),
        (
            br#"{"request":"mount","target":"/"}"#.to_vec(),
            "unknown variant",
        ),
        (vec![b' '; MAX_MESSAGE + 100], "over the"),
    ] {
        match raw(&bytes) {
            Answer::Refused { why } => assert!(why.contains(says), "{why}"),
            a => panic!("not refused: {a:?}"),
        }
    }
    assert!(netns("tprsa-1"));
    let why = refused(a.hello("rsa", &dir_a));
    assert!(why.contains("a hello was answered already"), "{why}");

    // Its own network goes; the record with it; its uid block too.
    a.net_down().unwrap();
    a.release_uid_block().unwrap();
    assert_eq!(
        std::fs::read_dir(&w.cfg.block_dir)
            .unwrap()
            .filter(|e| !e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.'))
            .count(),
        0
    );
    assert!(!netns("tprsa-1"));
    drop((a, a2, b, raw_a, _raw_b, _raw));
    for t in [serve_a, serve_b, serve_a2] {
        assert_eq!(t.join().unwrap(), 0);
    }
    assert!(!w.cfg.registry.join("rsa.json").exists());
    assert_eq!(
        Leftovers::of("tprsa").routes(&["198.19.230."]).scan(),
        Vec::<String>::new()
    );
}

#[test]
fn what_a_supervisor_killed_left_is_removed_by_the_next_session_from_the_record() {
    require_root("namespaces, links, routes");
    let _clean = Clean(vec!["rsc"], "198.19.231.0/24");
    let w = World::new();
    let dir = w.run_dir("c");
    let (c, raw_c, serve_c) = w.connect();
    c.hello("rsc", &dir).unwrap();
    let made = c
        .net_up(NetKind::Veth, "198.19.231.0/24", 0, &[1, 2])
        .unwrap();
    // The supervisor goes away without a word (as after kill -9).
    drop((c, raw_c));
    assert_eq!(serve_c.join().unwrap(), 0);
    assert!(netns("tprsc-2"), "left until the next session");

    let (next, raw_next, serve_next) = w.connect();
    let earlier = next.hello("rsc", &dir).unwrap();
    assert_eq!(earlier, made, "its record is what was made");
    let removed = next.remove_leftovers(&earlier).unwrap();
    assert!(removed.contains(&"tprsc-1".to_string()), "{removed:?}");
    assert!(!netns("tprsc-1") && !netns("tprsc-2"));
    assert_eq!(next.sweep().unwrap(), Vec::<String>::new());
    drop((next, raw_next));
    assert_eq!(serve_next.join().unwrap(), 0);
    assert!(!w.cfg.registry.join("rsc.json").exists());
    assert_eq!(
        Leftovers::of("tprsc").routes(&["198.19.231."]).scan(),
        Vec::<String>::new()
    );
}
