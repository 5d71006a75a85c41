//! The cost figures a bench result carries (see `tickpack tco`): the
//! inputs, each side's machines, energy and cost, and the savings.

use serde::{Deserialize, Serialize};

use crate::power::PowerSourceKind;

/// Cost figures (see `tickpack tco`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tco {
    pub inputs: TcoInputs,
    pub before: TcoSide,
    pub after: TcoSide,
    pub savings: TcoSavings,
    pub watts_source: WattsSource,
    /// The currency the costs are in (`--currency`: the bill's, or the one
    /// `currency_rate` converts to); absent in results written before it
    /// was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

/// Where a cost's watts came from; stored as `"given"` (typed in),
/// `"modeled"` or `"measured (rapl)"`, `"measured (ipmi)"`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum WattsSource {
    /// Watts the user typed in (`tickpack tco`).
    Given,
    /// The watts of a bench step, from this power source.
    Source(PowerSourceKind),
}

impl WattsSource {
    /// True for watts from the power model (an estimate).
    pub fn is_modeled(self) -> bool {
        self == WattsSource::Source(PowerSourceKind::Modeled)
    }
}

impl std::fmt::Display for WattsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WattsSource::Given => f.pad("given"),
            WattsSource::Source(k) if !k.is_measured() => f.pad(k.as_str()),
            WattsSource::Source(k) => f.pad(&format!("measured ({k})")),
        }
    }
}

impl From<WattsSource> for String {
    fn from(w: WattsSource) -> String {
        w.to_string()
    }
}

impl TryFrom<String> for WattsSource {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        use PowerSourceKind::*;
        Ok(match s.as_str() {
            "given" => WattsSource::Given,
            "modeled" => WattsSource::Source(Modeled),
            "measured (rapl)" => WattsSource::Source(Rapl),
            "measured (ipmi)" => WattsSource::Source(Ipmi),
            "measured (command)" => WattsSource::Source(Command),
            other => {
                return Err(format!(
                    "unknown watts_source {other:?} (expected \"given\", \"modeled\" or \"measured (rapl|ipmi|command)\")"
                ))
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcoInputs {
    pub before_watts: f64,
    pub after_watts: f64,
    pub ratio: f64,
    pub machines: u64,
    pub price_per_kwh: f64,
    pub currency_rate: f64,
    pub hours_per_year: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcoSide {
    pub machines: u64,
    pub watts_each: f64,
    pub annual_kwh: f64,
    pub annual_cost: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcoSavings {
    /// Machines saved: negative when consolidating needs more (a ratio
    /// below 1).
    pub machines: i64,
    pub annual_kwh: f64,
    pub annual: f64,
    /// Savings as a share of the before cost, 0-100 %.
    pub percent: f64,
}
