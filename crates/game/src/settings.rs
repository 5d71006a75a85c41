//! A run's choices for one game ([`GameSettings`]: tick rate, bots, the
//! game's variables) and the launch spec they make with the definition
//! ([`GameDef::server_spec`]).
//!
//! The game-level placeholders are filled here, once, as text; what stays
//! is each instance's own (`{ip} {port} {id} {dir} {tickpack}`), which the
//! host fills per instance ([`crate::launch`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tickpack_wire::TickRate;

use crate::console::{Console, MapChange};
use crate::def::{GameDef, ReadyBy};
use crate::launch::{Health, Ready, ServerSpec, Word};
use crate::names::{check_value, placeholders_in};

/// What a run sets for one game; [`GameSettings::defaults`] are the
/// definition's own. Recorded typed in result.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameSettings {
    /// The game's name (its definition's `name`).
    pub game: String,
    pub tick_hz: TickRate,
    pub bots: u16,
    /// Emulated players per server (`{players}`); recorded since the
    /// definitions took it, 0 in older records.
    #[serde(default)]
    pub players: u16,
    /// Every `[variables]` value, defaults and what the run set.
    #[serde(default)]
    pub variables: BTreeMap<String, String>,
}

impl GameSettings {
    /// The definition's defaults.
    pub fn defaults(def: &GameDef) -> GameSettings {
        GameSettings {
            game: def.name.clone(),
            tick_hz: def.tick.hz,
            bots: def.bots.default,
            players: def.players.default,
            variables: def.variables.clone(),
        }
    }

    /// The tick rate as a type.
    pub fn tick(&self) -> TickRate {
        self.tick_hz
    }

    /// Sets `NAME=VALUE` (`--set`): a `[variables]` name of the game.
    pub fn set(&mut self, def: &GameDef, assignment: &str) -> Result<(), String> {
        let Some((name, value)) = assignment.split_once('=') else {
            return Err(format!(
                "{assignment:?}: expected NAME=VALUE, e.g. map={}",
                def.variables.get("map").map_or("dm1", String::as_str)
            ));
        };
        if !def.variables.contains_key(name) {
            let known: Vec<&str> = def.variables.keys().map(String::as_str).collect();
            return Err(format!(
                "{name}: not a variable of {} (its variables: {})",
                def.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
        check_value(name, value)?;
        self.variables.insert(name.into(), value.into());
        Ok(())
    }

    /// Refuses a tick rate or bot count the game cannot take.
    pub fn check(&self, def: &GameDef) -> Result<(), String> {
        let (min, max) = def.tick_range();
        if !(min..=max).contains(&self.tick_hz) {
            return Err(if min == max {
                format!(
                    "{} runs at a fixed {min} Hz (its definition sets no tick rate)",
                    def.name
                )
            } else {
                format!(
                    "{} takes tick rates {min}..={max} Hz, got {}",
                    def.name, self.tick_hz
                )
            });
        }
        if self.bots > def.bots_max() {
            return Err(format!(
                "{} takes at most {} bots per server, got {}",
                def.name,
                def.bots_max(),
                self.bots
            ));
        }
        if let Some(max) = def.players.max_with_bots {
            if u32::from(self.players) + u32::from(self.bots) > u32::from(max) {
                return Err(format!(
                    "{} players + {} bots per server: a {} server here carries at most {max} players and bots",
                    self.players, self.bots, def.name
                ));
            }
        }
        for (k, v) in &self.variables {
            check_value(k, v)?;
        }
        Ok(())
    }

    /// The value of a game-level placeholder.
    fn value(&self, def: &GameDef, name: &str) -> Option<String> {
        Some(match name {
            "tick_hz" => self.tick_hz.to_string(),
            "tick_interval_s" => interval_text(self.tick()),
            "bots" => self.bots.to_string(),
            "slots" => def.slots.to_string(),
            "players" => self.players.to_string(),
            "players_and_bots" => (u32::from(self.players) + u32::from(self.bots)).to_string(),
            other => self.variables.get(other)?.clone(),
        })
    }

    /// `text` with every game-level placeholder filled (the instance's
    /// own left as they are).
    fn fill(&self, def: &GameDef, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (i, name) in placeholders_in(text) {
            if let Some(v) = self.value(def, name) {
                out.push_str(&text[last..i]);
                out.push_str(&v);
                last = i + name.len() + 2;
            }
        }
        out.push_str(&text[last..]);
        out
    }
}

/// A tick's interval in seconds as engines take it (`sys_ticrate`):
/// seven decimals, trailing zeros dropped (60 Hz: `0.0166667`).
pub fn interval_text(tick: TickRate) -> String {
    let s = format!("{:.7}", tick.interval().as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl GameDef {
    /// How a host launches this game with `settings` (checked first).
    pub fn server_spec(&self, settings: &GameSettings) -> Result<ServerSpec, String> {
        settings.check(self)?;
        let command = self
            .command
            .split_whitespace()
            .map(|w| settings.fill(self, w))
            .collect::<Vec<_>>()
            .join(" ");
        let mut spec = ServerSpec::parse(&command).map_err(|e| e.to_string())?;
        spec.env = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Word::from(settings.fill(self, v))))
            .collect();
        spec.files = self
            .files
            .iter()
            .map(|f| {
                let text = crate::template::expand(
                    &f.contents,
                    |list| settings.variables.get(list).cloned(),
                    |count| settings.value(self, count)?.parse().ok(),
                    |line| settings.fill(self, line),
                )
                .map_err(|e| format!("file {:?}: {e}", f.path))?;
                Ok((PathBuf::from(&f.path), Word::from(text)))
            })
            .collect::<Result<_, String>>()?;
        spec.health = match self.ready_by() {
            ReadyBy::Process => Health::None,
            _ => self.protocols().health,
        };
        spec.health_timing = self.health_timing();
        spec.ready = match self.ready_by() {
            // The game's placeholders now, the instance's per instance
            // ([`ServerSpec::ready_log`]).
            ReadyBy::Log => {
                Ready::Log(settings.fill(self, self.ready.log.as_deref().unwrap_or("")))
            }
            ReadyBy::Port => Ready::Port(self.transport),
            ReadyBy::Query | ReadyBy::Process => Ready::Health,
        };
        spec.stop = self.stop;
        spec.console = match &self.rcon {
            Some(r) => {
                let maps = settings
                    .variables
                    .get(&r.rotation)
                    .map_or("", String::as_str);
                Some(Console {
                    protocol: r.protocol,
                    map_change: MapChange::new(r, maps)?,
                })
            }
            None => None,
        };
        spec.check().map_err(|e| e.to_string())?;
        Ok(spec)
    }
}
