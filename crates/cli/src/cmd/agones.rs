//! `tickpack agones fleet`: an Agones Fleet and FleetAutoscaler sized from a
//! bench result, for any game whose definition has an `[agones]` table.
//! The sizing and the YAML are `tickpack_agones_fleet`'s; this reads the
//! result and the definition and writes the manifest (stdout, or `--out`
//! atomically).

use std::path::PathBuf;

use tickpack_agones_fleet::options::DEFAULT_BUFFER;
use tickpack_agones_fleet::sizing::size_member;
use tickpack_agones_fleet::{definition, render, size, FleetOptions};

use super::{parse_game, GameArg};
use crate::exit::{fail, Code, Failure, WithCode};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: AgonesCmd,
}

#[derive(clap::Subcommand, Debug)]
pub enum AgonesCmd {
    /// Write an Agones Fleet and a FleetAutoscaler (Buffer policy) for the
    /// game a bench result measured, sized from its measurements.
    ///
    /// CPU per server pod: the server cores split over the recommended
    /// servers (shared cores, a request without a CPU limit), or, when a
    /// `--compare placement` run showed that pinning matters, whole CPUs in
    /// a Guaranteed pod (the kubelet's static CPU manager pins only those).
    /// Memory: the largest measured peak RSS of one server times 3/2,
    /// request == limit. The image, port, health checks and the container
    /// command come from the game's definition (its `[agones]` table, its
    /// command and files, its `[query]` for the sidecar); every number is
    /// explained in a comment in the manifest. Images of the built-in
    /// games: deploy/docker/*.Dockerfile; walkthrough: docs/agones.md.
    #[command(after_help = crate::EXIT_CODES)]
    Fleet(FleetArgs),
}

#[derive(clap::Args, Debug)]
pub struct FleetArgs {
    /// The bench result to size from (result.json of `tickpack bench`). It
    /// must have a recommended density.
    #[arg(long, value_name = "RESULT_JSON")]
    pub from: PathBuf,
    /// Write the manifest here (atomically: a temp file, then a rename);
    /// default: standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The game's definition, a built-in game or a definition file's path
    /// (docs/games.md); it must be the game the result measured and have an
    /// `[agones]` table [default: the result's game, built in].
    #[arg(long, value_name = "NAME|FILE", value_parser = parse_game)]
    pub game: Option<GameArg>,
    /// The Fleet's name (the autoscaler adds `-autoscaler`); default
    /// `tickpack-GAME`.
    #[arg(long)]
    pub name: Option<String>,
    /// The container image; default the definition's `[agones] image`
    /// (`{version}`: tickpack's version).
    #[arg(long)]
    pub image: Option<String>,
    /// Servers the Fleet starts with, and the fewest the autoscaler keeps
    /// (minReplicas); at least --buffer.
    #[arg(long, default_value_t = DEFAULT_BUFFER)]
    pub replicas: u32,
    /// Ready servers the autoscaler keeps waiting for players (bufferSize):
    /// two, so an allocation right after another still finds one while a
    /// new server starts.
    #[arg(long, default_value_t = DEFAULT_BUFFER)]
    pub buffer: u32,
    /// The most servers the autoscaler may run (maxReplicas); default the
    /// bench's recommended servers: one machine like the measured one.
    #[arg(long)]
    pub max_replicas: Option<u32>,
    /// Memory per server pod, MiB, for a result without measured memory
    /// (written before tickpack recorded it); it replaces the measurement
    /// when given.
    #[arg(long, value_name = "MIB")]
    pub memory_mib: Option<u64>,
}

pub fn run(a: Args) -> Result<(), Failure> {
    match a.cmd {
        AgonesCmd::Fleet(f) => fleet(f),
    }
}

fn fleet(a: FleetArgs) -> Result<(), Failure> {
    let result = tickpack_report::html::read_result(&a.from).code(Code::Config)?;
    let opts = FleetOptions {
        name: a.name,
        image: a.image,
        replicas: a.replicas,
        buffer: a.buffer,
        max_replicas: a.max_replicas,
        source: a.from.display().to_string(),
        version: env!("CARGO_PKG_VERSION").into(),
    };
    let in_result = |e: tickpack_agones_fleet::FleetError| {
        fail(Code::Config, format!("{}: {e}", a.from.display()))
    };
    let text = match &result.settings.tile {
        // A tile run: one Fleet per member, each sized from the tile's
        // density through the whole curve, as one YAML stream.
        Some(tile) => {
            if a.game.is_some() || opts.name.is_some() {
                return Err(fail(
                    Code::Config,
                    format!(
                        "{}: a tile run makes one Fleet per member, each named and defined by its game: --game and --name do not apply",
                        a.from.display()
                    ),
                ));
            }
            let mut text = String::new();
            for m in 0..tile.members.len() {
                let sizing = size_member(&result, m, a.memory_mib).map_err(in_result)?;
                let def = definition(&sizing.game, None).map_err(in_result)?;
                if !text.is_empty() {
                    text.push_str("---\n");
                }
                text.push_str(&render(&sizing, &def, &opts).map_err(in_result)?);
            }
            text
        }
        None => {
            let sizing = size(&result, a.memory_mib).map_err(in_result)?;
            let def = definition(&sizing.game, a.game.map(|g| g.def)).map_err(in_result)?;
            render(&sizing, &def, &opts).map_err(in_result)?
        }
    };
    match a.out {
        Some(path) => tickpack_report::write_atomic(&path, text.as_bytes()).code(Code::Runtime)?,
        None => print!("{text}"),
    }
    Ok(())
}
