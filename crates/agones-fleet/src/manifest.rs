//! The manifest text: an Agones `Fleet` and its `FleetAutoscaler` (two YAML
//! documents), each derived number explained in a comment beside it.
//!
//! Written line by line rather than serialized, since serde cannot write
//! comments; every string is a JSON string literal, which YAML reads as a
//! double-quoted scalar, so no value can break the document. The tests
//! parse the text back and validate it against Agones' CRD schemas.

use std::path::Path;

use tickpack_game::launch::{ReferenceServer, Slot};
use tickpack_game::openarena::{self, OpenArena};
use tickpack_report::bench::BenchSettings;
use tickpack_wire::TickRate;

use crate::sizing::{Cpu, Game, MemorySource, Sizing, MEMORY_FLOOR_MIB, MEMORY_HEADROOM};
use crate::FleetError;

/// Where the images put the tickpack binary.
pub const TICKPACK_IN_IMAGE: &str = "/usr/local/bin/tickpack";
/// The reference server's port in its container (`tickpack server`'s
/// default `--bind` port).
pub const REFERENCE_PORT: u16 = 27015;
/// The OpenArena image's user's home: the game's `$HOME`, where its config
/// file goes ([`openarena::CONFIG_FILE`] is relative to it).
pub const OPENARENA_HOME: &str = "/home/openarena";
/// How often the game servers tell Agones they are healthy: the reference
/// server (`--agones`) and the OpenArena sidecar ping `Health` about once a
/// second.
pub const HEALTH_PING_S: u32 = 1;
/// Agones' health check period, seconds: a period without a ping counts as
/// a failure, so five pings a period let a late ping or two pass.
pub const HEALTH_PERIOD_S: u32 = 5;
/// Failed periods in a row before Agones marks the server Unhealthy (and
/// replaces it): 15 s without a ping, long enough to ride out a stalled
/// node for a moment, short enough that players are not left on a dead
/// server for long.
pub const HEALTH_FAILURES: u32 = 3;
/// CPU of the OpenArena image's sidecar, millicores (request == limit): a
/// loop that queries the game once a second and calls the SDK; not
/// measured by the bench.
pub const SIDECAR_CPU_MILLIS: u32 = 50;
/// Memory of the sidecar, MiB (request == limit); not measured.
pub const SIDECAR_MEMORY_MIB: u32 = 32;

/// What the user chose (`tickpack agones fleet` flags).
#[derive(Debug, Clone, PartialEq)]
pub struct FleetOptions {
    /// The Fleet's name (and the autoscaler's, with `-autoscaler`).
    pub name: Option<String>,
    /// The container image; default `tickpack-server:VERSION` or
    /// `tickpack-openarena:VERSION`, as docs/agones.md builds them.
    pub image: Option<String>,
    /// The Fleet's starting size and the autoscaler's `minReplicas`.
    pub replicas: u32,
    /// Ready servers the autoscaler keeps waiting for players.
    pub buffer: u32,
    /// The autoscaler's `maxReplicas`; default: the recommended servers.
    pub max_replicas: Option<u32>,
    /// The result file, named in the header.
    pub source: String,
    /// tickpack's version, for the default image tag.
    pub version: String,
}

/// Ready servers kept by default: two, so one allocation right after
/// another still finds a Ready server while a new one starts (an OpenArena
/// server loads its map for a few seconds).
pub const DEFAULT_BUFFER: u32 = 2;

