//! Changing a running cgroup's CPU share (the guard's actuators) and
//! reading its CPU pressure and throttling, on both versions:
//!
//! | what              | v1                                   | v2                         |
//! |-------------------|--------------------------------------|----------------------------|
//! | quota             | `cpu.cfs_quota_us` (-1: none)        | `cpu.max` (`max`: none)    |
//! | CPU set           | `cpuset.cpus`                        | `cpuset.cpus`              |
//! | idle              | `cpu.idle` 1 (5.15+), else `cpu.shares` 2 (+ SCHED_IDLE per task) | `cpu.idle` 1 (5.15+), else `cpu.weight` 1 |
//! | pressure          | none (v1 has no per-cgroup PSI)      | `cpu.pressure`             |
//! | throttling        | `cpu.stat` nr_throttled, throttled_time (ns) | `cpu.stat` nr_throttled, throttled_usec |
//!
//! [`Cgroup::adopt`] wraps an existing cgroup someone else made (a CI
//! runner's), which is tuned but never killed or removed.

use std::path::{Path, PathBuf};

use super::control::{read_control, write_control};
use super::{
    Cgroup, CgroupError, CgroupLayout, CgroupVersion, Controller, Joined, CPU_PERIOD_US,
    MIN_CPU_QUOTA_US,
};
use tickpack_sys::format_cpu_list;

/// Throttling counters of `cpu.stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttling {
    pub nr_throttled: u64,
    pub throttled_ns: u64,
}

/// `some avg10` of a PSI file (`/proc/pressure/cpu`, v2 `cpu.pressure`).
pub fn parse_psi_some_avg10(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// The system's CPU pressure, `some avg10` percent, from `path`
/// (`/proc/pressure/cpu`), or why it is unavailable.
pub fn system_cpu_pressure(path: &Path) -> Result<f64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (kernel without PSI, or psi=0 on its command line)",
            path.display()
        )
    })?;
    parse_psi_some_avg10(&text).ok_or_else(|| format!("{}: no `some avg10=` field", path.display()))
}

impl Cgroup {
    /// Wraps the existing cgroup at `path` (relative to each hierarchy, e.g.
    /// `ci/runner`), for tuning only: it joins the hierarchies of `cpu`,
    /// `cpuacct` and `cpuset` where the directory exists. [`Cgroup::remove`]
    /// must not be called on it (the supervisor only restores its quota).
    pub fn adopt(layout: &CgroupLayout, path: &Path) -> Result<Cgroup, CgroupError> {
        let rel = path.strip_prefix("/").unwrap_or(path);
        if rel.as_os_str().is_empty() || rel.components().any(|c| c.as_os_str() == "..") {
            return Err(CgroupError::InvalidName {
                name: path.display().to_string(),
                reason: "an adopted cgroup must be a path below the cgroup root, without '..'",
            });
        }
        let mut dirs: Vec<Joined> = Vec::new();
        for c in [Controller::Cpu, Controller::Cpuacct, Controller::Cpuset] {
            let Some(base) = layout.controller_dir(c) else {
                continue;
            };
            let leaf = base.join(rel);
            if !leaf.is_dir() {
                continue;
            }
            match dirs.iter_mut().find(|j| j.base == base) {
                Some(j) => j.controllers.push(c),
                None => dirs.push(Joined {
                    base: base.to_owned(),
                    leaf,
                    controllers: vec![c],
                }),
            }
        }
        if dirs.is_empty() {
            return Err(CgroupError::InvalidName {
                name: path.display().to_string(),
                reason: "no such cgroup in the cpu, cpuacct or cpuset hierarchy",
            });
        }
        Ok(Cgroup {
            name: rel.display().to_string(),
            version: layout.version,
            synthetic: layout.synthetic,
            dirs,
            created: Vec::new(),
        })
    }

    /// The leaf holding `controller`, if the cgroup joined it.
    pub fn controller_path(&self, controller: Controller) -> Option<PathBuf> {
        self.dirs
            .iter()
            .find(|j| j.controllers.contains(&controller))
            .map(|j| j.leaf.clone())
    }

    fn cpu_dir(&self) -> Result<PathBuf, CgroupError> {
        self.controller_path(Controller::Cpu)
            .ok_or(CgroupError::NotMounted {
                controller: Controller::Cpu,
            })
    }

    /// Sets the CPU quota in cores (`None`: unlimited). A quota below the
    /// kernel's minimum (1 ms per 100 ms period) is raised to it: the
    /// smallest share a running cgroup can be given.
    pub fn set_cpu_quota(&self, cores: Option<f64>) -> Result<(), CgroupError> {
        let dir = self.cpu_dir()?;
        let quota = cores
            .map(|c| ((c.max(0.0) * CPU_PERIOD_US as f64).round() as u64).max(MIN_CPU_QUOTA_US));
        match self.version {
            CgroupVersion::V1 => {
                write_control(
                    &dir.join("cpu.cfs_period_us"),
                    &CPU_PERIOD_US.to_string(),
                    self.synthetic,
                )?;
                let v = quota.map_or("-1".to_string(), |q| q.to_string());
                write_control(&dir.join("cpu.cfs_quota_us"), &v, self.synthetic)
            }
            CgroupVersion::V2 => {
                let q = quota.map_or("max".to_string(), |q| q.to_string());
                write_control(
                    &dir.join("cpu.max"),
                    &format!("{q} {CPU_PERIOD_US}"),
                    self.synthetic,
                )
            }
        }
    }

