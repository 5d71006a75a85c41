//! Reading result files for the report: each checked for JSON, schema id
//! and shape, with an error that names the file and what is wrong.

use std::path::{Path, PathBuf};

use crate::bench::{BenchResult, BENCH_SCHEMA};

/// Why a result file could not be turned into a report.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not JSON: {source}")]
    NotJson {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} is not a tickpack bench result: it has no \"schema\" field (expected \"{expected}\")", expected = BENCH_SCHEMA)]
    NoSchema { path: String },
    #[error("{path} has schema {found}, but the HTML report reads \"{expected}\" (the result.json of `tickpack bench`)", expected = BENCH_SCHEMA)]
    WrongSchema {
        path: String,
        /// The schema value as it appears in the file (JSON).
        found: String,
    },
    #[error("{path} says it is \"{expected}\" but does not match that schema: {source}", expected = BENCH_SCHEMA)]
    Invalid {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads one `result.json`, checking that it is JSON, that its `schema` is
/// [`BENCH_SCHEMA`], and that it matches that schema.
pub fn read_result(path: &Path) -> Result<BenchResult, InputError> {
    let p = || path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|source| InputError::Read { path: p(), source })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| InputError::NotJson { path: p(), source })?;
    match value.get("schema") {
        None => return Err(InputError::NoSchema { path: p() }),
        Some(serde_json::Value::String(s)) if s == BENCH_SCHEMA => {}
        Some(other) => {
            return Err(InputError::WrongSchema {
                path: p(),
                found: other.to_string(),
            })
        }
    }
    // Parse the text again (not the value) so errors carry line and column.
    serde_json::from_str(&text).map_err(|source| InputError::Invalid { path: p(), source })
}

/// Reads every file (see [`read_result`]) and renders them on one page,
/// each labelled with its path.
pub fn render_file(paths: &[PathBuf]) -> Result<String, InputError> {
    let results = paths
        .iter()
        .map(|p| Ok((p.display().to_string(), read_result(p)?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    Ok(super::render(&results))
}
