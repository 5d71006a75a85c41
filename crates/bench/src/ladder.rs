//! The ladder: add tiles of servers step by step until a QoS limit fails.
//!
//! Step `n` runs `n x tile` servers through a [`StepRunner`] (the real one,
//! [`crate::step::HostStepRunner`], brings up servers and players; tests
//! script one). The ladder decides what to run next and what it found: a
//! failing step is run again when asked to confirm it, the first step's p99
//! is the baseline of the later ones, the largest passing step is the
//! maximum density and the largest within the headroom target the
//! recommended one, and it stops `steps_past_failure` steps after the first
//! failure, at the last step, or when interrupted.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tickpack_host::fleet::Backend;
use tickpack_host::guard::BatchControl;
use tickpack_host::netpath::NetKind;
use tickpack_host::placement::Policy;
use tickpack_report::bench::{BenchSettings, Ladder, Step};

use crate::power::PowerSource;
use crate::step::HostStepRunner;
use crate::BenchError;

/// One variant to climb (a comparison runs several).
#[derive(Debug, Clone, PartialEq)]
pub struct LadderSpec {
    pub label: String,
    pub backend: Backend,
    pub net: NetKind,
    pub placement: Policy,
    /// Batch work beside the servers (`--batch`) and how it is held back;
    /// `None`: no batch in this variant.
    pub batch: Option<BatchControl>,
}

/// Where and how to run, shared by all ladders of a run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub settings: BenchSettings,
    /// CPUs kept for the load generator (and the host).
    pub load_generator_cpus: Vec<usize>,
    /// CPUs the servers may use.
    pub server_cpus: Vec<usize>,
    /// The tickpack binary (servers are `tickpack server`).
    pub exe: PathBuf,
    /// Run dir of the temporary hosts.
    pub run_dir: PathBuf,
    /// Host name prefixing everything created ("tp<name>...").
    pub host_name: String,
    /// Instance address range (netns); `None`: the host's default.
    pub range: Option<String>,
    /// The game server the steps run.
    pub game: crate::GameServer,
    /// Batch commands (`--batch`) for the variants that run batch work.
    pub batch: Vec<String>,
}

/// Told about progress (a progress bar, a log line).
pub trait Observer {
    fn step_started(&mut self, ladder: &str, index: u32, servers: u32);
    /// After every finished step, with the ladder so far.
    fn step_finished(&mut self, ladder: &Ladder);
    /// Something worth telling the person running the benchmark.
    fn note(&mut self, _msg: &str) {}
}

/// What the ladder asks of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRequest {
    /// 1-based step number (= tiles).
    pub index: u32,
    pub servers: u32,
    /// p99 transaction latency of the first step (µs), once it ran.
    pub baseline: Option<u64>,
}

/// Runs ladder steps (hyperfine's `Executor`): the real runner brings up
/// servers and players, a test scripts the outcomes.
pub trait StepRunner {
    /// Runs one step and judges it; `None` when it was interrupted (the
    /// step is then not recorded).
    fn run_step(
        &mut self,
        spec: &LadderSpec,
        req: &StepRequest,
    ) -> Result<Option<Step>, BenchError>;
    /// True once the run should stop (Ctrl-C): no further step starts.
    fn stop_requested(&self) -> bool;
}

/// Climbs one ladder with real servers. Returns the ladder with every
/// finished step; an interrupted step (Ctrl-C) is not recorded.
pub fn run_ladder(
    plan: &Plan,
    spec: &LadderSpec,
    power: &mut dyn PowerSource,
    stop: &Arc<AtomicBool>,
    obs: &mut dyn Observer,
) -> Result<Ladder, BenchError> {
    let mut runner = HostStepRunner { plan, power, stop };
    climb(&plan.settings, spec, &mut runner, obs)
}

/// A step passed QoS.
fn passed(step: &Step) -> bool {
    step.verdict.is_pass()
}

