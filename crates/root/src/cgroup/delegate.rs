//! A host's own cgroup, `tp<host>`, given to the user its supervisor runs
//! as (cgroup v2 delegation, as systemd's `Delegate=`): the root process
//! makes it, switches on the controllers tickpack uses in the root's and
//! its `cgroup.subtree_control`, and gives the directory and its
//! `cgroup.procs`, `cgroup.subtree_control` and `cgroup.threads` to that
//! user. The supervisor then makes, tunes, empties and removes its
//! instances' and batch's cgroups below it itself; their limits never
//! exceed what `tp<host>` allows, and it cannot move a process into them
//! from outside `tp<host>` (the kernel asks for write access to the common
//! ancestor's `cgroup.procs`, which is then root's). Within `tp<host>` (v2)
//! it may move its tenants' processes between its own cgroups: nothing it
//! could not do by setting their limits. Only the root process starts
//! commands in them. On v1 the same is done in every hierarchy
//! tickpack uses (`tasks` given too; a new cpuset gets its parent's CPUs
//! and memory nodes).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::control::{read_control, write_control};
use super::{CgroupError, CgroupLayout, CgroupVersion, NAME_PREFIX};

/// The controllers switched on for a host (those the kernel has).
const CONTROLLERS: [&str; 4] = ["cpu", "cpuset", "memory", "pids"];

/// Makes cgroup `name` (`tp<host>`, directly under each hierarchy's root)
/// if it is missing and gives it to `owner` (uid = gid). Returns its
/// directories.
pub fn delegate(
    layout: &CgroupLayout,
    name: &str,
    owner: u32,
) -> Result<Vec<PathBuf>, CgroupError> {
    if !name.starts_with(NAME_PREFIX) || name.contains('/') || name.contains("..") {
        return Err(CgroupError::InvalidName {
            name: name.to_owned(),
            reason: "a host's cgroup starts with \"tp\" and contains no '/'",
        });
    }
    let synthetic = layout.is_synthetic();
    let mut dirs = vec![];
    for base in layout.hierarchies() {
        let dir = base.join(name);
        let v2 = layout.version() == CgroupVersion::V2;
        let wanted: Vec<&str> = if v2 {
            let have = read_control(&base.join("cgroup.controllers"), true)?;
            CONTROLLERS
                .into_iter()
                .filter(|c| have.split_whitespace().any(|h| h == *c))
                .collect()
        } else {
            vec![]
        };
        if v2 {
            switch_on(&base, &wanted, synthetic)?;
        }
        let made = match fs::create_dir(&dir) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
            Err(source) => return Err(CgroupError::Create { path: dir, source }),
        };
        let m = fs::symlink_metadata(&dir).map_err(|source| CgroupError::Read {
            path: dir.clone(),
            source,
        })?;
        if !m.is_dir() {
            return Err(CgroupError::Create {
                path: dir,
                source: io::Error::other("not a directory"),
            });
        }
        if v2 {
            switch_on(&dir, &wanted, synthetic)?;
        } else if made && base.join("cpuset.cpus").exists() {
            // A new v1 cpuset has no CPUs and no memory nodes.
            for f in ["cpuset.cpus", "cpuset.mems"] {
                let value = read_control(&base.join(f), false)?;
                write_control(&dir.join(f), value.trim(), synthetic)?;
            }
        }
        give(&dir, owner)?;
        for f in [
            "cgroup.procs",
            "cgroup.subtree_control",
            "cgroup.threads",
            "tasks",
        ] {
            let p = dir.join(f);
            if p.exists() {
                give(&p, owner)?;
            }
        }
        dirs.push(dir);
    }
    Ok(dirs)
}

fn give(p: &Path, owner: u32) -> Result<(), CgroupError> {
    rustix::fs::chown(
        p,
        Some(rustix::fs::Uid::from_raw(owner)),
        Some(rustix::fs::Gid::from_raw(owner)),
    )
    .map_err(|e| CgroupError::Write {
        path: p.to_path_buf(),
        value: format!("owner {owner}"),
        source: e.into(),
    })
}

/// Switches `controllers` on for the children of `dir`.
fn switch_on(dir: &Path, controllers: &[&str], synthetic: bool) -> Result<(), CgroupError> {
    let path = dir.join("cgroup.subtree_control");
    let on = read_control(&path, true)?;
    let missing: Vec<String> = controllers
        .iter()
        .filter(|c| {
            !on.split_whitespace()
                .any(|o| o.trim_start_matches('+') == **c)
        })
        .map(|c| format!("+{c}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    write_control(&path, &missing.join(" "), synthetic)
}
