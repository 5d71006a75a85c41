//! `tickpack demo`: one reference server and its players on this machine,
//! on separate cores, with the players' summary at the end.

use std::path::PathBuf;
use std::time::Duration;

use super::{parse_positive_duration, players};
use crate::child::ServerChild;
use crate::exit::{fail, Code, Failure};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Measured time.
    #[arg(long, default_value = "10s", allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub duration: Duration,
    /// Players (the server gets a slot for each).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u8).range(1..=255))]
    pub players: u8,
    /// Server-side bots.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(0..=64))]
    pub bots: u8,
    /// Ticks per second.
    #[arg(long, default_value_t = tickpack_wire::TickRate::DEFAULT, value_parser = super::parse_tick_rate)]
    pub tick_hz: tickpack_wire::TickRate,
    /// Write the players' result document here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<(), Failure> {
    if let Some(p) = &a.json {
        super::check_output_file("--json", p)?;
    }
    let cpus = tickpack_net::cpu::allowed_cpus().unwrap_or_default();
    // Server on the last CPU, players on the first: never the same core
    // when there are two or more.
    let (server_cpu, player_cpu) = match cpus.as_slice() {
        [] => (None, None),
        [only] => (Some(*only), Some(*only)),
        [first, .., last] => (Some(*last), Some(*first)),
    };
    let mut args = vec![
        "--bind".to_string(),
        "127.0.0.1:0".into(),
        "--tick-hz".into(),
        a.tick_hz.to_string(),
        "--bots".into(),
        a.bots.to_string(),
        "--max-players".into(),
        a.players.to_string(),
    ];
    if let Some(c) = server_cpu {
        args.extend(["--cpu".into(), c.to_string()]);
    }
    let mut server =
        ServerChild::start(&args).map_err(|e| fail(Code::Runtime, format!("{e:#}")))?;
    eprintln!(
        "demo: server pid {} on {} (CPU {}), {} players on CPU {}, {:?} measured",
        server.pid(),
        server.addr,
        server_cpu.map_or("any".into(), |c| c.to_string()),
        a.players,
        player_cpu.map_or("any".into(), |c| c.to_string()),
        a.duration
    );
    let pa = players::Args {
        game: super::GameArg::reference(),
        target: vec![server.addr],
        targets_file: None,
        players: usize::from(a.players),
        source_addrs: None,
        duration: a.duration,
        warmup: Some(Duration::from_secs(1)),
        cmd_rate: None,
        cmd_size: "40-200".into(),
        ping_rate: 10.0,
        ping_size: 64,
        connect_timeout: Some(Duration::from_secs(3)),
        loss_deadline: Duration::from_secs(1),
        threads: 1,
        cpus: player_cpu.map(|c| super::CpuList(vec![c])),
        json: a.json,
        busy_poll: false,
        io: tickpack_players::IoMode::Auto,
        seed: 1,
        quiet: false,
    };
    let result = players::run(pa);
    server.stop();
    result
}
