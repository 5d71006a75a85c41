//! The root process's loop: reads one request, checks it against its
//! session, does it, answers; until its supervisor goes away.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::netpath::{self, filter, HostNet, Ip, NetRecord};

use super::children::{self, Children};
use super::protocol::{self, Answer, FrameError, Request, MAX_MESSAGE};
use super::registry::{self, HostLock, HostRecord, Registry};
use super::session::{Found, Session};
use crate::uid_block::UidBlock;

/// Where the root process keeps what it knows and what it checks against.
#[derive(Debug, Clone)]
pub struct Config {
    /// Its own records ([`registry::DIR`]).
    pub registry: PathBuf,
    /// The uid blocks' records ([`crate::uid_block::BLOCK_DIR`]).
    pub block_dir: PathBuf,
}

impl Default for Config {
    /// Root's own directories.
    fn default() -> Config {
        Config {
            registry: registry::DIR.into(),
            block_dir: crate::uid_block::BLOCK_DIR.into(),
        }
    }
}

/// One host's open session.
struct Host {
    session: Session,
    /// The run dir, held open since the hello: what is done in it is done
    /// beneath this descriptor (none: it is gone, only leftovers go).
    run_fd: Option<OwnedFd>,
    registry: Registry,
    _lock: HostLock,
    /// What an earlier run of the host left on record, not removed yet.
    earlier: NetRecord,
    /// The network made in this session.
    net: Option<HostNet>,
    /// The uid block taken for the host.
    uid_block: Option<UidBlock>,
    /// What it started for the host.
    children: Children,
    /// The cgroup mounts (a command joins cgroups beneath them only).
    hierarchies: Vec<PathBuf>,
    /// The uid of the process that made the socket (its supervisor): the
    /// host's cgroup is given to it.
    caller: u32,
}

impl Host {
    /// The run dir's descriptor, or the refusal when it is gone.
    fn run_dir(&self) -> Result<(&Path, &OwnedFd), Answer> {
        run_dir(&self.session, &self.run_fd)
    }

    /// Its record: what is left from before and what this session made.
    fn save(&self) -> std::io::Result<()> {
        save(
            &self.registry,
            &self.session,
            &self.earlier,
            self.net.as_ref().map(HostNet::record),
        )
    }
}

/// The run dir and its descriptor, or the refusal when it is gone.
fn run_dir<'a>(
    session: &'a Session,
    fd: &'a Option<OwnedFd>,
) -> Result<(&'a Path, &'a OwnedFd), Answer> {
    match fd {
        Some(fd) => Ok((session.run_dir(), fd)),
        None => Err(refused(format!(
            "run dir {} is gone: only host {}'s leftovers are removed",
            session.run_dir().display(),
            session.host()
        ))),
    }
}

/// A journal for `HostNet`: the record as it will be, persisted before
/// the next object is made (a failure here shows at the next save).
fn journal<'a>(
    registry: &'a Registry,
    session: &'a Session,
    earlier: &'a NetRecord,
) -> impl FnMut(&NetRecord) + 'a {
    move |now| {
        let _ = save(registry, session, earlier, Some(now));
    }
}

fn save(
    registry: &Registry,
    session: &Session,
    earlier: &NetRecord,
    now: Option<&NetRecord>,
) -> std::io::Result<()> {
    let mut net = earlier.clone();
    if let Some(now) = now {
        net.extend(now.clone());
    }
    if net.is_empty() {
        registry.remove(session.host());
        return Ok(());
    }
    let rec = HostRecord {
        run_dir: session.run_dir().to_path_buf(),
        net,
        caller: session.caller(),
    };
    registry.write(session.host(), &rec)
}

