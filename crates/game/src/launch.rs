//! The launch contract: how the host starts one game server.
//!
//! A [`ServerSpec`] is the command line of an instance as typed words: text
//! and per-instance values ([`Piece`]: address, port, id, directory, the
//! tickpack binary), plus how the host checks that the server is alive
//! ([`Health`]). A host file's `command = "..."` is its text face
//! ([`ServerSpec::parse`] / [`ServerSpec::template`], one grammar both ways).
//!
//! The reference server's options are typed ([`ReferenceServer`]) and build
//! its spec; `tickpack server`'s clap definition converts to and from the
//! same options (crates/cli/src/cmd/server.rs, with a test that round-trips
//! them through clap), so a renamed flag fails a test or the build, not a
//! benchmark at run time. A game nobody here wrote is another producer of a
//! [`ServerSpec`] (its program, its flags, its health check, and with
//! `[rcon]` its [`Console`], whose per-start password the host fills in
//! where `{rcon_password}` stands).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tickpack_wire::TickRate;

pub use crate::check::{HealthTiming, Ready};
pub use crate::console::{Console, Password};

/// Why a launch spec cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error("{0}")]
    Invalid(String),
}

/// How the supervisor checks that an instance is alive beyond its PID.
/// Spelled `tickpack`, `q3`, `a2s` and `none` in host files, flags and
/// records. The game query protocols (`q3`, `a2s`) also give the status
/// the server's map and players and each query's round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Health {
    /// Ask for stats over the tickpack protocol once a second (the
    /// reference server; what a spec recorded without a check had).
    #[default]
    #[serde(rename = "tickpack")]
    TickpackStats,
    /// The Quake 3 query: `getinfo` every 2 s, read `infoResponse`
    /// (OpenArena, ioquake3 and other Quake 3 engine servers).
    #[serde(rename = "q3")]
    Q3,
    /// Valve's `A2S_INFO` (with its challenge) every 2 s (Source servers,
    /// and the reference server, which answers it too).
    #[serde(rename = "a2s")]
    A2s,
    /// Only watch the process.
    #[serde(rename = "none")]
    None,
}

impl Health {
    /// The name host files, flags and records use.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::TickpackStats => "tickpack",
            Health::Q3 => "q3",
            Health::A2s => "a2s",
            Health::None => "none",
        }
    }

    /// Every check, in the order messages list them.
    pub const ALL: [Health; 4] = [Health::TickpackStats, Health::Q3, Health::A2s, Health::None];

    /// Whether the check is a game's query protocol (`q3`, `a2s`): asked
    /// every 2 s (servers rate-limit queries), round trips recorded.
    pub fn is_query(self) -> bool {
        self.query().is_some()
    }

    /// How often the check asks and how many unanswered checks in a row
    /// it allows, unless a definition says otherwise: `tickpack` every
    /// 1 s, `unresponsive` at the first unanswered, killed at the 4th
    /// (about 2 s and 5 s after the last answer); `q3` and `a2s` every
    /// 2 s, `unresponsive` at the 2nd (one lost reply tolerated, about
    /// 6 s), killed at the 4th (about 10 s).
    pub fn default_timing(self) -> HealthTiming {
        let (interval_s, unresponsive_after) = if self.is_query() { (2.0, 2) } else { (1.0, 1) };
        HealthTiming {
            interval_s,
            unresponsive_after,
            kill_after: 4,
        }
    }

    /// The game query protocol a query check asks ([`crate::query`]);
    /// `None` for the others.
    pub fn query(self) -> Option<crate::query::Protocol> {
        match self {
            Health::Q3 => Some(crate::query::Protocol::Q3),
            Health::A2s => Some(crate::query::Protocol::A2s),
            Health::TickpackStats | Health::None => None,
        }
    }
}

impl std::fmt::Display for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Health {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Health::ALL
            .into_iter()
            .find(|h| h.as_str() == s)
            .ok_or_else(|| {
                format!("unknown health check {s:?} (expected tickpack, q3, a2s or none)")
            })
    }
}

/// One part of an argument word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    /// `{ip}`: the instance's address.
    Ip,
    /// `{port}`: the port the instance binds.
    Port,
    /// `{id}`: the instance number, 1-based.
    Id,
    /// `{dir}`: the instance's own working directory.
    Dir,
    /// `{tickpack}`: this tickpack binary.
    Tickpack,
    /// `{rcon_password}`: the instance's rcon password, new at every
    /// start (only in a spec with a [`Console`]; empty where no host
    /// makes one, which leaves the server's rcon off).
    RconPassword,
}

