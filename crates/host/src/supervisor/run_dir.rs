//! The run directory and its records: `state.json` (what was made, written
//! before it is made, atomically, never through a link), the checks that
//! keep the directory root's own, where instance logs go, and [`recover`],
//! which removes what an earlier run left behind.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{io, HostError};
use crate::cgroup::{self, CgroupLayout};
use crate::fleet::FleetConfig;
use crate::netpath;
use crate::placement::Placement;
use tickpack_sys::is_root;

/// What `state.json` records: enough to clean up after a crash.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StateRecord {
    pub name: String,
    pub supervisor_pid: u32,
    pub net: Option<netpath::NetRecord>,
    pub cgroups: Vec<PathBuf>,
    pub placement: Option<Placement>,
    pub config: Option<FleetConfig>,
    /// Every process started (instance inits, or the commands of the
    /// process backend), with its start time, so only these are killed.
    #[serde(default)]
    pub processes: Vec<crate::leftover::RecordedProcess>,
}

/// Removes everything an earlier run of host `name` left behind: what its
/// records list, then anything else carrying its prefix.
pub fn recover(cfg: &FleetConfig) -> Result<Vec<String>, HostError> {
    let mut removed = vec![];
    if std::fs::symlink_metadata(&cfg.run_dir).is_ok() {
        // Records in a directory someone else controls could name anything.
        owned_dir(&cfg.run_dir)?;
    }
    let state_path = cfg.run_dir.join("state.json");
    if let Ok(text) = std::fs::read_to_string(&state_path) {
        if let Ok(rec) = serde_json::from_str::<StateRecord>(&text) {
            if rec.supervisor_pid != std::process::id()
                && pid_alive(rec.supervisor_pid)
                && is_tickpack(rec.supervisor_pid)
            {
                return Err(HostError::AlreadyRunning {
                    name: cfg.name.clone(),
                    pid: rec.supervisor_pid,
                    dir: cfg.run_dir.display().to_string(),
                });
            }
            for p in &rec.processes {
                if p.kill_if_same() {
                    removed.push(format!("process {}", p.pid));
                }
            }
            if let Some(net) = &rec.net {
                net.cleanup().map_err(|e| {
                    HostError::Isolation(format!("removing the network of an earlier run: {e}"))
                })?;
                removed.extend(net.namespaces.iter().cloned());
                removed.extend(net.routes.iter().map(|r| format!("route {r}")));
                removed.extend(net.tables.iter().map(|t| format!("nft table inet {t}")));
            }
            for cg in &rec.cgroups {
                if cg.exists() {
                    removed.push(cg.display().to_string());
                }
            }
        }
    }
    let prefix = format!("tp{}", cfg.name);
    if is_root() {
        let gone = netpath::cleanup_host(&cfg.name).map_err(|e| {
            HostError::Isolation(format!(
                "removing leftover links and namespaces of host {}: {e}",
                cfg.name
            ))
        })?;
        removed.extend(gone);
        let table = crate::netpath::filter::table_name(&cfg.name);
        if crate::leftover::remove_firewall(&cfg.name).map_err(|e| {
            HostError::Isolation(format!("removing leftover nft table inet {table}: {e}"))
        })? && !removed.iter().any(|r| r.ends_with(&table))
        {
            removed.push(format!("nft table inet {table}"));
        }
        if let Ok(layout) = CgroupLayout::detect(Path::new("/sys/fs/cgroup")) {
            if let Ok(gone) = cgroup::remove_stale(&layout, &prefix) {
                removed.extend(gone.into_iter().map(|p| p.display().to_string()));
            }
        }
    }
    let _ = std::fs::remove_file(cfg.run_dir.join("control.sock"));
    let _ = std::fs::remove_file(&state_path);
    Ok(removed)
}

/// Where instance `id`'s output goes: `RUN_DIR/logs/ID.log`, in a directory
/// only root can write, so an instance cannot point it elsewhere.
pub fn log_path(run_dir: &Path, id: u32) -> PathBuf {
    run_dir.join("logs").join(format!("{id}.log"))
}

/// Creates the run dir and makes it root's own (0700): instances (and other
/// users) can neither read the records nor place links in it. Refuses a
/// run dir that is a link or belongs to someone else, whose owner could
/// swap what root writes there.
pub(super) fn secure_run_dir(dir: &Path) -> Result<(), HostError> {
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    real_dir(dir)?;
    private_dir(dir)
}

/// `path` is a directory itself, not a link to one.
pub(super) fn real_dir(path: &Path) -> Result<std::fs::Metadata, HostError> {
    let m = std::fs::symlink_metadata(path).map_err(io(format!("reading {}", path.display())))?;
    if !m.file_type().is_dir() {
        return Err(HostError::Isolation(format!(
            "{} is not a directory (a link or a file); refusing to use it",
            path.display()
        )));
    }
    Ok(m)
}

/// A directory owned by us, mode 0700.
pub(super) fn private_dir(path: &Path) -> Result<(), HostError> {
    owned_dir(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
        .map_err(io(format!("chmod 700 {}", path.display())))
}

/// A directory (not a link) owned by us.
pub(super) fn owned_dir(path: &Path) -> Result<(), HostError> {
    let m = real_dir(path)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Err(HostError::Isolation(format!(
            "{} belongs to uid {}, not to us (uid {me}); choose another --run-dir",
            path.display(),
            m.uid()
        )));
    }
    Ok(())
}

pub(super) fn pid_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    pid > 0 && unsafe { libc::kill(pid as i32, 0) == 0 }
}

pub(super) fn is_tickpack(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("tickpack"))
        .unwrap_or(false)
}

/// Writes `dir/state.json` atomically (temp file, rename).
pub(super) fn write_state(dir: &Path, record: &StateRecord) -> Result<(), HostError> {
    let path = dir.join("state.json");
    let tmp = dir.join(".state.json.tmp");
    let body = serde_json::to_vec_pretty(record).expect("state serializes");
    // Root never follows a link here (the run dir is root's own, but the
    // records are written in one place only, with O_NOFOLLOW).
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(io(format!("writing {}", tmp.display())))?;
    f.write_all(&body)
        .map_err(io(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, &path).map_err(io(format!("writing {}", path.display())))
}
