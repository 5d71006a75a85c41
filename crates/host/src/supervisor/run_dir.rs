//! The run directory and its records: `state.json` (what was made, written
//! before it is made, atomically, never through a link), the checks that
//! keep the directory root's own, where instance logs go, and [`recover`],
//! which removes what an earlier run left behind.
//!
//! A run dir is tickpack's only if it carries the marker file
//! [`MARKER`], written by tickpack (never through a link) when it created
//! the directory or took an empty one ([`check_run_dir`]). Any other
//! directory is refused: tickpack never chmods, fills or deletes what it
//! did not make, and `down` removes only its own records there.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::host_lock::HostLock;
use super::{io, HostError};

use crate::fleet::FleetConfig;
use crate::netpath;
use crate::placement::Placement;
use tickpack_root::service::Root;

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

/// The file that marks a run dir as tickpack's.
pub const MARKER: &str = ".tickpack-run-dir";
/// The marker's text when tickpack created the directory (it may remove
/// it once empty)...
const MARK_CREATED: &str = "tickpack run dir (created by tickpack)\n";
/// ...and when it took an empty directory someone else made (kept).
const MARK_ADOPTED: &str = "tickpack run dir (an empty directory given to tickpack)\n";

/// What [`check_run_dir`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunDirState {
    /// Nothing there: tickpack creates it.
    Missing,
    /// An empty directory of ours, not writable by others: tickpack marks it.
    Empty,
    /// Marked by tickpack; `created` when tickpack made the directory.
    Ours { created: bool },
}

/// Whether `dir` may be used as a run dir, without changing anything:
/// missing, empty (owned by us, writable by no one else), or marked by
/// tickpack. Anything else (a file, a link, someone else's directory, one
/// holding files tickpack did not put there) is refused with the reason.
pub fn check_run_dir(dir: &Path) -> Result<RunDirState, String> {
    let shown = dir.display();
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RunDirState::Missing),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if !m.file_type().is_dir() {
        return Err(format!(
            "{shown} is not a directory (a link or a file); refusing to use it"
        ));
    }
    let me = rustix::process::geteuid().as_raw();
    // Root under sudo hands the run dir to sudo's user before it starts.
    let sudo = tickpack_root::privilege::sudo_user().map(|u| u.uid);
    if m.uid() != me && Some(m.uid()) != sudo {
        let hint = if me == 0 {
            " (a host started with sudo is taken down with sudo, by the same user)"
        } else {
            ""
        };
        return Err(format!(
            "{shown} belongs to uid {}, not to us (uid {me}){hint}; choose another --run-dir",
            m.uid()
        ));
    }
    if let Some(created) = read_marker(dir, m.uid())? {
        return Ok(RunDirState::Ours { created });
    }
    let empty = std::fs::read_dir(dir)
        .map_err(|e| format!("{shown}: {e}"))?
        .next()
        .is_none();
    if !empty {
        return Err(format!(
            "{shown} is not empty and is not a tickpack run dir (no {MARKER} in it); tickpack uses only a new or empty directory and never changes or deletes others: give a new path"
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "{shown} is writable by other users (mode {:o}); tickpack does not change its mode: give a new path, or chmod go-w it",
            m.mode() & 0o7777
        ));
    }
    Ok(RunDirState::Empty)
}

/// The marker in `dir`, if there is one: `Some(created)`. A marker that
/// is a link, not a regular file, not `owner`'s (the directory's), or says
/// something else is refused, not trusted.
fn read_marker(dir: &Path, owner: u32) -> Result<Option<bool>, String> {
    use std::io::Read;
    let path = dir.join(MARKER);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path);
    let mut f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "{}: {e} (not a marker tickpack wrote)",
                path.display()
            ))
        }
    };
    let m = f
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    let read = m.is_file()
        && m.uid() == owner
        && m.len() <= 256
        && (&mut f).take(256).read_to_string(&mut text).is_ok();
    match text.as_str() {
        MARK_CREATED if read => Ok(Some(true)),
        MARK_ADOPTED if read => Ok(Some(false)),
        _ => Err(format!(
            "{} is not a marker tickpack wrote; refusing to use {}",
            path.display(),
            dir.display()
        )),
    }
}

