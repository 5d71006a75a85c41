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
//!
//! A comparison climbs several variants ([`LadderSpec`]s) at once,
//! interleaved ([`climb_interleaved`]): step `k` of every variant before
//! step `k + 1` of any, in an order that rotates, each variant keeping its
//! own stop rules. Any list of variants gets this; which variants a
//! comparison has is [`crate::Compare`]'s business.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tickpack_host::fleet::Backend;
use tickpack_host::guard::BatchControl;
use tickpack_host::netpath::NetKind;
use tickpack_host::placement::Policy;
use tickpack_report::bench::{BenchSettings, Ladder, LadderGame, Step};

use crate::power::PowerSource;
use crate::step::HostStepRunner;
use crate::BenchError;

/// One variant to climb (a comparison runs several).
#[derive(Debug, Clone, PartialEq)]
pub struct LadderSpec {
    pub label: String,
    /// How sentences name the variant ("plain processes", "netns/macvlan").
    pub name: String,
    pub backend: Backend,
    pub net: NetKind,
    pub placement: Policy,
    /// Batch work beside the servers (`--batch`) and how it is held back;
    /// `None`: no batch in this variant.
    pub batch: Option<BatchControl>,
    /// The variant's own game (`--compare game`); `None`: the run's.
    pub game: Option<GameVariant>,
}

/// A variant's own game and the settings that go with it: each game keeps
/// its players, bots, tick rate, warm-up and the QoS limits of its tick.
#[derive(Debug, Clone, PartialEq)]
pub struct GameVariant {
    pub server: crate::GameServer,
    pub players_per_server: u32,
    pub bots_per_server: u32,
    pub tick_hz: u32,
    pub warmup_s: f64,
    pub qos: tickpack_report::bench::QosLimits,
    /// As recorded in result.json (versions, map, ...).
    pub game_settings: tickpack_report::game_settings::GameSettings,
    /// The query protocol probed beside this game's steps (a game judged
    /// on its query), if any.
    pub probe: Option<String>,
}

impl LadderSpec {
    /// The settings this variant's steps run with: the run's, with the
    /// variant's game in place of the run's.
    pub fn settings(&self, run: &BenchSettings) -> BenchSettings {
        let mut s = run.clone();
        if let Some(g) = &self.game {
            s.game = g.server.name().into();
            s.game_settings = g.game_settings.clone();
            s.players_per_server = g.players_per_server;
            s.bots_per_server = g.bots_per_server;
            s.tick_hz = g.tick_hz;
            s.warmup_s = g.warmup_s;
            s.probe = g.probe.clone();
            s.qos = g.qos;
        }
        s
    }

    /// The game server this variant's steps run.
    pub fn game_server<'a>(&'a self, run: &'a crate::GameServer) -> &'a crate::GameServer {
        self.game.as_ref().map_or(run, |g| &g.server)
    }

    /// The game as the ladder records it (only for a variant's own game).
    fn ladder_game(&self) -> Option<LadderGame> {
        self.game.as_ref().map(|g| LadderGame {
            game: g.server.name().into(),
            game_settings: g.game_settings.clone(),
            players_per_server: g.players_per_server,
            bots_per_server: g.bots_per_server,
            tick_hz: g.tick_hz,
            warmup_s: g.warmup_s,
            qos: g.qos,
        })
    }
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
    /// Batch commands (`--batch`, parsed) for the variants that run batch
    /// work.
    pub batch: Vec<tickpack_host::guard::batch::BatchSpec>,
}

