//! Errors with the exit code `main` should return.

/// Documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Code {
    Runtime = 1,
    Config = 2,
    Isolation = 3,
    QosFailed = 4,
    Unreachable = 5,
    /// `players`: snapshots or commands were lost, or a player went without
    /// snapshots for an outage, against the schedule.
    Lost = 6,
}

/// An error on its way out of `main`.
#[derive(Debug)]
pub struct Failure {
    pub code: Code,
    pub error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            code: Code::Runtime,
            error: e.into(),
        }
    }
}

/// Attaches an exit code to a result's error.
pub trait WithCode<T> {
    fn code(self, code: Code) -> Result<T, Failure>;
}

impl<T, E: Into<anyhow::Error>> WithCode<T> for Result<T, E> {
    fn code(self, code: Code) -> Result<T, Failure> {
        self.map_err(|e| Failure {
            code,
            error: e.into(),
        })
    }
}

/// A failure with a code and a message.
pub fn fail(code: Code, msg: impl std::fmt::Display) -> Failure {
    Failure {
        code,
        error: anyhow::anyhow!("{msg}"),
    }
}
