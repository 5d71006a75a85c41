//! Detection and set-up on fake mount tables and temporary directory trees.
//! The tests on the real cgroup filesystem are in `tests/cgroup_root.rs`.

use std::os::fd::AsRawFd;

use super::*;

/// A temporary directory holding a fake cgroup root and a fake mount table.
struct Fake {
    _dir: tempfile::TempDir,
    root: PathBuf,
    mounts: PathBuf,
}

impl Fake {
    /// `lines` use `{root}` for the fake root.
    fn new(lines: &[&str]) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cgroup");
        fs::create_dir(&root).unwrap();
        let table: String = lines
            .iter()
            .map(|l| l.replace("{root}", root.to_str().unwrap()) + "\n")
            .collect();
        let mounts = dir.path().join("mounts");
        fs::write(&mounts, table).unwrap();
        Fake {
            _dir: dir,
            root,
            mounts,
        }
    }

    /// A v1 machine with cpu and cpuacct co-mounted, plus the usual extras.
    fn v1() -> Fake {
        let fake = Fake::new(&[
            "proc /proc proc rw,relatime 0 0",
            "tmpfs {root} tmpfs ro,nosuid,nodev,noexec,mode=755 0 0",
            "cgroup {root}/systemd cgroup rw,nosuid,nodev,noexec,relatime,xattr,name=systemd 0 0",
            "cgroup {root}/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0",
            "cgroup {root}/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset 0 0",
            "cgroup {root}/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0",
            "cgroup {root}/pids cgroup rw,nosuid,nodev,noexec,relatime,pids 0 0",
            "cgroup2 {root}/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0",
        ]);
        for h in [
            "systemd",
            "cpu,cpuacct",
            "cpuset",
            "memory",
            "pids",
            "unified",
        ] {
            fs::create_dir(fake.root.join(h)).unwrap();
        }
        fs::write(fake.root.join("cpuset/cpuset.cpus"), "0-3\n").unwrap();
        fs::write(fake.root.join("cpuset/cpuset.mems"), "0\n").unwrap();
        fs::write(fake.root.join("unified/cgroup.controllers"), "").unwrap();
        fake
    }

    /// A v2 machine whose root offers `controllers`.
    fn v2(controllers: &str) -> Fake {
        let fake = Fake::new(&[
            "sysfs /sys sysfs rw 0 0",
            "cgroup2 {root} cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0",
        ]);
        fs::write(fake.root.join("cgroup.controllers"), controllers).unwrap();
        fs::write(fake.root.join("cgroup.subtree_control"), "").unwrap();
        fake
    }

    fn layout(&self) -> CgroupLayout {
        CgroupVersion::detect_with_mounts(&self.root, &self.mounts).unwrap()
    }

    fn read(&self, rel: &str) -> String {
        let path = self.root.join(rel);
        fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .trim()
            .to_owned()
    }

    /// Every file and directory under the root, relative, sorted.
    fn listing(&self) -> Vec<String> {
        let mut all = Vec::new();
        walk(&self.root, &mut all);
        let mut out: Vec<String> = all
            .iter()
            .map(|p| p.strip_prefix(&self.root).unwrap().display().to_string())
            .collect();
        out.sort();
        out
    }
}

fn full_limits() -> Limits {
    Limits {
        cpus: Some(vec![1, 2]),
        cpu_quota: Some(0.5),
        memory_bytes: Some(64 << 20),
        pids_max: Some(64),
    }
}

#[test]
fn v1_with_cpu_and_cpuacct_co_mounted_is_detected() {
    let fake = Fake::v1();
    let layout = fake.layout();
    assert_eq!(layout.version(), CgroupVersion::V1);
    let comounted = fake.root.join("cpu,cpuacct");
    assert_eq!(
        layout.controller_dir(Controller::Cpu),
        Some(comounted.as_path())
    );
    assert_eq!(
        layout.controller_dir(Controller::Cpuacct),
        Some(comounted.as_path())
    );
    assert_eq!(
        layout.controller_dir(Controller::Cpuset),
        Some(fake.root.join("cpuset").as_path())
    );
    assert_eq!(
        layout.controller_dir(Controller::Memory),
        Some(fake.root.join("memory").as_path())
    );
    assert_eq!(
        layout.controller_dir(Controller::Pids),
        Some(fake.root.join("pids").as_path())
    );
    // The co-mounted pair is one hierarchy; name=systemd is not ours.
    assert_eq!(layout.hierarchies().len(), 4);
    assert!(layout.is_synthetic());
}

