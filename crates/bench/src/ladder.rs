//! The ladder: add tiles of servers step by step until a QoS limit fails.
//!
//! Step `n` runs `n x tile` servers through a [`StepRunner`] (the real one,
//! [`crate::step::HostStepRunner`], brings up servers and players; tests
//! script one). The ladder decides what to run next and what it found: a
//! failing step is run again when asked to confirm it and passes only when
//! most of its attempts pass ([`CONFIRM_ATTEMPTS`]), the first step's p99
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

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tickpack_host::fleet::Backend;
use tickpack_report::bench::{Attempt, BenchSettings, Ladder, Step};

use crate::power::PowerSource;

pub mod growth;
use crate::step::HostStepRunner;
use crate::BenchError;

pub use crate::spec::{GameVariant, LadderSpec, Observer, Plan, StepRequest, StepRunner};

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
            if ended_idle(&c.ladder) {
                // Idle servers stay idle: no other variant's step can
                // change that, so the run ends here.
                let why = format!(
                    "not climbed further: {}'s servers were idle at step {index}, which ends the run",
                    c.spec.label
                );
                for c in &mut climbs {
                    c.end(&why);
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

/// Whether a ladder ended on an idle step: its servers did nothing, a
/// verdict no rerun, later step or other ladder of the run can change
/// (the run ends with it).
pub fn ended_idle(l: &Ladder) -> bool {
    l.steps.last().is_some_and(|s| s.verdict.is_idle())
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
        if step.verdict.is_idle() {
            // Judged on the servers' own CPU time, which another process
            // on their cores does not lower: a rerun cannot change it.
            step.disturbed_attempts = disturbed;
            return Ok(Some(step));
        }
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

/// Attempts of a step in a confirmation: a failed step is run until most
/// of this many attempts agree, so it passes with 2 of 3.
pub const CONFIRM_ATTEMPTS: usize = 3;

/// Confirms a failed first attempt: runs the step again until most of
/// [`CONFIRM_ATTEMPTS`] attempts agree (fail, fail: fail after two; fail,
/// pass, pass: pass; fail, pass, fail: fail), so one lucky attempt does
/// not pass it. The last attempt stands, carrying every attempt's verdict
/// and failures ([`Step::attempts`]), the first attempt's failures and
/// every attempt set aside as disturbed. `None`: interrupted.
fn confirm(
    s: &BenchSettings,
    spec: &LadderSpec,
    req: &StepRequest,
    first: Step,
    runner: &mut dyn StepRunner,
    obs: &mut dyn Observer,
) -> Result<Option<Step>, BenchError> {
    let majority = CONFIRM_ATTEMPTS / 2 + 1;
    let mut attempts = vec![Attempt {
        verdict: first.verdict,
        failures: first.failures.clone(),
    }];
    let mut disturbed = first.disturbed_attempts;
    let first_failures = first.failures;
    loop {
        let Some(mut again) = run_undisturbed(s, spec, req, runner, obs)? else {
            return Ok(None);
        };
        attempts.push(Attempt {
            verdict: again.verdict,
            failures: again.failures.clone(),
        });
        disturbed.append(&mut again.disturbed_attempts);
        let passes = attempts.iter().filter(|a| a.verdict.is_pass()).count();
        let others = attempts.len() - passes;
        if passes >= majority || others >= majority {
            again.disturbed_attempts = disturbed;
            again.first_attempt_failures = first_failures;
            again.attempts = attempts;
            return Ok(Some(again));
        }
        obs.note(&format!(
            "{}: {} servers: {passes} of {} attempts passed; running the step again",
            spec.label,
            req.servers,
            attempts.len()
        ));
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
    /// What each step measured, for an adaptive ladder's next size
    /// ([`growth`]).
    seen: Vec<growth::Seen>,
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
                load: spec.load,
            },
            baseline: None,
            first_fail: None,
            done: false,
            seen: vec![],
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
        // A tile a step, or what the steps so far ask for ([`growth`]).
        let (tiles, chosen) = if s.adaptive_steps {
            let max_tiles = (crate::MAX_SERVERS / s.tile_servers.max(1)).max(1);
            match growth::next(&self.seen, max_tiles, s.steps_past_failure) {
                Some(n) => (n.tiles, Some(n.why)),
                None => {
                    self.ladder.stopped = match self.first_fail {
                        Some(_) => self.failure_words(s),
                        None => format!(
                            "reached the largest step ({}) without a QoS failure",
                            tickpack_report::words::servers(max_tiles * s.tile_servers)
                        ),
                    };
                    self.done = true;
                    return Ok(true);
                }
            }
        } else {
            (index, None)
        };
        let servers = tiles * s.tile_servers;
        let req = StepRequest {
            index,
            tiles,
            servers,
            baseline: self.baseline,
        };
        obs.step_started(&spec.label, index, servers);
        let Some(mut step) = run_undisturbed(s, spec, &req, runner, obs)? else {
            return Ok(false);
        };
        step.tiles = tiles;
        step.chosen = chosen.clone();
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
            obs.note(&format!(
                "{}: {servers} servers failed ({}); running the step again to confirm",
                spec.label,
                step.failures.join("; ")
            ));
            let Some(confirmed) = confirm(s, spec, &req, step, runner, obs)? else {
                return Ok(false);
            };
            step = confirmed;
            step.tiles = tiles;
            step.chosen = chosen;
        }
        if index == 1 {
            // A game without players is judged relative to its run delay:
            // the median of the step's per-second p99s, not one noisy p99.
            self.baseline = Some(if step.players > 0 {
                step.transaction_latency_us.p99
            } else {
                step.figures(s.tick_hz).typical_run_delay_us().unwrap_or(0)
            });
        }
        let pass = passed(&step);
        self.seen.push(growth::Seen::of(
            &step,
            tiles,
            spec.game.as_ref().map_or(&s.qos, |g| &g.qos),
            spec.game.as_ref().map_or(s.tick_hz, |g| g.tick_hz),
        ));
        if !pass && self.first_fail.is_none_or(|f| tiles < f) {
            self.first_fail = Some(tiles);
            self.ladder.limit_found = Some(true);
        }
        self.ladder.steps.push(step);
        // The densities: the largest passing step below the smallest
        // failing one (an adaptive ladder may pass below a failure it
        // bisects), and within the headroom target for the recommended.
        let below = |st: &&Step| passed(st) && self.first_fail.is_none_or(|f| st.tiles < f);
        self.ladder.max_servers = self
            .ladder
            .steps
            .iter()
            .filter(below)
            .map(|st| st.servers)
            .max();
        self.ladder.recommended_servers = self
            .ladder
            .steps
            .iter()
            .filter(below)
            .filter(|st| st.cpu.servers_busy_percent <= s.headroom_target * 100.0)
            .map(|st| st.servers)
            .max();
        obs.step_finished(&self.ladder);
        if let Some(f) = self.first_fail {
            if !s.adaptive_steps && index >= f + s.steps_past_failure {
                self.ladder.stopped = self.failure_words(s);
                self.done = true;
            }
        }
        Ok(true)
    }

    /// "step 5 (15 servers) failed QoS": the smallest failing step.
    fn failure_words(&self, s: &BenchSettings) -> String {
        let f = self.first_fail.unwrap_or(0);
        let index = self
            .ladder
            .steps
            .iter()
            .find(|st| st.tiles == f && !passed(st))
            .map_or(f, |st| st.index);
        format!("step {index} ({} servers) failed QoS", f * s.tile_servers)
    }

    /// Ends a ladder still climbing because the run ends for `why`.
    fn end(&mut self, why: &str) {
        if !self.done {
            self.ladder.stopped = why.to_string();
            self.done = true;
        }
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
            // The last step came before the steps past a failure ran out:
            // the failure is still why the ladder stopped.
            self.ladder.stopped = match self.first_fail {
                Some(_) => self.failure_words(s),
                None => format!(
                    "reached the last step ({}) without a QoS failure",
                    tickpack_report::words::servers(s.max_steps * s.tile_servers)
                ),
            };
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
mod tests;
