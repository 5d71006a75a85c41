//! `tickpack agones-sidecar`: flags of the sidecar for games we did not
//! write ([`tickpack_agones::sidecar::run`]), and what `tickpack server
//! --agones` shares with it: finding and checking the SDK server before
//! anything starts ([`connect`]), and printing SDK failures without
//! flooding the log ([`ErrorLog`]).

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tickpack_agones::endpoint;
use tickpack_agones::sidecar::{self, Options};
use tickpack_agones::{Action, SdkClient, SdkError, Settings};
use tickpack_game::query::Query;

use super::{parse_game, parse_positive_duration, parse_target, GameArg};
use tickpack_sys::text::{escape, EXCERPT, SHORT};

use crate::exit::{fail, Code, Failure};

#[derive(clap::Args, Debug)]
pub struct SidecarArgs {
    /// The game beside which the sidecar runs: a built-in game or a
    /// definition file's path (docs/games.md). Its query protocol is asked:
    /// q3 `getstatus`, A2S `A2S_INFO` (also the tickpack protocol's).
    #[arg(long, value_name = "NAME|FILE", value_parser = parse_game,
          required_unless_present = "query", conflicts_with = "query")]
    pub game: Option<GameArg>,
    /// Instead of --game: the query protocol alone (q3, a2s or tickpack, as
    /// a definition's `[query] protocol`), with --target; what the
    /// manifests of `tickpack agones fleet` run, so a game from a file
    /// needs no file in the sidecar's image.
    #[arg(long, value_name = "PROTOCOL", value_parser = parse_query, requires = "target")]
    pub query: Option<tickpack_game::QueryProtocol>,
    /// The game's query address [default: 127.0.0.1 and the game's port,
    /// its definition's `port`].
    #[arg(long, value_parser = parse_target)]
    pub target: Option<SocketAddr>,
    /// The SDK server's HTTP port on 127.0.0.1 [default: $AGONES_SDK_HTTP_PORT,
    /// else 9358].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub sdk_http_port: Option<u16>,
    /// Time between two queries (ioquake3 answers one `getstatus` a second
    /// per address, so at least 1s for a game on that engine).
    #[arg(long, default_value = "1s", value_parser = parse_positive_duration)]
    pub every: Duration,
}

/// Finds the SDK server (`asked`: `--agones`; a port flag or Agones'
/// variables also turn it on) and checks it answers `GET /gameserver`;
/// the reporter's settings say where the GameServer takes players.
/// `None`: Agones is off. A variable that is not a port is exit 2; no
/// answer is exit 5, saying where it looked.
pub fn connect(
    asked: bool,
    port: Option<u16>,
    port_flag: &str,
) -> Result<Option<(SdkClient, Settings)>, Failure> {
    let Some(ep) = endpoint::resolve(asked, port, port_flag, |k| std::env::var(k).ok())
        .map_err(|e| fail(Code::Config, e))?
    else {
        return Ok(None);
    };
    let client = SdkClient::new(ep.addr);
    match client.game_server() {
        Ok(gs) => {
            let sinks = gs.player_sinks();
            let mut to: Vec<&str> = [
                (sinks.list, "the players list"),
                (sinks.counter, "the players counter"),
                (sinks.tracking, "player tracking"),
            ]
            .iter()
            .filter_map(|(on, what)| on.then_some(*what))
            .collect();
            if to.is_empty() {
                to.push("nowhere (the GameServer has no players list or counter)");
            }
            eprintln!(
                "agones: SDK server at {ep}: GameServer {:?} is {}; players go to {}",
                gs.object_meta.name,
                gs.status.state,
                to.join(", ")
            );
            let settings = Settings {
                sinks,
                ..Settings::default()
            };
            Ok(Some((client, settings)))
        }
        Err(e) => Err(fail(
            Code::Unreachable,
            format!(
                "no Agones SDK server answered at {ep}; set {} or {port_flag} to its HTTP port, or run without Agones: {}",
                endpoint::ENV_HTTP_PORT,
                match e {
                    SdkError::Unreachable { reason, .. } => reason,
                    other => other.to_string(),
                }
            ),
        )),
    }
}

