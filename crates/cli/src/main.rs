//! `tickpack`: the one user-facing binary. Each subcommand lives in
//! `cmd/<name>.rs`: it parses flags into a validated config of the library
//! crates, runs, prints a human summary and optionally JSON.
//!
//! Exit codes (also in `--help` and the README):
//! 0 done; 1 internal or runtime error; 2 bad flags or config;
//! 3 isolation unavailable; 4 QoS failed; 5 target unreachable (a player
//! never connected, a probed server never answered, no Agones SDK server
//! answered); 6 the players lost snapshots or commands, or had an
//! outage; 7 `bench` found its servers idle (nothing loaded them: no
//! density); 141 (no message) when the reader of stdout or stderr went away.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The exit codes (see `exit.rs`), shown in every `--help`.
macro_rules! exit_codes {
    () => {
        "Exit codes: 0 done, 1 internal or runtime error, 2 bad flags or config
(checked before anything is started or created), 3 isolation unavailable,
4 QoS failed, 5 target unreachable (a player never connected, a probed server
never answered, no Agones SDK server answered), 6 players lost snapshots or
commands or had an outage, 7 bench found its servers idle (no players, bots or
load command loaded them: no density); 141 (quietly) when the reader of the output went
away."
    };
}

mod child;
mod cmd;
mod exit;
mod table;

const EXIT_CODES: &str = exit_codes!();
const AFTER_HELP: &str = concat!(
    exit_codes!(),
    "\n\nStart with: tickpack bench --quick   (a short consolidation ladder on this machine)"
);

/// Pack many latency-sensitive game servers onto one machine, and prove
/// with numbers that the players do not notice.
#[derive(Parser)]
#[command(name = "tickpack", version, after_help = AFTER_HELP, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the reference LAN game server (fixed tick, bots, game-like work).
    #[command(after_help = EXIT_CODES, allow_negative_numbers = true)]
    Server(cmd::server::Args),
    /// Emulate players against one or more servers and measure in-game
    /// transaction latency, round trip, server frame time and losses.
    ///
    /// Snapshots are expected for every server tick of the measured window
    /// and commands count as lost if not reflected within --loss-deadline,
    /// so a dead or restarted server shows as loss and outages (players
    /// reconnect and keep measuring). Exits 5 if a player never connected,
    /// 6 if anything was lost or there was an outage.
    #[command(allow_negative_numbers = true)]
    Players(cmd::players::Args),
    /// Measure the bare round trip to a server with closed-loop pings
    /// (the latency floor; compare with sockperf ping-pong).
    #[command(after_help = EXIT_CODES, allow_negative_numbers = true)]
    Ping(cmd::ping::Args),
    /// Query round trips of game servers' own query protocol (Quake III
    /// getinfo, Valve A2S_INFO) at a polite rate: how fast a server answers
    /// a server browser, which grows when it is starved of CPU. Not
    /// transaction latency. Exits 5 if a target never answered.
    #[command(after_help = EXIT_CODES, allow_negative_numbers = true)]
    Probe(cmd::probe::Args),
    /// Start a server and players on this machine, pinned to separate
    /// cores, and print what the players saw.
    #[command(after_help = EXIT_CODES, allow_negative_numbers = true)]
    Demo(cmd::demo::Args),
    /// The consolidation benchmark: add tiles of servers until a QoS limit
    /// fails; report density, CPU headroom, latency, power and cost.
    #[command(after_help = EXIT_CODES, allow_negative_numbers = true)]
    Bench(Box<cmd::bench::Args>),
    /// Rebuild the HTML report from result files (several side by side);
    /// `report merge`: players results of several load generators made one.
    #[command(allow_negative_numbers = true)]
    Report(cmd::report::Args),
    /// Machines, energy and money before and after consolidating.
    #[command(allow_negative_numbers = true)]
    Tco(cmd::tco::Args),
    /// What each isolation path (loopback, veth, bridge, macvlan) adds to a
    /// UDP request/response round trip, blocking and busy-polling.
    #[command(after_help = EXIT_CODES, allow_negative_numbers = true)]
    Latency(cmd::latency::Args),
    /// Run many isolated game servers on this machine: own IP, files, PIDs,
    /// CPU and memory each, placed on cores, restarted when they crash.
    #[command(after_help = EXIT_CODES, allow_negative_numbers = true)]
    Host(cmd::host::Args),
    /// Run beside a game server we did not write (any --game) under Agones:
    /// ask it its query protocol once a second and drive the Agones SDK
    /// from the answers: Ready after the first answer, Health while answers
    /// come (a hung server stops them, so Agones replaces it), the players
    /// named in the answers as the `players` list and counter, Shutdown on
    /// SIGTERM. Exits 5 if no SDK server answers at start.
    ///
    /// Example (the sidecar container of a GameServer pod; GAME is a name
    /// from `tickpack games`, PORT the port of its definition):
    ///   tickpack agones-sidecar --game GAME --target 127.0.0.1:PORT
    #[command(name = "agones-sidecar", after_help = EXIT_CODES, verbatim_doc_comment)]
    AgonesSidecar(cmd::agones_sidecar::SidecarArgs),
    /// The games tickpack knows and the check of your own: a game is a
    /// definition file (docs/games.md), taken by every --game flag.
    #[command(after_help = EXIT_CODES)]
    Games(cmd::games::Args),
    /// Kubernetes game-server hosting with Agones: `agones fleet` writes a
    /// Fleet and FleetAutoscaler sized from a bench result.
    Agones(cmd::agones::Args),
    #[command(name = "__instance-init", hide = true)]
    InstanceInit(cmd::host::InitArgs),
    /// A bounded flood of connectionless requests to a loopback server (benchmarks, tests).
    #[command(name = "__flood", hide = true)]
    Flood(cmd::flood::Args),
    /// The bench's players or prober, unprivileged, run by the bench
    /// (`tickpack_bench::readers`): an order on stdin, answers on stdout.
    #[command(name = "__readers", hide = true)]
    Readers { job: String },
    /// The host's health checks' decoder, unprivileged, run by the
    /// supervisor (`tickpack_host::supervisor::decoder`): a datagram in on
    /// stdin (a socket), what it says out.
    #[command(name = "__decoder", hide = true)]
    Decoder,
    /// The root process of a host (`tickpack_root::service`): its
    /// supervisor's requests in on stdin (a socket), checked, done,
    /// answered.
    #[command(name = "__root", hide = true)]
    Root,
    /// Under sudo, the one process that starts root processes (`__root`)
    /// for a command that gave root up: one per socket it is sent.
    #[command(name = "__root-broker", hide = true)]
    RootBroker {
        /// Removed at its end if it is an empty directory.
        #[arg(long)]
        remove_empty: Option<std::path::PathBuf>,
    },
}