/// Serves the supervisor on `sock` until it goes away. The exit code: 0.
/// What it made stays on its record (a supervisor killed with -9 left it;
/// the next session of the host removes it).
pub fn serve(sock: impl AsFd, cfg: &Config) -> i32 {
    let mut buf = vec![0u8; MAX_MESSAGE + 1];
    // Who made the socket pair: the supervisor (as whichever user it runs).
    let caller = match rustix::net::sockopt::socket_peercred(&sock) {
        Ok(c) => c.uid.as_raw(),
        Err(_) => return 1,
    };
    let mut host: Option<Host> = None;
    loop {
        let mut fd = None;
        let answer = match protocol::recv::<Request>(&sock, &mut buf) {
            Ok(req) => handle(&mut host, cfg, caller, req, &mut fd),
            Err(FrameError::Closed) => break,
            Err(FrameError::Io(_)) => break,
            Err(e) => Answer::Refused { why: e.to_string() },
        };
        let sent = match &fd {
            Some(fd) => protocol::send_with_fd(&sock, &answer, fd.as_fd()),
            None => protocol::send(&sock, &answer),
        };
        if sent.is_err() {
            break;
        }
    }
    if let Some(h) = host.take() {
        if let Some(net) = h.net {
            // Kept on the record (written before each object was made).
            let _ = net.into_record();
        }
    }
    0
}

impl From<children::Why> for Answer {
    fn from(why: children::Why) -> Answer {
        match why {
            children::Why::Refused(why) => refused(why),
            children::Why::Failed(error) => failed(error),
        }
    }
}

fn refused(why: impl Into<String>) -> Answer {
    Answer::Refused { why: why.into() }
}

fn failed(error: impl ToString) -> Answer {
    Answer::Failed {
        error: error.to_string(),
    }
}

