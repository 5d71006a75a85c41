//! `host up`'s configuration: a host file and flags into the typed
//! [`tickpack_host::fleet::FleetConfig`] (through `tickpack-fleet`), then
//! what depends on this machine (CPUs, the run dir, the game's files).

use std::path::Path;

use tickpack_fleet::FleetFile;
use tickpack_host::fleet::{FleetConfig, Health};

use super::args::{ProbeArg, UpArgs};
use super::run_dir::{check_run_dir_flag, RUN_ROOT};
use crate::exit::{fail, Code, Failure};
use tickpack_sys::text::{escape, EXCERPT};

/// Builds a validated fleet config from a file and flags.
pub fn fleet_config(u: &UpArgs) -> Result<FleetConfig, Failure> {
    let mut f = match &u.config {
        Some(p) => FleetFile::load(p).map_err(|e| fail(Code::Config, e))?,
        None => FleetFile::default(),
    };
    macro_rules! flag {
        ($($field:ident),*) => { $( if u.$field.is_some() { f.$field = u.$field.clone(); } )* };
    }
    flag!(
        instances,
        range,
        port,
        reserved_cpus,
        command,
        cpu_quota,
        memory,
        pids,
        disk,
        log_size,
        name,
        run_dir
    );
    // The typed settings, parsed by their own types (one line on error).
    macro_rules! typed_flag {
        ($($field:ident),*) => { $( if let Some(v) = &u.$field {
            f.$field = Some(v.parse().map_err(|e| fail(Code::Config, e))?);
        } )* };
    }
    typed_flag!(backend, net, placement, health);
    if let Some(p) = u.probe {
        f.health = Some(match p {
            ProbeArg::Q3 => Health::Q3,
            ProbeArg::A2s => Health::A2s,
        });
    }
    refuse_gone_flags(u)?;
    if let Some(g) = &u.game {
        f.game = Some(g.clone());
    }
    if !u.set.is_empty() {
        f.game_vars = Some(u.set.clone());
    }
    if u.bots.is_some() {
        f.bots = u.bots;
    }
    if u.tick_hz.is_some() {
        f.tick_hz = u.tick_hz;
    }
    if !u.allow_host_port.is_empty() {
        f.allow_host_ports = Some(u.allow_host_port.clone());
    }
    if !u.batch.is_empty() {
        f.batch = Some(u.batch.clone());
    }
    if u.batch_cgroup.is_some() {
        f.batch_cgroup = u.batch_cgroup.clone();
    }
    if let Some(c) = &u.batch_control {
        f.batch_control = Some(c.parse().map_err(|e| fail(Code::Config, e))?);
    }
    if u.allow_public_range {
        f.allow_public_range = Some(true);
    }
    if u.guard {
        f.batch_control = Some(tickpack_host::guard::BatchControl::Guard);
    }
    let cfg = f
        .resolve(Path::new(RUN_ROOT))
        .map_err(|e| fail(Code::Config, e))?;
    // What depends on this machine, before anything is created.
    if let Some(cpus) = &cfg.reserved_cpus {
        crate::cmd::check_cpus("reserved CPUs (--reserved-cpus)", cpus)?;
    }
    check_run_dir_flag(&cfg.run_dir)?;
    cfg.game.check_system().map_err(|e| fail(Code::Config, e))?;
    Ok(cfg)
}

/// Exit 2 for a flag `host up` no longer takes, naming its replacement:
/// one game's settings are the game's variables now (`--set`), its tick
/// `--tick-hz`, its bots `--bots`.
fn refuse_gone_flags(u: &UpArgs) -> Result<(), Failure> {
    let g = &u.gone;
    let first = |v: &[String], default: &str| v.first().cloned().unwrap_or_else(|| default.into());
    let said = if !g.map.is_empty() {
        // A rotation is the `map` variable's comma list.
        let maps: Vec<&str> = g
            .map
            .iter()
            .flat_map(|m| m.split(','))
            .map(str::trim)
            .collect();
        Some(("--map", format!("--set map={}", maps.join(","))))
    } else if let Some(n) = &g.players_per_server {
        Some(("--players-per-server", format!("--bots {n}")))
    } else if let Some(n) = &g.sv_fps {
        Some(("--sv-fps", format!("--tick-hz {n}")))
    } else if !g.game_arg.is_empty() {
        Some((
            "--game-arg",
            format!(
                "--set {} (the game's variables: tickpack games show GAME)",
                first(&g.game_arg, "NAME=VALUE")
            ),
        ))
    } else {
        None
    };
    match said {
        Some((flag, instead)) => Err(fail(
            Code::Config,
            format!(
                "{flag} is gone from host up; write {} instead",
                escape(&instead, EXCERPT)
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        up: UpArgs,
    }

    fn up(args: &[&str]) -> UpArgs {
        Cli::try_parse_from(std::iter::once("up").chain(args.iter().copied()))
            .unwrap()
            .up
    }

    /// One game's flags are gone: each is refused (exit 2) in one line
    /// that names what to write instead.
    #[test]
    fn gone_flags_are_refused_with_their_replacement() {
        for (args, instead) in [
            (
                &["--map", "oa_dm1,oa_dm2"][..],
                "write --set map=oa_dm1,oa_dm2 instead",
            ),
            (
                &["--players-per-server", "12"][..],
                "write --bots 12 instead",
            ),
            (&["--sv-fps", "40"][..], "write --tick-hz 40 instead"),
            (
                &["--game-arg", "g_gravity=600"][..],
                "write --set g_gravity=600",
            ),
        ] {
            let e = fleet_config(&up(args)).unwrap_err();
            assert_eq!(e.code, Code::Config, "{args:?}");
            let text = e.error.to_string();
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(
                text.contains(args[0]) && text.contains(instead),
                "{args:?}: {text}"
            );
        }
    }

    /// A host file with one game's keys is refused the same way (exit 2).
    #[test]
    fn a_host_file_with_gone_keys_is_a_config_error() {
        let dir = std::env::temp_dir().join(format!("tp-host-gone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("host.toml");
        std::fs::write(&path, "instances = 2\nsv_fps = 40\n").unwrap();
        let e = fleet_config(&up(&["--config", path.to_str().unwrap()])).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(e.code, Code::Config);
        assert!(e.error.to_string().contains("tick_hz = 40"), "{}", e.error);
    }
}
