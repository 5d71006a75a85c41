//! `tickpack players`: emulated players against one or more servers.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tickpack_players::{IoMode, PlayersConfig, SizeDist};
use tickpack_report::PlayersResult;

use super::{
    check_cpus, check_output_file, parse_cpus, parse_duration, parse_game, parse_positive_duration,
    parse_target, CpuList, GameArg,
};
use crate::exit::{fail, Code, Failure, WithCode};
use crate::table;

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("servers").required(true).args(["target", "targets_file"])))]
#[command(after_help = concat!("Examples:
  tickpack players --target 127.0.0.1:PORT --players 12 --duration 30s --json p.json
  tickpack players --game NAME --target 198.18.0.3:PORT --players 6 --duration 30s
  tickpack players --game NAME --target 127.0.0.1:PORT --players 16 \
    --source-addrs 127.0.0.2-127.0.0.5
  kubectl get gameservers -o json | tickpack players --targets-file - --players 1200 --json lg1.json

NAME is a built-in game (see `tickpack games list`), PORT the port its
server listens on (its definition's `port`: `tickpack games show NAME`).

Several servers (--target A,B or --targets-file): --players is the total,
spread round robin (player i plays on server i mod the number of servers),
so 100 servers at 12 players each is --players 1200. Several load generator
machines: give each its share of the servers, start them together, then
`tickpack report merge` their --json files into one result.

With a game whose [players] protocol is q3 the players speak Quake III
protocol 71 to an ioquake3 server: challenge, connect, gamestate,
delta-coded snapshots, usercmds. ioquake3 answers connection requests from
one source address in a burst of 10, then one per second (two requests per
player), so the default warm-up grows with the players per server and
source address. --source-addrs spreads each server's players over several
local addresses (on loopback any of 127.0.0.0/8; `bench` adds its own on
the host side of its network paths), e.g. 12 players per server from three:
  tickpack players --game NAME --target 127.0.0.1:PORT --players 12 \
    --source-addrs 127.0.0.2-127.0.0.4

", exit_codes!()))]
pub struct Args {
    /// The game whose protocol the players speak: a built-in game (see
    /// `tickpack games list`) or a definition file's path, whose [players]
    /// protocol is reference (tickpack's server), q3 (Quake III protocol
    /// 71) or teeworlds7 (the 0.7 protocol, 4 players per source address)
    /// (docs/games.md) [default: the built-in game tickpack's players
    /// speak to natively].
    #[arg(long, default_value_t = GameArg::reference(), hide_default_value = true, value_name = "NAME|FILE", value_parser = parse_game)]
    pub game: GameArg,
    /// Server address; repeat (or separate with commas) to spread the players
    /// over several servers, round robin.
    #[arg(long, value_delimiter = ',', value_parser = parse_target)]
    pub target: Vec<SocketAddr>,
    /// The servers from a file instead of --target: one address (IP:PORT)
    /// per line (blank lines and # comments skipped), or the JSON of
    /// `kubectl get gameservers -o json` (Agones), of which the game servers
    /// in state Ready or Allocated are taken, at status.address and the
    /// port named "default" (else the first); `-` reads stdin. A bad line
    /// stops everything before any player starts: `FILE:LINE: reason`, exit
    /// code 2.
    #[arg(long, value_name = "FILE")]
    pub targets_file: Option<PathBuf>,
    /// Number of players in all, spread round robin over the servers.
    #[arg(long, default_value_t = 12)]
    pub players: usize,
    /// Local addresses the players' sockets bind: a comma list of
    /// addresses and FIRST-LAST ranges (e.g. 127.0.0.2-127.0.0.4); each
    /// server's players are spread over them round robin. With a game
    /// that limits players per source address (q3: 4), too few
    /// addresses is an error (exit 2) before any player starts
    /// [default: one, the kernel's choice].
    #[arg(long, value_name = "LIST", value_parser = parse_source_addrs)]
    pub source_addrs: Option<SourceAddrs>,
    /// Measured time (after the warm-up), e.g. 10s, 2m.
    #[arg(long, default_value = "10s", allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub duration: Duration,
    /// Time after start that is not measured (handshakes, settling)
    /// [default: 1s; teeworlds7: 2s; q3: 2s, plus 1s per player per
    /// server and source address beyond 5].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Commands per second per player [default: the server's tick rate;
    /// q3: 30, ioquake3's default cl_maxpackets; teeworlds7: 50, one
    /// new input per server tick].
    #[arg(long)]
    pub cmd_rate: Option<f64>,
    /// Command datagram size in bytes: a number or MIN-MAX (uniform).
    #[arg(long, default_value = "40-200", allow_hyphen_values = true)]
    pub cmd_size: String,
    /// Pings per second per player, for the bare network round trip (0: none).
    #[arg(long, default_value_t = 10.0)]
    pub ping_rate: f64,
    /// Ping datagram size in bytes.
    #[arg(long, default_value_t = 64)]
    pub ping_size: usize,
    /// Give up on a server that does not complete the handshake in this time
    /// [default: 3s; q3: the warm-up plus 5s; teeworlds7: 7s].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub connect_timeout: Option<Duration>,
    /// A command not reflected by a snapshot this long after it was due is
    /// lost; the run waits this long after the window for late snapshots.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub loss_deadline: Duration,
    /// Load generator threads (each takes a share of the players).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Pin the load generator threads to these CPUs (e.g. 0 or 0-1), round robin.
    #[arg(long, value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
    /// Spin instead of sleeping between events (one busy core per thread):
    /// the load generator then adds no wake-up latency of its own.
    #[arg(long)]
    pub busy_poll: bool,
    /// How each thread moves datagrams: `ring` (one io_uring for all its
    /// players' sockets: sends leave together, arrivals wait in the kernel,
    /// stamped, until the thread wakes), `epoll` (a system call per send
    /// and per readable socket), or `auto` (the ring where the kernel
    /// allows it, else epoll).
    #[arg(long, default_value = "auto", value_parser = IoMode::parse)]
    pub io: IoMode,
    /// Write the versioned result document (percentiles and serialized
    /// HdrHistograms) to this file; `-` for stdout.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Seed for the players' inputs and command sizes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No progress line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

impl Args {
    /// The servers: --target, or read from --targets-file (a bad line is a
    /// config error naming it).
    fn targets(&self) -> Result<Vec<SocketAddr>, Failure> {
        let Some(file) = &self.targets_file else {
            return Ok(self.target.clone());
        };
        // Only a regular file (or stdin), and no bigger than a list can be.
        use tickpack_sys::user_file::{read_bounded, read_text, Bounded, MAX_CONFIG_BYTES};
        let (name, text) = if file.as_os_str() == "-" {
            let bytes = read_bounded(std::io::stdin().lock(), MAX_CONFIG_BYTES).map_err(|e| {
                fail(
                    Code::Config,
                    match e {
                        Bounded::Io(e) => format!("--targets-file -: stdin: {e}"),
                        Bounded::TooLarge => {
                            format!("--targets-file -: stdin: more than {MAX_CONFIG_BYTES} bytes")
                        }
                    },
                )
            })?;
            let text = String::from_utf8(bytes)
                .map_err(|_| fail(Code::Config, "--targets-file -: stdin: not UTF-8 text"))?;
            ("<stdin>".to_string(), text)
        } else {
            let text = read_text(file, MAX_CONFIG_BYTES)
                .map_err(|e| fail(Code::Config, format!("--targets-file {e}")))?;
            (file.display().to_string(), text)
        };
        let t = super::targets_file::parse(&text, parse_target)
            .map_err(|e| fail(Code::Config, e.in_file(&name)))?;
        if t.from_kubectl && !self.quiet {
            eprintln!(
                "{name}: {} game server(s) {}{}",
                t.addrs.len(),
                super::targets_file::TAKEN_STATES.join(" or "),
                if t.skipped.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; skipped {}: {}",
                        t.skipped.len(),
                        super::targets_file::skipped_list(&t.skipped)
                    )
                }
            );
        }
        Ok(t.addrs)
    }

    pub fn config(&self) -> Result<PlayersConfig, Failure> {
        let targets = self.targets()?;
        let game = self.game.players_game()?;
        let source_addrs = self.source_addrs.clone().map(|s| s.0).unwrap_or_default();
        let per_source = tickpack_players::sources::most_per_source(
            self.players,
            targets.len(),
            source_addrs.len(),
        );
        let (warmup, connect_timeout) = defaults_for(game, per_source);
        let warmup = self.warmup.unwrap_or(warmup);
        let cfg = PlayersConfig {
            game,
            targets,
            source_addrs,
            per_source_limit: self.game.def.players.per_address.map(usize::from),
            players: self.players,
            duration: self.duration,
            warmup,
            cmd_rate_hz: self.cmd_rate,
            cmd_size: SizeDist::parse(&self.cmd_size).code(Code::Config)?,
            ping_hz: self.ping_rate,
            ping_size: self.ping_size,
            connect_timeout: self.connect_timeout.unwrap_or(connect_timeout.max(warmup)),
            loss_deadline: self.loss_deadline,
            threads: self.threads,
            cpus: self.cpus.clone().map(|c| c.0).unwrap_or_default(),
            busy_poll: self.busy_poll,
            io: self.io,
            seed: self.seed,
            presence: None,
            join_timeout: None,
            window: None,
        };
        cfg.validate().code(Code::Config)?;
        check_cpus("--cpus", &cfg.cpus)?;
        check_file_limit(&format!("--players {}", cfg.players), cfg.players)?;
        if let Some(p) = &self.json {
            check_output_file("--json", p)?;
        }
        Ok(cfg)
    }
}

