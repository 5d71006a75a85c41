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
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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
    NotStarted { source_name: &'static str },
    /// `watts_since_start` at the very instant of `start`.
    #[error("{source_name} power: no time passed since start, cannot average")]
    NoInterval { source_name: &'static str },
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

/// What [`detect`] may use.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerConfig {
    /// The powercap root, [`DEFAULT_SYSFS_ROOT`] on a real machine.
    pub sysfs_root: PathBuf,
    /// A shell command printing watts, tried first when given.
    pub command: Option<String>,
    /// Model: watts with every core idle.
    pub idle_watts: f64,
    /// Model: watts with every core busy.
    pub max_watts: f64,
    /// Skip all measurement and use the model.
    pub force_model: bool,
}

impl Default for PowerConfig {
    fn default() -> Self {
        PowerConfig {
            sysfs_root: PathBuf::from(DEFAULT_SYSFS_ROOT),
            command: None,
            idle_watts: DEFAULT_IDLE_WATTS,
            max_watts: DEFAULT_MAX_WATTS,
            force_model: false,
        }
    }
}

impl PowerConfig {
    /// Refuses model numbers that make no sense and an empty command.
    /// Call it before anything runs; [`detect`] itself never fails.
    pub fn validate(&self) -> Result<(), PowerError> {
        ModeledSource::new(self.idle_watts, self.max_watts)?;
        if let Some(c) = &self.command {
            if c.trim().is_empty() {
                return Err(PowerError::EmptyCommand);
            }
        }
        Ok(())
    }
}

/// Picks the best source (see the module docs for the order). Never fails.
pub fn detect(cfg: &PowerConfig) -> Box<dyn PowerSource> {
    detect_with_reason(cfg).0
}

/// [`detect`], plus one line saying which source was chosen and why the
/// ones before it were not, e.g. on a machine without powercap or ipmitool:
/// `modeled (idle 100 W, max 300 W; not measured) because: rapl: cannot
/// read /sys/class/powercap: No such file or directory (os error 2); ipmi:
/// cannot run ipmitool dcmi power reading: No such file or directory (os error 2)`.
pub fn detect_with_reason(cfg: &PowerConfig) -> (Box<dyn PowerSource>, String) {
    detect_using(cfg, Path::new("ipmitool"))
}

fn detect_using(cfg: &PowerConfig, ipmitool: &Path) -> (Box<dyn PowerSource>, String) {
    let model = ModeledSource {
        idle_watts: cfg.idle_watts,
        max_watts: cfg.max_watts,
        started: false,
    };
    let model_label = format!(
        "modeled (idle {} W, max {} W; not measured)",
        cfg.idle_watts, cfg.max_watts
    );
    if cfg.force_model {
        return (
            Box::new(model),
            format!("{model_label} because it was asked for"),
        );
    }
    let mut skipped = Vec::new();
    let because = |skipped: &[String]| {
        if skipped.is_empty() {
            String::new()
        } else {
            format!("; not used: {}", skipped.join("; "))
        }
    };

    if let Some(command) = &cfg.command {
        let source = CommandSource::new(command.clone());
        match source.read() {
            Ok(w) => {
                return (
                    Box::new(source),
                    format!("command: `{command}` printed {w} W"),
                )
            }
            Err(e) => skipped.push(format!("command: {e}")),
        }
    }
    match RaplSource::open(&cfg.sysfs_root) {
        Ok(rapl) => {
            let why = format!(
                "rapl: {} under {} (CPU packages only, not the wall){}",
                rapl.domain_names().join(", "),
                cfg.sysfs_root.display(),
                because(&skipped)
            );
            return (Box::new(rapl), why);
        }
        Err(e) => skipped.push(format!("rapl: {e}")),
    }
    let ipmi = IpmiSource::new(ipmitool);
    match ipmi.read() {
        Ok(w) => {
            let why = format!(
                "ipmi: {} dcmi power reading answered {w} W{}",
                ipmitool.display(),
                because(&skipped)
            );
            return (Box::new(ipmi), why);
        }
        Err(e) => skipped.push(format!("ipmi: {e}")),
    }
    if let Err(e) = model.check() {
        skipped.push(format!("model: {e} (start will fail)"));
    }
    (
        Box::new(model),
        format!("{model_label} because: {}", skipped.join("; ")),
    )
}

// ---------------------------------------------------------------- RAPL

#[derive(Debug, Clone)]
struct RaplDomain {
    name: String,
    energy_path: PathBuf,
    max_range_uj: u64,
}

/// RAPL package energy counters under a powercap root.
#[derive(Debug)]
pub struct RaplSource {
    domains: Vec<RaplDomain>,
    start: Option<(Instant, Vec<u64>)>,
}

/// Energy used between two readings of a counter that wraps to 0 after
/// `max_range_uj`. Handles one wrap; at 200 W a typical 262 kJ range takes
/// over 20 minutes to wrap, far longer than a step.
pub fn energy_delta_uj(start_uj: u64, end_uj: u64, max_range_uj: u64) -> u64 {
    if end_uj >= start_uj {
        end_uj - start_uj
    } else {
        max_range_uj.saturating_sub(start_uj) + end_uj
    }
}

fn read_u64(path: &Path) -> Result<u64, PowerError> {
    let text = std::fs::read_to_string(path).map_err(|source| PowerError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    text.trim().parse().map_err(|_| PowerError::Sysfs {
        path: path.to_path_buf(),
        content: text.trim().to_string(),
    })
}

/// `intel-rapl:N` (exactly one colon: zones, not sub-zones) -> N.
fn rapl_zone_index(dir_name: &str) -> Option<u32> {
    dir_name.strip_prefix("intel-rapl:")?.parse().ok()
}

impl RaplSource {
    /// Finds the package domains under `root` (normally
    /// [`DEFAULT_SYSFS_ROOT`]) and checks that their counters can be read.
    pub fn open(root: &Path) -> Result<Self, PowerError> {
        let entries = std::fs::read_dir(root).map_err(|source| PowerError::Read {
            path: root.to_path_buf(),
            source,
        })?;
        let mut zones = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| PowerError::Read {
                path: root.to_path_buf(),
                source,
            })?;
            let file_name = entry.file_name();
            if let Some(index) = file_name.to_str().and_then(rapl_zone_index) {
                zones.push((index, entry.path()));
            }
        }
        zones.sort();
        let mut domains = Vec::new();
        for (_, dir) in zones {
            let name_path = dir.join("name");
            let name = match std::fs::read_to_string(&name_path) {
                Ok(n) => n.trim().to_string(),
                Err(source) => {
                    return Err(PowerError::Read {
                        path: name_path,
                        source,
                    })
                }
            };
            if !name.starts_with("package") {
                continue; // psys would count the packages twice
            }
            let max_range_uj = read_u64(&dir.join("max_energy_range_uj"))?;
            let energy_path = dir.join("energy_uj");
            read_u64(&energy_path)?; // fails here, not mid-run, when root-only
            domains.push(RaplDomain {
                name,
                energy_path,
                max_range_uj,
            });
        }
        if domains.is_empty() {
            return Err(PowerError::NoRapl {
                root: root.to_path_buf(),
            });
        }
        Ok(RaplSource {
            domains,
            start: None,
        })
    }

    /// The domains summed, e.g. `["package-0", "package-1"]`.
    pub fn domain_names(&self) -> Vec<&str> {
        self.domains.iter().map(|d| d.name.as_str()).collect()
    }

    fn read_all(&self) -> Result<Vec<u64>, PowerError> {
        self.domains
            .iter()
            .map(|d| {
                let v = read_u64(&d.energy_path)?;
                if v > d.max_range_uj {
                    return Err(PowerError::RaplRange {
                        path: d.energy_path.clone(),
                        value: v,
                        max: d.max_range_uj,
                    });
                }
                Ok(v)
            })
            .collect()
    }

    /// [`PowerSource::start`] with the time passed in (for tests and for
    /// callers that already hold the step's start time).
    pub fn start_at(&mut self, now: Instant) -> Result<(), PowerError> {
        self.start = Some((now, self.read_all()?));
        Ok(())
    }

    /// Average watts from [`start_at`](Self::start_at) until `now`, summed
    /// over all package domains.
    pub fn watts_at(&mut self, now: Instant) -> Result<f64, PowerError> {
        let (t0, first) = self.start.as_ref().ok_or(PowerError::NotStarted {
            source_name: "rapl",
        })?;
        let secs = now.saturating_duration_since(*t0).as_secs_f64();
        if secs <= 0.0 {
            return Err(PowerError::NoInterval {
                source_name: "rapl",
            });
        }
        let end = self.read_all()?;
        let total_uj: u64 = self
            .domains
            .iter()
            .zip(first.iter().zip(&end))
            .map(|(d, (&a, &b))| energy_delta_uj(a, b, d.max_range_uj))
            .sum();
        Ok(total_uj as f64 / 1e6 / secs)
    }
}

