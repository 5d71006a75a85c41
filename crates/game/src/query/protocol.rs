//! The query protocols as one closed enum: [`Protocol`] (what a definition
//! file, a flag or a result names: `q3`, `a2s`), [`Query`] (one request
//! and the answer it expects); what a datagram means is [`Heard`]
//! (`heard.rs`, which the protocols' files return and this one never
//! imports back).
//!
//! Why an enum and not a trait: the set is closed. A game definition
//! chooses its protocol from a fixed list (`[query] protocol`, parsed by
//! `def.rs`), results store its name, and every user holds a value it
//! copies, compares and prints; nobody outside this crate adds a protocol.
//! An enum is `Copy + Eq`, needs no generics or boxes in the host, the
//! prober or the sidecar, and a new protocol is a compile error at every
//! `match` that must learn it. Each protocol still lives in its own file
//! (`q3.rs`, `a2s.rs`) with the same two functions, encode and decode; this
//! file only dispatches.

use tickpack_q3::query::Kind;

use super::heard::Heard;
use super::{a2s, q3};

/// A query protocol family, as definitions, flags and results name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// id Tech 3 (ioquake3, OpenArena) and DarkPlaces (Nexuiz):
    /// `getinfo` / `getstatus`.
    Q3,
    /// Valve Source: `A2S_INFO`, with its challenge.
    A2s,
}

impl Protocol {
    /// As typed on the command line and stored in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Q3 => "q3",
            Protocol::A2s => "a2s",
        }
    }

    /// The protocol's query for the counts (`getinfo`, `A2S_INFO`): what
    /// health checks and the prober ask.
    pub fn info(self) -> Query {
        match self {
            Protocol::Q3 => Query::Q3Info,
            Protocol::A2s => Query::A2sInfo,
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "q3" => Ok(Protocol::Q3),
            "a2s" => Ok(Protocol::A2s),
            other => Err(format!(
                "unknown query protocol {other:?} (expected q3 or a2s)"
            )),
        }
    }
}

/// One request and the answer it expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Query {
    /// `getinfo ID` → `infoResponse` (counts, no names).
    Q3Info,
    /// `getstatus ID` → `statusResponse` (the server's settings and one
    /// line per client: the roster).
    Q3Status,
    /// `A2S_INFO` → the info answer, after `S2C_CHALLENGE` if the server
    /// wants one.
    A2sInfo,
}

impl Query {
    pub fn protocol(self) -> Protocol {
        match self {
            Query::Q3Info | Query::Q3Status => Protocol::Q3,
            Query::A2sInfo => Protocol::A2s,
        }
    }

    /// Appends the request to `out`: `id` is what a q3 server echoes
    /// (A2S has no id), `challenge` the A2S challenge the server gave (q3
    /// has none).
    pub fn encode(self, id: &str, challenge: Option<u32>, out: &mut Vec<u8>) {
        match self {
            Query::Q3Info => q3::encode(Kind::Info, id, out),
            Query::Q3Status => q3::encode(Kind::Status, id, out),
            Query::A2sInfo => a2s::encode(challenge, out),
        }
    }

    /// What `datagram` means as the answer to this query. Never panics,
    /// whatever the bytes.
    pub fn decode(self, datagram: &[u8]) -> Heard {
        match self {
            Query::Q3Info => q3::decode(Kind::Info, datagram),
            Query::Q3Status => q3::decode(Kind::Status, datagram),
            Query::A2sInfo => a2s::decode(datagram),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_parse_from_their_names() {
        assert_eq!("q3".parse(), Ok(Protocol::Q3));
        assert_eq!("a2s".parse(), Ok(Protocol::A2s));
        assert!("quake"
            .parse::<Protocol>()
            .unwrap_err()
            .contains("q3 or a2s"));
        for p in [Protocol::Q3, Protocol::A2s] {
            assert_eq!(p.to_string().parse(), Ok(p));
            assert_eq!(p.info().protocol(), p);
        }
        assert_eq!(Query::Q3Status.protocol(), Protocol::Q3);
    }

    #[test]
    fn the_challenge_goes_to_a2s_and_the_id_to_q3() {
        let mut out = vec![];
        Query::Q3Info.encode("tp1", Some(5), &mut out);
        assert_eq!(out, b"\xff\xff\xff\xffgetinfo tp1");
        out.clear();
        Query::A2sInfo.encode("tp1", Some(5), &mut out);
        assert_eq!(&out[25..], &5u32.to_le_bytes());
    }
}
