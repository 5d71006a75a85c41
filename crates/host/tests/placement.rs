//! Placement on fake /sys trees: what a user would see in the placement
//! table of a run (which instance runs where, what is kept for the host).

use std::fs;
use std::path::Path;

use tickpack_host::placement::{
    default_reserved, format_cpu_list, plan, Policy, Topology, DEFAULT_SYS_ROOT,
};

/// Writes a fake sysfs with `nodes` NUMA nodes of `cores` cores of `threads`
/// threads each, numbered like Linux numbers x86 servers: all first threads
/// (node 0's cores, then node 1's), then all second threads.
fn fake_sys(root: &Path, nodes: usize, cores: usize, threads: usize, with_node_dir: bool) {
    let per_thread = nodes * cores;
    let total = per_thread * threads;
    let cpu_dir = root.join("devices/system/cpu");
    fs::create_dir_all(&cpu_dir).unwrap();
    fs::write(cpu_dir.join("online"), format!("0-{}\n", total - 1)).unwrap();
    for node in 0..nodes {
        let mut node_cpus = Vec::new();
        for core in 0..cores {
            let siblings: Vec<usize> = (0..threads)
                .map(|t| t * per_thread + node * cores + core)
                .collect();
            for &cpu in &siblings {
                let topo = cpu_dir.join(format!("cpu{cpu}/topology"));
                fs::create_dir_all(&topo).unwrap();
                let list = format_cpu_list(&siblings) + "\n";
                fs::write(topo.join("thread_siblings_list"), &list).unwrap();
                fs::write(topo.join("core_cpus_list"), &list).unwrap();
            }
            node_cpus.extend(siblings);
        }
        if with_node_dir {
            let dir = root.join(format!("devices/system/node/node{node}"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("cpulist"), format_cpu_list(&node_cpus) + "\n").unwrap();
        }
    }
}

/// 2 nodes x 4 cores x 2 threads: CPUs 0-3 node 0, 4-7 node 1, 8-15 their
/// siblings (CPU n + 8 shares a core with CPU n).
fn big_server() -> (tempfile::TempDir, Topology) {
    let dir = tempfile::tempdir().unwrap();
    fake_sys(dir.path(), 2, 4, 2, true);
    let topo = Topology::read(dir.path()).unwrap();
    (dir, topo)
}

/// A 2-CPU single-node VM like the development machine: no node
/// directory, only the older `thread_siblings_list`.
fn small_vm() -> (tempfile::TempDir, Topology) {
    let dir = tempfile::tempdir().unwrap();
    fake_sys(dir.path(), 1, 2, 1, false);
    for cpu in 0..2 {
        fs::remove_file(dir.path().join(format!(
            "devices/system/cpu/cpu{cpu}/topology/core_cpus_list"
        )))
        .unwrap();
    }
    let topo = Topology::read(dir.path()).unwrap();
    (dir, topo)
}

fn cpus_of(p: &tickpack_host::placement::Placement) -> Vec<usize> {
    p.instances
        .iter()
        .map(|i| {
            assert_eq!(i.cpus.len(), 1, "instance {} got {:?}", i.id, i.cpus);
            i.cpus[0]
        })
        .collect()
}

#[test]
fn two_node_server_topology_is_read_with_nodes_and_siblings() {
    let (_dir, topo) = big_server();
    assert_eq!(topo.online(), (0..16).collect::<Vec<_>>());
    assert_eq!(topo.nodes(), vec![0, 1]);
    assert_eq!(topo.cores(), 8);
    let cpu9 = topo.cpu(9).unwrap();
    assert_eq!(cpu9.node, 0);
    assert_eq!(cpu9.siblings, vec![1, 9]);
    assert_eq!(cpu9.core, 1);
    assert_eq!(topo.cpu(12).unwrap().node, 1);
    assert_eq!(default_reserved(&topo), vec![0]);
}

#[test]
fn small_vm_without_node_directory_is_one_node() {
    let (_dir, topo) = small_vm();
    assert_eq!(topo.online(), vec![0, 1]);
    assert_eq!(topo.nodes(), vec![0]);
    assert_eq!(topo.cores(), 2);
    assert_eq!(default_reserved(&topo), vec![0]);
}

#[test]
fn missing_topology_files_mean_one_cpu_per_core() {
    let dir = tempfile::tempdir().unwrap();
    let cpu_dir = dir.path().join("devices/system/cpu");
    fs::create_dir_all(&cpu_dir).unwrap();
    fs::write(cpu_dir.join("online"), "0-2\n").unwrap();
    let topo = Topology::read(dir.path()).unwrap();
    assert_eq!(topo.cores(), 3);
    assert_eq!(topo.cpu(2).unwrap().siblings, vec![2]);
}

#[test]
fn unreadable_or_bad_sysfs_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = Topology::read(dir.path()).unwrap_err().to_string();
    let online = dir.path().join("devices/system/cpu/online");
    assert!(
        err.starts_with(&format!("cannot read {}", online.display())),
        "{err}"
    );
    fs::create_dir_all(online.parent().unwrap()).unwrap();
    fs::write(&online, "0-x\n").unwrap();
    let err = Topology::read(dir.path()).unwrap_err().to_string();
    assert!(err.contains("\"0-x\"") && err.contains("online"), "{err}");
}

#[test]
fn this_machine_topology_is_readable() {
    let topo = Topology::read(Path::new(DEFAULT_SYS_ROOT)).unwrap();
    let online = fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    assert_eq!(format_cpu_list(&topo.online()), online.trim());
    assert!(!topo.nodes().is_empty());
}

