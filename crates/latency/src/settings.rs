//! What to measure: the paths, sizes and modes, how long and how often, and
//! where the paths' addresses come from. [`Settings::validate`] checks all
//! of it before anything is created; [`schedule`] orders the measurements.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tickpack_host::netpath::{validate_host_name, AddrPlan, Ipv4Net, NetKind};

use crate::LatencyError;

/// Bytes every request and reply starts with: magic, stream, sequence.
pub const HEADER_LEN: usize = 16;
/// Largest fixed size accepted (the namespaced paths have a 1500 B MTU;
/// larger datagrams are fragmented, which is allowed but not the point).
pub const MAX_SIZE: usize = 8192;
/// Smallest game request (a player's command).
pub const GAME_REQUEST_MIN: usize = 40;
/// Largest game request.
pub const GAME_REQUEST_MAX: usize = 200;
/// Game response (a snapshot).
pub const GAME_RESPONSE: usize = 2000;
/// Most parallel streams (the veth plan of a `/24` holds 63 instances).
pub const MAX_STREAMS: u32 = 32;
/// The port the echo servers bind in every namespace: any free port does
/// (each namespace has its own), this one is clear of every shipped game's.
pub const ECHO_PORT: u16 = 27100;
/// The default address range: four `/24`s of the upper half of the RFC 2544
/// benchmarking range, clear of `tickpack host`'s default `198.18.0.0/16`.
pub const DEFAULT_RANGE: &str = "198.19.240.0/22";
/// The default host name prefix (`tp<name><letter>...`).
pub const DEFAULT_NAME: &str = "lt";

/// One isolation path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathName {
    /// 127.0.0.1 in the root namespace: the baseline.
    Native,
    /// A network namespace per echo server, reached through `kind`.
    Net(NetKind),
}

impl PathName {
    /// Every path, in the order of the reports.
    pub const ALL: [PathName; 5] = [
        PathName::Native,
        PathName::Net(NetKind::Veth),
        PathName::Net(NetKind::Bridge),
        PathName::Net(NetKind::Macvlan),
        PathName::Net(NetKind::Ipvlan),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PathName::Native => "native",
            PathName::Net(k) => k.as_str(),
        }
    }

    /// Position in [`PathName::ALL`].
    pub fn index(self) -> usize {
        PathName::ALL
            .iter()
            .position(|p| *p == self)
            .expect("ALL lists every path")
    }

    /// The letter appended to the host name for this path's names
    /// (`tp<name><letter>-<id>`); `None` for native, which creates nothing.
    pub fn letter(self) -> Option<char> {
        match self {
            PathName::Native => None,
            PathName::Net(NetKind::Veth) => Some('v'),
            PathName::Net(NetKind::Bridge) => Some('b'),
            PathName::Net(NetKind::Macvlan) => Some('m'),
            PathName::Net(NetKind::Ipvlan) => Some('i'),
        }
    }
}

impl fmt::Display for PathName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PathName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PathName::ALL
            .into_iter()
            .find(|p| p.as_str() == s.trim())
            .ok_or_else(|| {
                format!("unknown path {s:?}: expected native, veth, bridge, macvlan or ipvlan")
            })
    }
}

impl Serialize for PathName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PathName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// How both ends wait for a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Blocking `recv` on both ends: what a normal server sees (wake-ups
    /// included).
    Blocking,
    /// Non-blocking `recv` loops on both ends: the path's own cost.
    Busy,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::Blocking, Mode::Busy];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Blocking => "blocking",
            Mode::Busy => "busy",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s.trim())
            .ok_or_else(|| format!("unknown mode {s:?}: expected blocking or busy"))
    }
}

/// Request and response sizes of one measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SizeSpec {
    /// Requests and responses of this many bytes (UDP payload).
    Bytes(usize),
    /// Requests of 40-200 B (uniform), responses of 2000 B: a player's
    /// commands and the server's snapshots. Written as `"game"`.
    Game,
}

impl SizeSpec {
    /// The request size for a random draw `r` (any `u64`).
    pub fn request_len(self, r: u64) -> usize {
        match self {
            SizeSpec::Bytes(n) => n,
            SizeSpec::Game => {
                let span = (GAME_REQUEST_MAX - GAME_REQUEST_MIN + 1) as u64;
                GAME_REQUEST_MIN + (r % span) as usize
            }
        }
    }

