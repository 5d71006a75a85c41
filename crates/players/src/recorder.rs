//! Where a load generator thread records what its players observe. One per
//! thread; merged at the end.

use hdrhistogram::Histogram;
use std::collections::HashMap;
use std::net::SocketAddr;
use tickpack_report::{new_histogram, record};

use crate::coverage::Tally;

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
    /// Handshakes completed after a player's first.
    pub reconnects: u64,
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
        } else {
            self.commands_lost += 1;
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

    pub fn server_tick(&mut self, server: SocketAddr, tick: u32, frame_us: u32, lateness_us: u32) {
        let seen = self.server_tick_seen.entry(server).or_insert(0);
        if tick > *seen {
            *seen = tick;
            record(&mut self.frame, u64::from(frame_us));
            record(&mut self.lateness, u64::from(lateness_us));
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
        ] {
            a.add(b).expect("histograms share bounds");
        }
        self.snapshots.merge(&o.snapshots);
        self.reconnects += o.reconnects;
        self.commands_sent += o.commands_sent;
        self.commands_reflected += o.commands_reflected;
        self.commands_lost += o.commands_lost;
        self.decode_errors += o.decode_errors;
        self.traffic.merge(&o.traffic);
    }
}
