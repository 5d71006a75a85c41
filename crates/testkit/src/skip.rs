//! A test that needs a part from outside the repository (a program, a
//! manifest) and does not find it: skipped on a developer's machine, failed
//! under CI, which installs every part.

/// Says why `test` cannot run: under CI (`CI=true`) the test fails with
/// it; elsewhere it prints "skipped: TEST: WHY" and the caller returns.
pub fn skip_unless_ci(test: &str, why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: {why}");
    }
    eprintln!("skipped: {test}: {why}");
}