impl Piece {
    const PLACEHOLDERS: [(&'static str, Piece); 6] = [
        ("{ip}", Piece::Ip),
        ("{port}", Piece::Port),
        ("{id}", Piece::Id),
        ("{dir}", Piece::Dir),
        ("{tickpack}", Piece::Tickpack),
        ("{rcon_password}", Piece::RconPassword),
    ];
}

/// One argument (argv word), e.g. `{ip}:{port}` is `[Ip, Text(":"), Port]`.
/// Recorded (serde) as its text face, `{ip}:{port}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub struct Word(pub Vec<Piece>);

impl From<Word> for String {
    fn from(w: Word) -> String {
        w.template()
    }
}

impl From<String> for Word {
    /// Lenient: an unknown `{...}` stays text.
    fn from(s: String) -> Word {
        Word::parse(&s).0
    }
}

impl Word {
    pub fn text(s: impl Into<String>) -> Word {
        Word(vec![Piece::Text(s.into())])
    }

    /// Splits one whitespace-free word into pieces; an unknown `{...}` is
    /// kept as text and returned as the second value.
    fn parse(w: &str) -> (Word, Option<String>) {
        let mut pieces = vec![];
        let mut unknown = None;
        let mut text = String::new();
        let mut rest = w;
        while let Some(i) = rest.find('{') {
            text.push_str(&rest[..i]);
            let tail = &rest[i..];
            match Piece::PLACEHOLDERS
                .iter()
                .find(|(p, _)| tail.starts_with(p))
            {
                Some((p, piece)) => {
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(piece.clone());
                    rest = &tail[p.len()..];
                }
                None => {
                    let end = tail.find('}').map_or(tail.len(), |e| e + 1);
                    unknown.get_or_insert_with(|| tail[..end].to_string());
                    text.push('{');
                    rest = &tail[1..];
                }
            }
        }
        text.push_str(rest);
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        (Word(pieces), unknown)
    }

    /// The text face: `{ip}:{port}`.
    pub fn template(&self) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.as_str(),
                other => Piece::PLACEHOLDERS
                    .iter()
                    .find(|(_, q)| q == other)
                    .map_or("", |(name, _)| name),
            })
            .collect()
    }

    pub(crate) fn expand(&self, slot: &Slot) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Ip => slot.ip.to_string(),
                Piece::Port => slot.port.to_string(),
                Piece::Id => slot.id.to_string(),
                Piece::Dir => slot.dir.display().to_string(),
                Piece::Tickpack => slot.tickpack.display().to_string(),
                Piece::RconPassword => slot
                    .rcon_password
                    .map_or(String::new(), |p| p.as_str().to_string()),
            })
            .collect()
    }

    fn has(&self, piece: &Piece) -> bool {
        self.0.contains(piece)
    }
}

/// Where one instance runs: what the host fills into a [`ServerSpec`].
#[derive(Debug, Clone, Copy)]
pub struct Slot<'a> {
    pub ip: &'a str,
    pub port: u16,
    pub id: u32,
    pub dir: &'a Path,
    pub tickpack: &'a Path,
    /// Its rcon password this start (a spec with a [`Console`]).
    pub rcon_password: Option<&'a Password>,
}

/// How to launch one game server. Recorded (serde, in the host's
/// `state.json`) with the command line as its text face, `command`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSpec {
    /// The command line; the first word is the program.
    #[serde(rename = "command", with = "command_text")]
    pub argv: Vec<Word>,
    /// Environment beside the host's own, values expanded per instance.
    /// The host always sets `HOME` to the instance's directory (`{dir}`),
    /// so a server that writes under `$HOME` stays in its directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, Word)>,
    /// Config files the host writes into the instance's directory before
    /// every start: a relative path and the contents (placeholders
    /// expanded), owned by the instance, never written through a link.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<(PathBuf, Word)>,
    /// How the host checks the server is alive beyond its PID.
    #[serde(default)]
    pub health: Health,
    /// How often the check asks and the unanswered checks it allows;
    /// `None`: the check's defaults ([`Health::default_timing`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_timing: Option<HealthTiming>,
    /// When a started server counts as ready.
    #[serde(default, skip_serializing_if = "Ready::is_default")]
    pub ready: Ready,
    /// How the host stops it (SIGTERM, then SIGKILL after 3 s, unless its
    /// game's definition says otherwise).
    #[serde(default, skip_serializing_if = "Stop::is_default")]
    pub stop: Stop,
    /// How the host reaches its console (a game with `[rcon]`): the
    /// password goes where `{rcon_password}` stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub console: Option<Console>,
}

