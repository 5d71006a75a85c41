//! The session's checks, without root or I/O.

use super::*;

fn open(host: &str, dir: &str, found: &Found) -> Result<Session, String> {
    let mut s = Session::open(SCHEMA, host, Path::new(dir), 0, found)?;
    s.set_uid_base(Some(201_000));
    Ok(s)
}

#[test]
fn a_hello_opens_a_session_for_its_host_alone() {
    let s = open("a", "/run/a", &Found::default()).unwrap();
    assert_eq!(s.host(), "a");
    let e = Session::open(
        "tickpack.root/0",
        "a",
        Path::new("/run/a"),
        0,
        &Found::default(),
    );
    assert!(e.unwrap_err().contains("not spoken here"));
    assert!(open("A;rm", "/run/a", &Found::default()).is_err());
}

#[test]
fn another_hosts_run_dir_is_refused() {
    let found = Found {
        run_dir_claimed_by: Some("b".into()),
        ..Found::default()
    };
    let e = open("a", "/run/b", &found).unwrap_err();
    assert!(e.contains("is host b's"), "{e}");
    let untrusted = Found {
        run_dir_untrusted: Some("writable by others".into()),
        ..Found::default()
    };
    assert!(open("a", "/run/a", &untrusted)
        .unwrap_err()
        .contains("writable by others"));
}

#[test]
fn paths_outside_an_instances_directory_are_refused() {
    let mut s = open("a", "/run/a", &Found::default()).unwrap();
    s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1, 2])
        .unwrap();
    let (rel, uid) = s.write_file(2, "baseoa/server.cfg", "x").unwrap();
    assert_eq!(rel, Path::new("instances/2/baseoa/server.cfg"));
    assert_eq!(uid, 201_002);
    for bad in [
        "../1/x",
        "/etc/passwd",
        "a/../../x",
        "",
        "./x",
        "a/b/c/d/e/f/g/h/i",
    ] {
        let e = s.write_file(1, bad, "x").unwrap_err();
        assert!(e.contains("is not beneath"), "{bad}: {e}");
    }
    assert!(s
        .write_file(3, "x", "x")
        .unwrap_err()
        .contains("not one of host a's"));
    let big = "x".repeat(MAX_FILE + 1);
    assert!(s.write_file(1, "x", &big).unwrap_err().contains("over the"));
}

#[test]
fn a_command_starts_only_in_walls_and_cgroups_of_its_own_host() {
    let mut s = open("a", "/run/a", &Found::default()).unwrap();
    s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1, 2])
        .unwrap();
    let h = [PathBuf::from("/sys/fs/cgroup")];
    let cmd = ["/bin/true".to_string()];
    let own = PathBuf::from("/sys/fs/cgroup/tpa/tpa-2");
    let spawn = |s: &Session, walls, cgroups: &[PathBuf], argv: &[String]| {
        s.spawn(walls, &command(argv, cgroups), &h, &[Some(0)])
    };
    let w = spawn(
        &s,
        Walls::Instance { id: 2 },
        std::slice::from_ref(&own),
        &cmd,
    )
    .unwrap();
    assert_eq!(w.workdir, Path::new("instances/2"));
    assert_eq!(
        (w.uid, w.netns_of, w.own_session),
        (201_002, Some(2), false)
    );
    assert_eq!(w.hostname, "tpa-2");
    let w = spawn(&s, Walls::Load { id: 1 }, &[], &cmd).unwrap();
    assert_eq!(w.workdir, Path::new("batch/load-1"));
    assert_eq!((w.uid, w.netns_of, w.own_session), (201_000, Some(1), true));
    let adopted = PathBuf::from("/sys/fs/cgroup/tp-batch/mine");
    let w = spawn(
        &s,
        Walls::Batch { job: 3 },
        std::slice::from_ref(&adopted),
        &cmd,
    )
    .unwrap();
    assert_eq!((w.uid, w.netns_of), (201_000, None));
    let refused = |walls, cg: &[PathBuf], argv: &[String]| spawn(&s, walls, cg, argv).unwrap_err();
    let one = Walls::Instance { id: 1 };
    assert!(refused(Walls::Instance { id: 3 }, &[], &cmd).contains("not one of host a's"));
    assert!(refused(Walls::Load { id: 9 }, &[], &cmd).contains("not one of host a's"));
    assert!(refused(Walls::Batch { job: 0 }, &[], &cmd).contains("not one of 1..="));
    assert!(refused(one, &[], &[]).contains("a command of 0 words"));
    for cg in [
        own.clone(),
        adopted,
        PathBuf::from("/sys/fs/cgroup/tpb/tpb-1"),
        PathBuf::from("/sys/fs/cgroup/tpa/../tpb/tpb-1"),
        PathBuf::from("/etc"),
        PathBuf::from("/sys/fs/cgroup"),
    ] {
        let e = refused(one, std::slice::from_ref(&cg), &cmd);
        assert!(e.contains("cgroup"), "{}: {e}", cg.display());
    }
    let other = PathBuf::from("/sys/fs/cgroup/tpb/tpb-batch");
    assert!(refused(Walls::Batch { job: 1 }, &[other], &cmd).contains("may start"));
    let mut s = s.clone();
    s.set_uid_base(None);
    let e = spawn(&s, one, &[], &cmd).unwrap_err();
    assert!(e.contains("no uid block"), "{e}");
}

fn command<'a>(argv: &'a [String], cgroups: &'a [PathBuf]) -> WalledCommand<'a> {
    WalledCommand {
        argv,
        env: &[],
        cpus: None,
        cgroups,
        oom_score_adj: 0,
        sched_idle: false,
    }
}

