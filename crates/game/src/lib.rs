//! What tickpack knows about games, as data.
//!
//! A game is a definition file (TOML; `docs/games.md` has an annotated
//! complete example, `games/` the shipped ones), not code: its packages,
//! launch (command template, environment, config files), port, readiness,
//! stop, tick rate, bots, slots, query protocol and the players tickpack
//! can emulate for it.
//!
//! - [`def`]: [`GameDef`], the definition's typed tables; `validate`
//!   reads and checks one as a whole ([`GameDef::parse`]; refusals are
//!   `FILE:LINE: what is wrong`), `names` holds the names, values and
//!   placeholders it may use.
//! - [`template`]: repetition in a config file (`{for ITEM in LIST}`
//!   lines: a map rotation, one line per bot).
//! - [`registry`]: the built-in definitions (`games/*.toml`, compiled in)
//!   and the rule that tells a name from a file.
//! - [`settings`]: a run's choices ([`GameSettings`]: tick, bots,
//!   variables) and the launch spec they make with a definition
//!   ([`GameDef::server_spec`]).
//! - [`launch`]: the launch contract every host runs ([`ServerSpec`]: typed
//!   command words with per-instance placeholders, environment, files,
//!   health check), and the reference server's typed options (for
//!   `tickpack server`'s own flags; benchmarks launch it from its file).
//! - [`agones`]: a definition's `[agones]` table (image, home, who
//!   reports to the SDK), read by `tickpack agones fleet`.
//! - [`console`]: a running server's console from the host: `[rcon]`
//!   ([`console::RconDef`]), what a spec carries of it ([`console::Console`]:
//!   the map change and its rotation), the password made at every start
//!   and one command's round trip ([`console::Exchange`]), sans-I/O.
//! - [`check`]: when a started server is ready ([`check::Ready`]: its
//!   health check, a log line, its port) and the health check's timing
//!   ([`check::HealthTiming`]), carried in the spec.
//! - [`query`]: asking a running server about itself with its own query
//!   protocol (q3 `getinfo`/`getstatus`, `A2S_INFO`), sans-I/O: one
//!   [`query::Session`] per target, the [`query::Facts`] of its answers.
//! - [`gamedig`]: the names of the gamedig crate's protocols a definition
//!   may ask with (`[query] protocol = "gamedig"`), as a static table; the
//!   asking is `tickpack-gamedig-query`'s.
//! - [`server`]: the game server a host or a benchmark runs, chosen once
//!   ([`GameServer`]: a definition and the run's settings, one shape for
//!   every game), and what a host file asks for ([`GameAsk`]).
//! - [`pk3`]: the maps in Quake 3 data files, so a map a definition's
//!   `[data]` names but the game lacks is refused before anything starts.
//! - [`source`]: `--game NAME|FILE` as a checked definition: a bounded
//!   read of a user's file.
//! - [`env_name`]: which `[env]` names a definition or host file may set
//!   (not the loader's, not the host's own); [`lines`]: the line of a TOML
//!   text that defines a key, for refusals after parsing (here and in tile
//!   files).
//!
//! Order: read a file's text (or take a built-in) → [`GameDef::parse`] →
//! [`GameSettings::defaults`] (then `set`) → [`GameDef::server_spec`] → the
//! host.
//!
//! Deliberately not here: sockets, clocks, processes, and any other file
//! (the two reads are a user's definition, [`source`], and the directory
//! of a Quake 3 data file, [`pk3::maps_in`]): the host runs the spec; the host, the prober and the Agones sidecar
//! drive query sessions over their own sockets.

pub mod agones;
pub mod check;
pub mod console;
pub mod def;
pub mod env_name;
pub mod gamedig;
pub mod launch;
pub mod lines;
mod names;
pub mod pk3;
pub mod protocols;
pub mod query;
pub mod query_protocol;
pub mod registry;
pub mod server;
pub mod settings;
pub mod source;
pub mod template;
pub mod transport;
mod validate;

pub use def::{DefError, GameDef, PlayerProtocol, QueryProtocol};
pub use gamedig::GamedigProtocol;
pub use launch::{Health, ServerSpec};
pub use protocols::{EmulatedProtocol, Probe, Protocols};
pub use registry::Source;
pub use server::{GameAsk, GameServer};
pub use settings::GameSettings;
/// The one tick rate type (crate `tickpack-units`), in every schema.
pub use tickpack_wire::TickRate;
