//! The manifest text: an Agones `Fleet` and its `FleetAutoscaler` (two YAML
//! documents), each derived number explained in a comment beside it. The
//! game's part comes from its definition (the port and its transport, the
//! start time, `[agones]`; the containers: [`crate::containers`]), the
//! sizing from the bench result ([`crate::sizing`]).
//!
//! Written line by line ([`crate::yaml`]); the tests parse the text back
//! and validate it against Agones' CRD schemas.

use tickpack_game::agones::{AgonesDef, Reporter};
use tickpack_game::def::Transport;
use tickpack_game::GameDef;

use crate::containers::{main_container, sidecar_container};
use crate::launch::pod_launch;
use crate::options::{FleetOptions, DEFAULT_BUFFER};
use crate::sizing::Sizing;
use crate::yaml::Yaml;
use crate::FleetError;

/// How often the game servers tell Agones they are healthy: a server that
/// calls the SDK itself (`tickpack server --agones`) and the sidecar ping
/// `Health` about once a second.
pub const HEALTH_PING_S: u32 = 1;
/// Agones' health check period, seconds: a period without a ping counts as
/// a failure, so five pings a period let a late ping or two pass.
pub const HEALTH_PERIOD_S: u32 = 5;
/// Failed periods in a row before Agones marks the server Unhealthy (and
/// replaces it): 15 s without a ping, long enough to ride out a stalled
/// node for a moment, short enough that players are not left on a dead
/// server for long.
pub const HEALTH_FAILURES: u32 = 3;

/// The Fleet and the FleetAutoscaler for `def` (which must have an
/// `[agones]` table), sized by `sizing`, as one YAML stream.
pub fn render(sizing: &Sizing, def: &GameDef, opts: &FleetOptions) -> Result<String, FleetError> {
    opts.check(sizing)?;
    let agones = def.agones.as_ref().ok_or_else(|| {
        FleetError::Input(format!(
            "{}'s definition has no [agones] table (docs/agones.md)",
            def.name
        ))
    })?;
    let launch = pod_launch(sizing, def)?;
    let name = opts.fleet_name(&def.name);
    let mut y = Yaml::default();
    header(&mut y, sizing, opts);
    y.line(0, "apiVersion: \"agones.dev/v1\"");
    y.line(0, "kind: Fleet");
    y.line(0, "metadata:");
    y.string(2, "name", &name);
    y.line(2, "labels:");
    y.string(4, "app.kubernetes.io/name", &name);
    y.string(4, "tickpack.dev/game", &def.name);
    y.line(0, "spec:");
    y.comment(
        2,
        &format!(
            "The starting size; the FleetAutoscaler below takes over (--replicas, default {DEFAULT_BUFFER}:\n\
             the buffer)."
        ),
    );
    y.line(2, &format!("replicas: {}", opts.replicas));
    y.comment(
        2,
        "Packed: fill a node before the next, as the bench packed servers onto\n\
         its cores; the density below is what one node of the measured kind holds.",
    );
    y.line(2, "scheduling: Packed");
    y.line(2, "template:");
    y.line(4, "metadata:");
    y.line(6, "labels:");
    y.string(8, "app.kubernetes.io/name", &name);
    y.line(4, "spec:");
    y.comment(
        6,
        "The game server's container (Agones adds its SDK server beside it).",
    );
    y.string(6, "container", agones.container(&def.name));
    ports(&mut y, def);
    health(&mut y, def, agones);
    y.line(6, "template:");
    y.line(8, "spec:");
    y.line(10, "containers:");
    main_container(&mut y, sizing, def, agones, &launch, opts)?;
    if agones.reports == Reporter::Sidecar {
        sidecar_container(&mut y, def, agones, opts);
    }
    y.line(0, "---");
    autoscaler(&mut y, sizing, opts, &name);
    Ok(y.0)
}

