//! cgroup v1: one hierarchy per controller mount (`cpu,cpuacct` may be
//! co-mounted); the instance gets a directory in each and joins by being
//! written into each `cgroup.procs`. A new v1 cpuset cgroup has no CPUs and
//! no memory nodes and refuses tasks until both are set, so intermediate
//! parents copy them from their parent. Swap is forbidden through
//! `memory.memsw.limit_in_bytes` where the kernel has it. The pids limit
//! is `pids.max` in the `pids` hierarchy, joined only when one is asked.

use std::path::Path;

use super::backend::{Backend, MemoryFiles, Settings};
use super::control::read_u64;
use super::{Cgroup, CgroupError, Controller, CPU_PERIOD_US};
use tickpack_sys::format_cpu_list;

/// The cgroup v1 backend.
pub(super) struct V1;

impl Backend for V1 {
    fn set_up(&self, cg: &mut Cgroup, settings: &Settings<'_>) -> Result<(), CgroupError> {
        let components: Vec<String> = cg.name.split('/').map(str::to_owned).collect();
        for joined in cg.dirs.clone() {
            let cpuset = joined.controllers.contains(&Controller::Cpuset);
            let mut dir = joined.base.clone();
            for (i, component) in components.iter().enumerate() {
                let parent = dir.clone();
                dir.push(component);
                let leaf = i + 1 == components.len();
                if cg.mkdir(&dir, leaf)? && cpuset && !leaf {
                    // A new v1 cpuset cgroup has no CPUs and no memory nodes.
                    cg.copy(&parent, &dir, "cpuset.cpus")?;
                    cg.copy(&parent, &dir, "cpuset.mems")?;
                }
            }
            let parent = dir.parent().unwrap_or(&joined.base).to_owned();
            for controller in &joined.controllers {
                match controller {
                    Controller::Cpuset => {
                        match &settings.limits.cpus {
                            Some(cpus) => {
                                cg.write(&dir.join("cpuset.cpus"), &format_cpu_list(cpus))?
                            }
                            None => cg.copy(&parent, &dir, "cpuset.cpus")?,
                        }
                        match settings.mems {
                            Some(mems) => {
                                cg.write(&dir.join("cpuset.mems"), &format_cpu_list(mems))?
                            }
                            None => cg.copy(&parent, &dir, "cpuset.mems")?,
                        }
                    }
                    Controller::Cpu => {
                        if let Some(quota) = settings.quota {
                            cg.write(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                            cg.write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                        }
                    }
                    Controller::Memory => {
                        if let Some(bytes) = settings.limits.memory_bytes {
                            let value = bytes.to_string();
                            cg.write(&dir.join("memory.limit_in_bytes"), &value)?;
                            let memsw = dir.join("memory.memsw.limit_in_bytes");
                            if memsw.exists() {
                                cg.write(&memsw, &value)?;
                            }
                        }
                    }
                    Controller::Pids => {
                        if let Some(max) = settings.limits.pids_max {
                            cg.write(&dir.join("pids.max"), &max.to_string())?;
                        }
                    }
                    Controller::Cpuacct => {}
                }
            }
        }
        Ok(())
    }

    fn cpu_usage_ns(&self, cpu_dir: &Path) -> Result<u64, CgroupError> {
        read_u64(&cpu_dir.join("cpuacct.usage"))
    }

    fn memory_files(&self) -> MemoryFiles {
        MemoryFiles {
            current: "memory.usage_in_bytes",
            events: "memory.oom_control",
        }
    }

    fn kill_first(&self, _cg: &Cgroup) -> Result<(), CgroupError> {
        // v1 has no cgroup.kill: the signal loop does it all.
        Ok(())
    }
}
