//! Where a load generator thread records what its players observe. One per
//! thread; merged at the end.

use hdrhistogram::Histogram;
use std::collections::HashMap;
use std::net::SocketAddr;
use tickpack_report::{new_histogram, record};

use crate::coverage::Tally;
use crate::windows::Windows;

/// Histograms (microseconds) and counters of one thread's players.
pub struct Recorder {
    pub transaction: Histogram<u64>,
    pub rtt: Histogram<u64>,
    pub frame: Histogram<u64>,
    pub lateness: Histogram<u64>,
    pub jitter: Histogram<u64>,
    /// The servers' own ping for each player, where the protocol carries
    /// it (Quake III's `playerState.ping`); empty otherwise.
    pub server_ping: Histogram<u64>,
    /// Snapshots received and lost, and outages, against the schedule.
    pub snapshots: Tally,
    /// Handshakes completed after a player's first, within its presence
    /// (a planned join is not one).
    pub reconnects: u64,
    /// From a join's first packet to its first snapshot (every join of the
    /// run, the warm-up's included: see [`crate::presence`]).
    pub join: Histogram<u64>,
    /// Joins done (`join`'s count) and failed.
    pub joins: u64,
    pub failed_joins: u64,
    /// The measured window's windows (none unless the run keeps them).
    pub windows: Windows,
    pub commands_sent: u64,
    pub commands_reflected: u64,
    pub commands_lost: u64,
    pub decode_errors: u64,
    /// Datagrams and bytes the players sent and received in the window.
    pub traffic: tickpack_report::Traffic,
    /// Newest tick whose server-reported frame time was recorded, per
    /// server: each tick is counted once, not once per player.
    server_tick_seen: HashMap<SocketAddr, u32>,
    /// Start and end of the measurement window (monotonic us).
    pub window: (u64, u64),
    /// Transaction latency of every command reflected since the thread
    /// last handed it to [`crate::Live`] (warm-up included): what a QoS
    /// guard reads as the players' latency of the last period.
    pub recent_transaction: Histogram<u64>,
}

impl Recorder {
    pub fn new(window: (u64, u64)) -> Self {
        Self {
            transaction: new_histogram(),
            rtt: new_histogram(),
            frame: new_histogram(),
            lateness: new_histogram(),
            jitter: new_histogram(),
            server_ping: new_histogram(),
            snapshots: Tally::default(),
            reconnects: 0,
            join: new_histogram(),
            joins: 0,
            failed_joins: 0,
            windows: Windows::off(),
            commands_sent: 0,
            commands_reflected: 0,
            commands_lost: 0,
            decode_errors: 0,
            traffic: Default::default(),
            server_tick_seen: HashMap::new(),
            window,
            recent_transaction: new_histogram(),
        }
    }

    /// A recorder that also keeps the measured window cut into windows of
    /// `window_len_us` ([`crate::windows`]; 0: none).
    pub fn with_windows(window: (u64, u64), window_len_us: u64) -> Self {
        Self {
            windows: Windows::new(window, window_len_us),
            ..Self::new(window)
        }
    }

    /// A join whose first packet went out at `since_us` got its first
    /// snapshot at `now_us`.
    pub fn join_done(&mut self, since_us: u64, now_us: u64) {
        let took = now_us.saturating_sub(since_us);
        record(&mut self.join, took);
        self.joins += 1;
        self.windows.join_done(since_us, took);
    }

    /// A join whose first packet went out at `since_us` did not get in.
    pub fn join_failed(&mut self, since_us: u64) {
        self.failed_joins += 1;
        self.windows.join_failed(since_us);
    }

    /// A command due at `due_us` in the player's span went out.
    pub fn command_sent(&mut self, due_us: u64) {
        self.commands_sent += 1;
        self.windows.command_sent(due_us);
    }

    /// A command due at `due_us` in the player's span is lost.
    pub fn command_lost(&mut self, due_us: u64) {
        self.commands_lost += 1;
        self.windows.command_lost(due_us);
    }

