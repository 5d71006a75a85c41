//! Reading result files for the report: each checked for JSON, schema id
//! and shape, with an error that names the file and what is wrong. The
//! report reads `tickpack bench` results and `tickpack players` results
//! (single or merged: `tickpack report merge`).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::bench::{BenchResult, BENCH_SCHEMA};
use crate::{PlayersResult, PLAYERS_SCHEMA};

/// One result file the report can show.
#[derive(Debug, Clone)]
pub enum ResultFile {
    Bench(Box<BenchResult>),
    Players(Box<PlayersResult>),
}

/// Why a result file could not be turned into a report.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {0}")]
    Read(#[source] tickpack_sys::user_file::UserFileError),
    #[error("{path} is not JSON: {source}")]
    NotJson {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} is not a tickpack result: it has no \"schema\" field (expected {expected})")]
    NoSchema { path: String, expected: String },
    #[error("{path} has schema {found}, but this reads {expected}")]
    WrongSchema {
        path: String,
        /// The schema value as it appears in the file (JSON).
        found: String,
        expected: String,
    },
    #[error("{path} says it is \"{schema}\" but does not match that schema: {source}")]
    Invalid {
        path: String,
        schema: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

const BENCH_WHAT: &str = "the result.json of `tickpack bench`";
const PLAYERS_WHAT: &str = "the --json of `tickpack players`, or of `tickpack report merge`";

/// Reads `path` as JSON and returns it with its `schema`, which must be
/// one of `accepted` (schema, what makes it).
fn read_json(path: &Path, accepted: &[(&str, &str)]) -> Result<(String, String), InputError> {
    let p = || path.display().to_string();
    let expected = || {
        accepted
            .iter()
            .map(|(s, what)| format!("\"{s}\" ({what})"))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    // Only a regular file, and no bigger than a result can be: `report
    // /dev/zero` read until the machine ran out of memory.
    let text = tickpack_sys::user_file::read_text(path, tickpack_sys::user_file::MAX_RESULT_BYTES)
        .map_err(InputError::Read)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| InputError::NotJson { path: p(), source })?;
    match value.get("schema") {
        None => Err(InputError::NoSchema {
            path: p(),
            expected: expected(),
        }),
        Some(serde_json::Value::String(s)) if accepted.iter().any(|(a, _)| a == s) => {
            Ok((s.clone(), text))
        }
        Some(other) => Err(InputError::WrongSchema {
            path: p(),
            found: other.to_string(),
            expected: expected(),
        }),
    }
}

/// Parses the text again (not the value) so errors carry line and column.
fn parse<T: DeserializeOwned>(
    path: &Path,
    schema: &'static str,
    text: &str,
) -> Result<T, InputError> {
    serde_json::from_str(text).map_err(|source| InputError::Invalid {
        path: path.display().to_string(),
        schema,
        source,
    })
}

/// Reads one `result.json`, checking that it is JSON, that its `schema` is
/// [`BENCH_SCHEMA`], and that it matches that schema.
pub fn read_result(path: &Path) -> Result<BenchResult, InputError> {
    let (_, text) = read_json(path, &[(BENCH_SCHEMA, BENCH_WHAT)])?;
    parse(path, BENCH_SCHEMA, &text)
}

/// Reads one players result ([`PLAYERS_SCHEMA`], single or merged), checked
/// as [`read_result`] checks a bench result.
pub fn read_players(path: &Path) -> Result<PlayersResult, InputError> {
    let (_, text) = read_json(path, &[(PLAYERS_SCHEMA, PLAYERS_WHAT)])?;
    parse(path, PLAYERS_SCHEMA, &text)
}

/// Reads a bench or a players result, whichever the file's schema says.
pub fn read_any(path: &Path) -> Result<ResultFile, InputError> {
    let (schema, text) = read_json(
        path,
        &[(BENCH_SCHEMA, BENCH_WHAT), (PLAYERS_SCHEMA, PLAYERS_WHAT)],
    )?;
    Ok(if schema == BENCH_SCHEMA {
        ResultFile::Bench(Box::new(parse(path, BENCH_SCHEMA, &text)?))
    } else {
        ResultFile::Players(Box::new(parse(path, PLAYERS_SCHEMA, &text)?))
    })
}

/// Reads every file (see [`read_any`]) and renders them on one page, each
/// labelled with its path: bench results first (compared when there are
/// several), then players results.
pub fn render_file(paths: &[PathBuf]) -> Result<String, InputError> {
    let mut bench = vec![];
    let mut players = vec![];
    for p in paths {
        let label = p.display().to_string();
        match read_any(p)? {
            ResultFile::Bench(b) => bench.push((label, *b)),
            ResultFile::Players(r) => players.push((label, *r)),
        }
    }
    Ok(super::render_all(&bench, &players))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `tickpack report /dev/zero` read until 4 GB.
    #[test]
    fn report_of_a_device_is_refused_unread() {
        let e = read_any(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
