//! Which cgroup version is mounted, and where each controller lives.
//!
//! The mount table (normally `/proc/self/mounts`) is the source of truth: a
//! `cgroup2` mount at the root means v2 (unified); `cgroup` mounts under the
//! root mean v1, one hierarchy per mount, with the controllers in the mount
//! options (`cpu,cpuacct` co-mounted is common). A hybrid machine (v1
//! hierarchies plus an empty `cgroup2` at `root/unified`) is treated as v1.
//! Only a `cgroup2` mount below the root with no v1 controller hierarchy at
//! all (every controller bound to v2) is used as a v2 root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{CgroupError, CgroupLayout, CgroupVersion, Controller};

/// One line of the mount table that matters here.
#[derive(Debug)]
struct Mount {
    mount_point: PathBuf,
    fs_type: String,
    options: String,
}

/// Undoes the octal escapes of the mount table (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let value = digits
                    .iter()
                    .fold(0u16, |acc, d| acc * 8 + u16::from(d - b'0'));
                if let Ok(byte) = u8::try_from(value) {
                    out.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _source = fields.next()?;
            let mount_point = PathBuf::from(unescape(fields.next()?));
            let fs_type = fields.next()?.to_owned();
            let options = fields.next().unwrap_or("").to_owned();
            Some(Mount {
                mount_point,
                fs_type,
                options,
            })
        })
        .collect()
}

/// Reads `mounts` and builds the layout of the cgroup filesystems at or
/// under `root`.
pub(super) fn detect(root: &Path, mounts: &Path) -> Result<CgroupLayout, CgroupError> {
    let text = std::fs::read_to_string(mounts).map_err(|source| CgroupError::Mounts {
        path: mounts.to_owned(),
        source,
    })?;
    let table = parse_mounts(&text);
    let under = |m: &Mount| m.mount_point.starts_with(root);

    if let Some(m) = table
        .iter()
        .find(|m| m.fs_type == "cgroup2" && m.mount_point == root)
    {
        return v2_layout(&m.mount_point);
    }

    let mut v1: BTreeMap<Controller, PathBuf> = BTreeMap::new();
    let mut any_v1 = false;
    for m in table.iter().filter(|m| m.fs_type == "cgroup" && under(m)) {
        any_v1 = true;
        for option in m.options.split(',') {
            if let Some(c) = Controller::from_v1_option(option) {
                v1.entry(c).or_insert_with(|| m.mount_point.clone());
            }
        }
    }
    if !v1.is_empty() {
        let synthetic = v1.values().any(|p| !super::control::is_cgroup_fs(p));
        return Ok(CgroupLayout {
            version: CgroupVersion::V1,
            root: root.to_owned(),
            controllers: v1,
            synthetic,
        });
    }

    if let Some(m) = table.iter().find(|m| m.fs_type == "cgroup2" && under(m)) {
        return v2_layout(&m.mount_point);
    }

    if any_v1 {
        // Only named hierarchies (name=systemd): v1 without our controllers.
        return Ok(CgroupLayout {
            version: CgroupVersion::V1,
            root: root.to_owned(),
            controllers: BTreeMap::new(),
            synthetic: !super::control::is_cgroup_fs(root),
        });
    }

    Err(CgroupError::NoCgroupFs {
        root: root.to_owned(),
        mounts: mounts.to_owned(),
    })
}

/// A v2 layout rooted at `v2_root`, with the controllers its
/// `cgroup.controllers` lists. `cpuacct` is always there: v2 accounts CPU
/// time in every cgroup's `cpu.stat`.
fn v2_layout(v2_root: &Path) -> Result<CgroupLayout, CgroupError> {
    let path = v2_root.join("cgroup.controllers");
    let text = std::fs::read_to_string(&path).map_err(|source| CgroupError::Read {
        path: path.clone(),
        source,
    })?;
    let mut controllers = BTreeMap::new();
    controllers.insert(Controller::Cpuacct, v2_root.to_owned());
    for name in text.split_whitespace() {
        if let Some(c) = Controller::from_v2_name(name) {
            controllers.insert(c, v2_root.to_owned());
        }
    }
    Ok(CgroupLayout {
        version: CgroupVersion::V2,
        root: v2_root.to_owned(),
        controllers,
        synthetic: !super::control::is_cgroup_fs(v2_root),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_with_spaces_are_unescaped() {
        let t = parse_mounts("cgroup /a\\040b/cpu cgroup rw,cpu 0 0\n");
        assert_eq!(t[0].mount_point, PathBuf::from("/a b/cpu"));
        assert_eq!(unescape("x\\134y"), "x\\y");
        assert_eq!(unescape("trailing\\04"), "trailing\\04");
    }
}
