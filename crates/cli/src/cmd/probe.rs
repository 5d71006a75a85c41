//! `tickpack probe`: query round trips of game servers' own query
//! protocols (Quake III `getinfo`, Valve `A2S_INFO`, or a gamedig
//! protocol a definition names) at a polite rate.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tickpack_probe::{Live, ProbeConfig, ProbeOutcome, ProbeProtocol};
use tickpack_report::probe::ProbeResult;

use super::{
    check_cpus, check_output_file, parse_cpus, parse_positive_duration, parse_target, CpuList,
};
use tickpack_sys::text::{escape, SHORT};

use crate::exit::{fail, Code, Failure};
use crate::table;

/// The shortest interval between two queries to one target.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// An interval between queries: a duration of at least [`MIN_INTERVAL`].
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = parse_positive_duration(s)?;
    if d < MIN_INTERVAL {
        return Err(format!(
            "{s}: below the 100 ms minimum (ioq3 answers one query a second per address after a burst; the default is 2s)"
        ));
    }
    Ok(d)
}

/// A query protocol: `q3`, `a2s` or `gamedig:NAME`.
pub fn parse_protocol(s: &str) -> Result<ProbeProtocol, String> {
    s.parse()
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Server address (its query port: the game port for both protocols);
    /// repeat or separate with commas for several.
    #[arg(long, required = true, value_delimiter = ',', value_parser = parse_target)]
    pub target: Vec<SocketAddr>,
    /// Query protocol: q3 (id Tech 3 `getinfo`: ioquake3 and
    /// DarkPlaces games), a2s (Valve `A2S_INFO`, with its challenge round trip)
    /// or gamedig:NAME (a protocol of the gamedig crate, e.g.
    /// gamedig:unreal2; IPv4 only; docs/games.md lists the names).
    #[arg(long, value_parser = parse_protocol, required_unless_present = "game", conflicts_with = "game")]
    pub protocol: Option<ProbeProtocol>,
    /// Or the game whose query to ask: a built-in game or a definition
    /// file's path (its [query] protocol).
    #[arg(long, value_name = "NAME|FILE", value_parser = super::parse_game)]
    pub game: Option<super::GameArg>,
    /// Time between two queries to one target (at least 100ms). ioq3 drops
    /// more than one query a second per source address after a burst of 10,
    /// and shares that budget with everyone else asking from the address.
    #[arg(long, default_value = "2s", allow_hyphen_values = true, value_parser = parse_interval)]
    pub interval: Duration,
    /// A reply later than this is lost, not a sample (capped at the interval).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub timeout: Duration,
    /// How long to send queries, e.g. 30s, 5m.
    #[arg(long, default_value = "30s", allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub duration: Duration,
    /// Write the result (`tickpack.probe/1`: query_latency_us per target
    /// and merged, with HdrHistograms) to this file; `-` for stdout.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Pin the prober to these CPUs.
    #[arg(long, value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

impl Args {
    /// `--protocol`, or the one of `--game`'s definition.
    fn protocol(&self) -> Result<ProbeProtocol, Failure> {
        use tickpack_game::QueryProtocol;
        match (&self.protocol, &self.game) {
            (Some(p), _) => Ok(*p),
            (None, Some(g)) => match (g.def.protocols().probe, g.def.query.protocol) {
                (Some(p), _) => Ok(p),
                (None, QueryProtocol::Gamedig) => Err(fail(
                    Code::Config,
                    format!("--game {}: no [query] gamedig protocol", g.def.name),
                )),
                (None, _) => Err(crate::exit::fail(
                    crate::exit::Code::Config,
                    format!(
                        "--game {}: its definition has no [query] protocol to probe",
                        g.def.name
                    ),
                )),
            },
            (None, None) => unreachable!("clap requires --protocol or --game"),
        }
    }

    pub fn config(&self) -> Result<ProbeConfig, Failure> {
        let cpus = self.cpus.clone().map(|c| c.0).unwrap_or_default();
        check_cpus("--cpus", &cpus)?;
        if let Some(p) = &self.json {
            check_output_file("--json", p)?;
        }
        Ok(ProbeConfig {
            targets: self.target.clone(),
            protocol: self.protocol()?,
            interval: self.interval,
            timeout: self.timeout,
            duration: self.duration,
            start_delay: Duration::ZERO,
            cpus,
        })
    }
}

pub fn run(a: Args) -> Result<(), Failure> {
    let cfg = a.config()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let live = Arc::new(Live::default());
    let done = Arc::new(AtomicBool::new(false));
    // A line every 5 s on runs long enough to need one.
    let progress = (!a.quiet && cfg.duration > Duration::from_secs(5)).then(|| {
        let (live, done) = (live.clone(), done.clone());
        let total = cfg.duration.as_secs_f64();
        std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            let mut next = Duration::from_secs(5);
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if t0.elapsed() >= next {
                    next += Duration::from_secs(5);
                    eprintln!(
                        "probe: {:.0}/{total:.0} s, {} queries sent, {} answered, {} lost",
                        t0.elapsed().as_secs_f64(),
                        live.sent.load(Ordering::Relaxed),
                        live.answered.load(Ordering::Relaxed),
                        live.lost.load(Ordering::Relaxed),
                    );
                }
            }
        })
    });
    let outcome = tickpack_probe::run(&cfg, &stop, &live);
    done.store(true, Ordering::Relaxed);
    if let Some(p) = progress {
        let _ = p.join();
    }
    let outcome = outcome.map_err(|e| fail(Code::Runtime, e))?;
    let result = tickpack_probe::to_result(&cfg, &outcome);
    print_summary(&result, cfg.protocol);
    if let Some(path) = &a.json {
        if path.as_os_str() == "-" {
            println!("{}", serde_json::to_string_pretty(&result)?);
        } else {
            tickpack_report::write_json_atomic(path, &result)?;
        }
    }
    if let Some(why) = silent_targets(&result, &outcome, cfg.protocol) {
        return Err(fail(Code::Unreachable, why));
    }
    Ok(())
}