#[test]
fn v1_with_separate_cpu_and_cpuacct_is_detected() {
    let fake = Fake::new(&[
        "cgroup {root}/cpu cgroup rw,relatime,cpu 0 0",
        "cgroup {root}/cpuacct cgroup rw,relatime,cpuacct 0 0",
        "cgroup {root}/memory cgroup rw,relatime,memory 0 0",
    ]);
    let layout = fake.layout();
    assert_eq!(layout.version(), CgroupVersion::V1);
    assert_eq!(
        layout.controller_dir(Controller::Cpuacct),
        Some(fake.root.join("cpuacct").as_path())
    );
    assert_eq!(layout.controller_dir(Controller::Cpuset), None);
    let err = Cgroup::create(
        &layout,
        "tp-1",
        &Limits {
            cpus: Some(vec![0]),
            ..Limits::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "cgroup controller cpuset is not available");
}

#[test]
fn v2_is_detected_with_its_controllers() {
    let fake = Fake::v2("cpuset cpu io memory hugetlb pids rdma misc\n");
    let layout = fake.layout();
    assert_eq!(layout.version(), CgroupVersion::V2);
    assert_eq!(layout.root(), fake.root.as_path());
    for c in Controller::ALL {
        assert_eq!(layout.controller_dir(c), Some(fake.root.as_path()), "{c}");
    }
    assert_eq!(layout.hierarchies(), vec![fake.root.clone()]);
}

#[test]
fn v2_without_memory_controller_says_so() {
    let fake = Fake::v2("cpuset cpu io pids\n");
    let err = Cgroup::create(&fake.layout(), "tp-1", &Limits::default()).unwrap_err();
    assert!(matches!(
        err,
        CgroupError::NotMounted {
            controller: Controller::Memory
        }
    ));
    assert_eq!(err.to_string(), "cgroup controller memory is not available");
}

#[test]
fn v1_pids_limit_is_written_to_pids_max_in_the_pids_hierarchy() {
    let fake = Fake::v1();
    let limits = Limits {
        pids_max: Some(512),
        ..Limits::default()
    };
    let cg = Cgroup::create(&fake.layout(), "tp-host/tp-1", &limits).unwrap();
    assert_eq!(fake.read("pids/tp-host/tp-1/pids.max"), "512");
    assert_eq!(
        cg.controller_path(Controller::Pids),
        Some(fake.root.join("pids/tp-host/tp-1"))
    );
    assert!(cg
        .procs_path()
        .contains(&fake.root.join("pids/tp-host/tp-1/cgroup.procs")));
    cg.remove().unwrap();
    assert!(!fake.root.join("pids/tp-host").exists());
}

#[test]
fn v2_pids_limit_enables_pids_and_is_written_to_pids_max() {
    let fake = Fake::v2("cpu memory pids\n");
    let limits = Limits {
        pids_max: Some(512),
        ..Limits::default()
    };
    let cg = Cgroup::create(&fake.layout(), "tp-host/tp-1", &limits).unwrap();
    for parent in ["cgroup.subtree_control", "tp-host/cgroup.subtree_control"] {
        assert!(
            fake.read(parent).split_whitespace().any(|c| c == "+pids"),
            "{parent}: {}",
            fake.read(parent)
        );
    }
    assert_eq!(fake.read("tp-host/tp-1/pids.max"), "512");
    cg.remove().unwrap();
}

#[test]
fn without_a_pids_limit_the_pids_controller_is_not_joined() {
    let v1 = Fake::v1();
    let cg = Cgroup::create(&v1.layout(), "tp-1", &Limits::default()).unwrap();
    assert!(!v1.root.join("pids/tp-1").exists());
    assert_eq!(cg.controller_path(Controller::Pids), None);
    cg.remove().unwrap();

    let v2 = Fake::v2("cpu memory pids\n");
    let cg = Cgroup::create(&v2.layout(), "tp-1", &Limits::default()).unwrap();
    assert!(!v2.read("cgroup.subtree_control").contains("pids"));
    assert!(!v2.root.join("tp-1/pids.max").exists());
    cg.remove().unwrap();
}

#[test]
fn a_missing_pids_controller_is_refused_only_when_a_pids_limit_is_asked() {
    let v1 = Fake::new(&[
        "cgroup {root}/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0",
        "cgroup {root}/memory cgroup rw,relatime,memory 0 0",
    ]);
    for h in ["cpu,cpuacct", "memory"] {
        fs::create_dir(v1.root.join(h)).unwrap();
    }
    let v2 = Fake::v2("cpuset cpu io memory\n");
    let limited = Limits {
        pids_max: Some(512),
        ..Limits::default()
    };
    for fake in [&v1, &v2] {
        let layout = fake.layout();
        assert_eq!(layout.controller_dir(Controller::Pids), None);
        let before = fake.listing();
        let err = Cgroup::create(&layout, "tp-host/tp-1", &limited).unwrap_err();
        assert!(
            matches!(
                err,
                CgroupError::NotMounted {
                    controller: Controller::Pids
                }
            ),
            "{err}"
        );
        assert_eq!(err.to_string(), "cgroup controller pids is not available");
        assert_eq!(fake.listing(), before, "a refused create left something");

        let cg = Cgroup::create(&layout, "tp-host/tp-1", &Limits::default()).unwrap();
        cg.remove().unwrap();
    }
}

#[test]
fn a_pids_limit_of_zero_is_refused() {
    let fake = Fake::v1();
    let err = Cgroup::create(
        &fake.layout(),
        "tp-1",
        &Limits {
            pids_max: Some(0),
            ..Limits::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, CgroupError::InvalidLimits { .. }), "{err}");
    assert!(err.to_string().contains("pids"), "{err}");
    assert!(!fake.root.join("pids/tp-1").exists());
}

#[test]
fn hybrid_with_all_controllers_on_v2_uses_the_unified_mount() {
    let fake = Fake::new(&[
        "cgroup {root}/systemd cgroup rw,xattr,name=systemd 0 0",
        "cgroup2 {root}/unified cgroup2 rw 0 0",
    ]);
    fs::create_dir(fake.root.join("unified")).unwrap();
    fs::write(fake.root.join("unified/cgroup.controllers"), "cpu memory").unwrap();
    let layout = fake.layout();
    assert_eq!(layout.version(), CgroupVersion::V2);
    assert_eq!(layout.root(), fake.root.join("unified").as_path());
    assert_eq!(layout.controller_dir(Controller::Cpuset), None);
}

#[test]
fn no_cgroup_mount_and_unreadable_mount_table_are_explained() {
    let fake = Fake::new(&[
        "proc /proc proc rw 0 0",
        "cgroup /elsewhere cgroup rw,cpu 0 0",
    ]);
    let err = CgroupVersion::detect_with_mounts(&fake.root, &fake.mounts).unwrap_err();
    assert!(matches!(err, CgroupError::NoCgroupFs { .. }), "{err}");
    assert!(
        err.to_string().contains(fake.root.to_str().unwrap()),
        "{err}"
    );

    let missing = fake.root.join("no-such-mounts");
    let err = CgroupVersion::detect_with_mounts(&fake.root, &missing).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "cannot read the mount table {}",
            missing.display()
        )),
        "{err}"
    );
}

