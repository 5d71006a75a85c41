//! A step's measured window on one host: waiting it out while the host is
//! polled and the servers' threads are sampled (run delay, CPU time per
//! core), and what those samples are kept in.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tickpack_host::supervisor::Supervisor;

use crate::foreign::OwnCpu;

/// What the host said of the batch and the servers' own CPU use, once a
/// second over the measured window.
#[derive(Debug, Default)]
pub(super) struct BatchSamples {
    pub(super) batch_cpu: Vec<f64>,
    pub(super) servers_cpu: Vec<f64>,
}

/// The PIDs of the servers' process trees.
pub(crate) fn server_pids(sup: &Supervisor) -> Vec<u32> {
    sup.status()
        .instances
        .iter()
        .filter_map(|i| i.pid)
        .collect()
}

/// The samplers that read the servers' threads (and the bench's) through
/// the measured window, every [`RUN_DELAY_PERIOD`].
pub(super) struct ThreadSamplers {
    /// The servers' run delay.
    pub(super) run_delay: tickpack_sys::RunDelaySampler,
    /// The servers' and the bench's CPU time per core ([`crate::foreign`]).
    pub(super) own_cpu: OwnCpu,
    /// The run delay's p99 of each whole second of the measured window.
    pub(super) seconds_p99_us: Vec<u64>,
}

/// How often the servers' run delay and CPU time are sampled: often
/// enough for a p99 over a few seconds and to follow a thread from core
/// to core, seldom enough to cost the load generator's CPU little (two
/// reads per server thread).
pub(crate) const RUN_DELAY_PERIOD: Duration = Duration::from_millis(100);

/// Waits until `t`, polling the host whenever its driver wakes when `poll`
/// (its health checks and the guard run in the poll; without, it sleeps
/// 50 ms at a time), sampling it once a second
/// into `samples`, and the servers' threads every [`RUN_DELAY_PERIOD`]
/// into `threads`.
pub(super) fn wait_until(
    sup: &mut Supervisor,
    poll: bool,
    t: Instant,
    stop: &AtomicBool,
    live: &tickpack_players::Live,
    mut samples: Option<&mut BatchSamples>,
    mut threads: Option<&mut ThreadSamplers>,
) {
    let mut next_sample = Instant::now() + Duration::from_secs(1);
    let mut next_run_delay = Instant::now() + RUN_DELAY_PERIOD;
    let mut next_second = Instant::now() + Duration::from_secs(1);
    let pids = server_pids(sup);
    let me = [std::process::id()];
    while Instant::now() < t && !stop.load(Ordering::Relaxed) {
        if let Some(th) = threads.as_deref_mut() {
            if Instant::now() >= next_run_delay {
                next_run_delay += RUN_DELAY_PERIOD;
                th.run_delay.sample(&pids);
                th.own_cpu.sample(&pids, &me);
                if Instant::now() >= next_second {
                    next_second += Duration::from_secs(1);
                    th.seconds_p99_us.extend(th.run_delay.end_window());
                }
            }
        }
        if poll {
            // The players' latency since the last guard period is one of
            // its signals.
            if sup.guard_period_due() {
                sup.set_players_transaction_p99(live.take_recent_transaction_p99());
            }
            sup.poll();
            if let Some(s) = samples.as_deref_mut() {
                if Instant::now() >= next_sample {
                    next_sample += Duration::from_secs(1);
                    let st = sup.status();
                    if let Some(b) = st.guard.as_ref().and_then(|g| g.batch_cpu_percent) {
                        s.batch_cpu.push(b);
                    }
                    let servers: Vec<f64> =
                        st.instances.iter().filter_map(|i| i.cpu_percent).collect();
                    if servers.len() == st.instances.len() {
                        s.servers_cpu.push(servers.iter().sum());
                    }
                }
            }
        }
        let next = if threads.is_some() {
            next_run_delay.min(t)
        } else {
            t
        };
        let left = next.saturating_duration_since(Instant::now());
        if poll {
            // The host's own driver: woken by what needs it, no later
            // than the next sample.
            sup.wait(left.min(Duration::from_secs(1)));
        } else {
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
}
