//! How the host judges one instance beyond its PID, as the launch contract
//! carries it: when a started server counts as ready ([`Ready`]) and how
//! often its health check asks and how many unanswered checks in a row it
//! allows ([`HealthTiming`]).
//!
//! Both travel in [`crate::ServerSpec`] (host state files, the bench's
//! specs); records written before they existed read back as today's
//! behaviour ([`Ready::Health`], and `None` timing: the check's own
//! defaults, [`crate::Health::default_timing`]). A definition file sets
//! them in `[ready]` and `[health]` (crate::def checks them there, with
//! the bounds below); the host clamps whatever a record says to the same
//! bounds.

use serde::{Deserialize, Serialize};

use crate::transport::Transport;

/// The longest `[ready] log` line fragment, in bytes.
pub const MAX_READY_LOG_LEN: usize = 128;
/// `[health] interval_s` bounds, seconds.
pub const INTERVAL_S: (f64, f64) = (0.2, 60.0);
/// The most unanswered checks in a row `[health]` may allow.
pub const MAX_FAILURES: u32 = 100;

/// When a started server counts as ready (`running` in the host's status).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ready {
    /// Its health check answers (or, without one, it lived 200 ms): what
    /// every spec recorded before readiness could be chosen.
    #[default]
    Health,
    /// A line of its output (the log the host writes) contains this text.
    Log(String),
    /// Its port is bound (UDP) or listening (TCP) in its own network
    /// namespace.
    Port(Transport),
}

impl Ready {
    pub fn is_default(&self) -> bool {
        *self == Ready::Health
    }

    /// The piece of a log line that says one instance is ready, its
    /// placeholders (`{ip}:{port}` and the like; the game's were filled
    /// when the spec was made) filled for `slot`; `None` when readiness
    /// is not read from the log.
    pub fn log_for(&self, slot: &crate::launch::Slot) -> Option<String> {
        match self {
            Ready::Log(text) => Some(crate::launch::Word::from(text.clone()).expand(slot)),
            _ => None,
        }
    }

    /// Refuses a log fragment the host would not match: empty, too long,
    /// or not printable ASCII (a log line is matched byte by byte).
    pub fn check_log(text: &str) -> Result<(), String> {
        if text.is_empty()
            || text.len() > MAX_READY_LOG_LEN
            || !text.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        {
            return Err(format!(
                "ready.log {:?}: expected 1-{MAX_READY_LOG_LEN} printable ASCII characters (a piece of one line of the server's output)",
                text.chars().take(40).collect::<String>()
            ));
        }
        Ok(())
    }
}

/// How often the health check asks, and how many checks in a row may go
/// unanswered before the instance is `unresponsive` and before it is
/// killed (and restarted by the restart policy).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthTiming {
    /// Seconds between two checks (a check waits as long for its answer).
    pub interval_s: f64,
    /// Unanswered checks in a row that make it `unresponsive`.
    pub unresponsive_after: u32,
    /// Unanswered checks in a row that get it killed; 0: never killed.
    pub kill_after: u32,
}

impl HealthTiming {
    /// Refuses timing the host would not honour (the bounds above;
    /// `kill_after` 0 or at least `unresponsive_after`).
    pub fn check(&self) -> Result<(), String> {
        let (lo, hi) = INTERVAL_S;
        if !(lo..=hi).contains(&self.interval_s) {
            return Err(format!(
                "health: interval_s must be {lo}..={hi} seconds, got {}",
                self.interval_s
            ));
        }
        if !(1..=MAX_FAILURES).contains(&self.unresponsive_after) {
            return Err(format!(
                "health: unresponsive_after must be 1..={MAX_FAILURES} unanswered checks, got {}",
                self.unresponsive_after
            ));
        }
        if self.kill_after != 0
            && !(self.unresponsive_after..=MAX_FAILURES).contains(&self.kill_after)
        {
            return Err(format!(
                "health: kill_after must be 0 (never) or {}..={MAX_FAILURES} (at least unresponsive_after), got {}",
                self.unresponsive_after, self.kill_after
            ));
        }
        Ok(())
    }

    /// The same timing within the bounds, whatever a record says.
    pub fn clamped(self) -> HealthTiming {
        let unresponsive_after = self.unresponsive_after.clamp(1, MAX_FAILURES);
        HealthTiming {
            interval_s: if self.interval_s.is_finite() {
                self.interval_s.clamp(INTERVAL_S.0, INTERVAL_S.1)
            } else {
                INTERVAL_S.1
            },
            unresponsive_after,
            kill_after: match self.kill_after {
                0 => 0,
                k => k.clamp(unresponsive_after, MAX_FAILURES),
            },
        }
    }

    pub fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.clamped().interval_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_out_of_bounds_is_clamped_not_trusted() {
        let t = HealthTiming {
            interval_s: f64::NAN,
            unresponsive_after: 0,
            kill_after: 1000,
        }
        .clamped();
        assert_eq!(t.interval_s, 60.0);
        assert_eq!((t.unresponsive_after, t.kill_after), (1, MAX_FAILURES));
        assert!(t.check().is_ok());
    }

    #[test]
    fn a_log_fragment_is_one_short_printable_piece() {
        assert!(Ready::check_log("Server listening on port").is_ok());
        for bad in ["", "a\nb", "tab\there", "é", &"x".repeat(129)] {
            assert!(Ready::check_log(bad).is_err(), "{bad:?}");
        }
    }
}
