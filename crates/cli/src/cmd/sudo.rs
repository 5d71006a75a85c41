//! Under `sudo`, `bench` and `host up` give root up before they start
//! anything: the directories they write become the invoking user's, the
//! root processes' broker starts, and the command goes on as that user
//! ([`tickpack_root::privilege`]). Only the root processes (one per host,
//! `tickpack __root`) keep root; the supervisor, the players, the prober
//! and the report run as the user who typed the command.

use std::path::Path;

use crate::exit::{fail, Code, Failure};

/// Gives root up when `sudo` ran us: `run_dir` made a run dir of ours and
/// handed over, `out_dir` (made if missing) the user's.
pub fn give_up_root(run_dir: &Path, out_dir: Option<&Path>) -> Result<(), Failure> {
    // Only a run dir made in a directory of root's alone: elsewhere its
    // user removes it, and root leaves a directory its user may write to
    // alone.
    let roots_alone = run_dir.parent().is_some_and(|p| {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == 0 && m.mode() & 0o022 == 0)
    });
    give_up_root_removing(run_dir, out_dir, !run_dir.exists() && roots_alone)
}

/// [`give_up_root`]; `remove_empty`: the run dir is removed at the end
/// once empty (one tickpack made, in a directory only root may write).
pub fn give_up_root_removing(
    run_dir: &Path,
    out_dir: Option<&Path>,
    remove_empty: bool,
) -> Result<(), Failure> {
    let Some(user) = tickpack_root::privilege::sudo_user() else {
        return Ok(());
    };
    // The binary running now, not whatever its path names by the time
    // the broker starts a root process (a user's own build can be
    // replaced by its user; the running file cannot be written).
    let exe = Path::new("/proc/self/exe");
    // Lowered while root may (the supervisor keeps it); the root
    // processes started next inherit it too.
    let _ = std::fs::write(
        "/proc/self/oom_score_adj",
        format!("{}\n", tickpack_host::supervisor::OOM_SCORE_ADJ_SUPERVISOR),
    );
    if let Some(out) = out_dir {
        // Each directory made on the way is the user's, not only the last.
        let mut missing: Vec<&Path> = out
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .collect();
        missing.reverse();
        for dir in missing {
            std::fs::create_dir(dir)
                .and_then(|()| std::os::unix::fs::lchown(dir, Some(user.uid), Some(user.gid)))
                .map_err(|e| {
                    fail(
                        Code::Config,
                        format!(
                            "--out {}: cannot create {}: {e}",
                            out.display(),
                            dir.display()
                        ),
                    )
                })?;
        }
    }
    // Removed at the end, once empty, by the broker: the user may not
    // (its parent, `/run/tickpack`, is root's).
    tickpack_host::supervisor::hand_over_run_dir(run_dir, user)
        .map_err(|e| fail(Code::Config, format!("run dir {}: {e}", run_dir.display())))?;
    let remove_empty =
        remove_empty.then(|| std::fs::canonicalize(run_dir).unwrap_or(run_dir.into()));
    tickpack_root::privilege::give_up_root(exe, user, remove_empty.as_deref())
        .map_err(|e| fail(Code::Isolation, e))?;
    eprintln!(
        "tickpack: running as uid {} (sudo's user); each host's root process alone keeps root",
        user.uid
    );
    Ok(())
}