/// Prints SDK failures: a message when it differs from the last one, or
/// once a minute while it repeats (a missing SDK server fails every ping).
pub struct ErrorLog {
    last: Option<(String, Instant)>,
    repeats: u64,
}

impl ErrorLog {
    pub fn new() -> ErrorLog {
        ErrorLog {
            last: None,
            repeats: 0,
        }
    }

    pub fn note(&mut self, e: &SdkError) {
        let msg = e.to_string();
        match &self.last {
            Some((m, at)) if *m == msg && at.elapsed() < Duration::from_secs(60) => {
                self.repeats += 1;
            }
            _ => {
                let again = if self.repeats > 0 {
                    format!(" (and {} more times)", self.repeats)
                } else {
                    String::new()
                };
                eprintln!("agones: {}{again}", escape(&msg, EXCERPT));
                self.last = Some((msg, Instant::now()));
                self.repeats = 0;
            }
        }
    }
}

/// Prints the SDK calls a reader of the log wants to see (not each ping).
pub fn print_action(a: &Action) {
    match a {
        Action::Ready => eprintln!("agones: Ready"),
        Action::Shutdown => eprintln!("agones: Shutdown"),
        // Player names come from the game server: escaped and cut.
        Action::AddPlayer(p) => eprintln!("agones: player \"{}\" joined", escape(p, SHORT)),
        Action::RemovePlayer(p) => eprintln!("agones: player \"{}\" left", escape(p, SHORT)),
        _ => {}
    }
}

/// clap's parser for `--query PROTOCOL`: a protocol the sidecar can ask.
fn parse_query(s: &str) -> Result<tickpack_game::QueryProtocol, String> {
    use tickpack_game::QueryProtocol;
    [
        QueryProtocol::Q3,
        QueryProtocol::A2s,
        QueryProtocol::Tickpack,
    ]
    .into_iter()
    .find(|p| p.as_str() == s)
    .ok_or_else(|| format!("{s:?}: the sidecar asks q3, a2s or tickpack"))
}

pub fn run_sidecar(a: SidecarArgs) -> Result<(), Failure> {
    // The game's name, its query protocol and its port (for the default
    // target): from --game, or --query with --target (clap requires one).
    let (what, protocol, port) = match (&a.game, a.query) {
        (Some(g), _) => (
            format!("--game {}", g.def.name),
            g.def.query.protocol,
            g.def.port,
        ),
        (None, Some(q)) => (format!("--query {}", q.as_str()), q, 0),
        (None, None) => return Err(fail(Code::Config, "--game or --query is needed")),
    };
    if protocol == tickpack_game::QueryProtocol::Gamedig {
        return Err(fail(
            Code::Config,
            format!("{what}: the sidecar asks q3 and a2s only, not gamedig protocols (yet)"),
        ));
    }
    let Some(query) = protocol.status_query() else {
        return Err(fail(
            Code::Config,
            format!(
                "{what}: its definition has no [query] protocol, so the sidecar has nothing to ask"
            ),
        ));
    };
    if query == Query::Q3Status && a.every < Duration::from_secs(1) {
        return Err(fail(
            Code::Config,
            format!(
                "--every {}: q3 servers answer one getstatus a second per address; use 1s or more",
                humantime::format_duration(a.every)
            ),
        ));
    }
    let target = a.target.unwrap_or(SocketAddr::from(([127, 0, 0, 1], port)));
    let (client, settings) = connect(true, a.sdk_http_port, "--sdk-http-port")?
        .expect("asked for, so resolved or refused");
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    eprintln!(
        "agones: watching {} at {target} every {}",
        a.game.as_ref().map_or("the game", |g| g.def.name.as_str()),
        humantime::format_duration(a.every)
    );
    let mut errors = ErrorLog::new();
    let done = sidecar::run(
        &Options {
            query,
            target,
            every: a.every,
            settings,
        },
        &client,
        &stop,
        print_action,
        |e| errors.note(e),
    )
    .with_context(|| format!("querying {target}"))?;
    eprintln!(
        "agones: sidecar stopped after {} SDK calls ({} failed)",
        done.calls, done.failures
    );
    Ok(())
}
