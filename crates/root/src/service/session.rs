//! What one host's session may ask, decided without I/O: the facts the
//! root process found (who claims the run dir, what the uid block's record
//! says) come in as values, the verdict goes out as a sentence.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::netpath::{validate_host_name, AddrPlan, NetKind, NetRecord};

use super::protocol::{Walls, MAX_FILE, SCHEMA};

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
    /// Why the run dir cannot be trusted (not absolute or canonical, not a
    /// real directory, not root's, writable by others), if so.
    pub run_dir_untrusted: Option<String>,
    /// Another host whose record names this run dir.
    pub run_dir_claimed_by: Option<String>,
}

/// An open session: one host, one run dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    host: String,
    run_dir: PathBuf,
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
        Ok(Session {
            host: host.to_string(),
            run_dir: run_dir.to_path_buf(),
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

    /// What `walls` means for this host, if a command may be started in
    /// them with `cgroups` (each beneath one of `hierarchies`, the cgroup
    /// mounts), `argv` and `env`.
    pub fn spawn(
        &self,
        walls: Walls,
        cgroups: &[PathBuf],
        hierarchies: &[PathBuf],
        argv: &[String],
        env: &[(String, String)],
    ) -> Result<Walled, String> {
        let size: usize = argv.iter().map(String::len).sum::<usize>()
            + env.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        if argv.is_empty() || size > MAX_COMMAND {
            return Err(format!(
                "a command of {} words and {size} bytes (one to {MAX_COMMAND} bytes)",
                argv.len()
            ));
        }
        let walled = self.walled(walls)?;
        for cg in cgroups {
            self.check_cgroup(walls, cg, hierarchies)?;
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
    /// run dir).
    pub fn open_file(&self, walls: Walls, name: &str) -> Result<PathBuf, String> {
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
        Ok(self.walled(walls)?.workdir.join(rel))
    }

    /// A cgroup a command in `walls` may join: the walls' own, or (batch
    /// work) one the host adopted that is not beneath another host's
    /// `tp<host>`.
    fn check_cgroup(&self, walls: Walls, cg: &Path, hierarchies: &[PathBuf]) -> Result<(), String> {
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
            return Ok(());
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
mod tests {
    use super::*;

    fn open(host: &str, dir: &str, found: &Found) -> Result<Session, String> {
        let mut s = Session::open(SCHEMA, host, Path::new(dir), found)?;
        s.set_uid_base(Some(201_000));
        Ok(s)
    }

    #[test]
    fn a_hello_opens_a_session_for_its_host_alone() {
        let s = open("a", "/run/a", &Found::default()).unwrap();
        assert_eq!(s.host(), "a");
        let e = Session::open(
            "tickpack.root/0",
            "a",
            Path::new("/run/a"),
            &Found::default(),
        );
        assert!(e.unwrap_err().contains("not spoken here"));
        assert!(open("A;rm", "/run/a", &Found::default()).is_err());
    }

    #[test]
    fn another_hosts_run_dir_is_refused() {
        let found = Found {
            run_dir_claimed_by: Some("b".into()),
            ..Found::default()
        };
        let e = open("a", "/run/b", &found).unwrap_err();
        assert!(e.contains("is host b's"), "{e}");
        let untrusted = Found {
            run_dir_untrusted: Some("writable by others".into()),
            ..Found::default()
        };
        assert!(open("a", "/run/a", &untrusted)
            .unwrap_err()
            .contains("writable by others"));
    }

    #[test]
    fn paths_outside_an_instances_directory_are_refused() {
        let mut s = open("a", "/run/a", &Found::default()).unwrap();
        s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1, 2])
            .unwrap();
        let (rel, uid) = s.write_file(2, "baseoa/server.cfg", "x").unwrap();
        assert_eq!(rel, Path::new("instances/2/baseoa/server.cfg"));
        assert_eq!(uid, 201_002);
        for bad in [
            "../1/x",
            "/etc/passwd",
            "a/../../x",
            "",
            "./x",
            "a/b/c/d/e/f/g/h/i",
        ] {
            let e = s.write_file(1, bad, "x").unwrap_err();
            assert!(e.contains("is not beneath"), "{bad}: {e}");
        }
        assert!(s
            .write_file(3, "x", "x")
            .unwrap_err()
            .contains("not one of host a's"));
        let big = "x".repeat(MAX_FILE + 1);
        assert!(s.write_file(1, "x", &big).unwrap_err().contains("over the"));
    }

    #[test]
    fn a_command_starts_only_in_walls_and_cgroups_of_its_own_host() {
        let mut s = open("a", "/run/a", &Found::default()).unwrap();
        s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1, 2])
            .unwrap();
        let h = [PathBuf::from("/sys/fs/cgroup")];
        let cmd = ["/bin/true".to_string()];
        let own = PathBuf::from("/sys/fs/cgroup/tpa/tpa-2");
        let w = s
            .spawn(
                Walls::Instance { id: 2 },
                std::slice::from_ref(&own),
                &h,
                &cmd,
                &[],
            )
            .unwrap();
        assert_eq!(w.workdir, Path::new("instances/2"));
        assert_eq!(
            (w.uid, w.netns_of, w.own_session),
            (201_002, Some(2), false)
        );
        assert_eq!(w.hostname, "tpa-2");
        let w = s.spawn(Walls::Load { id: 1 }, &[], &h, &cmd, &[]).unwrap();
        assert_eq!(w.workdir, Path::new("batch/load-1"));
        assert_eq!((w.uid, w.netns_of, w.own_session), (201_000, Some(1), true));
        let adopted = PathBuf::from("/sys/fs/cgroup/tp-batch/mine");
        let w = s
            .spawn(
                Walls::Batch { job: 3 },
                std::slice::from_ref(&adopted),
                &h,
                &cmd,
                &[],
            )
            .unwrap();
        assert_eq!((w.uid, w.netns_of), (201_000, None));
        let refused =
            |walls, cg: &[PathBuf], argv: &[String]| s.spawn(walls, cg, &h, argv, &[]).unwrap_err();
        let one = Walls::Instance { id: 1 };
        assert!(refused(Walls::Instance { id: 3 }, &[], &cmd).contains("not one of host a's"));
        assert!(refused(Walls::Load { id: 9 }, &[], &cmd).contains("not one of host a's"));
        assert!(refused(Walls::Batch { job: 0 }, &[], &cmd).contains("not one of 1..="));
        assert!(refused(one, &[], &[]).contains("a command of 0 words"));
        for cg in [
            own.clone(),
            adopted,
            PathBuf::from("/sys/fs/cgroup/tpb/tpb-1"),
            PathBuf::from("/sys/fs/cgroup/tpa/../tpb/tpb-1"),
            PathBuf::from("/etc"),
            PathBuf::from("/sys/fs/cgroup"),
        ] {
            let e = refused(one, std::slice::from_ref(&cg), &cmd);
            assert!(e.contains("cgroup"), "{}: {e}", cg.display());
        }
        let other = PathBuf::from("/sys/fs/cgroup/tpb/tpb-batch");
        assert!(refused(Walls::Batch { job: 1 }, &[other], &cmd).contains("may start"));
        s.set_uid_base(None);
        let e = s.spawn(one, &[], &h, &cmd, &[]).unwrap_err();
        assert!(e.contains("no uid block"), "{e}");
    }

    #[test]
    fn a_network_is_made_once_for_ids_it_may_have() {
        let mut s = open("a", "/run/a", &Found::default()).unwrap();
        assert!(s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[0]).is_err());
        assert!(s
            .net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1, 1])
            .is_err());
        assert!(s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[]).is_err());
        assert!(s.net_up(NetKind::Veth, "not a range", 0, &[1]).is_err());
        s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[1]).unwrap();
        assert!(s
            .net_up(NetKind::Veth, "198.18.0.0/16", 0, &[2])
            .unwrap_err()
            .contains("up already"));
        s.net_down();
        s.net_up(NetKind::Veth, "198.18.0.0/16", 0, &[2]).unwrap();
    }

    #[test]
    fn a_name_it_did_not_make_is_refused() {
        let s = open("a", "/run/a", &Found::default()).unwrap();
        let own = NetRecord {
            namespaces: vec!["tpa-1".into()],
            links: vec!["tpav1".into()],
            routes: vec![],
            tables: vec!["tpa".into()],
        };
        assert!(s.remove(&own, &own).is_ok());
        for (asked, what) in [
            (
                NetRecord {
                    links: vec!["eth0".into()],
                    ..NetRecord::default()
                },
                "link eth0",
            ),
            (
                NetRecord {
                    namespaces: vec!["tpb-1".into()],
                    ..NetRecord::default()
                },
                "namespace tpb-1",
            ),
            (
                NetRecord {
                    tables: vec!["filter".into()],
                    ..NetRecord::default()
                },
                "nftables table filter",
            ),
            (
                NetRecord {
                    routes: vec!["unreachable 10.0.0.0/8 metric 4294967295".into()],
                    ..NetRecord::default()
                },
                "route unreachable",
            ),
        ] {
            let e = s.remove(&asked, &own).unwrap_err();
            assert!(
                e.starts_with(what) && e.contains("not made for host a"),
                "{e}"
            );
        }
    }
}
