//! The root check of every test that needs root.

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
