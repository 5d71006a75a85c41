//! What one host's session may ask, decided without I/O: the facts the
//! root process found (who claims the run dir, what the uid block's record
//! says) come in as values, the verdict goes out as a sentence.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::netpath::{validate_host_name, AddrPlan, NetKind, NetRecord};

use super::protocol::{Request, Walls, MAX_FILE, SCHEMA};

/// The most instances a host has (their ids are 1..=this).
pub const MAX_INSTANCES: u32 = 250;
/// The deepest path written into an instance's directory.
const MAX_DEPTH: usize = 8;
/// The longest such path.
const MAX_PATH: usize = 1024;

/// The most batch jobs a host runs (their numbers are 1..=this).
pub const MAX_BATCH_JOBS: u32 = 64;
/// The largest tenant disk (64 GiB).
const MAX_DISK: u64 = 64 << 30;
/// The longest command line or environment a spawn may carry, in bytes.
const MAX_COMMAND: usize = 64 * 1024;

/// The most CPUs a command is pinned to, and one past the highest.
pub const MAX_CPUS: usize = rustix::thread::CpuSet::MAX_CPU;

/// What a spawn request carries beyond its walls.
#[derive(Debug, Clone)]
pub struct WalledCommand<'a> {
    pub argv: &'a [String],
    pub env: &'a [(String, String)],
    pub cpus: Option<&'a [usize]>,
    pub cgroups: &'a [PathBuf],
    /// 0 (the instances') to 1000 (first to go): never below the
    /// instances, which would spare a tenant from the OOM killer.
    pub oom_score_adj: i32,
    pub sched_idle: bool,
}

impl<'a> WalledCommand<'a> {
    /// A spawn request's walls and command (none for another request).
    pub fn of(req: &'a Request) -> Option<(Walls, WalledCommand<'a>)> {
        let Request::Spawn {
            walls,
            argv,
            env,
            cpus,
            cgroups,
            oom_score_adj,
            sched_idle,
        } = req
        else {
            return None;
        };
        let cmd = WalledCommand {
            argv,
            env,
            cpus: cpus.as_deref(),
            cgroups,
            oom_score_adj: *oom_score_adj,
            sched_idle: *sched_idle,
        };
        Some((*walls, cmd))
    }
}

/// What a spawn request resolves to, every part the root process's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walled {
    /// Its working directory, relative to the run dir.
    pub workdir: PathBuf,
    /// Its user (uid = gid).
    pub uid: u32,
    /// The instance whose network namespace it enters (none: a new, empty
    /// one).
    pub netns_of: Option<u32>,
    pub hostname: String,
    /// Leads its own session and dies with the root process (batch work).
    pub own_session: bool,
}

/// What the root process found before it answers a hello.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Why the run dir cannot be trusted (not absolute and plain, reached
    /// through a link, not a real directory, not the caller's own,
    /// writable by others), if so ([`super::registry::open_run_dir`]).
    pub run_dir_untrusted: Option<String>,
    /// Another host whose record names this run dir.
    pub run_dir_claimed_by: Option<String>,
    /// The run dir is gone (its parent is there): only the host's
    /// leftovers are removed, nothing is made or started.
    pub run_dir_gone: bool,
    /// The host's own record: the run dir and the caller it names.
    pub recorded: Option<(PathBuf, u32)>,
}

/// An open session: one host, one run dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    host: String,
    run_dir: PathBuf,
    /// The uid of the supervisor (whoever made the socket).
    caller: u32,
    uid_base: Option<u32>,
    /// The instances whose network is up (files are written for them).
    instances: BTreeSet<u32>,
}

impl Session {
    /// Opens a session for a hello, or says why not.
    pub fn open(
        schema: &str,
        host: &str,
        run_dir: &Path,
        caller: u32,
        found: &Found,
    ) -> Result<Session, String> {
        if schema != SCHEMA {
            return Err(format!(
                "schema {:?} is not spoken here (only {SCHEMA})",
                tickpack_sys::text::escape(schema, 40)
            ));
        }
        validate_host_name(host).map_err(|e| e.to_string())?;
        let dir = run_dir.display();
        if let Some(why) = &found.run_dir_untrusted {
            return Err(format!("run dir {dir}: {why}"));
        }
        if let Some(other) = &found.run_dir_claimed_by {
            if other != host {
                return Err(format!(
                    "run dir {dir} is host {other}'s (its network is on record); take that host down first"
                ));
            }
        }
        // A supervisor without root acts for its own hosts alone: not on
        // what another user's (or root's) host left on record, and on a
        // run dir that is gone only when its own record names it.
        if caller != 0 {
            match &found.recorded {
                Some((_, owner)) if *owner != caller => {
                    return Err(format!(
                        "host {host}'s record is uid {owner}'s, not uid {caller}'s"
                    ));
                }
                Some((named, _)) if found.run_dir_gone && named != run_dir => {
                    return Err(format!(
                        "run dir {dir} is gone and host {host}'s record names another"
                    ));
                }
                None if found.run_dir_gone => {
                    return Err(format!(
                        "run dir {dir} is gone and host {host} has no record"
                    ));
                }
                _ => {}
            }
        }
        Ok(Session {
            host: host.to_string(),
            run_dir: run_dir.to_path_buf(),
            caller,
            uid_base: None,
            instances: BTreeSet::new(),
        })
    }