/// Answers `req`; a descriptor that goes with the answer is put in `fd`.
fn handle(
    host: &mut Option<Host>,
    cfg: &Config,
    caller: u32,
    req: Request,
    fd: &mut Option<OwnedFd>,
) -> Answer {
    let Some(h) = host.as_mut() else {
        let Request::Hello {
            schema,
            host: name,
            run_dir,
        } = req
        else {
            return refused("the first request must be a hello");
        };
        return match hello(cfg, caller, &schema, &name, &run_dir) {
            Ok(h) => {
                let leftovers = h.earlier.clone();
                *host = Some(h);
                Answer::Welcome { leftovers }
            }
            Err(a) => a,
        };
    };
    match req {
        Request::Hello { .. } => refused("a hello was answered already"),
        Request::TakeUidBlock => {
            if h.uid_block.is_some() {
                return refused(format!(
                    "host {} holds a uid block already",
                    h.session.host()
                ));
            }
            let (dir, name) = (h.session.run_dir(), h.session.host());
            match UidBlock::take_in(&cfg.block_dir, Path::new("/proc"), dir, name) {
                Ok((block, said)) => {
                    let base = block.base;
                    h.session.set_uid_base(Some(base));
                    h.uid_block = Some(block);
                    Answer::UidBlock { base, said }
                }
                Err(e) => failed(format!("taking a uid block: {e}")),
            }
        }
        Request::ReleaseUidBlock => match h.uid_block.take() {
            Some(block) => {
                block.release();
                h.session.set_uid_base(None);
                Answer::Done
            }
            None => refused(format!("host {} holds no uid block", h.session.host())),
        },
        Request::NetUp {
            kind,
            range,
            source_addrs,
            instances,
        } => {
            // The session refuses a second network (it knows the first).
            let plan = match h.session.net_up(kind, &range, source_addrs, &instances) {
                Ok(p) => p,
                Err(why) => return refused(why),
            };
            let made = HostNet::setup_journaled(
                Ip::default(),
                h.session.host(),
                kind,
                plan,
                &instances,
                &mut journal(&h.registry, &h.session, &h.earlier),
            );
            match made {
                Ok(net) => {
                    let record = net.record().clone();
                    h.net = Some(net);
                    match h.save() {
                        Ok(()) => Answer::Net { record },
                        Err(e) => failed(format!("recording the network: {e}")),
                    }
                }
                Err(e) => {
                    h.session.net_down();
                    let _ = h.save();
                    failed(e)
                }
            }
        }
        Request::Firewall {
            game_port,
            allow_host_ports,
        } => {
            let Some(net) = h.net.as_mut() else {
                return refused(format!("host {} has no network up", h.session.host()));
            };
            let done = net.install_filter(
                game_port,
                &allow_host_ports,
                &mut journal(&h.registry, &h.session, &h.earlier),
            );
            let record = net.record().clone();
            let _ = h.save();
            match done {
                Ok(()) => Answer::Net { record },
                Err(e) => failed(e),
            }
        }
        Request::NetDown => {
            let Some(net) = h.net.take() else {
                return refused(format!("host {} has no network up", h.session.host()));
            };
            h.session.net_down();
            let record = net.record().clone();
            match net.teardown() {
                Ok(()) => {
                    let _ = h.save();
                    Answer::Done
                }
                Err(e) => {
                    // What could not be removed stays on record.
                    h.earlier.extend(record);
                    let _ = h.save();
                    failed(e)
                }
            }
        }
        Request::RemoveLeftovers { record } => {
            if let Err(why) = h.session.remove(&record, &h.earlier) {
                return refused(why);
            }
            let items = record.existing();
            let done = record.cleanup();
            if done.is_ok() {
                h.earlier.retain_absent(&record);
            }
            let _ = h.save();
            match done {
                Ok(()) => Answer::Removed { items },
                Err(e) => failed(e),
            }
        }
        Request::Sweep => {
            if h.net.is_some() {
                return refused(format!(
                    "host {}'s network is up: a sweep would remove it",
                    h.session.host()
                ));
            }
            let name = h.session.host().to_string();
            let mut items = match netpath::cleanup_host(&name) {
                Ok(items) => items,
                Err(e) => return failed(e),
            };
            match filter::remove_firewall(&name) {
                Ok(true) => items.push(format!("nft table inet {}", filter::table_name(&name))),
                Ok(false) => {}
                Err(e) => return failed(e),
            }
            h.earlier = NetRecord::default();
            let _ = h.save();
            Answer::Removed { items }
        }
        Request::WriteFile {
            instance,
            path,
            contents,
        } => {
            let (rel, owner) = match h.session.write_file(instance, &path, &contents) {
                Ok(w) => w,
                Err(why) => return refused(why),
            };
            let (_, run_fd) = match h.run_dir() {
                Ok(d) => d,
                Err(a) => return a,
            };
            match crate::files::write_file_at(run_fd, &rel, &contents, Some(owner)) {
                Ok(()) => Answer::Done,
                Err(e) => failed(format!("writing {}: {e}", rel.display())),
            }
        }
        Request::Spawn { .. } => {
            let Some((walls, cmd)) = children::WalledCommand::of(&req) else {
                return refused("not a spawn");
            };
            let cgroups = cmd.cgroups;
            let owners: Vec<Option<u32>> = cgroups
                .iter()
                .map(|cg| {
                    use std::os::unix::fs::MetadataExt;
                    std::fs::symlink_metadata(cg).ok().map(|m| m.uid())
                })
                .collect();
            let walled = match h.session.spawn(walls, &cmd, &h.hierarchies, &owners) {
                Ok(w) => w,
                Err(why) => return refused(why),
            };
            let netns = match (walled.netns_of, &h.net) {
                (None, _) => None,
                (Some(id), Some(net)) => Some(net.netns_path(id)),
                (Some(_), None) => {
                    return refused(format!("host {} has no network up", h.session.host()))
                }
            };
            let run_dir = match run_dir(&h.session, &h.run_fd) {
                Ok(d) => d,
                Err(a) => return a,
            };
            match h.children.spawn(run_dir, &walled, netns, &cmd) {
                Ok((pid, out)) => {
                    *fd = Some(out.into());
                    Answer::Spawned { pid }
                }
                Err(e) => failed(e),
            }
        }
        Request::Signal { pid, signal, group } => match h.children.signal(pid, signal, group) {
            Ok(()) => Answer::Done,
            Err(why) => why.into(),
        },
        Request::TenantDir { walls, bytes } => {
            let (rel, uid) = match h.session.tenant_dir(walls, bytes) {
                Ok(t) => t,
                Err(why) => return refused(why),
            };
            let (_, run_fd) = match h.run_dir() {
                Ok(d) => d,
                Err(a) => return a,
            };
            match crate::tenant_dir::make(run_fd, &rel, bytes, uid) {
                Ok(()) => Answer::Done,
                Err(e) => failed(format!("{}: {e}", rel.display())),
            }
        }
        Request::OpenFile { walls, name } => {
            let (rel, uid) = match h.session.open_file(walls, &name) {
                Ok(r) => r,
                Err(why) => return refused(why),
            };
            let (_, run_fd) = match h.run_dir() {
                Ok(d) => d,
                Err(a) => return a,
            };
            match open_beneath(run_fd, &rel, uid) {
                Ok(Some(file)) => {
                    *fd = Some(file);
                    Answer::Opened { found: true }
                }
                Ok(None) => Answer::Opened { found: false },
                Err(e) => failed(format!("{}: {e}", rel.display())),
            }
        }
        Request::RemoveTenantDirs => {
            let Some(run_fd) = &h.run_fd else {
                // Gone with the run dir.
                return Answer::Removed { items: vec![] };
            };
            let (items, problems) = crate::tenant_dir::empty(run_fd, h.session.run_dir());
            match problems.is_empty() {
                true => Answer::Removed { items },
                false => failed(problems.join("; ")),
            }
        }
        Request::Cgroups => {
            let name = format!("tp{}", h.session.host());
            let made = crate::cgroup::CgroupLayout::detect(Path::new(crate::cgroup::DEFAULT_ROOT))
                .and_then(|layout| crate::cgroup::delegate(&layout, &name, h.caller));
            match made {
                Ok(_) => Answer::Done,
                Err(e) => failed(format!("cgroup {name}: {e}")),
            }
        }
        Request::RemoveCgroups => {
            let name = format!("tp{}", h.session.host());
            let gone = crate::cgroup::CgroupLayout::detect(Path::new(crate::cgroup::DEFAULT_ROOT))
                .and_then(|layout| crate::cgroup::remove_stale(&layout, &name));
            match gone {
                Ok(dirs) => Answer::Removed {
                    items: dirs.iter().map(|d| d.display().to_string()).collect(),
                },
                Err(e) => failed(format!("cgroup {name}: {e}")),
            }
        }
        Request::Wait { pid } => match h.children.wait(pid) {
            Ok(Some((status, cpu_us))) => Answer::Waited {
                status: Some(status),
                cpu_us,
            },
            Ok(None) => Answer::Waited {
                status: None,
                cpu_us: 0,
            },
            Err(why) => why.into(),
        },
    }
}