/// `--source-addrs`, parsed.
#[derive(Debug, Clone)]
pub struct SourceAddrs(pub Vec<std::net::IpAddr>);

fn parse_source_addrs(s: &str) -> Result<SourceAddrs, String> {
    tickpack_players::sources::parse(s)
        .map(SourceAddrs)
        .map_err(|e| e.to_string())
}

/// The default warm-up and connect timeout for `per_source` players per
/// server and source address. An ioquake3 (Quake III protocol) server answers
/// connection requests (`getchallenge`, `connect`, and queries) from one
/// source address in a burst of 10, then one per second (sv_main.c,
/// `SVC_RateLimitAddress`), so players beyond the fifth from one address
/// wait about two seconds each.
pub fn defaults_for(game: tickpack_players::Protocol, per_source: usize) -> (Duration, Duration) {
    match game {
        tickpack_players::Protocol::Tickpack => (Duration::from_secs(1), Duration::from_secs(3)),
        tickpack_players::Protocol::Q3 => {
            let queued = (2 * per_source).saturating_sub(10) as u64;
            let warmup = Duration::from_secs(2 + queued);
            (warmup, warmup + Duration::from_secs(5))
        }
        // A 0.7 protocol (tw7) join is six round trips (token, connect, info,
        // ready, start info, enter game); the server rate-limits no
        // requests, only the players per address (refused at once).
        tickpack_players::Protocol::Tw7 => (Duration::from_secs(2), Duration::from_secs(7)),
    }
}

