//! How much power the machine draws during a benchmark step, from the best
//! source this machine has.
//!
//! Every source sits behind one trait, [`PowerSource`], and reports the
//! average watts between [`PowerSource::start`] and
//! [`PowerSource::watts_since_start`]. [`detect_with_reason`] picks one, in
//! this order, and says why in words:
//!
//! 1. **command**: a user command (`--power-command "..."`, e.g. reading a
//!    metered PDU or a wall meter) that prints watts, such as `123.5` or
//!    `123.5 W`. It runs through `sh -c` with a 5 s limit, once at start and
//!    once at the end; the two readings are averaged. It comes first because
//!    the user asked for it explicitly, and because it usually measures the
//!    whole machine at the wall.
//! 2. **rapl**: Intel/AMD RAPL energy counters through powercap
//!    (`/sys/class/powercap/intel-rapl:N`, the package domains only: `name`
//!    starting with `package`; the `psys` domain and the `intel-rapl-mmio`
//!    duplicates are skipped so nothing is counted twice). Average watts are
//!    the energy delta over the time delta; a counter that wrapped once
//!    (past `max_energy_range_uj`) is handled. RAPL covers the CPU packages
//!    only, not DRAM, disks, fans or power-supply losses, so it reads lower
//!    than a wall meter. Since Linux 5.10 `energy_uj` is readable by root only.
//! 3. **ipmi**: `ipmitool dcmi power reading` (the BMC's view of the whole
//!    machine), read at start and at the end and averaged. Two instantaneous
//!    readings are a coarse average; prefer longer steps. A BMC that answers
//!    0 W has no power reading and is skipped.
//! 4. **modeled**: no measurement at all, a linear model
//!    `idle_watts + (max_watts − idle_watts) × busy_fraction`, where
//!    `busy_fraction` is the whole machine's CPU busy share (0–1). Its
//!    defaults, [`DEFAULT_IDLE_WATTS`] = 100 W and [`DEFAULT_MAX_WATTS`] =
//!    300 W, describe a generic mid-range 2-socket x86 server measured at
//!    the wall: published SPECpower_ssj2008 results for such machines put
//!    active idle at roughly a quarter to a third of full-load power, and
//!    whole-machine power is close to linear in CPU utilisation (Fan, Weber
//!    and Barroso, "Power provisioning for a warehouse-sized computer",
//!    ISCA 2007). It is a model, not a measurement: every result carries the
//!    source name `"modeled"`; measure your own machine's idle and full-load
//!    wall power and pass them before publishing any figure.
//!
//! Detection never fails: whatever goes wrong, it falls back to the model
//! and the reason string says what was tried and why it was not used.
//!
//! One file per source: `power/command.rs`, `power/rapl.rs`,
//! `power/ipmi.rs`, `power/modeled.rs`; `power/detect.rs` picks one and
//! `power/program.rs` runs the programs the command and IPMI sources read.
//! This file holds what they share: the trait, the errors, the defaults.
//!
//! This module does not attribute power to processes, poll in the
//! background, or talk to any meter itself (use the command source for that).
//!
//! # Order of calls
//!
//! ```
//! use tickpack_bench::power::{detect_with_reason, PowerConfig};
//!
//! let cfg = PowerConfig { force_model: true, ..PowerConfig::default() };
//! cfg.validate()?; // bad flags are refused before anything runs
//! let (mut source, why) = detect_with_reason(&cfg);
//! println!("power: {why}");
//! source.start()?; // when the step's measurement begins
//! // ... the step runs ...
//! let power = source.power_since_start(0.5)?; // busy fraction 0-1, used by the model only
//! assert_eq!(power.source.as_str(), "modeled");
//! assert_eq!(power.watts, 200.0);
//! # Ok::<(), tickpack_bench::power::PowerError>(())
//! ```

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use tickpack_report::bench::{Power, PowerSourceKind};

/// Where powercap lives on Linux.
pub const DEFAULT_SYSFS_ROOT: &str = "/sys/class/powercap";

/// Modeled wall power of a generic 2-socket server with every core idle.
pub const DEFAULT_IDLE_WATTS: f64 = 100.0;

/// Modeled wall power of a generic 2-socket server with every core busy.
pub const DEFAULT_MAX_WATTS: f64 = 300.0;

