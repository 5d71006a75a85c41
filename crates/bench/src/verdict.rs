//! The QoS verdict of one ladder step. The rules, their limits and the
//! typed misses live in one table, [`tickpack_report::qos`], which the HTML
//! report reads too; this module names them for the bench.

pub use tickpack_report::qos::{
    default_limits, failures, Miss, RuleId, StepFigures, Verdict, RULES,
};
