//! The shipped game definitions (`games/*.toml`) the real-server launchers
//! ([`crate::q3_server`], [`crate::tw_server`]) take their program and
//! packages from, so a test starts what `bench --game` would.

use std::path::Path;

use tickpack_game::def::{GameDef, PlayerProtocol};

/// The definition of the shipped game whose players speak `protocol`.
pub(crate) fn definition(protocol: PlayerProtocol) -> GameDef {
    tickpack_game::registry::built_in()
        .into_iter()
        .map(|(def, _)| def)
        .find(|def| def.players.protocol == protocol)
        .unwrap_or_else(|| panic!("a shipped game definition with [players] protocol {protocol:?}"))
}

/// The dedicated server's program: the first word of the definition's
/// command.
pub(crate) fn program(def: &GameDef) -> String {
    def.command
        .split_whitespace()
        .next()
        .expect("a game definition's command names its program")
        .to_string()
}

/// What is missing when `def`'s program is not installed: the program and
/// the packages that provide it.
pub(crate) fn missing(def: &GameDef) -> Option<String> {
    let program = program(def);
    if Path::new(&program).exists() {
        return None;
    }
    let packages = def.packages.join(" ");
    Some(format!(
        "{program} is missing (apt-get install {packages}, or scripts/setup.sh)"
    ))
}

/// Whether `def`'s server can be started here; otherwise says so for
/// `test` with [`crate::skip_unless_ci`] (a failure under CI).
pub(crate) fn available(def: &GameDef, test: &str) -> bool {
    match missing(def) {
        None => true,
        Some(why) => {
            crate::skip_unless_ci(test, &why);
            false
        }
    }
}
