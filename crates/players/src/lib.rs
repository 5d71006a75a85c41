//! Emulated players: many UDP clients that connect to tickpack servers, play
//! on an open-loop schedule, and measure what players feel.
//!
//! The key figure is **in-game transaction latency**: from the time a
//! command was *due* (not when the load generator got round to sending it)
//! to the arrival of the first snapshot whose `last_cmd_seq` covers it. It
//! includes the network both ways, the wait for the next server tick and the
//! server's processing; a stalled server or a stalled load generator shows
//! up in it instead of hiding.
//!
//! Also recorded: ping round trips (from the time each ping was due), the
//! server's own frame time and tick lateness as carried in snapshots (once
//! per server tick), snapshot inter-arrival jitter, and what the schedule
//! promised against what arrived: snapshots expected for every tick of each
//! player's span whatever arrived ([`coverage`]), commands not reflected
//! within the loss deadline, outages and reconnects. A player whose server
//! restarts or goes silent reconnects and keeps measuring.
//!
//! Players may come and go: with a [`PresencePlan`] each is present only
//! during its spans, joins at each (a fresh handshake, its join time
//! measured, a join that cannot get in counted as failed) and leaves with
//! its game's goodbye ([`presence`]); only presence is measured. With a
//! window length the measured window is also kept in windows
//! ([`windows`]), each with its own figures.
//!
//! # Main types and order
//!
//! [`PlayersConfig`] → [`PlayersConfig::validate`] → [`run`] (blocks for the
//! run's length, with a stop flag and live counters) → [`Outcome`] →
//! [`to_result`] for the versioned JSON document. [`Player`] is the sans-I/O
//! state machine of one player, usable on a virtual clock.
//!
//! Not here: the server (see `tickpack-sim`) and the command-line front end.

pub mod config;
pub mod coverage;
pub mod emulated;
pub mod io;
mod ledger;
mod measured;
pub mod player;
pub mod presence;
pub mod q3;
pub mod recorder;
pub mod referee;
pub mod run;
mod seat;
pub mod sources;
pub mod tw7;
pub mod windows;

pub use config::{PlayersConfig, Protocol, SizeDist};
pub use emulated::{Emulated, RunEnd};
pub use io::IoMode;
pub use player::Player;
pub use presence::{Presence, PresencePlan, PresenceSpan};
pub use recorder::Recorder;
pub use run::{run, Live, Outcome};

use tickpack_report::{
    encode_histogram, Measurements, Percentiles, PlayersHistograms, PlayersResult,
};

#[derive(Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum PlayersError {
    #[error("bad players settings: {0}")]
    Config(String),
    #[error("cannot set up the players: {0}")]
    Setup(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// An error and its causes on one line (`socket 0.0.0.0:0: socket failed:
/// Too many open files (os error 24)`): the OS error is the source of a
/// setup error, and a message without it cannot be acted on.
pub(crate) fn with_causes(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        cause = c.source();
    }
    msg
}

/// The figures measured in a run, summarized, and the histograms behind
/// them, serialized: each of the recorder's histograms goes to the
/// same-named field of both.
fn measurements(r: &Recorder) -> (Measurements, PlayersHistograms) {
    let mut measured = Measurements {
        snapshots: tickpack_report::SnapshotCounts {
            expected: r.snapshots.received + r.snapshots.lost,
            received: r.snapshots.received,
            lost: r.snapshots.lost,
        },
        commands: tickpack_report::CommandCounts {
            sent: r.commands_sent,
            reflected: r.commands_reflected,
            lost: r.commands_lost,
        },
        outages: tickpack_report::Outages {
            count: r.snapshots.outages,
            total_us: r.snapshots.outage_total_us,
            longest_us: r.snapshots.outage_longest_us,
        },
        reconnects: r.reconnects,
        ..Measurements::default()
    };
    let mut histograms = PlayersHistograms::default();
    let m = &mut measured;
    let h = &mut histograms;
    for (from, summary, serialized) in [
        (
            &r.transaction,
            &mut m.transaction_latency_us,
            &mut h.transaction_latency_us,
        ),
        (&r.rtt, &mut m.rtt_us, &mut h.rtt_us),
        (&r.frame, &mut m.server_frame_us, &mut h.server_frame_us),
        (
            &r.lateness,
            &mut m.tick_lateness_us,
            &mut h.tick_lateness_us,
        ),
        (
            &r.jitter,
            &mut m.snapshot_jitter_us,
            &mut h.snapshot_jitter_us,
        ),
    ] {
        *summary = Percentiles::from_histogram(from);
        *serialized = encode_histogram(from);
    }
    // Only where the protocol carries the server's ping.
    if !r.server_ping.is_empty() {
        measured.server_ping_us = Some(Percentiles::from_histogram(&r.server_ping));
        histograms.server_ping_us = encode_histogram(&r.server_ping);
    }
    (measured, histograms)
}

