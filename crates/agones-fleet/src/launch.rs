//! The game server in its pod, from its definition: which definition
//! ([`definition`]: the one given, or the result's game among the built-in
//! ones), the settings the bench ran ([`game_settings`]), and the command
//! the game crate renders from them ([`pod_launch`]: argv, environment and
//! `[[file]]`s, the files written by a shell before the server replaces
//! it).

use std::path::Path;

use tickpack_game::agones::AgonesDef;
use tickpack_game::launch::Slot;
use tickpack_game::{GameDef, GameSettings};

use crate::sizing::Sizing;
use crate::FleetError;

/// The definition to deploy: `given` (`--game NAME|FILE`), which must be
/// the game the result measured, else the result's game among the
/// built-in definitions. It must have an `[agones]` table.
pub fn definition(result_game: &str, given: Option<GameDef>) -> Result<GameDef, FleetError> {
    let bad = |m: String| Err(FleetError::Input(m));
    let def = match given {
        Some(d) if d.name != result_game => {
            return bad(format!(
                "the result measured {result_game:?}, but --game's definition is {:?}",
                d.name
            ))
        }
        Some(d) => d,
        None => match tickpack_game::registry::find(result_game) {
            Some((d, _)) => d,
            None => {
                return bad(format!(
                    "the result's game {result_game:?} is not built in: give its definition with --game FILE"
                ))
            }
        },
    };
    if def.agones.is_none() {
        let with: Vec<String> = tickpack_game::registry::built_in()
            .into_iter()
            .filter(|(d, _)| d.agones.is_some())
            .map(|(d, _)| d.name)
            .collect();
        return bad(format!(
            "{}'s definition has no [agones] table (its image and the rest; docs/agones.md), so it cannot go to Agones (built-in games with one: {})",
            def.name,
            with.join(", ")
        ));
    }
    Ok(def)
}

/// The game settings the result recorded, on the definition's defaults,
/// and what of the result could not be carried over (for a comment).
///
/// The tick rate and bots: the game's own record, else the bench's. The
/// variables: those the result recorded that the definition has. Results
/// written before a game was only its definition recorded some variables
/// elsewhere: the bench's `cost`, a map rotation (`maps`: the variable
/// `maps`, comma-separated, or else `map`, the first), extra arguments
/// `NAME=VALUE`; each fills the definition's variable of that name.
pub fn game_settings(s: &Sizing, def: &GameDef) -> Result<(GameSettings, Vec<String>), FleetError> {
    let ladder = s.ladder_game.as_ref();
    let recorded = ladder.map_or(&s.settings.game_settings, |g| &g.game_settings);
    let tick_hz = recorded
        .tick_hz
        .unwrap_or(ladder.map_or(s.settings.tick_hz, |g| g.tick_hz));
    let bots = recorded
        .bots
        .unwrap_or(ladder.map_or(s.settings.bots_per_server, |g| g.bots_per_server));
    let bad = |m: String| FleetError::Input(format!("{}: {m}", def.name));
    let mut settings = GameSettings::defaults(def);
    settings.tick_hz = tick_hz;
    settings.bots = u16::try_from(bots)
        .map_err(|_| bad(format!("the result's {bots} bots is out of range")))?;
    let mut wanted: Vec<(String, String)> = vec![];
    if !s.settings.cost.is_empty() {
        wanted.push(("cost".into(), s.settings.cost.clone()));
    }
    if !recorded.maps.is_empty() {
        match def.variables.contains_key("maps") {
            true => wanted.push(("maps".into(), recorded.maps.join(","))),
            false => wanted.push(("map".into(), recorded.maps[0].clone())),
        }
    }
    wanted.extend(
        recorded
            .game_args
            .iter()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    // What the result recorded as the game's variables comes last: it wins.
    wanted.extend(recorded.variables.clone());
    let mut left_out = vec![];
    for (k, v) in wanted {
        if !def.variables.contains_key(&k) {
            // The bench records its cost for every game; only a game with
            // a `cost` variable takes it.
            if k != "cost" {
                left_out.push(format!("{k}={v}"));
            }
            continue;
        }
        settings.set(def, &format!("{k}={v}")).map_err(bad)?;
    }
    settings.check(def).map_err(bad)?;
    Ok((settings, left_out))
}

/// The game server's container, rendered from its definition.
#[derive(Debug, Clone, PartialEq)]
pub struct PodLaunch {
    pub settings: GameSettings,
    /// Recorded settings the definition has no variable for.
    pub left_out: Vec<String>,
    /// The container's command: the server's argv (and `[agones] args`),
    /// behind a shell that writes the files first when there are any.
    pub command: Vec<String>,
    /// `HOME`, the definition's environment, and one `TICKPACK_FILE_N`
    /// per file (its contents).
    pub env: Vec<(String, String)>,
    /// The files' absolute paths in the container.
    pub files: Vec<String>,
}

/// The environment variable that carries the `n`th file (from 1).
pub fn file_variable(n: usize) -> String {
    // A host's own name: a definition's [env] cannot set it.
    format!("{}FILE_{n}", tickpack_game::env_name::HOST_PREFIX)
}

/// The game server's command, environment and files in its pod: the game
/// crate's launch spec for the result's settings, for instance 1 at
/// `0.0.0.0` and the definition's port, in `[agones] dir`.
pub fn pod_launch(s: &Sizing, def: &GameDef) -> Result<PodLaunch, FleetError> {
    let agones: &AgonesDef = def
        .agones
        .as_ref()
        .ok_or_else(|| FleetError::Input(format!("{} has no [agones] table", def.name)))?;
    let (settings, left_out) = game_settings(s, def)?;
    let spec = def
        .server_spec(&settings)
        .map_err(|m| FleetError::Input(format!("{}: {m}", def.name)))?;
    let dir = Path::new(&agones.dir);
    let slot = Slot {
        ip: "0.0.0.0",
        port: def.port,
        id: 1,
        dir,
        tickpack: Path::new(&agones.tickpack),
        // No host makes one in a pod: `{rcon_password}` is empty there,
        // which leaves the server's rcon off.
        rcon_password: None,
    };
    let mut argv = spec.argv(&slot);
    argv.extend(agones.args.iter().cloned());
    let mut env = vec![("HOME".to_string(), agones.dir.clone())];
    env.extend(spec.env(&slot).into_iter().filter(|(k, _)| k != "HOME"));
    let written = spec.files(&slot);
    if written.is_empty() {
        return Ok(PodLaunch {
            settings,
            left_out,
            command: argv,
            env,
            files: vec![],
        });
    }
    let mut script = vec![];
    let mut files = vec![];
    for (n, (rel, contents)) in written.into_iter().enumerate() {
        let path = dir.join(&rel);
        let parent = path.parent().unwrap_or(dir);
        let var = file_variable(n + 1);
        script.push(format!(
            "mkdir -p {} && printf '%s' \"${var}\" > {}",
            shell_quote(&parent.display().to_string()),
            shell_quote(&path.display().to_string())
        ));
        env.push((var, contents));
        files.push(path.display().to_string());
    }
    script.push("exec \"$@\"".into());
    let mut command = vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        script.join(" && "),
        def.name.clone(),
    ];
    command.extend(argv);
    Ok(PodLaunch {
        settings,
        left_out,
        command,
        env,
        files,
    })
}

/// One word for `sh`: in single quotes, each `'` as `'\''`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_one_shell_word() {
        assert_eq!(shell_quote("/home/x"), "'/home/x'");
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
    }
}
