//! [`ServerError`]: why the server could not start or had to stop.

use std::net::SocketAddr;

use tickpack_net::NetError;

/// Why [`crate::run`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The server thread could not be pinned to the CPU asked for.
    #[error(transparent)]
    Pin(NetError),
    /// The game socket could not be opened (address in use, no such address).
    #[error(transparent)]
    Bind(NetError),
    /// The metrics endpoint could not listen on its address.
    #[error("cannot serve metrics on {addr}: {reason}")]
    Metrics { addr: SocketAddr, reason: String },
    /// The tick timer failed while running.
    #[error(transparent)]
    Timer(NetError),
}

impl ServerError {
    /// A problem with the flags given (as opposed to one while running).
    pub fn is_config(&self) -> bool {
        !matches!(self, ServerError::Timer(_))
    }
}