#[test]
fn quota_is_cores_times_the_period() {
    let q = |cores| {
        Limits {
            cpu_quota: Some(cores),
            ..Limits::default()
        }
        .quota_us()
    };
    assert_eq!(q(0.5).unwrap(), Some(50_000));
    assert_eq!(q(2.0).unwrap(), Some(200_000));
    assert_eq!(q(0.01).unwrap(), Some(1_000));
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 0.001] {
        let err = q(bad).unwrap_err();
        assert!(
            matches!(err, CgroupError::InvalidLimits { .. }),
            "{bad}: {err}"
        );
    }
}

#[test]
fn v1_create_writes_limits_into_each_hierarchy() {
    let fake = Fake::v1();
    let cg = Cgroup::create(&fake.layout(), "tp-host/tp-3", &full_limits()).unwrap();

    assert_eq!(
        fake.read("cpu,cpuacct/tp-host/tp-3/cpu.cfs_period_us"),
        "100000"
    );
    assert_eq!(
        fake.read("cpu,cpuacct/tp-host/tp-3/cpu.cfs_quota_us"),
        "50000"
    );
    // The intermediate cpuset parent gets its parent's CPUs and nodes, or
    // the kernel would refuse the child's.
    assert_eq!(fake.read("cpuset/tp-host/cpuset.cpus"), "0-3");
    assert_eq!(fake.read("cpuset/tp-host/cpuset.mems"), "0");
    assert_eq!(fake.read("cpuset/tp-host/tp-3/cpuset.cpus"), "1-2");
    assert_eq!(fake.read("cpuset/tp-host/tp-3/cpuset.mems"), "0");
    assert_eq!(
        fake.read("memory/tp-host/tp-3/memory.limit_in_bytes"),
        "67108864"
    );
    assert_eq!(fake.read("pids/tp-host/tp-3/pids.max"), "64");

    let procs: Vec<PathBuf> = ["cpu,cpuacct", "cpuset", "memory", "pids"]
        .iter()
        .map(|h| fake.root.join(h).join("tp-host/tp-3/cgroup.procs"))
        .collect();
    assert_eq!(cg.procs_path(), procs);
    assert_eq!(cg.created().len(), 8);

    cg.remove().unwrap();
    for h in ["cpu,cpuacct", "cpuset", "memory", "pids"] {
        assert!(
            !fake.root.join(h).join("tp-host").exists(),
            "{h}/tp-host left"
        );
    }
}

