//! A block of uids per host, so two hosts on one machine (or a host and a
//! bench run) never share an instance uid: the kernel counts processes
//! (RLIMIT_NPROC) per uid, and a process may signal and ptrace another of
//! its uid, so a shared uid let one host's instance take another's process
//! budget and reach into it.
//!
//! Block K holds uids `BLOCKS_BASE + K * BLOCK_SIZE ..` (instance N is the
//! block's base + N, the host's batch work the base, the processes that
//! read what its instances send the block's last uid). Blocks are handed
//! out from records in [`BLOCK_DIR`], one file per block naming the run
//! dir, PID (the host's root process, which lives as long as its
//! supervisor) and host name of its holder, under an exclusive
//! `flock` on a lock file there. The record is removed at teardown.
//!
//! A block belongs to one live set of processes. Under the lock the host
//! reads every record and scans `/proc` for processes running as a
//! block's uids ([`uids`]), and [`choice::choose`]
//! decides: a block whose supervisor is gone is handed out again only once
//! nothing runs as its uids; the host's own leftovers (a record naming its
//! run dir or host name, its supervisor gone) are ended first, by PID,
//! never a process that took a PID since; another host's leftovers are
//! left alone and their block passed over, with a line saying so.

mod choice;
pub mod uids;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::ops::Range;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use choice::{BlockRecord, Choice, Claimant, Held, Skipped};

/// Where block records are kept (root's own).
pub const BLOCK_DIR: &str = "/run/tickpack/uid-blocks";
/// The first block's base (above the process backend's 200000).
pub const BLOCKS_BASE: u32 = 201_000;
/// uids per block (instances are 1..=250).
pub const BLOCK_SIZE: u32 = 1_000;
/// The block's uid its host's readers run as (the bench's players and
/// prober, `tickpack_bench::readers`): the last, above every instance's.
pub const READERS_UID_OFFSET: u32 = BLOCK_SIZE - 1;
/// How many blocks there are (uids up to 201000 + 1000 * 4000, below 2^32).
pub const BLOCKS: u32 = 4_000;

/// How long a host waits for its own leftovers to end before it takes
/// another block (SIGKILLed processes end at once; a short wait in tests).
const END_WAIT: Duration = Duration::from_millis(if cfg!(test) { 300 } else { 5_000 });
/// The most blocks passed over that are named one by one.
const SAID_MAX: usize = 8;
/// The largest record read back (a path, a PID and a name).
const RECORD_MAX: u64 = 8192;

/// The uids of block `k`.
pub fn block_uids(k: u32) -> Range<u32> {
    let base = BLOCKS_BASE + k * BLOCK_SIZE;
    base..base + BLOCK_SIZE
}

/// The block uid `uid` belongs to, if any.
pub fn block_of(uid: u32) -> Option<u32> {
    let k = uid.checked_sub(BLOCKS_BASE)? / BLOCK_SIZE;
    (k < BLOCKS).then_some(k)
}

/// A block held by this process (a host's root process).
#[derive(Debug)]
pub struct UidBlock {
    pub base: u32,
    record: PathBuf,
}

impl UidBlock {
    /// The uid (and gid) of instance `id`.
    #[cfg(test)]
    fn uid(&self, id: u32) -> u32 {
        self.base + id
    }

    /// Takes a block for host `host` whose run dir is `run_dir`; returns it
    /// with what the host should say (blocks passed over, leftovers ended).
    pub fn take(run_dir: &Path, host: &str) -> std::io::Result<(UidBlock, Vec<String>)> {
        Self::take_in(Path::new(BLOCK_DIR), Path::new("/proc"), run_dir, host)
    }

