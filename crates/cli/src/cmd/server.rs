//! `tickpack server`: flags of the reference game server; the driver (tick
//! loop, drain, metrics) is [`tickpack_server::run`].

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use tickpack_net::wait::WaitMode;
use tickpack_sim::world::CostProfile;
use tickpack_sim::{FloodLimits, ServerConfig};

use tickpack_agones::driver::OBSERVE_EVERY;
use tickpack_agones::{Observation, SdkClient, Settings};
use tickpack_server::Live;

use super::{agones_sidecar, check_cpus, parse_addr, parse_positive_duration};
use crate::exit::{fail, Code, Failure};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Timer {
    /// timerfd + poll + a short adaptive spin (the default)
    Precise,
    /// plain clock_nanosleep to the tick; datagrams wait for the tick (baseline)
    Plain,
}

/// Where the server listens by default: every address, at the port its
/// built-in game definition gives.
fn default_bind() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], super::GameArg::reference().def.port))
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on (UDP); port 0 picks a free port, printed at start
    /// [default: 0.0.0.0 and the port of this server's game definition].
    #[arg(long, default_value_t = default_bind(), hide_default_value = true, value_parser = parse_addr)]
    pub bind: SocketAddr,
    /// Ticks per second.
    #[arg(long, default_value_t = tickpack_wire::TickRate::DEFAULT, value_parser = super::parse_tick_rate)]
    pub tick_hz: tickpack_wire::TickRate,
    /// Human player slots.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u8).range(1..=255))]
    pub max_players: u8,
    /// Server-side bots that move, aim and shoot like players (they cost CPU, not slots).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=64))]
    pub bots: u8,
    /// Bytes of each snapshot datagram sent to each player every tick.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u16).range(64..=65000))]
    pub snapshot_bytes: u16,
    /// Game work per tick: light, default (= reference), heavy, a factor of the
    /// reference (e.g. 2.5) or of a profile (heavy*2).
    /// The default approximates one CS 1.6-era server with 12 players
    /// (see docs/methodology.md).
    #[arg(long, default_value = "default", value_parser = parse_cost)]
    pub cost: CostProfile,
    /// Serve Prometheus metrics over HTTP on this address (e.g. 127.0.0.1:9100).
    #[arg(long, value_parser = parse_addr)]
    pub metrics: Option<SocketAddr>,
    /// Pin the server to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// How to wait for the next tick.
    #[arg(long, value_enum, default_value = "precise")]
    pub timer: Timer,
    /// Wake for the tick only and read datagrams just before it (one wake-up
    /// per tick however many players send; pings and handshakes are answered
    /// at the next tick instead of at once).
    #[arg(long)]
    pub read_at_tick: bool,
    /// Server name shown to server browsers (A2S_INFO).
    #[arg(long, default_value = "tickpack reference server")]
    pub name: String,
    /// Stop by itself after this long (default: run until SIGTERM or Ctrl-C).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Seed of the world (map layout, bots).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Pings answered per second to each source that is not a connected
    /// player (2.5x that to all of them together); 0 lifts the limit, e.g.
    /// for long `tickpack ping` runs. Hellos, connects, A2S queries and stats
    /// requests have fixed limits (docs/design.md, Trust).
    #[arg(long, default_value_t = FloodLimits::DEFAULT_PING_PER_S)]
    pub ping_limit: u32,
    /// Speak the Agones SDK (HTTP API of the SDK server on 127.0.0.1):
    /// Ready once listening, Health while the tick loop runs, the players
    /// as the `players` list and counter (and player tracking where it is
    /// on), the recent tick p99 and the player count as the labels
    /// `agones.dev/sdk-tick-p99-us` and `agones.dev/sdk-players`, Shutdown when the match ends or on
    /// SIGTERM. On by itself when AGONES_SDK_HTTP_PORT or
    /// AGONES_SDK_GRPC_PORT is set. Exits 5 if no SDK server answers at
    /// start (docs/agones.md).
    #[arg(long)]
    pub agones: bool,
    /// The SDK server's HTTP port on 127.0.0.1 (implies --agones)
    /// [default: $AGONES_SDK_HTTP_PORT, else 9358].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub agones_http_port: Option<u16>,
}

fn parse_cost(s: &str) -> Result<CostProfile, String> {
    s.parse::<CostProfile>().map_err(|e| e.to_string())
}

/// The host's health-check key, when the host gave one
/// ([`tickpack_wire::HEALTH_KEY_ENV`]); one that is not a key is exit 2.
fn health_key_from_env() -> Result<Option<tickpack_wire::HealthKey>, Failure> {
    let Some(text) = std::env::var_os(tickpack_wire::HEALTH_KEY_ENV) else {
        return Ok(None);
    };
    text.to_str()
        .and_then(tickpack_wire::HealthKey::from_hex)
        .map(Some)
        .ok_or_else(|| {
            fail(
                Code::Config,
                format!(
                    "{}: not a health-check key (64 hex digits, given by tickpack host)",
                    tickpack_wire::HEALTH_KEY_ENV
                ),
            )
        })
}