#[test]
fn v1_mems_from_the_placement_replace_the_parents() {
    let fake = Fake::v1();
    let limits = Limits {
        cpus: Some(vec![3]),
        ..Limits::default()
    };
    let cg = Cgroup::create_on_nodes(&fake.layout(), "tp-7", &limits, &[1]).unwrap();
    assert_eq!(fake.read("cpuset/tp-7/cpuset.cpus"), "3");
    assert_eq!(fake.read("cpuset/tp-7/cpuset.mems"), "1");
    // No quota: the cpu hierarchy is joined for accounting only.
    assert!(!fake.root.join("cpu,cpuacct/tp-7/cpu.cfs_quota_us").exists());
    cg.remove().unwrap();
}

#[test]
fn v2_create_enables_controllers_down_the_path_and_writes_limits() {
    let fake = Fake::v2("cpuset cpu io memory pids\n");
    let cg = Cgroup::create_on_nodes(&fake.layout(), "tp-host/tp-3", &full_limits(), &[0]).unwrap();

    for parent in ["cgroup.subtree_control", "tp-host/cgroup.subtree_control"] {
        let mut on: Vec<String> = fake
            .read(parent)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        on.sort();
        assert_eq!(on, ["+cpu", "+cpuset", "+memory", "+pids"], "{parent}");
    }
    assert_eq!(fake.read("tp-host/tp-3/cpu.max"), "50000 100000");
    assert_eq!(fake.read("tp-host/tp-3/memory.max"), "67108864");
    assert_eq!(fake.read("tp-host/tp-3/pids.max"), "64");
    assert_eq!(fake.read("tp-host/tp-3/cpuset.cpus"), "1-2");
    assert_eq!(fake.read("tp-host/tp-3/cpuset.mems"), "0");
    assert_eq!(
        cg.procs_path(),
        vec![fake.root.join("tp-host/tp-3/cgroup.procs")]
    );
    cg.remove().unwrap();
    assert!(!fake.root.join("tp-host").exists());
}

#[test]
fn v2_controllers_already_enabled_are_not_written_again() {
    let fake = Fake::v2("cpu memory\n");
    fs::write(fake.root.join("cgroup.subtree_control"), "cpu memory\n").unwrap();
    let cg = Cgroup::create(&fake.layout(), "tp-1", &Limits::default()).unwrap();
    assert_eq!(fake.read("cgroup.subtree_control"), "cpu memory");
    cg.remove().unwrap();
}

