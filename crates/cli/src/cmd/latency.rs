//! `tickpack latency`: what each isolation path (loopback, veth, bridge,
//! macvlan, ipvlan) adds to a UDP round trip, in blocking and busy-poll
//! mode; a table, and optionally JSON (`tickpack.latency/1`) and an HTML
//! bar chart. Needs root for every path but `native`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use tickpack_latency::settings::{DEFAULT_NAME, DEFAULT_RANGE};
use tickpack_latency::{
    LatencyError, LatencyResult, Measurement, Mode, Observer, PathInfo, PathName, Settings,
    SizeSpec, Unavailable,
};

use super::{check_output_file, parse_duration, parse_positive_duration};
use crate::exit::{fail, Code, Failure, WithCode};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A first look (under 20 s): 1 round of 300 ms per measurement, 2
    /// streams. Its ratios to native are one round's, shown in parentheses:
    /// not findings (a ratio needs 3 rounds or more).
    #[arg(long)]
    pub quick: bool,
    /// Paths to measure, comma separated: native, veth, bridge, macvlan, ipvlan
    /// [default: all; native is always measured, it is the baseline].
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<PathName>())]
    pub paths: Vec<PathName>,
    /// Request (and response) sizes in bytes, 16..=8192, or `game`.
    #[arg(long, value_delimiter = ',', default_value = "64,256,1024", value_parser = |s: &str| s.parse::<SizeSpec>())]
    pub sizes: Vec<SizeSpec>,
    /// Game-like traffic instead: 40-200 B requests (uniform), 2000 B
    /// responses, reported as size "game" (the same as --sizes game).
    #[arg(long, conflicts_with = "sizes")]
    pub game: bool,
    /// Modes, comma separated: blocking (what a normal server sees), busy
    /// (busy polling on both ends: the path's own cost) [default: both].
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<Mode>())]
    pub modes: Vec<Mode>,
    /// Parallel streams: echo servers per path (one per namespace) and
    /// client streams [default: 8; --quick: 2].
    #[arg(long)]
    pub streams: Option<u32>,
    /// Rounds over every (path, size, mode), in rotated order [default: 5; --quick: 1].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Measured time per (path, size, mode) and round [default: 1s; --quick: 300ms].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Unmeasured time before each measurement [default: 100ms; --quick: 50ms].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// A request unanswered this long counts as lost.
    #[arg(long, default_value = "200ms", allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub timeout: Duration,
    /// CPU of the client threads [default: the first allowed CPU].
    #[arg(long)]
    pub client_cpu: Option<usize>,
    /// CPU of the echo threads [default: the last allowed CPU].
    #[arg(long)]
    pub echo_cpu: Option<usize>,
    /// Name prefix of everything created: tp<name>v (veth), tp<name>b
    /// (bridge), tp<name>m (macvlan), tp<name>i (ipvlan); 1-7 of a-z0-9.
    #[arg(long, default_value = DEFAULT_NAME)]
    pub name: String,
    /// Address range: one /24 per namespaced path asked (veth, bridge,
    /// macvlan, ipvlan), so a /24 for one path, a /23 for two, a /22 for
    /// three or four; guarded by an `unreachable` route while in use.
    #[arg(long, default_value = DEFAULT_RANGE)]
    pub range: String,
    /// Write the result document (tickpack.latency/1) here, rewritten after
    /// every round (`-` for stdout at the end).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report with the bar charts here.
    #[arg(long)]
    pub html: Option<PathBuf>,
}

/// Flags → validated settings.
pub fn settings(a: &Args) -> Result<Settings, Failure> {
    let mut s = if a.quick {
        Settings::quick()
    } else {
        Settings::default()
    };
    if !a.paths.is_empty() {
        s.paths = vec![PathName::Native];
        s.paths
            .extend(a.paths.iter().filter(|p| **p != PathName::Native));
    }
    s.sizes = if a.game {
        vec![SizeSpec::Game]
    } else {
        a.sizes.clone()
    };
    if !a.modes.is_empty() {
        s.modes = a.modes.clone();
    }
    s.streams = a.streams.unwrap_or(s.streams);
    s.rounds = a.rounds.unwrap_or(s.rounds);
    s.duration = a.duration.unwrap_or(s.duration);
    s.warmup = a.warmup.unwrap_or(s.warmup);
    s.timeout = a.timeout;
    s.name = a.name.clone();
    s.range = a
        .range
        .parse()
        .with_context(|| format!("--range {:?}", a.range))
        .code(Code::Config)?;
    let allowed = tickpack_net::cpu::allowed_cpus().code(Code::Runtime)?;
    let pick = |flag: &str, given: Option<usize>, dflt: Option<usize>| match given {
        Some(c) if !allowed.contains(&c) => Err(fail(
            Code::Config,
            format!("{flag} {c}: this process may run only on CPUs {allowed:?}"),
        )),
        Some(c) => Ok(Some(c)),
        None => Ok(dflt),
    };
    s.client_cpu = pick("--client-cpu", a.client_cpu, allowed.first().copied())?;
    s.echo_cpu = pick("--echo-cpu", a.echo_cpu, allowed.last().copied())?;
    s.validate().map_err(latency_failure)?;
    // Output paths are checked now, not after the measurement.
    if let Some(p) = &a.json {
        check_output_file("--json", p)?;
    }
    if let Some(p) = &a.html {
        check_output_file("--html", p)?;
    }
    Ok(s)
}

