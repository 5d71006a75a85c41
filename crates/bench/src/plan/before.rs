//! What the plan checks beside the game: the user's machines before
//! consolidating (`--before-servers` and the cost inputs, all or none),
//! and the room the instance range has for the players' source addresses.

use tickpack_report::bench::BenchSettings;

use super::{config_error, PlanError};
use crate::{Before, CostInputs, GameServer};

/// The "before" flags as given.
#[derive(Debug, Clone, Default)]
pub struct BeforeFlags {
    pub servers: Option<u32>,
    pub watts: Option<f64>,
    pub machines: Option<u64>,
    pub price_per_kwh: Option<f64>,
    pub currency: Option<String>,
    pub currency_rate: f64,
}

/// The "before" from the flags: none, the servers alone (a ratio), or
/// with every cost input (a ratio and the cost). Some cost flags without
/// the rest is a configuration error naming the missing ones: a figure the
/// user did not give is never made up.
pub fn before(f: &BeforeFlags) -> Result<Option<Before>, PlanError> {
    let cost_flags = [
        ("--before-watts", f.watts.is_some()),
        ("--machines", f.machines.is_some()),
        ("--price-per-kwh", f.price_per_kwh.is_some()),
        ("--currency", f.currency.is_some()),
    ];
    let given: Vec<&str> = cost_flags.iter().filter(|f| f.1).map(|f| f.0).collect();
    let mut missing: Vec<&str> = cost_flags.iter().filter(|f| !f.1).map(|f| f.0).collect();
    if f.servers.is_none() {
        missing.insert(0, "--before-servers");
    }
    if !given.is_empty() && !missing.is_empty() {
        return Err(config_error(format!(
            "the cost figures need what your machines run and draw today: {} given, {} missing",
            given.join(", "),
            missing.join(", ")
        )));
    }
    let Some(servers) = f.servers else {
        return Ok(None);
    };
    let cost = match (f.watts, f.machines, f.price_per_kwh, &f.currency) {
        (Some(before_watts), Some(machines), Some(price_per_kwh), Some(currency)) => {
            Some(CostInputs {
                before_watts,
                machines,
                price_per_kwh,
                currency: currency.clone(),
                currency_rate: f.currency_rate,
                hours_per_year: 8760.0,
            })
        }
        _ => None,
    };
    Ok(Some(Before { servers, cost }))
}

/// Refuses, before any step, a range that cannot hold the source
/// addresses the players need (the game's limit per address) beside the
/// last step's servers (netns; loopback has room for them).
pub fn check_source_addr_room(
    range: Option<&str>,
    settings: &BenchSettings,
    game: &GameServer,
    backend: Option<tickpack_host::fleet::Backend>,
    net: tickpack_host::netpath::NetKind,
) -> Result<(), PlanError> {
    let n = crate::game::source_addrs_for(game, settings.players_per_server);
    if n == 0 || backend == Some(tickpack_host::fleet::Backend::Process) {
        return Ok(());
    }
    let range = range.unwrap_or("198.18.0.0/16");
    let last = settings.max_steps.saturating_mul(settings.tile_servers);
    tickpack_host::netpath::AddrPlan::parse(range)
        .and_then(|p| p.with_sources(net, n))
        .and_then(|p| p.check(net, last))
        .map_err(|e| {
            config_error(format!(
                "--range {range}: {n} source addresses for {} players per server (at most {} per address) and {last} servers: {e}",
                settings.players_per_server,
                crate::game::per_source_limit(game).unwrap_or(0)
            ))
        })
}
