//! Errors with the exit code `main` should return.

/// Documented exit codes (shown at the end of every `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Code {
    /// Something failed while running (an I/O error, an interrupted run).
    Runtime = 1,
    /// Bad flags or config: found before anything is started or created.
    Config = 2,
    /// Isolation (namespaces, cgroups, root) is unavailable.
    Isolation = 3,
    /// The measurement ran and QoS failed.
    QosFailed = 4,
    /// The target did not answer or refused (also: no Agones SDK server
    /// answered at start).
    Unreachable = 5,
    /// `players`: snapshots or commands were lost, or a player went without
    /// snapshots for an outage, against the schedule.
    Lost = 6,
    /// `bench`: the servers had nothing to do (no players, bots or load
    /// command, or their CPU below the idle floor): no density was found.
    Idle = 7,
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
