//! The QoS guard's controller, sans-I/O: signals in, an allowance for the batch
//! out, on a virtual clock (the caller passes the time of every period).
//!
//! Each period ([`PERIOD`](crate::PERIOD), 1 s: the servers' stats and the game queries
//! are refreshed once a second, so a shorter period would decide twice on
//! the same figures, and PSI's shortest average is 10 s, so a longer one
//! only delays the cut) [`Controller::decide`] takes the worst instance's
//! slack against the QoS limits, `slack = 1 - max(signal / limit)` (and the
//! players' p99 transaction latency, when players report it), and:
//!
//! - a signal is missing (an instance did not answer, a figure could not
//!   be read): the batch goes to zero, and the reason names the signal;
//! - PSI at its emergency level: to zero at once;
//! - slack below 0 (a limit is crossed): the allowance is cut to
//!   [`Tuning::cross_factor`] of itself at once;
//! - slack below [`Tuning::cut_below`]: the allowance is halved at once;
//! - slack below [`Tuning::grow_above`]: hold (the hysteresis band: a
//!   steady signal inside it never moves the allowance);
//! - else grow, but only after [`Tuning::calm_periods`] periods above the
//!   band since the last cut (not necessarily in a row), so growth after a
//!   cut is slow and a cut is fast (Heracles). From zero the allowance
//!   starts at the whole server cores (no quota: SCHED_IDLE alone) until a
//!   cut has been shown to help ([`Tuning::start_whole`]); after that, at
//!   [`Tuning::start_share`] of the server cores' measured idle (when the
//!   caller measured it; else one step). Above zero it grows in proportion to the slack above the band
//!   ([`Tuning::grow_gain`] server cores per unit of slack, at least
//!   [`Tuning::grow_step`]), so it is fast while the servers are far from
//!   their limits.
//!
//! **Steal is not the batch's doing.** When a CPU of the machine lost at
//! least [`Tuning::steal_hold`] of the period to steal (a virtual
//! machine's hypervisor ran other guests), a cut is held instead: the
//! crossing is the machine's, and cutting the batch would idle the server
//! cores, which on a virtual machine costs the servers more (an idle vCPU
//! is woken late). It holds for at most [`Tuning::steal_patience`] periods
//! of steal in a row, then cuts as without steal.
//!
//! **Never worse than SCHED_IDLE alone.** The batch runs whole from the
//! first period (no quota, SCHED_IDLE: the kernel's own answer), and a cut
//! must earn its keep (below). The thresholds above are absolute while
//! the servers can meet them on their own. The controller also learns what
//! the servers get *without* the batch: the median slack of the last
//! [`Tuning::baseline_periods`] periods it spent at zero (after a cut to
//! zero, or, with [`Tuning::measure_first`], at the start), or the slack a
//! cut that did not help left. When that baseline is below the growth band
//! (the servers miss the band with no batch at all: too many of them, or a
//! noisy machine), a slack that low is not the batch's doing, so the
//! thresholds follow the baseline: grow while the slack is at least the
//! baseline, cut when it falls [`Tuning::harm_margin`] below it, cut to a
//! quarter at twice the margin. The batch is then judged on what it costs
//! the servers, not on what they lack anyway. Such a baseline goes stale as
//! the load changes. A heavier load lowers the slack below it, so the
//! batch is cut, to zero in the end, where the baseline is measured again.
//! A lighter load raises the slack above it: when the recent slack has
//! been more than the margin above the baseline and the baseline is
//! [`Tuning::remeasure_periods`] periods old, the batch goes to zero for
//! [`Tuning::baseline_periods`] periods to measure it again. A steady
//! signal never triggers that, so it never moves the allowance both ways;
//! a baseline inside or above the band needs no refresh (the absolute
//! thresholds apply).
//!
//! **A cut must help.** A cut is on trial for [`Tuning::trial_periods`]
//! periods at the allowance it ends at (a further cut starts them again;
//! a period a margin worse than the one that made the cut ends the trial
//! at once, until a cut has helped):
//! if the slack then is not [`Tuning::harm_margin`] better than the median
//! of the periods up to the cut, nor back in the growth band, the batch was
//! not what cost the servers (on a virtual machine an idle server core can
//! cost them more than a SCHED_IDLE batch does). The cut is undone at once,
//! and the slack seen with the batch cut becomes the baseline above, so the
//! same slack does not cut the batch again; a slack a margin worse still
//! does, and each cut in a row that did not help doubles that margin (at
//! most 8 times it; a cut that helped brings it back).
//!
//! The CPU set follows the allowance: `ceil(quota)` server CPUs, the ones
//! with the most slack first.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use tickpack_host::guard::policy::{Action, Allowance, Decision, Signals};

