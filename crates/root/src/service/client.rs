//! The supervisor's end: starts the root process and asks it.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::net::{AddressFamily, SocketFlags, SocketType};

use crate::netpath::{NetKind, NetRecord};

use super::protocol::{self, Answer, FrameError, Request, MAX_MESSAGE, SCHEMA};

/// How long an answer may take (a network of 250 instances takes seconds).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the process may take to end once its socket is closed.
const END_WAIT: Duration = Duration::from_secs(5);

/// Why the root process did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("starting the root process: {0}")]
    Start(std::io::Error),
    /// Checked and not done.
    #[error("refused: {0}")]
    Refused(String),
    /// Tried; what the system said.
    #[error("{0}")]
    Failed(String),
    #[error("talking to the root process: {0}")]
    Talk(String),
}

/// A session with one host's root process.
pub struct Root {
    child: Option<Child>,
    sock: Option<OwnedFd>,
    buf: Vec<u8>,
}

impl Root {
    /// Starts `exe __root` (as this process's user: root) in its own
    /// process group (a Ctrl-C reaches the supervisor, which then asks it
    /// to take the network down), and opens the session for `host`.
    /// Returns what its record of an earlier run of the host lists.
    pub fn start(exe: &Path, host: &str, run_dir: &Path) -> Result<(Root, NetRecord), RootError> {
        use std::os::unix::process::CommandExt;
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| RootError::Start(e.into()))?;
        let child = Command::new(exe)
            .arg(super::SUBCOMMAND)
            .current_dir("/")
            .env_clear()
            // Where `nft` is, and nothing else of the caller's.
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(RootError::Start)?;
        let mut root = Root::over(ours).map_err(RootError::Start)?;
        root.child = Some(child);
        let leftovers = root.hello(host, run_dir)?;
        Ok((root, leftovers))
    }

    /// Over `sock`, whose other end someone else serves (tests).
    pub fn over(sock: OwnedFd) -> std::io::Result<Root> {
        for t in [
            rustix::net::sockopt::Timeout::Recv,
            rustix::net::sockopt::Timeout::Send,
        ] {
            rustix::net::sockopt::set_socket_timeout(&sock, t, Some(ANSWER_TIMEOUT))?;
        }
        Ok(Root {
            child: None,
            sock: Some(sock),
            buf: vec![0u8; MAX_MESSAGE + 1],
        })
    }

    /// Opens the session (the first request).
    pub fn hello(&mut self, host: &str, run_dir: &Path) -> Result<NetRecord, RootError> {
        match self.ask(&Request::Hello {
            schema: SCHEMA.into(),
            host: host.into(),
            run_dir: run_dir.into(),
        })? {
            Answer::Welcome { leftovers } => Ok(leftovers),
            a => Err(unexpected(&a)),
        }
    }

    /// Sends `req` and reads its answer; `refused` and `failed` become
    /// errors.
    pub fn ask(&mut self, req: &Request) -> Result<Answer, RootError> {
        let sock = self
            .sock
            .as_ref()
            .ok_or_else(|| RootError::Talk("it was closed".into()))?;
        protocol::send(sock, req).map_err(|e| RootError::Talk(e.to_string()))?;
        match protocol::recv::<Answer>(sock, &mut self.buf) {
            Ok(Answer::Refused { why }) => Err(RootError::Refused(why)),
            Ok(Answer::Failed { error }) => Err(RootError::Failed(error)),
            Ok(a) => Ok(a),
            Err(FrameError::Closed) => Err(RootError::Talk("it ended".into())),
            Err(e) => Err(RootError::Talk(e.to_string())),
        }
    }

    /// A uid block for the host: its base, and what the host should say
    /// (blocks passed over, its own leftovers ended).
    pub fn take_uid_block(&mut self) -> Result<(u32, Vec<String>), RootError> {
        match self.ask(&Request::TakeUidBlock)? {
            Answer::UidBlock { base, said } => Ok((base, said)),
            a => Err(unexpected(&a)),
        }
    }

    /// Gives the host's uid block back.
    pub fn release_uid_block(&mut self) -> Result<(), RootError> {
        self.done(&Request::ReleaseUidBlock)
    }

    /// The host's network: namespaces, links, addresses, routes.
    pub fn net_up(
        &mut self,
        kind: NetKind,
        range: &str,
        source_addrs: u32,
        instances: &[u32],
    ) -> Result<NetRecord, RootError> {
        self.net(&Request::NetUp {
            kind,
            range: range.into(),
            source_addrs,
            instances: instances.to_vec(),
        })
    }

    /// The host's firewall table over its links.
    pub fn firewall(
        &mut self,
        game_port: u16,
        allow_host_ports: &[u16],
    ) -> Result<NetRecord, RootError> {
        self.net(&Request::Firewall {
            game_port,
            allow_host_ports: allow_host_ports.to_vec(),
        })
    }

    fn net(&mut self, req: &Request) -> Result<NetRecord, RootError> {
        match self.ask(req)? {
            Answer::Net { record } => Ok(record),
            a => Err(unexpected(&a)),
        }
    }

    /// Removes the host's network.
    pub fn net_down(&mut self) -> Result<(), RootError> {
        self.done(&Request::NetDown)
    }

    /// Removes what `record` (an earlier run's) lists; returns what was
    /// there.
    pub fn remove_leftovers(&mut self, record: &NetRecord) -> Result<Vec<String>, RootError> {
        self.removed(&Request::RemoveLeftovers {
            record: record.clone(),
        })
    }

    /// Removes every namespace and link named for the host, and its
    /// firewall table; returns what was there.
    pub fn sweep(&mut self) -> Result<Vec<String>, RootError> {
        self.removed(&Request::Sweep)
    }

    /// Writes a config file of `instance` (relative to its directory).
    pub fn write_file(
        &mut self,
        instance: u32,
        path: &Path,
        contents: &str,
    ) -> Result<(), RootError> {
        let path = path
            .to_str()
            .ok_or_else(|| RootError::Refused(format!("{} is not UTF-8", path.display())))?;
        self.done(&Request::WriteFile {
            instance,
            path: path.into(),
            contents: contents.into(),
        })
    }

    fn done(&mut self, req: &Request) -> Result<(), RootError> {
        match self.ask(req)? {
            Answer::Done => Ok(()),
            a => Err(unexpected(&a)),
        }
    }

    fn removed(&mut self, req: &Request) -> Result<Vec<String>, RootError> {
        match self.ask(req)? {
            Answer::Removed { items } => Ok(items),
            a => Err(unexpected(&a)),
        }
    }
}

fn unexpected(a: &Answer) -> RootError {
    RootError::Talk(format!("an answer of another kind: {a:?}"))
}

impl Drop for Root {
    /// Closes the socket (the process ends) and reaps it, killing it
    /// after [`END_WAIT`].
    fn drop(&mut self) {
        self.sock = None;
        if let Some(child) = &mut self.child {
            let until = Instant::now() + END_WAIT;
            loop {
                match child.try_wait() {
                    Ok(None) if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Ok(None) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    _ => break,
                }
            }
        }
    }
}