    /// The response size, or `None` when the echo answers with the request.
    pub fn response_len(self) -> Option<usize> {
        match self {
            SizeSpec::Bytes(_) => None,
            SizeSpec::Game => Some(GAME_RESPONSE),
        }
    }

    /// The largest datagram either end sends.
    pub fn max_len(self) -> usize {
        match self {
            SizeSpec::Bytes(n) => n,
            SizeSpec::Game => GAME_RESPONSE.max(GAME_REQUEST_MAX),
        }
    }

    /// `64` or `game`.
    pub fn label(self) -> String {
        match self {
            SizeSpec::Bytes(n) => n.to_string(),
            SizeSpec::Game => "game".into(),
        }
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeSpec::Bytes(n) => write!(f, "{n} B"),
            SizeSpec::Game => f.write_str("game"),
        }
    }
}

impl FromStr for SizeSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "game" {
            return Ok(SizeSpec::Game);
        }
        let n: usize = s
            .parse()
            .map_err(|_| format!("size {s:?} is neither a number of bytes nor \"game\""))?;
        if !(HEADER_LEN..=MAX_SIZE).contains(&n) {
            return Err(format!(
                "size {n} is out of range: {HEADER_LEN}..={MAX_SIZE} bytes"
            ));
        }
        Ok(SizeSpec::Bytes(n))
    }
}

impl Serialize for SizeSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SizeSpec::Bytes(n) => s.serialize_u64(*n as u64),
            SizeSpec::Game => s.serialize_str("game"),
        }
    }
}

impl<'de> Deserialize<'de> for SizeSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(usize),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(SizeSpec::Bytes(n)),
            Raw::S(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Everything a run needs; build with [`Settings::default`] or
/// [`Settings::quick`], change fields, then [`Settings::validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Paths to measure; must include [`PathName::Native`] (the baseline).
    pub paths: Vec<PathName>,
    pub sizes: Vec<SizeSpec>,
    pub modes: Vec<Mode>,
    /// Parallel streams: echo servers (one per namespace) and client streams.
    pub streams: u32,
    /// Rounds over every (path, size, mode), in rotated order.
    pub rounds: u32,
    /// Measured time per (path, size, mode) and round.
    pub duration: Duration,
    /// Unmeasured time before each measurement.
    pub warmup: Duration,
    /// A request unanswered this long counts as lost.
    pub timeout: Duration,
    /// Host name prefix: path `p` is host `<name><letter>` (`ltv`, `ltb`,
    /// ...), so its names are `tp<name><letter>...`. 1-7 of `a-z0-9`.
    pub name: String,
    /// Split into `/24`s, one per namespaced path asked, in the order of
    /// [`PathName::ALL`] (all four: veth the first, bridge the second,
    /// macvlan the third, ipvlan the fourth). As wide as the paths asked
    /// need ([`Settings::range_prefix_needed`]): a `/24` for one path, a
    /// `/22` for three or four.
    pub range: Ipv4Net,
    /// The port the echo servers bind in each namespace.
    pub port: u16,
    /// CPU of the client threads (`None`: not pinned).
    pub client_cpu: Option<usize>,
    /// CPU of the echo threads (`None`: not pinned).
    pub echo_cpu: Option<usize>,
}

impl Default for Settings {
    /// All paths, 64/256/1024 B, both modes, 8 streams, 5 rounds of 1 s.
    fn default() -> Self {
        Settings {
            paths: PathName::ALL.to_vec(),
            sizes: vec![
                SizeSpec::Bytes(64),
                SizeSpec::Bytes(256),
                SizeSpec::Bytes(1024),
            ],
            modes: Mode::ALL.to_vec(),
            streams: 8,
            rounds: 5,
            duration: Duration::from_secs(1),
            warmup: Duration::from_millis(100),
            timeout: Duration::from_millis(200),
            name: DEFAULT_NAME.into(),
            range: DEFAULT_RANGE.parse().expect("static range"),
            port: ECHO_PORT,
            client_cpu: None,
            echo_cpu: None,
        }
    }
}

impl Settings {
    /// A first look: 1 round of 300 ms per measurement, 2 streams.
    pub fn quick() -> Self {
        Settings {
            streams: 2,
            rounds: 1,
            duration: Duration::from_millis(300),
            warmup: Duration::from_millis(50),
            ..Settings::default()
        }
    }