/// Review of issue 40: a spawn asking for a CPU past the CPU set's
/// end panicked the root process (the set's bounds check), and one
/// asking for an OOM score of -1000 spared its tenant from the OOM
/// killer.
#[test]
fn a_spawn_with_a_cpu_past_the_set_panicked_the_root_process() {
    let mut s = open("a", "/run/a", &Found::default()).unwrap();
    s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1]).unwrap();
    let h = [PathBuf::from("/sys/fs/cgroup")];
    let argv = ["/bin/true".to_string()];
    let ask = |cpus: Option<&[usize]>, oom: i32| {
        let cmd = WalledCommand {
            cpus,
            oom_score_adj: oom,
            ..command(&argv, &[])
        };
        s.spawn(Walls::Instance { id: 1 }, &cmd, &h, &[])
    };
    ask(Some(&[0, 1]), 0).unwrap();
    ask(None, 1000).unwrap();
    assert!(ask(Some(&[MAX_CPUS]), 0).unwrap_err().contains("CPU 1024"));
    assert!(ask(Some(&[usize::MAX]), 0).is_err());
    assert!(ask(Some(&[]), 0).unwrap_err().contains("0 CPUs"));
    assert!(ask(None, -1000).unwrap_err().contains("OOM score of -1000"));
    assert!(ask(None, 1001).is_err());
}

/// Review of issue 40: a supervisor without root could start a batch
/// job in any cgroup not beneath a `tp<host>`: a system service's,
/// outside every limit of the host.
#[test]
fn a_batch_job_joined_a_cgroup_of_a_system_service() {
    let found = Found::default();
    let mut s = Session::open(SCHEMA, "a", Path::new("/run/a"), 61_234, &found).unwrap();
    s.set_uid_base(Some(201_000));
    let h = [PathBuf::from("/sys/fs/cgroup")];
    let argv = ["/bin/true".to_string()];
    let service = [PathBuf::from("/sys/fs/cgroup/system.slice/ssh.service")];
    let batch = Walls::Batch { job: 1 };
    let cmd = command(&argv, &service);
    let e = s.spawn(batch, &cmd, &h, &[Some(0)]).unwrap_err();
    assert!(e.contains("is not uid 61234's"), "{e}");
    assert!(s.spawn(batch, &cmd, &h, &[None]).is_err());
    s.spawn(batch, &cmd, &h, &[Some(61_234)]).unwrap();
}

/// Review of issue 40: a supervisor without root had its root process
/// act on another user's (or root's) host left on record, or on a run
/// dir that is gone with no record of its own.
#[test]
fn a_supervisor_without_root_acts_for_its_own_hosts_alone() {
    let open =
        |caller, found: &Found| Session::open(SCHEMA, "a", Path::new("/run/a"), caller, found);
    let roots = Found {
        recorded: Some(("/run/a".into(), 0)),
        ..Found::default()
    };
    assert!(open(61_234, &roots)
        .unwrap_err()
        .contains("record is uid 0's"));
    open(0, &roots).unwrap();
    let gone = Found {
        run_dir_gone: true,
        ..Found::default()
    };
    assert!(open(61_234, &gone).unwrap_err().contains("no record"));
    open(0, &gone).unwrap();
    let mine = Found {
        run_dir_gone: true,
        recorded: Some(("/run/a".into(), 61_234)),
        ..Found::default()
    };
    open(61_234, &mine).unwrap();
    let elsewhere = Found {
        recorded: Some(("/run/b".into(), 61_234)),
        ..mine
    };
    assert!(open(61_234, &elsewhere)
        .unwrap_err()
        .contains("names another"));
}

#[test]
fn a_network_is_made_once_for_ids_it_may_have() {
    let mut s = open("a", "/run/a", &Found::default()).unwrap();
    assert!(s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[0]).is_err());
    assert!(s
        .net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1, 1])
        .is_err());
    assert!(s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[]).is_err());
    assert!(s.net_up(NetKind::Veth, "not a range", 0, &[1]).is_err());
    s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1]).unwrap();
    assert!(s
        .net_up(NetKind::Veth, "198.18.0.0/16", 0, &[2])
        .unwrap_err()
        .contains("up already"));
    s.net_down();
    s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[2]).unwrap();
}

#[test]
fn a_name_it_did_not_make_is_refused() {
    let s = open("a", "/run/a", &Found::default()).unwrap();
    let own = NetRecord {
        namespaces: vec!["tpa-1".into()],
        links: vec!["tpav1".into()],
        routes: vec![],
        tables: vec!["tpa".into()],
    };
    assert!(s.remove(&own, &own).is_ok());
    for (asked, what) in [
        (
            NetRecord {
                links: vec!["eth0".into()],
                ..NetRecord::default()
            },
            "link eth0",
        ),
        (
            NetRecord {
                namespaces: vec!["tpb-1".into()],
                ..NetRecord::default()
            },
            "namespace tpb-1",
        ),
        (
            NetRecord {
                tables: vec!["filter".into()],
                ..NetRecord::default()
            },
            "nftables table filter",
        ),
        (
            NetRecord {
                routes: vec!["unreachable 10.0.0.0/8 metric 4294967295".into()],
                ..NetRecord::default()
            },
            "route unreachable",
        ),
    ] {
        let e = s.remove(&asked, &own).unwrap_err();
        assert!(
            e.starts_with(what) && e.contains("not made for host a"),
            "{e}"
        );
    }
}
