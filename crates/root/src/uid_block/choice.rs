//! Which uid block a host takes: a pure function of the block records and
//! of which blocks still have processes running as their uids.
//!
//! The rules, in order:
//!
//! 1. A block is the host's own when its record names the host's run dir
//!    or its host name and the supervisor recorded there is gone (a run of
//!    this host killed with `-9`). Processes still running in its own
//!    blocks are its own leftovers: they are ended first ([`Choice::End`]),
//!    once; then its own block is taken back if nothing runs in it.
//! 2. Otherwise the first block that no live supervisor holds and in which
//!    no process runs. A block whose supervisor is gone but whose uids
//!    still run (another host killed with `-9`, its instances alive) is
//!    skipped and reported ([`Skipped`]): handing it out would put two
//!    tenants under one uid (one process limit; each could signal and
//!    ptrace the other).
//! 3. None left: [`Choice::Full`].

use std::collections::BTreeMap;

/// What a block's record says: who took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRecord {
    /// The run dir of the host that took it.
    pub run_dir: String,
    /// Its supervisor's PID.
    pub pid: u32,
    /// Its host name (records written before names were kept have none).
    pub host: Option<String>,
}

impl BlockRecord {
    /// The record's text: run dir, PID and host name, a line each.
    pub fn text(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.run_dir,
            self.pid,
            self.host.as_deref().unwrap_or("")
        )
    }

    /// Reads [`BlockRecord::text`] back; a PID that does not parse is 0
    /// (no process), a missing or empty name none.
    pub fn parse(text: &str) -> BlockRecord {
        let mut lines = text.lines();
        let run_dir = lines.next().unwrap_or("").to_string();
        let pid = lines.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let host = lines.next().filter(|h| !h.is_empty()).map(str::to_string);
        BlockRecord { run_dir, pid, host }
    }
}

/// A record found under the lock, and whether its supervisor still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub record: BlockRecord,
    pub alive: bool,
}

/// The host asking for a block.
#[derive(Debug, Clone, Copy)]
pub struct Claimant<'a> {
    pub run_dir: &'a str,
    pub host: &'a str,
}

impl Claimant<'_> {
    /// Whether `held` is a block of an earlier run of this host.
    pub fn owns(&self, held: &Held) -> bool {
        !held.alive
            && (held.record.run_dir == self.run_dir
                || held.record.host.as_deref() == Some(self.host))
    }
}

/// A block passed over because processes still run as its uids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub k: u32,
    /// Who took it last, if a record says.
    pub record: Option<BlockRecord>,
    /// How many processes run as its uids.
    pub running: usize,
    /// The block was this host's own (its processes did not end).
    pub own: bool,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Take block `k`; `skipped` are the blocks before it passed over.
    Take { k: u32, skipped: Vec<Skipped> },
    /// End the processes running in these blocks of this host's own
    /// (leftovers of its last run), then choose again.
    End { blocks: Vec<u32> },
    /// No block can be taken.
    Full { skipped: Vec<Skipped> },
}

