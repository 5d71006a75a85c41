//! How much CPU one tick costs: the [`CostProfile`] knobs (movement
//! sub-steps, line-of-sight samples, bots' steering rays, a scale), their
//! names on the command line and their validation. See the `world` module
//! docs for what each profile measures.

use std::fmt;

/// How much work one tick costs; see the [`world`](super) module docs for
/// measurements.
///
/// The three knobs are multiplied by `scale` (and rounded, at least 1
/// sub-step and 1 sample) when the world is built; [`CostProfile::effective`]
/// shows the result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostProfile {
    /// Movement sub-steps per tick.
    pub physics_substeps: u32,
    /// Points per target body tested for line of sight (1 = chest only).
    pub visibility_samples: u32,
    /// Steering rays per bot per tick while walking.
    pub bot_nav_rays: u32,
    /// Multiplies the three knobs above.
    pub scale: f32,
}

/// A [`CostProfile`] with `scale` applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveCost {
    pub physics_substeps: u32,
    pub visibility_samples: u32,
    pub bot_nav_rays: u32,
}

/// Largest effective value of any knob.
const MAX_KNOB: u32 = 4096;

impl CostProfile {
    /// A cheap world: one sub-step, chest-only visibility, three steering
    /// rays. For packing tests that want the server's I/O to dominate.
    pub const fn light() -> Self {
        CostProfile {
            physics_substeps: 1,
            visibility_samples: 1,
            bot_nav_rays: 3,
            scale: 1.0,
        }
    }

    /// The reference: about one CS 1.6 server's world work at 12 players.
    pub const fn reference() -> Self {
        CostProfile {
            physics_substeps: 40,
            visibility_samples: 80,
            bot_nav_rays: 32,
            scale: 1.0,
        }
    }

    /// Four times the reference's knobs.
    pub const fn heavy() -> Self {
        CostProfile {
            physics_substeps: 160,
            visibility_samples: 320,
            bot_nav_rays: 128,
            scale: 1.0,
        }
    }

    /// The reference profile with its knobs multiplied by `factor`.
    pub fn scaled(factor: f32) -> Self {
        CostProfile::reference().with_scale(factor)
    }

    /// This profile with `scale` multiplied by `factor`.
    pub fn with_scale(self, factor: f32) -> Self {
        CostProfile {
            scale: self.scale * factor,
            ..self
        }
    }

    /// Checks the knobs; [`World::new`] does not fail, it clamps.
    pub fn validate(&self) -> Result<(), CostProfileError> {
        if !self.scale.is_finite() || self.scale <= 0.0 {
            return Err(CostProfileError::BadScale(self.scale));
        }
        let e = self.effective();
        for (name, raw, v) in [
            (
                "physics_substeps",
                self.physics_substeps,
                e.physics_substeps,
            ),
            (
                "visibility_samples",
                self.visibility_samples,
                e.visibility_samples,
            ),
            ("bot_nav_rays", self.bot_nav_rays, e.bot_nav_rays),
        ] {
            if v >= MAX_KNOB || (raw as f32 * self.scale) > MAX_KNOB as f32 {
                return Err(CostProfileError::TooLarge {
                    knob: name,
                    value: raw as f32 * self.scale,
                });
            }
        }
        Ok(())
    }

    /// The knobs after `scale`, as the world uses them.
    pub fn effective(&self) -> EffectiveCost {
        let scale = if self.scale.is_finite() && self.scale > 0.0 {
            self.scale
        } else {
            1.0
        };
        let apply = |v: u32, min: u32| ((v as f32 * scale).round() as u32).clamp(min, MAX_KNOB);
        EffectiveCost {
            physics_substeps: apply(self.physics_substeps, 1),
            visibility_samples: apply(self.visibility_samples, 1),
            bot_nav_rays: apply(self.bot_nav_rays, 0),
        }
    }
}

impl Default for CostProfile {
    fn default() -> Self {
        CostProfile::reference()
    }
}

/// Parses `light`, `reference` (or `default`), `heavy`, or a positive
/// number `F` meaning [`CostProfile::scaled`]`(F)`; a name may carry a
/// factor too, as in `heavy*2` or `light*0.5`.
impl std::str::FromStr for CostProfile {
    type Err = CostProfileError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (name, factor) = match s.split_once('*') {
            Some((n, f)) => (n.trim(), Some(f.trim())),
            None => (s, None),
        };
        let unknown = || CostProfileError::Unknown(s.to_string());
        let number = |f: &str| f.parse::<f32>().map_err(|_| unknown());
        let base = match name {
            "light" => CostProfile::light(),
            "reference" | "default" => CostProfile::reference(),
            "heavy" => CostProfile::heavy(),
            _ if factor.is_none() => CostProfile::scaled(number(name)?),
            _ => return Err(unknown()),
        };
        let profile = match factor {
            Some(f) => base.with_scale(number(f)?),
            None => base,
        };
        profile.validate()?;
        Ok(profile)
    }
}

/// Why a [`CostProfile`] is unusable.
#[derive(Debug, Clone, PartialEq)]
pub enum CostProfileError {
    /// Not `light`, `reference`, `heavy`, a number, or `NAME*NUMBER`.
    Unknown(String),
    /// `scale` must be a finite number above zero.
    BadScale(f32),
    /// A knob times `scale` exceeds the supported maximum.
    TooLarge { knob: &'static str, value: f32 },
}

impl fmt::Display for CostProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CostProfileError::Unknown(s) => write!(
                f,
                "unknown cost profile {s:?}: expected light, reference, heavy, \
                 a factor of the reference such as 1.5, or NAME*FACTOR"
            ),
            CostProfileError::BadScale(s) => {
                write!(f, "cost scale {s} is not a finite number above zero")
            }
            CostProfileError::TooLarge { knob, value } => write!(
                f,
                "cost knob {knob} = {value} after scaling exceeds the maximum {MAX_KNOB}"
            ),
        }
    }
}

impl std::error::Error for CostProfileError {}