/// The ladder's logic over any [`StepRunner`].
pub fn climb(
    s: &BenchSettings,
    spec: &LadderSpec,
    runner: &mut dyn StepRunner,
    obs: &mut dyn Observer,
) -> Result<Ladder, BenchError> {
    let mut ladder = Ladder {
        label: spec.label.clone(),
        backend: spec.backend.to_string(),
        net: (spec.backend == Backend::Netns).then(|| spec.net.to_string()),
        placement: spec.placement.to_string(),
        steps: vec![],
        max_servers: None,
        recommended_servers: None,
        stopped: String::new(),
    };
    let mut baseline: Option<u64> = None;
    let mut first_fail: Option<u32> = None;
    for index in 1..=s.max_steps {
        if runner.stop_requested() {
            ladder.stopped = interrupted(&ladder, first_fail, s.tile_servers);
            break;
        }
        let servers = index * s.tile_servers;
        let req = StepRequest {
            index,
            servers,
            baseline,
        };
        obs.step_started(&spec.label, index, servers);
        let Some(mut step) = runner.run_step(spec, &req)? else {
            ladder.stopped = interrupted(&ladder, first_fail, s.tile_servers);
            break;
        };
        if !passed(&step) && s.confirm_failures {
            // One noisy moment must not end the ladder: run it again; the
            // step fails only if both attempts fail. Both are recorded.
            obs.note(&format!(
                "{}: {servers} servers failed ({}); running the step again to confirm",
                spec.label,
                step.failures.join("; ")
            ));
            let Some(mut again) = runner.run_step(spec, &req)? else {
                ladder.stopped = interrupted(&ladder, first_fail, s.tile_servers);
                break;
            };
            again.first_attempt_failures = std::mem::take(&mut step.failures);
            step = again;
        }
        if index == 1 {
            baseline = Some(step.transaction_latency_us.p99);
        }
        let pass = passed(&step);
        if first_fail.is_none() && pass {
            ladder.max_servers = Some(servers);
            if step.cpu.servers_busy_percent <= s.headroom_target * 100.0 {
                ladder.recommended_servers = Some(servers);
            }
        }
        if !pass && first_fail.is_none() {
            first_fail = Some(index);
        }
        ladder.steps.push(step);
        obs.step_finished(&ladder);
        if let Some(f) = first_fail {
            if index >= f + s.steps_past_failure {
                ladder.stopped = format!("step {f} ({} servers) failed QoS", f * s.tile_servers);
                break;
            }
        }
    }
    if ladder.stopped.is_empty() {
        ladder.stopped = format!(
            "reached the last step ({} servers) without a QoS failure",
            s.max_steps * s.tile_servers
        );
    }
    Ok(ladder)
}

