//! Where a host's run dir is, and the check that tickpack may use it.

use std::path::{Path, PathBuf};

use crate::exit::{fail, Code, Failure};

/// Where run dirs live unless --run-dir says otherwise.
pub const RUN_ROOT: &str = "/run/tickpack";

/// The run dir of `status` and `down`: --run-dir, or the default for a
/// name that passes the host-name rule (the name becomes part of a path).
pub fn run_dir(name: &str, dir: &Option<PathBuf>) -> Result<PathBuf, Failure> {
    if let Err(e) = tickpack_sys::validate_host_name(name) {
        return Err(fail(
            Code::Config,
            format!(
                "--name \"{}\": {e} (a host name is 1-{} of a-z and 0-9)",
                tickpack_sys::text::escape(name, tickpack_sys::text::SHORT),
                tickpack_sys::MAX_HOST_NAME
            ),
        ));
    }
    let dir = dir
        .clone()
        .unwrap_or_else(|| Path::new(RUN_ROOT).join(name));
    check_run_dir_flag(&dir)?;
    Ok(dir)
}

/// Exit 2 unless tickpack may use `dir` as a run dir: missing, empty and
/// ours, or marked as tickpack's (see `tickpack_host::supervisor::check_run_dir`).
pub fn check_run_dir_flag(dir: &Path) -> Result<(), Failure> {
    tickpack_host::supervisor::check_run_dir(dir)
        .map(|_| ())
        .map_err(|why| fail(Code::Config, format!("run dir (--run-dir): {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_down_refuse_a_name_that_is_not_one() {
        for name in ["../../x", "a/b", "H1", ""] {
            let e = run_dir(name, &None).unwrap_err();
            assert_eq!(e.code, Code::Config, "{name}");
        }
    }
}