use crate::limits::QosLimits;
use crate::tuning::Tuning;

/// The controller's state between periods.
#[derive(Debug, Clone)]
pub struct Controller {
    limits: QosLimits,
    tuning: Tuning,
    /// Server CPUs the batch may ever use.
    server_cpus: Vec<usize>,
    quota: f64,
    calm: u32,
    /// Slack of the last periods spent at zero, newest last.
    zero_slack: VecDeque<f64>,
    /// Periods since the last one spent at zero.
    since_zero: u32,
    /// Slack of the last periods, whatever the allowance, newest last.
    recent_slack: VecDeque<f64>,
    /// Periods of a re-measurement still to spend at zero.
    remeasure_left: u32,
    /// The last cut, while the periods after it judge whether it helped.
    trial: Option<Trial>,
    /// A cut has been shown to help: the batch has hurt the servers.
    hurt: bool,
    /// Periods in a row with steal at or above [`Tuning::steal_hold`].
    steal_run: u32,
    /// Instances that have reported a QoS figure at least once: one that
    /// never has is still starting and is not judged yet (a missing
    /// signal is one that stopped coming).
    reporting: std::collections::BTreeSet<u32>,
    /// Cuts in a row whose trial showed they did not help.
    unhelpful_cuts: u32,
}

/// A cut on trial.
#[derive(Debug, Clone)]
struct Trial {
    /// The allowance before the cut.
    restore: f64,
    /// The median slack of the periods up to the cut.
    before: f64,
    /// The slack of the period that made the last cut (of a run of cuts).
    trigger: f64,
    /// The slack of the periods since.
    seen: Vec<f64>,
}

/// The slack thresholds in force this period.
#[derive(Debug, Clone, Copy)]
struct Thresholds {
    grow: f64,
    cut: f64,
    cross: f64,
    /// The baseline when it moved them.
    baseline: Option<f64>,
}

impl Controller {
    /// Starts at the whole server cores (SCHED_IDLE alone) with
    /// `start_whole` and without `measure_first`; else at zero, where the
    /// batch earns its CPU from measured slack.
    pub fn new(limits: QosLimits, tuning: Tuning, server_cpus: Vec<usize>) -> Controller {
        let whole = tuning.start_whole && !tuning.measure_first;
        Controller {
            limits,
            tuning,
            quota: if whole { server_cpus.len() as f64 } else { 0.0 },
            server_cpus,
            calm: tuning.calm_periods,
            zero_slack: VecDeque::new(),
            since_zero: 0,
            recent_slack: VecDeque::new(),
            remeasure_left: 0,
            trial: None,
            hurt: false,
            steal_run: 0,
            reporting: Default::default(),
            unhelpful_cuts: 0,
        }
    }