/// How a server is stopped: a signal, then SIGKILL after the grace time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stop {
    #[serde(default)]
    pub signal: StopSignal,
    #[serde(default = "default_grace")]
    pub grace_s: f64,
}

fn default_grace() -> f64 {
    3.0
}

impl Default for Stop {
    fn default() -> Self {
        Stop {
            signal: StopSignal::default(),
            grace_s: default_grace(),
        }
    }
}

impl Stop {
    fn is_default(&self) -> bool {
        *self == Stop::default()
    }

    /// The grace time, bounded to 0..=60 s whatever a record says.
    pub fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.grace_s.clamp(0.0, 60.0))
    }
}

/// The signal that asks a server to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum StopSignal {
    #[default]
    #[serde(rename = "SIGTERM")]
    Term,
    #[serde(rename = "SIGINT")]
    Int,
    #[serde(rename = "SIGQUIT")]
    Quit,
    #[serde(rename = "SIGKILL")]
    Kill,
}

impl StopSignal {
    /// The signal's number on Linux (x86 and arm alike).
    pub fn number(self) -> i32 {
        match self {
            StopSignal::Term => 15,
            StopSignal::Int => 2,
            StopSignal::Quit => 3,
            StopSignal::Kill => 9,
        }
    }
}

/// A command line recorded as one string (the words' text faces, joined
/// by spaces), read back leniently.
mod command_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{words, Word};

    pub fn serialize<S: Serializer>(argv: &[Word], s: S) -> Result<S::Ok, S::Error> {
        let text: Vec<String> = argv.iter().map(Word::template).collect();
        s.serialize_str(&text.join(" "))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Word>, D::Error> {
        let text = String::deserialize(d)?;
        Ok(words(&text).map(|(w, _)| w).collect())
    }
}

/// The placeholders a command may use, for messages.
fn known_placeholders() -> String {
    Piece::PLACEHOLDERS
        .iter()
        .map(|(p, _)| *p)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits a command template into words (on whitespace), leniently.
fn words(template: &str) -> impl Iterator<Item = (Word, Option<String>)> + '_ {
    template.split_whitespace().map(Word::parse)
}

impl ServerSpec {
    /// The text face: `{tickpack} server --bind {ip}:{port}`; refuses an
    /// empty command and unknown placeholders. The health check is the
    /// reference server's for `{tickpack} server ...`, else none.
    pub fn parse(template: &str) -> Result<ServerSpec, LaunchError> {
        let mut argv = vec![];
        for (w, unknown) in words(template) {
            if let Some(u) = unknown {
                return Err(LaunchError::Invalid(format!(
                    "unknown placeholder {u} in command (known: {})",
                    known_placeholders()
                )));
            }
            argv.push(w);
        }
        if argv.is_empty() {
            return Err(LaunchError::Invalid("command is empty".into()));
        }
        let mut spec = ServerSpec {
            argv,
            env: vec![],
            files: vec![],
            health: Health::None,
            health_timing: None,
            ready: Ready::Health,
            stop: Stop::default(),
            console: None,
        };
        if spec.is_reference_server() {
            spec.health = Health::TickpackStats;
        }
        Ok(spec)
    }

    /// True for `{tickpack} server ...`: it speaks tickpack's protocol.
    pub fn is_reference_server(&self) -> bool {
        matches!(self.argv.as_slice(), [program, sub, ..]
            if program.0 == [Piece::Tickpack] && *sub == Word::text("server"))
    }