/// Turns a run's outcome into the `tickpack.players/1` document.
pub fn to_result(cfg: &PlayersConfig, o: &Outcome) -> PlayersResult {
    let r = &o.recorder;
    let (measured, histograms) = measurements(r);
    PlayersResult {
        schema: tickpack_report::PLAYERS_SCHEMA.into(),
        tickpack_version: env!("CARGO_PKG_VERSION").into(),
        game: cfg.game.game_name(),
        system: tickpack_report::system::SystemInfo::collect(),
        targets: cfg.targets.iter().map(ToString::to_string).collect(),
        players: cfg.players as u32,
        connected: o.connected as u32,
        cmd_rate_hz: cfg.cmd_rate_hz.unwrap_or(match cfg.game {
            // No rate learned: 0, as always written.
            Protocol::Tickpack => o.tick_hz.map_or(0.0, |t| f64::from(t.hz())),
            Protocol::Q3 => q3::DEFAULT_CMD_RATE_HZ,
            Protocol::Tw7 => tw7::DEFAULT_CMD_RATE_HZ,
        }),
        tick_hz: o.tick_hz,
        duration_s: match o.interrupted_us {
            Some(at) => at.clamp(o.window.0, o.window.1).saturating_sub(o.window.0) as f64 / 1e6,
            None => cfg.duration.as_secs_f64(),
        },
        warmup_s: cfg.warmup.as_secs_f64(),
        interrupted: o.interrupted_us.is_some_and(|at| at < o.window.1),
        load_generator_cpus: cfg.cpus.clone(),
        load_generator_threads: cfg.threads.min(cfg.players) as u32,
        load_generator_cpu_s: o.cpu_time_ns as f64 / 1e9,
        load_generator_io: o.io.to_string(),
        measured,
        loss_deadline_s: cfg.loss_deadline.as_secs_f64(),
        decode_errors: r.decode_errors,
        errors: o.errors.clone(),
        referee: o.referee.clone(),
        merged_from: vec![],
        traffic: r.traffic,
        histograms,
        joins: joins(cfg, r),
        window_s: cfg.window.map(|w| w.as_secs_f64()),
        windows: r.windows.to_result(span_end(o)),
    }
}

/// Where the measured span ended: the window's end, or where the run was
/// interrupted.
fn span_end(o: &Outcome) -> u64 {
    o.interrupted_us
        .map_or(o.window.1, |at| at.clamp(o.window.0, o.window.1))
}

/// The joins of a run, summarized, with their histogram.
fn joins(cfg: &PlayersConfig, r: &Recorder) -> tickpack_report::Joins {
    tickpack_report::Joins {
        done: r.joins,
        failed: r.failed_joins,
        timeout_s: cfg.join_timeout().as_secs_f64(),
        join_us: Percentiles::from_histogram(&r.join),
        histogram: if r.join.is_empty() {
            String::new()
        } else {
            encode_histogram(&r.join)
        },
    }
}

#[cfg(test)]
mod setup_error_tests {
    use super::with_causes;

    #[test]
    fn socket_setup_errors_include_the_os_error() {
        // 192.0.2.1 (TEST-NET-1) is never a local address: bind fails with
        // EADDRNOTAVAIL, which must reach the user, not only "bind failed".
        let addr = "192.0.2.1:0".parse().unwrap();
        let e = tickpack_net::socket::UdpSocket::bind(addr, &Default::default()).unwrap_err();
        let msg = with_causes(&e);
        assert!(msg.contains("bind failed"), "{msg}");
        assert!(msg.contains("os error"), "{msg}");
        assert!(e.to_string().len() < msg.len(), "the cause is added: {msg}");
    }
}