/// Why an interrupted ladder stopped, saying whether it found its limit.
fn interrupted(ladder: &Ladder, first_fail: Option<u32>, tile_servers: u32) -> String {
    match (first_fail, ladder.max_servers) {
        (Some(f), _) => format!(
            "interrupted after step {f} ({} servers) failed QoS",
            f * tile_servers
        ),
        (None, Some(n)) => format!("interrupted before its limit: at least {n} servers passed"),
        (None, None) => "interrupted before a step finished".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::test_support::{settings, step};

    fn ladder(max: Option<u32>) -> Ladder {
        Ladder {
            label: "l".into(),
            backend: "process".into(),
            net: None,
            placement: "spread".into(),
            steps: vec![],
            max_servers: max,
            recommended_servers: None,
            stopped: String::new(),
        }
    }

    #[test]
    fn an_interrupted_ladder_says_whether_it_found_its_limit() {
        assert_eq!(
            interrupted(&ladder(Some(2)), None, 1),
            "interrupted before its limit: at least 2 servers passed"
        );
        assert_eq!(
            interrupted(&ladder(None), None, 3),
            "interrupted before a step finished"
        );
        assert_eq!(
            interrupted(&ladder(Some(3)), Some(2), 3),
            "interrupted after step 2 (6 servers) failed QoS"
        );
    }

    /// What a scripted attempt returns.
    #[derive(Clone, Copy)]
    enum Outcome {
        /// Passes with this server-core busy share (%) and p99 (µs).
        Pass { busy: f64, p99: u64 },
        /// Fails QoS.
        Fail,
        /// Interrupted mid-step (Ctrl-C).
        Interrupted,
    }

    /// Plays back outcomes, one per attempt, and records what it was asked.
    struct Scripted {
        outcomes: VecDeque<Outcome>,
        asked: Vec<StepRequest>,
        /// Requests stop after this many attempts.
        stop_after: Option<usize>,
    }

    impl Scripted {
        fn new(outcomes: &[Outcome]) -> Self {
            Self {
                outcomes: outcomes.iter().copied().collect(),
                asked: vec![],
                stop_after: None,
            }
        }
    }

    impl StepRunner for Scripted {
        fn run_step(
            &mut self,
            _spec: &LadderSpec,
            req: &StepRequest,
        ) -> Result<Option<Step>, BenchError> {
            self.asked.push(*req);
            let attempt = self.asked.len();
            Ok(
                match self.outcomes.pop_front().expect("a step past the script") {
                    Outcome::Pass { busy, p99 } => Some(step(req, "pass", vec![], busy, p99)),
                    Outcome::Fail => Some(step(
                        req,
                        "fail",
                        vec![format!("attempt {attempt} missed")],
                        99.0,
                        90_000,
                    )),
                    Outcome::Interrupted => None,
                },
            )
        }
        fn stop_requested(&self) -> bool {
            self.stop_after.is_some_and(|n| self.asked.len() >= n)
        }
    }

    #[derive(Default)]
    struct Seen {
        started: Vec<(u32, u32)>,
        finished: usize,
        notes: Vec<String>,
    }
    impl Observer for Seen {
        fn step_started(&mut self, _ladder: &str, index: u32, servers: u32) {
            self.started.push((index, servers));
        }
        fn step_finished(&mut self, _ladder: &Ladder) {
            self.finished += 1;
        }
        fn note(&mut self, msg: &str) {
            self.notes.push(msg.into());
        }
    }

    fn spec() -> LadderSpec {
        LadderSpec {
            label: "process, placement spread".into(),
            backend: Backend::Process,
            net: NetKind::Veth,
            placement: Policy::Spread,
            batch: None,
        }
    }

    const OK: Outcome = Outcome::Pass {
        busy: 10.0,
        p99: 1_000,
    };

    fn climb_script(s: &BenchSettings, runner: &mut Scripted) -> (Ladder, Seen) {
        let mut seen = Seen::default();
        let l = climb(s, &spec(), runner, &mut seen).unwrap();
        (l, seen)
    }

    #[test]
    fn ladder_stops_steps_past_failure_after_the_first_failure() {
        let mut r = Scripted::new(&[OK, OK, Outcome::Fail, OK, OK]);
        let (l, seen) = climb_script(&settings(10, 1, false), &mut r);
        // Steps 1-3, the failure, then one step past it; step 5 never runs.
        assert_eq!(r.asked.len(), 4);
        assert_eq!(seen.started, vec![(1, 3), (2, 6), (3, 9), (4, 12)]);
        assert_eq!(seen.finished, 4);
        assert_eq!(l.steps.len(), 4);
        assert_eq!(l.stopped, "step 3 (9 servers) failed QoS");
        // A pass after the first failure does not raise the maximum.
        assert_eq!(l.max_servers, Some(6));
    }

    #[test]
    fn with_no_steps_past_failure_the_ladder_stops_at_the_failure() {
        let mut r = Scripted::new(&[OK, Outcome::Fail, OK]);
        let (l, _) = climb_script(&settings(10, 0, false), &mut r);
        assert_eq!(r.asked.len(), 2);
        assert_eq!(l.stopped, "step 2 (6 servers) failed QoS");
        assert_eq!(l.max_servers, Some(3));
    }

    #[test]
    fn first_step_failing_leaves_no_maximum() {
        let mut r = Scripted::new(&[Outcome::Fail]);
        let (l, _) = climb_script(&settings(10, 0, false), &mut r);
        assert_eq!(l.max_servers, None);
        assert_eq!(l.recommended_servers, None);
        assert_eq!(l.stopped, "step 1 (3 servers) failed QoS");
    }

    #[test]
    fn a_failing_step_run_again_to_confirm_passes_if_the_second_attempt_passes() {
        let mut r = Scripted::new(&[OK, Outcome::Fail, OK, OK]);
        let (l, seen) = climb_script(&settings(3, 0, true), &mut r);
        // Step 2 ran twice with the same request.
        assert_eq!(r.asked.len(), 4);
        assert_eq!(r.asked[1], r.asked[2]);
        assert_eq!(seen.started.len(), 3, "a confirmation is not a new step");
        assert_eq!(l.steps.len(), 3);
        assert!(l.steps[1].verdict.is_pass());
        assert_eq!(l.steps[1].first_attempt_failures, vec!["attempt 2 missed"]);
        assert!(l.steps[1].failures.is_empty());
        assert_eq!(l.max_servers, Some(9));
        assert_eq!(seen.notes.len(), 1);
        assert!(seen.notes[0].contains("6 servers failed (attempt 2 missed)"));
        assert_eq!(
            l.stopped,
            "reached the last step (9 servers) without a QoS failure"
        );
    }

    #[test]
    fn a_step_fails_when_both_attempts_fail_and_keeps_both_reasons() {
        let mut r = Scripted::new(&[OK, Outcome::Fail, Outcome::Fail]);
        let (l, _) = climb_script(&settings(5, 0, true), &mut r);
        assert_eq!(r.asked.len(), 3);
        let s = &l.steps[1];
        assert!(s.verdict.is_fail());
        assert_eq!(s.failures, vec!["attempt 3 missed"]);
        assert_eq!(s.first_attempt_failures, vec!["attempt 2 missed"]);
        assert_eq!(l.stopped, "step 2 (6 servers) failed QoS");
    }

    #[test]
    fn without_confirmation_a_failing_step_runs_once() {
        let mut r = Scripted::new(&[Outcome::Fail, OK]);
        let (l, _) = climb_script(&settings(5, 0, false), &mut r);
        assert_eq!(r.asked.len(), 1);
        assert!(l.steps[0].first_attempt_failures.is_empty());
    }

    #[test]
    fn recommended_density_is_the_largest_passing_step_within_the_headroom() {
        let busy = |busy| Outcome::Pass { busy, p99: 1_000 };
        // headroom 75 %: 80 % is over it, 75 % is within.
        let mut r = Scripted::new(&[busy(40.0), busy(75.0), busy(80.0), Outcome::Fail]);
        let (l, _) = climb_script(&settings(10, 0, false), &mut r);
        assert_eq!(l.recommended_servers, Some(6));
        assert_eq!(l.max_servers, Some(9));
    }

    #[test]
    fn the_first_steps_p99_is_the_baseline_of_the_later_steps() {
        let mut r = Scripted::new(&[
            Outcome::Pass {
                busy: 1.0,
                p99: 4_321,
            },
            Outcome::Pass {
                busy: 1.0,
                p99: 9_999,
            },
            OK,
        ]);
        climb_script(&settings(3, 0, false), &mut r);
        let baselines: Vec<_> = r.asked.iter().map(|q| q.baseline).collect();
        assert_eq!(baselines, vec![None, Some(4_321), Some(4_321)]);
    }

    #[test]
    fn an_interrupted_step_is_not_recorded() {
        let mut r = Scripted::new(&[OK, Outcome::Interrupted]);
        let (l, seen) = climb_script(&settings(5, 0, false), &mut r);
        assert_eq!(l.steps.len(), 1);
        assert_eq!(seen.finished, 1);
        assert_eq!(
            l.stopped,
            "interrupted before its limit: at least 3 servers passed"
        );
    }

    #[test]
    fn an_interrupted_confirmation_ends_the_ladder_without_the_step() {
        let mut r = Scripted::new(&[OK, Outcome::Fail, Outcome::Interrupted]);
        let (l, _) = climb_script(&settings(5, 0, true), &mut r);
        assert_eq!(l.steps.len(), 1);
        assert_eq!(
            l.stopped,
            "interrupted before its limit: at least 3 servers passed"
        );
    }

    #[test]
    fn a_stop_request_between_steps_starts_no_further_step() {
        let mut r = Scripted::new(&[OK, Outcome::Fail, OK, OK]);
        r.stop_after = Some(2);
        let (l, _) = climb_script(&settings(10, 5, false), &mut r);
        assert_eq!(r.asked.len(), 2);
        assert_eq!(l.steps.len(), 2);
        assert_eq!(l.stopped, "interrupted after step 2 (6 servers) failed QoS");
    }

    #[test]
    fn the_ladder_names_its_backend_and_placement() {
        let mut r = Scripted::new(&[OK]);
        let (l, _) = climb_script(&settings(1, 0, false), &mut r);
        assert_eq!(l.backend, "process");
        assert_eq!(l.net, None);
        assert_eq!(l.placement, "spread");
        assert_eq!(
            l.stopped,
            "reached the last step (3 servers) without a QoS failure"
        );
    }
}
