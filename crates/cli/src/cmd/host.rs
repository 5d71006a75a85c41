//! `tickpack host up | status | change-map | down`: the consolidation host.
//!
//! - [`args`]: the arguments and `host up --help`'s examples;
//! - [`config`]: a host file and flags into the typed configuration
//!   (`tickpack-fleet` reads and checks them);
//! - [`up`], [`status`], [`change_map`], [`down`]: the commands; [`metrics`]: the
//!   Prometheus families `host up --metrics` serves;
//! - [`run_dir`]: where a host's run dir is; [`failure`]: exit codes.

use clap::Subcommand;

use crate::exit::Failure;

pub mod args;
pub mod change_map;
pub mod config;
pub mod down;
pub mod failure;
pub mod metrics;
pub mod run_dir;
pub mod status;
pub mod up;

pub use run_dir::RUN_ROOT;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: HostCmd,
}

#[derive(Subcommand, Debug)]
pub enum HostCmd {
    /// Start the instances and supervise them in the foreground until
    /// `tickpack host down`, SIGTERM or Ctrl-C.
    #[command(allow_negative_numbers = true, after_help = args::UP_EXAMPLES)]
    Up(Box<args::UpArgs>),
    /// Show the instances of a running host.
    Status(args::StatusArgs),
    /// Change an instance's map to the next of its game's rotation, in the
    /// middle of a run (a game whose definition has [rcon]); the server's
    /// answer shows in `host status`.
    ChangeMap(args::ChangeMapArgs),
    /// Stop a host and remove everything it created (also after a crash).
    Down(args::DownArgs),
}

pub fn run(a: Args) -> Result<(), Failure> {
    match a.cmd {
        HostCmd::Up(u) => up::up(*u),
        HostCmd::Status(s) => status::status(s),
        HostCmd::ChangeMap(c) => change_map::change_map(c),
        HostCmd::Down(d) => down::down(d),
    }
}

/// `__instance-init`: the init of an isolated instance (internal).
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    #[arg(long)]
    pub uid: Option<u32>,
    #[arg(long)]
    pub gid: Option<u32>,
    /// A descriptor holding the command's environment (NUL-separated
    /// KEY=VALUE), read and closed by the init.
    #[arg(long)]
    pub env_fd: Option<i32>,
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

pub fn instance_init(a: InitArgs) -> Result<(), Failure> {
    let code = tickpack_host::spawn::instance_init(a.uid, a.gid, a.env_fd, &a.command);
    std::process::exit(code);
}
