//! One `[[member]]` resolved: its game (a built-in name or a definition
//! file), what loads its servers (emulated players, bots, a load command,
//! or nothing: an idle lobby), its settings, its QoS limits and its
//! curve. Every refusal names the key to blame, for its line.

use std::time::Duration;

use tickpack_curve::{Curve, Timeline};
use tickpack_game::def::is_name;
use tickpack_game::{
    DefError, GameDef, GameServer, GameSettings, PlayerProtocol, Source, TickRate,
};
use tickpack_report::bench::{LoadSettings, QosLimits};

use crate::curve_keys;
use crate::file::{EnvelopeKeys, MemberFile};
use crate::qos;

/// The most servers of one member per tile.
pub const MAX_COUNT: u32 = 64;
/// The most players a load command may be asked for per server.
pub const MAX_LOAD_PLAYERS: u16 = 1024;

/// One game of a tile.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// What results call it (unique in the tile; the game's name unless
    /// set).
    pub name: String,
    /// Its game's definition with the member's settings: tick, bots,
    /// players (`{players}`), variables.
    pub server: GameServer,
    /// Where its definition came from.
    pub source: Source,
    /// Servers of it per tile.
    pub count: u32,
    /// Emulated players per server: the curve's seats (0 with bots only,
    /// a load command, or idle).
    pub players: u16,
    /// Its load command (`[member.load]`, else its definition's `[load]`).
    pub load: Option<LoadSettings>,
    /// An idle lobby server: no players, no bots, no load.
    pub idle: bool,
    /// The limits each of its servers is judged on, in every window.
    pub qos: QosLimits,
    /// A join slower than this failed (`[member.qos] join_ms`); `None`:
    /// the bench's default.
    pub max_join: Option<Duration>,
    /// How its players come and go.
    pub curve: Curve,
}

/// What loads a member's servers, for words in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Emulated players (maybe with bots beside them).
    Players,
    /// Server-side bots only.
    Bots,
    /// A load command of the user's.
    Load,
    /// Nothing: an idle lobby that answers queries.
    Idle,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Players => "players",
            Kind::Bots => "bots",
            Kind::Load => "load",
            Kind::Idle => "idle",
        }
    }
}

impl Member {
    /// The game's name.
    pub fn game(&self) -> &str {
        self.server.name()
    }

    /// Server-side bots per server.
    pub fn bots(&self) -> u16 {
        self.server.settings.bots
    }

    /// What loads its servers.
    pub fn kind(&self) -> Kind {
        match (self.idle, &self.load, self.players) {
            (true, _, _) => Kind::Idle,
            (_, Some(_), _) => Kind::Load,
            (_, None, 0) => Kind::Bots,
            _ => Kind::Players,
        }
    }

    /// One of its servers' timeline: `seed` the tile's, `server` a
    /// number unique to that server in the step (see
    /// [`crate::Tile::timeline`]).
    pub fn timeline(&self, seed: u64, server: u64, step_len: Duration) -> Timeline {
        self.curve.timeline(seed, server, self.players, step_len)
    }
}

/// What finds a definition by a member's `game` (a name or a path).
pub(crate) type Games<'a> = dyn FnMut(&str) -> Result<(GameDef, Source), DefError> + 'a;

/// A refusal: the key path under this member, and why.
pub(crate) type Refusal = (Vec<String>, String);