/// A closed stdout or stderr (`tickpack host status --json | head`) ends
/// the program quietly, as for any Unix filter, instead of a panic: Rust
/// ignores SIGPIPE, so every `println!` to a closed pipe panics with
/// "failed printing to stdout: Broken pipe". SIGPIPE itself stays ignored
/// (a supervisor must survive a control client that hangs up); only that
/// panic is turned into exit code 141 (128 + SIGPIPE, what a shell shows
/// for a filter killed by it), without a message.
fn exit_quietly_on_closed_output() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        let printing = msg.starts_with("failed printing to stdout")
            || msg.starts_with("failed printing to stderr");
        if printing && msg.contains("Broken pipe") {
            std::process::exit(EXIT_BROKEN_PIPE);
        }
        default(info);
    }));
}

/// Exit code after the reader of our output went away.
const EXIT_BROKEN_PIPE: i32 = 128 + libc::SIGPIPE;

fn main() -> ExitCode {
    exit_quietly_on_closed_output();
    // What our parent left open (a directory of the host's `/`, a
    // harness's pipe) reaches no process we start, whoever starts it; each
    // spawn of an instance, load command or batch job marks them again
    // right before its `exec`. Best effort: a kernel without close_range
    // could not run the instances' walls either.
    let _ = tickpack_sys::fds::cloexec_above_stderr();
    let cli = Cli::parse();
    trace_events_as_json();
    let result = match cli.cmd {
        Command::Server(a) => cmd::server::run(a),
        Command::Players(a) => cmd::players::run(a),
        Command::Ping(a) => cmd::ping::run(a),
        Command::Probe(a) => cmd::probe::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Bench(a) => cmd::bench::run(*a),
        Command::Report(a) => cmd::report::run(a),
        Command::Tco(a) => cmd::tco::run(a),
        Command::Latency(a) => cmd::latency::run(a),
        Command::Host(a) => cmd::host::run(a),
        Command::AgonesSidecar(a) => cmd::agones_sidecar::run_sidecar(a),
        Command::Agones(a) => cmd::agones::run(a),
        Command::Games(a) => cmd::games::run(a),
        Command::InstanceInit(a) => cmd::host::instance_init(a),
        Command::Flood(a) => cmd::flood::run(a),
        Command::Readers { job } => std::process::exit(tickpack_bench::readers::serve(&job)),
        Command::Decoder => {
            // Nothing but its socket from here on (no file, no socket of
            // its own, no program, no signal): what it decodes is hostile.
            if let Err(e) = tickpack_root::confine::Filters::for_decoder().and_then(|f| f.apply()) {
                eprintln!("tickpack __decoder: {e}");
                std::process::exit(3);
            }
            std::process::exit(tickpack_host::supervisor::decoder::serve(std::io::stdin()))
        }
        Command::RootBroker { remove_empty } => {
            std::process::exit(tickpack_root::service::broker::serve(
                std::io::stdin(),
                std::path::Path::new("/proc/self/exe"),
                remove_empty.as_deref(),
            ))
        }
        Command::Root => std::process::exit(tickpack_root::service::serve(
            std::io::stdin(),
            &tickpack_root::service::Config::default(),
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            // One line, whatever an error quotes (a socket's answer, a
            // file's line): control characters escaped, length capped.
            eprintln!(
                "tickpack: {}",
                tickpack_sys::text::escape(&one_line(&f.error), MAX_ERROR_CHARS)
            );
            ExitCode::from(f.code as u8)
        }
    }
}

/// With `TICKPACK_LOG=json`, every host event (`tickpack_host::event`)
/// is also written to stderr as one JSON line with its fields and the
/// spans it happened in (the bench's step and its servers).
fn trace_events_as_json() {
    if std::env::var_os("TICKPACK_LOG").is_some_and(|v| v == "json") {
        tracing_subscriber::fmt()
            .json()
            .with_writer(std::io::stderr)
            .with_current_span(true)
            .with_span_list(true)
            .init();
    }
}

/// The longest error line printed.
const MAX_ERROR_CHARS: usize = 2000;

/// The error and its causes on one line, each said once: many messages
/// already include their cause's text, which the chain would repeat.
fn one_line(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if msg.contains(&text) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&text);
    }
    msg
}

