//! `--tile FILE`: the tile file read and checked ([`tickpack_tile::load`],
//! `FILE:LINE` refusals) and made the bench's [`TilePlan`]: every member's
//! game with its settings, its limits and its curve, the step as long as
//! the curves need, the warm-up the slowest member's game asks, and the
//! record result.json keeps ([`TileSettings`]).

use std::path::Path;
use std::time::Duration;

use tickpack_report::tile::{TileMember, TileSettings};

use super::{config_error, PlanError};
use crate::tile::{MemberPlan, TilePlan, MAX_MEMBERS};

/// A join slower than this failed (from its first packet to its first
/// snapshot): a player who waits five seconds for a game has left.
pub const MAX_JOIN: Duration = Duration::from_secs(5);

/// The tile at `path`, checked, as the bench runs it; `quick` shortens
/// the warm-up like a one-game `--quick`.
pub fn tile_plan(path: &Path, quick: bool) -> Result<TilePlan, PlanError> {
    let tile = tickpack_tile::load(path).map_err(|e| config_error(e.to_string()))?;
    if tile.members.len() > MAX_MEMBERS {
        return Err(config_error(format!(
            "{}: {} members, at most {MAX_MEMBERS} (each gets a host of its own)",
            path.display(),
            tile.members.len()
        )));
    }
    if let Some(m) = tile.members.iter().find(|m| m.load.is_some()) {
        return Err(config_error(format!(
            "{}: member {}: a load command in a tile is not run yet; give it players, bots or idle = true",
            path.display(),
            m.name
        )));
    }
    let step = tile.step_len();
    let warmup_s = tile
        .members
        .iter()
        .map(|m| m.server.definition().ready.warmup_s)
        .fold(0.0f64, f64::max);
    let warmup = Duration::from_secs_f64(if quick { warmup_s.min(1.0) } else { warmup_s }.max(1.0));
    let members: Vec<MemberPlan> = tile
        .members
        .iter()
        .map(|m| MemberPlan {
            name: m.name.clone(),
            game: m.server.clone(),
            count: m.count,
            players: u32::from(m.players),
            bots: u32::from(m.bots()),
            tick: m.server.settings.tick_hz,
            qos: m.qos,
            max_join: m.max_join.unwrap_or(MAX_JOIN),
            idle: m.idle,
            curve: m.curve.clone(),
        })
        .collect();
    let compression: Vec<String> = tile
        .compression(step)
        .into_iter()
        .map(|(name, c)| format!("{name}: {c}"))
        .collect();
    let name = path
        .file_stem()
        .map_or("tile".into(), |s| s.to_string_lossy().into_owned());
    let settings = TileSettings {
        name,
        file: path.display().to_string(),
        window_s: tile.window.as_secs_f64(),
        seed: tile.seed,
        compression: compression.join("; "),
        members: members
            .iter()
            .map(|m| TileMember {
                name: m.name.clone(),
                game: m.game.name().to_string(),
                count: m.count,
                players: m.players,
                bots: m.bots,
                tick_hz: m.tick,
                game_settings: super::game::recorded_settings(&m.game),
                curve: if m.idle {
                    "idle: no players".into()
                } else {
                    m.curve.to_string()
                },
                idle: m.idle,
                qos: m.qos,
                max_join_ms: m.max_join.as_millis() as u64,
            })
            .collect(),
    };
    Ok(TilePlan {
        settings,
        members,
        step,
        window: tile.window,
        warmup,
        seed: tile.seed,
    })
}
