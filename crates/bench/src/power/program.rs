//! Running a power-reading program with a time limit, and averaging two
//! readings (start and end of a step): shared by the command and IPMI
//! sources.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tickpack_report::bench::PowerSourceKind;

use super::{check_busy, PowerError};

/// Runs `cmd` with stdin closed, in its own process group, and kills the
/// whole group if it takes longer than `timeout` (so `sh -c "sleep 60"`
/// does not leave the sleep behind).
pub(super) fn run_with_timeout(
    mut cmd: Command,
    program: &str,
    timeout: Duration,
) -> Result<Output, PowerError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = spawn_when_not_busy(&mut cmd).map_err(|source| PowerError::Spawn {
        program: program.to_string(),
        source,
    })?;
    let pgid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(source)) => Err(PowerError::Spawn {
            program: program.to_string(),
            source,
        }),
        Err(_) => {
            // The waiting thread owns the child; signal its process group.
            let _ = Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("kill -s KILL -- -{pgid}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            // Let the waiting thread reap it; a grandchild that escaped
            // the group may keep the pipes open, so do not wait forever.
            let _ = rx.recv_timeout(Duration::from_secs(1));
            Err(PowerError::Timeout {
                program: program.to_string(),
                timeout,
            })
        }
    }
}

/// `cmd.spawn()`, tried again for up to half a second while the program
/// is "text file busy" (ETXTBSY): a program just written or updated can
/// still be open for writing in a process that forked at that moment (any
/// fork of this multi-threaded process, before its exec closes the file).
fn spawn_when_not_busy(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

pub(super) fn short(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

pub(super) fn check_status(program: &str, out: &Output) -> Result<(), PowerError> {
    if out.status.success() {
        return Ok(());
    }
    let mut stderr = short(&out.stderr);
    if stderr.is_empty() {
        stderr = short(&out.stdout);
    }
    Err(PowerError::Failed {
        program: program.to_string(),
        status: out.status.to_string(),
        stderr,
    })
}

/// Two readings, at start and at the end, averaged.
#[derive(Debug, Default)]
pub(super) struct TwoPoint {
    first: Option<f64>,
}

impl TwoPoint {
    pub(super) fn start(&mut self, reading: Result<f64, PowerError>) -> Result<(), PowerError> {
        self.first = None;
        self.first = Some(reading?);
        Ok(())
    }
    pub(super) fn average(
        &self,
        source_name: PowerSourceKind,
        busy_fraction: f64,
        read: impl FnOnce() -> Result<f64, PowerError>,
    ) -> Result<f64, PowerError> {
        check_busy(busy_fraction)?;
        let first = self.first.ok_or(PowerError::NotStarted { source_name })?;
        Ok((first + read()?) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;

    use super::*;

    /// Regression (a flaky test): a fake power tool written by one test was
    /// "text file busy" when run, because another test's fork still held it
    /// open for writing; the reading failed and the source fell back to the
    /// model. Here the program stays open for writing for 50 ms.
    #[test]
    fn a_program_still_open_for_writing_elsewhere_runs_once_it_is_closed() {
        let dir = std::env::temp_dir().join(format!("tickpack-txtbsy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tool");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&path)
            .unwrap();
        f.write_all(b"#!/bin/sh\necho 42\n").unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(f);
        });
        let out = run_with_timeout(Command::new(&path), "tool", Duration::from_secs(5));
        writer.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let out = out.expect("the program runs once nobody writes it");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    }
}