    pub fn take_in(
        dir: &Path,
        proc_root: &Path,
        run_dir: &Path,
        host: &str,
    ) -> std::io::Result<(UidBlock, Vec<String>)> {
        std::fs::create_dir_all(dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir.join(".lock"))?;
        // flock on a descriptor we own; released when `lock` closes.
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)?;
        let run_dir_text = run_dir.display().to_string();
        let me = Claimant {
            run_dir: &run_dir_text,
            host,
        };
        let mut said = vec![];
        let mut may_end = true;
        loop {
            let held = read_records(dir)?;
            let running = running_by_block(proc_root)?;
            match choice::choose(me, &held, &running, may_end, BLOCKS) {
                Choice::End { blocks } => {
                    for k in blocks {
                        let pids = running.get(&k).map_or(&[][..], Vec::as_slice);
                        let ended = end_processes(proc_root, pids, &block_uids(k));
                        let of = held.get(&k).map(|h| describe_holder(&h.record));
                        said.push(format!(
                            "uid block {k} ({}): ended {ended} of {} left running by this host's last run{}",
                            show_uids(k),
                            processes(pids.len()),
                            of.map(|o| format!(" ({o})")).unwrap_or_default()
                        ));
                    }
                    may_end = false;
                }
                Choice::Take { k, skipped } => {
                    said.extend(describe_skipped(&skipped));
                    let record = dir.join(k.to_string());
                    let _ = std::fs::remove_file(&record);
                    let mut f = std::fs::OpenOptions::new()
                        .create_new(true)
                        .write(true)
                        .mode(0o600)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                        .open(&record)?;
                    let mine = BlockRecord {
                        run_dir: run_dir_text.clone(),
                        pid: std::process::id(),
                        host: Some(host.to_string()),
                    };
                    f.write_all(mine.text().as_bytes())?;
                    let block = UidBlock {
                        base: block_uids(k).start,
                        record,
                    };
                    return Ok((block, said));
                }
                Choice::Full { skipped } => {
                    let why = describe_skipped(&skipped).join("; ");
                    return Err(std::io::Error::other(format!(
                        "all {BLOCKS} uid blocks in {} are taken{}",
                        dir.display(),
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(": {why}")
                        }
                    )));
                }
            }
        }
    }

    /// Gives the block back (its record is removed if still ours).
    pub fn release(&self) {
        let ours = read_record(&self.record).is_some_and(|r| r.pid == std::process::id());
        if ours {
            let _ = std::fs::remove_file(&self.record);
        }
    }
}

/// The first of `pids` (under `proc_root`) running as a uid of a block
/// other than the one at `own_base`, with that uid: another host's work
/// (live, or left running by a host that is gone).
pub fn first_of_other_blocks(proc_root: &Path, pids: &[u32], own_base: u32) -> Option<(u32, u32)> {
    let own = own_base..own_base.saturating_add(BLOCK_SIZE);
    pids.iter().find_map(|&pid| {
        let found = uids::live_uids_at(proc_root, pid)?;
        found
            .into_iter()
            .find(|&u| block_of(u).is_some() && !own.contains(&u))
            .map(|u| (pid, u))
    })
}

/// Who holds uid `uid`'s block, as its record says (for messages).
pub fn holder_of_uid(uid: u32) -> String {
    let Some(k) = block_of(uid) else {
        return "no uid block".into();
    };
    match read_record(&Path::new(BLOCK_DIR).join(k.to_string())) {
        Some(r) => format!("uid block {k}: {}", describe_holder(&r)),
        None => format!("uid block {k}, which no host's record claims"),
    }
}

/// Every record in `dir` (files named by block number), with whether its
/// supervisor still runs.
fn read_records(dir: &Path) -> std::io::Result<BTreeMap<u32, Held>> {
    let mut held = BTreeMap::new();
    for entry in std::fs::read_dir(dir)?.take(2 * BLOCKS as usize) {
        let entry = entry?;
        let Some(k) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|&k| k < BLOCKS)
        else {
            continue;
        };
        if let Some(record) = read_record(&entry.path()) {
            let alive = tickpack_sys::process::pid_alive(record.pid)
                && tickpack_sys::process::is_tickpack(record.pid);
            held.insert(k, Held { record, alive });
        }
    }
    Ok(held)
}

/// One record, never through a link; `None` if it cannot be read.
fn read_record(path: &Path) -> Option<BlockRecord> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    f.take(RECORD_MAX).read_to_string(&mut text).ok()?;
    Some(BlockRecord::parse(&text))
}

