//! Power sources as a user meets them: RAPL on a fake powercap tree, IPMI
//! output captured from real BMCs, a user command, the model, and which
//! source detection picks.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tickpack_bench::power::{
    detect, detect_with_reason, energy_delta_uj, parse_ipmi_dcmi, parse_watts, CommandSource,
    IpmiSource, ModeledSource, PowerConfig, PowerError, PowerSource, RaplSource,
    DEFAULT_SYSFS_ROOT,
};

/// A temp directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("tickpack-power-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const MAX_RANGE: u64 = 262_143_328_850;

/// Writes one powercap zone the way the kernel lays it out.
fn zone(root: &Path, dir: &str, name: &str, energy_uj: u64) {
    let d = root.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
    std::fs::write(d.join("energy_uj"), format!("{energy_uj}\n")).unwrap();
    std::fs::write(d.join("max_energy_range_uj"), format!("{MAX_RANGE}\n")).unwrap();
}

fn set_energy(root: &Path, dir: &str, energy_uj: u64) {
    std::fs::write(root.join(dir).join("energy_uj"), format!("{energy_uj}\n")).unwrap();
}

/// Two sockets, plus the zones that must not be summed: psys (the whole
/// platform, would count the packages twice), a core sub-zone and the MMIO
/// duplicate of package-0.
fn two_socket_tree(root: &Path) {
    zone(root, "intel-rapl:0", "package-0", 1_000_000);
    zone(root, "intel-rapl:1", "package-1", 5_000_000);
    zone(root, "intel-rapl:2", "psys", 9_000_000);
    zone(root, "intel-rapl:0:0", "core", 100);
    zone(root, "intel-rapl-mmio:0", "package-0", 7_000_000);
    std::fs::create_dir_all(root.join("intel-rapl")).unwrap(); // the control type
}

#[test]
fn rapl_averages_both_packages_over_the_interval() {
    let tmp = TempDir::new("rapl");
    two_socket_tree(&tmp.0);
    let mut rapl = RaplSource::open(&tmp.0).unwrap();
    assert_eq!(rapl.domain_names(), ["package-0", "package-1"]);

    let t0 = Instant::now();
    rapl.start_at(t0).unwrap();
    // 2 s later: package-0 used 150 J, package-1 used 90 J, psys 500 J (ignored).
    set_energy(&tmp.0, "intel-rapl:0", 1_000_000 + 150_000_000);
    set_energy(&tmp.0, "intel-rapl:1", 5_000_000 + 90_000_000);
    set_energy(&tmp.0, "intel-rapl:2", 9_000_000 + 500_000_000);
    set_energy(&tmp.0, "intel-rapl-mmio:0", 7_000_000 + 150_000_000);
    let watts = rapl.watts_at(t0 + Duration::from_secs(2)).unwrap();
    assert!(
        (watts - 120.0).abs() < 1e-9,
        "(150 J + 90 J) / 2 s = 120 W, got {watts}"
    );
}

#[test]
fn rapl_counter_that_wrapped_during_the_step() {
    let tmp = TempDir::new("rapl-wrap");
    zone(&tmp.0, "intel-rapl:0", "package-0", MAX_RANGE - 40_000_000);
    let mut rapl = RaplSource::open(&tmp.0).unwrap();
    let t0 = Instant::now();
    rapl.start_at(t0).unwrap();
    // 40 J up to the wrap, then 60 J more: 100 J in 4 s.
    set_energy(&tmp.0, "intel-rapl:0", 60_000_000);
    let watts = rapl.watts_at(t0 + Duration::from_secs(4)).unwrap();
    assert!(
        (watts - 25.0).abs() < 1e-9,
        "100 J / 4 s = 25 W, got {watts}"
    );

    assert_eq!(energy_delta_uj(10, 30, 100), 20);
    assert_eq!(energy_delta_uj(90, 5, 100), 15);
}

#[test]
fn rapl_refuses_a_tree_without_package_domains() {
    let tmp = TempDir::new("rapl-none");
    zone(&tmp.0, "intel-rapl:0", "psys", 1);
    let err = RaplSource::open(&tmp.0).unwrap_err();
    assert!(matches!(err, PowerError::NoRapl { .. }), "{err}");
    assert!(err.to_string().contains(&tmp.0.display().to_string()));
}

#[test]
fn rapl_reports_a_garbled_counter_with_its_path() {
    let tmp = TempDir::new("rapl-garbled");
    zone(&tmp.0, "intel-rapl:0", "package-0", 1);
    let mut rapl = RaplSource::open(&tmp.0).unwrap();
    rapl.start().unwrap();
    std::fs::write(tmp.0.join("intel-rapl:0/energy_uj"), "oops\n").unwrap();
    let err = rapl.watts_since_start(0.5).unwrap_err().to_string();
    assert!(err.contains("intel-rapl:0/energy_uj"), "{err}");
    assert!(err.contains("\"oops\""), "{err}");
}

