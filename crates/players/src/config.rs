//! Validated settings of a players run. Built by the CLI; checked before any
//! socket is opened.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::presence::PresencePlan;
use crate::PlayersError;

/// Size of each command datagram in bytes, drawn per command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SizeDist {
    Fixed(usize),
    /// Uniform over `min..=max`.
    Uniform {
        min: usize,
        max: usize,
    },
}

impl SizeDist {
    /// Parses `120` or `40-200`.
    pub fn parse(s: &str) -> Result<Self, PlayersError> {
        let bad = |why: &str| PlayersError::Config(format!("command size {s:?}: {why}"));
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| bad("expected a number of bytes or MIN-MAX"))
        };
        let d = match s.split_once('-') {
            Some((a, b)) => {
                let (min, max) = (num(a)?, num(b)?);
                if min > max {
                    return Err(bad("MIN is larger than MAX"));
                }
                SizeDist::Uniform { min, max }
            }
            None => SizeDist::Fixed(num(s)?),
        };
        let (min, max) = d.bounds();
        if min < tickpack_wire::COMMAND_HEADER_LEN || max > 1400 {
            return Err(bad(&format!(
                "sizes must be within {}..=1400 bytes",
                tickpack_wire::COMMAND_HEADER_LEN
            )));
        }
        Ok(d)
    }

    pub fn bounds(&self) -> (usize, usize) {
        match *self {
            SizeDist::Fixed(n) => (n, n),
            SizeDist::Uniform { min, max } => (min, max),
        }
    }
}

impl std::fmt::Display for SizeDist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SizeDist::Fixed(n) => write!(f, "{n}"),
            SizeDist::Uniform { min, max } => write!(f, "{min}-{max}"),
        }
    }
}

/// Which protocol the players speak: the game crate's one value
/// ([`tickpack_game::EmulatedProtocol`]), resolved from a definition with
/// [`tickpack_game::GameDef::protocols`].
pub use tickpack_game::EmulatedProtocol as Protocol;

/// Everything a players run needs (serialized only to hand a run to the
/// unprivileged process that plays it: the bench's `readers`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PlayersConfig {
    /// The protocol the players speak.
    pub game: Protocol,
    /// Servers to spread the players over, round robin.
    pub targets: Vec<SocketAddr>,
    /// Local addresses the players' sockets bind, each server's players
    /// spread over them round robin ([`crate::sources`]); empty: the
    /// kernel picks one.
    pub source_addrs: Vec<IpAddr>,
    /// The game server's limit of players per source address (its
    /// definition's `[players] per_address`), checked against
    /// `source_addrs` when some are given; `None`: no limit known.
    pub per_source_limit: Option<usize>,
    pub players: usize,
    /// Measured time, after the warm-up.
    pub duration: Duration,
    /// Time after start during which nothing is recorded (connect, settle).
    pub warmup: Duration,
    /// Commands per second per player; `None` means the server's tick rate.
    pub cmd_rate_hz: Option<f64>,
    pub cmd_size: SizeDist,
    /// Pings per second per player (0 disables).
    pub ping_hz: f64,
    pub ping_size: usize,
    /// How long a player keeps trying to connect before giving up.
    pub connect_timeout: Duration,
    /// A command not reflected by a snapshot this long after it was due is
    /// lost; the run drains this long after the window.
    pub loss_deadline: Duration,
    /// Load generator threads.
    pub threads: usize,
    /// CPUs to pin the threads to (round robin); empty: no pinning.
    pub cpus: Vec<usize>,
    /// Spin instead of sleeping between events: the load generator then
    /// adds no wake-up latency of its own to what it measures, at the price
    /// of one busy core per thread.
    pub busy_poll: bool,
    /// How the threads move datagrams (one io_uring each, or `epoll`).
    pub io: crate::io::IoMode,
    pub seed: u64,
    /// When each player is present, from the run's start
    /// ([`crate::presence`]); `None`: every player the whole run.
    pub presence: Option<PresencePlan>,
    /// A join not at its first snapshot this long after its first packet
    /// failed (a player who could not get in); `None`: the connect
    /// timeout. Only a presence plan's joins can fail and go on: without
    /// a plan a player that cannot connect gives up.
    pub join_timeout: Option<Duration>,
    /// Record the measured window in windows of this length as well as
    /// whole ([`crate::windows`]); `None`: no windows.
    pub window: Option<Duration>,
}

impl Default for PlayersConfig {
    fn default() -> Self {
        Self {
            game: Protocol::Tickpack,
            targets: vec![],
            source_addrs: vec![],
            per_source_limit: None,
            players: 12,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(1),
            cmd_rate_hz: None,
            cmd_size: SizeDist::Uniform { min: 40, max: 200 },
            ping_hz: 10.0,
            ping_size: 64,
            connect_timeout: Duration::from_secs(3),
            loss_deadline: Duration::from_secs(1),
            threads: 1,
            cpus: vec![],
            busy_poll: false,
            io: crate::io::IoMode::Auto,
            seed: 1,
            presence: None,
            join_timeout: None,
            window: None,
        }
    }
}