/// The targets that never answered, in one line; `None` if all did.
fn silent_targets(r: &ProbeResult, o: &ProbeOutcome, p: ProbeProtocol) -> Option<String> {
    let silent: Vec<String> = r
        .targets
        .iter()
        .zip(o.refused.iter().zip(&o.targets))
        .filter(|(t, _)| t.queries.answered == 0)
        .map(|(t, (&refused, figures))| {
            let why = match (&figures.last_error, refused) {
                (Some(e), _) => format!(", last: {e}"),
                (None, true) => ", nothing listening there (ICMP port unreachable)".into(),
                (None, false) => String::new(),
            };
            format!("{} ({} sent{why})", t.address, t.queries.sent)
        })
        .collect();
    (!silent.is_empty()).then(|| {
        format!(
            "never answered a {} query within {} s: {}",
            p.query_name(),
            r.timeout_s,
            silent.join("; ")
        )
    })
}

/// The terminal summary: per target what the server said, the query round
/// trips and the losses.
fn print_summary(r: &ProbeResult, p: ProbeProtocol) {
    println!(
        "{} queries to {} target(s), one per {} s per target, timeout {} s; {:.1} s{} (query latency: NOT transaction latency)",
        p.query_name(),
        r.targets.len(),
        r.interval_s,
        r.timeout_s,
        r.duration_s,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    let w = 24;
    println!("{}", table::header(w));
    for t in &r.targets {
        println!("{}", table::row_ms(&t.address, w, &t.query_latency_us));
        match &t.server {
            // What a server says of itself is escaped and cut.
            Some(s) => println!(
                "  \"{}\" on {}, {}/{} players ({} bots)",
                escape(&s.name, SHORT),
                escape(&s.map, SHORT),
                s.players.map_or("?".into(), |p| p.to_string()),
                s.max_players,
                s.bots
            ),
            None => println!("  never answered"),
        }
        let q = &t.queries;
        println!(
            "  queries: {} sent, {} answered, {} lost ({} late){}",
            q.sent,
            q.answered,
            q.lost,
            q.late,
            if q.challenges > 0 {
                format!(", {} challenge round trip(s)", q.challenges)
            } else {
                String::new()
            }
        );
    }
    if r.targets.len() > 1 {
        println!("{}", table::row_ms("all targets", w, &r.query_latency_us));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_below_100_ms_and_unknown_protocols_are_refused() {
        assert_eq!(parse_interval("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_interval("100ms"), Ok(MIN_INTERVAL));
        assert!(parse_interval("99ms").unwrap_err().contains("100 ms"));
        assert!(parse_interval("0s").is_err());
        assert!(parse_protocol("gamespy").is_err());
        assert_eq!(
            parse_protocol("a2s"),
            Ok(tickpack_probe::Protocol::A2s.into())
        );
        assert!(parse_protocol("gamedig:unreal2").is_ok());
        assert!(parse_protocol("gamedig:q3a").is_err());
    }
}
