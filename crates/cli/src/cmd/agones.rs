//! `tickpack agones fleet`: an Agones Fleet and FleetAutoscaler sized from a
//! bench result. The sizing and the YAML are `tickpack_agones_fleet`'s;
//! this reads the result and writes the manifest (stdout, or `--out`
//! atomically).

use std::path::PathBuf;

use tickpack_agones_fleet::manifest::DEFAULT_BUFFER;
use tickpack_agones_fleet::{fleet_manifest, FleetOptions};

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
    /// request == limit. Ports, health checks and the container command
    /// come from the game; every number is explained in a comment in the
    /// manifest. Images: deploy/docker/*.Dockerfile; walkthrough:
    /// docs/agones.md.
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
    /// The Fleet's name (the autoscaler adds `-autoscaler`); default
    /// `tickpack-reference` or `tickpack-openarena`.
    #[arg(long)]
    pub name: Option<String>,
    /// The container image; default `tickpack-server:VERSION` or
    /// `tickpack-openarena:VERSION`, as docs/agones.md builds them.
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
    let text = fleet_manifest(&result, a.memory_mib, &opts)
        .map_err(|e| fail(Code::Config, format!("{}: {e}", a.from.display())))?;
    match a.out {
        Some(path) => tickpack_report::write_atomic(&path, text.as_bytes()).code(Code::Runtime)?,
        None => print!("{text}"),
    }
    Ok(())
}