#[test]
fn names_without_the_tp_prefix_are_refused_and_nothing_is_created() {
    let fake = Fake::v1();
    let before = fake.listing();
    for name in [
        "web-1",
        "",
        "tp-host/web-1",
        "tp-host/../etc",
        "/tp-1",
        "tp-1/",
        "tp a",
        "tp-host//tp-1",
    ] {
        let err = Cgroup::create(&fake.layout(), name, &Limits::default()).unwrap_err();
        assert!(
            matches!(err, CgroupError::InvalidName { .. }),
            "{name:?}: {err}"
        );
        assert!(err.to_string().contains(&format!("{name:?}")), "{err}");
    }
    assert_eq!(fake.listing(), before);
}

#[test]
fn an_existing_leaf_is_refused() {
    let fake = Fake::v2("cpu memory");
    fs::create_dir(fake.root.join("tp-1")).unwrap();
    let err = Cgroup::create(&fake.layout(), "tp-1", &Limits::default()).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "cannot create {}",
            fake.root.join("tp-1").display()
        )),
        "{err}"
    );
    assert!(
        fake.root.join("tp-1").exists(),
        "someone else's cgroup was removed"
    );
}

#[test]
fn failed_create_removes_what_it_made_and_names_the_file() {
    let fake = Fake::v1();
    fs::remove_file(fake.root.join("cpuset/cpuset.mems")).unwrap();
    let before = fake.listing();
    let err = Cgroup::create(&fake.layout(), "tp-host/tp-1", &full_limits()).unwrap_err();
    let mems = fake.root.join("cpuset/cpuset.mems");
    assert!(
        err.to_string()
            .starts_with(&format!("cannot read {}", mems.display())),
        "{err}"
    );
    assert_eq!(fake.listing(), before, "create left directories behind");
}

#[test]
fn write_errors_name_the_value_and_the_file() {
    let fake = Fake::v2("cpu memory");
    let file = fake.root.join("tp-1/cpuset.cpus");
    // A directory where a control file should be: the write fails.
    fs::create_dir_all(&file).unwrap();
    let err = write_control(&file, "0-1", true).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("cannot write 0-1 to {}: ", file.display())),
        "{err}"
    );
}

#[test]
fn usage_is_read_from_v1_files() {
    let fake = Fake::v1();
    let cg = Cgroup::create(&fake.layout(), "tp-1", &Limits::default()).unwrap();
    fs::write(
        fake.root.join("cpu,cpuacct/tp-1/cpuacct.usage"),
        "123456789\n",
    )
    .unwrap();
    fs::write(
        fake.root.join("memory/tp-1/memory.usage_in_bytes"),
        "4096\n",
    )
    .unwrap();
    fs::write(
        fake.root.join("memory/tp-1/memory.oom_control"),
        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
    )
    .unwrap();
    assert_eq!(
        cg.try_usage().unwrap(),
        Usage {
            cpu_usage_ns: 123_456_789,
            memory_bytes: 4096,
            oom_kills: 2
        }
    );
    cg.remove().unwrap();
}

#[test]
fn usage_is_read_from_v2_files() {
    let fake = Fake::v2("cpu memory");
    let cg = Cgroup::create(&fake.layout(), "tp-1", &Limits::default()).unwrap();
    fs::write(
        fake.root.join("tp-1/cpu.stat"),
        "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
    )
    .unwrap();
    fs::write(fake.root.join("tp-1/memory.current"), "8192\n").unwrap();
    fs::write(
        fake.root.join("tp-1/memory.events"),
        "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n",
    )
    .unwrap();
    assert_eq!(cg.try_usage().unwrap(), cg.usage());
    assert_eq!(
        cg.usage(),
        Usage {
            cpu_usage_ns: 1_500_000,
            memory_bytes: 8192,
            oom_kills: 1
        }
    );
    fs::write(fake.root.join("tp-1/cpu.stat"), "user_usec 1000\n").unwrap();
    let err = cg.try_usage().unwrap_err();
    assert!(err.to_string().contains("usage_usec"), "{err}");
    // Sampling goes on with what can be read.
    assert_eq!(cg.usage().cpu_usage_ns, 0);
    assert_eq!(cg.usage().memory_bytes, 8192);
    cg.remove().unwrap();
}

