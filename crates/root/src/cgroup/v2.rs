//! cgroup v2: one unified tree. Controllers must be switched on in every
//! ancestor's `cgroup.subtree_control`, and a cgroup with processes of its
//! own may not do that (the "no internal processes" rule; the root is
//! exempt), so instances live under an intermediate parent that holds no
//! process. Swap is forbidden through `memory.swap.max`; a pids limit is
//! `pids.max`, with `+pids` enabled like the others; `cgroup.kill`
//! (5.14+) kills the whole cgroup before the signal loop.

use std::path::Path;

use super::backend::{Backend, MemoryFiles, Settings};
use super::control::{keyed, read_control, write_control};
use super::{Cgroup, CgroupError, CPU_PERIOD_US};
use tickpack_sys::format_cpu_list;

/// The cgroup v2 backend.
pub(super) struct V2;

impl Backend for V2 {
    fn set_up(&self, cg: &mut Cgroup, settings: &Settings<'_>) -> Result<(), CgroupError> {
        let joined = cg.dirs[0].clone();
        let enable: Vec<&str> = joined
            .controllers
            .iter()
            .filter_map(|c| c.v2_name())
            .collect();
        let components: Vec<String> = cg.name.split('/').map(str::to_owned).collect();
        let mut dir = joined.base.clone();
        for (i, component) in components.iter().enumerate() {
            enable_controllers(cg, &dir, &enable)?;
            dir.push(component);
            cg.mkdir(&dir, i + 1 == components.len())?;
        }
        if let Some(cpus) = &settings.limits.cpus {
            cg.write(&dir.join("cpuset.cpus"), &format_cpu_list(cpus))?;
        }
        if let Some(mems) = settings.mems {
            cg.write(&dir.join("cpuset.mems"), &format_cpu_list(mems))?;
        }
        if let Some(quota) = settings.quota {
            cg.write(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
        }
        if let Some(bytes) = settings.limits.memory_bytes {
            cg.write(&dir.join("memory.max"), &bytes.to_string())?;
            let swap = dir.join("memory.swap.max");
            if swap.exists() {
                cg.write(&swap, "0")?;
            }
        }
        if let Some(max) = settings.limits.pids_max {
            cg.write(&dir.join("pids.max"), &max.to_string())?;
        }
        Ok(())
    }

    fn cpu_usage_ns(&self, cpu_dir: &Path) -> Result<u64, CgroupError> {
        let stat = cpu_dir.join("cpu.stat");
        let stat_text = read_control(&stat, false)?;
        let usec = keyed(&stat, &stat_text, "usage_usec")?.ok_or_else(|| CgroupError::Parse {
            path: stat.clone(),
            expected: "a line \"usage_usec N\"",
            found: stat_text.clone(),
        })?;
        Ok(usec.saturating_mul(1000))
    }

    fn memory_files(&self) -> MemoryFiles {
        MemoryFiles {
            current: "memory.current",
            events: "memory.events",
        }
    }

    fn kill_first(&self, cg: &Cgroup) -> Result<(), CgroupError> {
        for joined in &cg.dirs {
            let kill = joined.leaf.join("cgroup.kill");
            if kill.exists() {
                write_control(&kill, "1", false)?;
            }
        }
        Ok(())
    }
}

/// Switches on `controllers` for the children of `dir` (v2).
fn enable_controllers(cg: &Cgroup, dir: &Path, controllers: &[&str]) -> Result<(), CgroupError> {
    let path = dir.join("cgroup.subtree_control");
    let current = read_control(&path, cg.synthetic)?;
    let on: Vec<&str> = current
        .split_whitespace()
        .map(|c| c.trim_start_matches('+'))
        .collect();
    let missing: Vec<String> = controllers
        .iter()
        .filter(|c| !on.contains(c))
        .map(|c| format!("+{c}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let value = missing.join(" ");
    match write_control(&path, &value, cg.synthetic) {
        Err(CgroupError::Write {
            path,
            value,
            source,
        }) if source.raw_os_error() == Some(libc::EBUSY) => Err(CgroupError::InternalProcesses {
            path,
            value,
            source,
        }),
        other => other,
    }
}