    /// Sets the CPUs the cgroup may run on.
    pub fn set_cpus(&self, cpus: &[usize]) -> Result<(), CgroupError> {
        let dir = self
            .controller_path(Controller::Cpuset)
            .ok_or(CgroupError::NotMounted {
                controller: Controller::Cpuset,
            })?;
        write_control(
            &dir.join("cpuset.cpus"),
            &format_cpu_list(cpus),
            self.synthetic,
        )
    }

    /// Makes the cgroup idle (runs only when nothing else wants the CPU) or
    /// gives it the default weight back: `cpu.idle` where the kernel has it
    /// (5.15+, v1 and v2), else the lowest `cpu.weight` (v2) or `cpu.shares`
    /// (v1; the caller also sets SCHED_IDLE on its tasks,
    /// [`set_sched_idle`]). Returns what was written, for the log.
    pub fn set_idle(&self, idle: bool) -> Result<&'static str, CgroupError> {
        let dir = self.cpu_dir()?;
        match self.version {
            // An idle group (`cpu.idle`, 5.15+, both versions) is
            // preempted at once by any task that is not idle: a group with
            // a low weight only is not, and its SCHED_IDLE tasks could keep
            // a server core for a whole slice after a server woke.
            _ if dir.join("cpu.idle").exists() => {
                write_control(
                    &dir.join("cpu.idle"),
                    if idle { "1" } else { "0" },
                    self.synthetic,
                )?;
                Ok(if idle { "cpu.idle 1" } else { "cpu.idle 0" })
            }
            CgroupVersion::V1 => {
                write_control(
                    &dir.join("cpu.shares"),
                    if idle { "2" } else { "1024" },
                    self.synthetic,
                )?;
                Ok(if idle {
                    "cpu.shares 2"
                } else {
                    "cpu.shares 1024"
                })
            }
            CgroupVersion::V2 => {
                write_control(
                    &dir.join("cpu.weight"),
                    if idle { "1" } else { "100" },
                    self.synthetic,
                )?;
                Ok(if idle {
                    "cpu.weight 1"
                } else {
                    "cpu.weight 100"
                })
            }
        }
    }

    /// Throttling counters (`cpu.stat`).
    pub fn throttling(&self) -> Result<Throttling, CgroupError> {
        let f = self.cpu_dir()?.join("cpu.stat");
        let text = read_control(&f, false)?;
        let get = |k| {
            super::control::keyed(&f, &text, k)
                .ok()
                .flatten()
                .unwrap_or(0)
        };
        Ok(match self.version {
            CgroupVersion::V1 => Throttling {
                nr_throttled: get("nr_throttled"),
                throttled_ns: get("throttled_time"),
            },
            CgroupVersion::V2 => Throttling {
                nr_throttled: get("nr_throttled"),
                throttled_ns: get("throttled_usec").saturating_mul(1000),
            },
        })
    }

    /// The cgroup's own CPU pressure (`some avg10`), or why there is none.
    pub fn cpu_pressure(&self) -> Result<f64, String> {
        match self.version {
            CgroupVersion::V1 => Err("cgroup v1 has no per-cgroup pressure files".into()),
            CgroupVersion::V2 => {
                let f = self
                    .cpu_dir()
                    .map_err(|e| e.to_string())?
                    .join("cpu.pressure");
                system_cpu_pressure(&f)
            }
        }
    }

    /// CPU time used so far, nanoseconds (`cpuacct.usage`, v2 `cpu.stat`).
    pub fn cpu_usage_ns(&self) -> Option<u64> {
        let dir = self.controller_path(Controller::Cpuacct)?;
        self.backend().cpu_usage_ns(&dir).ok()
    }
}

/// Sets SCHED_IDLE on every task (thread) of `pid` (v1's idle class for a
/// batch; children inherit it). Returns how many tasks were changed.
pub fn set_sched_idle(pid: u32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut n = 0;
    for t in tasks.flatten() {
        let Some(tid) = t
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler on a thread id with a valid param;
        // a gone thread is an error, not undefined behaviour.
        if unsafe { libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) } == 0 {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psi_some_avg10_is_read_from_the_some_line() {
        let t = "some avg10=0.43 avg60=1.44 avg300=14.15 total=5013651499\nfull avg10=9.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_psi_some_avg10(t), Some(0.43));
        assert_eq!(parse_psi_some_avg10("full avg10=1.0"), None);
        assert_eq!(parse_psi_some_avg10(""), None);
    }

    #[test]
    fn missing_pressure_file_says_why() {
        let e = system_cpu_pressure(Path::new("/nonexistent/pressure/cpu")).unwrap_err();
        assert!(e.contains("without PSI"), "{e}");
    }
}