#[test]
fn join_from_child_writes_zero_into_every_procs_file() {
    let fake = Fake::v1();
    let cg = Cgroup::create(&fake.layout(), "tp-1", &Limits::default()).unwrap();
    let files = cg.open_procs().unwrap();
    let fds: Vec<RawFd> = files.iter().map(AsRawFd::as_raw_fd).collect();
    assert_eq!(fds.len(), 2);
    join_from_child(&fds).unwrap();
    for path in cg.procs_path() {
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "0",
            "{}",
            path.display()
        );
    }
    assert_eq!(join_from_child(&[-1]), Err(libc::EBADF));
    drop(files);
    cg.remove().unwrap();
}

#[test]
fn remove_stale_removes_only_matching_top_level_cgroups() {
    let fake = Fake::v1();
    let ours = ["cpu,cpuacct", "cpuset", "memory", "pids"];
    for h in ours {
        fs::create_dir_all(fake.root.join(h).join("tp-old/tp-1")).unwrap();
        fs::create_dir_all(fake.root.join(h).join("system.slice")).unwrap();
        // Another host whose name starts with the same letters.
        fs::create_dir_all(fake.root.join(h).join("tp-old1/tp-1")).unwrap();
    }
    fs::create_dir_all(fake.root.join("systemd/tp-old")).unwrap();
    let layout = fake.layout();

    let removed = remove_stale(&layout, "tp-old").unwrap();
    let expected: Vec<PathBuf> = ours
        .iter()
        .map(|h| fake.root.join(h).join("tp-old"))
        .collect();
    assert_eq!(removed, expected);
    for h in ours {
        assert!(!fake.root.join(h).join("tp-old").exists());
        assert!(fake.root.join(h).join("system.slice").exists());
        assert!(
            fake.root.join(h).join("tp-old1/tp-1").exists(),
            "a host whose name only starts the same is not stale"
        );
    }
    // Not a hierarchy tickpack uses: left alone.
    assert!(fake.root.join("systemd/tp-old").exists());

    for bad in ["", "t", "system", "tp/x"] {
        let err = remove_stale(&layout, bad).unwrap_err();
        assert!(matches!(err, CgroupError::InvalidName { .. }), "{bad:?}");
    }
    assert!(remove_stale(&layout, "tp-old").unwrap().is_empty());
}

#[test]
fn remove_leaves_a_shared_parent_that_still_has_children() {
    let fake = Fake::v2("cpu memory");
    let layout = fake.layout();
    let a = Cgroup::create(&layout, "tp-host/tp-0", &Limits::default()).unwrap();
    let b = Cgroup::create(&layout, "tp-host/tp-1", &Limits::default()).unwrap();
    assert_eq!(b.created().len(), 1, "tp-host was made by the first");
    a.remove().unwrap();
    assert!(fake.root.join("tp-host/tp-1").exists());
    b.remove().unwrap();
    assert!(
        !fake.root.join("tp-host").exists(),
        "the last one out removes the parent"
    );
}

#[test]
fn the_guards_actuators_write_quota_cpus_and_idle_on_v1() {
    let fake = Fake::v1();
    let cg = Cgroup::create(&fake.layout(), "tpg/tpg-batch", &full_limits()).unwrap();
    cg.set_cpu_quota(Some(0.25)).unwrap();
    assert_eq!(
        fake.read("cpu,cpuacct/tpg/tpg-batch/cpu.cfs_quota_us"),
        "25000"
    );
    assert_eq!(
        fake.read("cpu,cpuacct/tpg/tpg-batch/cpu.cfs_period_us"),
        "100000"
    );
    // Zero is the kernel's smallest quota: 1 ms per 100 ms.
    cg.set_cpu_quota(Some(0.0)).unwrap();
    assert_eq!(
        fake.read("cpu,cpuacct/tpg/tpg-batch/cpu.cfs_quota_us"),
        "1000"
    );
    cg.set_cpu_quota(None).unwrap();
    assert_eq!(
        fake.read("cpu,cpuacct/tpg/tpg-batch/cpu.cfs_quota_us"),
        "-1"
    );
    cg.set_cpus(&[2, 3]).unwrap();
    assert_eq!(fake.read("cpuset/tpg/tpg-batch/cpuset.cpus"), "2-3");
    assert_eq!(cg.set_idle(true).unwrap(), "cpu.shares 2");
    assert_eq!(fake.read("cpu,cpuacct/tpg/tpg-batch/cpu.shares"), "2");
    fs::write(
        fake.root.join("cpu,cpuacct/tpg/tpg-batch/cpu.stat"),
        "nr_periods 10\nnr_throttled 4\nthrottled_time 5000000\n",
    )
    .unwrap();
    let t = cg.throttling().unwrap();
    assert_eq!((t.nr_throttled, t.throttled_ns), (4, 5_000_000));
    assert!(cg.cpu_pressure().unwrap_err().contains("v1"));
}

