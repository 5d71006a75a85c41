//! Control-file plumbing shared by both versions: reading and writing
//! control files (created on synthetic test trees), parsing flat-keyed
//! files and `cgroup.procs`, walking a cgroup tree, the bounded SIGKILL loop
//! and `rmdir` with retries.

use rustix::io::Errno;
use rustix::process::{kill_process, Pid, Signal};
use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{CgroupError, KILL_PAUSE, KILL_ROUNDS, RMDIR_ATTEMPTS, RMDIR_PAUSE};

/// Whether `path` is on a cgroup (v1 or v2) filesystem.
pub(super) fn is_cgroup_fs(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let Ok(stat) = rustix::fs::statfs(c_path.as_c_str()) else {
        return false;
    };
    // f_type is signed or unsigned depending on the target; compare as u64.
    #[allow(clippy::unnecessary_cast)]
    let fs_type = stat.f_type as u64;
    #[allow(clippy::unnecessary_cast)]
    let magic = [
        libc::CGROUP_SUPER_MAGIC as u64,
        libc::CGROUP2_SUPER_MAGIC as u64,
    ];
    magic.contains(&fs_type)
}

/// Writes `value` into a control file. On a real cgroup filesystem the file
/// must exist; on a synthetic tree it is created (and replaced).
pub(super) fn write_control(path: &Path, value: &str, synthetic: bool) -> Result<(), CgroupError> {
    let fail = |source| CgroupError::Write {
        path: path.to_owned(),
        value: value.to_owned(),
        source,
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create(synthetic)
        .truncate(synthetic)
        .open(path)
        .map_err(fail)?;
    file.write_all(value.as_bytes()).map_err(fail)
}

/// Reads a control file; on a synthetic tree a missing file reads as empty
/// when `missing_ok` is set.
pub(super) fn read_control(path: &Path, missing_ok: bool) -> Result<String, CgroupError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if missing_ok && e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(CgroupError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

pub(super) fn read_u64(path: &Path) -> Result<u64, CgroupError> {
    let text = read_control(path, false)?;
    text.trim().parse().map_err(|_| CgroupError::Parse {
        path: path.to_owned(),
        expected: "a number",
        found: text.trim().to_owned(),
    })
}

/// The value of the line `key N` in a flat-keyed file, if it can be read.
pub(super) fn read_keyed(path: &Path, key: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    keyed(path, &text, key).ok().flatten()
}

/// The value of the line `key N` in a flat-keyed file, if present.
pub(super) fn keyed(path: &Path, text: &str, key: &str) -> Result<Option<u64>, CgroupError> {
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        if fields.next() == Some(key) {
            let value = fields.next().unwrap_or("");
            return value.parse().map(Some).map_err(|_| CgroupError::Parse {
                path: path.to_owned(),
                expected: "a number after the key",
                found: line.to_owned(),
            });
        }
    }
    Ok(None)
}

pub(super) fn read_pids(procs: &Path) -> Result<Vec<u32>, CgroupError> {
    let text = match fs::read_to_string(procs) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(CgroupError::Read {
                path: procs.to_owned(),
                source,
            })
        }
    };
    text.split_whitespace()
        .map(|p| {
            p.parse().map_err(|_| CgroupError::Parse {
                path: procs.to_owned(),
                expected: "process ids",
                found: p.to_owned(),
            })
        })
        .collect()
}

/// `dir` and every cgroup below it, parents first.
pub(super) fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_owned());
    if let Ok(entries) = fs::read_dir(dir) {
        let mut children: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        children.sort();
        for child in children {
            walk(&child, out);
        }
    }
}

pub(super) fn has_child_dirs(dir: &Path) -> io::Result<bool> {
    for entry in fs::read_dir(dir)? {
        if entry?.file_type()?.is_dir() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// SIGKILLs every process in `dirs` and below until none is left (bounded).
/// Only ever called on a real cgroup filesystem.
pub(super) fn kill_until_empty(dirs: &[PathBuf]) -> Result<(), CgroupError> {
    let me = std::process::id();
    let started = Instant::now();
    let mut left: Vec<(u32, PathBuf)> = Vec::new();
    for _ in 0..KILL_ROUNDS {
        left.clear();
        let mut all = Vec::new();
        for dir in dirs {
            walk(dir, &mut all);
        }
        for dir in &all {
            for pid in read_pids(&dir.join("cgroup.procs"))? {
                left.push((pid, dir.clone()));
            }
        }
        if left.is_empty() {
            return Ok(());
        }
        if left.iter().any(|&(pid, _)| pid == me || pid <= 1) {
            // Never signal ourselves or init; this cannot become empty.
            break;
        }
        for (pid, dir) in &left {
            let Some(raw) = libc::pid_t::try_from(*pid).ok().and_then(Pid::from_raw) else {
                continue;
            };
            // kill(2) with a positive pid read from cgroup.procs signals
            // that one process only.
            match kill_process(raw, Signal::KILL) {
                Ok(()) | Err(Errno::SRCH) => {}
                Err(e) => {
                    return Err(CgroupError::Kill {
                        pid: *pid,
                        path: dir.clone(),
                        source: e.into(),
                    });
                }
            }
        }
        std::thread::sleep(KILL_PAUSE);
    }
    let mut pids: Vec<u32> = left.iter().map(|&(pid, _)| pid).collect();
    pids.sort_unstable();
    pids.dedup();
    Err(CgroupError::StillPopulated {
        path: left
            .first()
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| dirs[0].clone()),
        pids,
        waited: started.elapsed(),
    })
}

/// `rmdir`, retried while the kernel says EBUSY (tasks still exiting). A
/// directory that is already gone counts as removed.
pub(super) fn rmdir_retry(dir: &Path, synthetic: bool) -> Result<(), CgroupError> {
    let mut attempt = 0;
    loop {
        let result = if synthetic {
            fs::remove_dir_all(dir)
        } else {
            fs::remove_dir(dir)
        };
        match result {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt + 1 < RMDIR_ATTEMPTS => {
                attempt += 1;
                std::thread::sleep(RMDIR_PAUSE);
            }
            Err(source) => {
                return Err(CgroupError::Remove {
                    path: dir.to_owned(),
                    source,
                })
            }
        }
    }
}

/// Removes `dir` and every cgroup below it, deepest first.
pub(super) fn remove_tree(dir: &Path, synthetic: bool) -> Result<(), CgroupError> {
    let mut all = Vec::new();
    walk(dir, &mut all);
    for d in all.iter().rev() {
        rmdir_retry(d, synthetic)?;
    }
    Ok(())
}