/// Writes the marker (never through a link; the directory must not hold one).
fn write_marker(dir: &Path, created: bool) -> Result<(), HostError> {
    let path = dir.join(MARKER);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(io(format!("writing {}", path.display())))?;
    f.write_all(if created { MARK_CREATED } else { MARK_ADOPTED }.as_bytes())
        .map_err(io(format!("writing {}", path.display())))
}

/// Removes a run dir's own records (`state.json`, `control.sock`), the
/// `instances/` and `logs/` directories when empty, and, if tickpack
/// created the directory and nothing else is left in it, the marker and
/// the directory. Anything in a directory that is not a marked run dir is
/// left alone.
pub fn remove_run_dir(dir: &Path) {
    let Ok(RunDirState::Ours { created }) = check_run_dir(dir) else {
        return;
    };
    for f in ["state.json", "control.sock", ".state.json.tmp"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    for d in ["instances", "batch", "logs"] {
        let _ = std::fs::remove_dir(dir.join(d));
    }
    if !created {
        return;
    }
    let only_marker = std::fs::read_dir(dir)
        .map(|it| it.flatten().all(|e| e.file_name() == MARKER))
        .unwrap_or(false);
    if only_marker {
        let _ = std::fs::remove_file(dir.join(MARKER));
        let _ = std::fs::remove_dir(dir);
    }
}

/// The PID of a live supervisor recorded in `dir` (one still starting has
/// no control socket yet), if any.
pub fn live_supervisor(dir: &Path) -> Option<u32> {
    let pid = read_record(dir)?.supervisor_pid;
    (pid != std::process::id() && pid_alive(pid) && is_tickpack(pid)).then_some(pid)
}

/// The largest `state.json` read back (250 instances' records are far less).
const STATE_MAX: u64 = 16 << 20;

/// Removes everything an earlier run of host `name` left behind: what its
/// records list, then anything else carrying its prefix. Returns only what
/// was there and is gone. Refuses a run dir that exists and is not
/// tickpack's (records in a directory someone else controls could name
/// anything, and tickpack deletes nothing there).
pub fn recover(cfg: &FleetConfig) -> Result<Vec<String>, HostError> {
    Ok(recover_holding(cfg)?.1)
}

/// [`recover`], returning the host name's lock ([`HostLock`]) too, for a
/// supervisor to hold while it runs. Refuses (`AlreadyRunning`) while a
/// live process holds the name, whatever run dir it uses.
pub(crate) fn recover_holding(cfg: &FleetConfig) -> Result<(HostLock, Vec<String>), HostError> {
    let lock = match HostLock::acquire(&cfg.name, &cfg.run_dir)
        .map_err(io(format!("taking the lock of host {}", cfg.name)))?
    {
        Ok(lock) => lock,
        Err(holder) => {
            return Err(HostError::AlreadyRunning {
                name: cfg.name.clone(),
                pid: holder.pid,
                dir: holder.run_dir,
            })
        }
    };
    let mut removed = vec![];
    let state = check_run_dir(&cfg.run_dir).map_err(HostError::RunDir)?;
    let state_path = cfg.run_dir.join("state.json");
    let ours = matches!(state, RunDirState::Ours { .. });
    let text = ours
        .then(|| tickpack_sys::user_file::read_text(&state_path, STATE_MAX).ok())
        .flatten();
    if let Some(text) = text {
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
            // What it made of the network is on its root process's
            // record, not this file's (which a supervisor writes): that
            // is what is removed, below.
            // The recorded cgroups are removed (and reported) with the
            // rest of the host's below, once their processes are gone.
        }
    }
    if tickpack_sys::has_root() {
        // Its root process removes the network, the cgroups (and what
        // still runs in them), then the tenants' files.
        removed.extend(root_leftovers(cfg, ours)?);
    } else if ours {
        let (gone, _) = tickpack_root::tenant_dir::empty_path(&cfg.run_dir);
        removed.extend(gone);
    }
    if ours {
        let _ = std::fs::remove_file(cfg.run_dir.join("control.sock"));
        let _ = std::fs::remove_file(&state_path);
    }
    Ok((lock, removed))
}