/// Told about progress (a progress bar, a log line).
pub trait Observer {
    fn step_started(&mut self, ladder: &str, index: u32, servers: u32);
    /// After every finished step, with the ladder so far.
    fn step_finished(&mut self, ladder: &Ladder);
    /// Something worth telling the person running the benchmark.
    fn note(&mut self, _msg: &str) {}
    /// A repetition of the comparison starts (1-based, of `of`).
    fn repetition_started(&mut self, _repetition: u32, _of: u32) {}
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

/// Climbs the variants of one repetition with real servers, interleaved
/// ([`climb_interleaved`]). Returns every ladder with its finished steps;
/// an interrupted step (Ctrl-C) is not recorded.
pub fn run_ladders(
    plan: &Plan,
    specs: &[LadderSpec],
    repetition: u32,
    power: &mut dyn PowerSource,
    stop: &Arc<AtomicBool>,
    obs: &mut dyn Observer,
) -> Result<Vec<Ladder>, BenchError> {
    let mut runner = HostStepRunner { plan, power, stop };
    climb_interleaved(&plan.settings, specs, repetition, &mut runner, obs)
}

/// A step passed QoS.
fn passed(step: &Step) -> bool {
    step.verdict.is_pass()
}

/// The ladder's logic over any [`StepRunner`]: one variant, repetition 1.
pub fn climb(
    s: &BenchSettings,
    spec: &LadderSpec,
    runner: &mut dyn StepRunner,
    obs: &mut dyn Observer,
) -> Result<Ladder, BenchError> {
    let mut ladders = climb_interleaved(s, std::slice::from_ref(spec), 1, runner, obs)?;
    Ok(ladders.remove(0))
}

/// The variant that runs first at step `index` of `repetition` (both
/// counted from one) among `n`: the order rotates by one every step and
/// every repetition, so no variant always runs first (on a cold machine)
/// or last.
pub fn first_at(index: u32, repetition: u32, n: usize) -> usize {
    let n = n.max(1) as u64;
    ((u64::from(index.max(1)) - 1 + u64::from(repetition.max(1)) - 1) % n) as usize
}

/// Climbs every variant of one repetition, interleaved: step `k` of every
/// variant still climbing runs before step `k + 1` of any, starting with a
/// different variant each step ([`first_at`]), so slow drift of the
/// machine hits all variants alike. A variant stops climbing by its own
/// rules (its failure and `steps_past_failure`, its confirmation of a
/// failing step) while the others go on. A stop request or an interrupted
/// step ends every ladder. Returns the ladders in the order of `specs`.
pub fn climb_interleaved(
    s: &BenchSettings,
    specs: &[LadderSpec],
    repetition: u32,
    runner: &mut dyn StepRunner,
    obs: &mut dyn Observer,
) -> Result<Vec<Ladder>, BenchError> {
    let mut climbs: Vec<Climb> = specs.iter().map(|sp| Climb::new(sp, repetition)).collect();
    'steps: for index in 1..=s.max_steps {
        let first = first_at(index, repetition, climbs.len());
        for k in 0..climbs.len() {
            let c = &mut climbs[(first + k) % specs.len()];
            if c.done {
                continue;
            }
            if runner.stop_requested() || !c.step(s, index, runner, obs)? {
                for c in &mut climbs {
                    c.interrupt(s.tile_servers);
                }
                break 'steps;
            }
        }
        if climbs.iter().all(|c| c.done) {
            break;
        }
    }
    Ok(climbs.into_iter().map(|c| c.finish(s)).collect())
}

/// Runs a step, and again while the machine spoiled it: its worst CPU
/// lost more than `max_steal_percent` of the measured window to the
/// hypervisor, or its worst server core ran other processes more than
/// `max_foreign_percent` of it ([`disturbance`]); at most `steal_retries`
/// more times. The attempts set aside are listed in the step that stands;
/// one that stands disturbed (the reruns ran out) says so
/// ([`Step::disturbed`]). `None`: interrupted.
fn run_undisturbed(
    s: &BenchSettings,
    spec: &LadderSpec,
    req: &StepRequest,
    runner: &mut dyn StepRunner,
    obs: &mut dyn Observer,
) -> Result<Option<Step>, BenchError> {
    let mut disturbed = vec![];
    loop {
        let Some(mut step) = runner.run_step(spec, req)? else {
            return Ok(None);
        };
        match disturbance(s, &step) {
            Some((note, max)) if (disturbed.len() as u32) < s.steal_retries => {
                let what = format!("{note}: {}", step.verdict.as_str());
                obs.note(&format!(
                    "{}: {} servers: the machine was disturbed ({what}, more than {max}%); \
                     running the step again",
                    spec.label, req.servers
                ));
                disturbed.push(what);
            }
            spoiled => {
                step.disturbed = spoiled.map(|(note, max)| format!("{note}, more than {max}%"));
                step.disturbed_attempts = disturbed;
                return Ok(Some(step));
            }
        }
    }
}

