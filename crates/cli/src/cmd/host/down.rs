//! `tickpack host down`: asks a running host to stop, waits for one that
//! is still starting, or removes what a crashed one left behind.

use std::path::Path;
use std::time::{Duration, Instant};

use tickpack_host::status::{request, ControlError, ControlRequest};

use super::args::DownArgs;
use super::failure::{control_failure, host_failure};
use super::run_dir::{run_dir, RUN_ROOT};
use crate::exit::{fail, Code, Failure};

/// The host name when none is given or recorded.
const DEFAULT_HOST: &str = "h";

/// How long `down` waits for a host that is still starting (its supervisor
/// is alive, its control socket not yet bound) before giving up.
const DOWN_START_WAIT: Duration = Duration::from_secs(60);

/// Takes a host down.
pub fn down(d: DownArgs) -> Result<(), Failure> {
    let dir = run_dir(d.name.as_deref().unwrap_or(DEFAULT_HOST), &d.run_dir)?;
    // The run dir's own record says whose it is; a --name that disagrees
    // would take down (or clean up after) another host.
    let recorded = tickpack_host::supervisor::recorded_name(&dir)
        .filter(|n| tickpack_sys::validate_host_name(n).is_ok());
    let name = match (d.name, recorded) {
        (Some(asked), Some(rec)) if asked != rec => {
            return Err(fail(
                Code::Config,
                format!(
                    "--name {asked}: the run dir {} belongs to host {rec}; leave out --name, or give --name {rec}",
                    dir.display()
                ),
            ))
        }
        (_, Some(rec)) => rec,
        (Some(asked), None) => asked,
        (None, None) if d.run_dir.is_some() => {
            tickpack_host::supervisor::remove_run_dir(&dir);
            eprintln!(
                "tickpack host: {} records no host, so nothing was taken down; to clean up after a host by its name, give --name",
                dir.display()
            );
            return Ok(());
        }
        (None, None) => DEFAULT_HOST.to_string(),
    };
    let t0 = Instant::now();
    let mut said_waiting = false;
    loop {
        match request(&dir, ControlRequest::Down, Duration::from_secs(30)) {
            Ok(_) => {
                match super::up::kept_logs(&dir.join("logs")) {
                    Some(kept) => eprintln!("tickpack host {name}: down; {kept}"),
                    None => eprintln!("tickpack host {name}: down"),
                }
                return Ok(());
            }
            Err(ControlError::NotRunning { .. }) => {}
            Err(e) => return Err(control_failure(e)),
        }
        // A supervisor that is alive but has no control socket yet is
        // starting: wait for it (it answers `down` once up) rather than
        // refusing, and never recover under its feet.
        let Some(pid) = tickpack_host::supervisor::live_supervisor(&dir) else {
            break;
        };
        if t0.elapsed() > DOWN_START_WAIT {
            return Err(fail(
                Code::Runtime,
                format!(
                    "host {} (supervisor pid {pid}) is still starting after {} s and has no control socket; try again, or stop it with kill {pid}",
                    name,
                    DOWN_START_WAIT.as_secs()
                ),
            ));
        }
        if !said_waiting {
            eprintln!(
                "tickpack host {name}: still starting (supervisor pid {pid}); waiting to take it down"
            );
            said_waiting = true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // No supervisor: remove whatever a crashed one left behind (under
    // sudo as its user, through root processes, as `up` did).
    let created = matches!(
        tickpack_host::supervisor::check_run_dir(&dir),
        Ok(tickpack_host::supervisor::RunDirState::Ours { created: true })
    );
    crate::cmd::sudo::give_up_root_removing(&dir, None, created)?;
    let cfg = tickpack_fleet::FleetPlan {
        name: Some(name.clone()),
        run_dir: Some(dir.clone()),
        ..Default::default()
    }
    .build(Path::new(RUN_ROOT))
    .map_err(|e| fail(Code::Config, e))?;
    let removed = tickpack_host::supervisor::recover(&cfg).map_err(host_failure)?;
    // Only tickpack's own records go; directories left empty too (logs
    // someone may want to read stay).
    tickpack_host::supervisor::remove_run_dir(&dir);
    if removed.is_empty() {
        eprintln!("tickpack host {name}: nothing was running and nothing was left over");
    } else {
        eprintln!(
            "tickpack host {name}: no supervisor was running; removed leftovers: {}",
            removed.join(", ")
        );
    }
    Ok(())
}
