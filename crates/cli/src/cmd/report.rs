//! `tickpack report`: the HTML page from result files, and `tickpack report
//! merge`: players results of several load generators made one. The work
//! is the report crate's (`html`, `merge`); this reads, checks and writes.

use std::path::PathBuf;

use tickpack_report::merge::merge_players;

use super::check_output_file;
use crate::exit::{fail, Code, Failure, WithCode};

#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = concat!("Examples:
  tickpack report out/result.json --out report.html
  tickpack report before/result.json after/result.json --out compare.html
  tickpack report --compare monday/result.json tuesday/result.json
  tickpack report merge lg1.json lg2.json lg3.json --out all.json
  tickpack report all.json --out all.html

", exit_codes!())
)]
pub struct Args {
    #[command(subcommand)]
    pub merge: Option<Sub>,
    /// Result files: `result.json` of `tickpack bench` (several are compared
    /// side by side), or players results (`tickpack players --json`, or
    /// merged by `tickpack report merge`: shown marked as merged, with its
    /// sources).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Where to write the HTML report.
    #[arg(long, default_value = "report.html")]
    pub out: PathBuf,
    /// Two bench results side by side on stdout: each one's density and
    /// machine speed (the calibration every bench records), and how much of
    /// their difference the machines explain. Neither is called faster when
    /// the calibrations differ more than the densities do. The HTML report
    /// is written as well.
    #[arg(long)]
    pub compare: bool,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Merge players results of several load generators into one result:
    /// histograms added exactly (the percentiles are those of all samples,
    /// not averages of percentiles), counts summed, per-source rows kept.
    ///
    /// The runs must share game, tick rate, command rate, loss deadline and
    /// measured duration, and must have run at the same time (their end
    /// times no further apart than a run lasts); otherwise nothing is
    /// written and the exit code is 2. Outages: counts and totals summed,
    /// the longest is the longest of any source. A merged result can be
    /// merged again, and rendered with `tickpack report FILE`.
    ///
    /// Like `tickpack players`, exits 5 if a player never connected and 6
    /// if the merged run lost snapshots or commands or had an outage (after
    /// writing the result).
    #[command(after_help = concat!("Example: the same players command on three machines, started together,
then the results merged on any one:
  lg1$ tickpack players --targets-file servers-a.txt --players 1200 --duration 5m --json lg1.json
  lg2$ tickpack players --targets-file servers-b.txt --players 1200 --duration 5m --json lg2.json
  lg3$ tickpack players --targets-file servers-c.txt --players 1200 --duration 5m --json lg3.json
  $ tickpack report merge lg1.json lg2.json lg3.json --out all.json

", exit_codes!()))]
    Merge(MergeArgs),
}

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Players results (`tickpack players --json`, or earlier merges), two
    /// or more.
    #[arg(required = true, num_args = 2..)]
    pub results: Vec<PathBuf>,
    /// Where to write the merged result (written whole or not at all);
    /// `-` for stdout.
    #[arg(long)]
    pub out: PathBuf,
    /// No summary on stdout.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(a: Args) -> Result<(), Failure> {
    match a.merge {
        Some(Sub::Merge(m)) => merge(m),
        None => {
            if a.compare {
                compare(&a.results)?;
            }
            html(&a.results, &a.out)
        }
    }
}

fn compare(results: &[PathBuf]) -> Result<(), Failure> {
    let [a, b] = results else {
        return Err(fail(
            Code::Config,
            format!(
                "--compare takes two bench results (result.json), got {}",
                results.len()
            ),
        ));
    };
    let ra = tickpack_report::html::read_result(a).code(Code::Config)?;
    let rb = tickpack_report::html::read_result(b).code(Code::Config)?;
    let (la, lb) = (a.display().to_string(), b.display().to_string());
    for line in tickpack_report::machine::compare_results(&la, &ra, &lb, &rb) {
        println!("{line}");
    }
    Ok(())
}

fn html(results: &[PathBuf], out: &std::path::Path) -> Result<(), Failure> {
    check_output_file("--out", out)?;
    let html = tickpack_report::html::render_file(results).code(Code::Config)?;
    tickpack_report::write_atomic(out, html.as_bytes())?;
    println!("report: {}", out.display());
    Ok(())
}

fn merge(a: MergeArgs) -> Result<(), Failure> {
    check_output_file("--out", &a.out)?;
    let sources = a
        .results
        .iter()
        .map(|p| {
            let r = tickpack_report::html::read_players(p).code(Code::Config)?;
            Ok((p.display().to_string(), r))
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let merged = merge_players(&sources).code(Code::Config)?;
    if a.out.as_os_str() == "-" {
        println!("{}", serde_json::to_string_pretty(&merged)?);
    } else {
        tickpack_report::write_json_atomic(&a.out, &merged)?;
        if !a.quiet {
            println!(
                "merged {} results ({} sources) into {}",
                sources.len(),
                merged.merged_from.len(),
                a.out.display()
            );
            super::players::print_summary(&merged);
        }
    }
    if (merged.connected) < merged.players {
        return Err(fail(
            Code::Unreachable,
            format!(
                "only {} of {} players connected",
                merged.connected, merged.players
            ),
        ));
    }
    if let Some(why) = super::players::loss(&merged) {
        return Err(fail(Code::Lost, why));
    }
    Ok(())
}