/// Descriptors a players run needs besides one socket per player (epoll,
/// timers, stdio, threads' own), with room to spare.
const FILES_BESIDES_PLAYERS: libc::rlim_t = 64;

/// Checks that this process may open a socket per player
/// (`RLIMIT_NOFILE`), before any is opened.
pub fn check_file_limit(what: &str, players: usize) -> Result<(), Failure> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the valid, writable `lim`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(()); // unknown: the socket errors will say (with errno)
    }
    let need = players as libc::rlim_t + FILES_BESIDES_PLAYERS;
    if lim.rlim_cur != libc::RLIM_INFINITY && need > lim.rlim_cur {
        return Err(fail(
            Code::Config,
            format!(
                "{what}: about {need} open files needed (one socket per player), but this process may open {} (raise it with `ulimit -n {need}`, or use fewer players)",
                lim.rlim_cur
            ),
        ));
    }
    Ok(())
}

/// Runs players per `cfg`, with a progress line unless `quiet`; returns the
/// result document. Ctrl-C ends the run early and still reports.
pub fn measure(cfg: &PlayersConfig, quiet: bool) -> Result<PlayersResult, Failure> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let live = Arc::new(tickpack_players::Live::default());
    let done = Arc::new(AtomicBool::new(false));
    let progress = (!quiet && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
        let (live, done) = (live.clone(), done.clone());
        let total = cfg.warmup + cfg.duration;
        let players = cfg.players;
        std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                eprint!(
                    "\r  {:>5.1}/{:.0}s  connected {}/{}  datagrams in {}  out {}   ",
                    t0.elapsed().as_secs_f64(),
                    total.as_secs_f64(),
                    live.connected.load(Ordering::Relaxed),
                    players,
                    live.snapshots.load(Ordering::Relaxed),
                    live.commands.load(Ordering::Relaxed),
                );
            }
            eprint!("\r{:80}\r", "");
        })
    });
    let outcome = tickpack_players::run(cfg, &stop, &live);
    done.store(true, Ordering::Relaxed);
    if let Some(p) = progress {
        let _ = p.join();
    }
    let outcome = outcome.code(Code::Runtime)?;
    Ok(tickpack_players::to_result(cfg, &outcome))
}

pub fn run(a: Args) -> Result<(), Failure> {
    let cfg = a.config()?;
    let result = measure(&cfg, a.quiet)?;
    print_summary(&result);
    if let Some(path) = &a.json {
        if path.as_os_str() == "-" {
            println!("{}", serde_json::to_string_pretty(&result)?);
        } else {
            tickpack_report::write_json_atomic(path, &result)?;
        }
    }
    if result.connected == 0 {
        return Err(fail(
            Code::Unreachable,
            format!("no player could connect: {}", result.errors.join("; ")),
        ));
    }
    if (result.connected as usize) < cfg.players {
        return Err(fail(
            Code::Unreachable,
            format!(
                "only {} of {} players connected: {}",
                result.connected,
                cfg.players,
                result.errors.join("; ")
            ),
        ));
    }
    if let Some(why) = loss(&result) {
        return Err(fail(Code::Lost, why));
    }
    Ok(())
}