fn latency_failure(e: LatencyError) -> Failure {
    let code = match &e {
        LatencyError::Config(_) => Code::Config,
        e if e.is_isolation() => Code::Isolation,
        _ => Code::Runtime,
    };
    Failure {
        code,
        error: e.into(),
    }
}

/// Progress on stderr, and the JSON rewritten after every round.
struct Progress {
    bar: Option<ProgressBar>,
    json: Option<PathBuf>,
    write_error: Option<anyhow::Error>,
}

impl Progress {
    fn line(&self, msg: String) {
        match &self.bar {
            Some(b) => b.println(msg),
            None => eprintln!("{msg}"),
        }
    }
}

impl Observer for Progress {
    fn path_ready(&mut self, i: &PathInfo) {
        let via = i.devices.join(", ");
        let parent = i
            .parent
            .as_ref()
            .map_or(String::new(), |p| format!(", parent {p}"));
        self.line(format!(
            "latency: {} ready: {} echo server(s) {}{} via {via}{parent}",
            i.path,
            i.echo_addresses.len(),
            i.range
                .as_ref()
                .map_or("on 127.0.0.1", |_| "in namespaces on "),
            i.range.clone().unwrap_or_default(),
        ));
    }

    fn path_unavailable(&mut self, u: &Unavailable) {
        self.line(format!("latency: {} unavailable: {}", u.path, u.reason));
    }

    fn measured(&mut self, done: usize, total: usize, path: PathName, m: &Measurement) {
        let msg = format!(
            "{path} {} {}: p50 {:.1} us",
            m.size,
            m.mode,
            m.quantile_us(0.5)
        );
        match &self.bar {
            Some(b) => {
                b.set_length(total as u64);
                b.set_position(done as u64);
                b.set_message(msg);
            }
            None if done == total => eprintln!("latency: {done}/{total} measurements done"),
            None => {}
        }
    }

    fn result(&mut self, doc: &LatencyResult) {
        if let Some(p) = self.json.as_ref().filter(|p| p.as_os_str() != "-") {
            if let Err(e) = tickpack_report::write_json_atomic(p, doc) {
                if self.write_error.is_none() {
                    self.write_error = Some(e.into());
                }
            }
        }
        if self.bar.is_none() && !doc.complete {
            let rounds = doc.results.iter().map(|r| r.rounds).max().unwrap_or(0);
            eprintln!("latency: round {rounds}/{} done", doc.settings.rounds);
        }
    }
}

pub fn run(a: Args) -> Result<(), Failure> {
    let s = settings(&a)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let cpu = |c: Option<usize>| c.map_or("any CPU".into(), |c| format!("CPU {c}"));
    let list = |v: Vec<String>| v.join(", ");
    eprintln!(
        "tickpack latency: paths {}; sizes {}; modes {}; {} stream(s); {} round(s) of {:?} per measurement (about {:.0} s + building the paths); clients on {}, echo servers on {}",
        list(s.paths.iter().map(|p| p.to_string()).collect()),
        list(s.sizes.iter().map(|z| z.label()).collect()),
        list(s.modes.iter().map(|m| m.to_string()).collect()),
        s.streams,
        s.rounds,
        s.duration,
        s.estimated_time().as_secs_f64(),
        cpu(s.client_cpu),
        cpu(s.echo_cpu),
    );
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
            )
            .expect("static template"),
        );
        b.enable_steady_tick(Duration::from_millis(200));
        b
    });
    let mut progress = Progress {
        bar,
        json: a.json.clone(),
        write_error: None,
    };
    let outcome = tickpack_latency::run(&s, &stop, &mut progress);
    if let Some(b) = &progress.bar {
        b.finish_and_clear();
    }
    let doc = outcome.map_err(latency_failure)?;
    if let Some(e) = progress.write_error.take() {
        let path = a.json.as_deref().unwrap_or(std::path::Path::new("-"));
        return Err(e.context(format!("writing {}", path.display())).into());
    }
    print!("{}", doc.table());
    if let Some(p) = &a.json {
        if p.as_os_str() == "-" {
            println!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            println!("results: {}", p.display());
        }
    }
    if let Some(p) = &a.html {
        tickpack_report::write_atomic(p, tickpack_latency::html::render(&doc).as_bytes())?;
        println!("report: {}", p.display());
    }
    if !doc.complete {
        return Err(fail(
            Code::Runtime,
            "interrupted: the finished rounds are in the results",
        ));
    }
    let missing: Vec<String> = doc
        .unavailable
        .iter()
        .filter(|u| a.paths.contains(&u.path))
        .map(|u| u.path.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(fail(
            Code::Isolation,
            format!(
                "--paths asked for {}, which this machine cannot build (see above)",
                missing.join(", ")
            ),
        ));
    }
    Ok(())
}
