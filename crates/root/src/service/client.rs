//! The supervisor's end: starts the root process and asks it.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::netpath::{NetKind, NetRecord};

use super::children::WalledCommand;
use super::protocol::{self, Answer, FrameError, Request, Walls, MAX_MESSAGE, SCHEMA};

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

/// A session with one host's root process. Its requests may come from
/// several threads (each waits for its own answer).
pub struct Root {
    child: Option<Child>,
    link: Mutex<Link>,
}

/// `exe SUBCOMMAND` (the root process or its broker) serving `sock` (its stdin): in `/`, with nothing of the
/// caller's environment but a `PATH` (where `nft` is), in its own process
/// group (a Ctrl-C reaches the supervisor, which then asks it to take the
/// network down).
pub(super) fn root_command(exe: &Path, subcommand: &str, sock: OwnedFd) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(exe);
    cmd.arg(subcommand)
        .current_dir("/")
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .stdin(Stdio::from(sock))
        .stdout(Stdio::null())
        .process_group(0);
    cmd
}

impl std::fmt::Debug for Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Root")
            .field("pid", &self.child.as_ref().map(Child::id))
            .finish()
    }
}

struct Link {
    sock: Option<OwnedFd>,
    buf: Vec<u8>,
}

impl Root {
    /// Starts `exe __root` (as this process's user: root; once it gave
    /// root up, through its broker, [`super::broker`]) and opens the
    /// session for `host`.
    /// Returns what its record of an earlier run of the host lists.
    pub fn start(exe: &Path, host: &str, run_dir: &Path) -> Result<(Root, NetRecord), RootError> {
        // Given up root: the broker started before that starts it.
        if let Some(sock) = super::broker::open() {
            let sock = sock.map_err(RootError::Start)?;
            let root = Root::over(sock).map_err(RootError::Start)?;
            let leftovers = root.hello(host, run_dir)?;
            return Ok((root, leftovers));
        }
        let (ours, theirs) = tickpack_sys::seqpacket_pair().map_err(RootError::Start)?;
        let child = root_command(exe, super::SUBCOMMAND, theirs)
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
            link: Mutex::new(Link {
                sock: Some(sock),
                buf: vec![0u8; MAX_MESSAGE + 1],
            }),
        })
    }

    /// Opens the session (the first request).
    pub fn hello(&self, host: &str, run_dir: &Path) -> Result<NetRecord, RootError> {
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
    pub fn ask(&self, req: &Request) -> Result<Answer, RootError> {
        self.ask_with_fd(req).map(|(a, _)| a)
    }

    /// [`Root::ask`], with the descriptor that came with the answer.
    fn ask_with_fd(&self, req: &Request) -> Result<(Answer, Option<OwnedFd>), RootError> {
        let mut link = self.link.lock().unwrap_or_else(|p| p.into_inner());
        let Link { sock, buf } = &mut *link;
        let sock = sock
            .as_ref()
            .ok_or_else(|| RootError::Talk("it was closed".into()))?;
        protocol::send(sock, req).map_err(|e| RootError::Talk(e.to_string()))?;
        match protocol::recv_with_fd::<Answer>(sock, buf) {
            Ok((Answer::Refused { why }, _)) => Err(RootError::Refused(why)),
            Ok((Answer::Failed { error }, _)) => Err(RootError::Failed(error)),
            Ok(a) => Ok(a),
            Err(FrameError::Closed) => Err(RootError::Talk("it ended".into())),
            Err(e) => Err(RootError::Talk(e.to_string())),
        }
    }

    /// Starts `cmd` in `walls`: its PID, and the read end of its stdout and
    /// stderr pipe (the caller keeps its log).
    pub fn spawn(
        &self,
        walls: Walls,
        cmd: &WalledCommand<'_>,
    ) -> Result<(u32, OwnedFd), RootError> {
        let req = Request::Spawn {
            walls,
            argv: cmd.argv.to_vec(),
            env: cmd.env.to_vec(),
            cpus: cmd.cpus.map(<[usize]>::to_vec),
            cgroups: cmd.cgroups.to_vec(),
            oom_score_adj: cmd.oom_score_adj,
            sched_idle: cmd.sched_idle,
        };
        match self.ask_with_fd(&req)? {
            (Answer::Spawned { pid }, Some(out)) => Ok((pid, out)),
            (a, _) => Err(unexpected(&a)),
        }
    }

    /// Sends `signal` to `pid` (one it started), or to the process group
    /// it leads.
    pub fn signal(&self, pid: u32, signal: i32, group: bool) -> Result<(), RootError> {
        self.done(&Request::Signal { pid, signal, group })
    }

    /// Reaps `pid` if it has exited: its wait status and CPU time (µs).
    pub fn wait(&self, pid: u32) -> Result<Option<(i32, u64)>, RootError> {
        match self.ask(&Request::Wait { pid })? {
            Answer::Waited { status, cpu_us } => Ok(status.map(|s| (s, cpu_us))),
            a => Err(unexpected(&a)),
        }
    }

    /// A uid block for the host: its base, and what the host should say
    /// (blocks passed over, its own leftovers ended).
    pub fn take_uid_block(&self) -> Result<(u32, Vec<String>), RootError> {
        match self.ask(&Request::TakeUidBlock)? {
            Answer::UidBlock { base, said } => Ok((base, said)),
            a => Err(unexpected(&a)),
        }
    }

    /// Gives the host's uid block back.
    pub fn release_uid_block(&self) -> Result<(), RootError> {
        self.done(&Request::ReleaseUidBlock)
    }

    /// The host's network: namespaces, links, addresses, routes.
    pub fn net_up(
        &self,
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
        &self,
        game_port: u16,
        allow_host_ports: &[u16],
    ) -> Result<NetRecord, RootError> {
        self.net(&Request::Firewall {
            game_port,
            allow_host_ports: allow_host_ports.to_vec(),
        })
    }

    fn net(&self, req: &Request) -> Result<NetRecord, RootError> {
        match self.ask(req)? {
            Answer::Net { record } => Ok(record),
            a => Err(unexpected(&a)),
        }
    }

    /// Removes the host's network.
    pub fn net_down(&self) -> Result<(), RootError> {
        self.done(&Request::NetDown)
    }

    /// Removes what `record` (an earlier run's) lists; returns what was
    /// there.
    pub fn remove_leftovers(&self, record: &NetRecord) -> Result<Vec<String>, RootError> {
        self.removed(&Request::RemoveLeftovers {
            record: record.clone(),
        })
    }

    /// Removes every namespace and link named for the host, and its
    /// firewall table; returns what was there.
    pub fn sweep(&self) -> Result<Vec<String>, RootError> {
        self.removed(&Request::Sweep)
    }

    /// Makes the directory of `walls` a tmpfs of `bytes`, the walls'
    /// user's.
    pub fn tenant_dir(&self, walls: Walls, bytes: u64) -> Result<(), RootError> {
        self.done(&Request::TenantDir { walls, bytes })
    }

    /// Opens file `name` of a load command's directory to read (none
    /// when it wrote none).
    pub fn open_file(&self, walls: Walls, name: &str) -> Result<Option<OwnedFd>, RootError> {
        let req = Request::OpenFile {
            walls,
            name: name.into(),
        };
        match self.ask_with_fd(&req)? {
            (Answer::Opened { found: true }, Some(fd)) => Ok(Some(fd)),
            (Answer::Opened { found: false }, _) => Ok(None),
            (a, _) => Err(unexpected(&a)),
        }
    }

    /// Unmounts and removes every tenant directory of the run dir; returns
    /// what was there.
    pub fn remove_tenant_dirs(&self) -> Result<Vec<String>, RootError> {
        self.removed(&Request::RemoveTenantDirs)
    }

    /// The host's cgroup, given to this process's user.
    pub fn cgroups(&self) -> Result<(), RootError> {
        self.done(&Request::Cgroups)
    }

    /// Kills what is left in the host's cgroup and removes it; returns
    /// what was there.
    pub fn remove_cgroups(&self) -> Result<Vec<String>, RootError> {
        self.removed(&Request::RemoveCgroups)
    }

    /// Writes a config file of `instance` (relative to its directory).
    pub fn write_file(&self, instance: u32, path: &Path, contents: &str) -> Result<(), RootError> {
        let path = path
            .to_str()
            .ok_or_else(|| RootError::Refused(format!("{} is not UTF-8", path.display())))?;
        self.done(&Request::WriteFile {
            instance,
            path: path.into(),
            contents: contents.into(),
        })
    }

    fn done(&self, req: &Request) -> Result<(), RootError> {
        match self.ask(req)? {
            Answer::Done => Ok(()),
            a => Err(unexpected(&a)),
        }
    }

    fn removed(&self, req: &Request) -> Result<Vec<String>, RootError> {
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
        self.link.get_mut().unwrap_or_else(|p| p.into_inner()).sock = None;
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
