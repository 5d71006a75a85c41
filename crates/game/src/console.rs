//! A running server's console, reached from the host, sans-I/O: what a
//! definition's `[rcon]` says ([`RconDef`]), what a launch spec carries of
//! it ([`Console`]: the protocol and the map change with its rotation),
//! the secret made for every start ([`Password`]) and one command's round
//! trip ([`Exchange`], on the caller's clock).
//!
//! Order (the host's): at every start a new [`Password`] fills
//! `{rcon_password}` where the definition put it (a config file, the
//! command or the environment: the server's own, never recorded); to
//! change the map, [`MapChange::nth`] gives the k-th change's map and
//! command, [`Password::request`] the datagram, sent to the server's game
//! port; [`Exchange::new`] at the send, [`Exchange::handle`] for every
//! datagram the server sends back, [`Exchange::poll`] until it gives the
//! [`Outcome`].
//!
//! What the server answers is not trusted: an [`Exchange`] counts at most
//! [`MAX_REPLY_DATAGRAMS`] answer datagrams and keeps the first
//! [`MAX_REPLY_TEXT`] bytes of their text, as text to be escaped by
//! whoever prints it. The wire format is `tickpack_q3::rcon`'s.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tickpack_q3::rcon;

/// The placeholder the host fills with an instance's rcon password.
pub const PASSWORD_PLACEHOLDER: &str = "rcon_password";

/// The placeholder of the map a map change goes to.
pub const NEXT_MAP: &str = "next_map";

/// No answer by this long after the send: unanswered.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// This long after the last answer datagram without another: the answer
/// is whole (ioquake3 sends the last one when the command ends; a level
/// load prints in bursts, its pieces less than this apart).
pub const REPLY_QUIET: Duration = Duration::from_secs(2);

/// The most answer datagrams one command's answer is read to.
pub const MAX_REPLY_DATAGRAMS: u32 = 256;

/// The most bytes of an answer's text kept.
pub const MAX_REPLY_TEXT: usize = 4096;

/// How the host reaches a server's console.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RconProtocol {
    /// Quake III rcon over UDP to the game port (ioquake3; DarkPlaces
    /// with `rcon_secure 0`): `tickpack_q3::rcon`.
    Q3,
}

/// `[rcon]` in a definition: how the host tells a running server
/// something (today: to change its map).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RconDef {
    pub protocol: RconProtocol,
    /// The console command that changes the map, `{next_map}` where the
    /// map goes, e.g. `map {next_map}`.
    pub map_change: String,
    /// The list variable whose items are the maps, in order; the server
    /// starts on the first, the k-th change goes to item k + 1 (and round).
    pub rotation: String,
}

impl RconDef {
    /// Refuses a map change command that is not one command of printable
    /// ASCII or names a placeholder other than `{next_map}`.
    pub fn check_map_change(&self) -> Result<(), String> {
        crate::names::check_placeholders(&self.map_change, &[NEXT_MAP])?;
        // The longest map a run may set, where `{next_map}` stands.
        let longest = "m".repeat(crate::names::MAX_VALUE_LEN);
        let command = self.map_change.replace("{next_map}", &longest);
        rcon::check_command(&command).map_err(|e| e.to_string())
    }
}

/// What a launch spec carries of a game's console: the protocol and the
/// map change, the run's rotation filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Console {
    pub protocol: RconProtocol,
    pub map_change: MapChange,
}

/// A map change: the command and the rotation's maps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapChange {
    /// The command, `{next_map}` where the map goes.
    pub command: String,
    /// The maps in order, at least one; the server starts on the first.
    pub maps: Vec<String>,
}

impl MapChange {
    /// The map change from `def` with the rotation's items `maps` (the
    /// run's value of its list variable).
    pub fn new(def: &RconDef, maps: &str) -> Result<MapChange, String> {
        let maps: Vec<String> = maps.split(',').map(str::to_string).collect();
        if maps.iter().any(String::is_empty) {
            return Err(format!(
                "rcon: the rotation {} = {:?} has an empty item",
                def.rotation,
                maps.join(",")
            ));
        }
        Ok(MapChange {
            command: def.map_change.clone(),
            maps,
        })
    }

    /// The `k`-th map change since the server started (1-based): the map
    /// it goes to (the rotation's item k + 1, round) and the command.
    pub fn nth(&self, k: u32) -> (String, String) {
        let n = self.maps.len().max(1);
        let map = self.maps.get(k as usize % n).cloned().unwrap_or_default();
        let command = self.command.replace("{next_map}", &map);
        (map, command)
    }
}

