//! The user's power command (`--power-command`), e.g. a metered PDU or a
//! wall meter, which prints watts.

use std::process::Command;
use std::time::Duration;

use tickpack_report::bench::PowerSourceKind;

use super::program::{check_status, run_with_timeout, short, TwoPoint};
use super::{PowerError, PowerSource, COMMAND_TIMEOUT};

/// Parses watts as printed by a power command: a positive number,
/// optionally followed by `W` (either case, with or without a space).
pub fn parse_watts(text: &str) -> Option<f64> {
    let t = text.trim();
    let t = t
        .strip_suffix('W')
        .or_else(|| t.strip_suffix('w'))
        .unwrap_or(t)
        .trim_end();
    let w: f64 = t.parse().ok()?;
    (w.is_finite() && w > 0.0).then_some(w)
}

/// A user command that prints the machine's current watts.
#[derive(Debug)]
pub struct CommandSource {
    command: String,
    timeout: Duration,
    readings: TwoPoint,
}

impl CommandSource {
    /// `command` runs through `sh -c` with [`COMMAND_TIMEOUT`].
    pub fn new(command: impl Into<String>) -> Self {
        Self::with_timeout(command, COMMAND_TIMEOUT)
    }

    /// The same with another time limit.
    pub fn with_timeout(command: impl Into<String>, timeout: Duration) -> Self {
        CommandSource {
            command: command.into(),
            timeout,
            readings: TwoPoint::default(),
        }
    }

    /// Runs the command once and parses what it printed.
    pub fn read(&self) -> Result<f64, PowerError> {
        if self.command.trim().is_empty() {
            return Err(PowerError::EmptyCommand);
        }
        let program = format!("power command `{}`", self.command);
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(&self.command);
        let out = run_with_timeout(cmd, &program, self.timeout)?;
        check_status(&program, &out)?;
        parse_watts(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| PowerError::NotWatts {
            command: self.command.clone(),
            output: short(&out.stdout),
        })
    }
}

impl PowerSource for CommandSource {
    fn kind(&self) -> PowerSourceKind {
        PowerSourceKind::Command
    }
    fn start(&mut self) -> Result<(), PowerError> {
        let reading = self.read();
        self.readings.start(reading)
    }
    fn watts_since_start(&mut self, busy_fraction: f64) -> Result<f64, PowerError> {
        self.readings
            .average(PowerSourceKind::Command, busy_fraction, || self.read())
    }
}
