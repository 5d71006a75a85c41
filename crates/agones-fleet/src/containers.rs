//! The pod's containers: the game server's ([`main_container`]: its
//! command from its definition, its CPU and memory from the bench) and,
//! when the definition says a sidecar reports to Agones, tickpack's sidecar
//! ([`sidecar_container`]: asks the game's `[query]`, calls the SDK).

use tickpack_game::agones::AgonesDef;
use tickpack_game::GameDef;

use crate::launch::PodLaunch;
use crate::options::FleetOptions;
use crate::sizing::{Cpu, MemorySource, Sizing, MEMORY_FLOOR_MIB, MEMORY_HEADROOM};
use crate::yaml::Yaml;
use crate::FleetError;

/// CPU of the sidecar, millicores (request == limit): a loop that queries
/// the game once a second and calls the SDK; not measured by the bench.
pub const SIDECAR_CPU_MILLIS: u32 = 50;
/// Memory of the sidecar, MiB (request == limit); not measured.
pub const SIDECAR_MEMORY_MIB: u32 = 32;
/// The sidecar container's name.
pub const SIDECAR_CONTAINER: &str = "tickpack-sidecar";

/// The game server's container: its image, command, environment and
/// resources, each explained.
pub fn main_container(
    y: &mut Yaml,
    s: &Sizing,
    def: &GameDef,
    agones: &AgonesDef,
    launch: &PodLaunch,
    opts: &FleetOptions,
) -> Result<(), FleetError> {
    y.string(12, "- name", agones.container(&def.name));
    let image = opts
        .image
        .clone()
        .unwrap_or_else(|| agones.image(&opts.version));
    y.string(14, "image", &image);
    y.comment(14, &launch_words(def, agones, launch));
    y.list(14, "command", &launch.command);
    y.line(14, "env:");
    for (k, v) in &launch.env {
        y.string(16, "- name", k);
        y.string(18, "value", v);
    }
    let cpu = s.cpu.quantity();
    let mem = format!("{}Mi", s.memory_mib);
    y.comment(14, &cpu_words(s));
    y.comment(14, &memory_words(s, &mem));
    y.line(14, "resources:");
    y.line(16, "requests:");
    y.string(18, "cpu", &cpu);
    y.string(18, "memory", &mem);
    y.line(16, "limits:");
    if matches!(s.cpu, Cpu::Whole { .. }) {
        y.string(18, "cpu", &cpu);
    }
    y.string(18, "memory", &mem);
    Ok(())
}

/// How the command came about: the settings the bench ran, rendered by
/// the definition, and who reports to Agones.
fn launch_words(def: &GameDef, agones: &AgonesDef, launch: &PodLaunch) -> String {
    let g = &launch.settings;
    let vars: Vec<String> = g
        .variables
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let mut words = format!(
        "Runs {} as the bench measured it ({} Hz, {} bots{}{}),\n\
         its command rendered from its definition for one server on 0.0.0.0:{}.",
        def.name,
        g.tick_hz,
        g.bots,
        if vars.is_empty() { "" } else { ", " },
        vars.join(", "),
        def.port
    );
    if !launch.files.is_empty() {
        words.push_str(&format!(
            "\nIts file(s) ({}) are written from the TICKPACK_FILE_N variables,\n\
             then the server replaces the shell.",
            launch.files.join(", ")
        ));
    }
    if !agones.args.is_empty() {
        words.push_str(&format!(
            "\n{} for Agones (the definition's [agones] args).",
            agones.args.join(" ")
        ));
    }
    if !launch.left_out.is_empty() {
        words.push_str(&format!(
            "\nNot carried over (the definition has no such variable): {}.",
            launch.left_out.join(" ")
        ));
    }
    words
}

fn cpu_words(s: &Sizing) -> String {
    match s.cpu {
        Cpu::Shared { millis } => format!(
            "CPU: {} server cores x 1000m / {} servers = {millis}m per server (rounded up\n\
             to a millicore). Servers share cores (see Pinning at the top): a request\n\
             with no CPU limit (Burstable), since a CFS quota would throttle a tick\n\
             that overruns its share of a 100 ms period, which players see as\n\
             lateness.",
            s.server_cores, s.recommended_servers
        ),
        Cpu::Whole { cpus } => format!(
            "CPU: {cpus} whole CPU(s), request == limit, in a Guaranteed pod, so the kubelet's\n\
             static CPU manager (--cpu-manager-policy=static) gives the container CPUs of\n\
             its own: the bench found pinning matters. The trade-off: Kubernetes\n\
             cannot pin two pods to one CPU, so a node holds at most one server per\n\
             CPU here, where the bench packed {:.2} servers per core ({}m each if\n\
             they shared cores instead). Guaranteed also needs Agones' injected SDK\n\
             server to set requests == limits (docs/agones.md).",
            s.servers_per_core(),
            s.shared_millis
        ),
    }
}

fn memory_words(s: &Sizing, mem: &str) -> String {
    match s.memory_source {
        MemorySource::Measured { peak_rss_bytes } => format!(
            "Memory: the largest peak RSS of one server over the bench's steps,\n\
             {:.1} MiB, x {}/{} headroom (the cgroup also counts page cache and kernel\n\
             memory; a long match meets what a short step did not), rounded up to a\n\
             MiB, at least {MEMORY_FLOOR_MIB} MiB: {mem}. Request == limit: the OOM killer,\n\
             not the node, stops a leak.",
            peak_rss_bytes as f64 / f64::from(1u32 << 20),
            MEMORY_HEADROOM.0,
            MEMORY_HEADROOM.1,
        ),
        MemorySource::Given => format!(
            "Memory: {mem} as given (--memory-mib): the result has no measured memory.\n\
             Request == limit: the OOM killer, not the node, stops a leak."
        ),
    }
}

/// The sidecar's command: tickpack asks the game's query protocol on its
/// port in the pod.
pub fn sidecar_command(def: &GameDef, agones: &AgonesDef) -> Vec<String> {
    vec![
        agones.tickpack.clone(),
        "agones-sidecar".into(),
        "--query".into(),
        def.query.protocol.as_str().into(),
        "--target".into(),
        format!("127.0.0.1:{}", def.port),
    ]
}

/// tickpack's sidecar beside the game server.
pub fn sidecar_container(y: &mut Yaml, def: &GameDef, agones: &AgonesDef, opts: &FleetOptions) {
    y.string(12, "- name", SIDECAR_CONTAINER);
    let image = match (&agones.sidecar_image, &opts.image) {
        (None, Some(given)) => given.clone(),
        _ => agones.sidecar_image(&opts.version),
    };
    y.string(14, "image", &image);
    y.comment(
        14,
        &format!(
            "Tells Agones about the {} server: Ready once it answers its\n\
             {} query on {}, Health while it does.\n\
             Not measured by the bench: a small fixed share, request == limit (which a\n\
             Guaranteed pod needs of every container).",
            def.name,
            def.query.protocol.as_str(),
            def.port
        ),
    );
    y.list(14, "command", &sidecar_command(def, agones));
    y.line(14, "resources:");
    for part in ["requests", "limits"] {
        y.line(16, &format!("{part}:"));
        y.string(18, "cpu", &format!("{SIDECAR_CPU_MILLIS}m"));
        y.string(18, "memory", &format!("{SIDECAR_MEMORY_MIB}Mi"));
    }
}