impl PlayersConfig {
    /// Checks the settings; nothing is opened before this passes.
    pub fn validate(&self) -> Result<(), PlayersError> {
        let bad = |m: String| Err(PlayersError::Config(m));
        if self.targets.is_empty() {
            return bad("at least one --target is needed".into());
        }
        if self.players == 0 || self.players > 100_000 {
            return bad(format!(
                "--players must be 1..=100000, got {}",
                self.players
            ));
        }
        if self.duration.is_zero() || self.duration > Duration::from_secs(24 * 3600) {
            return bad("--duration must be more than 0 and at most 24h".into());
        }
        if self.warmup > Duration::from_secs(3600) {
            return bad("--warmup must be at most 1h".into());
        }
        if self.connect_timeout.is_zero() || self.connect_timeout > Duration::from_secs(3600) {
            return bad("--connect-timeout must be more than 0 and at most 1h".into());
        }
        if let Some(r) = self.cmd_rate_hz {
            if !(r > 0.0 && r <= 1000.0) {
                return bad(format!("--cmd-rate must be in (0, 1000] Hz, got {r}"));
            }
        }
        if !(0.0..=1000.0).contains(&self.ping_hz) {
            return bad(format!(
                "--ping-rate must be in [0, 1000] Hz, got {}",
                self.ping_hz
            ));
        }
        if self.ping_size < tickpack_wire::PING_LEN || self.ping_size > 65_000 {
            return bad(format!(
                "--ping-size must be {}..=65000 bytes",
                tickpack_wire::PING_LEN
            ));
        }
        if self.loss_deadline < Duration::from_millis(10)
            || self.loss_deadline > Duration::from_secs(60)
        {
            return bad(format!(
                "--loss-deadline must be 10ms..=60s, got {:?}",
                self.loss_deadline
            ));
        }
        if self.threads == 0 || self.threads > 64 {
            return bad(format!("--threads must be 1..=64, got {}", self.threads));
        }
        if let Some(plan) = &self.presence {
            plan.check(self.players).map_err(PlayersError::Config)?;
        }
        if let Some(t) = self.join_timeout {
            if t.is_zero() || t > Duration::from_secs(3600) {
                return bad("the join timeout must be more than 0 and at most 1h".into());
            }
        }
        if let Some(w) = self.window {
            let windows = self.duration.as_nanos().div_ceil(w.as_nanos().max(1));
            if w < Duration::from_millis(100) || w > self.duration {
                return bad(format!(
                    "the window must be at least 100 ms and at most the duration ({:?}), got {w:?}",
                    self.duration
                ));
            }
            if windows > crate::windows::MAX_WINDOWS as u128 {
                return bad(format!(
                    "{windows} windows of {w:?} in {:?}: at most {} are kept",
                    self.duration,
                    crate::windows::MAX_WINDOWS
                ));
            }
        }
        crate::sources::check(
            self.players,
            &self.targets,
            &self.source_addrs,
            self.per_source_limit,
        )
    }
}

impl PlayersConfig {
    /// The limit a join has ([`PlayersConfig::join_timeout`]).
    pub fn join_timeout(&self) -> Duration {
        self.join_timeout.unwrap_or(self.connect_timeout)
    }

    /// The windows' length in microseconds; 0: no windows.
    pub fn window_len_us(&self) -> u64 {
        self.window.map_or(0, |w| w.as_micros() as u64)
    }
}

/// Static settings shared by the players of a run.
#[derive(Debug, Clone)]
pub struct PlayerSettings {
    /// Command interval; `None` until the server told its tick rate.
    pub cmd_rate_hz: Option<f64>,
    pub cmd_size: SizeDist,
    pub ping_hz: f64,
    pub ping_size: usize,
    /// Give up if the first handshake has not completed by then.
    pub connect_deadline_us: u64,
    /// Start and end of the measurement window (monotonic microseconds).
    pub window: (u64, u64),
    /// A command not reflected this long after it was due is lost.
    pub loss_deadline_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presence::PresenceSpan;

    fn cfg() -> PlayersConfig {
        PlayersConfig {
            targets: vec!["127.0.0.1:1".parse().unwrap()],
            players: 2,
            ..Default::default()
        }
    }

    #[test]
    fn plans_windows_and_join_timeouts_are_checked_before_anything_opens() {
        assert!(cfg().validate().is_ok());
        let span = PresenceSpan {
            from: Duration::ZERO,
            until: Duration::from_secs(1),
        };
        let mismatched = PlayersConfig {
            presence: Some(PresencePlan::since_run_start(vec![vec![span]])),
            ..cfg()
        };
        let err = mismatched.validate().unwrap_err().to_string();
        assert!(err.contains("for 1 players, the run has 2"), "{err}");
        let long = PlayersConfig {
            window: Some(Duration::from_secs(11)),
            ..cfg()
        };
        assert!(long
            .validate()
            .unwrap_err()
            .to_string()
            .contains("at most the duration"));
        let many = PlayersConfig {
            window: Some(Duration::from_millis(100)),
            duration: Duration::from_secs(3600),
            ..cfg()
        };
        let err = many.validate().unwrap_err().to_string();
        assert!(err.contains("36000 windows"), "{err}");
        let ok = PlayersConfig {
            window: Some(Duration::from_secs(2)),
            join_timeout: Some(Duration::from_secs(5)),
            ..cfg()
        };
        assert!(ok.validate().is_ok());
        assert_eq!(ok.join_timeout(), Duration::from_secs(5));
        assert_eq!(cfg().join_timeout(), cfg().connect_timeout);
        assert_eq!(ok.window_len_us(), 2_000_000);
        let zero = PlayersConfig {
            join_timeout: Some(Duration::ZERO),
            ..cfg()
        };
        assert!(zero.validate().is_err());
    }
}
