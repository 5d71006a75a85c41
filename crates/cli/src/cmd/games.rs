//! `tickpack games`: the games tickpack knows (built-in definition files)
//! and the check of a user's definition; and [`load`], the one way every
//! subcommand turns `--game NAME|FILE` into a checked [`GameDef`] before
//! anything is created.

use clap::{Args as ClapArgs, Subcommand};
use tickpack_game::registry;
use tickpack_game::{GameDef, Source};

use crate::exit::{fail, Code, Failure};

#[derive(ClapArgs, Debug)]
#[command(
    after_help = "A game is a definition file (TOML): see docs/games.md for an annotated \
complete example. Every --game flag takes a built-in name or a file's path.\n\n\
Examples:\n  tickpack games list\n  tickpack games show NAME > mine.toml (NAME: one that `games list` shows)\n  \
tickpack games check mine.toml\n  tickpack bench --game ./mine.toml --tile-servers 1"
)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: GamesCmd,
}

#[derive(Subcommand, Debug)]
pub enum GamesCmd {
    /// The built-in games: name, player protocol, query, tick, bots,
    /// description and the file each comes from.
    List,
    /// A game's definition file as it is (a built-in name or a path):
    /// a starting point for your own.
    Show {
        /// A built-in game's name or a definition file's path.
        game: String,
    },
    /// Checks definition files: exit 0 if every one is sound, else exit 2
    /// with `FILE:LINE: what is wrong` (one line each).
    Check {
        /// Definition files (TOML).
        #[arg(required = true)]
        files: Vec<String>,
    },
}

pub fn run(a: Args) -> Result<(), Failure> {
    match a.cmd {
        GamesCmd::List => {
            println!(
                "{:<12} {:<10} {:<8} {:>6} {:>4}  {:<28} description",
                "game", "players", "query", "tick", "bots", "file"
            );
            for (d, source) in registry::built_in() {
                let Source::BuiltIn(file) = source else {
                    continue;
                };
                println!(
                    "{:<12} {:<10} {:<8} {:>4}Hz {:>4}  {:<28} {}",
                    d.name,
                    d.players.protocol.as_str(),
                    d.query.protocol.as_str(),
                    d.tick.hz,
                    d.bots.default,
                    file,
                    d.description
                );
            }
            println!(
                "\nAny other game: a definition file (docs/games.md), e.g. --game ./mine.toml"
            );
            Ok(())
        }
        GamesCmd::Show { game } => {
            let (text, _, _) = read(&game)?;
            print!("{text}");
            Ok(())
        }
        GamesCmd::Check { files } => {
            let mut bad = 0;
            for f in &files {
                match load(f) {
                    Ok((d, _)) => {
                        println!("{f}: ok: game {:?}", d.name);
                        if let Some(note) = tickpack_game::source::missing_program(&d) {
                            eprintln!("{f}: note: {note}");
                        }
                    }
                    Err(e) => {
                        bad += 1;
                        eprintln!("{:#}", e.error);
                    }
                }
            }
            if bad > 0 {
                return Err(fail(
                    Code::Config,
                    format!("{bad} of {} definition files refused", files.len()),
                ));
            }
            Ok(())
        }
    }
}

/// The text of `--game ARG`, exit 2 when it cannot be read.
fn read(arg: &str) -> Result<(String, String, Source), Failure> {
    tickpack_game::source::read(arg).map_err(|e| fail(Code::Config, e))
}

/// `--game NAME|FILE` as a checked definition; exit 2 before anything is
/// created when it is unknown, unreadable or refused.
pub fn load(arg: &str) -> Result<(GameDef, Source), Failure> {
    tickpack_game::source::load(arg).map_err(|e| fail(Code::Config, e))
}
