//! The instance-move decision ([`plan_move`]): which instance to move to
//! which server core when one core's instances lose QoS.

use tickpack_host::guard::policy::{InstanceSignal, Move, Signals};

use crate::controller::Controller;
use crate::limits::QosLimits;
use crate::tuning::Tuning;

/// The instance-move decision: when a core's instances lose QoS (its worst
/// slack below `cut_below`) while another server core has room (slack
/// above `grow_above` and fewer instances), move the worst instance of the
/// worst core there. At most one move per period; `None` when no core is
/// in trouble or none has room.
pub fn plan_move(
    limits: &QosLimits,
    tuning: &Tuning,
    server_cpus: &[usize],
    signals: &Signals,
) -> Option<Move> {
    let c = Controller::new(*limits, *tuning, server_cpus.to_vec());
    let slack = c.core_slack(signals);
    let count = |core: usize| signals.instances.iter().filter(|i| i.cpu == core).count();
    let (&worst_core, &worst) = slack.iter().min_by(|a, b| a.1.total_cmp(b.1))?;
    if worst >= tuning.cut_below || count(worst_core) < 2 {
        return None;
    }
    let (&to, _) = slack
        .iter()
        .filter(|&(&core, &s)| {
            core != worst_core && s >= tuning.grow_above && count(core) + 1 < count(worst_core) + 1
        })
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))?;
    let instance_slack = |i: &InstanceSignal| {
        c.core_slack(&Signals {
            instances: vec![InstanceSignal {
                cpu: worst_core,
                ..i.clone()
            }],
            psi_some_avg10: Ok(0.0),
            players_p99_us: None,
            idle_cores: None,
            steal: None,
        })[&worst_core]
    };
    let victim = signals
        .instances
        .iter()
        .filter(|i| i.cpu == worst_core)
        .min_by(|a, b| {
            instance_slack(a)
                .total_cmp(&instance_slack(b))
                .then(a.id.cmp(&b.id))
        })?;
    Some(Move {
        instance: victim.id,
        from: worst_core,
        to,
    })
}
