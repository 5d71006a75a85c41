//! IPMI: the BMC's power reading of the whole machine, through `ipmitool`.

use std::path::PathBuf;
use std::process::Command;

use tickpack_report::bench::PowerSourceKind;

use super::program::{check_status, run_with_timeout, short, TwoPoint};
use super::{PowerError, PowerSource, IPMI_TIMEOUT};

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
        self.readings
            .average(PowerSourceKind::Ipmi, busy_fraction, || self.read())
    }
}
