//! What a prober asks: one of tickpack's own query protocols
//! ([`Protocol`]: q3, a2s; sans-I/O sessions on the prober's sockets) or a
//! gamedig protocol ([`GamedigProtocol`]; asked through
//! `tickpack-gamedig-query`'s driver, a thread per call). Named `q3`,
//! `a2s` or `gamedig:NAME` on the command line and in results.

use tickpack_game::query::Protocol;
use tickpack_game::GamedigProtocol;

/// A prober's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeProtocol {
    Own(Protocol),
    Gamedig(GamedigProtocol),
}

impl ProbeProtocol {
    /// What one query is called in a summary.
    pub fn query_name(self) -> String {
        match self {
            ProbeProtocol::Own(Protocol::Q3) => "q3 getinfo".into(),
            ProbeProtocol::Own(Protocol::A2s) => "A2S_INFO".into(),
            ProbeProtocol::Gamedig(g) => format!("gamedig {g}"),
        }
    }
}

impl From<Protocol> for ProbeProtocol {
    fn from(p: Protocol) -> Self {
        ProbeProtocol::Own(p)
    }
}

impl std::fmt::Display for ProbeProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeProtocol::Own(p) => f.pad(p.as_str()),
            ProbeProtocol::Gamedig(g) => f.pad(&g.probe_name()),
        }
    }
}

impl std::str::FromStr for ProbeProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix("gamedig:") {
            Some(name) => name.parse().map(ProbeProtocol::Gamedig),
            None => s.parse().map(ProbeProtocol::Own).map_err(|_| {
                format!(
                    "unknown query protocol {:?} (expected q3, a2s or gamedig:NAME)",
                    s.chars().take(40).collect::<String>()
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_parse_from_the_names_results_record() {
        for s in ["q3", "a2s", "gamedig:unreal2", "gamedig:minecraft-java"] {
            assert_eq!(s.parse::<ProbeProtocol>().unwrap().to_string(), s);
        }
        assert!("gamespy"
            .parse::<ProbeProtocol>()
            .unwrap_err()
            .contains("gamedig:NAME"));
        assert!("gamedig:q3a"
            .parse::<ProbeProtocol>()
            .unwrap_err()
            .contains("unknown gamedig protocol"));
    }
}
