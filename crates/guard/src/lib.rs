//! The QoS guard's policy: how much CPU batch work may take beside the
//! game servers each period, and when an instance should move to another
//! server core. Sans-I/O, on a virtual clock; apart from the root-side
//! `tickpack-host`, which gathers the signals and applies the allowance
//! (cgroup quota, CPU set, SCHED_IDLE) and knows the policy only through
//! its [`BatchPolicy`] trait.
//!
//! - [`controller`]: the controller ([`Controller`]): signals in, an
//!   allowance out, with its rules (cut fast, grow slowly, a cut must help,
//!   steal is not the batch's doing).
//! - [`limits`]: the QoS limits it keeps ([`QosLimits`]), the bench
//!   verdict's own from `tickpack_report`'s rule table plus the guard's
//!   extras.
//! - [`tuning`]: its gains and thresholds ([`Tuning`]).
//! - [`moves`]: the instance-move decision ([`plan_move`]).
//!
//! [`Guard`] puts them together as a [`BatchPolicy`]; [`policy`] is what
//! a caller hands the supervisor
//! (`Supervisor::start_with_policy(cfg, exe, Some(tickpack_guard::policy()))`).

pub mod controller;
pub mod limits;
pub mod moves;
pub mod tuning;

use std::time::Duration;

pub use controller::Controller;
pub use limits::QosLimits;
pub use moves::plan_move;
pub use tickpack_host::guard::policy::{
    Action, Allowance, BatchPolicy, BatchPolicyFactory, Decision, InstanceSignal, Move, Signals,
    PERIOD,
};
pub use tuning::Tuning;

/// The guard as the supervisor's batch policy: the controller, and the
/// instance moves judged with the default limits and tuning.
#[derive(Debug, Clone)]
pub struct Guard {
    controller: Controller,
    server_cpus: Vec<usize>,
}

impl Guard {
    /// The guard over `server_cpus`, with `limits` and `tuning`.
    pub fn new(limits: QosLimits, tuning: Tuning, server_cpus: Vec<usize>) -> Guard {
        Guard {
            controller: Controller::new(limits, tuning, server_cpus.clone()),
            server_cpus,
        }
    }

    /// The controller (its limits, its allowance).
    pub fn controller(&self) -> &Controller {
        &self.controller
    }
}

impl BatchPolicy for Guard {
    fn quota_cores(&self) -> f64 {
        self.controller.quota_cores()
    }

    fn set_tick_hz(&mut self, tick_hz: tickpack_report::qos::TickRate) {
        self.controller.set_limits(QosLimits::for_tick_hz(tick_hz));
    }

    fn decide(&mut self, at: Duration, signals: &Signals) -> Decision {
        self.controller.decide(at, signals)
    }

    fn baseline(&self) -> Option<f64> {
        self.controller.baseline()
    }

    fn plan_move(&self, signals: &Signals) -> Option<Move> {
        // As before the split: moves are judged on the default limits and
        // tuning, whatever tick rate the controller has learnt.
        plan_move(
            &QosLimits::default(),
            &Tuning::default(),
            &self.server_cpus,
            signals,
        )
    }
}

/// The guard with its default limits and tuning, made once the supervisor
/// knows the server CPUs: what `host up --batch-control guard` and the
/// bench's guard variant hand the supervisor.
pub fn policy() -> BatchPolicyFactory {
    Box::new(|server_cpus| {
        Box::new(Guard::new(
            QosLimits::default(),
            Tuning::default(),
            server_cpus,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_handed_to_the_host_starts_the_batch_on_the_whole_server_cores() {
        let p = policy()(vec![1, 2, 3]);
        assert_eq!(p.quota_cores(), 3.0);
        assert_eq!(p.baseline(), None);
    }

    #[test]
    fn the_servers_tick_rate_sets_the_limits_judged() {
        let mut g = Guard::new(QosLimits::default(), Tuning::default(), vec![1]);
        g.set_tick_hz(tickpack_report::qos::TickRate::new(60).unwrap());
        assert_eq!(
            *g.controller().limits(),
            QosLimits::for_tick_hz(tickpack_report::qos::TickRate::new(60).unwrap())
        );
    }
}
