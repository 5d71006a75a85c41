//! A step's watts and where they came from (a meter, or the model), as
//! a bench result records them; below the schema and the cost figures.

use serde::{Deserialize, Serialize};

/// Power during a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Power {
    pub watts: f64,
    pub source: PowerSourceKind,
}

/// Where a step's watts came from; stored as `"rapl"`, `"ipmi"`,
/// `"command"` or `"modeled"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PowerSourceKind {
    /// Intel RAPL energy counters (the CPU package).
    Rapl,
    /// The BMC's power reading over IPMI (the whole machine).
    Ipmi,
    /// A command the user gave that prints watts.
    Command,
    /// A linear model of the CPU busy share: an estimate, not a measurement.
    Modeled,
}

impl PowerSourceKind {
    /// As stored in `result.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            PowerSourceKind::Rapl => "rapl",
            PowerSourceKind::Ipmi => "ipmi",
            PowerSourceKind::Command => "command",
            PowerSourceKind::Modeled => "modeled",
        }
    }

    /// False for the power model.
    pub fn is_measured(self) -> bool {
        self != PowerSourceKind::Modeled
    }
}

impl std::fmt::Display for PowerSourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so widths like `{:>7}` apply.
        f.pad(self.as_str())
    }
}