/// Removes what an earlier run of host `cfg.name` left, through a session
/// of its root process (`tickpack_root::service`): the network its record
/// lists, then every namespace and link named for it and its firewall
/// table; its cgroup `tp<host>` with whatever still runs there; and, in a
/// run dir of ours (`tenants`), the tenants' directories. Returns what was
/// there.
fn root_leftovers(cfg: &FleetConfig, tenants: bool) -> Result<Vec<String>, HostError> {
    let fail = |e: tickpack_root::service::RootError| {
        HostError::Isolation(format!(
            "removing the leftover network of host {}: {e}",
            cfg.name
        ))
    };
    // A run dir that is gone is named as it was given.
    let dir = std::fs::canonicalize(&cfg.run_dir).unwrap_or_else(|_| cfg.run_dir.clone());
    let exe = Path::new("/proc/self/exe");
    let (root, earlier) = Root::start(exe, &cfg.name, &dir).map_err(fail)?;
    let mut removed = vec![];
    if !earlier.is_empty() {
        removed.extend(root.remove_leftovers(&earlier).map_err(fail)?);
    }
    for item in root.sweep().map_err(fail)? {
        if !removed.contains(&item) {
            removed.push(item);
        }
    }
    removed.extend(root.remove_cgroups().map_err(fail)?);
    if tenants {
        removed.extend(root.remove_tenant_dirs().map_err(fail)?);
    }
    Ok(removed)
}

/// The host name recorded in `dir`'s `state.json`, if `dir` is a marked
/// run dir with a readable record.
pub fn recorded_name(dir: &Path) -> Option<String> {
    let rec = read_record(dir)?;
    (!rec.name.is_empty()).then_some(rec.name)
}

/// `dir`'s `state.json`, if `dir` is a marked run dir and the record reads.
fn read_record(dir: &Path) -> Option<StateRecord> {
    if !matches!(check_run_dir(dir), Ok(RunDirState::Ours { .. })) {
        return None;
    }
    let text = tickpack_sys::user_file::read_text(&dir.join("state.json"), STATE_MAX).ok()?;
    serde_json::from_str(&text).ok()
}

/// Removes every file in `logs` (a directory only root writes): the last
/// run's instance and batch logs, rotated ones included. Unlinking never
/// follows a link.
pub fn clear_logs(logs: &Path) -> Result<(), HostError> {
    let entries = std::fs::read_dir(logs).map_err(io(format!("reading {}", logs.display())))?;
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| !t.is_dir()) {
            std::fs::remove_file(e.path())
                .map_err(io(format!("removing {}", e.path().display())))?;
        }
    }
    Ok(())
}

/// Where instance `id`'s output goes: `RUN_DIR/logs/ID.log`, in a directory
/// only root can write, so an instance cannot point it elsewhere.
pub fn log_path(run_dir: &Path, id: u32) -> PathBuf {
    run_dir.join("logs").join(format!("{id}.log"))
}

/// Makes `dir` a run dir of ours (see [`check_run_dir`]): creates it
/// (mode 0700) and marks it, marks an empty one, or takes a marked one;
/// refuses anything else ([`HostError::RunDir`]). Instances (and other
/// users) can neither read the records nor place links in it.
pub(super) fn secure_run_dir(dir: &Path) -> Result<(), HostError> {
    match check_run_dir(dir).map_err(HostError::RunDir)? {
        RunDirState::Missing => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(io(format!("creating {}", parent.display())))?;
            }
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(io(format!("creating {}", dir.display())))?;
            // Made just now, by us: 0700 whatever the umask.
            private_dir(dir)?;
            write_marker(dir, true)
        }
        RunDirState::Empty => write_marker(dir, false),
        RunDirState::Ours { .. } => owned_dir(dir),
    }
}