/// An instance's rcon password: 32 hex digits from 16 random bytes, new at
/// every start. Never printed (`{:?}` hides it).
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// The password of 16 bytes from the OS's random source.
    pub fn from_random(bytes: [u8; 16]) -> Password {
        Password(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The text the server gets where `{rcon_password}` stands.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The request datagram running `command`.
    pub fn request(&self, command: &str) -> Result<Vec<u8>, String> {
        rcon::request(&self.0, command).map_err(|e| e.to_string())
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(hidden)")
    }
}

/// How a command's answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// The server answered, and stopped answering for [`REPLY_QUIET`].
    Answered,
    /// ioquake3 refused it (a wrong password, or none set).
    Refused,
    /// Nothing within [`REPLY_TIMEOUT`] (DarkPlaces does not answer a
    /// wrong password or a plain request under `rcon_secure`; ioquake3
    /// drops requests over its rate limit).
    Unanswered,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Answered => "answered",
            Answer::Refused => "refused",
            Answer::Unanswered => "unanswered",
        }
    }
}

/// What one command got back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub answer: Answer,
    /// Answer datagrams counted (at most [`MAX_REPLY_DATAGRAMS`]).
    pub datagrams: u32,
    /// Bytes of answer text in them.
    pub bytes: u64,
    /// Milliseconds from the send to the first and the last answer.
    pub first_ms: Option<f64>,
    pub last_ms: Option<f64>,
    /// The answer's text as the server sent it: its first
    /// [`MAX_REPLY_TEXT`] bytes, invalid UTF-8 replaced. Foreign text:
    /// escape it before printing.
    pub text: String,
    /// More text came than was kept.
    pub text_cut: bool,
}

/// One command's round trip on the caller's clock: the answers read,
/// bounded, and when it is over.
#[derive(Debug, Clone)]
pub struct Exchange {
    sent_at: Duration,
    datagrams: u32,
    bytes: u64,
    text: Vec<u8>,
    text_cut: bool,
    first: Option<Duration>,
    last: Option<Duration>,
    refused: bool,
}

impl Exchange {
    /// The command was sent at `sent_at`.
    pub fn new(sent_at: Duration) -> Exchange {
        Exchange {
            sent_at,
            datagrams: 0,
            bytes: 0,
            text: Vec::new(),
            text_cut: false,
            first: None,
            last: None,
            refused: false,
        }
    }

    /// A datagram from the server, received at `at`: true if it is an
    /// answer (counted, its text kept up to the bound); anything else, or
    /// anything past [`MAX_REPLY_DATAGRAMS`], is ignored.
    pub fn handle(&mut self, at: Duration, datagram: &[u8]) -> bool {
        let Some(text) = rcon::reply_text(datagram) else {
            return false;
        };
        if self.datagrams >= MAX_REPLY_DATAGRAMS {
            return false;
        }
        if self.datagrams == 0 && rcon::is_refusal(text) {
            self.refused = true;
        }
        self.datagrams += 1;
        self.bytes += text.len() as u64;
        let room = MAX_REPLY_TEXT - self.text.len();
        self.text.extend_from_slice(&text[..text.len().min(room)]);
        self.text_cut |= text.len() > room;
        let at = at.max(self.sent_at);
        self.first.get_or_insert(at);
        self.last = Some(at);
        true
    }

