//! The power model: an estimate from the CPU busy share, used when nothing
//! on this machine measures power.

use tickpack_report::bench::PowerSourceKind;

use super::{check_busy, PowerError, PowerSource};

/// The linear model: `idle_watts + (max_watts − idle_watts) × busy_fraction`.
/// Not a measurement; its results are labelled `"modeled"`.
#[derive(Debug, Clone)]
pub struct ModeledSource {
    idle_watts: f64,
    max_watts: f64,
    started: bool,
}

impl ModeledSource {
    /// Refuses negative, non-finite or inverted figures.
    pub fn new(idle_watts: f64, max_watts: f64) -> Result<Self, PowerError> {
        let m = ModeledSource {
            idle_watts,
            max_watts,
            started: false,
        };
        m.check()?;
        Ok(m)
    }

    /// The model as configured, not yet checked: detection keeps it as the
    /// fallback and reports a bad figure instead of failing.
    pub(super) fn unchecked(idle_watts: f64, max_watts: f64) -> Self {
        ModeledSource {
            idle_watts,
            max_watts,
            started: false,
        }
    }

    pub(super) fn check(&self) -> Result<(), PowerError> {
        let (idle, max) = (self.idle_watts, self.max_watts);
        let ok = idle.is_finite() && max.is_finite() && idle >= 0.0 && max > 0.0 && max >= idle;
        if ok {
            Ok(())
        } else {
            Err(PowerError::BadModel { idle, max })
        }
    }

    /// Modeled watts at `busy_fraction` (0–1).
    pub fn watts(&self, busy_fraction: f64) -> Result<f64, PowerError> {
        let busy = check_busy(busy_fraction)?;
        Ok(self.idle_watts + (self.max_watts - self.idle_watts) * busy)
    }
}

impl PowerSource for ModeledSource {
    fn kind(&self) -> PowerSourceKind {
        PowerSourceKind::Modeled
    }
    fn start(&mut self) -> Result<(), PowerError> {
        self.check()?;
        self.started = true;
        Ok(())
    }
    /// Requires `start` like the measuring sources, so code that forgets it
    /// fails on a laptop too, not only on a machine with RAPL.
    fn watts_since_start(&mut self, busy_fraction: f64) -> Result<f64, PowerError> {
        if !self.started {
            return Err(PowerError::NotStarted {
                source_name: PowerSourceKind::Modeled,
            });
        }
        self.watts(busy_fraction)
    }
}