impl FleetOptions {
    /// The Fleet's name.
    pub fn fleet_name(&self, game: Game) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("tickpack-{}", game.as_str()))
    }

    fn image(&self, game: Game) -> String {
        self.image.clone().unwrap_or_else(|| match game {
            Game::Reference => format!("tickpack-server:{}", self.version),
            Game::OpenArena => format!("tickpack-openarena:{}", self.version),
        })
    }

    /// Checks the names and Agones' rule bufferSize <= minReplicas <=
    /// maxReplicas (the webhook rejects anything else).
    pub fn check(&self, sizing: &Sizing) -> Result<(), FleetError> {
        let bad = |m: String| Err(FleetError::Input(m));
        let name = self.fleet_name(sizing.game);
        // The autoscaler's name adds 11 characters; fleetName is a DNS label.
        let label = |s: &str| {
            !s.is_empty()
                && s.len() <= 52
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !s.starts_with('-')
                && !s.ends_with('-')
        };
        if !label(&name) {
            return bad(format!(
                "--name {name:?}: 1-52 of a-z, 0-9 and '-', not starting or ending with '-'"
            ));
        }
        if self.image.as_deref().is_some_and(|i| i.trim().is_empty()) {
            return bad("--image must not be empty".into());
        }
        if self.buffer == 0 {
            return bad("--buffer must be at least 1".into());
        }
        if self.replicas < self.buffer {
            return bad(format!(
                "--replicas {} is below --buffer {}: Agones needs bufferSize <= minReplicas",
                self.replicas, self.buffer
            ));
        }
        let max = self.max_replicas(sizing);
        if max < self.replicas {
            return bad(format!(
                "--max-replicas {max} is below --replicas {}: Agones needs minReplicas <= maxReplicas",
                self.replicas
            ));
        }
        Ok(())
    }

    fn max_replicas(&self, sizing: &Sizing) -> u32 {
        self.max_replicas
            .unwrap_or_else(|| sizing.recommended_servers.max(self.replicas))
    }
}

/// A YAML text written line by line.
#[derive(Default)]
struct Yaml(String);

impl Yaml {
    fn line(&mut self, indent: usize, text: &str) {
        self.0.push_str(&" ".repeat(indent));
        self.0.push_str(text);
        self.0.push('\n');
    }

    /// A comment, one `#` line per line of `text`.
    fn comment(&mut self, indent: usize, text: &str) {
        for l in text.lines() {
            self.line(indent, format!("# {l}").trim_end());
        }
    }

    /// `key: "value"`, the value as a quoted string.
    fn string(&mut self, indent: usize, key: &str, value: &str) {
        self.line(indent, &format!("{key}: {}", quote(value)));
    }

    /// `- "value"` items.
    fn list(&mut self, indent: usize, key: &str, items: &[String]) {
        self.line(indent, &format!("{key}:"));
        for i in items {
            self.line(indent + 2, &format!("- {}", quote(i)));
        }
    }
}

/// A YAML double-quoted scalar: JSON's string literal is one.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The Fleet and the FleetAutoscaler, as one YAML stream.
pub fn render(sizing: &Sizing, opts: &FleetOptions) -> Result<String, FleetError> {
    opts.check(sizing)?;
    let game = sizing.game;
    let name = opts.fleet_name(game);
    let mut y = Yaml::default();
    header(&mut y, sizing, opts);
    y.line(0, "apiVersion: \"agones.dev/v1\"");
    y.line(0, "kind: Fleet");
    y.line(0, "metadata:");
    y.string(2, "name", &name);
    y.line(2, "labels:");
    y.string(4, "app.kubernetes.io/name", &name);
    y.string(4, "tickpack.dev/game", game.as_str());
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
    let main = match game {
        Game::Reference => "tickpack-server",
        Game::OpenArena => "openarena",
    };
    y.comment(
        6,
        "The game server's container (Agones adds its SDK server beside it).",
    );
    y.string(6, "container", main);
    ports(&mut y, game);
    health(&mut y, game);
    y.line(6, "template:");
    y.line(8, "spec:");
    y.line(10, "containers:");
    main_container(&mut y, sizing, opts, main)?;
    if game == Game::OpenArena {
        sidecar_container(&mut y, opts);
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
            s.game.as_str(),
            opts.source,
            s.machine,
            s.recommended_servers,
            s.server_cores,
            s.settings.headroom_target * 100.0,
            s.servers_per_core(),
            s.pinning.why
        ),
    );
}

