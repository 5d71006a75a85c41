//! A batch tenant: best-effort work the host runs beside its game servers
//! (`--batch CMD`, repeatable), and the checks of its command.
//!
//! The command is split on whitespace (no shell, no quoting); its program
//! is found on `PATH` when the host starts, so a typo is one line and exit
//! 2 before anything is created. As root it runs as uid and gid of its
//! host's uid block's base (instance N is the base + N, so no host shares
//! it) in the instance's sandbox, with no network at all, in its
//! own cgroup `tp<host>/tp<host>-batch` (so the host's clean-up, also after
//! a `kill -9`, removes it with the instances'), on the server CPUs; it
//! dies with the supervisor (parent-death signal). Its output goes to
//! `RUN_DIR/logs/batch-N.log`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The cgroup tree tickpack reserves for adopted batch work
/// (`--batch-cgroup tp-batch/NAME`): a host's own tree `tp<host>` holds its
/// instances and is removed with it, and a host name has no `-`, so no
/// host ever owns or removes this one.
pub const ADOPTED_BATCH_ROOT: &str = "tp-batch";

/// Checks a `--batch-cgroup` path: below [`ADOPTED_BATCH_ROOT`], plain
/// names only. Anything else (another host's instance cgroup, a system
/// service's) is refused: tickpack would tune its CPU and count it as
/// batch work. The error is one line.
pub fn check_adopted_cgroup(path: &Path) -> Result<(), String> {
    use std::path::Component;
    let parts: Vec<&std::ffi::OsStr> = path
        .components()
        .map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect::<Option<_>>()
        .unwrap_or_default();
    let plain = parts.len() == path.components().count()
        && parts.iter().all(|n| {
            n.to_str()
                .is_some_and(|s| !s.starts_with('.') && !s.contains(char::is_whitespace))
        });
    if plain && parts.len() >= 2 && parts[0] == ADOPTED_BATCH_ROOT {
        return Ok(());
    }
    Err(format!(
        "--batch-cgroup {:?}: must be a cgroup below tickpack's own tree for adopted batch work, {ADOPTED_BATCH_ROOT}/NAME (a relative path of plain names; never a host's tp<host>/ tree or a cgroup outside tickpack's)",
        path.display().to_string()
    ))
}

/// One batch command, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchSpec {
    /// As given.
    pub command: String,
    /// Split on whitespace; `argv[0]` resolved on `PATH`.
    pub argv: Vec<String>,
}

impl BatchSpec {
    /// Parses and checks `command`: not empty, its program found and
    /// executable. The error is one line.
    pub fn parse(command: &str) -> Result<BatchSpec, String> {
        let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        let Some(program) = words.first() else {
            return Err(
                "--batch: the command is empty (give e.g. --batch \"stress-ng --cpu 1\")".into(),
            );
        };
        let path = find_program(program, std::env::var_os("PATH").as_deref())
            .ok_or_else(|| format!("--batch {command:?}: program {program:?} not found (not on PATH, or not executable)"))?;
        let mut argv = words;
        argv[0] = path.display().to_string();
        Ok(BatchSpec {
            command: command.to_owned(),
            argv,
        })
    }
}

/// `program` itself when it has a `/`, else the first executable file of
/// that name in `path`.
pub fn find_program(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

/// One batch tenant's row in `host status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchStatus {
    pub command: String,
    pub pid: Option<u32>,
    /// running | restarting | failed | adopted.
    pub state: String,
    pub restarts: u32,
    pub last_exit: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_batch_command_is_refused_in_one_line() {
        for c in ["", "   "] {
            let e = BatchSpec::parse(c).unwrap_err();
            assert!(e.contains("empty") && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_batch_program_not_on_path_is_refused_in_one_line() {
        let e = BatchSpec::parse("tickpack-no-such-program --x").unwrap_err();
        assert!(e.contains("not found") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn batch_cgroup_outside_tickpacks_tree_is_refused() {
        for bad in [
            "tpother/tpother-1",
            "tph/tph-batch",
            "system.slice/sshd.service",
            "ci/runner",
            "tp-batch",
            "tp-batch/../tph/tph-1",
            "/tp-batch/runner",
            "tp-batch/.hidden",
            "",
        ] {
            let e = check_adopted_cgroup(Path::new(bad)).unwrap_err();
            assert!(
                e.contains("tp-batch/NAME") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
        for good in ["tp-batch/runner", "tp-batch/ci/job1"] {
            check_adopted_cgroup(Path::new(good)).unwrap();
        }
    }

    #[test]
    fn a_batch_program_is_resolved_on_path() {
        let p = find_program(
            "sh",
            Some(std::ffi::OsStr::new("/nonexistent:/bin:/usr/bin")),
        )
        .unwrap();
        assert!(p.ends_with("sh"));
        assert!(find_program("/bin/sh", None).is_some());
        assert!(find_program("/nonexistent/sh", None).is_none());
    }
}