impl PowerSource for RaplSource {
    fn kind(&self) -> PowerSourceKind {
        PowerSourceKind::Rapl
    }
    fn start(&mut self) -> Result<(), PowerError> {
        self.start_at(Instant::now())
    }
    fn watts_since_start(&mut self, busy_fraction: f64) -> Result<f64, PowerError> {
        check_busy(busy_fraction)?;
        self.watts_at(Instant::now())
    }
}

// ---------------------------------------------------------------- programs

/// Runs `cmd` with stdin closed, in its own process group, and kills the
/// whole group if it takes longer than `timeout` (so `sh -c "sleep 60"`
/// does not leave the sleep behind).
fn run_with_timeout(
    mut cmd: Command,
    program: &str,
    timeout: Duration,
) -> Result<Output, PowerError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = cmd.spawn().map_err(|source| PowerError::Spawn {
        program: program.to_string(),
        source,
    })?;
    let pgid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(source)) => Err(PowerError::Spawn {
            program: program.to_string(),
            source,
        }),
        Err(_) => {
            // The waiting thread owns the child; signal its process group.
            let _ = Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("kill -s KILL -- -{pgid}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            // Let the waiting thread reap it; a grandchild that escaped
            // the group may keep the pipes open, so do not wait forever.
            let _ = rx.recv_timeout(Duration::from_secs(1));
            Err(PowerError::Timeout {
                program: program.to_string(),
                timeout,
            })
        }
    }
}

