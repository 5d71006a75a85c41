//! Running a system program (`nft`) bounded: its three pipes alone,
//! its input written and its output drained on threads of their own, and
//! killed at a deadline. Every failure names the step, the exact command
//! line and the program's stderr, so an operator can rerun it by hand.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::NetError;

/// Default bound on one run of a system program, and on the wait for each
/// netlink answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `program ARGS` with `env` added and `stdin`, bounded by
/// `timeout`; returns stdout, or an error naming `step`, the command line
/// (as a person would type it) and stderr.
pub(crate) fn run(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    step: &str,
) -> Result<String, NetError> {
    let command = std::iter::once(program.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = Command::new(program);
    cmd.args(args).envs(env.iter().copied());
    // The program gets its three pipes alone ([`tickpack_sys::fds`]).
    let mut child = tickpack_sys::fds::only_stdio(&mut cmd)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| NetError::Spawn {
            step: step.to_string(),
            command: command.clone(),
            source,
        })?;
    // Its input is written on a thread of its own (a program that does
    // not read it cannot stall us past the deadline); a failed write
    // shows up as the program's own error.
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    // Both pipes are drained on their own threads (a chatty command
    // cannot stall on a full pipe) and reach EOF when it exits, so we
    // wake on that instead of polling; the deadline bounds the wait.
    let deadline = Instant::now() + timeout;
    let (tx, rx) = mpsc::channel::<(bool, String)>();
    let drain = |is_err: bool, pipe: Option<Box<dyn Read + Send>>| {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = tx.send((is_err, String::from_utf8_lossy(&buf).into_owned()));
        });
    };
    drain(false, child.stdout.take().map(|p| Box::new(p) as _));
    drain(true, child.stderr.take().map(|p| Box::new(p) as _));
    drop(tx);
    let timed_out = |mut child: std::process::Child| {
        let _ = child.kill();
        let _ = child.wait();
        NetError::Timeout {
            step: step.to_string(),
            command: command.clone(),
            timeout,
        }
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((true, text)) => stderr = text,
            Ok((false, text)) => stdout = text,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => return Err(timed_out(child)),
        }
    }
    // Its pipes are closed: it has exited or is about to.
    let mut nap = Duration::from_micros(20);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => return Err(timed_out(child)),
            Ok(None) => {
                thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(1));
            }
            Err(source) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NetError::Spawn {
                    step: step.to_string(),
                    command,
                    source,
                });
            }
        }
    };
    if status.success() {
        Ok(stdout)
    } else {
        Err(NetError::Command {
            step: step.to_string(),
            command,
            status: status.to_string(),
            stderr: stderr.trim().to_string(),
        })
    }
}