    /// The command as a host file writes it (parses back to `self.argv`).
    pub fn template(&self) -> String {
        self.argv
            .iter()
            .map(Word::template)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The argv of one instance.
    pub fn argv(&self, slot: &Slot) -> Vec<String> {
        self.argv.iter().map(|w| w.expand(slot)).collect()
    }

    /// The environment one instance gets on top of the host's: the spec's
    /// variables, then `HOME` = the instance's directory.
    pub fn env(&self, slot: &Slot) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.expand(slot)))
            .collect();
        env.push(("HOME".into(), slot.dir.display().to_string()));
        env
    }

    /// The health check's timing: the spec's own, else the check's
    /// defaults; within bounds whatever a record says.
    pub fn timing(&self) -> HealthTiming {
        self.health_timing
            .unwrap_or(self.health.default_timing())
            .clamped()
    }

    /// The config files of one instance: paths relative to its directory
    /// and their expanded contents.
    pub fn files(&self, slot: &Slot) -> Vec<(PathBuf, String)> {
        self.files
            .iter()
            .map(|(p, c)| (p.clone(), c.expand(slot)))
            .collect()
    }

    /// Refuses what the host could not honour: an empty command, a
    /// variable name that is not one (or `HOME`, which is the host's), a
    /// file path that is not plainly inside the instance's directory.
    pub fn check(&self) -> Result<(), LaunchError> {
        let bad = |m: String| Err(LaunchError::Invalid(m));
        if self.argv.is_empty() {
            return bad("command is empty".into());
        }
        for (name, _) in &self.env {
            crate::env_name::check_env_name(name).map_err(LaunchError::Invalid)?;
        }
        let paths: Vec<String> = self
            .files
            .iter()
            .map(|(p, _)| p.to_string_lossy().into_owned())
            .collect();
        if let Err((_, why)) =
            tickpack_sys::rel_path::check_file_set(paths.iter().map(String::as_str))
        {
            return bad(format!("config file ([[file]]): {why}"));
        }
        match (&self.console, self.uses_rcon_password()) {
            (None, true) => bad(
                "{rcon_password} is filled only for a game with a console ([rcon] in its definition)"
                    .into(),
            ),
            (Some(_), false) => bad(
                "a console ([rcon]) needs {rcon_password} in the command, the environment or a config file: the server would never get its password"
                    .into(),
            ),
            (Some(c), true) if c.map_change.maps.is_empty() => {
                bad("a console's map change needs at least one map".into())
            }
            _ => Ok(()),
        }
    }

    /// Whether `{rcon_password}` stands anywhere the server gets it.
    pub fn uses_rcon_password(&self) -> bool {
        let p = Piece::RconPassword;
        self.argv.iter().any(|w| w.has(&p))
            || self.env.iter().any(|(_, w)| w.has(&p))
            || self.files.iter().any(|(_, w)| w.has(&p))
    }
}

/// The reference server's options that a host sets (`tickpack server`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceServer {
    pub tick: TickRate,
    /// Human player slots, 1..=255.
    pub max_players: u8,
    /// Server-side bots, 0..=64.
    pub bots: u8,
    /// Game work per tick: the `--cost` profile as the server parses it.
    pub cost: String,
    /// Server name shown to browsers; `None`: the server's default. Must
    /// not contain whitespace (a command word).
    pub name: Option<Word>,
}

impl ReferenceServer {
    /// The server's flags after `tickpack server`, built from the typed
    /// fields (`--bind` is the host's: `{ip}:{port}`).
    pub fn flags(&self) -> Vec<Word> {
        let mut f = vec![
            Word::text("--bind"),
            Word(vec![Piece::Ip, Piece::Text(":".into()), Piece::Port]),
            Word::text("--tick-hz"),
            Word::text(self.tick.to_string()),
            Word::text("--bots"),
            Word::text(self.bots.to_string()),
            Word::text("--max-players"),
            Word::text(self.max_players.to_string()),
            Word::text("--cost"),
            Word::text(self.cost.clone()),
        ];
        if let Some(name) = &self.name {
            f.push(Word::text("--name"));
            f.push(name.clone());
        }
        f
    }

    /// How a host launches it: this binary's `server` subcommand, checked
    /// over the tickpack protocol.
    pub fn spec(&self) -> ServerSpec {
        let mut argv = vec![Word(vec![Piece::Tickpack]), Word::text("server")];
        argv.extend(self.flags());
        ServerSpec {
            argv,
            env: vec![],
            files: vec![],
            health: Health::TickpackStats,
            health_timing: None,
            ready: Ready::Health,
            stop: Stop::default(),
            console: None,
        }
    }
}

#[cfg(test)]
mod tests;
