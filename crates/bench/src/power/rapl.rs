//! RAPL: the CPU packages' energy counters under powercap.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tickpack_report::bench::PowerSourceKind;

use super::{check_busy, PowerError, PowerSource};

#[derive(Debug, Clone)]
struct RaplDomain {
    name: String,
    energy_path: PathBuf,
    max_range_uj: u64,
}

/// RAPL package energy counters under a powercap root.
#[derive(Debug)]
pub struct RaplSource {
    domains: Vec<RaplDomain>,
    start: Option<(Instant, Vec<u64>)>,
}

/// Energy used between two readings of a counter that wraps to 0 after
/// `max_range_uj`. Handles one wrap; at 200 W a typical 262 kJ range takes
/// over 20 minutes to wrap, far longer than a step.
pub fn energy_delta_uj(start_uj: u64, end_uj: u64, max_range_uj: u64) -> u64 {
    if end_uj >= start_uj {
        end_uj - start_uj
    } else {
        max_range_uj.saturating_sub(start_uj) + end_uj
    }
}

fn read_u64(path: &Path) -> Result<u64, PowerError> {
    let text = std::fs::read_to_string(path).map_err(|source| PowerError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    text.trim().parse().map_err(|_| PowerError::Sysfs {
        path: path.to_path_buf(),
        content: text.trim().to_string(),
    })
}

/// `intel-rapl:N` (exactly one colon: zones, not sub-zones) -> N.
fn rapl_zone_index(dir_name: &str) -> Option<u32> {
    dir_name.strip_prefix("intel-rapl:")?.parse().ok()
}

impl RaplSource {
    /// Finds the package domains under `root` (normally
    /// [`DEFAULT_SYSFS_ROOT`]) and checks that their counters can be read.
    pub fn open(root: &Path) -> Result<Self, PowerError> {
        let entries = std::fs::read_dir(root).map_err(|source| PowerError::Read {
            path: root.to_path_buf(),
            source,
        })?;
        let mut zones = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| PowerError::Read {
                path: root.to_path_buf(),
                source,
            })?;
            let file_name = entry.file_name();
            if let Some(index) = file_name.to_str().and_then(rapl_zone_index) {
                zones.push((index, entry.path()));
            }
        }
        zones.sort();
        let mut domains = Vec::new();
        for (_, dir) in zones {
            let name_path = dir.join("name");
            let name = match std::fs::read_to_string(&name_path) {
                Ok(n) => n.trim().to_string(),
                Err(source) => {
                    return Err(PowerError::Read {
                        path: name_path,
                        source,
                    })
                }
            };
            if !name.starts_with("package") {
                continue; // psys would count the packages twice
            }
            let max_range_uj = read_u64(&dir.join("max_energy_range_uj"))?;
            let energy_path = dir.join("energy_uj");
            read_u64(&energy_path)?; // fails here, not mid-run, when root-only
            domains.push(RaplDomain {
                name,
                energy_path,
                max_range_uj,
            });
        }
        if domains.is_empty() {
            return Err(PowerError::NoRapl {
                root: root.to_path_buf(),
            });
        }
        Ok(RaplSource {
            domains,
            start: None,
        })
    }

    /// The domains summed, e.g. `["package-0", "package-1"]`.
    pub fn domain_names(&self) -> Vec<&str> {
        self.domains.iter().map(|d| d.name.as_str()).collect()
    }

    fn read_all(&self) -> Result<Vec<u64>, PowerError> {
        self.domains
            .iter()
            .map(|d| {
                let v = read_u64(&d.energy_path)?;
                if v > d.max_range_uj {
                    return Err(PowerError::RaplRange {
                        path: d.energy_path.clone(),
                        value: v,
                        max: d.max_range_uj,
                    });
                }
                Ok(v)
            })
            .collect()
    }

    /// [`PowerSource::start`] with the time passed in (for tests and for
    /// callers that already hold the step's start time).
    pub fn start_at(&mut self, now: Instant) -> Result<(), PowerError> {
        self.start = Some((now, self.read_all()?));
        Ok(())
    }

    /// Average watts from [`start_at`](Self::start_at) until `now`, summed
    /// over all package domains.
    pub fn watts_at(&mut self, now: Instant) -> Result<f64, PowerError> {
        let (t0, first) = self.start.as_ref().ok_or(PowerError::NotStarted {
            source_name: PowerSourceKind::Rapl,
        })?;
        let secs = now.saturating_duration_since(*t0).as_secs_f64();
        if secs <= 0.0 {
            return Err(PowerError::NoInterval {
                source_name: PowerSourceKind::Rapl,
            });
        }
        let end = self.read_all()?;
        let total_uj: u64 = self
            .domains
            .iter()
            .zip(first.iter().zip(&end))
            .map(|(d, (&a, &b))| energy_delta_uj(a, b, d.max_range_uj))
            .sum();
        Ok(total_uj as f64 / 1e6 / secs)
    }
}

impl PowerSource for RaplSource {
    fn kind(&self) -> PowerSourceKind {
        PowerSourceKind::Rapl
    }
    fn start(&mut self) -> Result<(), PowerError> {
        self.start_at(Instant::now())
    }
    fn watts_since_start(&mut self, busy_fraction: f64) -> Result<f64, PowerError> {
        check_busy(busy_fraction)?;
        self.watts_at(Instant::now())
    }
}
