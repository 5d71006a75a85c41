//! Where the SDK server is: [`resolve`] from a flag and the environment
//! Agones gives every game server container, sans-I/O (the environment is
//! passed in).
//!
//! Agones sets `AGONES_SDK_HTTP_PORT` (default 9358) and
//! `AGONES_SDK_GRPC_PORT` (default 9357) in the game server's container; the
//! SDK server listens on localhost. A flag overrides the variable.

use std::net::{Ipv4Addr, SocketAddr};

/// The SDK server's HTTP port when nothing says otherwise (Agones' default).
pub const DEFAULT_HTTP_PORT: u16 = 9358;
/// The variable with the HTTP port.
pub const ENV_HTTP_PORT: &str = "AGONES_SDK_HTTP_PORT";
/// The variable with the gRPC port (its presence says "under Agones").
pub const ENV_GRPC_PORT: &str = "AGONES_SDK_GRPC_PORT";

/// Where to reach the SDK server and what said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub addr: SocketAddr,
    /// E.g. `--agones-http-port`, `AGONES_SDK_HTTP_PORT`, `the default port`.
    pub from: String,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{} (from {})", self.addr, self.from)
    }
}

/// The endpoint, or `None` when Agones is neither asked for (`asked`, e.g.
/// `--agones`) nor implied (a port flag or either variable is set).
/// `flag` is the port flag's value and `flag_name` its name; `env` reads a
/// variable. A variable that is not a port is an error (bad config).
pub fn resolve(
    asked: bool,
    flag: Option<u16>,
    flag_name: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Endpoint>, String> {
    let at = |port: u16, from: &str| {
        Some(Endpoint {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            from: from.to_string(),
        })
    };
    if let Some(port) = flag {
        return Ok(at(port, flag_name));
    }
    if let Some(v) = env(ENV_HTTP_PORT) {
        return match v.trim().parse::<u16>() {
            Ok(p) if p > 0 => Ok(at(p, ENV_HTTP_PORT)),
            _ => Err(format!("{ENV_HTTP_PORT}={v:?} is not a port (1-65535)")),
        };
    }
    if asked || env(ENV_GRPC_PORT).is_some() {
        return Ok(at(
            DEFAULT_HTTP_PORT,
            &format!("the default port; {ENV_HTTP_PORT} is not set"),
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn without_a_flag_or_variable_agones_is_off() {
        assert_eq!(resolve(false, None, "--x", env(&[])), Ok(None));
    }

    #[test]
    fn the_flag_wins_over_the_variable_which_wins_over_the_default() {
        let e = resolve(false, Some(7), "--x", env(&[(ENV_HTTP_PORT, "8")]))
            .unwrap()
            .unwrap();
        assert_eq!((e.addr.port(), e.from.as_str()), (7, "--x"));
        let e = resolve(false, None, "--x", env(&[(ENV_HTTP_PORT, "8")]))
            .unwrap()
            .unwrap();
        assert_eq!((e.addr.port(), e.from.as_str()), (8, ENV_HTTP_PORT));
        let e = resolve(true, None, "--x", env(&[])).unwrap().unwrap();
        assert_eq!(e.addr, "127.0.0.1:9358".parse().unwrap());
        assert!(e.to_string().contains("default"), "{e}");
    }

    #[test]
    fn the_grpc_variable_alone_turns_agones_on_at_the_default_http_port() {
        let e = resolve(false, None, "--x", env(&[(ENV_GRPC_PORT, "9357")]))
            .unwrap()
            .unwrap();
        assert_eq!(e.addr.port(), DEFAULT_HTTP_PORT);
    }

    #[test]
    fn a_variable_that_is_not_a_port_is_refused() {
        for bad in ["", "x", "0", "70000"] {
            let err = resolve(false, None, "--x", env(&[(ENV_HTTP_PORT, bad)])).unwrap_err();
            assert!(err.contains(ENV_HTTP_PORT), "{err}");
        }
    }
}