/// `ipmitool dcmi power reading` captured from a Supermicro-style BMC.
const DCMI_ACTIVATED: &str = include_str!("fixtures/dcmi-activated.txt");
/// OpenBMC reports real readings with the state "deactivated".
const DCMI_OPENBMC: &str = include_str!("fixtures/dcmi-openbmc.txt");
/// A BMC without power measurement.
const DCMI_ZERO: &str = include_str!("fixtures/dcmi-zero.txt");

#[test]
fn ipmi_output_parses_to_the_instantaneous_reading() {
    assert_eq!(parse_ipmi_dcmi(DCMI_ACTIVATED).unwrap(), 197.0);
    assert_eq!(parse_ipmi_dcmi(DCMI_OPENBMC).unwrap(), 319.0);
}

#[test]
fn ipmi_without_a_power_reading_is_an_error_that_says_so() {
    let zero = parse_ipmi_dcmi(DCMI_ZERO).unwrap_err();
    assert!(matches!(zero, PowerError::IpmiZero), "{zero}");
    assert!(zero.to_string().contains("not available"), "{zero}");

    for text in [
        "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory",
        "\n    DCMI request failed because: Invalid command (c1)\n",
        "A valid DCMI command was not returned! (80)",
        "",
        "    Instantaneous power reading:                   n/a Watts\n",
    ] {
        let err = parse_ipmi_dcmi(text).unwrap_err();
        assert!(matches!(err, PowerError::IpmiNoReading { .. }), "{text:?}: {err}");
        assert!(
            err.to_string().contains(text.trim()),
            "the error should show what ipmitool said: {err}"
        );
    }
}

#[test]
fn ipmi_source_names_the_missing_program() {
    let err = IpmiSource::new("/nonexistent/ipmitool").read().unwrap_err();
    assert!(
        err.to_string()
            .contains("/nonexistent/ipmitool dcmi power reading"),
        "{err}"
    );
}

#[test]
fn command_printing_watts_is_averaged_over_start_and_end() {
    let mut c = CommandSource::new("echo 123.5");
    assert_eq!(c.name(), "command");
    c.start().unwrap();
    assert_eq!(c.watts_since_start(0.0).unwrap(), 123.5);
    let p = c.power_since_start(1.0).unwrap();
    assert_eq!((p.watts, p.source.as_str()), (123.5, "command"));

    assert_eq!(
        CommandSource::new("printf '250 W\\n'").read().unwrap(),
        250.0
    );
    assert_eq!(parse_watts("  98.25w \n"), Some(98.25));
    assert_eq!(parse_watts("98"), Some(98.0));
    assert_eq!(parse_watts("-5"), None);
    assert_eq!(parse_watts("0 W"), None);
    assert_eq!(parse_watts("12 kW"), None);
}

#[test]
fn command_printing_garbage_is_refused_with_what_it_printed() {
    let err = CommandSource::new("echo 'power: high'").read().unwrap_err();
    assert!(matches!(err, PowerError::NotWatts { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("`echo 'power: high'` printed \"power: high\""),
        "{msg}"
    );
    assert!(msg.contains("optionally followed by W"), "{msg}");

    let err = CommandSource::new("echo 12 >&2; exit 3")
        .read()
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("exit status: 3"), "{msg}");
    assert!(msg.contains("12"), "stderr should be shown: {msg}");
}

#[test]
fn a_hanging_command_is_killed_at_the_time_limit() {
    let began = Instant::now();
    let err = CommandSource::with_timeout("sleep 30", Duration::from_millis(200))
        .read()
        .unwrap_err();
    assert!(matches!(err, PowerError::Timeout { .. }), "{err}");
    assert!(
        err.to_string().contains("did not finish within 200ms"),
        "{err}"
    );
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "waited {:?} for a killed command",
        began.elapsed()
    );
}

#[test]
fn the_model_is_linear_in_busy_share_and_labelled_modeled() {
    let mut m = ModeledSource::new(100.0, 300.0).unwrap();
    assert!(matches!(
        m.watts_since_start(0.5),
        Err(PowerError::NotStarted { .. })
    ));
    m.start().unwrap();
    assert_eq!(m.watts_since_start(0.0).unwrap(), 100.0);
    assert_eq!(m.watts_since_start(0.5).unwrap(), 200.0);
    assert_eq!(m.watts_since_start(1.0).unwrap(), 300.0);
    assert_eq!(
        m.power_since_start(0.25).unwrap().source.as_str(),
        "modeled"
    );

    // A mean of full busy shares may land a hair above 1: still full power.
    assert_eq!(m.watts_since_start(1.0 + 1e-12).unwrap(), 300.0);
    let err = m.watts_since_start(75.0).unwrap_err().to_string();
    assert!(err.contains("not a percentage"), "{err}");
    assert!(ModeledSource::new(300.0, 100.0).is_err());
    assert!(ModeledSource::new(-1.0, 100.0).is_err());
    assert!(ModeledSource::new(f64::NAN, 100.0).is_err());
}