/// How long the user's power command may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// How long `ipmitool` may take to answer (BMCs can be slow).
pub const IPMI_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong reading power.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    /// A sysfs file could not be read.
    #[error("cannot read {path}: {source}{hint}", hint = permission_hint(source))]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A sysfs file did not hold a whole number.
    #[error("{path} holds {content:?}, not a whole number")]
    Sysfs { path: PathBuf, content: String },
    /// No RAPL package domain under the powercap root.
    #[error("no RAPL package domain under {root} (looked for intel-rapl:N/name starting with \"package\")")]
    NoRapl { root: PathBuf },
    /// A counter reading is impossible (above its own range).
    #[error("{path} reads {value}, above its max_energy_range_uj of {max}")]
    RaplRange { path: PathBuf, value: u64, max: u64 },
    /// `watts_since_start` before `start`.
    #[error("{source_name} power: watts_since_start called before start")]
    NotStarted { source_name: PowerSourceKind },
    /// `watts_since_start` at the very instant of `start`.
    #[error("{source_name} power: no time passed since start, cannot average")]
    NoInterval { source_name: PowerSourceKind },
    /// A program could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
    /// A program ran past its time limit and was killed.
    #[error("{program} did not finish within {timeout:?} and was killed")]
    Timeout { program: String, timeout: Duration },
    /// A program exited with a failure status.
    #[error("{program} failed ({status}): {stderr}")]
    Failed {
        program: String,
        status: String,
        stderr: String,
    },
    /// The power command printed something that is not watts.
    #[error(
        "power command `{command}` printed {output:?}; expected a positive number of \
         watts, optionally followed by W (e.g. \"123.5\" or \"123.5 W\")"
    )]
    NotWatts { command: String, output: String },
    /// The power command is empty.
    #[error("the power command is empty")]
    EmptyCommand,
    /// `ipmitool dcmi power reading` printed no reading.
    #[error("ipmitool dcmi power reading gave no \"Instantaneous power reading\": {output:?}")]
    IpmiNoReading { output: String },
    /// The BMC answered 0 W, its way of saying it has no reading.
    #[error("the BMC reports 0 W: DCMI power reading is not available on this machine")]
    IpmiZero,
    /// Model parameters that make no sense.
    #[error(
        "power model needs 0 <= idle watts <= max watts, both finite and max above 0; \
         got idle {idle} W, max {max} W"
    )]
    BadModel { idle: f64, max: f64 },
    /// A busy fraction outside 0..=1.
    #[error("busy fraction {0} is outside 0..=1 (pass a fraction such as 0.75, not a percentage)")]
    BusyFraction(f64),
}

fn permission_hint(e: &io::Error) -> &'static str {
    if e.kind() == io::ErrorKind::PermissionDenied {
        " (since Linux 5.10 only root can read RAPL energy counters)"
    } else {
        ""
    }
}

/// A way to measure the machine's average power over an interval.
pub trait PowerSource: Send {
    /// Which source this is: what results record as [`Power::source`].
    fn kind(&self) -> PowerSourceKind;

    /// [`kind`](Self::kind) as results spell it: `"rapl"`, `"ipmi"`,
    /// `"command"` or `"modeled"`.
    fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// Begins an interval. Calling it again begins a new one.
    fn start(&mut self) -> Result<(), PowerError>;

    /// Average watts from the last [`start`](Self::start) until now.
    /// `busy_fraction` (0–1, the whole machine's CPU busy share) is used by
    /// the model only, but is checked by every source so a percentage
    /// passed by mistake is caught on any machine.
    fn watts_since_start(&mut self, busy_fraction: f64) -> Result<f64, PowerError>;

    /// [`watts_since_start`](Self::watts_since_start) labelled with
    /// [`name`](Self::name), ready for a result file.
    fn power_since_start(&mut self, busy_fraction: f64) -> Result<Power, PowerError> {
        let watts = self.watts_since_start(busy_fraction)?;
        Ok(Power {
            watts,
            source: self.kind(),
        })
    }
}

/// Accepts 0..=1, and rounding noise just outside it (a mean of busy
/// shares that are all 100 % can come out at 1.0000000000000002), clamped.
fn check_busy(busy_fraction: f64) -> Result<f64, PowerError> {
    const SLACK: f64 = 1e-6;
    if (-SLACK..=1.0 + SLACK).contains(&busy_fraction) {
        Ok(busy_fraction.clamp(0.0, 1.0))
    } else {
        Err(PowerError::BusyFraction(busy_fraction))
    }
}

mod command;
mod detect;
mod ipmi;
mod modeled;
mod program;
mod rapl;

pub use command::{parse_watts, CommandSource};
pub use detect::{detect, detect_with_reason, PowerConfig};
pub use ipmi::{parse_ipmi_dcmi, IpmiSource};
pub use modeled::ModeledSource;
pub use rapl::{energy_delta_uj, RaplSource};