/// The PIDs running as each block's uids.
fn running_by_block(proc_root: &Path) -> std::io::Result<BTreeMap<u32, Vec<u32>>> {
    let all = BLOCKS_BASE..block_uids(BLOCKS - 1).end;
    let mut running: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for p in uids::processes_with_uids(proc_root, &all)? {
        let mut blocks: Vec<u32> = p.uids.iter().filter_map(|&u| block_of(u)).collect();
        blocks.dedup();
        for k in blocks {
            let pids = running.entry(k).or_default();
            if pids.last() != Some(&p.pid) {
                pids.push(p.pid);
            }
        }
    }
    Ok(running)
}

/// SIGKILLs each of `pids` still running as a uid in `range`, then waits
/// (at most [`END_WAIT`]) until none runs so; returns how many were
/// signalled.
fn end_processes(proc_root: &Path, pids: &[u32], range: &Range<u32>) -> usize {
    let ended = pids
        .iter()
        .filter(|&&pid| uids::kill_if_uid_in(pid, range))
        .count();
    let t0 = Instant::now();
    let still = |pid: &u32| {
        uids::live_uids_at(proc_root, *pid).is_some_and(|u| u.iter().any(|u| range.contains(u)))
    };
    while pids.iter().any(still) && t0.elapsed() < END_WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    ended
}

fn processes(n: usize) -> String {
    match n {
        1 => "1 process".into(),
        n => format!("{n} processes"),
    }
}

fn show_uids(k: u32) -> String {
    let r = block_uids(k);
    format!("uids {}-{}", r.start, r.end - 1)
}

fn describe_holder(r: &BlockRecord) -> String {
    format!(
        "host {}, run dir {}, held by PID {}",
        r.host.as_deref().unwrap_or("(not recorded)"),
        r.run_dir,
        r.pid
    )
}

