//! The root check of every test that needs root: [`require_root`] fails
//! without it; [`root_or_skip`] skips, as [`crate::skip_unless_ci`] does.

/// Fails the test unless it runs as root, saying what needs root (`needs`,
/// e.g. "namespaces, cgroups, links") and how to run it. Tests that need
/// root run as root in CI; without root they fail, never pass silently.
pub fn require_root(needs: &str) {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(
        uid, 0,
        "this test needs root ({needs}); CI runs it as root, run it with sudo"
    );
}

/// Whether the test runs as root; if not, `test` is skipped (failed under
/// CI) with "needs root (network namespaces, veth links, addresses)", as
/// [`crate::skip_unless_ci`] does, and the caller returns.
pub fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    crate::skip_unless_ci(
        test,
        "needs root (network namespaces, veth links, addresses)",
    );
    false
}
