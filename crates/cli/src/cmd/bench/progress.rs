//! `tickpack bench`'s progress on stderr: a bar when stderr is a terminal,
//! one line per step otherwise; the step lines are the report crate's
//! ([`tickpack_report::text::step_line`]).

use indicatif::{ProgressBar, ProgressStyle};
use tickpack_bench::Observer;
use tickpack_report::bench::Ladder;
use tickpack_report::words;

pub struct Progress {
    pub bar: Option<ProgressBar>,
    /// The run repeats: say which repetition a step belongs to.
    pub repeated: bool,
}

impl Progress {
    /// A bar of at most `steps` steps when stderr is a terminal.
    pub fn new(steps: u64, terminal: bool, repeated: bool) -> Progress {
        let bar = terminal.then(|| {
            let b = ProgressBar::new(steps);
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} steps (at most) {msg}",
                )
                .expect("static template"),
            );
            b.enable_steady_tick(std::time::Duration::from_millis(200));
            b
        });
        Progress { bar, repeated }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn step_started(&mut self, ladder: &str, index: u32, servers: u32) {
        let msg = format!("{ladder}: step {index}, {}", words::servers(servers));
        match &self.bar {
            Some(b) => b.set_message(msg),
            None => eprintln!("bench: {msg} ..."),
        }
    }
    fn repetition_started(&mut self, repetition: u32, of: u32) {
        self.note(&format!("repetition {repetition} of {of}"));
    }
    fn step_finished(&mut self, ladder: &Ladder) {
        let Some(s) = ladder.steps.last() else { return };
        let line = tickpack_report::text::step_line(ladder, s, self.repeated);
        match &self.bar {
            Some(b) => {
                b.inc(1);
                b.println(line);
            }
            None => eprintln!("bench: {line}"),
        }
    }
    fn note(&mut self, msg: &str) {
        match &self.bar {
            Some(b) => b.println(format!("bench: {msg}")),
            None => eprintln!("bench: {msg}"),
        }
    }
}