fn at(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

fn refuse<T>(parts: &[&str], message: impl Into<String>) -> Result<T, Refusal> {
    Err((at(parts), message.into()))
}

/// A number of a member's key within `range`, or a refusal naming it.
fn within(key: &str, v: i64, range: std::ops::RangeInclusive<i64>) -> Result<u32, Refusal> {
    if range.contains(&v) {
        Ok(v as u32)
    } else {
        refuse(
            &[key],
            format!("{key} {v}: expected {}..={}", range.start(), range.end()),
        )
    }
}

/// Resolves `m`; `tile` is the tile's envelope and alignment, `games`
/// finds a definition by name or path.
pub(crate) fn resolve(
    m: &MemberFile,
    tile: (&EnvelopeKeys, bool),
    games: &mut Games<'_>,
) -> Result<Member, Refusal> {
    let (def, source) = games(&m.game).map_err(|e| {
        (
            at(&["game"]),
            if e.file == "--game" {
                e.message
            } else {
                format!("game {:?}: {e}", m.game)
            },
        )
    })?;
    let name = m.name.clone().unwrap_or_else(|| def.name.clone());
    if !is_name(&name) {
        return refuse(
            &["name"],
            format!("name {name:?}: expected 1-32 lower-case letters, digits, - and _"),
        );
    }
    let count = within("count", m.count.unwrap_or(1), 1..=i64::from(MAX_COUNT))?;
    let mut settings = GameSettings::defaults(&def);
    for (k, v) in &m.set {
        settings
            .set(&def, &format!("{k}={v}"))
            .map_err(|e| (at(&["set", k]), e))?;
    }
    if let Some(hz) = m.tick_hz {
        let (min, max) = def.tick_range();
        let hz = u16::try_from(hz).ok().and_then(TickRate::new);
        match hz {
            Some(hz) if (min..=max).contains(&hz) => settings.tick_hz = hz,
            _ if min == max => {
                return refuse(
                    &["tick_hz"],
                    format!("tick_hz: {} runs at a fixed {min} Hz", def.name),
                )
            }
            _ => {
                return refuse(
                    &["tick_hz"],
                    format!("tick_hz: {} takes {min}..={max} Hz", def.name),
                )
            }
        }
    }
    let playable = def.players.protocol != PlayerProtocol::None;
    let (players, bots, load) = if m.idle {
        for (key, given) in [
            ("players", m.players.is_some()),
            ("bots", m.bots.is_some()),
            ("load", m.load.is_some()),
        ] {
            if given {
                return refuse(
                    &[key],
                    format!("{key}: an idle member has no players, bots or load (it only answers queries); drop {key} or idle"),
                );
            }
        }
        (0, 0, None)
    } else {
        load_of(m, &def, playable)?
    };
    let bots_max = def.bots_max();
    if bots > bots_max {
        return refuse(
            &["bots"],
            format!(
                "bots {bots}: {} takes at most {bots_max} bots per server",
                def.name
            ),
        );
    }
    settings.bots = bots;
    settings.players = load.as_ref().map_or(players, |l| l.players as u16);
    if load.is_none() && u32::from(players) + u32::from(bots) > u32::from(def.slots) {
        return refuse(
            &[if m.players.is_some() { "players" } else { "bots" }],
            format!(
                "{players} players + {bots} bots = {}: a {} server has {} slots (players and bots together)",
                players + bots,
                def.name,
                def.slots
            ),
        );
    }
    settings.check(&def).map_err(|e| {
        (
            at(&[if m.players.is_some() {
                "players"
            } else {
                "game"
            }]),
            e,
        )
    })?;
    if !m.idle && players == 0 && bots == 0 && load.is_none() {
        return refuse(
            &["game"],
            format!(
                "member {name:?}: nothing would load its servers (no players, bots or load command); give players, bots or [member.load], or idle = true for an idle lobby server that only answers queries"
            ),
        );
    }
    def.server_spec(&settings).map_err(|e| (at(&["game"]), e))?;
    let seats = if load.is_none() { players } else { 0 };
    let curve = curve_keys::member_curve(m, tile, seats, m.idle)?;
    let base = qos::game_limits(&def, settings.tick_hz, qos::judged_on_players(&def, m.idle));
    let (qos, max_join) = match &m.qos {
        Some(f) => (
            qos::apply(base, f).map_err(|(k, e)| (at(&["qos", k]), e))?,
            qos::max_join(f).map_err(|(k, e)| (at(&["qos", k]), e))?,
        ),
        None => (base, None),
    };
    Ok(Member {
        name,
        server: GameServer::new(def, settings),
        source,
        count,
        players: seats,
        load,
        idle: m.idle,
        qos,
        max_join,
        curve,
    })
}

/// A member's players, bots and load command (not idle): a load command
/// (`[member.load]`, else the definition's) plays `{players}`; otherwise
/// emulated players (the definition's default for a game tickpack can
/// play) beside the bots asked (the definition's default).
fn load_of(
    m: &MemberFile,
    def: &GameDef,
    playable: bool,
) -> Result<(u16, u16, Option<LoadSettings>), Refusal> {
    let bots = match m.bots {
        Some(b) => within("bots", b, 0..=1024)? as u16,
        None => def.bots.default,
    };
    let load = match (&m.load, &def.load) {
        (Some(l), _) => {
            if m.players.is_some() {
                return refuse(
                    &["players"],
                    "players: a load command plays its own players; set them as [member.load] players",
                );
            }
            tickpack_game::def::check_load_command(&l.command)
                .map_err(|e| (at(&["load", "command"]), e))?;
            let players = match l.players {
                Some(p) => u16::try_from(p)
                    .ok()
                    .filter(|p| *p <= MAX_LOAD_PLAYERS)
                    .ok_or_else(|| {
                        (
                            at(&["load", "players"]),
                            format!("players {p}: expected 0..={MAX_LOAD_PLAYERS}"),
                        )
                    })?,
                None => 0,
            };
            Some(LoadSettings {
                command: l.command.clone(),
                players: u32::from(players),
            })
        }
        // The definition's own load command: `players` are its
        // `{players}`, as `--players-per-server` with `bench`.
        (None, Some(l)) => Some(LoadSettings {
            command: l.command.clone(),
            players: match m.players {
                Some(p) => within("players", p, 0..=i64::from(MAX_LOAD_PLAYERS))?,
                None => u32::from(l.players),
            },
        }),
        (None, None) => None,
    };
    if load.is_some() {
        return Ok((0, bots, load));
    }
    let players = match m.players {
        Some(p) if p > 0 && !playable => {
            return refuse(
                &["players"],
                format!(
                    "players {p}: tickpack has no players for {} (its servers are judged on run delay and query latency); give bots, [member.load], or idle = true",
                    def.name
                ),
            )
        }
        Some(p) if p > i64::from(def.slots) => {
            return refuse(
                &["players"],
                format!(
                    "players {p}: above the {} slots of a {} server (a curve peaks at every player, so never above 100 % of the slots)",
                    def.slots, def.name
                ),
            )
        }
        Some(p) => within("players", p, 0..=i64::from(def.slots))? as u16,
        None if playable => def.players.default,
        None => 0,
    };
    Ok((players, bots, None))
}