/// What the players missed against the schedule, in words; `None` if
/// nothing.
pub fn loss(r: &PlayersResult) -> Option<String> {
    let mut why = vec![];
    if r.outages.count > 0 {
        why.push(format!(
            "{} outage(s), longest {:.0} ms",
            r.outages.count,
            r.outages.longest_us as f64 / 1000.0
        ));
    }
    if r.snapshots.lost > 0 {
        why.push(format!(
            "{} of {} expected snapshots lost",
            r.snapshots.lost, r.snapshots.expected
        ));
    }
    if r.commands.lost > 0 {
        why.push(format!(
            "{} of {} due commands not reflected within {} s",
            r.commands.lost,
            r.commands.due(),
            r.loss_deadline_s
        ));
    }
    (!why.is_empty()).then(|| format!("the players were not served: {}", why.join(", ")))
}

/// The terminal summary of a players run.
pub fn print_summary(r: &PlayersResult) {
    let w = 26;
    println!(
        "{}/{} {} players connected to {}; {:.1} s measured{} after {:.1} s warm-up; commands at {} Hz, server tick {} Hz",
        r.connected,
        r.players,
        r.game,
        r.targets.join(", "),
        r.duration_s,
        if r.interrupted { " (interrupted)" } else { "" },
        r.warmup_s,
        r.cmd_rate_hz,
        r.tick_hz.map_or(0, |t| t.hz()) // 0: no player learned it
    );
    println!("{}", table::header(w));
    println!(
        "{}",
        table::row_ms("transaction latency (ms)", w, &r.transaction_latency_us)
    );
    println!("{}", table::row_ms("network round trip (ms)", w, &r.rtt_us));
    if let Some(sp) = &r.server_ping_us {
        println!("{}", table::row_ms("server's own ping (ms)", w, sp));
    }
    println!(
        "{}",
        table::row_ms("server frame time (ms)", w, &r.server_frame_us)
    );
    println!(
        "{}",
        table::row_ms("tick lateness (ms)", w, &r.tick_lateness_us)
    );
    println!(
        "{}",
        table::row_ms("snapshot jitter (ms)", w, &r.snapshot_jitter_us)
    );
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "snapshots: {} expected, {} received, {} lost ({:.3}%)",
        r.snapshots.expected,
        r.snapshots.received,
        r.snapshots.lost,
        pct(r.snapshots.lost, r.snapshots.expected)
    );
    println!(
        "commands:  {} due, {} sent, {} reflected, {} lost ({:.3}%; not reflected within {} s)",
        r.commands.due(),
        r.commands.sent,
        r.commands.reflected,
        r.commands.lost,
        pct(r.commands.lost, r.commands.due()),
        r.loss_deadline_s
    );
    println!(
        "outages:   {} (no snapshot for 200 ms or more), {:.0} ms in all, longest {:.0} ms; {} reconnect(s)",
        r.outages.count,
        r.outages.total_us as f64 / 1000.0,
        r.outages.longest_us as f64 / 1000.0,
        r.reconnects
    );
    let per_s = |v: u64| v as f64 / r.duration_s.max(1e-9);
    println!(
        "traffic:   in {:.0} datagrams/s, {:.1} kB/s; out {:.0} datagrams/s, {:.1} kB/s (UDP payload)",
        per_s(r.traffic.datagrams_in),
        per_s(r.traffic.bytes_in) / 1000.0,
        per_s(r.traffic.datagrams_out),
        per_s(r.traffic.bytes_out) / 1000.0
    );
    let cpus = if !r.merged_from.is_empty() {
        format!("{} sources", r.merged_from.len())
    } else if r.load_generator_cpus.is_empty() {
        "unpinned".to_string()
    } else {
        format!("pinned to CPU {:?}", r.load_generator_cpus)
    };
    let io = if r.load_generator_io.is_empty() {
        String::new()
    } else {
        format!(", {} I/O", r.load_generator_io)
    };
    println!(
        "load generator: {} thread(s), {cpus}{io}, {:.1}% of one core",
        r.load_generator_threads,
        100.0 * r.load_generator_cpu_s / (r.duration_s + r.warmup_s).max(1e-9)
    );
    if r.decode_errors > 0 {
        println!("decode errors: {}", r.decode_errors);
    }
    for e in &r.errors {
        println!("problem: {e}");
    }
}
