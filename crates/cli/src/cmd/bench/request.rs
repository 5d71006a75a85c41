//! `tickpack bench`'s flags as the library's typed request
//! ([`tickpack_bench::plan::Request`]), after the checks only the binary
//! can make (CPUs given, directories, open files, removed flags); the
//! plan itself is built and checked in the library.

use tickpack_bench::plan::{before::BeforeFlags, PlanError, QosFlags, Request};
use tickpack_bench::{BenchConfig, Compare};

use super::{Args, CompareArg};
use crate::cmd::{check_cpus, check_dir_flag};
use crate::exit::{fail, Code, Failure};

/// The removed flags, refused in one line naming what replaced them.
fn refuse_removed(a: &Args) -> Result<(), Failure> {
    if !a.map.is_empty() {
        return Err(fail(
            Code::Config,
            "--map is gone: a game's map is one of its variables, --set map=NAME (`tickpack games show GAME`)",
        ));
    }
    if !a.game_arg.is_empty() {
        return Err(fail(
            Code::Config,
            "--game-arg is gone: set a game's variables with --set NAME=VALUE (`tickpack games show GAME`)",
        ));
    }
    Ok(())
}

fn compare_of(c: CompareArg) -> Compare {
    match c {
        CompareArg::Placement => Compare::Placement,
        CompareArg::Backend => Compare::Backend,
        CompareArg::Game => Compare::Game,
        CompareArg::Guard => Compare::Guard,
        CompareArg::Load => Compare::Load,
    }
}

/// The typed request of these flags.
pub fn request(a: &Args) -> Result<Request, Failure> {
    refuse_removed(a)?;
    if let Some(c) = &a.load_cpus {
        check_cpus("--load-cpus", &c.0)?;
    }
    if let Some(c) = &a.cost {
        if c.parse::<tickpack_sim::world::CostProfile>().is_err() {
            return Err(fail(
                Code::Config,
                format!("--cost {c:?}: expected light, default, heavy or a factor"),
            ));
        }
    }
    check_dir_flag("--out", &a.out)?;
    if let Some(d) = &a.run_dir {
        check_dir_flag("--run-dir", d)?;
    }
    Ok(Request {
        quick: a.quick,
        out: a.out.clone(),
        compare: a.compare.map(compare_of),
        batch: a.batch.clone(),
        repeat: a.repeat,
        games: a.game.clone(),
        set: a.set.clone(),
        cost: a.cost.clone(),
        tile_servers: a.tile_servers,
        players_per_server: a.players_per_server,
        bots: a.bots,
        tick_hz: a.tick_hz,
        step_duration: a.step_duration,
        warmup: a.warmup,
        max_steps: a.max_steps,
        fixed_steps: a.fixed_steps,
        steps_past_failure: a.steps_past_failure,
        confirm_failures: !a.no_confirm,
        max_steal: a.max_steal,
        max_foreign: a.max_foreign,
        steal_retries: a.steal_retries,
        headroom: a.headroom,
        qos: QosFlags {
            p99_ms: a.qos_p99_ms,
            relative: a.qos_relative,
            tick_lateness_ms: a.qos_tick_lateness_ms,
            loss_percent: a.qos_loss_percent,
            frame_budget: a.qos_frame_budget,
            query_p99_ms: a.qos_query_p99_ms,
        },
        probe: a.probe,
        backend: a.backend.clone(),
        net: a.net.clone(),
        load_cpus: a.load_cpus.as_ref().map(|c| c.0.clone()),
        power: tickpack_bench::power::PowerConfig {
            command: a.power_command.clone(),
            idle_watts: a.idle_watts,
            max_watts: a.max_watts,
            ..Default::default()
        },
        load: a.load.clone(),
        allow_idle: a.allow_idle,
        project_cores: a.project_cores,
        before: BeforeFlags {
            servers: a.before_servers,
            watts: a.before_watts,
            machines: a.machines,
            price_per_kwh: a.price_per_kwh,
            currency: a.currency.clone(),
            currency_rate: a.currency_rate,
        },
        run_dir: a
            .run_dir
            .clone()
            .unwrap_or_else(|| super::run_dir::default_run_dir(&a.name)),
        host_name: a.name.clone(),
        tile: a.tile.clone(),
        range: a.range.clone(),
    })
}

/// The run these flags ask for, checked: the library's plan, then the
/// open files the last step's players need.
pub fn config(a: &Args) -> Result<BenchConfig, Failure> {
    let cfg = request(a)?.plan().map_err(|e| match e {
        PlanError::Config(m) => fail(Code::Config, m),
        PlanError::Idle(m) => fail(Code::Idle, m),
    })?;
    let s = &cfg.settings;
    // The last step's players each hold a socket in this process.
    let most_players =
        u64::from(s.max_steps) * u64::from(s.tile_servers) * u64::from(s.players_per_server);
    crate::cmd::players::check_file_limit(
        &format!("the last step's {most_players} players (--max-steps x --tile-servers x --players-per-server)"),
        usize::try_from(most_players).unwrap_or(usize::MAX),
    )?;
    Ok(cfg)
}