pub fn run(a: Args) -> Result<(), Failure> {
    if let Some(cpu) = a.cpu {
        check_cpus("--cpu", &[cpu])?;
    }
    // Before anything starts: a missing SDK server is exit 5, not a
    // server that runs unseen by Agones.
    let sdk = agones_sidecar::connect(a.agones, a.agones_http_port, "--agones-http-port")?;
    let health_key = health_key_from_env()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let live = sdk.as_ref().map(|_| Arc::new(Live::default()));
    let reporter = sdk.map(|(client, settings)| {
        let live = live.clone().expect("made with the client");
        std::thread::Builder::new()
            .name("agones".into())
            .spawn(move || report_to_agones(&client, settings, &live))
            .context("starting the Agones reporter thread")
    });
    let reporter = reporter.transpose()?;
    let opts = tickpack_server::Options {
        config: ServerConfig {
            tick_hz: a.tick_hz,
            max_players: a.max_players,
            bots: a.bots,
            snapshot_len: a.snapshot_bytes,
            name: a.name.clone(),
            cost: a.cost,
            seed: a.seed,
            flood: FloodLimits::default().with_ping_rate(a.ping_limit),
            health_key,
            ..Default::default()
        },
        bind: a.bind,
        cpu: a.cpu,
        timer: match a.timer {
            Timer::Precise => WaitMode::Precise,
            Timer::Plain => WaitMode::Plain,
        },
        read_at_tick: a.read_at_tick,
        metrics: a.metrics,
        duration: a.duration,
        live: live.clone(),
    };
    let stopped = tickpack_server::run(opts, &stop, |local| {
        // The line scripts and tests wait for; keep its shape.
        println!(
            "tickpack server listening on {local} (tick {} Hz, {} slots, {} bots, {} B snapshots, pid {})",
            a.tick_hz,
            a.max_players,
            a.bots,
            a.snapshot_bytes,
            std::process::id()
        );
        let _ = std::io::stdout().flush();
    });
    // The match ended, the server was told to stop, or it failed: the
    // reporter says Shutdown and ends.
    if let (Some(live), Some(h)) = (&live, reporter) {
        live.set_ended();
        let _ = h.join();
    }
    let stopped = stopped.map_err(|e| Failure {
        code: if e.is_config() {
            Code::Config
        } else {
            Code::Runtime
        },
        error: e.into(),
    })?;
    let s = stopped.stats;
    eprintln!(
        "tickpack server stopped after {} ticks: frame p99 {} us, tick lateness p99 {} us, {} overruns, {} malformed datagrams dropped, {} requests rate-limited, {} dropped by the kernel (receive buffer full), {} health checks refused as stale (replayed or old)",
        s.tick, s.frame_p99_us, s.lateness_p99_us, s.overruns, s.malformed, s.rate_limited, s.socket_drops,
        s.checks.map_or(0, |c| c.stale)
    );
    Ok(())
}

/// The Agones reporter's thread: what the tick loop shows in `live`,
/// turned into SDK calls until Shutdown.
fn report_to_agones(client: &SdkClient, settings: Settings, live: &Live) {
    let mut errors = agones_sidecar::ErrorLog::new();
    tickpack_agones::drive(
        client,
        settings,
        OBSERVE_EVERY,
        || {
            let seen = live.read();
            Observation {
                serving: seen.listening,
                progress: seen.ticks,
                players: seen.slow.players,
                tick_p99_us: seen.slow.tick_p99_us,
                ending: seen.ended,
            }
        },
        agones_sidecar::print_action,
        |e| errors.note(e),
    );
}

#[cfg(test)]
mod launch_contract_tests {
    use std::path::Path;

    use clap::Parser;
    use tickpack_host::launch::{ReferenceServer, Slot, Word};
    use tickpack_wire::TickRate;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(r: &ReferenceServer) -> Args {
        let slot = Slot {
            ip: "10.1.0.2",
            port: 27016,
            id: 1,
            dir: Path::new("/run/i1"),
            tickpack: Path::new("/bin/tickpack"),
            rcon_password: None,
        };
        let argv = r.spec().argv(&slot);
        assert_eq!(argv[..2], ["/bin/tickpack", "server"]);
        let flags = std::iter::once("tickpack server".to_string()).chain(argv[2..].iter().cloned());
        match Cli::try_parse_from(flags) {
            Ok(c) => c.args,
            Err(e) => panic!("`tickpack server` refuses the flags {argv:?}: {e}"),
        }
    }

    #[test]
    fn the_reference_servers_launch_flags_parse_back_to_the_same_options() {
        for r in [
            ReferenceServer {
                tick: TickRate::new(64).unwrap(),
                max_players: 10,
                bots: 2,
                cost: "heavy*2".into(),
                name: Some(Word::text("s1")),
            },
            ReferenceServer {
                tick: TickRate::new(1000).unwrap(),
                max_players: 255,
                bots: 0,
                cost: "light".into(),
                name: None,
            },
        ] {
            let a = parse(&r);
            // Every option, so a new one must be added here too.
            let ReferenceServer {
                tick,
                max_players,
                bots,
                cost,
                name,
            } = &r;
            assert_eq!(a.bind, "10.1.0.2:27016".parse().unwrap());
            assert_eq!(a.tick_hz.hz(), tick.hz());
            assert_eq!(a.max_players, *max_players);
            assert_eq!(a.bots, *bots);
            assert_eq!(a.cost, parse_cost(cost).unwrap());
            match name {
                Some(_) => assert_eq!(a.name, "s1"),
                None => assert_eq!(a.name, "tickpack reference server"),
            }
        }
    }
}
