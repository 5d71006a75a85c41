//! The long tail of game query protocols: the `gamedig` crate's (Valve,
//! Quake 1/2/3, GameSpy 1/2/3, Unreal 2, Minecraft and more), for
//! definitions that say `[query] protocol = "gamedig"` and
//! `gamedig = "NAME"` (the names: `tickpack_game::gamedig`).
//!
//! gamedig 0.9 is synchronous, panics on some malformed answers, has no
//! overall deadline (an A2S server that answers only challenges keeps a
//! call looping for ever) and reports 0 players for every Quake-family
//! server. So every call here runs on a thread of its own, behind
//! `catch_unwind`, with our own deadline: a call that overruns is
//! abandoned and reported as a timeout, and at most a fixed number of
//! abandoned calls may still be running at once ([`Driver`]). Quake-family
//! player counts are reported as unknown.
//!
//! - [`protocols`]: each name of the definition table as gamedig's value,
//!   and what tickpack trusts of its answers.
//! - [`driver`]: [`Driver`] (start a call, its [`Pending`] result),
//!   [`Answer`], [`QueryError`].
//!
//! tickpack's own q3 and A2S queries (`tickpack_game::query`) are
//! unaffected: they are sans-I/O, never panic and bound every loop.

// A caught panic is how a malformed answer is survived: unwinding must
// stay on.
#[cfg(panic = "abort")]
compile_error!("tickpack-gamedig-query needs panic = \"unwind\": gamedig panics on malformed answers and each call is caught");

pub mod driver;
pub mod protocols;

pub use driver::{Answer, Driver, Pending, QueryError, MAX_RUNNING};