    /// The `n` commands of a player's span due in `[from, to)`, one every
    /// `interval_us`, could not be sent (no session): lost.
    pub fn commands_unsent(&mut self, from_us: u64, to_us: u64, interval_us: u64, n: u64) {
        self.commands_lost += n;
        self.windows
            .commands_lost_between(from_us, to_us, interval_us);
    }

    /// A command reflected `latency_us` after it was due, in the span or
    /// not: recorded for the recent figure only ([`Self::transaction`] is
    /// the span's).
    pub fn recent_transaction(&mut self, latency_us: u64) {
        record(&mut self.recent_transaction, latency_us);
    }

    /// A command reflected `latency_us` after it was due: within
    /// `deadline_us` it counts for the recent figure; if it was due in the
    /// player's measured span (`in_span`) it is recorded as a transaction
    /// (and pushed to `samples`, the player's own list, if it keeps one) or,
    /// past the deadline, counted lost.
    pub fn reflected_command(
        &mut self,
        due_us: u64,
        latency_us: u64,
        deadline_us: u64,
        in_span: bool,
        samples: Option<&mut Vec<u32>>,
    ) {
        if latency_us <= deadline_us {
            self.recent_transaction(latency_us);
        }
        if !in_span {
            return;
        }
        if latency_us <= deadline_us {
            record(&mut self.transaction, latency_us);
            if let Some(samples) = samples {
                samples.push(latency_us.min(u64::from(u32::MAX)) as u32);
            }
            self.commands_reflected += 1;
            self.windows.transaction(due_us, latency_us);
        } else {
            self.command_lost(due_us);
        }
    }

    /// A round trip to the server of a datagram sent at `sent_us`, answered
    /// at `now_us`: recorded (and pushed to `samples`) when it was sent in
    /// the measurement window.
    pub fn round_trip(&mut self, sent_us: u64, now_us: u64, samples: &mut Vec<u32>) {
        if self.in_window(sent_us) {
            let rtt = now_us.saturating_sub(sent_us);
            record(&mut self.rtt, rtt);
            samples.push(rtt.min(u64::from(u32::MAX)) as u32);
        }
    }

    /// True when an event at `t_us` falls in the measurement window.
    pub fn in_window(&self, t_us: u64) -> bool {
        t_us >= self.window.0 && t_us < self.window.1
    }

    /// The server's own figures of its tick `tick`, in a snapshot that
    /// arrived at `at_us`: recorded once per tick and server.
    pub fn server_tick(
        &mut self,
        server: SocketAddr,
        tick: u32,
        at_us: u64,
        frame_us: u32,
        lateness_us: u32,
    ) {
        let seen = self.server_tick_seen.entry(server).or_insert(0);
        if tick > *seen {
            *seen = tick;
            record(&mut self.frame, u64::from(frame_us));
            record(&mut self.lateness, u64::from(lateness_us));
            self.windows.frame(at_us, u64::from(frame_us));
        }
    }

    /// `server` restarted: its tick numbers start again.
    pub fn server_restarted(&mut self, server: SocketAddr) {
        self.server_tick_seen.remove(&server);
    }

    pub fn merge(&mut self, o: &Recorder) {
        for (a, b) in [
            (&mut self.transaction, &o.transaction),
            (&mut self.rtt, &o.rtt),
            (&mut self.frame, &o.frame),
            (&mut self.lateness, &o.lateness),
            (&mut self.jitter, &o.jitter),
            (&mut self.server_ping, &o.server_ping),
            (&mut self.join, &o.join),
        ] {
            a.add(b).expect("histograms share bounds");
        }
        self.snapshots.merge(&o.snapshots);
        self.reconnects += o.reconnects;
        self.joins += o.joins;
        self.failed_joins += o.failed_joins;
        self.windows.merge(&o.windows);
        self.commands_sent += o.commands_sent;
        self.commands_reflected += o.commands_reflected;
        self.commands_lost += o.commands_lost;
        self.decode_errors += o.decode_errors;
        self.traffic.merge(&o.traffic);
    }
}
