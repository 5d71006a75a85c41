//! `tickpack games`: the games tickpack knows (built-in definition files)
//! and the check of a user's definition; and [`load`], the one way every
//! subcommand turns `--game NAME|FILE` into a checked [`GameDef`] before
//! anything is created.

use std::io::Read;
use std::path::Path;

use clap::{Args as ClapArgs, Subcommand};
use tickpack_game::def::MAX_DEF_BYTES;
use tickpack_game::registry;
use tickpack_game::{GameDef, Source};

use crate::exit::{fail, Code, Failure};

#[derive(ClapArgs, Debug)]
#[command(
    after_help = "A game is a definition file (TOML): see docs/games.md for an annotated \
complete example. Every --game flag takes a built-in name or a file's path.\n\n\
Examples:\n  tickpack games list\n  tickpack games show nexuiz > mine.toml\n  \
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
                "{:<12} {:<9} {:<8} {:>6} {:>4}  {:<28} description",
                "game", "players", "query", "tick", "bots", "file"
            );
            for (d, source) in registry::built_in() {
                let Source::BuiltIn(file) = source else {
                    continue;
                };
                println!(
                    "{:<12} {:<9} {:<8} {:>4}Hz {:>4}  {:<28} {}",
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
                        if let Some(note) = missing_program(&d) {
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

/// The text of `--game ARG`: a built-in's, or a file's (a regular file
/// of at most [`MAX_DEF_BYTES`]), with the name errors use.
fn read(arg: &str) -> Result<(String, String, Source), Failure> {
    if !registry::is_path(arg) {
        let (_, source) = registry::by_name(arg).map_err(|e| fail(Code::Config, e.message))?;
        let Source::BuiltIn(file) = source else {
            unreachable!("the registry holds built-in files")
        };
        let text = registry::BUILT_IN
            .iter()
            .find(|(f, _)| *f == file)
            .map_or("", |(_, t)| t);
        return Ok((text.to_string(), file.to_string(), source));
    }
    let refuse = |why: String| fail(Code::Config, format!("{arg}: {why}"));
    let file = std::fs::File::open(Path::new(arg)).map_err(|e| refuse(e.to_string()))?;
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file".into()));
    }
    if meta.len() > MAX_DEF_BYTES {
        return Err(refuse(format!(
            "larger than {MAX_DEF_BYTES} bytes: not a game definition"
        )));
    }
    let mut bytes = vec![];
    file.take(MAX_DEF_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text".into()))?;
    Ok((text, arg.to_string(), Source::File(arg.to_string())))
}

/// `--game NAME|FILE` as a checked definition; exit 2 before anything is
/// created when it is unknown, unreadable or refused.
pub fn load(arg: &str) -> Result<(GameDef, Source), Failure> {
    let (text, name, source) = read(arg)?;
    let def = GameDef::parse(&name, &text).map_err(|e| fail(Code::Config, e))?;
    Ok((def, source))
}

/// Why the game cannot run on this machine (its program is missing), with
/// what to install; `None` when it can (or the program is not a path).
pub fn missing_program(def: &GameDef) -> Option<String> {
    let program = def.program();
    if !program.starts_with('/') || Path::new(program).is_file() {
        return None;
    }
    Some(if def.packages.is_empty() {
        format!("{} is not installed ({program} is missing)", def.name)
    } else {
        format!(
            "{} is not installed ({program} is missing): apt-get install {} (or run scripts/setup.sh)",
            def.name,
            def.packages.join(" ")
        )
    })
}
