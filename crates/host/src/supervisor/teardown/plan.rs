//! The order a fleet goes down in, decided without doing any of it: from
//! what was [`Made`] (a bring-up may have failed half way), [`plan`] lists
//! the [`Step`]s that `teardown.rs` takes one by one, and [`run`] goes on
//! past a step that failed, collecting what it says, and removes the run
//! dir only when nothing failed. No syscall, no clock: the tests below pin
//! the order and what is skipped, without root.
//!
//! The order: the batch first (it started last); every running instance
//! is sent its stop signal before any is waited for, so their grace times
//! run together and the wait is the longest of them; then per instance,
//! in order, its process gone (SIGKILL after the wait) before its cgroup
//! is removed; the tenants' directories; the host's cgroup tree; the
//! network (the live one, or the one in the record); the uid block; the
//! control socket; the run dir. That is the way up in reverse (per
//! instance: its process, its cgroup, its directory) but for the control
//! socket, bound last and closed after the uid block.

use std::fmt::Display;
use std::time::Duration;

/// What there is to take down.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Made {
    /// Batch work (its tenants, its cgroup).
    pub batch: bool,
    /// The instances, in order.
    pub instances: Vec<MadeInstance>,
    /// The cgroup layout was found: the host's cgroup tree may exist.
    pub cgroups: bool,
    /// The network.
    pub net: Net,
    /// A uid block is held.
    pub uid_block: bool,
}

/// One instance as it is when the teardown starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct MadeInstance {
    pub id: u32,
    /// Its process runs (spawned, not reaped): the grace time its stop
    /// signal gives it.
    pub running: Option<Duration>,
    /// It has a cgroup.
    pub cgroup: bool,
}

/// The network as the teardown finds it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Net {
    /// None was set up, nor recorded.
    #[default]
    None,
    /// The supervisor holds it.
    Live,
    /// Only its record is left (what was made of it is cleaned up from
    /// that).
    Recorded,
}

/// One step of the way down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Step {
    /// Stop the batch: its tenants, its cgroup (or give an adopted one
    /// back).
    Batch,
    /// Send every running instance its stop signal; the wait for them
    /// ends `grace` later.
    Signal { grace: Duration },
    /// Instance `k`'s process gone (waited for until the wait ends, then
    /// SIGKILL), its lifecycle stopped.
    Stop(usize),
    /// Instance `k`'s cgroup removed.
    InstanceCgroup { k: usize, id: u32 },
    /// Every tenant's directory emptied and removed (their logs stay).
    TenantDirs,
    /// The host's cgroup tree (`tp<name>`) removed.
    HostCgroups,
    /// The network taken down; [`Net::Recorded`]: cleaned up from its
    /// record.
    Network(Net),
    /// The uid block given back.
    UidBlock,
    /// The control socket closed and its file removed.
    ControlSocket,
    /// The records and emptied directories, and the run dir when tickpack
    /// made it: only when nothing before failed ([`run`]).
    RunDir,
}

impl Step {
    /// What this step says when it failed with `e`.
    pub(super) fn failed(&self, e: impl Display) -> String {
        match self {
            Step::InstanceCgroup { id, .. } => format!("cgroup of instance {id}: {e}"),
            Step::HostCgroups => format!("cgroups: {e}"),
            Step::Network(_) => format!("network: {e}"),
            // The others say their own (the batch, the directories) or
            // cannot fail.
            _ => e.to_string(),
        }
    }
}

/// The steps that take down what was `made`, in order.
pub(super) fn plan(made: &Made) -> Vec<Step> {
    let mut steps = vec![];
    if made.batch {
        steps.push(Step::Batch);
    }
    let grace = made.instances.iter().filter_map(|i| i.running).max();
    if let Some(grace) = grace {
        steps.push(Step::Signal { grace });
    }
    for (k, i) in made.instances.iter().enumerate() {
        steps.push(Step::Stop(k));
        if i.cgroup {
            steps.push(Step::InstanceCgroup { k, id: i.id });
        }
    }
    steps.push(Step::TenantDirs);
    if made.cgroups {
        steps.push(Step::HostCgroups);
    }
    if made.net != Net::None {
        steps.push(Step::Network(made.net));
    }
    if made.uid_block {
        steps.push(Step::UidBlock);
    }
    steps.extend([Step::ControlSocket, Step::RunDir]);
    steps
}