    /// The median (of an even count, the mean of the middle two).
    fn median<'a>(v: impl IntoIterator<Item = &'a f64>) -> f64 {
        let mut v: Vec<f64> = v.into_iter().copied().collect();
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        if v.len() == 2 * m {
            (v[m - 1] + v[m]) / 2.0
        } else {
            v[m]
        }
    }

    /// The servers' slack without the batch (median of the last periods at
    /// zero), once there are enough of them.
    pub fn baseline(&self) -> Option<f64> {
        let n = self.tuning.baseline_periods.max(1) as usize;
        (self.zero_slack.len() >= n).then(|| Controller::median(&self.zero_slack))
    }

    /// Enough periods at zero to know the servers' own slack.
    fn measured(&self) -> bool {
        self.zero_slack.len() >= self.tuning.baseline_periods.max(1) as usize
    }

    /// The absolute thresholds, moved down to the baseline when the
    /// servers miss them without the batch.
    fn thresholds(&self) -> Thresholds {
        let t = &self.tuning;
        match self.baseline() {
            Some(b) if b < t.grow_above => {
                let margin = self.margin();
                Thresholds {
                    grow: b,
                    cut: t.cut_below.min(b - margin),
                    cross: 0f64.min(b - 2.0 * margin),
                    baseline: Some(b),
                }
            }
            _ => Thresholds {
                grow: t.grow_above,
                cut: t.cut_below,
                cross: 0.0,
                baseline: None,
            },
        }
    }

    /// How far below the baseline the slack may fall before a cut: the
    /// harm margin, doubled for every cut in a row that did not help (at
    /// most 8 times it). Each cut that did not help is evidence that the
    /// servers' swings are the machine's, not the batch's; one that helped
    /// brings the margin back.
    fn margin(&self) -> f64 {
        self.tuning.harm_margin * f64::from(1u32 << self.unhelpful_cuts.min(3))
    }

    /// From zero the batch starts at the whole server cores (SCHED_IDLE
    /// alone): so tuned, and no cut has helped yet.
    fn starts_whole(&self) -> bool {
        self.tuning.start_whole && !self.hurt
    }

    /// The allowance now.
    pub fn quota_cores(&self) -> f64 {
        self.quota
    }

    /// The limits judged from now on (the caller learns the servers' tick
    /// rate from their first stats).
    pub fn set_limits(&mut self, limits: QosLimits) {
        self.limits = limits;
    }

    /// The limits judged.
    pub fn limits(&self) -> &QosLimits {
        &self.limits
    }

    /// The worst slack and what it came from, or the missing signal.
    fn worst_slack(&self, s: &Signals) -> Result<(Option<f64>, String), String> {
        let mut worst: Option<(f64, String)> = None;
        for i in &s.instances {
            // Still starting (never reported a figure): not judged yet.
            // SCHED_IDLE alone runs the batch beside a starting server too.
            if !self.reporting.contains(&i.id) {
                continue;
            }
            if !i.answered {
                return Err(format!("instance {} did not answer its health check", i.id));
            }
            let figures = [
                ("p99 tick lateness", i.tick_lag_us, self.limits.tick_lag_us),
                ("p99 frame time", i.frame_us, self.limits.frame_us),
                ("behind schedule", i.behind_us, self.limits.behind_us),
                ("query round trip", i.query_us, self.limits.query_us),
            ];
            let mut any = false;
            for (what, v, limit) in figures {
                let Some(v) = v else { continue };
                any = true;
                let slack = 1.0 - f64::from(v) / f64::from(limit.max(1));
                if worst.as_ref().is_none_or(|(w, _)| slack < *w) {
                    worst = Some((
                        slack,
                        format!("instance {} {what} {v} us of {limit} us", i.id),
                    ));
                }
            }
            if !any {
                return Err(format!("instance {} reports no QoS figure", i.id));
            }
        }
        if let Some(v) = s.players_p99_us {
            let limit = self.limits.transaction_us;
            let slack = 1.0 - f64::from(v) / f64::from(limit.max(1));
            if worst.as_ref().is_none_or(|(w, _)| slack < *w) {
                worst = Some((
                    slack,
                    format!("the players' p99 transaction latency {v} us of {limit} us"),
                ));
            }
        }
        Ok(match worst {
            Some((w, why)) => (Some(w), why),
            None if s.instances.is_empty() => (None, "no instances".into()),
            None => (None, "no server has reported its figures yet".into()),
        })
    }

    /// Slack per server CPU (the worst of its instances; 1 with none).
    pub(crate) fn core_slack(&self, s: &Signals) -> BTreeMap<usize, f64> {
        let mut by_core: BTreeMap<usize, f64> =
            self.server_cpus.iter().map(|&c| (c, 1.0)).collect();
        for i in &s.instances {
            let mut slack: f64 = 1.0;
            for (v, limit) in [
                (i.tick_lag_us, self.limits.tick_lag_us),
                (i.frame_us, self.limits.frame_us),
                (i.behind_us, self.limits.behind_us),
                (i.query_us, self.limits.query_us),
            ] {
                if let Some(v) = v {
                    slack = slack.min(1.0 - f64::from(v) / f64::from(limit.max(1)));
                }
            }
            if let Some(e) = by_core.get_mut(&i.cpu) {
                *e = e.min(slack);
            }
        }
        by_core
    }

    /// The CPU set for `quota` cores: the cores with the most slack.
    fn cpus_for(&self, quota: f64, s: &Signals) -> Vec<usize> {
        let n = (quota.ceil() as usize).clamp(1, self.server_cpus.len().max(1));
        let mut cores: Vec<(usize, f64)> = self.core_slack(s).into_iter().collect();
        cores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut cpus: Vec<usize> = cores.into_iter().take(n).map(|(c, _)| c).collect();
        cpus.sort_unstable();
        cpus
    }

    /// One period: decide from `signals` at virtual time `at`.
    pub fn decide(&mut self, at: Duration, signals: &Signals) -> Decision {
        let at_ms = at.as_millis() as u64;
        let max = self.server_cpus.len() as f64;
        let t = self.tuning;
        for i in &signals.instances {
            let any = [i.tick_lag_us, i.frame_us, i.behind_us, i.query_us]
                .iter()
                .any(Option::is_some);
            if i.answered && any {
                self.reporting.insert(i.id);
            }
        }
        let worst = self.worst_slack(signals);
        // The period just measured ran with the allowance decided last
        // time: at zero, its slack is the servers' own.
        let n = t.baseline_periods.max(1) as usize;
        let push = |q: &mut VecDeque<f64>, s: f64| {
            q.push_back(s);
            while q.len() > n {
                q.pop_front();
            }
        };
        if let Ok((Some(s), _)) = &worst {
            push(&mut self.recent_slack, *s);
        }
        match (&worst, self.quota == 0.0) {
            (Ok((Some(s), _)), true) => {
                push(&mut self.zero_slack, *s);
                self.since_zero = 0;
            }
            (_, true) => self.since_zero = 0,
            (_, false) => self.since_zero = self.since_zero.saturating_add(1),
        }
        // A cut on trial: once its periods are in, did the slack come back?
        // If not, the batch was not what cost the servers: the cut is
        // undone, and the slack with the batch cut is taken as the servers'
        // own (the baseline), so the same slack does not cut it again.
        let mut undo: Option<(f64, String)> = None;
        // A cut after which the slack is a margin worse than what made it
        // is judged at once, before the batch is cut again: on a virtual
        // machine each cut idles the server cores, whose vCPU is then woken
        // late, and cutting on and on took the batch to zero in four
        // periods while every cut made the servers worse. Once a cut has
        // helped (the batch hurts), a worse period is the batch's doing and
        // the cuts go on.
        let hurt = self.hurt;
        if let (Some(tr), Ok((Some(s), _))) = (self.trial.as_mut(), &worst) {
            tr.seen.push(*s);
            let made_worse = !hurt && *s < tr.trigger - t.harm_margin;
            if made_worse || tr.seen.len() >= t.trial_periods.max(1) as usize {
                let tr = self.trial.take().expect("a trial");
                let after = Controller::median(&tr.seen);
                if after >= tr.before + t.harm_margin || after >= t.grow_above {
                    // It helped: the batch hurt the servers.
                    self.hurt = true;
                    self.unhelpful_cuts = 0;
                } else {
                    self.unhelpful_cuts = self.unhelpful_cuts.saturating_add(1);
                    // The slack with the batch cut is the baseline from
                    // now on (not a mix with older periods at zero).
                    self.zero_slack.clear();
                    self.zero_slack.extend(std::iter::repeat_n(after, n));
                    self.since_zero = 0;
                    undo = Some((
                        tr.restore,
                        format!(
                            "the cut did not help (slack {:.0}% before it, {:.0}% after): \
                             the batch is not what costs the servers; back to {:.2} cores",
                            tr.before * 100.0,
                            after * 100.0,
                            tr.restore
                        ),
                    ));
                }
            }
        }
        let th = self.thresholds();
        let vs = |slack: f64, line: f64| match th.baseline {
            Some(b) => format!(
                "slack {:.0}% vs {:.0}% (the servers' {:.0}% without the batch)",
                slack * 100.0,
                line * 100.0,
                b * 100.0
            ),
            None => format!("slack {:.0}% vs {:.0}%", slack * 100.0, line * 100.0),
        };
        let steal = signals.steal.unwrap_or(0.0);
        self.steal_run = if steal >= t.steal_hold {
            self.steal_run.saturating_add(1)
        } else {
            0
        };
        let mut crossed = false;
        let (mut action, slack, mut reason) = match (worst, &signals.psi_some_avg10) {
            (Err(missing), _) => (Action::Zero, None, format!("signal missing: {missing}")),
            (Ok(_), Err(why)) => (
                Action::Zero,
                None,
                format!("signal missing: CPU pressure unavailable ({why})"),
            ),
            (Ok((slack, why)), Ok(psi)) if *psi >= self.limits.psi_emergency => (
                Action::Zero,
                slack,
                format!(
                    "emergency: CPU pressure {psi:.1}% >= {:.1}% ({why})",
                    self.limits.psi_emergency
                ),
            ),
            (Ok((None, why)), Ok(_)) => (Action::Hold, None, format!("nothing to guard ({why})")),
            (Ok((Some(slack), _)), Ok(_)) if undo.is_some() => (
                Action::Grow,
                Some(slack),
                undo.as_ref().map(|u| u.1.clone()).unwrap_or_default(),
            ),
            (Ok((Some(slack), _)), Ok(_)) if self.remeasure_left > 0 => {
                self.remeasure_left -= 1;
                (
                    Action::Hold,
                    Some(slack),
                    format!(
                        "measuring the servers without the batch ({} more periods)",
                        self.remeasure_left
                    ),
                )
            }
            (Ok((Some(slack), _)), Ok(_))
                if th.baseline.is_some_and(|b| {
                    self.recent_slack.len() >= n
                        && Controller::median(&self.recent_slack) > b + t.harm_margin
                }) && self.quota > 0.0
                    && self.since_zero >= t.remeasure_periods =>
            {
                self.remeasure_left = t.baseline_periods.max(1);
                self.zero_slack.clear();
                (
                    Action::Zero,
                    Some(slack),
                    format!(
                        "re-measuring the servers without the batch for {} periods: \
                         slack {:.0}% is above their {:.0}% of {} periods ago",
                        self.remeasure_left,
                        slack * 100.0,
                        th.baseline.unwrap_or_default() * 100.0,
                        self.since_zero
                    ),
                )
            }
            (Ok((Some(slack), why)), Ok(_)) => {
                // The start from zero, while the guard is SCHED_IDLE alone
                // until a cut helps, against a baseline below the band: the
                // servers' slack at zero only needs to be within the margin
                // of their own (a slack at zero is never the batch's doing;
                // asking for the baseline itself, a median, would hold the
                // batch at zero for half the periods on noise alone).
                let start = self.quota == 0.0
                    && self.starts_whole()
                    && th.baseline.is_some()
                    && slack >= th.cut
                    && self.calm + 1 >= t.calm_periods;
                if start {
                    (
                        Action::Grow,
                        Some(slack),
                        format!(
                            "{}: within the margin of the servers' own, the batch starts ({why})",
                            vs(slack, th.cut)
                        ),
                    )
                } else if self.quota == 0.0
                    && (slack < th.grow || th.baseline.is_none() && !self.measured())
                {
                    // Nothing to cut: the batch is not running, so the
                    // slack is the servers' own.
                    (
                        Action::Hold,
                        Some(slack),
                        match th.baseline {
                            None => format!(
                                "{} ({why}); measuring the servers without the batch, {} of {} periods",
                                vs(slack, th.grow),
                                self.zero_slack.len(),
                                t.baseline_periods
                            ),
                            Some(_) => format!("{}, the batch at zero ({why})", vs(slack, th.grow)),
                        },
                    )
                } else if slack < th.cross {
                    crossed = true;
                    (
                        Action::Cut,
                        Some(slack),
                        format!(
                            "limit crossed, to {:.0}%: {}: {why}",
                            t.cross_factor * 100.0,
                            vs(slack, th.cross)
                        ),
                    )
                } else if slack < th.cut {
                    (
                        Action::Cut,
                        Some(slack),
                        format!("{}: {why}", vs(slack, th.cut)),
                    )
                } else if slack < th.grow || self.quota >= max {
                    (
                        Action::Hold,
                        Some(slack),
                        format!("{} ({why})", vs(slack, th.grow)),
                    )
                } else if self.calm + 1 < t.calm_periods {
                    (
                        Action::Hold,
                        Some(slack),
                        format!(
                            "{}, calm {} of {} periods since the last cut",
                            vs(slack, th.grow),
                            self.calm + 1,
                            t.calm_periods
                        ),
                    )
                } else {
                    (
                        Action::Grow,
                        Some(slack),
                        format!("{} ({why})", vs(slack, th.grow)),
                    )
                }
            }
        };
        // A cut is judged against the median of the periods before it: with
        // fewer than `baseline_periods` of them (the servers' first seconds,
        // their worst) that "median" is one outlier, and the next periods'
        // return to normal would pass for the cut's help. Hold until there
        // are enough, as SCHED_IDLE alone would.
        if action == Action::Cut && self.recent_slack.len() < n {
            action = Action::Hold;
            crossed = false;
            reason = format!(
                "held, not cut: {} of {} periods of the servers' figures so far, too few to judge a cut; {reason}",
                self.recent_slack.len(),
                n
            );
        }
        // Steal: the hypervisor ran other guests on a CPU of ours in the
        // period. A crossing then is the machine's doing, and cutting the
        // batch idles the server cores, which on a virtual machine costs
        // the servers more (an idle vCPU is woken late); hold, for at most
        // `steal_patience` periods of steal in a row.
        if action == Action::Cut && self.steal_run > 0 && self.steal_run <= t.steal_patience {
            action = Action::Hold;
            crossed = false;
            reason = format!(
                "held, not cut: the hypervisor stole {:.0}% of a CPU in the period, \
                 the machine's doing, not the batch's ({} of {} periods); {reason}",
                steal * 100.0,
                self.steal_run,
                t.steal_patience
            );
        }
        match action {
            Action::Zero => {
                // A zero that takes nothing (the start, before the first
                // figures) is not a cut: it does not delay growth; nor is a
                // re-measurement.
                if self.quota > 0.0 && self.remeasure_left == 0 {
                    self.calm = 0;
                } else if self.remeasure_left > 0 {
                    self.calm = t.calm_periods;
                }
                self.quota = 0.0;
                self.trial = None;
            }
            Action::Cut => {
                let trigger = slack.unwrap_or(0.0);
                match self.trial.as_mut() {
                    // A further cut: the trial judges the new allowance.
                    Some(tr) => {
                        tr.seen.clear();
                        tr.trigger = trigger;
                    }
                    None => {
                        self.trial = Some(Trial {
                            restore: self.quota,
                            before: Controller::median(&self.recent_slack),
                            trigger,
                            seen: vec![],
                        })
                    }
                }
                self.quota *= if crossed { t.cross_factor } else { 0.5 };
                if self.quota < t.min_cores {
                    self.quota = 0.0;
                }
                self.calm = 0;
            }
            Action::Hold => {
                if slack.is_some_and(|s| s >= th.grow) {
                    self.calm += 1;
                }
            }
            Action::Grow if undo.is_some() => {
                self.quota = undo.as_ref().map_or(0.0, |u| u.0);
                self.calm = t.calm_periods;
            }
            Action::Grow => {
                self.calm += 1;
                let above = slack.map_or(0.0, |s| s - th.grow);
                let step = t.grow_step.max(t.grow_gain * above * max);
                self.quota = match signals.idle_cores {
                    // From zero, until a cut has helped: the whole server
                    // cores (SCHED_IDLE alone).
                    _ if self.quota == 0.0 && self.starts_whole() => max,
                    // From zero once the batch has hurt: a share of the
                    // headroom measured with no batch running, at least
                    // one step.
                    Some(idle) if self.quota == 0.0 => (t.start_share * idle).max(t.grow_step),
                    _ => self.quota + step,
                }
                .min(max);
            }
        }
        // Rounded to the grow step's grain so repeated decisions are exact.
        self.quota = (self.quota * 1000.0).round() / 1000.0;
        Decision {
            at_ms,
            action,
            allowance: Allowance {
                quota_cores: self.quota,
                cpus: self.cpus_for(self.quota, signals),
            },
            slack,
            reason,
        }
    }
}
