//! The Prometheus families `host up --metrics` serves: every instance's,
//! and the guard's when batch work runs.

use tickpack_host::status::HostStatus;

/// The Prometheus families of all instances of a host.
pub fn metric_families(st: &HostStatus) -> Vec<tickpack_server::metrics::MetricFamily> {
    use tickpack_host::status::InstanceState as S;
    let rows: Vec<_> = st
        .instances
        .iter()
        .map(|i| tickpack_server::metrics::host::Instance {
            id: i.id.to_string(),
            address: i.address.clone(),
            up: i.state == S::Running,
            restarts: i.restarts,
            cpu_percent: i.cpu_percent,
            tick_p99_us: i.tick_p99_us,
            frame_p99_us: i.frame_p99_us,
            players: i.players.map(u32::from),
            memory_bytes: i.memory_bytes,
            oom_kills: i.oom_kills,
        })
        .collect();
    let mut families = tickpack_server::metrics::host::families(&st.name, &rows);
    if let Some(g) = &st.guard {
        families.extend(guard_families(&st.name, g));
    }
    families
}

/// The guard's Prometheus families: the allowance, the batch's CPU use,
/// pressure, throttling and the decisions by action.
fn guard_families(
    host: &str,
    g: &tickpack_host::guard::GuardStatus,
) -> Vec<tickpack_server::metrics::MetricFamily> {
    use tickpack_server::metrics::{family, Kind};
    let one = |name: &str, help: &str, kind: Kind, v: Option<f64>| {
        let labels = [("host", host)];
        family(name, help, kind, v.map(|v| (&labels[..], v)))
    };
    let mut out = vec![
        one(
            "tickpack_guard_batch_quota_cores",
            "CPU quota the guard gives the batch, in cores (absent: unlimited).",
            Kind::Gauge,
            g.quota_cores,
        ),
        one(
            "tickpack_guard_batch_cpu_percent",
            "CPU use of the batch cgroup over the last period, percent of one core.",
            Kind::Gauge,
            g.batch_cpu_percent,
        ),
        one(
            "tickpack_guard_cpu_pressure_some_avg10",
            "System CPU pressure (PSI some avg10), percent.",
            Kind::Gauge,
            g.psi_some_avg10,
        ),
        one(
            "tickpack_guard_baseline_slack",
            "The servers' own slack with the batch at zero (1 - worst signal / limit), once measured.",
            Kind::Gauge,
            g.baseline_slack,
        ),
        one(
            "tickpack_guard_steal_ratio",
            "The largest share of the last period a CPU lost to steal (the hypervisor ran other guests), 0-1.",
            Kind::Gauge,
            g.steal,
        ),
        one(
            "tickpack_guard_batch_throttled_total",
            "Periods the batch cgroup was throttled (cpu.stat nr_throttled).",
            Kind::Counter,
            Some(g.nr_throttled as f64),
        ),
    ];
    let rows: Vec<([(&str, &str); 2], f64)> = g
        .decisions
        .iter()
        .map(|(a, n)| ([("host", host), ("action", a.as_str())], *n as f64))
        .collect();
    out.push(family(
        "tickpack_guard_decisions_total",
        "Guard decisions by action (grow, hold, cut, zero).",
        Kind::Counter,
        rows.iter().map(|(l, v)| (&l[..], *v)),
    ));
    out
}