#[cfg(test)]
mod help_tests {
    //! What `--help` shows: the flags a user needs, with their defaults.

    use clap::CommandFactory;

    use super::Cli;

    /// The long help of `tickpack <path...>`, one line per wrapped line.
    fn help(path: &[&str]) -> String {
        let mut cmd = Cli::command();
        let mut sub = &mut cmd;
        for name in path {
            sub = sub.find_subcommand_mut(name).expect("a subcommand");
        }
        sub.render_long_help().to_string()
    }

    /// The help of one flag, from its line to the next flag's, its
    /// wrapped lines joined by single spaces.
    fn flag(help: &str, name: &str) -> String {
        let at = help
            .find(&format!("  {name} "))
            .or_else(|| help.find(&format!("  {name}\n")))
            .unwrap_or_else(|| panic!("{name} is not in the help:\n{help}"));
        let rest = &help[at..];
        let end = rest[2..].find("\n  -").map_or(rest.len(), |e| e + 2);
        rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// A bug: `bench --help` hid `--name` and `--range` and showed no
    /// default for four flags whose defaults the code picks.
    #[test]
    fn bench_help_shows_name_range_and_every_default() {
        let h = help(&["bench"]);
        assert!(flag(&h, "--name").contains("[default: bn]"), "{h}");
        assert!(flag(&h, "--range").contains("198.18.0.0/16"), "{h}");
        for (name, default) in [
            ("--tile-servers", "half the server cores"),
            ("--step-duration", "6s"),
            ("--warmup", "1s"),
            ("--max-steps", "12"),
        ] {
            let f = flag(&h, name);
            assert!(f.contains("[default:") && f.contains(default), "{f}");
        }
    }

    /// A bug: `host up` defaulted to a bridge while `bench` measured on
    /// veth, and neither said so. One default now, named in both.
    #[test]
    fn host_up_and_bench_name_the_same_default_network_path() {
        let up = help(&["host", "up"]);
        assert!(
            flag(&up, "--net").contains("[default: veth, as `bench`"),
            "{up}"
        );
        let bench = help(&["bench"]);
        let net = flag(&bench, "--net");
        assert!(
            net.contains("[default: veth]") && net.contains("`host up`"),
            "{net}"
        );
        assert_eq!(
            tickpack_host::fleet::DEFAULT_NET,
            tickpack_host::netpath::NetKind::Veth
        );
    }
}

#[cfg(all(test, not(debug_assertions)))]
mod build_tests {
    //! What a release build (the one the tests run in) puts on disk.

    /// The sizes of an ELF64 file's sections whose names start with
    /// `prefix`, summed (section headers read by hand: a few fields).
    fn section_bytes(elf: &[u8], prefix: &str) -> u64 {
        let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
        let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
        assert_eq!(&elf[..5], b"\x7fELF\x02", "not a 64-bit ELF file");
        let (shoff, shentsize, shnum, shstrndx) = (
            u64_at(0x28) as usize,
            u16_at(0x3a),
            u16_at(0x3c),
            u16_at(0x3e),
        );
        let header = |i: usize| shoff + i * shentsize;
        let names = u64_at(header(shstrndx) + 0x18) as usize;
        (0..shnum)
            .filter(|&i| {
                let name = names
                    + u32::from_le_bytes(elf[header(i)..header(i) + 4].try_into().unwrap())
                        as usize;
                elf[name..].starts_with(prefix.as_bytes())
            })
            .map(|i| u64_at(header(i) + 0x20))
            .sum()
    }

    /// A bug: CI failed to link a test binary (`ld terminated with signal 7
    /// [Bus error]`, the disk full): the release profile kept line tables,
    /// ~55 of each test binary's ~70 MB, ~3.3 GB over the ~120 of them.
    #[test]
    fn ci_link_ran_out_of_disk_release_binaries_carry_no_debug_info() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let debug = section_bytes(&exe, ".debug_");
        assert!(
            debug < 1 << 20,
            "this release test binary carries {debug} bytes of debug info ({} in all)",
            exe.len()
        );
    }
}