#[test]
fn config_defaults_and_validation() {
    let cfg = PowerConfig::default();
    assert_eq!(cfg.sysfs_root, Path::new("/sys/class/powercap"));
    assert_eq!((cfg.idle_watts, cfg.max_watts), (100.0, 300.0));
    cfg.validate().unwrap();
    let bad = PowerConfig {
        idle_watts: 400.0,
        ..PowerConfig::default()
    };
    let msg = bad.validate().unwrap_err().to_string();
    assert!(msg.contains("idle 400 W, max 300 W"), "{msg}");
    let empty = PowerConfig {
        command: Some("  ".into()),
        ..PowerConfig::default()
    };
    assert!(matches!(empty.validate(), Err(PowerError::EmptyCommand)));
}

#[test]
fn detection_picks_rapl_on_a_tree_with_package_counters() {
    let tmp = TempDir::new("detect-rapl");
    two_socket_tree(&tmp.0);
    let cfg = PowerConfig {
        sysfs_root: tmp.0.clone(),
        ..PowerConfig::default()
    };
    let (mut source, why) = detect_with_reason(&cfg);
    assert_eq!(source.name(), "rapl", "{why}");
    assert!(why.contains("package-0, package-1"), "{why}");
    source.start().unwrap();
}

/// What detection should pick on a tree without RAPL, on this machine:
/// ipmi if a BMC answers here, else the model.
fn expected_without_rapl() -> &'static str {
    if IpmiSource::new("ipmitool").read().is_ok() {
        "ipmi"
    } else {
        "modeled"
    }
}

#[test]
fn detection_without_rapl_files_does_not_pick_rapl() {
    let tmp = TempDir::new("detect-none");
    // A powercap directory with zones, but no readable package counter.
    zone(&tmp.0, "intel-rapl:0", "psys", 1);
    let cfg = PowerConfig {
        sysfs_root: tmp.0.clone(),
        ..PowerConfig::default()
    };
    let (source, why) = detect_with_reason(&cfg);
    assert_eq!(source.name(), expected_without_rapl(), "{why}");
    assert!(why.contains("rapl: no RAPL package domain under"), "{why}");
}

#[test]
fn detection_prefers_the_users_command_and_falls_back_when_it_fails() {
    let tmp = TempDir::new("detect-cmd");
    two_socket_tree(&tmp.0);
    let cfg = PowerConfig {
        sysfs_root: tmp.0.clone(),
        command: Some("echo 410".into()),
        ..PowerConfig::default()
    };
    let (source, why) = detect_with_reason(&cfg);
    assert_eq!(source.name(), "command", "{why}");
    assert!(why.contains("printed 410 W"), "{why}");

    let broken = PowerConfig {
        command: Some("echo watts".into()),
        ..cfg
    };
    let (source, why) = detect_with_reason(&broken);
    assert_eq!(source.name(), "rapl", "{why}");
    assert!(
        why.contains("not used: command: power command `echo watts` printed"),
        "{why}"
    );
}

#[test]
fn forcing_the_model_skips_every_measurement() {
    let tmp = TempDir::new("detect-forced");
    two_socket_tree(&tmp.0);
    let cfg = PowerConfig {
        sysfs_root: tmp.0.clone(),
        command: Some("echo 410".into()),
        idle_watts: 80.0,
        max_watts: 250.0,
        force_model: true,
    };
    let (mut source, why) = detect_with_reason(&cfg);
    assert_eq!(source.name(), "modeled");
    assert!(why.contains("idle 80 W, max 250 W"), "{why}");
    source.start().unwrap();
    assert_eq!(source.watts_since_start(1.0).unwrap(), 250.0);
    assert_eq!(detect(&cfg).name(), "modeled");
}

#[test]
fn detection_on_this_machine_matches_what_it_has() {
    let root = Path::new(DEFAULT_SYSFS_ROOT);
    let (source, why) = detect_with_reason(&PowerConfig::default());
    let expected = if RaplSource::open(root).is_ok() {
        "rapl"
    } else {
        expected_without_rapl()
    };
    assert_eq!(source.name(), expected, "{why}");
    if !root.exists() {
        // No powercap at all (VMs, containers, this CI machine): the reason
        // must say so rather than silently modeling.
        assert!(why.contains("/sys/class/powercap"), "{why}");
        assert_ne!(source.name(), "rapl");
    }
}