#[test]
fn v1_batch_cgroup_was_not_idle_although_the_kernel_has_cpu_idle() {
    // Since 5.15 v1's cpu controller has `cpu.idle` too. A group with the
    // lowest cpu.shares only is not idle: the kernel does not preempt it at
    // once when a server wakes, so its SCHED_IDLE tasks could hold a server
    // core for a slice.
    let fake = Fake::v1();
    let cg = Cgroup::create(&fake.layout(), "tpg/tpg-batch", &full_limits()).unwrap();
    fs::write(fake.root.join("cpu,cpuacct/tpg/tpg-batch/cpu.idle"), "0").unwrap();
    assert_eq!(cg.set_idle(true).unwrap(), "cpu.idle 1");
    assert_eq!(fake.read("cpu,cpuacct/tpg/tpg-batch/cpu.idle"), "1");
    assert_eq!(cg.set_idle(false).unwrap(), "cpu.idle 0");
    assert_eq!(fake.read("cpu,cpuacct/tpg/tpg-batch/cpu.idle"), "0");
}

#[test]
fn the_guards_actuators_write_quota_cpus_and_idle_on_v2() {
    let fake = Fake::v2("cpuset cpu memory pids");
    let cg = Cgroup::create(&fake.layout(), "tpg/tpg-batch", &full_limits()).unwrap();
    cg.set_cpu_quota(Some(1.5)).unwrap();
    assert_eq!(fake.read("tpg/tpg-batch/cpu.max"), "150000 100000");
    cg.set_cpu_quota(None).unwrap();
    assert_eq!(fake.read("tpg/tpg-batch/cpu.max"), "max 100000");
    cg.set_cpus(&[1]).unwrap();
    assert_eq!(fake.read("tpg/tpg-batch/cpuset.cpus"), "1");
    // Without cpu.idle (before 5.15): the lowest weight.
    assert_eq!(cg.set_idle(true).unwrap(), "cpu.weight 1");
    fs::write(fake.root.join("tpg/tpg-batch/cpu.idle"), "0").unwrap();
    assert_eq!(cg.set_idle(true).unwrap(), "cpu.idle 1");
    assert_eq!(fake.read("tpg/tpg-batch/cpu.idle"), "1");
    fs::write(
        fake.root.join("tpg/tpg-batch/cpu.stat"),
        "usage_usec 7\nnr_throttled 2\nthrottled_usec 300\n",
    )
    .unwrap();
    let t = cg.throttling().unwrap();
    assert_eq!((t.nr_throttled, t.throttled_ns), (2, 300_000));
    assert_eq!(cg.cpu_usage_ns(), Some(7_000));
    fs::write(
        fake.root.join("tpg/tpg-batch/cpu.pressure"),
        "some avg10=1.50 avg60=0 avg300=0 total=1\nfull avg10=0 avg60=0 avg300=0 total=0\n",
    )
    .unwrap();
    assert_eq!(cg.cpu_pressure(), Ok(1.5));
}

#[test]
fn an_adopted_cgroup_must_exist_and_stay_below_the_root() {
    let fake = Fake::v2("cpuset cpu memory");
    fs::create_dir_all(fake.root.join("ci/runner")).unwrap();
    let cg = Cgroup::adopt(&fake.layout(), Path::new("/ci/runner")).unwrap();
    cg.set_cpu_quota(Some(0.5)).unwrap();
    assert_eq!(fake.read("ci/runner/cpu.max"), "50000 100000");
    assert!(Cgroup::adopt(&fake.layout(), Path::new("ci/nothing")).is_err());
    assert!(Cgroup::adopt(&fake.layout(), Path::new("ci/../..")).is_err());
    assert!(Cgroup::adopt(&fake.layout(), Path::new("/")).is_err());
}