/// Makes `dir` a run dir of ours ([`secure_run_dir`], as root) and hands
/// it to `user`, who runs the supervisor from now on (`sudo`): the
/// directory, its marker, records and logs become that user's (never
/// through a link: `lchown`); `instances/` and `batch/`, the tenants'
/// parents, stay root's (its root process's).
pub fn hand_over_run_dir(
    dir: &Path,
    user: tickpack_sys::unprivileged::User,
) -> Result<(), HostError> {
    if !matches!(
        check_run_dir(dir).map_err(HostError::RunDir)?,
        RunDirState::Ours { .. }
    ) {
        secure_run_dir(dir)?;
    }
    let mut paths: Vec<PathBuf> = vec![dir.to_path_buf()];
    for f in [
        MARKER,
        "state.json",
        ".state.json.tmp",
        "control.sock",
        "logs",
    ] {
        paths.push(dir.join(f));
    }
    if let Ok(logs) = std::fs::read_dir(dir.join("logs")) {
        paths.extend(logs.flatten().map(|e| e.path()));
    }
    for p in paths {
        let given = rustix::fs::chownat(
            rustix::fs::CWD,
            &p,
            Some(rustix::fs::Uid::from_raw(user.uid)),
            Some(rustix::fs::Gid::from_raw(user.gid)),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        );
        match given {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => {
                return Err(HostError::Io {
                    step: format!("giving {} to uid {}", p.display(), user.uid),
                    err: e.into(),
                })
            }
        }
    }
    Ok(())
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
    let me = rustix::process::geteuid().as_raw();
    if m.uid() != me {
        return Err(HostError::Isolation(format!(
            "{} belongs to uid {}, not to us (uid {me}); choose another --run-dir",
            path.display(),
            m.uid()
        )));
    }
    Ok(())
}

pub(super) use tickpack_sys::process::{is_tickpack, pid_alive};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_new_empty_or_marked_directory_is_a_run_dir() {
        let root = std::env::temp_dir().join(format!("tp-run-dir-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let new = root.join("new");
        assert_eq!(check_run_dir(&new), Ok(RunDirState::Missing));
        secure_run_dir(&new).unwrap();
        assert_eq!(check_run_dir(&new), Ok(RunDirState::Ours { created: true }));
        let mode = std::fs::metadata(&new).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);

        // Someone else's files: refused, and `remove_run_dir` leaves them.
        let full = root.join("full");
        std::fs::create_dir(&full).unwrap();
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(full.join("state.json"), "theirs").unwrap();
        let e = check_run_dir(&full).unwrap_err();
        assert!(e.contains("not a tickpack run dir"), "{e}");
        assert!(matches!(secure_run_dir(&full), Err(HostError::RunDir(_))));
        remove_run_dir(&full);
        assert!(full.join("state.json").exists());
        let mode = std::fs::metadata(&full).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "never chmodded");

        // An empty one writable by others is refused, not chmodded; an
        // empty private one is taken, marked and kept at removal.
        let open = root.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_run_dir(&open)
            .unwrap_err()
            .contains("writable by other users"));
        let empty = root.join("empty");
        std::fs::create_dir(&empty).unwrap();
        std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(check_run_dir(&empty), Ok(RunDirState::Empty));
        secure_run_dir(&empty).unwrap();
        assert_eq!(
            check_run_dir(&empty),
            Ok(RunDirState::Ours { created: false })
        );
        remove_run_dir(&empty);
        assert!(empty.exists(), "a directory tickpack did not make stays");

        // A marker that is a link is not trusted.
        let linked = root.join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(new.join(MARKER), linked.join(MARKER)).unwrap();
        assert!(check_run_dir(&linked).unwrap_err().contains("not a marker"));

        // What tickpack made, emptied of its records, goes entirely.
        write_state(&new, &StateRecord::default()).unwrap();
        std::fs::create_dir(new.join("logs")).unwrap();
        remove_run_dir(&new);
        assert!(!new.exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