/// Takes every step of `steps` with `take`, whatever an earlier one said
/// (`take` returns its problems, each phrased with [`Step::failed`] or its
/// own words), but [`Step::RunDir`] only when none did. Returns all the
/// problems, in order.
pub(super) fn run(steps: &[Step], mut take: impl FnMut(Step) -> Vec<String>) -> Vec<String> {
    let mut problems = vec![];
    for &step in steps {
        if step == Step::RunDir && !problems.is_empty() {
            continue;
        }
        problems.extend(take(step));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use Step::*;

    fn running(id: u32, grace_s: u64) -> MadeInstance {
        MadeInstance {
            id,
            running: Some(Duration::from_secs(grace_s)),
            cgroup: true,
        }
    }

    fn everything() -> Made {
        Made {
            batch: true,
            instances: vec![running(1, 3), running(2, 10)],
            cgroups: true,
            net: Net::Live,
            uid_block: true,
        }
    }

    fn at(steps: &[Step], step: Step) -> usize {
        crate::supervisor::position_in_plan(steps, step)
    }

    #[test]
    fn a_whole_fleet_goes_down_in_the_whole_order() {
        assert_eq!(
            plan(&everything()),
            [
                Batch,
                Signal {
                    grace: Duration::from_secs(10)
                },
                Stop(0),
                InstanceCgroup { k: 0, id: 1 },
                Stop(1),
                InstanceCgroup { k: 1, id: 2 },
                TenantDirs,
                HostCgroups,
                Network(Net::Live),
                UidBlock,
                ControlSocket,
                RunDir,
            ]
        );
    }

    #[test]
    fn every_instance_is_signalled_before_any_is_waited_for_and_the_wait_is_the_longest_grace() {
        let made = Made {
            instances: vec![running(1, 3), running(2, 10), running(3, 5)],
            ..everything()
        };
        let steps = plan(&made);
        let signals: Vec<&Step> = steps
            .iter()
            .filter(|s| matches!(s, Signal { .. }))
            .collect();
        assert_eq!(
            signals,
            [&Signal {
                grace: Duration::from_secs(10)
            }],
            "one signal round, one wait: 10 s, not 3 + 10 + 5"
        );
        assert!(at(&steps, Batch) < at(&steps, *signals[0]));
        assert!(at(&steps, *signals[0]) < at(&steps, Stop(0)));
        // A stopped instance's grace does not count.
        let made = Made {
            instances: vec![
                running(1, 3),
                MadeInstance {
                    running: None,
                    ..running(2, 60)
                },
            ],
            ..everything()
        };
        assert!(plan(&made).contains(&Signal {
            grace: Duration::from_secs(3)
        }));
    }

    #[test]
    fn an_instances_process_is_gone_before_its_cgroup_is_removed() {
        let steps = plan(&everything());
        for (k, id) in [(0, 1), (1, 2)] {
            assert_eq!(
                at(&steps, InstanceCgroup { k, id }),
                at(&steps, Stop(k)) + 1,
                "{steps:?}"
            );
        }
    }

    #[test]
    fn host_wide_things_go_in_the_reverse_of_their_making() {
        let steps = plan(&everything());
        // Up: run dir, uid block, cgroups, network, instances, batch.
        let down = [
            Batch,
            Stop(1),
            InstanceCgroup { k: 1, id: 2 },
            TenantDirs,
            HostCgroups,
            Network(Net::Live),
            UidBlock,
            RunDir,
        ];
        let at_down: Vec<usize> = down.iter().map(|s| at(&steps, *s)).collect();
        assert!(at_down.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
        // The exception: the control socket, bound last, goes after the
        // uid block.
        assert_eq!(at(&steps, ControlSocket), at(&steps, UidBlock) + 1);
    }

    #[test]
    fn what_was_never_made_is_not_taken_down() {
        // A bring-up that failed taking its uid block: nothing but the run
        // dir was made.
        let steps = plan(&Made::default());
        assert_eq!(steps, [TenantDirs, ControlSocket, RunDir]);
        // Instances made, none spawned (a failure before the spawns): no
        // signal, no wait; still each is stopped and its cgroup removed.
        let made = Made {
            batch: false,
            instances: vec![MadeInstance {
                id: 1,
                running: None,
                cgroup: true,
            }],
            ..everything()
        };
        let steps = plan(&made);
        assert!(!steps.iter().any(|s| matches!(s, Signal { .. } | Batch)));
        assert!(steps.contains(&Stop(0)) && steps.contains(&InstanceCgroup { k: 0, id: 1 }));
        // An instance without a cgroup (the process backend, or its cgroup
        // failed): none removed.
        let made = Made {
            instances: vec![MadeInstance {
                cgroup: false,
                ..running(1, 3)
            }],
            cgroups: false,
            net: Net::None,
            uid_block: false,
            batch: false,
        };
        assert_eq!(
            plan(&made),
            [
                Signal {
                    grace: Duration::from_secs(3)
                },
                Stop(0),
                TenantDirs,
                ControlSocket,
                RunDir,
            ]
        );
    }

    #[test]
    fn a_network_only_in_the_record_is_cleaned_up_from_it() {
        let made = Made {
            net: Net::Recorded,
            ..everything()
        };
        let steps = plan(&made);
        assert!(steps.contains(&Network(Net::Recorded)));
        assert!(!steps.contains(&Network(Net::Live)));
        assert!(at(&steps, HostCgroups) < at(&steps, Network(Net::Recorded)));
    }

    #[test]
    fn a_failing_step_is_reported_and_the_rest_still_taken_but_the_run_dir_stays() {
        let steps = plan(&everything());
        let mut taken = vec![];
        let problems = run(&steps, |s| {
            taken.push(s);
            match s {
                InstanceCgroup { id: 1, .. } => vec![s.failed("Device or resource busy")],
                Network(_) => vec![s.failed("deleting tpx-1: busy")],
                _ => vec![],
            }
        });
        assert_eq!(
            problems,
            [
                "cgroup of instance 1: Device or resource busy",
                "network: deleting tpx-1: busy",
            ]
        );
        // Everything after the failures was still taken, but the run dir
        // (its records say what is left to remove).
        assert_eq!(taken[..], steps[..steps.len() - 1]);
        assert!(!taken.contains(&RunDir));
    }

    #[test]
    fn with_nothing_failed_the_run_dir_goes_last() {
        let steps = plan(&everything());
        let mut taken = vec![];
        let problems = run(&steps, |s| {
            taken.push(s);
            vec![]
        });
        assert!(problems.is_empty());
        assert_eq!(taken, steps);
        assert_eq!(taken.last(), Some(&RunDir));
    }

    #[test]
    fn problems_a_step_words_itself_are_kept_as_they_are_in_order() {
        let steps = plan(&everything());
        let problems = run(&steps, |s| match s {
            Batch => vec!["batch cgroup: busy".into()],
            TenantDirs => vec![
                "removing /run/tp/instances/1: busy".into(),
                "removing /run/tp/batch/1: busy".into(),
            ],
            HostCgroups => vec![s.failed("busy")],
            _ => vec![],
        });
        assert_eq!(
            problems,
            [
                "batch cgroup: busy",
                "removing /run/tp/instances/1: busy",
                "removing /run/tp/batch/1: busy",
                "cgroups: busy",
            ]
        );
    }
}
