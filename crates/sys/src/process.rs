//! Whether a recorded process is still there, and still ours: the checks
//! made before a record's PID is believed (a supervisor's, a uid block
//! holder's).

use rustix::process::{test_kill_process, Pid};

/// Whether a process `pid` exists (signal 0: existence and permission).
pub fn pid_alive(pid: u32) -> bool {
    Pid::from_raw(pid as i32).is_some_and(|p| test_kill_process(p).is_ok())
}

/// Whether process `pid`'s command line names tickpack (a PID taken by
/// another program since it was recorded does not).
pub fn is_tickpack(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("tickpack"))
        .unwrap_or(false)
}
