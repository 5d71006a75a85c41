//! Which power source this machine has: [`detect_with_reason`] tries the
//! user's command, RAPL, then IPMI, and falls back to the model, saying why.

use std::path::{Path, PathBuf};

use super::command::CommandSource;
use super::ipmi::IpmiSource;
use super::modeled::ModeledSource;
use super::rapl::RaplSource;
use super::{PowerError, PowerSource, DEFAULT_IDLE_WATTS, DEFAULT_MAX_WATTS, DEFAULT_SYSFS_ROOT};

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
    let model = ModeledSource::unchecked(cfg.idle_watts, cfg.max_watts);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

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

    /// `ipmitool dcmi power reading` from a BMC that measures (197 W), shared
    /// with the integration tests.
    const DCMI_ACTIVATED: &str = include_str!("../../tests/fixtures/dcmi-activated.txt");

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
        let tool = fake_ipmitool(&dir, &format!("cat <<'EOF'\n{DCMI_ACTIVATED}\nEOF"));
        let cfg = PowerConfig {
            sysfs_root: dir.clone(),
            ..PowerConfig::default()
        };
        let (mut source, why) = detect_using(&cfg, &tool);
        assert_eq!(source.name(), "ipmi", "{why}");
        assert!(why.contains("answered 197 W"), "{why}");
        source.start().unwrap();
        assert_eq!(source.watts_since_start(0.3).unwrap(), 197.0);
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