fn short(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

fn check_status(program: &str, out: &Output) -> Result<(), PowerError> {
    if out.status.success() {
        return Ok(());
    }
    let mut stderr = short(&out.stderr);
    if stderr.is_empty() {
        stderr = short(&out.stdout);
    }
    Err(PowerError::Failed {
        program: program.to_string(),
        status: out.status.to_string(),
        stderr,
    })
}

/// Two readings, at start and at the end, averaged.
#[derive(Debug, Default)]
struct TwoPoint {
    first: Option<f64>,
}

impl TwoPoint {
    fn start(&mut self, reading: Result<f64, PowerError>) -> Result<(), PowerError> {
        self.first = None;
        self.first = Some(reading?);
        Ok(())
    }
    fn average(
        &self,
        source_name: &'static str,
        busy_fraction: f64,
        read: impl FnOnce() -> Result<f64, PowerError>,
    ) -> Result<f64, PowerError> {
        check_busy(busy_fraction)?;
        let first = self.first.ok_or(PowerError::NotStarted { source_name })?;
        Ok((first + read()?) / 2.0)
    }
}

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
            .average("command", busy_fraction, || self.read())
    }
}

/// Parses the output of `ipmitool dcmi power reading`: the number on the
/// `Instantaneous power reading: 123 Watts` line. A reading of 0 W is how
/// BMCs without power measurement answer, and is refused.
pub fn parse_ipmi_dcmi(text: &str) -> Result<f64, PowerError> {
    let no_reading = || PowerError::IpmiNoReading {
        output: short(text.as_bytes()),
    };
    let line = text
        .lines()
        .find(|l| {
            l.trim_start()
                .to_ascii_lowercase()
                .starts_with("instantaneous power reading")
        })
        .ok_or_else(no_reading)?;
    let value = line.split_once(':').ok_or_else(no_reading)?.1.trim();
    let number = value.split_whitespace().next().ok_or_else(no_reading)?;
    let watts: f64 = number.parse().map_err(|_| no_reading())?;
    if !watts.is_finite() || watts < 0.0 {
        return Err(no_reading());
    }
    if watts == 0.0 {
        return Err(PowerError::IpmiZero);
    }
    Ok(watts)
}

/// The BMC's power reading through `ipmitool dcmi power reading`.
#[derive(Debug)]
pub struct IpmiSource {
    program: PathBuf,
    readings: TwoPoint,
}

impl IpmiSource {
    /// `program` is normally `ipmitool` (looked up on PATH).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        IpmiSource {
            program: program.into(),
            readings: TwoPoint::default(),
        }
    }

    /// One reading, in watts.
    pub fn read(&self) -> Result<f64, PowerError> {
        let shown = format!("{} dcmi power reading", self.program.display());
        let mut cmd = Command::new(&self.program);
        cmd.args(["dcmi", "power", "reading"]);
        let out = run_with_timeout(cmd, &shown, IPMI_TIMEOUT)?;
        check_status(&shown, &out)?;
        parse_ipmi_dcmi(&String::from_utf8_lossy(&out.stdout))
    }
}

