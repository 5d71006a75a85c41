//! `tickpack host change-map --instance N`: asks a running host to change
//! one instance's map to the next of its game's rotation (the definition's
//! `[rcon]`), and says what was sent; the server's answer comes later, in
//! `host status` and the host's events.

use tickpack_host::status::change_map as ask;
use tickpack_sys::text::{escape, SHORT};

use super::args::ChangeMapArgs;
use super::failure::control_failure;
use super::run_dir::run_dir;
use crate::exit::Failure;

/// Sends the request and prints what the host sent.
pub fn change_map(a: ChangeMapArgs) -> Result<(), Failure> {
    let dir = run_dir(&a.name, &a.run_dir)?;
    let sent = ask(&dir, a.instance).map_err(control_failure)?;
    println!(
        "instance {}: changing the map to {} (sent `{}`); `tickpack host status` shows the server's answer",
        sent.instance,
        escape(&sent.map, SHORT),
        escape(&sent.command, SHORT)
    );
    Ok(())
}