/// What spoiled a step's measurement, if anything, and the limit it
/// passed: the hypervisor's steal on any CPU over `max_steal_percent`
/// first, else other processes on a server core over
/// `max_foreign_percent`.
fn disturbance(s: &BenchSettings, step: &Step) -> Option<(String, f64)> {
    if let Some(max) = s
        .max_steal_percent
        .filter(|&max| step.cpu.worst_steal() > max)
    {
        return Some((step.cpu.steal_note().unwrap_or_default(), max));
    }
    s.max_foreign_percent
        .filter(|&max| step.cpu.worst_foreign() > max)
        .map(|max| {
            let note = step.cpu.foreign_note().unwrap_or_else(|| {
                format!("foreign {:.1}% of a server core", step.cpu.worst_foreign())
            });
            (note, max)
        })
}

/// One ladder being climbed, a step at a time.
struct Climb<'a> {
    spec: &'a LadderSpec,
    ladder: Ladder,
    baseline: Option<u64>,
    first_fail: Option<u32>,
    done: bool,
}

impl<'a> Climb<'a> {
    fn new(spec: &'a LadderSpec, repetition: u32) -> Self {
        Climb {
            spec,
            ladder: Ladder {
                label: spec.label.clone(),
                backend: spec.backend.to_string(),
                net: (spec.backend == Backend::Netns).then(|| spec.net.to_string()),
                placement: spec.placement.to_string(),
                steps: vec![],
                max_servers: None,
                recommended_servers: None,
                stopped: String::new(),
                limit_found: Some(false),
                repetition: Some(repetition),
                game: spec.ladder_game(),
            },
            baseline: None,
            first_fail: None,
            done: false,
        }
    }

    /// Runs step `index` (again, to confirm a failure, when asked).
    /// Returns false when the step was interrupted (it is not recorded).
    fn step(
        &mut self,
        s: &BenchSettings,
        index: u32,
        runner: &mut dyn StepRunner,
        obs: &mut dyn Observer,
    ) -> Result<bool, BenchError> {
        let spec = self.spec;
        let servers = index * s.tile_servers;
        let req = StepRequest {
            index,
            servers,
            baseline: self.baseline,
        };
        obs.step_started(&spec.label, index, servers);
        let Some(mut step) = run_undisturbed(s, spec, &req, runner, obs)? else {
            return Ok(false);
        };
        if step.verdict.is_idle() {
            // Idle servers are no density: the ladder ends with none, what
            // earlier steps found included (their load did not hold).
            self.ladder.max_servers = None;
            self.ladder.recommended_servers = None;
            self.ladder.limit_found = Some(false);
            self.ladder.stopped = format!(
                "step {index} ({}): the servers were idle, so no density",
                tickpack_report::words::servers(servers)
            );
            self.ladder.steps.push(step);
            obs.step_finished(&self.ladder);
            self.done = true;
            return Ok(true);
        }
        if !passed(&step) && s.confirm_failures {
            // One noisy moment must not end the ladder: run it again; the
            // step fails only if both attempts fail. Both are recorded.
            obs.note(&format!(
                "{}: {servers} servers failed ({}); running the step again to confirm",
                spec.label,
                step.failures.join("; ")
            ));
            let Some(mut again) = run_undisturbed(s, spec, &req, runner, obs)? else {
                return Ok(false);
            };
            step.disturbed_attempts
                .append(&mut again.disturbed_attempts);
            again.disturbed_attempts = std::mem::take(&mut step.disturbed_attempts);
            again.first_attempt_failures = std::mem::take(&mut step.failures);
            step = again;
        }
        if index == 1 {
            // A game without players is judged relative to its run delay.
            self.baseline = Some(if step.players > 0 {
                step.transaction_latency_us.p99
            } else {
                step.run_delay_us.as_ref().map_or(0, |p| p.p99)
            });
        }
        let pass = passed(&step);
        if self.first_fail.is_none() && pass {
            self.ladder.max_servers = Some(servers);
            if step.cpu.servers_busy_percent <= s.headroom_target * 100.0 {
                self.ladder.recommended_servers = Some(servers);
            }
        }
        if !pass && self.first_fail.is_none() {
            self.first_fail = Some(index);
            self.ladder.limit_found = Some(true);
        }
        self.ladder.steps.push(step);
        obs.step_finished(&self.ladder);
        if let Some(f) = self.first_fail {
            if index >= f + s.steps_past_failure {
                self.ladder.stopped =
                    format!("step {f} ({} servers) failed QoS", f * s.tile_servers);
                self.done = true;
            }
        }
        Ok(true)
    }

