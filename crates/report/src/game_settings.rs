//! A game's own settings and versions as a result records them, typed.
//!
//! Results written before this type kept a flat map of text (`"map":
//! "oa_dm1,oa_dm4"`, `"sv_fps": "20"`, `"engine": "ioquake3-server
//! 1.36"`, `"package NAME-server": "2.5.2"`, a defined game's variables);
//! [`read`] still takes those and gives the same typed value.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use tickpack_units::TickRate;

/// What a run set in its game beyond the bench's own settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameSettings {
    /// An ioquake3 game's map rotation, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<String>,
    /// The server's tick rate as the game was told it (ioquake3's
    /// `sv_fps`, a defined game's `{tick_hz}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_hz: Option<TickRate>,
    /// Server-side bots per server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bots: Option<u32>,
    /// An ioquake3 game: players and bots each server is filled to
    /// (`bot_minplayers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots_filled: Option<u32>,
    /// An ioquake3 game's extra cvars, `CVAR=VALUE` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub game_args: Vec<String>,
    /// A defined game's `[variables]` as the run set them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, String>,
    /// The game's definition's `description`, as the bench recorded it
    /// (absent in results from before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The installed version of each Debian package the game came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub packages: BTreeMap<String, String>,
}

impl GameSettings {
    /// Whether nothing is recorded (the reference server's).
    pub fn is_empty(&self) -> bool {
        *self == GameSettings::default()
    }

    /// One `name value` per setting, for a report line.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![];
        if !self.maps.is_empty() {
            out.push(format!("map {}", self.maps.join(",")));
        }
        if let Some(t) = self.tick_hz {
            out.push(format!("tick {t} Hz"));
        }
        if let Some(b) = self.bots {
            out.push(format!("bots {b}"));
        }
        if let Some(s) = self.slots_filled {
            out.push(format!("filled to {s}"));
        }
        if !self.game_args.is_empty() {
            out.push(format!("game arguments {}", self.game_args.join(" ")));
        }
        out.extend(self.variables.iter().map(|(k, v)| format!("{k} {v}")));
        out.extend(self.packages.iter().map(|(p, v)| format!("{p} {v}")));
        out
    }

    /// The typed value of a result written before this type (a flat map
    /// of text).
    pub fn from_text(flat: BTreeMap<String, String>) -> GameSettings {
        let mut s = GameSettings::default();
        let num = |v: &str| v.trim().parse::<u32>().ok();
        for (k, v) in flat {
            match k.as_str() {
                "map" => s.maps = v.split(',').map(str::to_string).collect(),
                "sv_fps" | "tick_hz" => s.tick_hz = v.trim().parse().ok(),
                "bots" if num(&v).is_some() => s.bots = num(&v),
                "slots_filled" if num(&v).is_some() => s.slots_filled = num(&v),
                "game_args" => s.game_args = v.split_whitespace().map(str::to_string).collect(),
                // "engine": "ioquake3-server 1.36", "game_data": ...
                "engine" | "game_data" => {
                    let (p, ver) = v.split_once(' ').unwrap_or((&v, ""));
                    s.packages.insert(p.to_string(), ver.to_string());
                }
                other => match other.strip_prefix("package ") {
                    Some(p) => {
                        s.packages.insert(p.to_string(), v);
                    }
                    None => {
                        s.variables.insert(k, v);
                    }
                },
            }
        }
        s
    }
}

/// Reads `game_settings` of any result: typed, or the flat map of text
/// results kept before.
pub fn read<'de, D: Deserializer<'de>>(d: D) -> Result<GameSettings, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Typed(GameSettings),
        Text(BTreeMap<String, String>),
    }
    Ok(match Either::deserialize(d)? {
        Either::Typed(s) => s,
        Either::Text(flat) => GameSettings::from_text(flat),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "read")]
        s: GameSettings,
    }

    #[test]
    fn an_old_flat_map_of_text_reads_as_the_typed_settings() {
        let old = r#"{"s": {"map": "oa_dm1,oa_dm4", "sv_fps": "20", "bots": "4",
            "slots_filled": "8", "game_args": "g_gravity=600 g_speed=300",
            "engine": "ioquake3-server 1.36+u20230614", "game_data": "openarena-server 0.8.8",
            "package nexuiz-server": "2.5.2", "mode": "dm"}}"#;
        let s = serde_json::from_str::<Holder>(old).unwrap().s;
        assert_eq!(s.maps, ["oa_dm1", "oa_dm4"]);
        assert_eq!(
            (s.tick_hz, s.bots, s.slots_filled),
            (crate::bench::TickRate::new(20), Some(4), Some(8))
        );
        assert_eq!(s.game_args, ["g_gravity=600", "g_speed=300"]);
        assert_eq!(s.packages["ioquake3-server"], "1.36+u20230614");
        assert_eq!(s.packages["nexuiz-server"], "2.5.2");
        assert_eq!(s.variables["mode"], "dm");
    }

    #[test]
    fn typed_settings_round_trip_and_numbers_stay_numbers() {
        let s = GameSettings {
            tick_hz: crate::bench::TickRate::new(60),
            bots: Some(8),
            variables: [("map".to_string(), "ruiner".to_string())].into(),
            ..Default::default()
        };
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["bots"], 8);
        let back: Holder = serde_json::from_value(serde_json::json!({ "s": json })).unwrap();
        assert_eq!(back.s, s);
        assert_eq!(
            s.lines(),
            ["tick 60 Hz", "bots 8", "map ruiner"].map(String::from)
        );
    }
}
