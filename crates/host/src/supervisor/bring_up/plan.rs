//! The order a fleet comes up in, decided without doing any of it: from
//! the fleet's [`Shape`] (its backend, batch work, health checks, how many
//! instances), [`plan`] lists the [`Step`]s that `bring_up.rs` then takes
//! one by one, returning at the first failure ([`run`]). No syscall, no
//! clock: the tests below pin the order and what a shape leaves out,
//! without root.
//!
//! The order and its reasons:
//! - the run dir's directories and record first: what follows is
//!   recorded there;
//! - the uid block (netns) before anything owned by or run as one of its
//!   uids;
//! - placement, then the batch's plan on the CPUs not reserved;
//! - cgroups (their layout) and the network (netns), with the network's
//!   firewall before any instance exists behind it;
//! - per instance, in the config's order: its directory, its disk (netns),
//!   its cgroup (netns), then its record; every instance is made before
//!   any is spawned;
//! - with health checks, the routes to the instances (netns) and each
//!   instance's check socket, before the spawns;
//! - the spawns, in the config's order;
//! - the batch's start (its cgroup and commands) after the servers';
//! - the control socket last: a `down` or `status` finds a fleet that is
//!   up.

/// What decides the order: the fleet as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    /// The netns backend (root): a uid block, cgroups, a network, tenant
    /// disks.
    pub netns: bool,
    /// Batch work (`--batch` commands or `--batch-cgroup`).
    pub batch: bool,
    /// Health checks (anything but `--health none`): a socket per
    /// instance.
    pub checked: bool,
    /// How many instances (index `k` is the config's `k`-th).
    pub instances: usize,
}

/// One step of the way up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// `instances/` and `logs/` (private), the last run's logs cleared,
    /// the record written.
    RunDir,
    /// The host's block of instance uids (netns).
    UidBlock,
    /// The CPU topology read, the reserved CPUs and the placement.
    Placement,
    /// The batch's plan on the servers' CPUs, with its policy (batch
    /// work only; nothing started yet).
    Batch,
    /// The cgroup layout found (netns).
    CgroupLayout,
    /// The network: its namespaces and paths, journaled in the record
    /// (netns).
    Network,
    /// The instances' firewall (netns).
    Firewall,
    /// Instance `k`'s directory.
    InstanceDir(usize),
    /// Instance `k`'s disk: its directory as its own tmpfs, its uid's
    /// (netns).
    TenantDisk(usize),
    /// Instance `k`'s cgroup, with its limits (netns).
    InstanceCgroup(usize),
    /// Instance `k` recorded: its address, CPUs, lifecycle.
    Instance(usize),
    /// A route to every instance's address checked (netns, with checks).
    Routes,
    /// Every instance's health-check socket (with checks).
    HealthSockets,
    /// Instance `k` spawned.
    Spawn(usize),
    /// The batch's cgroup made (or adopted) and its commands started
    /// (batch work only).
    BatchStart,
    /// The control socket bound.
    Control,
}

/// The steps that bring a fleet of `shape` up, in order.
pub(super) fn plan(shape: &Shape) -> Vec<Step> {
    let Shape {
        netns,
        batch,
        checked,
        instances,
    } = *shape;
    let mut steps = vec![Step::RunDir];
    if netns {
        steps.push(Step::UidBlock);
    }
    steps.push(Step::Placement);
    if batch {
        steps.push(Step::Batch);
    }
    if netns {
        steps.extend([Step::CgroupLayout, Step::Network, Step::Firewall]);
    }
    for k in 0..instances {
        steps.push(Step::InstanceDir(k));
        if netns {
            steps.extend([Step::TenantDisk(k), Step::InstanceCgroup(k)]);
        }
        steps.push(Step::Instance(k));
    }
    if checked {
        if netns {
            steps.push(Step::Routes);
        }
        steps.push(Step::HealthSockets);
    }
    steps.extend((0..instances).map(Step::Spawn));
    if batch {
        steps.push(Step::BatchStart);
    }
    steps.push(Step::Control);
    steps
}