    /// Ends a ladder still climbing because the run stops.
    fn interrupt(&mut self, tile_servers: u32) {
        if !self.done {
            self.ladder.stopped = interrupted(&self.ladder, self.first_fail, tile_servers);
            self.done = true;
        }
    }

    fn finish(mut self, s: &BenchSettings) -> Ladder {
        if self.ladder.stopped.is_empty() {
            self.ladder.stopped = format!(
                "reached the last step ({} servers) without a QoS failure",
                s.max_steps * s.tile_servers
            );
        }
        self.ladder
    }
}

/// Why an interrupted ladder stopped, saying whether it found its limit.
fn interrupted(ladder: &Ladder, first_fail: Option<u32>, tile_servers: u32) -> String {
    match (first_fail, ladder.max_servers) {
        (Some(f), _) => format!(
            "interrupted after step {f} ({}) failed QoS",
            tickpack_report::words::servers(f * tile_servers)
        ),
        (None, Some(n)) => format!(
            "interrupted before its limit: at least {} passed",
            tickpack_report::words::servers(n)
        ),
        (None, None) => "interrupted before a step finished".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::test_support::{settings, step};
    use tickpack_report::bench::ForeignLoad;

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
            limit_found: None,
            repetition: None,
            game: None,
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
        /// Fails QoS while the hypervisor stole 30 % of CPU 0.
        Stolen,
        /// Passes while another process ran 40 % of server core 1.
        Foreign,
        /// Interrupted mid-step (Ctrl-C).
        Interrupted,
        /// Its servers had nothing to do.
        Idle,
    }

    /// Plays back outcomes, one per attempt, and records what it was asked.
    struct Scripted {
        outcomes: VecDeque<Outcome>,
        asked: Vec<StepRequest>,
        /// Requests stop after this many attempts.
        stop_after: Option<usize>,
    }

    impl Outcome {
        /// The step this outcome makes; a failure says `missed`.
        fn play(self, req: &StepRequest, missed: String) -> Option<Step> {
            match self {
                Outcome::Pass { busy, p99 } => Some(step(req, "pass", vec![], busy, p99)),
                Outcome::Fail => Some(step(req, "fail", vec![missed], 99.0, 90_000)),
                Outcome::Stolen => {
                    let mut st = step(req, "fail", vec![missed], 99.0, 90_000);
                    st.cpu.steal_percent = vec![30.0, 1.0];
                    Some(st)
                }
                Outcome::Foreign => {
                    let mut st = step(req, "pass", vec![], 99.0, 1_000);
                    st.cpu.foreign_percent =
                        Some(ForeignLoad::of_cores(&[60.0, 40.0, 0.5], &[1, 2]));
                    Some(st)
                }
                Outcome::Interrupted => None,
                Outcome::Idle => Some(step(req, "idle", vec![missed], 0.5, 0)),
            }
        }
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
            let outcome = self.outcomes.pop_front().expect("a step past the script");
            Ok(outcome.play(req, format!("attempt {attempt} missed")))
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
            name: "plain processes".into(),
            backend: Backend::Process,
            net: NetKind::Veth,
            placement: Policy::Spread,
            batch: None,
            game: None,
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
    fn a_ladder_that_reached_max_steps_with_every_step_passing_did_not_find_its_limit() {
        // bench_claimed_a_maximum_without_a_failure: a ladder stopped by
        // --max-steps said "maximum density 6 servers".
        let mut r = Scripted::new(&[OK, OK]);
        let (l, _) = climb_script(&settings(2, 0, false), &mut r);
        assert_eq!(l.limit_found, Some(false));
        assert_eq!(l.max_servers, Some(6));
        assert_eq!(
            l.max_density_words(),
            "at least 6 servers (the last step, --max-steps, passed)"
        );
        let mut r = Scripted::new(&[OK, Outcome::Fail]);
        let (l, _) = climb_script(&settings(2, 0, false), &mut r);
        assert_eq!(l.limit_found, Some(true));
        assert_eq!(l.max_density_words(), "3 servers");
        // Interrupted with every step passing: also not found.
        let mut r = Scripted::new(&[OK, Outcome::Interrupted]);
        let (l, _) = climb_script(&settings(5, 0, false), &mut r);
        assert_eq!(l.limit_found, Some(false));
        assert_eq!(
            l.max_density_words(),
            "at least 3 servers (interrupted before a step failed)"
        );
    }

    /// Issue 31: idle servers got a density ("AT LEAST 4.00 SERVERS PER
    /// SERVER CORE" for servers nobody played on). An idle step ends the
    /// ladder at once, unconfirmed, with no density at all.
    #[test]
    fn idle_servers_got_a_density() {
        let confirm = settings(10, 2, true);
        let mut r = Scripted::new(&[Outcome::Idle]);
        let (l, seen) = climb_script(&confirm, &mut r);
        assert_eq!(r.asked.len(), 1, "not run again to confirm");
        assert!(l.steps[0].verdict.is_idle());
        assert_eq!(l.max_servers, None);
        assert_eq!(l.recommended_servers, None);
        assert_eq!(l.limit_found, Some(false));
        assert!(l.stopped.contains("idle"), "{}", l.stopped);
        assert_eq!(seen.finished, 1);
        // A later step found idle takes back what the earlier ones found.
        let mut r = Scripted::new(&[OK, Outcome::Idle]);
        let (l, _) = climb_script(&confirm, &mut r);
        assert_eq!(r.asked.len(), 2);
        assert_eq!((l.max_servers, l.recommended_servers), (None, None));
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
    fn bench_judged_a_step_spoiled_by_the_hypervisors_steal() {
        // The bug: a step in which the hypervisor ran other guests on the
        // machine's CPUs (steal 30 % of CPU 0) was judged like any other,
        // so a comparison's variants were ranked on their neighbours. With
        // a steal limit it runs again, and the attempt set aside is kept.
        let steal = |retries| BenchSettings {
            max_steal_percent: Some(5.0),
            steal_retries: retries,
            ..settings(1, 0, false)
        };
        let mut r = Scripted::new(&[Outcome::Stolen, OK]);
        let (l, seen) = climb_script(&steal(2), &mut r);
        assert_eq!(r.asked.len(), 2);
        assert_eq!(l.steps.len(), 1);
        assert!(l.steps[0].verdict.is_pass());
        assert_eq!(
            l.steps[0].disturbed_attempts,
            vec!["steal 30.0% of CPU 0 (the hypervisor ran other guests): fail".to_string()]
        );
        assert!(
            seen.notes
                .iter()
                .any(|n| n.contains("the machine was disturbed")),
            "{:?}",
            seen.notes
        );
        // At most `steal_retries` reruns: then the last attempt stands.
        let mut r = Scripted::new(&[Outcome::Stolen; 3]);
        let (l, _) = climb_script(&steal(2), &mut r);
        assert_eq!(r.asked.len(), 3);
        assert!(!l.steps[0].verdict.is_pass());
        assert_eq!(l.steps[0].disturbed_attempts.len(), 2);
        assert_eq!(
            l.steps[0].disturbed.as_deref(),
            Some("steal 30.0% of CPU 0 (the hypervisor ran other guests), more than 5%"),
            "the attempt that stands says it was disturbed"
        );
        // Without a steal limit the step is judged as it came.
        let mut r = Scripted::new(&[Outcome::Stolen]);
        let (l, _) = climb_script(&settings(1, 0, false), &mut r);
        assert_eq!(r.asked.len(), 1);
        assert!(l.steps[0].disturbed_attempts.is_empty());
        // A confirmation rerun is itself rerun for steal; the attempts set
        // aside on both are kept.
        let confirm = BenchSettings {
            confirm_failures: true,
            ..steal(1)
        };
        let mut r = Scripted::new(&[Outcome::Stolen, Outcome::Fail, Outcome::Stolen, OK]);
        let (l, _) = climb_script(&confirm, &mut r);
        assert_eq!(r.asked.len(), 4);
        assert!(l.steps[0].verdict.is_pass());
        assert_eq!(l.steps[0].disturbed_attempts.len(), 2);
        assert_eq!(l.steps[0].first_attempt_failures, vec!["attempt 2 missed"]);
    }

    #[test]
    fn bench_blamed_the_servers_for_foreign_load_on_their_core() {
        // Another process (a package manager) used 40 % of server core 1:
        // the step counted it as the servers' CPU and stood. With a
        // foreign-load limit it runs again, like a step with steal.
        let foreign = |retries| BenchSettings {
            max_foreign_percent: Some(5.0),
            steal_retries: retries,
            ..settings(1, 0, false)
        };
        let note = "foreign 40.0% of CPU 1 (processes other than the servers and tickpack)";
        let mut r = Scripted::new(&[Outcome::Foreign, OK]);
        let (l, seen) = climb_script(&foreign(2), &mut r);
        assert_eq!(r.asked.len(), 2);
        assert_eq!(l.steps[0].disturbed_attempts, vec![format!("{note}: pass")]);
        assert_eq!(l.steps[0].disturbed, None, "the rerun was quiet");
        assert!(seen.notes.iter().any(|n| n.contains(&format!(
            "the machine was disturbed ({note}: pass, more than 5%)"
        ))));
        // The reruns run out: the last attempt stands, flagged.
        let mut r = Scripted::new(&[Outcome::Foreign; 3]);
        let (l, _) = climb_script(&foreign(2), &mut r);
        assert_eq!(r.asked.len(), 3);
        assert_eq!(l.steps[0].disturbed_attempts.len(), 2);
        assert_eq!(
            l.steps[0].disturbed.as_deref(),
            Some(format!("{note}, more than 5%").as_str())
        );
        // Under the limit, or without one, the step stands as it came.
        let mut r = Scripted::new(&[Outcome::Foreign]);
        let (l, _) = climb_script(
            &BenchSettings {
                max_foreign_percent: Some(50.0),
                ..foreign(2)
            },
            &mut r,
        );
        assert_eq!(r.asked.len(), 1);
        assert_eq!(l.steps[0].disturbed, None);
        let mut r = Scripted::new(&[Outcome::Foreign]);
        let (l, _) = climb_script(&settings(1, 0, false), &mut r);
        assert_eq!(r.asked.len(), 1);
        assert!(l.steps[0].disturbed_attempts.is_empty());
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

    /// Plays back outcomes per variant (by label) and records which
    /// variant ran which step, in order.
    struct PerVariant {
        outcomes: Vec<(String, VecDeque<Outcome>)>,
        asked: Vec<(String, u32)>,
        stop_after: Option<usize>,
    }

    impl PerVariant {
        fn new(script: &[(&str, &[Outcome])]) -> Self {
            Self {
                outcomes: script
                    .iter()
                    .map(|(l, o)| (l.to_string(), o.iter().copied().collect()))
                    .collect(),
                asked: vec![],
                stop_after: None,
            }
        }
        fn order(&self) -> Vec<String> {
            self.asked.iter().map(|(l, i)| format!("{l}{i}")).collect()
        }
    }

    impl StepRunner for PerVariant {
        fn run_step(
            &mut self,
            spec: &LadderSpec,
            req: &StepRequest,
        ) -> Result<Option<Step>, BenchError> {
            self.asked.push((spec.label.clone(), req.index));
            let q = &mut self
                .outcomes
                .iter_mut()
                .find(|(l, _)| *l == spec.label)
                .expect("a scripted variant")
                .1;
            let outcome = q.pop_front().expect("a step past the script");
            Ok(outcome.play(req, "missed".into()))
        }
        fn stop_requested(&self) -> bool {
            self.stop_after.is_some_and(|n| self.asked.len() >= n)
        }
    }

    fn variant(label: &str) -> LadderSpec {
        LadderSpec {
            label: label.into(),
            name: label.into(),
            ..spec()
        }
    }

    fn climb_all(
        s: &BenchSettings,
        labels: &[&str],
        repetition: u32,
        r: &mut PerVariant,
    ) -> Vec<Ladder> {
        let specs: Vec<LadderSpec> = labels.iter().map(|l| variant(l)).collect();
        climb_interleaved(s, &specs, repetition, r, &mut Seen::default()).unwrap()
    }

    const F: Outcome = Outcome::Fail;

    #[test]
    fn every_variant_runs_step_k_before_any_runs_step_k_plus_1_in_rotated_order() {
        let mut r = PerVariant::new(&[("a", &[OK; 3]), ("b", &[OK; 3]), ("c", &[OK; 3])]);
        let ls = climb_all(&settings(3, 0, false), &["a", "b", "c"], 1, &mut r);
        assert_eq!(
            r.order(),
            ["a1", "b1", "c1", "b2", "c2", "a2", "c3", "a3", "b3"]
        );
        // The ladders come back in the variants' order, each with its steps.
        let labels: Vec<&str> = ls.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["a", "b", "c"]);
        assert!(ls
            .iter()
            .all(|l| l.steps.len() == 3 && l.max_servers == Some(9)));
        assert!(ls.iter().all(|l| l.repetition == Some(1)));
    }

    #[test]
    fn each_repetition_starts_with_the_next_variant() {
        assert_eq!(first_at(1, 1, 4), 0);
        assert_eq!(first_at(2, 1, 4), 1);
        assert_eq!(first_at(1, 2, 4), 1);
        assert_eq!(first_at(4, 2, 4), 0);
        assert_eq!(first_at(7, 3, 1), 0);
        let mut r = PerVariant::new(&[("a", &[OK; 2]), ("b", &[OK; 2])]);
        let ls = climb_all(&settings(2, 0, false), &["a", "b"], 2, &mut r);
        assert_eq!(r.order(), ["b1", "a1", "a2", "b2"]);
        assert!(ls.iter().all(|l| l.repetition == Some(2)));
    }

    #[test]
    fn a_failed_variant_stops_climbing_while_the_others_go_on() {
        let mut r = PerVariant::new(&[("a", &[OK, F]), ("b", &[OK, OK, OK, OK])]);
        let ls = climb_all(&settings(4, 0, false), &["a", "b"], 1, &mut r);
        assert_eq!(r.order(), ["a1", "b1", "b2", "a2", "b3", "b4"]);
        assert_eq!(ls[0].stopped, "step 2 (6 servers) failed QoS");
        assert_eq!(ls[0].max_servers, Some(3));
        assert_eq!(
            ls[1].stopped,
            "reached the last step (12 servers) without a QoS failure"
        );
        assert_eq!(ls[1].max_servers, Some(12));
    }

    #[test]
    fn each_variant_keeps_its_steps_past_failure_and_its_confirmation() {
        // a fails step 1 twice (confirmed), then runs one step past it; b's
        // step 2 fails once and passes when run again.
        let mut r = PerVariant::new(&[("a", &[F, F, OK]), ("b", &[OK, F, OK, OK])]);
        let ls = climb_all(&settings(3, 1, true), &["a", "b"], 1, &mut r);
        assert_eq!(r.order(), ["a1", "a1", "b1", "b2", "b2", "a2", "b3"]);
        assert_eq!(ls[0].steps.len(), 2);
        assert_eq!(ls[0].stopped, "step 1 (3 servers) failed QoS");
        assert_eq!(ls[0].max_servers, None);
        assert_eq!(ls[1].steps.len(), 3);
        assert_eq!(ls[1].steps[1].first_attempt_failures, vec!["missed"]);
        assert_eq!(ls[1].max_servers, Some(9));
    }

    #[test]
    fn a_stop_request_ends_every_ladder_keeping_their_finished_steps() {
        let mut r = PerVariant::new(&[("a", &[OK, OK]), ("b", &[OK, F]), ("c", &[OK])]);
        r.stop_after = Some(4);
        let ls = climb_all(&settings(5, 2, false), &["a", "b", "c"], 1, &mut r);
        assert_eq!(r.order(), ["a1", "b1", "c1", "b2"]);
        assert_eq!(ls[0].steps.len(), 1);
        assert_eq!(
            ls[0].stopped,
            "interrupted before its limit: at least 3 servers passed"
        );
        assert_eq!(
            ls[1].stopped,
            "interrupted after step 2 (6 servers) failed QoS"
        );
        assert_eq!(ls[2].steps.len(), 1);
    }

    #[test]
    fn an_interrupted_step_ends_every_ladder_and_is_not_recorded() {
        let mut r = PerVariant::new(&[("a", &[OK, OK]), ("b", &[OK, Outcome::Interrupted])]);
        let mut seen = Seen::default();
        let specs = [variant("a"), variant("b")];
        let ls = climb_interleaved(&settings(5, 0, false), &specs, 1, &mut r, &mut seen).unwrap();
        assert_eq!(r.order(), ["a1", "b1", "b2"]);
        assert_eq!(
            seen.finished, 2,
            "every finished step is reported (and saved)"
        );
        assert_eq!(ls[1].steps.len(), 1);
        assert!(ls.iter().all(|l| l.stopped.starts_with("interrupted")));
    }
}
