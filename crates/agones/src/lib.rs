//! Agones for tickpack's game servers: tickpack's own server speaks the
//! Agones SDK itself (`tickpack server --agones`), and a sidecar speaks it
//! for games we did not write (`tickpack agones-sidecar --game NAME|FILE`,
//! or `--query PROTOCOL --target ADDR` as the fleet manifests run it).
//!
//! It deliberately does not manage Kubernetes objects (fleets, autoscalers)
//! and does not speak gRPC: it talks to the SDK server beside the game over
//! the SDK's HTTP API (see [`client`] for why).
//!
//! - [`reporter`]: [`Reporter`], sans-I/O and tested on a virtual clock:
//!   [`Observation`]s of the game in, SDK [`Action`]s out (Ready once,
//!   Health only while the game's loop advances, player diffs to where the
//!   GameServer takes them ([`PlayerSinks`]: list, counter, player
//!   tracking), the tick p99 and player count labels on change and
//!   rate-limited, Shutdown once).
//! - [`endpoint`]: where the SDK server is ([`endpoint::resolve`] from a
//!   flag and `AGONES_SDK_HTTP_PORT` / `AGONES_SDK_GRPC_PORT`).
//! - [`client`]: [`SdkClient`], blocking HTTP on `ureq`: one method per
//!   action, and `GET /gameserver` (the reachability check).
//! - [`driver`]: [`drive`], the thin loop: observe, perform, sleep, until
//!   Shutdown.
//! - [`sidecar`]: the sidecar for games we did not write: what it asks
//!   ([`sidecar::Options::query`]: `getstatus`, `A2S_INFO`, over the game query layer
//!   `tickpack_game::query`) and its I/O loop.
//!
//! Order: resolve the endpoint, make an [`SdkClient`], check it with
//! `game_server()` before starting anything (its `player_sinks()` go into
//! the [`Settings`]), then run [`drive`] (or [`sidecar::run`]) on its own
//! thread with an observe function.

pub mod client;
pub mod driver;
pub mod endpoint;
pub mod reporter;
pub mod sidecar;

pub use client::{GameServer, SdkClient, SdkError};
pub use driver::{drive, Done};
pub use endpoint::Endpoint;
pub use reporter::{Action, Observation, PlayerSinks, Reporter, Settings};
