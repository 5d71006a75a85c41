//! The child's side of [`super`]: `tickpack __readers` reads its order,
//! runs it, and answers on stdout.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tickpack_report::Percentiles;

use crate::tile::step::sleep_until;

use super::{read_line, Done, Job, Order, Said, LIVE_PERIOD, SCHEMA};

/// The largest order read: a players run's settings with its presence
/// plan (a few spans for each of up to a few thousand players).
const MAX_ORDER: usize = 4 << 20;

/// Runs the order on stdin, a job of the kind `named` (the argument that
/// names it in `ps`); the exit code (0: answered, 2: a bad order or no
/// `go`).
pub fn serve(named: &str) -> i32 {
    let out = Mutex::new(std::io::stdout());
    let mut input = std::io::BufReader::new(std::io::stdin());
    let job = match order(&mut input) {
        Ok(job) if job.name() != named => {
            eprintln!(
                "tickpack __readers: named {:?} but ordered {:?}",
                tickpack_sys::text::escape(named, 40),
                job.name()
            );
            return 2;
        }
        Ok(job) => job,
        Err(e) => {
            eprintln!("tickpack __readers: {e}");
            return 2;
        }
    };
    say(&out, &Said::Ready);
    match read_line(&mut input, 16) {
        Ok(Some(l)) if l == "go" => {}
        // The bench went away or changed its mind: nothing to run.
        _ => return 2,
    }
    let go = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = stop.clone();
    // `stop`, or the end of our input (the bench ended), stops the run.
    std::thread::spawn(move || {
        let _ = read_line(&mut input, 16);
        watcher.store(true, Ordering::Relaxed);
    });
    let done = run(job, go, &stop, &out);
    say(&out, &Said::Done(done));
    0
}

/// Reads and checks the order.
fn order(input: &mut impl BufRead) -> Result<Job, String> {
    let line = read_line(input, MAX_ORDER)
        .map_err(|e| format!("reading the order: {e}"))?
        .ok_or("no order")?;
    let order: Order = serde_json::from_str(&line).map_err(|e| format!("the order: {e}"))?;
    if order.schema != SCHEMA {
        return Err(format!(
            "an order of schema {:?}, expected {SCHEMA:?}",
            order.schema
        ));
    }
    if let Job::Players(cfg) = &order.job {
        cfg.validate().map_err(|e| e.to_string())?;
    }
    Ok(order.job)
}

/// Writes one message as one line.
fn say(out: &Mutex<std::io::Stdout>, said: &Said) {
    let mut line = serde_json::to_vec(said).expect("messages serialize");
    line.push(b'\n');
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    // A bench that went away reads nothing more; we end with the run.
    let _ = out.write_all(&line).and_then(|()| out.flush());
}

fn run(job: Job, go: Instant, stop: &AtomicBool, out: &Mutex<std::io::Stdout>) -> Done {
    match job {
        Job::Players(cfg) => {
            let live = Arc::new(tickpack_players::Live::default());
            let finished = AtomicBool::new(false);
            let result = std::thread::scope(|s| {
                s.spawn(|| {
                    while !finished.load(Ordering::Relaxed) {
                        std::thread::sleep(LIVE_PERIOD);
                        let recent = live
                            .take_recent_transactions()
                            .map(|h| tickpack_report::encode_histogram(&h));
                        say(out, &Said::Live { recent });
                    }
                });
                let r = tickpack_players::run(&cfg, stop, &live)
                    .map(|o| tickpack_players::to_result(&cfg, &o));
                finished.store(true, Ordering::Relaxed);
                r
            });
            Done::Players(Box::new(result))
        }
        Job::Probe(cfg) => {
            let live = tickpack_probe::Live::default();
            Done::Probe(Box::new(
                tickpack_probe::run(&cfg, stop, &live)
                    .map(|o| tickpack_probe::to_result(&cfg, &o))
                    .map_err(|e| e.to_string()),
            ))
        }
        Job::ProbeWindows {
            cfg,
            windows,
            span_offset,
        } => Done::ProbeWindows(probe_windows(&cfg, &windows, go + span_offset, stop)),
    }
}

/// One probe run per window, each started at its window's start: the
/// p99 round trip of each window (`None` where nothing came back).
fn probe_windows(
    p: &tickpack_probe::ProbeConfig,
    windows: &[(Duration, Duration)],
    span_start: Instant,
    stop: &AtomicBool,
) -> Vec<Option<Percentiles>> {
    let live = tickpack_probe::Live::default();
    windows
        .iter()
        .map(|&(from, until)| {
            sleep_until(span_start + from, stop);
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let cfg = tickpack_probe::ProbeConfig {
                duration: until.saturating_sub(from),
                ..p.clone()
            };
            let o = tickpack_probe::run(&cfg, stop, &live).ok()?;
            let (h, _) = tickpack_probe::merged(&o);
            (!h.is_empty()).then(|| Percentiles::from_histogram(&h))
        })
        .collect()
}