fn header(y: &mut Yaml, s: &Sizing, opts: &FleetOptions) {
    let reps = s
        .over_repetitions
        .map(|n| format!(" (the lower median of {n} repetitions)"))
        .unwrap_or_default();
    y.comment(
        0,
        &format!(
            "Agones Fleet and FleetAutoscaler for the {} server, sized by\n\
             `tickpack agones fleet` from {}.\n\
             Measured on {}:\n\
             {} servers{reps} on {} server core(s) passed every QoS limit within the CPU\n\
             headroom target ({:.0} % busy): {:.2} servers per core.\n\
             Pinning: {}.",
            s.game,
            opts.source,
            s.machine,
            s.recommended_servers,
            s.server_cores,
            s.settings.headroom_target * 100.0,
            s.servers_per_core(),
            s.pinning.why
        ),
    );
    if let Some(t) = &s.tile {
        y.comment(0, &format!("Sized from a tile run: {t}."));
    }
}

fn ports(y: &mut Yaml, def: &GameDef) {
    let protocol = match def.transport {
        Transport::Udp => "UDP",
        Transport::Tcp => "TCP",
    };
    y.comment(
        6,
        &format!(
            "Players connect over {protocol} to the game's port (its definition's `port`);\n\
             Agones maps a free node port (Dynamic) to the container's {}.",
            def.port
        ),
    );
    y.line(6, "ports:");
    y.string(8, "- name", "game");
    y.line(10, "portPolicy: Dynamic");
    y.line(10, &format!("containerPort: {}", def.port));
    y.line(10, &format!("protocol: {protocol}"));
}

fn health(y: &mut Yaml, def: &GameDef, agones: &AgonesDef) {
    let who = match agones.reports {
        Reporter::Server => format!("The {} server (it calls the SDK itself)", def.name),
        Reporter::Sidecar => format!(
            "The sidecar, while the game answers its {} query,",
            def.query.protocol.as_str()
        ),
    };
    // The start time the bench allows one server: the game's definition's.
    let start = def.start_limit(1);
    y.comment(
        6,
        &format!(
            "{who} pings Health about every {HEALTH_PING_S} s.\n\
             initialDelaySeconds: the start time the bench allows one such server\n\
             ({} s) before its first health check.\n\
             periodSeconds: a period without a ping fails; {HEALTH_PERIOD_S} s holds about {} pings,\n\
             so a late one does not fail it.\n\
             failureThreshold: {HEALTH_FAILURES} failed periods ({} s without a ping) mark it Unhealthy\n\
             and Agones replaces it.",
            start.as_secs(),
            HEALTH_PERIOD_S / HEALTH_PING_S,
            HEALTH_PERIOD_S * HEALTH_FAILURES
        ),
    );
    y.line(6, "health:");
    y.line(8, "disabled: false");
    y.line(8, &format!("initialDelaySeconds: {}", start.as_secs()));
    y.line(8, &format!("periodSeconds: {HEALTH_PERIOD_S}"));
    y.line(8, &format!("failureThreshold: {HEALTH_FAILURES}"));
}

fn autoscaler(y: &mut Yaml, s: &Sizing, opts: &FleetOptions, fleet: &str) {
    let max = opts.max_replicas(s);
    y.line(0, "apiVersion: \"autoscaling.agones.dev/v1\"");
    y.line(0, "kind: FleetAutoscaler");
    y.line(0, "metadata:");
    y.string(2, "name", &format!("{fleet}-autoscaler"));
    y.line(0, "spec:");
    y.string(2, "fleetName", fleet);
    y.line(2, "policy:");
    y.line(4, "type: Buffer");
    y.line(4, "buffer:");
    y.comment(
        6,
        &format!(
            "bufferSize: Ready servers kept waiting for players (--buffer, default\n\
             {DEFAULT_BUFFER}: an allocation right after another still finds one while a\n\
             new server starts)."
        ),
    );
    y.line(6, &format!("bufferSize: {}", opts.buffer));
    y.comment(
        6,
        "minReplicas: never fewer servers, Ready or Allocated (--replicas;\n\
         Agones needs bufferSize <= minReplicas <= maxReplicas).",
    );
    y.line(6, &format!("minReplicas: {}", opts.replicas));
    let why_max = match opts.max_replicas {
        Some(_) => "as given (--max-replicas)".to_string(),
        None => format!(
            "default: the {} servers the bench recommends for one\n\
             measured machine; raise it with --max-replicas for a bigger cluster",
            s.recommended_servers
        ),
    };
    y.comment(6, &format!("maxReplicas: {why_max}."));
    y.line(6, &format!("maxReplicas: {max}"));
}