/// The choice among `blocks` blocks (`0..blocks`), given the records
/// (`held`, by block) and the processes running as each block's uids
/// (`running`, PIDs by block). With `may_end` false (the leftovers were
/// ended once already) this host's own blocks where processes still run
/// are passed over like any other.
pub fn choose(
    me: Claimant<'_>,
    held: &BTreeMap<u32, Held>,
    running: &BTreeMap<u32, Vec<u32>>,
    may_end: bool,
    blocks: u32,
) -> Choice {
    let busy = |k: u32| running.get(&k).map_or(0, Vec::len);
    let own: Vec<u32> = held
        .iter()
        .filter(|(&k, h)| k < blocks && me.owns(h))
        .map(|(&k, _)| k)
        .collect();
    if may_end {
        let leftovers: Vec<u32> = own.iter().copied().filter(|&k| busy(k) > 0).collect();
        if !leftovers.is_empty() {
            return Choice::End { blocks: leftovers };
        }
    }
    if let Some(&k) = own.iter().find(|&&k| busy(k) == 0) {
        return Choice::Take { k, skipped: vec![] };
    }
    let mut skipped = vec![];
    for k in 0..blocks {
        let h = held.get(&k);
        if h.is_some_and(|h| h.alive) {
            continue; // a live host's
        }
        match busy(k) {
            0 => return Choice::Take { k, skipped },
            n => skipped.push(Skipped {
                k,
                record: h.map(|h| h.record.clone()),
                running: n,
                own: h.is_some_and(|h| me.owns(h)),
            }),
        }
    }
    Choice::Full { skipped }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Claimant<'static> = Claimant {
        run_dir: "/run/tickpack/b",
        host: "b",
    };

    fn rec(run_dir: &str, pid: u32, host: Option<&str>, alive: bool) -> Held {
        Held {
            record: BlockRecord {
                run_dir: run_dir.into(),
                pid,
                host: host.map(str::to_string),
            },
            alive,
        }
    }

    fn map<V: Clone>(pairs: &[(u32, V)]) -> BTreeMap<u32, V> {
        pairs.iter().cloned().collect()
    }

    #[test]
    fn a_record_reads_back_and_an_old_one_has_no_name() {
        let r = BlockRecord {
            run_dir: "/run/tickpack/a".into(),
            pid: 42,
            host: Some("a".into()),
        };
        assert_eq!(BlockRecord::parse(&r.text()), r);
        let old = BlockRecord::parse("/run/tickpack/a\n42\n");
        assert_eq!(old.host, None);
        assert_eq!(old.pid, 42);
        assert_eq!(BlockRecord::parse("").pid, 0);
        assert_eq!(BlockRecord::parse("/x\nnot a pid\n\n").pid, 0);
    }

    #[test]
    fn the_first_block_nobody_holds_is_taken() {
        let held = map(&[(0, rec("/run/tickpack/a", 7, Some("a"), true))]);
        let c = choose(ME, &held, &BTreeMap::new(), true, 10);
        assert_eq!(
            c,
            Choice::Take {
                k: 1,
                skipped: vec![]
            }
        );
        // A dead supervisor's block with nothing running in it is free.
        let held = map(&[(0, rec("/run/tickpack/a", 7, Some("a"), false))]);
        let c = choose(ME, &held, &BTreeMap::new(), true, 10);
        assert_eq!(
            c,
            Choice::Take {
                k: 0,
                skipped: vec![]
            }
        );
    }

    /// The bug of issue 38, item 3: host A's supervisor was killed with -9,
    /// its instances ran on as block 0's uids, and host B was handed block
    /// 0 because its record named a supervisor that was gone.
    #[test]
    fn a_dead_hosts_block_was_handed_out_while_its_instances_still_ran() {
        let held = map(&[(0, rec("/run/tickpack/a", 7, Some("a"), false))]);
        let running = map(&[(0, vec![1234, 1240])]);
        let c = choose(ME, &held, &running, true, 10);
        assert_eq!(
            c,
            Choice::Take {
                k: 1,
                skipped: vec![Skipped {
                    k: 0,
                    record: Some(held[&0].record.clone()),
                    running: 2,
                    own: false
                }]
            }
        );
    }

    #[test]
    fn uids_that_run_without_a_record_are_not_handed_out() {
        // Released while its processes ran, or a uid of someone else.
        let running = map(&[(0, vec![99]), (1, vec![100])]);
        let c = choose(ME, &BTreeMap::new(), &running, true, 10);
        let Choice::Take { k, skipped } = c else {
            panic!("{c:?}")
        };
        assert_eq!(k, 2);
        assert_eq!(skipped.len(), 2);
        assert!(skipped.iter().all(|s| s.record.is_none() && !s.own));
    }

    #[test]
    fn a_hosts_own_leftovers_are_ended_then_its_block_taken_back() {
        for own in [
            rec("/run/tickpack/b", 7, None, false),
            rec("/elsewhere", 7, Some("b"), false),
        ] {
            let held = map(&[(0, rec("/a", 3, Some("a"), true)), (4, own.clone())]);
            let running = map(&[(4, vec![500])]);
            assert_eq!(
                choose(ME, &held, &running, true, 10),
                Choice::End { blocks: vec![4] },
                "{own:?}"
            );
            // They ended: block 4 is taken back (not the lower free 1).
            assert_eq!(
                choose(ME, &held, &BTreeMap::new(), false, 10),
                Choice::Take {
                    k: 4,
                    skipped: vec![]
                }
            );
            // They did not: another block, and it is said why.
            let c = choose(ME, &held, &running, false, 10);
            assert_eq!(
                c,
                Choice::Take {
                    k: 1,
                    skipped: vec![]
                },
                "block 4 lies after block 1, so nothing was passed over"
            );
            let held = map(&[(0, own.clone())]);
            let running = map(&[(0, vec![500])]);
            let Choice::Take { k: 1, skipped } = choose(ME, &held, &running, false, 10) else {
                panic!()
            };
            assert!(skipped[0].own, "{skipped:?}");
        }
    }

    #[test]
    fn a_live_hosts_block_is_never_ours_whatever_its_record_says() {
        // Same run dir or same name, but its supervisor runs: not ended,
        // not taken (the host lock keeps this from happening; the choice
        // does not rely on it).
        for live in [
            rec("/run/tickpack/b", 7, Some("x"), true),
            rec("/x", 7, Some("b"), true),
        ] {
            let held = map(&[(0, live)]);
            let running = map(&[(0, vec![500])]);
            assert_eq!(
                choose(ME, &held, &running, true, 10),
                Choice::Take {
                    k: 1,
                    skipped: vec![]
                }
            );
        }
    }

    #[test]
    fn another_hosts_leftovers_are_never_ended() {
        let held = map(&[(0, rec("/run/tickpack/a", 7, Some("a"), false))]);
        let running = map(&[(0, vec![500])]);
        let c = choose(ME, &held, &running, true, 10);
        assert!(!matches!(c, Choice::End { .. }), "{c:?}");
    }

    #[test]
    fn every_block_held_or_running_is_full() {
        let held = map(&[(0, rec("/a", 3, Some("a"), true))]);
        let running = map(&[(1, vec![9])]);
        let c = choose(ME, &held, &running, true, 2);
        let Choice::Full { skipped } = c else {
            panic!("{c:?}")
        };
        assert_eq!(skipped.iter().map(|s| s.k).collect::<Vec<_>>(), [1]);
    }
}