    /// The base of the uid block it took for the host (instance N's
    /// files are uid base + N's), or none.
    pub fn set_uid_base(&mut self, base: Option<u32>) {
        self.uid_base = base;
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The uid of the supervisor it serves.
    pub fn caller(&self) -> u32 {
        self.caller
    }

    /// A network for `instances`: its plan, if it may be made (not up
    /// already, ids 1..=[`MAX_INSTANCES`], each once).
    pub fn net_up(
        &mut self,
        kind: NetKind,
        range: &str,
        source_addrs: u32,
        instances: &[u32],
    ) -> Result<AddrPlan, String> {
        if !self.instances.is_empty() {
            return Err(format!("host {}'s network is up already", self.host));
        }
        let mut seen = BTreeSet::new();
        for &id in instances {
            if !(1..=MAX_INSTANCES).contains(&id) {
                return Err(format!("instance {id} is not one of 1..={MAX_INSTANCES}"));
            }
            if !seen.insert(id) {
                return Err(format!("instance {id} is named twice"));
            }
        }
        if seen.is_empty() {
            return Err("a network of no instance".into());
        }
        let plan = AddrPlan::parse(range)
            .and_then(|p| p.with_sources(kind, source_addrs))
            .map_err(|e| e.to_string())?;
        self.instances = seen;
        Ok(plan)
    }

    /// The network is gone (or its making failed).
    pub fn net_down(&mut self) {
        self.instances.clear();
    }

    /// Where a config file of `instance` goes, relative to the run dir,
    /// and whose it is (uid = gid).
    pub fn write_file(
        &self,
        instance: u32,
        path: &str,
        contents: &str,
    ) -> Result<(PathBuf, u32), String> {
        if !self.instances.contains(&instance) {
            return Err(format!(
                "instance {instance} is not one of host {}'s",
                self.host
            ));
        }
        let Some(base) = self.uid_base else {
            return Err("the host holds no uid block: no file is written as an instance".into());
        };
        if contents.len() > MAX_FILE {
            return Err(format!(
                "a file of {} bytes, over the {MAX_FILE} allowed",
                contents.len()
            ));
        }
        let rel = Path::new(path);
        let shown = tickpack_sys::text::escape(path, 200);
        let depth = rel.components().count();
        let beneath = rel.components().all(|c| matches!(c, Component::Normal(_)));
        if path.is_empty() || path.len() > MAX_PATH || depth > MAX_DEPTH || !beneath {
            return Err(format!(
                "path {shown} is not beneath instance {instance}'s directory (relative, no `..`, at most {MAX_DEPTH} deep)"
            ));
        }
        Ok((
            Path::new("instances").join(instance.to_string()).join(rel),
            base + instance,
        ))
    }

    /// What `walls` means for this host, if `cmd` may be started in them:
    /// its cgroups each beneath one of `hierarchies` (the cgroup mounts;
    /// `owners`: each cgroup's owner, as found), at most [`MAX_CPUS`]
    /// CPUs each below it, an OOM score of 0 to 1000.
    pub fn spawn(
        &self,
        walls: Walls,
        cmd: &WalledCommand<'_>,
        hierarchies: &[PathBuf],
        owners: &[Option<u32>],
    ) -> Result<Walled, String> {
        let (argv, env) = (cmd.argv, cmd.env);
        let size: usize = argv.iter().map(String::len).sum::<usize>()
            + env.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        if argv.is_empty() || size > MAX_COMMAND {
            return Err(format!(
                "a command of {} words and {size} bytes (one to {MAX_COMMAND} bytes)",
                argv.len()
            ));
        }
        if let Some(cpus) = cmd.cpus {
            if let Some(c) = cpus.iter().find(|&&c| c >= MAX_CPUS) {
                return Err(format!("CPU {c} (CPUs are 0 to {})", MAX_CPUS - 1));
            }
            if cpus.is_empty() || cpus.len() > MAX_CPUS {
                return Err(format!("{} CPUs (1 to {MAX_CPUS})", cpus.len()));
            }
        }
        if !(0..=1000).contains(&cmd.oom_score_adj) {
            return Err(format!(
                "an OOM score of {} (0 to 1000: a tenant never goes below the instances)",
                cmd.oom_score_adj
            ));
        }
        let walled = self.walled(walls)?;
        for (k, cg) in cmd.cgroups.iter().enumerate() {
            self.check_cgroup(walls, cg, hierarchies, owners.get(k).copied().flatten())?;
        }
        Ok(walled)
    }

    /// What `walls` are for this host: its directory, user, namespace,
    /// hostname.
    pub fn walled(&self, walls: Walls) -> Result<Walled, String> {
        let Some(base) = self.uid_base else {
            return Err(
                "the host holds no uid block: nothing is made or started in its walls".into(),
            );
        };
        let host = &self.host;
        let own_instance = |id: u32| {
            if self.instances.contains(&id) {
                Ok(())
            } else {
                Err(format!("instance {id} is not one of host {host}'s"))
            }
        };
        Ok(match walls {
            Walls::Instance { id } => {
                own_instance(id)?;
                Walled {
                    workdir: Path::new("instances").join(id.to_string()),
                    uid: base + id,
                    netns_of: Some(id),
                    hostname: format!("tp{host}-{id}"),
                    own_session: false,
                }
            }
            Walls::Batch { job } => {
                if !(1..=MAX_BATCH_JOBS).contains(&job) {
                    return Err(format!(
                        "batch job {job} is not one of 1..={MAX_BATCH_JOBS}"
                    ));
                }
                Walled {
                    workdir: Path::new("batch").join(job.to_string()),
                    uid: base,
                    netns_of: None,
                    hostname: format!("tp{host}-batch-{job}"),
                    own_session: true,
                }
            }
            Walls::Load { id } => {
                own_instance(id)?;
                Walled {
                    workdir: Path::new("batch").join(format!("load-{id}")),
                    uid: base,
                    netns_of: Some(id),
                    hostname: format!("tp{host}-load-{id}"),
                    own_session: true,
                }
            }
        })
    }

    /// The walls' directory as a tmpfs of `bytes`: where (relative to
    /// the run dir) and whose.
    pub fn tenant_dir(&self, walls: Walls, bytes: u64) -> Result<(PathBuf, u32), String> {
        if !(1..=MAX_DISK).contains(&bytes) {
            return Err(format!("a disk of {bytes} bytes (1 to {MAX_DISK})"));
        }
        let w = self.walled(walls)?;
        Ok((w.workdir, w.uid))
    }

    /// A file named `name` in a load command's directory (relative to the
    /// run dir), and the walls' user, whose file it must be.
    pub fn open_file(&self, walls: Walls, name: &str) -> Result<(PathBuf, u32), String> {
        if !matches!(walls, Walls::Load { .. }) {
            return Err("only a load command's files are read".into());
        }
        let rel = Path::new(name);
        let one = rel.components().count() == 1
            && matches!(rel.components().next(), Some(Component::Normal(_)));
        if !one || name.len() > 255 {
            return Err(format!(
                "{} is not one name in the load command's directory",
                tickpack_sys::text::escape(name, 60)
            ));
        }
        let w = self.walled(walls)?;
        Ok((w.workdir.join(rel), w.uid))
    }

    /// A cgroup a command in `walls` may join: the walls' own, or (batch
    /// work) one the host adopted that is not beneath another host's
    /// `tp<host>` and is its supervisor's user's (`owner`: not a system
    /// service's for a supervisor without root).
    fn check_cgroup(
        &self,
        walls: Walls,
        cg: &Path,
        hierarchies: &[PathBuf],
        owner: Option<u32>,
    ) -> Result<(), String> {
        let host = &self.host;
        let shown = tickpack_sys::text::escape(&cg.display().to_string(), 200);
        let rel = hierarchies
            .iter()
            .find_map(|h| cg.strip_prefix(h).ok())
            .filter(|rel| {
                rel.components().count() > 0
                    && rel.components().all(|c| matches!(c, Component::Normal(_)))
            })
            .ok_or_else(|| format!("cgroup {shown} is not beneath a cgroup mount"))?;
        let own = match walls {
            Walls::Instance { id } => Some(format!("tp{host}/tp{host}-{id}")),
            Walls::Batch { .. } => Some(format!("tp{host}/tp{host}-batch")),
            Walls::Load { .. } => None,
        };
        if own.as_deref().is_some_and(|o| rel == Path::new(o)) {
            return Ok(());
        }
        // A host's own cgroup is `tp<host>` (a-z, 0-9) under the root.
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let hosts = first.strip_prefix("tp").is_some_and(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
        if matches!(walls, Walls::Batch { .. }) && !hosts {
            return match owner {
                Some(o) if o == self.caller => Ok(()),
                _ => Err(format!(
                    "cgroup {shown} is not uid {}'s (its owner: {}); a batch job joins its host's or one of its supervisor's user",
                    self.caller,
                    owner.map_or("none found".into(), |o| format!("uid {o}"))
                )),
            };
        }
        Err(format!(
            "cgroup {shown} is not one host {host} may start this command in"
        ))
    }

    /// Whether every object `asked` names is one `own` (the root process's
    /// record of this host) lists: what it may remove.
    pub fn remove(&self, asked: &NetRecord, own: &NetRecord) -> Result<(), String> {
        let not_ours = |kind: &str, asked: &[String], own: &[String]| {
            asked.iter().find(|n| !own.contains(n)).map(|n| {
                format!(
                    "{kind} {} was not made for host {} (not on its record)",
                    tickpack_sys::text::escape(n, 60),
                    self.host
                )
            })
        };
        let refusal = not_ours("namespace", &asked.namespaces, &own.namespaces)
            .or_else(|| not_ours("link", &asked.links, &own.links))
            .or_else(|| not_ours("route", &asked.routes, &own.routes))
            .or_else(|| not_ours("nftables table", &asked.tables, &own.tables));
        refusal.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests;