    /// Whether any path needs network namespaces (and so root).
    pub fn needs_namespaces(&self) -> bool {
        self.paths.iter().any(|p| *p != PathName::Native)
    }

    /// The host name of path `p`'s names, `None` for native.
    pub fn host_name(&self, p: PathName) -> Option<String> {
        p.letter().map(|l| format!("{}{l}", self.name))
    }

    /// The namespaced paths asked, in the order of [`PathName::ALL`]: the
    /// order their `/24`s take in [`Settings::range`].
    fn net_paths(&self) -> Vec<PathName> {
        PathName::ALL
            .into_iter()
            .filter(|p| *p != PathName::Native && self.paths.contains(p))
            .collect()
    }

    /// The longest prefix a range may have for the paths asked: one `/24`
    /// per namespaced path (`/24` for one, `/23` for two, `/22` for three
    /// or four; native needs none).
    pub fn range_prefix_needed(&self) -> u8 {
        let n = self.net_paths().len().max(1);
        24 - n.next_power_of_two().trailing_zeros() as u8
    }

    /// The `/24` of `kind` inside [`Settings::range`]: the next one for
    /// each path asked.
    pub fn plan(&self, kind: NetKind) -> Result<AddrPlan, LatencyError> {
        let slot = self
            .net_paths()
            .iter()
            .position(|p| *p == PathName::Net(kind))
            .ok_or_else(|| self.bad(format!("path {} was not asked for", PathName::Net(kind))))?
            as u32;
        let base = u32::from(self.range.addr()) + slot * 256;
        let net = Ipv4Net::new(base.into(), 24).map_err(|e| self.bad(format!("--range: {e}")))?;
        AddrPlan::new(net).map_err(|e| self.bad(format!("--range: {e}")))
    }

    fn bad(&self, msg: String) -> LatencyError {
        LatencyError::Config(msg)
    }

    /// Checks everything that can be checked without side effects.
    pub fn validate(&self) -> Result<(), LatencyError> {
        let bad = |m: String| Err(LatencyError::Config(m));
        if !self.paths.contains(&PathName::Native) {
            return bad("the paths must include native (the baseline)".into());
        }
        if let Some(p) = first_duplicate(&self.paths) {
            return bad(format!("--paths lists {p} twice"));
        }
        if self.sizes.is_empty() {
            return bad("--sizes is empty".into());
        }
        if let Some(s) = first_duplicate(&self.sizes) {
            return bad(format!("--sizes lists {} twice", s.label()));
        }
        for s in &self.sizes {
            if let SizeSpec::Bytes(n) = s {
                if !(HEADER_LEN..=MAX_SIZE).contains(n) {
                    return bad(format!(
                        "size {n} is out of range: {HEADER_LEN}..={MAX_SIZE} bytes"
                    ));
                }
            }
        }
        if self.modes.is_empty() {
            return bad("--modes is empty".into());
        }
        if let Some(m) = first_duplicate(&self.modes) {
            return bad(format!("--modes lists {m} twice"));
        }
        if !(1..=MAX_STREAMS).contains(&self.streams) {
            return bad(format!("--streams must be 1..={MAX_STREAMS}"));
        }
        if !(1..=1000).contains(&self.rounds) {
            return bad("--rounds must be 1..=1000".into());
        }
        if self.duration < Duration::from_millis(10) || self.duration > Duration::from_secs(600) {
            return bad("--duration must be 10ms..=10m".into());
        }
        if self.warmup > Duration::from_secs(60) {
            return bad("--warmup must be at most 60s".into());
        }
        if self.timeout < Duration::from_millis(1) || self.timeout > Duration::from_secs(10) {
            return bad("--timeout must be 1ms..=10s".into());
        }
        if self.name.len() > 7 {
            return bad(format!(
                "--name {:?} is too long: at most 7 characters (a letter per path is appended)",
                self.name
            ));
        }
        validate_host_name(&format!("{}v", self.name))
            .map_err(|e| LatencyError::Config(format!("--name: {e}")))?;
        let need = self.range_prefix_needed();
        if self.needs_namespaces() && self.range.prefix() > need {
            let n = self.net_paths().len();
            return bad(format!(
                "--range {} is too narrow: {n} namespaced path{} need{} a /{need} or wider (one /24 per path)",
                self.range,
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" },
            ));
        }
        for p in &self.paths {
            if let PathName::Net(k) = p {
                // As `host up` and `bench` do: only space set aside for
                // local use is routed to namespaces.
                self.plan(*k)?
                    .check_local_use()
                    .map_err(|e| self.bad(format!("--range: {e}")))?;
            }
        }
        if self.port == 0 {
            return bad("--port must not be 0".into());
        }
        Ok(())
    }