fn ports(y: &mut Yaml, game: Game) {
    let (port, what) = match game {
        Game::Reference => (
            REFERENCE_PORT,
            "tickpack's protocol, UDP (`tickpack server`'s default port)",
        ),
        Game::OpenArena => (openarena::PORT, "Quake III's protocol, UDP (net_port)"),
    };
    y.comment(
        6,
        &format!(
            "Players connect over {what};\n\
             Agones maps a free node port (Dynamic) to the container's {port}."
        ),
    );
    y.line(6, "ports:");
    y.string(8, "- name", "game");
    y.line(10, "portPolicy: Dynamic");
    y.line(10, &format!("containerPort: {port}"));
    y.line(10, "protocol: UDP");
}

fn health(y: &mut Yaml, game: Game) {
    let who = match game {
        Game::Reference => "The reference server (--agones)",
        Game::OpenArena => "The sidecar, while the game answers its queries,",
    };
    // The start time the bench allows one server: the game's definition's.
    let start = tickpack_game::registry::find(game.as_str())
        .map_or(std::time::Duration::from_secs(20), |(d, _)| {
            d.start_limit(1)
        });
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

/// The command line of the game server in its container.
pub fn game_command(s: &Sizing) -> Result<Vec<String>, FleetError> {
    let g = s.ladder_game.as_ref();
    let tick_hz = g.map_or(s.settings.tick_hz, |g| g.tick_hz);
    let players = g.map_or(s.settings.players_per_server, |g| g.players_per_server);
    let bots = g.map_or(s.settings.bots_per_server, |g| g.bots_per_server);
    let home = Path::new(OPENARENA_HOME);
    let slot = |port| Slot {
        ip: "0.0.0.0",
        port,
        id: 1,
        dir: home,
        tickpack: Path::new(TICKPACK_IN_IMAGE),
    };
    let bad = |m: String| FleetError::Input(m);
    match s.game {
        Game::Reference => {
            let server = ReferenceServer {
                tick: TickRate::for_server(tick_hz).ok_or_else(|| {
                    bad(format!(
                        "the result's tick rate {tick_hz} Hz is out of range"
                    ))
                })?,
                max_players: u8::try_from(players.max(1)).map_err(|_| {
                    bad(format!(
                        "the result's {players} players per server is out of range"
                    ))
                })?,
                bots: u8::try_from(bots)
                    .map_err(|_| bad(format!("the result's {bots} bots is out of range")))?,
                cost: s.settings.cost.clone(),
                name: None,
            };
            let mut argv = server.spec().argv(&slot(REFERENCE_PORT));
            argv.push("--agones".into());
            Ok(argv)
        }
        Game::OpenArena => Ok(openarena_server(s)?.spec().argv(&slot(openarena::PORT))),
    }
}

/// The OpenArena settings the result recorded (`game_settings`), with the
/// game's defaults for what an older result left out.
fn openarena_server(s: &Sizing) -> Result<OpenArena, FleetError> {
    let gs = s
        .ladder_game
        .as_ref()
        .map_or(&s.settings.game_settings, |g| &g.game_settings);
    let d = OpenArena::default();
    let small = |v: Option<u32>, key: &str| -> Result<Option<u8>, FleetError> {
        v.map(|n| {
            u8::try_from(n).map_err(|_| {
                FleetError::Input(format!("the result's OpenArena {key} {n} is out of range"))
            })
        })
        .transpose()
    };
    Ok(OpenArena {
        maps: if gs.maps.is_empty() {
            d.maps
        } else {
            gs.maps.clone()
        },
        players: small(gs.slots_filled, "slots_filled")?.unwrap_or(d.players),
        bots: small(gs.bots, "bots")?.unwrap_or(d.bots),
        sv_fps: match gs.tick_hz {
            Some(t) => u16::try_from(t).map_err(|_| {
                FleetError::Input(format!("the result's OpenArena sv_fps {t} is out of range"))
            })?,
            None => d.sv_fps,
        },
        args: gs
            .game_args
            .iter()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    })
}

fn main_container(
    y: &mut Yaml,
    s: &Sizing,
    opts: &FleetOptions,
    name: &str,
) -> Result<(), FleetError> {
    y.string(12, "- name", name);
    y.string(14, "image", &opts.image(s.game));
    let argv = game_command(s)?;
    match s.game {
        Game::Reference => {
            y.comment(
                14,
                &bench_settings_words(&s.settings, "the reference server"),
            );
            y.list(14, "command", &argv);
        }
        Game::OpenArena => {
            let oa = openarena_server(s)?;
            y.comment(
                14,
                &format!(
                    "The OpenArena server as the bench ran it (map rotation, bots and\n\
                     sv_fps from the result). Its config ({}) is written from\n\
                     TICKPACK_OA_CONFIG, then the server replaces the shell.",
                    openarena::CONFIG_FILE
                ),
            );
            let cfg = Path::new(OPENARENA_HOME).join(openarena::CONFIG_FILE);
            let dir = cfg.parent().unwrap_or(Path::new(OPENARENA_HOME));
            let script = format!(
                "mkdir -p {dir} && printf '%s' \"$TICKPACK_OA_CONFIG\" > {cfg} && exec \"$@\"",
                dir = dir.display(),
                cfg = cfg.display()
            );
            let mut command = vec!["/bin/sh".into(), "-c".into(), script, "openarena".into()];
            command.extend(argv);
            y.list(14, "command", &command);
            y.line(14, "env:");
            y.string(16, "- name", "HOME");
            y.string(18, "value", OPENARENA_HOME);
            y.string(16, "- name", "TICKPACK_OA_CONFIG");
            y.string(18, "value", &oa.config());
        }
    }
    let cpu = s.cpu.quantity();
    let mem = format!("{}Mi", s.memory_mib);
    let per_core = s.servers_per_core();
    let cpu_words = match s.cpu {
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
             CPU here, where the bench packed {per_core:.2} servers per core ({}m each if\n\
             they shared cores instead). Guaranteed also needs Agones' injected SDK\n\
             server to set requests == limits (docs/agones.md).",
            s.shared_millis
        ),
    };
    let mem_words = match s.memory_source {
        MemorySource::Measured { peak_rss_bytes } => format!(
            "Memory: the largest peak RSS of one server over the bench's steps,\n\
             {:.1} MiB, x {}/{} headroom (the cgroup also counts page cache and kernel\n\
             memory; a long match meets what a short step did not), rounded up to a\n\
             MiB, at least {MEMORY_FLOOR_MIB} MiB: {}. Request == limit: the OOM killer,\n\
             not the node, stops a leak.",
            peak_rss_bytes as f64 / f64::from(1u32 << 20),
            MEMORY_HEADROOM.0,
            MEMORY_HEADROOM.1,
            mem
        ),
        MemorySource::Given => format!(
            "Memory: {mem} as given (--memory-mib): the result has no measured memory.\n\
             Request == limit: the OOM killer, not the node, stops a leak."
        ),
    };
    y.comment(14, &cpu_words);
    y.comment(14, &mem_words);
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

fn bench_settings_words(s: &BenchSettings, what: &str) -> String {
    format!(
        "Runs {what} as the bench measured it ({} Hz, {} players,\n\
         {} bots, cost {}); --agones makes it call Ready and ping Health.",
        s.tick_hz, s.players_per_server, s.bots_per_server, s.cost
    )
}

fn sidecar_container(y: &mut Yaml, opts: &FleetOptions) {
    y.string(12, "- name", "tickpack-sidecar");
    y.string(14, "image", &opts.image(Game::OpenArena));
    y.comment(
        14,
        &format!(
            "Tells Agones about the OpenArena server: Ready once it answers its\n\
             getinfo query on {port}, Health while it does.\n\
             Not measured by the bench: a small fixed share, request == limit (which a\n\
             Guaranteed pod needs of every container).",
            port = openarena::PORT
        ),
    );
    y.list(
        14,
        "command",
        &[
            TICKPACK_IN_IMAGE.into(),
            "agones-sidecar".into(),
            "--game".into(),
            "openarena".into(),
            "--target".into(),
            format!("127.0.0.1:{}", openarena::PORT),
        ],
    );
    y.line(14, "resources:");
    for part in ["requests", "limits"] {
        y.line(16, &format!("{part}:"));
        y.string(18, "cpu", &format!("{SIDECAR_CPU_MILLIS}m"));
        y.string(18, "memory", &format!("{SIDECAR_MEMORY_MIB}Mi"));
    }
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