/// Takes `steps` in order with `take`; the first failure ends the way up
/// (what was made is the caller's to tear down).
pub(super) fn run<E>(steps: &[Step], mut take: impl FnMut(Step) -> Result<(), E>) -> Result<(), E> {
    steps.iter().try_for_each(|&step| take(step))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Step::*;

    const NETNS: Shape = Shape {
        netns: true,
        batch: true,
        checked: true,
        instances: 2,
    };
    const PROCESS: Shape = Shape {
        netns: false,
        batch: false,
        checked: false,
        instances: 2,
    };

    fn at(steps: &[Step], step: Step) -> usize {
        crate::supervisor::position_in_plan(steps, step)
    }

    #[test]
    fn a_netns_fleet_comes_up_in_the_whole_order() {
        assert_eq!(
            plan(&NETNS),
            [
                RunDir,
                UidBlock,
                Placement,
                Batch,
                CgroupLayout,
                Network,
                Firewall,
                InstanceDir(0),
                TenantDisk(0),
                InstanceCgroup(0),
                Instance(0),
                InstanceDir(1),
                TenantDisk(1),
                InstanceCgroup(1),
                Instance(1),
                Routes,
                HealthSockets,
                Spawn(0),
                Spawn(1),
                BatchStart,
                Control,
            ]
        );
    }

    #[test]
    fn the_uid_block_comes_before_the_network_the_network_before_cgroups_cgroups_before_spawns() {
        let steps = plan(&NETNS);
        assert!(at(&steps, UidBlock) < at(&steps, Network));
        assert!(at(&steps, Network) < at(&steps, Firewall));
        for k in 0..NETNS.instances {
            assert!(at(&steps, Firewall) < at(&steps, InstanceCgroup(k)));
            assert!(at(&steps, InstanceCgroup(k)) < at(&steps, Spawn(0)));
            assert!(at(&steps, TenantDisk(k)) < at(&steps, Spawn(0)));
        }
    }

    #[test]
    fn the_run_dir_is_first_and_the_control_socket_last() {
        for batch in [false, true] {
            for checked in [false, true] {
                for netns in [false, true] {
                    let steps = plan(&Shape {
                        netns,
                        batch,
                        checked,
                        instances: 3,
                    });
                    assert_eq!(steps.first(), Some(&RunDir), "{steps:?}");
                    assert_eq!(steps.last(), Some(&Control), "{steps:?}");
                }
            }
        }
    }

    #[test]
    fn every_instance_is_made_before_any_is_spawned_and_they_go_in_config_order() {
        let steps = plan(&Shape {
            instances: 4,
            ..NETNS
        });
        let last_made = at(&steps, Instance(3));
        assert!(last_made < at(&steps, Spawn(0)));
        let spawns: Vec<Step> = steps
            .iter()
            .copied()
            .filter(|s| matches!(s, Spawn(_)))
            .collect();
        assert_eq!(spawns, [Spawn(0), Spawn(1), Spawn(2), Spawn(3)]);
        for k in 0..4 {
            // Its directory, its disk on it, its cgroup, its record.
            let own = [
                InstanceDir(k),
                TenantDisk(k),
                InstanceCgroup(k),
                Instance(k),
            ];
            let at_own: Vec<usize> = own.iter().map(|s| at(&steps, *s)).collect();
            assert!(at_own.windows(2).all(|w| w[1] == w[0] + 1), "{steps:?}");
        }
    }

    #[test]
    fn the_process_backend_takes_no_uid_block_no_network_no_cgroups_no_disks() {
        assert_eq!(
            plan(&PROCESS),
            [
                RunDir,
                Placement,
                InstanceDir(0),
                Instance(0),
                InstanceDir(1),
                Instance(1),
                Spawn(0),
                Spawn(1),
                Control,
            ]
        );
    }

    #[test]
    fn health_sockets_come_before_the_spawns_and_routes_only_with_a_network() {
        let checked = plan(&Shape {
            checked: true,
            ..PROCESS
        });
        assert!(!checked.contains(&Routes), "no network, no route to check");
        assert!(at(&checked, HealthSockets) < at(&checked, Spawn(0)));
        assert!(at(&checked, Instance(1)) < at(&checked, HealthSockets));
        let netns = plan(&NETNS);
        assert!(at(&netns, Routes) < at(&netns, HealthSockets));
        let unchecked = plan(&Shape {
            checked: false,
            ..NETNS
        });
        assert!(!unchecked.contains(&Routes) && !unchecked.contains(&HealthSockets));
    }

    #[test]
    fn the_batch_is_planned_after_placement_and_started_after_the_servers() {
        let steps = plan(&NETNS);
        assert!(at(&steps, Placement) < at(&steps, Batch));
        assert!(at(&steps, Batch) < at(&steps, CgroupLayout));
        assert!(at(&steps, Spawn(1)) < at(&steps, BatchStart));
        assert!(at(&steps, BatchStart) < at(&steps, Control));
        let none = plan(&Shape {
            batch: false,
            ..NETNS
        });
        assert!(!none.contains(&Batch) && !none.contains(&BatchStart));
        // Without root, batch work runs too (no cgroup of its own).
        let process = plan(&Shape {
            batch: true,
            ..PROCESS
        });
        assert!(at(&process, Placement) < at(&process, Batch));
        assert!(at(&process, Spawn(1)) < at(&process, BatchStart));
    }

    #[test]
    fn a_fleet_of_no_instances_still_has_its_run_dir_network_and_control_socket() {
        let steps = plan(&Shape {
            instances: 0,
            ..NETNS
        });
        assert!(!steps
            .iter()
            .any(|s| matches!(s, InstanceDir(_) | Spawn(_) | Instance(_))));
        assert!(steps.contains(&Network) && steps.contains(&Control));
    }

    #[test]
    fn the_first_failure_ends_the_way_up_and_no_later_step_is_taken() {
        let steps = plan(&NETNS);
        let mut taken = vec![];
        let r = run(&steps, |s| {
            taken.push(s);
            if s == InstanceCgroup(1) {
                Err("cgroup for instance 2: no space")
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err("cgroup for instance 2: no space"));
        assert_eq!(taken.last(), Some(&InstanceCgroup(1)));
        assert_eq!(taken[..], steps[..=at(&steps, InstanceCgroup(1))]);
        assert!(!taken.contains(&Spawn(0)), "nothing spawned");
        let mut all = vec![];
        assert_eq!(
            run(&steps, |s| {
                all.push(s);
                Ok::<(), ()>(())
            }),
            Ok(())
        );
        assert_eq!(all, steps);
    }
}
