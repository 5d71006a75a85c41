//! The exit codes of the host's errors: a configuration, isolation or
//! runtime failure, or a host that is not running.

use tickpack_host::status::ControlError;
use tickpack_host::supervisor::HostError;

use crate::exit::{Code, Failure};

/// The exit code of a supervisor's error.
pub fn host_failure(e: HostError) -> Failure {
    let code = match e {
        HostError::Config(_) => Code::Config,
        HostError::Isolation(_) | HostError::Spawn { .. } => Code::Isolation,
        HostError::AlreadyRunning { .. } | HostError::RunDir(_) => Code::Config,
        HostError::Io { .. } => Code::Runtime,
    };
    Failure {
        code,
        error: e.into(),
    }
}

/// The exit code of a control socket's error.
pub fn control_failure(e: ControlError) -> Failure {
    let code = match e {
        ControlError::NotRunning { .. } => Code::Unreachable,
        _ => Code::Runtime,
    };
    Failure {
        code,
        error: e.into(),
    }
}