    /// Rough wall time of the measurements (not of building the paths).
    pub fn estimated_time(&self) -> Duration {
        let n = self.paths.len() * self.sizes.len() * self.modes.len() * self.rounds as usize;
        (self.duration + self.warmup) * n as u32
    }
}

fn first_duplicate<T: PartialEq>(v: &[T]) -> Option<&T> {
    v.iter()
        .enumerate()
        .find(|(i, x)| v[..*i].contains(x))
        .map(|(_, x)| x)
}

/// One measurement of the schedule: indexes into the settings' lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub round: u32,
    pub path: usize,
    pub size: usize,
    pub mode: usize,
}

/// Every (path, size, mode) once per round. Round `r` rotates the sizes,
/// the paths and the modes by `r`, and walks the paths backwards on odd
/// rounds, so no path is always measured first, after the same neighbour,
/// or at the same point of a round.
pub fn schedule(rounds: u32, paths: usize, sizes: usize, modes: usize) -> Vec<Slot> {
    let mut out = Vec::with_capacity(rounds as usize * paths * sizes * modes);
    for round in 0..rounds {
        let r = round as usize;
        for si in 0..sizes {
            let size = (si + r) % sizes;
            for pi in 0..paths {
                let pi = if round % 2 == 1 { paths - 1 - pi } else { pi };
                let path = (pi + r) % paths;
                for mi in 0..modes {
                    let mode = (mi + r + si) % modes;
                    out.push(Slot {
                        round,
                        path,
                        size,
                        mode,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sizes_and_modes_parse_and_print_as_flags_write_them() {
        for p in PathName::ALL {
            assert_eq!(p.to_string().parse::<PathName>().unwrap(), p);
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{p}\""));
        }
        assert!("vlan".parse::<PathName>().unwrap_err().contains("macvlan"));
        assert_eq!("64".parse::<SizeSpec>().unwrap(), SizeSpec::Bytes(64));
        assert_eq!("game".parse::<SizeSpec>().unwrap(), SizeSpec::Game);
        assert!("8".parse::<SizeSpec>().unwrap_err().contains("16..=8192"));
        assert!("big".parse::<SizeSpec>().is_err());
        assert_eq!(serde_json::to_string(&SizeSpec::Bytes(64)).unwrap(), "64");
        assert_eq!(serde_json::to_string(&SizeSpec::Game).unwrap(), "\"game\"");
        let back: Vec<SizeSpec> = serde_json::from_str("[64, \"game\"]").unwrap();
        assert_eq!(back, [SizeSpec::Bytes(64), SizeSpec::Game]);
        assert_eq!("busy".parse::<Mode>().unwrap(), Mode::Busy);
    }

    #[test]
    fn game_requests_span_40_to_200_bytes_and_answers_are_2000() {
        let lens: Vec<usize> = (0..1000u64)
            .map(|r| SizeSpec::Game.request_len(r))
            .collect();
        assert_eq!(*lens.iter().min().unwrap(), 40);
        assert_eq!(*lens.iter().max().unwrap(), 200);
        assert_eq!(SizeSpec::Game.response_len(), Some(2000));
        assert_eq!(SizeSpec::Bytes(64).request_len(12345), 64);
        assert_eq!(SizeSpec::Bytes(64).response_len(), None);
    }

    #[test]
    fn each_path_gets_its_own_slash_24() {
        let s = Settings::default();
        s.validate().unwrap();
        let r = |k| s.plan(k).unwrap().range().to_string();
        assert_eq!(r(NetKind::Veth), "198.19.240.0/24");
        assert_eq!(r(NetKind::Bridge), "198.19.241.0/24");
        assert_eq!(r(NetKind::Macvlan), "198.19.242.0/24");
        assert_eq!(r(NetKind::Ipvlan), "198.19.243.0/24");
        assert_eq!(s.host_name(PathName::Net(NetKind::Bridge)).unwrap(), "ltb");
        assert_eq!(s.host_name(PathName::Native), None);
    }

    /// A bug: `--range` had to be a /22 even for one path. The need is
    /// sized by the paths asked: a /24 per namespaced path.
    #[test]
    fn one_path_needs_only_a_slash_24() {
        let mut s = Settings::quick();
        s.paths = vec![PathName::Native, PathName::Net(NetKind::Macvlan)];
        s.range = "10.9.8.0/24".parse().unwrap();
        s.validate().unwrap();
        assert_eq!(s.range_prefix_needed(), 24);
        let plan = s.plan(NetKind::Macvlan).unwrap();
        assert_eq!(plan.range().to_string(), "10.9.8.0/24");
        assert!(s.plan(NetKind::Veth).is_err(), "not asked: no /24");
        // Two paths: a /23, in the order of ALL whatever the order asked.
        s.paths = vec![
            PathName::Native,
            PathName::Net(NetKind::Macvlan),
            PathName::Net(NetKind::Veth),
        ];
        s.range = "10.9.8.0/23".parse().unwrap();
        s.validate().unwrap();
        assert_eq!(
            s.plan(NetKind::Veth).unwrap().range().to_string(),
            "10.9.8.0/24"
        );
        assert_eq!(
            s.plan(NetKind::Macvlan).unwrap().range().to_string(),
            "10.9.9.0/24"
        );
        // Native alone creates nothing: any range will do.
        s.paths = vec![PathName::Native];
        s.range = "10.9.8.0/30".parse().unwrap();
        s.validate().unwrap();
        assert_eq!(Settings::default().range_prefix_needed(), 22);
    }

    #[test]
    fn bad_settings_are_refused_naming_the_flag() {
        let check = |f: &dyn Fn(&mut Settings), word: &str| {
            let mut s = Settings::quick();
            f(&mut s);
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains(word), "{e:?} should mention {word:?}");
        };
        check(&|s| s.paths.retain(|p| *p != PathName::Native), "native");
        check(&|s| s.paths.push(PathName::Native), "twice");
        check(&|s| s.sizes.clear(), "--sizes");
        check(&|s| s.sizes.push(SizeSpec::Bytes(9000)), "out of range");
        check(&|s| s.streams = 0, "--streams");
        check(&|s| s.streams = 33, "--streams");
        check(&|s| s.rounds = 0, "--rounds");
        check(&|s| s.duration = Duration::from_millis(1), "--duration");
        check(&|s| s.name = "Lt".into(), "--name");
        check(&|s| s.name = "abcdefgh".into(), "--name");
        check(&|s| s.range = "198.19.240.0/24".parse().unwrap(), "/22");
        check(
            &|s| {
                s.paths = vec![
                    PathName::Native,
                    PathName::Net(NetKind::Veth),
                    PathName::Net(NetKind::Bridge),
                ];
                s.range = "198.19.240.0/24".parse().unwrap();
            },
            "2 namespaced paths need a /23",
        );
        check(&|s| s.range = "127.0.0.0/16".parse().unwrap(), "--range");
    }

    /// Issue 30, finding 5: `latency --range` took a public range (routed
    /// to its namespaces, hiding real hosts) that `host up` and `bench` refuse.
    #[test]
    fn latency_took_a_range_outside_local_use() {
        let mut s = Settings::quick();
        s.paths = vec![PathName::Native, PathName::Net(NetKind::Veth)];
        s.range = "8.8.8.0/24".parse().unwrap();
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("--range") && e.contains("private"), "{e}");
        s.range = "10.9.8.0/24".parse().unwrap();
        s.validate().unwrap();
    }

    #[test]
    fn every_combination_appears_once_per_round_in_rotated_order() {
        let (rounds, paths, sizes, modes) = (4, 4, 3, 2);
        let slots = schedule(rounds, paths, sizes, modes);
        assert_eq!(slots.len(), 4 * 4 * 3 * 2);
        for r in 0..rounds {
            let mut seen: Vec<(usize, usize, usize)> = slots
                .iter()
                .filter(|s| s.round == r)
                .map(|s| (s.path, s.size, s.mode))
                .collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), paths * sizes * modes, "round {r}");
        }
        let first: Vec<(usize, usize)> = (0..rounds)
            .map(|r| {
                let s = slots.iter().find(|s| s.round == r).unwrap();
                (s.path, s.size)
            })
            .collect();
        let mut distinct = first.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), first.len(), "{first:?}");
        // Rounds are in order, so a stopped run has whole early rounds.
        assert!(slots.windows(2).all(|w| w[0].round <= w[1].round));
    }
}
