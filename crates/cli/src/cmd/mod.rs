//! One module per subcommand.

pub mod agones;
pub mod agones_sidecar;
pub mod bench;
pub mod demo;
pub mod flood;
pub mod games;
pub mod host;
pub mod latency;
pub mod ping;
pub mod players;
pub mod probe;
pub mod report;
pub mod server;
pub mod sudo;
pub mod targets_file;
pub mod tco;

/// The longest duration any flag takes (a year): longer is a typo, and
/// anything shorter stays far from overflowing a nanosecond clock.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);

/// Parses `10s`, `500ms`, `2m` (zero allowed) for clap, up to
/// [`MAX_DURATION`]. A negative value is named as such (clap must let it
/// through: `allow_hyphen_values`).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    if s.trim_start().starts_with('-') {
        return Err("a duration cannot be negative (examples: 10s, 500ms, 2m)".into());
    }
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 10s, 500ms, 2m)"))?;
    if d > MAX_DURATION {
        return Err("longer than the 365 days a flag may ask for".into());
    }
    Ok(d)
}

/// [`parse_duration`] for a duration that must be more than zero.
pub fn parse_positive_duration(s: &str) -> Result<std::time::Duration, String> {
    if s.trim_start().starts_with('-') {
        return Err("the duration must be positive (examples: 10s, 500ms, 2m)".into());
    }
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err("the duration must be more than 0 (examples: 10s, 500ms, 2m)".into());
    }
    Ok(d)
}

/// A finite number (no NaN, no infinity), the base of the parsers below.
fn parse_finite(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if !v.is_finite() {
        return Err(format!("{s} is not a finite number"));
    }
    Ok(v)
}

/// A finite number above zero.
pub fn parse_positive(s: &str) -> Result<f64, String> {
    let v = parse_finite(s)?;
    if v <= 0.0 {
        return Err(format!("must be more than 0, got {v}"));
    }
    Ok(v)
}

/// A finite number of zero or more.
pub fn parse_non_negative(s: &str) -> Result<f64, String> {
    let v = parse_finite(s)?;
    if v < 0.0 {
        return Err(format!("must be 0 or more, got {v}"));
    }
    Ok(v)
}

/// A percentage, 0 to 100.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let v = parse_finite(s)?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("must be a percentage from 0 to 100, got {v}"));
    }
    Ok(v)
}

/// A factor of 1 or more (a limit relative to a baseline).
pub fn parse_factor(s: &str) -> Result<f64, String> {
    let v = parse_finite(s)?;
    if v < 1.0 {
        return Err(format!(
            "must be 1 or more (a multiple of the baseline), got {v}"
        ));
    }
    Ok(v)
}

/// The CPUs this process can use: online and in its affinity mask.
pub fn usable_cpus() -> Vec<usize> {
    let online = tickpack_net::cpu::online_cpus();
    match tickpack_net::cpu::allowed_cpus() {
        Ok(allowed) => online.into_iter().filter(|c| allowed.contains(c)).collect(),
        Err(_) => online,
    }
}

/// Checks that every CPU of a flag is one this process can use, naming
/// the flag and the usable CPUs otherwise (exit code 2).
pub fn check_cpus(flag: &str, cpus: &[usize]) -> Result<(), crate::exit::Failure> {
    check_cpus_in(flag, cpus, &usable_cpus())
}

fn check_cpus_in(flag: &str, cpus: &[usize], usable: &[usize]) -> Result<(), crate::exit::Failure> {
    let missing: Vec<String> = cpus
        .iter()
        .filter(|c| !usable.contains(c))
        .map(ToString::to_string)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let usable: Vec<String> = usable.iter().map(ToString::to_string).collect();
    Err(crate::exit::fail(
        crate::exit::Code::Config,
        format!(
            "{flag}: CPU {} is not a CPU this process can use (online and allowed: {})",
            missing.join(","),
            usable.join(",")
        ),
    ))
}