#[test]
fn spread_alternates_nodes_then_cores() {
    let (_dir, topo) = big_server();
    let p = plan(&topo, 8, Policy::Spread, &[]).unwrap();
    let nodes: Vec<Option<usize>> = p.instances.iter().map(|i| i.node).collect();
    let expected: Vec<Option<usize>> = (0..8).map(|i| Some(i % 2)).collect();
    assert_eq!(nodes, expected);
    assert_eq!(cpus_of(&p), vec![0, 4, 1, 5, 2, 6, 3, 7]);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn pack_fills_node_0_first() {
    let (_dir, topo) = big_server();
    let p = plan(&topo, 6, Policy::Pack, &[]).unwrap();
    assert_eq!(cpus_of(&p), vec![0, 1, 2, 3, 4, 5]);
    let nodes: Vec<Option<usize>> = p.instances.iter().map(|i| i.node).collect();
    assert_eq!(
        nodes,
        vec![Some(0), Some(0), Some(0), Some(0), Some(1), Some(1)]
    );
}

#[test]
fn siblings_are_used_only_after_all_physical_cores() {
    let (_dir, topo) = big_server();
    for policy in [Policy::Spread, Policy::Pack] {
        let p = plan(&topo, 16, policy, &[]).unwrap();
        let cpus = cpus_of(&p);
        let cores: Vec<usize> = cpus[..8]
            .iter()
            .map(|&c| topo.cpu(c).unwrap().core)
            .collect();
        let mut distinct = cores.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 8, "{policy}: first 8 share cores: {cpus:?}");
        assert!(
            cpus[8..].iter().all(|&c| c >= 8),
            "{policy}: siblings before cores: {cpus:?}"
        );
        let mut all = cpus.clone();
        all.sort_unstable();
        assert_eq!(all, (0..16).collect::<Vec<_>>(), "{policy}");
    }
}

#[test]
fn reserved_cpus_are_never_given_and_their_siblings_come_last() {
    let (_dir, topo) = big_server();
    for policy in [Policy::Spread, Policy::Pack, Policy::None] {
        let p = plan(&topo, 40, policy, &[0, 5]).unwrap();
        assert_eq!(p.reserved, vec![0, 5]);
        for i in &p.instances {
            assert!(
                !i.cpus.contains(&0) && !i.cpus.contains(&5),
                "{policy}: instance {} got reserved CPUs {:?}",
                i.id,
                i.cpus
            );
        }
    }
    // CPU 8 shares a core with the reserved CPU 0, CPU 13 with CPU 5: they
    // are handed out only after the 6 free physical cores.
    let p = plan(&topo, 14, Policy::Spread, &[0, 5]).unwrap();
    let cpus = cpus_of(&p);
    let first_shared = cpus.iter().position(|&c| c == 8 || c == 13).unwrap();
    assert!(first_shared >= 6, "{cpus:?}");
}

#[test]
fn two_cpus_with_cpu0_reserved_put_five_instances_on_cpu1() {
    let (_dir, topo) = small_vm();
    let reserved = default_reserved(&topo);
    assert_eq!(reserved, vec![0]);
    for policy in [Policy::Spread, Policy::Pack] {
        let p = plan(&topo, 5, policy, &reserved).unwrap();
        assert_eq!(cpus_of(&p), vec![1; 5], "{policy}");
        assert!(p.instances.iter().all(|i| i.node == Some(0)));
        assert!(
            p.warnings.iter().any(|w| w.contains("oversubscribed")),
            "{policy}: oversubscription is allowed but said: {:?}",
            p.warnings
        );
    }
}

#[test]
fn none_gives_every_instance_all_non_reserved_cpus() {
    let (_dir, topo) = big_server();
    let p = plan(&topo, 3, Policy::None, &[0]).unwrap();
    for i in &p.instances {
        assert_eq!(i.cpus, (1..16).collect::<Vec<_>>());
        assert_eq!(i.node, None, "the CPUs span both nodes");
    }
    let (_dir, vm) = small_vm();
    let p = plan(&vm, 2, Policy::None, &[0]).unwrap();
    assert!(p
        .instances
        .iter()
        .all(|i| i.cpus == [1] && i.node == Some(0)));
}

#[test]
fn reserving_every_cpu_falls_back_to_all_cpus_with_a_warning() {
    let (_dir, topo) = small_vm();
    let p = plan(&topo, 2, Policy::Spread, &[0, 1]).unwrap();
    assert_eq!(cpus_of(&p), vec![0, 1]);
    assert!(
        p.warnings.iter().any(|w| w.contains("no CPU is left")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_reserved_cpu_that_is_not_online_is_an_error() {
    let (_dir, topo) = small_vm();
    let err = plan(&topo, 1, Policy::Spread, &[7])
        .unwrap_err()
        .to_string();
    assert_eq!(err, "reserved CPU 7 is not an online CPU (online: 0-1)");
}

#[test]
fn placement_is_recorded_as_json_and_reads_back() {
    let (_dir, topo) = big_server();
    let p = plan(&topo, 2, Policy::Spread, &[0]).unwrap();
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["policy"], "spread");
    assert_eq!(json["reserved"], serde_json::json!([0]));
    assert_eq!(
        json["instances"][0],
        serde_json::json!({"id": 0, "cpus": [1], "node": 0})
    );
    assert_eq!(
        json["instances"][1],
        serde_json::json!({"id": 1, "cpus": [4], "node": 1})
    );
    let back: tickpack_host::placement::Placement = serde_json::from_value(json).unwrap();
    assert_eq!(back, p);
}

#[test]
fn zero_instances_is_an_empty_placement() {
    let (_dir, topo) = small_vm();
    let p = plan(&topo, 0, Policy::Spread, &[0]).unwrap();
    assert!(p.instances.is_empty());
}