fn hello(
    cfg: &Config,
    caller: u32,
    schema: &str,
    name: &str,
    run_dir: &Path,
) -> Result<Host, Answer> {
    let registry = Registry::open(&cfg.registry)
        .map_err(|e| failed(format!("opening {}: {e}", cfg.registry.display())))?;
    let record = registry.read(name);
    let (run_fd, run_dir_untrusted) = match registry::open_run_dir(run_dir, caller) {
        Ok(fd) => (fd, None),
        Err(why) => (None, Some(why)),
    };
    let found = Found {
        run_dir_gone: run_fd.is_none() && run_dir_untrusted.is_none(),
        run_dir_untrusted,
        run_dir_claimed_by: registry.claimant(run_dir, name),
        recorded: record.as_ref().map(|r| (r.run_dir.clone(), r.caller)),
    };
    let session = Session::open(schema, name, run_dir, caller, &found).map_err(refused)?;
    let lock = registry
        .lock(name)
        .map_err(|e| failed(format!("taking host {name}'s lock: {e}")))?
        .ok_or_else(|| refused(format!("host {name} is served by another root process")))?;
    let earlier = registry.read(name).map(|r| r.net).unwrap_or_default();
    Ok(Host {
        session,
        run_fd,
        registry,
        _lock: lock,
        earlier,
        net: None,
        uid_block: None,
        children: Children::default(),
        hierarchies: crate::cgroup::CgroupLayout::detect(Path::new(crate::cgroup::DEFAULT_ROOT))
            .map(|l| l.hierarchies())
            .unwrap_or_default(),
        caller,
    })
}

/// Opens `rel` beneath the run dir `dir` holds open, to read: a regular
/// file reached without a link (`openat2` with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS`), of `uid` (the walls' user) and with no other
/// name (a hard link to a file the walls' user may not read is refused);
/// `None` when there is none.
fn open_beneath(dir: &OwnedFd, rel: &Path, uid: u32) -> std::io::Result<Option<OwnedFd>> {
    use rustix::fs::OFlags;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
    let file = match crate::files::open_beneath(dir, rel, flags) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    crate::files::regular_file(&file)?;
    let st = rustix::fs::fstat(&file)?;
    if st.st_uid != uid || st.st_nlink != 1 {
        return Err(std::io::Error::other(format!(
            "not a file of uid {uid}'s alone (uid {}, {} names)",
            st.st_uid, st.st_nlink
        )));
    }
    Ok(Some(file))
}
