//! A step's verdict (`pass`, `fail`, `idle`) as `result.json` stores it,
//! and when a step's servers count as idle. Below the rule table
//! ([`crate::qos`]) and the schema ([`crate::bench`]), which both use it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A step's verdict: it met every rule, or it missed at least one, or its
/// servers had nothing to do ([`idle_reason`]): a step of idle servers is
/// no density, whatever its figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Idle,
}

impl Verdict {
    /// `Pass` when nothing was missed.
    pub fn of(misses: &[impl Sized]) -> Self {
        if misses.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    pub fn is_pass(self) -> bool {
        self == Verdict::Pass
    }

    pub fn is_fail(self) -> bool {
        self == Verdict::Fail
    }

    pub fn is_idle(self) -> bool {
        self == Verdict::Idle
    }

    /// As stored in `result.json`: `"pass"`, `"fail"` or `"idle"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Idle => "idle",
        }
    }
}

/// Below this share of a core per server, on average, a step's servers did
/// nothing at all. Measured on a 2-vCPU VM with `bench --allow-idle`
/// (docs/methodology.md, "Idle servers"): servers with no players and no
/// bots took 0.3 % of a core each (the reference server at 30 Hz) to
/// 1.3 % (a DarkPlaces game at 60 Hz), while the reference server at 30 Hz with 4
/// bots took 0.5 %: CPU alone cannot tell a light game from an idle one,
/// so the floor only catches servers that do nothing at all (a stopped
/// loop, a program that sleeps). That nothing was asked of them is refused
/// before the run (`bench`'s exit 7).
pub const IDLE_FLOOR_PERCENT_PER_SERVER: f64 = 0.2;

/// What a step's servers were given and showed, for [`idle_reason`].
#[derive(Debug, Clone, Copy, Default)]
pub struct StepLoad {
    /// Emulated players (all servers).
    pub players: u32,
    pub servers: u32,
    /// Bots asked for (all servers).
    pub bots_asked: u32,
    /// A load command of the user's ran beside every server.
    pub load_command: bool,
    /// Clients the servers' own query said they held (all servers), when
    /// a query said.
    pub clients_seen: Option<u32>,
    /// The servers' own CPU, % of one core, all servers together, when
    /// measured exactly (their threads' on-CPU time from schedstat): the
    /// figure the step records as `cpu.servers_own_percent` and every
    /// table shows.
    pub servers_own_percent: Option<f64>,
}

impl StepLoad {
    /// What was asked of the servers, in words: "4 bots were asked", "a
    /// load command ran beside every server", both, or nothing.
    fn asked(&self) -> String {
        let bots = match self.bots_asked {
            0 => None,
            1 => Some("1 bot was asked".to_string()),
            n => Some(format!("{n} bots were asked")),
        };
        match (bots, self.load_command) {
            (Some(b), true) => format!("{b} and a load command ran beside every server"),
            (Some(b), false) => b,
            (None, true) => "a load command ran beside every server".into(),
            (None, false) => {
                "nothing was asked of them (no players, no bots, no load command)".into()
            }
        }
    }

    /// What to try, given what was asked and did nothing.
    fn advice(&self) -> &'static str {
        match (self.bots_asked > 0, self.load_command) {
            (true, false) => "this engine may run no rounds without a human client; give a [load] command that connects one (docs/games.md, \"Bring your own load\")",
            (_, true) => "the load command did not make them work: check that it connects to {ip}:{port} and plays through the whole window (its output: the run dir's logs/load-ID.log)",
            (false, false) => "give them load: emulated players, server-side bots (--bots N) or a load command ([load] in the game's definition)",
        }
    }
}

/// Why a step's servers count as idle, if they do, naming what was asked
/// of them and did nothing: no emulated players (a step with players is
/// never idle: players measure latency), and either bots were asked but
/// the servers' own query said they held no one (the game ignored them),
/// or their own CPU was below [`IDLE_FLOOR_PERCENT_PER_SERVER`] each.
pub fn idle_reason(l: &StepLoad) -> Option<String> {
    if l.players > 0 || l.servers == 0 {
        return None;
    }
    let asked = l.asked();
    if l.bots_asked > 0 && l.clients_seen == Some(0) {
        return Some(format!(
            "the servers were idle: {asked}, but the servers' own query said they held no one: the game ignored the bots (check how its definition asks for them, where {{bots}} stands)"
        ));
    }
    let total = l.servers_own_percent?;
    let each = total / f64::from(l.servers);
    (each < IDLE_FLOOR_PERCENT_PER_SERVER).then(|| {
        format!(
            "the servers were idle: {asked}; the servers used {}% of a core ({}% each, below the {IDLE_FLOOR_PERCENT_PER_SERVER}% of a server doing anything at all): {}",
            crate::numbers::fmt_num(total),
            crate::numbers::fmt_num(each),
            l.advice()
        )
    })
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so widths like `{:>7}` apply.
        f.pad(self.as_str())
    }
}
