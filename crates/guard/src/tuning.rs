//! The controller's gains and thresholds ([`Tuning`]), with the defaults
//! the guard was validated with.

use serde::{Deserialize, Serialize};

/// The controller's gains and thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// Grow only with more slack than this (fraction of the limit).
    pub grow_above: f64,
    /// Halve the allowance with less slack than this.
    pub cut_below: f64,
    /// Cores added per growing period, at least.
    pub grow_step: f64,
    /// Server cores added per growing period per unit of slack above
    /// `grow_above`.
    pub grow_gain: f64,
    /// From zero, until a cut has been shown to help (the batch has hurt
    /// the servers), start at the whole server cores, no quota: SCHED_IDLE
    /// alone, the kernel's own answer. The servers take their CPU back at
    /// every wake-up whatever the quota, and a quota below the idle only
    /// throttles the batch in bursts inside each CFS period, which leaves
    /// the core idle in bursts (on a virtual machine, where an idle vCPU
    /// costs the servers more than a busy one, measured to hurt them).
    /// `false`: always start at `start_share` of the idle and grow a little
    /// at a time (Heracles).
    #[serde(default = "default_start_whole")]
    pub start_whole: bool,
    /// Hold the batch at zero for [`Tuning::baseline_periods`] at the
    /// start, to measure the servers alone before it runs. `false` (the
    /// default, with `start_whole`): the batch runs whole from the first
    /// period, exactly as under SCHED_IDLE alone, and the servers' own
    /// slack is learnt from the first cut's trial instead. Measuring first
    /// cost the batch those periods' work on every start and judged the
    /// servers in their own start-up (their worst seconds) as their
    /// baseline.
    #[serde(default)]
    pub measure_first: bool,
    /// The share of the server cores' measured idle the allowance starts
    /// at from zero when it does not start whole.
    pub start_share: f64,
    /// What is left of the allowance when a limit is crossed.
    pub cross_factor: f64,
    /// Periods in a row above `grow_above` after a cut before growing.
    pub calm_periods: u32,
    /// The allowance after a cut below this is zero.
    pub min_cores: f64,
    /// How far (in slack) below the servers' slack without the batch the
    /// slack may fall before the batch is cut (when that baseline is below
    /// the growth band).
    #[serde(default = "default_harm_margin")]
    pub harm_margin: f64,
    /// Periods at zero whose median slack is the baseline.
    #[serde(default = "default_baseline_periods")]
    pub baseline_periods: u32,
    /// Periods between two measurements of a baseline below the band.
    #[serde(default = "default_remeasure_periods")]
    pub remeasure_periods: u32,
    /// Periods after a cut that judge whether it helped.
    #[serde(default = "default_trial_periods")]
    pub trial_periods: u32,
    /// Steal (share of a CPU, 0-1) at or above which a period's crossing
    /// is the machine's doing, not the batch's: the hypervisor ran other
    /// guests on a CPU of ours. The guard holds instead of cutting.
    #[serde(default = "default_steal_hold")]
    pub steal_hold: f64,
    /// Periods in a row it holds for steal at most; after that it cuts as
    /// without steal (a batch that hurts is still cut on a machine whose
    /// steal never ends).
    #[serde(default = "default_steal_patience")]
    pub steal_patience: u32,
}

fn default_start_whole() -> bool {
    true
}

fn default_steal_hold() -> f64 {
    0.03
}

fn default_steal_patience() -> u32 {
    10
}

fn default_trial_periods() -> u32 {
    2
}

fn default_harm_margin() -> f64 {
    0.15
}
fn default_baseline_periods() -> u32 {
    3
}
fn default_remeasure_periods() -> u32 {
    60
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            grow_above: 0.30,
            cut_below: 0.10,
            grow_step: 0.1,
            grow_gain: 0.5,
            start_whole: default_start_whole(),
            measure_first: false,
            start_share: 1.0,
            cross_factor: 0.25,
            calm_periods: 3,
            min_cores: 0.02,
            harm_margin: default_harm_margin(),
            baseline_periods: default_baseline_periods(),
            remeasure_periods: default_remeasure_periods(),
            trial_periods: default_trial_periods(),
            steal_hold: default_steal_hold(),
            steal_patience: default_steal_patience(),
        }
    }
}