impl PowerSource for IpmiSource {
    fn kind(&self) -> PowerSourceKind {
        PowerSourceKind::Ipmi
    }
    fn start(&mut self) -> Result<(), PowerError> {
        let reading = self.read();
        self.readings.start(reading)
    }
    fn watts_since_start(&mut self, busy_fraction: f64) -> Result<f64, PowerError> {
        self.readings.average("ipmi", busy_fraction, || self.read())
    }
}

// ---------------------------------------------------------------- model

/// The linear model: `idle_watts + (max_watts − idle_watts) × busy_fraction`.
/// Not a measurement; its results are labelled `"modeled"`.
#[derive(Debug, Clone)]
pub struct ModeledSource {
    idle_watts: f64,
    max_watts: f64,
    started: bool,
}

impl ModeledSource {
    /// Refuses negative, non-finite or inverted figures.
    pub fn new(idle_watts: f64, max_watts: f64) -> Result<Self, PowerError> {
        let m = ModeledSource {
            idle_watts,
            max_watts,
            started: false,
        };
        m.check()?;
        Ok(m)
    }

    fn check(&self) -> Result<(), PowerError> {
        let (idle, max) = (self.idle_watts, self.max_watts);
        let ok = idle.is_finite() && max.is_finite() && idle >= 0.0 && max > 0.0 && max >= idle;
        if ok {
            Ok(())
        } else {
            Err(PowerError::BadModel { idle, max })
        }
    }

    /// Modeled watts at `busy_fraction` (0–1).
    pub fn watts(&self, busy_fraction: f64) -> Result<f64, PowerError> {
        let busy = check_busy(busy_fraction)?;
        Ok(self.idle_watts + (self.max_watts - self.idle_watts) * busy)
    }
}

impl PowerSource for ModeledSource {
    fn kind(&self) -> PowerSourceKind {
        PowerSourceKind::Modeled
    }
    fn start(&mut self) -> Result<(), PowerError> {
        self.check()?;
        self.started = true;
        Ok(())
    }
    /// Requires `start` like the measuring sources, so code that forgets it
    /// fails on a laptop too, not only on a machine with RAPL.
    fn watts_since_start(&mut self, busy_fraction: f64) -> Result<f64, PowerError> {
        if !self.started {
            return Err(PowerError::NotStarted {
                source_name: "modeled",
            });
        }
        self.watts(busy_fraction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tickpack-power-unit-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn fake_ipmitool(dir: &Path, script_body: &str) -> PathBuf {
        let path = dir.join("ipmitool");
        std::fs::write(&path, format!("#!/bin/sh\n{script_body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    const DCMI_OK: &str = "
    Instantaneous power reading:                   215 Watts
    Minimum during sampling period:                162 Watts
    Maximum during sampling period:                276 Watts
    Average power reading over sample period:      176 Watts
    IPMI timestamp:                           Wed Feb 15 12:49:51 2017
    Sampling period:                          01131466 Seconds.
    Power reading state is:                   activated
";

    #[test]
    fn without_rapl_or_ipmitool_detection_falls_back_to_the_model() {
        let dir = temp_dir("no-rapl");
        let cfg = PowerConfig {
            sysfs_root: dir.clone(),
            ..PowerConfig::default()
        };
        let (source, why) = detect_using(&cfg, &dir.join("no-such-ipmitool"));
        assert_eq!(source.name(), "modeled");
        assert!(why.starts_with("modeled (idle 100 W, max 300 W"), "{why}");
        assert!(why.contains("rapl: no RAPL package domain"), "{why}");
        assert!(why.contains("ipmi: cannot run"), "{why}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_bmc_that_answers_is_used_when_there_is_no_rapl() {
        let dir = temp_dir("ipmi");
        let tool = fake_ipmitool(&dir, &format!("cat <<'EOF'\n{DCMI_OK}\nEOF"));
        let cfg = PowerConfig {
            sysfs_root: dir.clone(),
            ..PowerConfig::default()
        };
        let (mut source, why) = detect_using(&cfg, &tool);
        assert_eq!(source.name(), "ipmi", "{why}");
        assert!(why.contains("answered 215 W"), "{why}");
        source.start().unwrap();
        assert_eq!(source.watts_since_start(0.3).unwrap(), 215.0);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_bmc_without_power_reading_falls_back_to_the_model() {
        let dir = temp_dir("ipmi-broken");
        let tool = fake_ipmitool(
            &dir,
            "echo 'Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory' >&2; exit 1",
        );
        let cfg = PowerConfig {
            sysfs_root: dir.clone(),
            ..PowerConfig::default()
        };
        let (source, why) = detect_using(&cfg, &tool);
        assert_eq!(source.name(), "modeled");
        assert!(why.contains("Could not open device at /dev/ipmi0"), "{why}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
