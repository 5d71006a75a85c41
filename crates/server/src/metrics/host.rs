//! The Prometheus families of a host: one sample per instance, labelled
//! `host`, `instance` and `address` (read by scripts and tests: keep them).
//!
//! The host's status is passed in as [`Instance`] rows, so this crate does
//! not depend on the host crate.

use prometheus::proto::MetricFamily;

use super::{family, Kind};

/// What the host knows of one instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Instance {
    pub id: String,
    pub address: String,
    /// Running and answering.
    pub up: bool,
    pub restarts: u32,
    /// CPU use over the last second, in percent of one core.
    pub cpu_percent: Option<f64>,
    pub tick_p99_us: Option<u32>,
    pub frame_p99_us: Option<u32>,
    pub players: Option<u32>,
    pub memory_bytes: Option<u64>,
    pub oom_kills: u64,
}

/// The families of host `host` with these instances.
pub fn families(host: &str, instances: &[Instance]) -> Vec<MetricFamily> {
    let per = |name: &str, help: &str, kind: Kind, f: &dyn Fn(&Instance) -> Option<f64>| {
        let rows: Vec<([(&str, &str); 3], f64)> = instances
            .iter()
            .filter_map(|i| {
                f(i).map(|v| {
                    (
                        [
                            ("host", host),
                            ("instance", i.id.as_str()),
                            ("address", i.address.as_str()),
                        ],
                        v,
                    )
                })
            })
            .collect();
        family(name, help, kind, rows.iter().map(|(l, v)| (&l[..], *v)))
    };
    vec![
        per(
            "tickpack_instance_up",
            "1 when the instance is running and answering.",
            Kind::Gauge,
            &|i| Some(if i.up { 1.0 } else { 0.0 }),
        ),
        per(
            "tickpack_instance_restarts_total",
            "Restarts by the supervisor.",
            Kind::Counter,
            &|i| Some(f64::from(i.restarts)),
        ),
        per(
            "tickpack_instance_cpu_ratio",
            "CPU use over the last second, in cores.",
            Kind::Gauge,
            &|i| i.cpu_percent.map(|c| c / 100.0),
        ),
        per(
            "tickpack_instance_tick_lateness_p99_seconds",
            "p99 tick lateness the instance reports.",
            Kind::Gauge,
            &|i| i.tick_p99_us.map(|v| f64::from(v) / 1e6),
        ),
        per(
            "tickpack_instance_frame_p99_seconds",
            "p99 frame time the instance reports.",
            Kind::Gauge,
            &|i| i.frame_p99_us.map(|v| f64::from(v) / 1e6),
        ),
        per(
            "tickpack_instance_players",
            "Connected players.",
            Kind::Gauge,
            &|i| i.players.map(f64::from),
        ),
        per(
            "tickpack_instance_memory_bytes",
            "Memory in use.",
            Kind::Gauge,
            &|i| i.memory_bytes.map(|v| v as f64),
        ),
        per(
            "tickpack_instance_oom_kills_total",
            "Processes killed by the OOM killer.",
            Kind::Counter,
            &|i| Some(i.oom_kills as f64),
        ),
    ]
}