/// One line per block passed over (at most [`SAID_MAX`], then a count).
fn describe_skipped(skipped: &[Skipped]) -> Vec<String> {
    let mut lines: Vec<String> = skipped
        .iter()
        .take(SAID_MAX)
        .map(|s| {
            let whose = match (&s.record, s.own) {
                (Some(r), true) => format!(
                    "left by this host's last run ({}), which did not end",
                    describe_holder(r)
                ),
                (Some(r), false) => format!(
                    "left by {}, which is gone; `tickpack host down --name {} --run-dir {}` ends them",
                    describe_holder(r),
                    r.host.as_deref().unwrap_or("NAME"),
                    r.run_dir
                ),
                (None, _) => "which no host's record claims".to_string(),
            };
            format!(
                "uid block {} ({}) not taken: {} still running as its uids, {whose}",
                s.k,
                show_uids(s.k),
                processes(s.running)
            )
        })
        .collect();
    if skipped.len() > SAID_MAX {
        lines.push(format!(
            "{} more uid blocks not taken: processes still run as their uids",
            skipped.len() - SAID_MAX
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block dir and a fake `/proc` in a temp tree, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new(tag: &str) -> Tree {
            let t = std::env::temp_dir().join(format!("tp-uidblock-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&t);
            std::fs::create_dir_all(t.join("proc")).unwrap();
            Tree(t)
        }
        fn blocks(&self) -> PathBuf {
            self.0.join("blocks")
        }
        fn proc_(&self) -> PathBuf {
            self.0.join("proc")
        }
        /// A process `pid` running as `uid` in the fake `/proc`.
        fn process(&self, pid: u32, uid: u32) {
            let d = self.proc_().join(pid.to_string());
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("status"),
                format!("Name:\tx\nState:\tS (sleeping)\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"),
            )
            .unwrap();
        }
        fn take(&self, run_dir: &str, host: &str) -> (UidBlock, Vec<String>) {
            UidBlock::take_in(&self.blocks(), &self.proc_(), Path::new(run_dir), host).unwrap()
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn two_live_holders_get_different_blocks_and_a_released_one_is_reused() {
        let t = Tree::new("live");
        // Our own process (a test binary named tickpack_host-...) holds both.
        let (a, _) = t.take("/run/a", "a");
        let (b, _) = t.take("/run/b", "b");
        assert_ne!(a.base, b.base);
        assert!(a.uid(250) < b.base || b.uid(250) < a.base);
        b.release();
        let (c, said) = t.take("/run/c", "c");
        assert_eq!(c.base, b.base, "a released block is free");
        assert!(said.is_empty(), "{said:?}");
    }

    /// Issue 38, item 3, on a temp tree: host A's supervisor is gone (its
    /// record names PID 0), its instance still runs as A's block's uid
    /// 201001; host B is handed the next block and says why.
    #[test]
    fn a_dead_hosts_block_was_handed_out_while_its_instances_still_ran() {
        let t = Tree::new("dead");
        std::fs::create_dir_all(t.blocks()).unwrap();
        std::fs::write(t.blocks().join("0"), "/run/tickpack/a\n0\na\n").unwrap();
        t.process(4242, 201_001);
        let (b, said) = t.take("/run/tickpack/b", "b");
        assert_eq!(b.base, block_uids(1).start, "{said:?}");
        assert_eq!(said.len(), 1, "{said:?}");
        for part in [
            "uid block 0",
            "uids 201000-201999",
            "host a",
            "/run/tickpack/a",
        ] {
            assert!(said[0].contains(part), "{part}: {said:?}");
        }
        // Once A's processes are gone, its block is free again.
        b.release();
        std::fs::remove_dir_all(t.proc_().join("4242")).unwrap();
        let (c, said) = t.take("/run/tickpack/c", "c");
        assert_eq!(c.base, BLOCKS_BASE, "{said:?}");
        assert!(said.is_empty(), "{said:?}");
    }

    /// A host's own leftovers that cannot be ended (here: a fake PID that
    /// is no real process of that uid) keep their block out of reach too.
    #[test]
    fn own_leftovers_that_do_not_end_keep_their_block() {
        let t = Tree::new("own");
        std::fs::create_dir_all(t.blocks()).unwrap();
        std::fs::write(t.blocks().join("0"), "/run/tickpack/b\n0\nb\n").unwrap();
        // PID 1 is never signalled.
        t.process(1, 201_005);
        let (b, said) = t.take("/run/tickpack/b", "b");
        assert_eq!(b.base, block_uids(1).start, "{said:?}");
        assert!(said[0].contains("ended 0 of 1"), "{said:?}");
        assert!(said[1].contains("did not end"), "{said:?}");
    }

    #[test]
    fn every_block_in_use_is_an_error_that_says_why() {
        let t = Tree::new("full");
        std::fs::create_dir_all(t.blocks()).unwrap();
        // A few records of ours (live), and a running process in every
        // other block: a process per uid block, too many to name.
        for k in 0..BLOCKS {
            if k < 3 {
                std::fs::write(
                    t.blocks().join(k.to_string()),
                    BlockRecord {
                        run_dir: format!("/run/{k}"),
                        pid: std::process::id(),
                        host: Some(format!("h{k}")),
                    }
                    .text(),
                )
                .unwrap();
            } else {
                t.process(10_000 + k, block_uids(k).start + 1);
            }
        }
        let e = UidBlock::take_in(&t.blocks(), &t.proc_(), Path::new("/run/z"), "z").unwrap_err();
        let e = e.to_string();
        assert!(e.contains("all 4000 uid blocks"), "{e}");
        assert!(
            e.contains(&format!("{} more", BLOCKS - 3 - SAID_MAX as u32)),
            "{e}"
        );
    }

    #[test]
    fn a_process_of_another_block_is_found_and_one_of_ours_is_not() {
        let t = Tree::new("others");
        t.process(10, 201_001); // block 0
        t.process(11, 202_000); // block 1: ours below
        t.process(12, 1000); // no block
        let ours = block_uids(1).start;
        assert_eq!(first_of_other_blocks(&t.proc_(), &[11, 12, 13], ours), None);
        assert_eq!(
            first_of_other_blocks(&t.proc_(), &[11, 12, 10], ours),
            Some((10, 201_001))
        );
    }

    #[test]
    fn a_uid_maps_to_its_block() {
        assert_eq!(block_of(200_999), None);
        assert_eq!(block_of(201_000), Some(0));
        assert_eq!(block_of(201_999), Some(0));
        assert_eq!(block_of(202_000), Some(1));
        assert_eq!(block_of(block_uids(BLOCKS - 1).end - 1), Some(BLOCKS - 1));
        assert_eq!(block_of(block_uids(BLOCKS - 1).end), None);
    }
}