    /// The outcome once it is known at `now`: a refusal at once; an
    /// answer [`REPLY_QUIET`] after its last datagram (at once when
    /// [`MAX_REPLY_DATAGRAMS`] came); no answer at [`REPLY_TIMEOUT`].
    pub fn poll(&self, now: Duration) -> Option<Outcome> {
        let answer = if self.refused {
            Answer::Refused
        } else if let Some(last) = self.last {
            if now < last + REPLY_QUIET && self.datagrams < MAX_REPLY_DATAGRAMS {
                return None;
            }
            Answer::Answered
        } else if now >= self.sent_at + REPLY_TIMEOUT {
            Answer::Unanswered
        } else {
            return None;
        };
        let ms = |t: Option<Duration>| t.map(|t| (t - self.sent_at).as_secs_f64() * 1e3);
        Some(Outcome {
            answer,
            datagrams: self.datagrams,
            bytes: self.bytes,
            first_ms: ms(self.first),
            last_ms: ms(self.last),
            text: String::from_utf8_lossy(&self.text).into_owned(),
            text_cut: self.text_cut,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn print(text: &str) -> Vec<u8> {
        tickpack_q3::oob::encode(&format!("print\n{text}"))
    }

    fn oa() -> RconDef {
        RconDef {
            protocol: RconProtocol::Q3,
            map_change: "map {next_map}".into(),
            rotation: "map".into(),
        }
    }

    #[test]
    fn the_kth_change_goes_to_the_next_map_of_the_rotation_and_round() {
        let m = MapChange::new(&oa(), "oa_dm1,oa_dm4,oa_dm5").unwrap();
        let maps: Vec<String> = (1..=4).map(|k| m.nth(k).0).collect();
        assert_eq!(maps, ["oa_dm4", "oa_dm5", "oa_dm1", "oa_dm4"]);
        assert_eq!(m.nth(1).1, "map oa_dm4");
        let one = MapChange::new(&oa(), "ruiner").unwrap();
        assert_eq!(one.nth(1), ("ruiner".into(), "map ruiner".into()));
        assert!(MapChange::new(&oa(), "a,,b").is_err());
    }

    #[test]
    fn a_map_change_command_is_one_printable_command_with_only_next_map() {
        oa().check_map_change().unwrap();
        for bad in ["map {map}", "map {next_map}; quit", "map\t{next_map}", ""] {
            let def = RconDef {
                map_change: bad.into(),
                ..oa()
            };
            assert!(def.check_map_change().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_password_is_32_hex_digits_and_never_printed() {
        let p = Password::from_random([0xab; 16]);
        assert_eq!(p.as_str(), "ab".repeat(16));
        assert_eq!(format!("{p:?}"), "Password(hidden)");
        assert_eq!(
            p.request("map x").unwrap(),
            [
                b"\xff\xff\xff\xffrcon ".as_slice(),
                p.as_str().as_bytes(),
                b" map x"
            ]
            .concat()
        );
        assert_ne!(Password::from_random([1; 16]), p);
    }

    #[test]
    fn an_answer_is_whole_when_the_server_went_quiet_after_it() {
        let mut x = Exchange::new(ms(1000));
        assert_eq!(x.poll(ms(1050)), None);
        assert!(x.handle(ms(1080), &print("==== ShutdownGame ====\n")));
        assert!(!x.handle(ms(1081), b"\xff\xff\xff\xffinfoResponse\n"));
        assert!(x.handle(ms(1105), &print("InitGame: \\mapname\\oa_dm4\n")));
        assert_eq!(x.poll(ms(1105) + REPLY_QUIET - ms(1)), None);
        let o = x.poll(ms(1105) + REPLY_QUIET).unwrap();
        assert_eq!(o.answer, Answer::Answered);
        assert_eq!(o.datagrams, 2);
        assert_eq!(o.first_ms, Some(80.0));
        assert_eq!(o.last_ms, Some(105.0));
        assert!(o.text.contains("mapname\\oa_dm4"), "{}", o.text);
        assert!(!o.text_cut);
    }

    #[test]
    fn a_refusal_ends_it_at_once_and_silence_at_the_timeout() {
        let mut x = Exchange::new(ms(0));
        x.handle(ms(3), &print("Bad rconpassword.\n"));
        assert_eq!(x.poll(ms(3)).unwrap().answer, Answer::Refused);
        let x = Exchange::new(ms(0));
        assert_eq!(x.poll(REPLY_TIMEOUT - ms(1)), None);
        let o = x.poll(REPLY_TIMEOUT).unwrap();
        assert_eq!(o.answer, Answer::Unanswered);
        assert_eq!((o.datagrams, o.first_ms), (0, None));
    }

    #[test]
    fn a_flood_of_answers_is_counted_to_its_bound_and_its_text_cut() {
        let mut x = Exchange::new(ms(0));
        let big = print(&"x".repeat(1000));
        for k in 0..MAX_REPLY_DATAGRAMS + 50 {
            x.handle(ms(1 + u64::from(k)), &big);
        }
        // Over at once: no more is read.
        let o = x.poll(ms(1 + u64::from(MAX_REPLY_DATAGRAMS))).unwrap();
        assert_eq!(o.answer, Answer::Answered);
        assert_eq!(o.datagrams, MAX_REPLY_DATAGRAMS);
        assert_eq!(o.text.len(), MAX_REPLY_TEXT);
        assert!(o.text_cut);
        // Invalid UTF-8 and control bytes are kept as text, not trusted.
        let mut x = Exchange::new(ms(0));
        x.handle(ms(1), b"\xff\xff\xff\xffn\xc3\x28\x1b[2J");
        let o = x.poll(ms(1) + REPLY_QUIET).unwrap();
        assert_eq!(o.text, "\u{fffd}(\u{1b}[2J");
    }

    proptest::proptest! {
        #[test]
        fn any_datagrams_end_in_an_outcome_within_its_bounds(
            ds in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1500), 0..40)
        ) {
            let mut x = Exchange::new(ms(5));
            let mut answers = 0;
            for (k, d) in ds.iter().enumerate() {
                answers += u32::from(x.handle(ms(k as u64), d));
            }
            // Over by the time the server went quiet or never answered.
            let o = x.poll(ms(40) + REPLY_TIMEOUT).unwrap();
            proptest::prop_assert_eq!(o.datagrams, answers);
            proptest::prop_assert!(o.text.chars().count() <= MAX_REPLY_TEXT);
            proptest::prop_assert_eq!(o.answer == Answer::Unanswered, answers == 0);
            proptest::prop_assert!(o.first_ms.unwrap_or(0.0) >= 0.0);
        }
    }
}
