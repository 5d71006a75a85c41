//! One module per subcommand.

pub mod bench;
pub mod demo;
pub mod flood;
pub mod host;
pub mod latency;
pub mod ping;
pub mod players;
pub mod server;
pub mod tco;

/// Parses `10s`, `500ms`, `2m` for clap.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 10s, 500ms, 2m)"))
}

/// Parses a socket address, accepting `localhost:PORT` too.
pub fn parse_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    match s.to_socket_addrs() {
        Ok(mut it) => it
            .next()
            .ok_or_else(|| format!("{s:?} resolves to no address")),
        Err(_) => Err(format!(
            "{s:?} is not an address of the form IP:PORT (e.g. 127.0.0.1:27015)"
        )),
    }
}

/// A CPU list such as `0`, `0-3` or `1,3` (a newtype so clap takes it as
/// one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// Parses a [`CpuList`].
pub fn parse_cpus(s: &str) -> Result<CpuList, String> {
    tickpack_net::cpu::parse_cpu_list(s)
        .map(CpuList)
        .map_err(|e| e.to_string())
}