/// Checks, before any work, that an output file can be written: its
/// directory exists and it is not itself a directory. `-` (stdout) passes.
pub fn check_output_file(flag: &str, path: &std::path::Path) -> Result<(), crate::exit::Failure> {
    use crate::exit::{fail, Code};
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if path.is_dir() {
        return Err(fail(
            Code::Config,
            format!(
                "{flag} {}: is a directory; give a file name",
                path.display()
            ),
        ));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(fail(
            Code::Config,
            format!(
                "{flag} {}: the directory {} does not exist (create it first)",
                path.display(),
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Checks that a directory flag does not name an existing non-directory.
pub fn check_dir_flag(flag: &str, path: &std::path::Path) -> Result<(), crate::exit::Failure> {
    if path.exists() && !path.is_dir() {
        return Err(crate::exit::fail(
            crate::exit::Code::Config,
            format!("{flag} {}: exists and is not a directory", path.display()),
        ));
    }
    Ok(())
}

/// Parses a socket address, accepting `localhost:PORT` too.
pub fn parse_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    match s.to_socket_addrs() {
        Ok(mut it) => it
            .next()
            .ok_or_else(|| format!("{s:?} resolves to no address")),
        Err(_) => Err(format!(
            "{s:?} is not an address of the form IP:PORT (e.g. 127.0.0.1:5000)"
        )),
    }
}

/// [`parse_addr`] for an address to send to: port 0 is no server's port.
pub fn parse_target(s: &str) -> Result<std::net::SocketAddr, String> {
    let a = parse_addr(s)?;
    if a.port() == 0 {
        return Err(format!("{s:?}: port 0 is not a server's port"));
    }
    Ok(a)
}

/// A CPU list such as `0`, `0-3` or `1,3` (a newtype so clap takes it as
/// one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// Parses a [`CpuList`].
pub fn parse_cpus(s: &str) -> Result<CpuList, String> {
    tickpack_net::cpu::parse_cpu_list(s)
        .map(CpuList)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_must_be_positive_and_at_most_a_year() {
        assert_eq!(parse_positive_duration("10s"), Ok(Duration::from_secs(10)));
        assert!(parse_positive_duration("0s")
            .unwrap_err()
            .contains("more than 0"));
        assert!(parse_positive_duration("-5s")
            .unwrap_err()
            .contains("positive"));
        assert!(parse_duration("-5s").unwrap_err().contains("negative"));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        // 2^64 ns is about 18446744074 s: the server's clock overflowed there.
        assert!(parse_duration("18446744074s")
            .unwrap_err()
            .contains("365 days"));
        assert!(parse_duration("366days").is_err());
        assert!(parse_duration("365days").is_ok());
    }

    #[test]
    fn numbers_reject_nan_infinity_and_out_of_range() {
        for s in ["NaN", "nan", "inf", "-inf", "x", ""] {
            assert!(parse_positive(s).is_err(), "{s}");
            assert!(parse_non_negative(s).is_err(), "{s}");
            assert!(parse_percent(s).is_err(), "{s}");
            assert!(parse_factor(s).is_err(), "{s}");
        }
        assert!(parse_positive("-5").is_err());
        assert!(parse_positive("0").is_err());
        assert_eq!(parse_positive("0.5"), Ok(0.5));
        assert!(parse_non_negative("-1").is_err());
        assert_eq!(parse_non_negative("0"), Ok(0.0));
        assert!(parse_percent("-1").is_err());
        assert!(parse_percent("100.1").is_err());
        assert_eq!(parse_percent("0.1"), Ok(0.1));
        assert!(parse_factor("0").is_err());
        assert!(parse_factor("0.9").is_err());
        assert_eq!(parse_factor("1.5"), Ok(1.5));
    }

    #[test]
    fn cpus_outside_the_usable_set_are_named() {
        assert!(check_cpus_in("--cpus", &[0, 1], &[0, 1]).is_ok());
        let e = check_cpus_in("--cpus", &[1, 99], &[0, 1]).unwrap_err();
        assert_eq!(e.code, crate::exit::Code::Config);
        let msg = e.error.to_string();
        assert!(
            msg.contains("--cpus: CPU 99 ") && msg.contains("0,1"),
            "{msg}"
        );
    }

    #[test]
    fn output_files_need_an_existing_directory() {
        let dir = std::env::temp_dir().join(format!("tp-out-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(check_output_file("--json", &dir.join("r.json")).is_ok());
        assert!(check_output_file("--json", std::path::Path::new("-")).is_ok());
        assert!(check_output_file("--json", std::path::Path::new("r.json")).is_ok());
        let e = check_output_file("--json", &dir.join("missing/r.json")).unwrap_err();
        assert!(
            e.error.to_string().contains("does not exist"),
            "{:#}",
            e.error
        );
        assert!(check_output_file("--json", &dir).is_err());
        let file = dir.join("f");
        std::fs::write(&file, "").unwrap();
        assert!(check_dir_flag("--run-dir", &file).is_err());
        assert!(check_dir_flag("--run-dir", &dir).is_ok());
        assert!(check_dir_flag("--run-dir", &dir.join("new")).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The game a command hosts, plays, probes or watches (`--game NAME|FILE`):
/// a built-in game or a definition file (docs/games.md), checked when the
/// flags are parsed, so a bad one is refused (exit 2) before any work.
#[derive(Clone, Debug)]
pub struct GameArg {
    pub def: tickpack_game::GameDef,
}

/// clap's parser for `--game NAME|FILE`.
pub fn parse_game(s: &str) -> Result<GameArg, String> {
    tickpack_game::source::load(s)
        .map(|(def, _)| GameArg { def })
        .map_err(|e| e.to_string())
}

impl std::fmt::Display for GameArg {
    /// The game's name (clap shows and re-parses it for a default).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.def.name)
    }
}

impl GameArg {
    /// The built-in definition of tickpack's own server: the game whose
    /// players speak tickpack's protocol.
    pub fn reference() -> GameArg {
        tickpack_game::registry::built_in()
            .into_iter()
            .find(|(def, _)| def.players.protocol == tickpack_game::PlayerProtocol::Reference)
            .map(|(def, _)| GameArg { def })
            .expect("tickpack's own server is a built-in game")
    }

    /// The players' protocol for this game; exit 2 for a game tickpack
    /// cannot play.
    pub fn players_game(&self) -> Result<tickpack_players::Protocol, crate::exit::Failure> {
        match self.def.protocols().players {
            Some(p) => Ok(p),
            None => Err(crate::exit::fail(
                crate::exit::Code::Config,
                format!(
                    "--game {}: tickpack has no players for this game (its definition's [players] protocol is none); measure it with `tickpack bench --game {0}` (run delay and query latency) or `tickpack probe --game {0}`",
                    self.def.name
                ),
            )),
        }
    }
}

/// `--tick-hz`: a whole number of hertz, 1..=1000 (what the reference
/// server runs).
pub(crate) fn parse_tick_rate(s: &str) -> Result<tickpack_wire::TickRate, String> {
    let max = tickpack_wire::TickRate::SERVER_MAX_HZ;
    s.parse::<tickpack_wire::TickRate>()
        .ok()
        .filter(|t| t.hz() <= max)
        .ok_or_else(|| format!("{s:?}: ticks a second, 1..={max}"))
}
