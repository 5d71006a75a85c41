//! Run delay of process trees from `/proc/PID/task/TID/schedstat`: how long
//! the servers' threads waited runnable on a runqueue before they got a CPU.
//! Servers that share a CPU and wake together wait for each other; their CPU
//! share alone hides it.
//!
//! A `schedstat` text is three numbers (the kernel's
//! `Documentation/scheduler/sched-stats.rst`): the time the thread ran on a
//! CPU, the time it waited runnable on a runqueue (the run delay), both in
//! ns, and the number of timeslices it ran (each arrival on a CPU, which
//! ends one wait). The run delay is added when a wait ends, so the growth
//! of the run delay over the growth of the timeslices is the mean of the
//! waits that ended in the interval: one wake-up's wait, or a preempted
//! thread's wait to get back on.
//!
//! - [`parse_schedstat`]: the text, parsed (never panics: the text comes
//!   from processes we do not trust).
//! - [`SchedStat::since`] and [`SchedStatDelta`]: the growth between two
//!   readings of one thread, its run delay and its mean wait per timeslice
//!   ([`SchedStatDelta::mean_wait_per_timeslice_us`]).
//! - [`RunDelaySampler`]: reads every thread of a set of process trees and
//!   records each thread's mean wait per interval in a histogram.
//!
//! Call [`RunDelaySampler::new`], then [`RunDelaySampler::sample`] once for
//! a baseline and every ~100 ms after it; read
//! [`RunDelaySampler::histogram`] and the totals (and, every second,
//! [`RunDelaySampler::end_window`] for that second's p99); [`RunDelaySampler::reset`]
//! starts a new phase (the last readings are kept, so the next sample still
//! measures an interval).
//!
//! It does not tell a wait for a busy CPU from a wait the hypervisor caused
//! (steal: see [`crate::proc_stat`]), does not read the system-wide
//! `/proc/schedstat` (absent when the kernel lacks `CONFIG_SCHEDSTATS`; the
//! per-thread files need only `CONFIG_SCHED_INFO`), does not pin, move or
//! signal anything, and does not notice a new thread that reused a TID with
//! counters at or above the old thread's (only counters that went back).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use crate::proc_tree::{read_capped, visit_tree_threads};
pub use crate::proc_tree::{MAX_PROCESSES_PER_ROOT, MAX_READ_BYTES, MAX_THREADS_PER_ROOT};
/// The histogram's highest value, in µs (60 s); higher waits record as it.
pub const MAX_MEAN_WAIT_US: u64 = 60_000_000;

/// One reading of a thread's `schedstat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedStat {
    /// Time run on a CPU, ns.
    pub on_cpu_ns: u64,
    /// Time waited runnable on a runqueue (the run delay), ns.
    pub run_delay_ns: u64,
    /// Timeslices run (the kernel's `pcount`: arrivals on a CPU).
    pub timeslices: u64,
}

/// The growth of a thread's counters between two readings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedStatDelta {
    /// Time run on a CPU in the interval, ns.
    pub on_cpu_ns: u64,
    /// Run delay added in the interval, ns: the waits that ended in it.
    pub run_delay_ns: u64,
    /// Timeslices run in the interval.
    pub timeslices: u64,
}

/// The three numbers of a `/proc/PID/task/TID/schedstat` text. `None`
/// unless the text starts with three unsigned decimal numbers that fit in
/// a `u64` (separated by ASCII white space); fields after the third are
/// ignored, as a later kernel may append some.
pub fn parse_schedstat(text: &str) -> Option<SchedStat> {
    let mut fields = text.split_ascii_whitespace().map(|f| {
        if f.bytes().all(|b| b.is_ascii_digit()) {
            f.parse::<u64>().ok()
        } else {
            None
        }
    });
    let mut next = || fields.next().flatten();
    Some(SchedStat {
        on_cpu_ns: next()?,
        run_delay_ns: next()?,
        timeslices: next()?,
    })
}

impl SchedStat {
    /// The growth since an `earlier` reading of the same thread. `None`
    /// when a counter went back: the TID now names another thread.
    pub fn since(&self, earlier: &SchedStat) -> Option<SchedStatDelta> {
        Some(SchedStatDelta {
            on_cpu_ns: self.on_cpu_ns.checked_sub(earlier.on_cpu_ns)?,
            run_delay_ns: self.run_delay_ns.checked_sub(earlier.run_delay_ns)?,
            timeslices: self.timeslices.checked_sub(earlier.timeslices)?,
        })
    }
}

impl SchedStatDelta {
    /// The mean wait of one timeslice in the interval (the run delay added
    /// over the timeslices run), in µs rounded to the nearest (half up).
    /// `None` when the thread was not switched onto a CPU in the interval.
    pub fn mean_wait_per_timeslice_us(&self) -> Option<u64> {
        if self.timeslices == 0 {
            return None;
        }
        let per = u128::from(self.timeslices) * 1000;
        let us = (u128::from(self.run_delay_ns) + per / 2) / per;
        // At most run_delay_ns / 1000 (+1), so it fits.
        Some(u64::try_from(us).unwrap_or(u64::MAX))
    }
}

/// Reads the run delay of every thread of a set of process trees, every
/// ~100 ms, and keeps, since the last [`reset`](Self::reset):
///
/// - a histogram of each thread's mean wait per timeslice, one value (µs)
///   per thread and interval in which it was switched onto a CPU;
/// - the run delay and the on-CPU time summed over every thread and
///   interval (so the servers' threads "waited X ms per second of CPU").
///
/// A thread is compared with its own last reading, keyed by (pid, tid);
/// its first reading records nothing. Threads that vanish are dropped, a
/// pid that is gone is skipped, a file that does not parse is skipped, a
/// thread whose counters went back (a reused TID) starts over.
#[derive(Debug)]
pub struct RunDelaySampler {
    proc_root: PathBuf,
    last: HashMap<(u32, u32), SchedStat>,
    histogram: Histogram<u64>,
    /// The same intervals since the last [`RunDelaySampler::end_window`].
    window: Histogram<u64>,
    total_run_delay_ns: u64,
    total_on_cpu_ns: u64,
}

impl RunDelaySampler {
    /// A sampler reading `proc_root` (`/proc`, or a fake tree in tests).
    pub fn new(proc_root: &Path) -> RunDelaySampler {
        RunDelaySampler {
            proc_root: proc_root.to_path_buf(),
            last: HashMap::new(),
            histogram: Histogram::new_with_bounds(1, MAX_MEAN_WAIT_US, 3)
                .expect("static bounds are valid"),
            window: Histogram::new_with_bounds(1, MAX_MEAN_WAIT_US, 3)
                .expect("static bounds are valid"),
            total_run_delay_ns: 0,
            total_on_cpu_ns: 0,
        }
    }

    /// Reads every thread of every process in each of `pids`' trees (the
    /// process and its descendants, through `/proc/PID/task/TID/children`;
    /// at most [`MAX_PROCESSES_PER_ROOT`] processes and
    /// [`MAX_THREADS_PER_ROOT`] threads per pid, a process in two trees is
    /// read once) and records the interval since each thread's last
    /// reading.
    pub fn sample(&mut self, pids: &[u32]) {
        let mut now = HashMap::new();
        let mut visited = HashSet::new();
        for &root in pids {
            visit_tree_threads(&self.proc_root, root, &mut visited, |pid, tid, task| {
                if let Some(s) = read_capped(&task.join("schedstat"))
                    .as_deref()
                    .and_then(parse_schedstat)
                {
                    now.insert((pid, tid), s);
                }
            });
        }
        for (key, reading) in &now {
            let Some(d) = self.last.get(key).and_then(|prev| reading.since(prev)) else {
                continue;
            };
            self.total_on_cpu_ns = self.total_on_cpu_ns.saturating_add(d.on_cpu_ns);
            self.total_run_delay_ns = self.total_run_delay_ns.saturating_add(d.run_delay_ns);
            if let Some(us) = d.mean_wait_per_timeslice_us() {
                self.histogram.saturating_record(us);
                self.window.saturating_record(us);
            }
        }
        self.last = now;
    }

    /// The per-thread, per-interval mean waits per timeslice, µs.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    /// The number of thread intervals recorded in the histogram.
    pub fn intervals_recorded(&self) -> u64 {
        self.histogram.len()
    }

    /// Run delay summed over every thread and interval, ns.
    pub fn total_run_delay_ns(&self) -> u64 {
        self.total_run_delay_ns
    }

    /// On-CPU time summed over every thread and interval, ns (an interval
    /// in which a thread ran on without being switched out counts here,
    /// though it records no wait).
    pub fn total_on_cpu_ns(&self) -> u64 {
        self.total_on_cpu_ns
    }

    /// The number of threads the last sample read (each thread's last
    /// reading is kept for the next sample).
    pub fn threads_tracked(&self) -> usize {
        self.last.len()
    }

    /// The p99 of the intervals recorded since the last call (or the
    /// last [`RunDelaySampler::reset`]), µs, and a new window from here;
    /// `None` when the window recorded none. Called once a second, it
    /// gives the per-second p99s that a ladder's relative limit rests on.
    pub fn end_window(&mut self) -> Option<u64> {
        let p99 = (!self.window.is_empty()).then(|| self.window.value_at_quantile(0.99));
        self.window.reset();
        p99
    }

    /// Clears the histogram and the totals; keeps the last readings.
    pub fn reset(&mut self) {
        self.histogram.reset();
        self.window.reset();
        self.total_run_delay_ns = 0;
        self.total_on_cpu_ns = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proc_memory::child_pids;
    use std::process::{Child, Command};
    use std::time::{Duration, Instant};

    fn st(on_cpu_ns: u64, run_delay_ns: u64, timeslices: u64) -> SchedStat {
        SchedStat {
            on_cpu_ns,
            run_delay_ns,
            timeslices,
        }
    }

    #[test]
    fn a_schedstat_text_is_three_numbers() {
        assert_eq!(
            parse_schedstat("416010 155824 2\n"),
            Some(st(416010, 155824, 2))
        );
        assert_eq!(parse_schedstat("  0\t0 0"), Some(st(0, 0, 0)));
        let max = u64::MAX;
        assert_eq!(
            parse_schedstat(&format!("{max} {max} {max}")),
            Some(st(max, max, max))
        );
        // A later kernel's extra fields are ignored.
        assert_eq!(parse_schedstat("1 2 3 4 five\n"), Some(st(1, 2, 3)));
    }

    #[test]
    fn garbage_empty_short_and_oversized_texts_do_not_parse() {
        for bad in [
            "",
            "\n",
            "1 2",
            "1 2\n3x",
            "a b c",
            "1 -2 3",
            "+1 2 3",
            "1 2 3.5",
            "1,2,3",
            "18446744073709551616 0 0",
            "99999999999999999999999999 1 1",
            "１ ２ ３",
            "1 2 \u{0}3",
        ] {
            assert_eq!(parse_schedstat(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn random_texts_never_panic_and_what_parses_round_trips() {
        let alphabet: Vec<char> = "0123456789 \t\n-+.x9\u{0}é１".chars().collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let len = (rand() % 40) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[(rand() % alphabet.len() as u64) as usize])
                .collect();
            if let Some(s) = parse_schedstat(&text) {
                let again = format!("{} {} {}", s.on_cpu_ns, s.run_delay_ns, s.timeslices);
                assert_eq!(parse_schedstat(&again), Some(s), "{text:?}");
            }
        }
    }

    #[test]
    fn the_mean_wait_is_the_run_delay_added_over_the_timeslices_run() {
        let d = st(5_000_000, 3_000_000, 10).since(&st(1_000_000, 1_000_000, 6));
        let d = d.expect("counters grew");
        assert_eq!(d.run_delay_ns, 2_000_000);
        assert_eq!(d.on_cpu_ns, 4_000_000);
        assert_eq!(d.mean_wait_per_timeslice_us(), Some(500));
        // Rounded to the nearest µs, half up.
        let mean = |run_delay_ns, timeslices| {
            st(0, run_delay_ns, timeslices)
                .since(&SchedStat::default())
                .unwrap()
                .mean_wait_per_timeslice_us()
        };
        assert_eq!(mean(1_499, 1), Some(1));
        assert_eq!(mean(1_500, 1), Some(2));
        assert_eq!(mean(1_499, 3), Some(0));
        assert_eq!(mean(1_500, 3), Some(1));
        assert_eq!(mean(u64::MAX, 1), Some(u64::MAX / 1000 + 1));
        assert_eq!(mean(u64::MAX, u64::MAX), Some(0));
    }

    #[test]
    fn a_thread_that_never_ran_records_no_wait() {
        let d = st(7, 9, 4).since(&st(7, 9, 4)).unwrap();
        assert_eq!(d, SchedStatDelta::default());
        assert_eq!(d.mean_wait_per_timeslice_us(), None);
        // Ran on without being switched out: CPU time, no wait.
        let d = st(900, 9, 4).since(&st(7, 9, 4)).unwrap();
        assert_eq!((d.on_cpu_ns, d.mean_wait_per_timeslice_us()), (893, None));
    }

    #[test]
    fn a_counter_that_went_back_is_a_new_thread_with_the_same_tid() {
        let old = st(100, 100, 100);
        assert_eq!(st(99, 200, 200).since(&old), None);
        assert_eq!(st(200, 99, 200).since(&old), None);
        assert_eq!(st(200, 200, 99).since(&old), None);
    }

    #[test]
    fn a_read_cut_at_the_cap_drops_the_cut_number() {
        let dir = FakeProc::new("cap");
        let path = dir.0.join("children");
        // "12345 " repeated: 4096 is not a multiple of 6, so the cap cuts one.
        std::fs::write(&path, "12345 ".repeat(1000)).unwrap();
        let text = read_capped(&path).unwrap();
        assert!(text.len() < MAX_READ_BYTES as usize);
        assert!(child_pids(&text).iter().all(|&p| p == 12345));
        assert_eq!(child_pids(&text).len(), MAX_READ_BYTES as usize / 6);
        assert_eq!(read_capped(&dir.0.join("absent")), None);
    }

    /// A fake `/proc` under the temp dir, removed on drop.
    struct FakeProc(PathBuf);

    impl FakeProc {
        fn new(name: &str) -> FakeProc {
            let dir =
                std::env::temp_dir().join(format!("tp-schedstat-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            FakeProc(dir)
        }

        /// Writes `pid`'s thread `tid`: its schedstat text and children.
        fn thread(&self, pid: u32, tid: u32, schedstat: &str, children: &str) {
            let task = self.0.join(format!("{pid}/task/{tid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("schedstat"), schedstat).unwrap();
            std::fs::write(task.join("children"), children).unwrap();
        }

        fn remove_thread(&self, pid: u32, tid: u32) {
            std::fs::remove_dir_all(self.0.join(format!("{pid}/task/{tid}"))).unwrap();
        }
    }

    impl Drop for FakeProc {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_sample_records_each_threads_mean_wait_over_its_process_tree() {
        let proc = FakeProc::new("tree");
        // Server 100 (threads 100, 101) forked 200; 200 forked 300.
        proc.thread(100, 100, "1000000 2000000 10\n", "200\n");
        proc.thread(100, 101, "5000 6000 7\n", "");
        proc.thread(200, 200, "0 0 0\n", "300");
        proc.thread(300, 300, "10 20 30\n", "");
        let mut s = RunDelaySampler::new(&proc.0);
        s.sample(&[100]);
        assert_eq!(s.threads_tracked(), 4);
        assert_eq!(s.intervals_recorded(), 0, "a first reading is a baseline");
        assert_eq!((s.total_run_delay_ns(), s.total_on_cpu_ns()), (0, 0));

        // 100: 3 ms more wait over 3 slices; 101: ran on, no switch;
        // 200: 1.5 µs over 2 slices (0.75 µs -> 1); 300: 1.499 µs over 3 (-> 0).
        proc.thread(100, 100, "4000000 5000000 13\n", "200\n");
        proc.thread(100, 101, "9000 6000 7\n", "");
        proc.thread(200, 200, "100 1500 2\n", "300");
        proc.thread(300, 300, "11 1519 33\n", "");
        s.sample(&[100]);
        let h = s.histogram();
        assert_eq!(s.intervals_recorded(), 3);
        assert_eq!((h.count_at(1000), h.count_at(1), h.count_at(0)), (1, 1, 1));
        assert_eq!(s.total_run_delay_ns(), 3_000_000 + 1_500 + 1_499);
        assert_eq!(s.total_on_cpu_ns(), 3_000_000 + 4_000 + 100 + 1);

        // Reset keeps the readings: the next interval is measured from them.
        s.reset();
        assert_eq!(s.intervals_recorded(), 0);
        assert_eq!((s.total_run_delay_ns(), s.total_on_cpu_ns()), (0, 0));
        proc.thread(100, 100, "4000000 5004000 14\n", "200\n");
        s.sample(&[100]);
        assert_eq!(s.intervals_recorded(), 1);
        assert_eq!(s.histogram().count_at(4), 1);
        assert_eq!((s.total_run_delay_ns(), s.total_on_cpu_ns()), (4_000, 0));
    }

    #[test]
    fn each_window_gives_the_p99_of_its_own_intervals() {
        let proc = FakeProc::new("window");
        proc.thread(100, 100, "0 0 0\n", "");
        let mut s = RunDelaySampler::new(&proc.0);
        s.sample(&[100]);
        assert_eq!(s.end_window(), None, "a baseline records nothing");
        // A window of one 3 ms wait, then one of a 20 µs wait.
        proc.thread(100, 100, "1000 3000000 1\n", "");
        s.sample(&[100]);
        assert_eq!(s.end_window().map(|us| us / 10), Some(300), "about 3000 µs");
        proc.thread(100, 100, "2000 3020000 2\n", "");
        s.sample(&[100]);
        assert_eq!(s.end_window(), Some(20));
        assert_eq!(s.end_window(), None, "a new window from each call");
        assert_eq!(s.intervals_recorded(), 2, "the whole histogram keeps both");
    }

    #[test]
    fn vanished_threads_gone_pids_reused_tids_and_garbage_record_nothing() {
        let proc = FakeProc::new("churn");
        proc.thread(100, 100, "10 10 1\n", "");
        proc.thread(100, 101, "10 10 1\n", "");
        proc.thread(100, 102, "10 10 1\n", "");
        let mut s = RunDelaySampler::new(&proc.0);
        s.sample(&[100, 4242]);
        assert_eq!(s.threads_tracked(), 3);

        proc.remove_thread(100, 101);
        proc.thread(100, 100, "5 5 5\n", ""); // went back: a reused TID
        proc.thread(100, 102, "garbage\n", "");
        s.sample(&[100, 4242]);
        assert_eq!(s.intervals_recorded(), 0);
        assert_eq!((s.total_run_delay_ns(), s.total_on_cpu_ns()), (0, 0));
        assert_eq!(s.threads_tracked(), 1, "only the reused TID's new reading");

        // The reused TID is measured from its new reading.
        proc.thread(100, 100, "6 2005 6\n", "");
        s.sample(&[100]);
        assert_eq!(s.intervals_recorded(), 1);
        assert_eq!(s.histogram().count_at(2), 1);
        s.sample(&[4242]);
        assert_eq!(s.threads_tracked(), 0);
    }

    #[test]
    fn a_tree_is_read_once_and_within_its_bounds() {
        let proc = FakeProc::new("bounds");
        // 1 forks 2..=100, each of which lists 1 as a child again (a loop).
        let kids: Vec<String> = (2..=100).map(|p| p.to_string()).collect();
        proc.thread(1, 1, "1 1 1\n", &kids.join(" "));
        for p in 2..=100 {
            proc.thread(p, p, "1 1 1\n", "1\n");
        }
        // 500 has 300 threads.
        for t in 500..800 {
            proc.thread(500, t, "1 1 1\n", "");
        }
        let mut s = RunDelaySampler::new(&proc.0);
        s.sample(&[1]);
        assert_eq!(s.threads_tracked(), MAX_PROCESSES_PER_ROOT);
        s.sample(&[500]);
        assert_eq!(s.threads_tracked(), MAX_THREADS_PER_ROOT);
        // A tree listed twice, or inside another listed tree, is read once.
        s.sample(&[1, 1, 2, 3]);
        assert_eq!(s.threads_tracked(), MAX_PROCESSES_PER_ROOT);
        // Each root has its own bounds.
        s.sample(&[500, 1]);
        assert_eq!(
            s.threads_tracked(),
            MAX_THREADS_PER_ROOT + MAX_PROCESSES_PER_ROOT
        );
    }

    /// Children spawned by a test, killed (by their PID) and reaped on drop.
    struct Reaped(Vec<Child>);

    impl Drop for Reaped {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// Waits (bounded) until `pid` is `sleep` asleep in its nanosleep, from
    /// which nothing wakes it before its time. Where `wchan` does not name
    /// kernel functions (a kernel without kallsyms writes 0), asleep with
    /// the same counters 100 ms apart.
    fn wait_until_asleep(pid: u32) {
        let read =
            |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap_or_default();
        let asleep = || {
            let stat = read("stat");
            let state = stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
            stat.contains("(sleep)") && state == Some('S')
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let wchan = read("wchan");
            if asleep() && wchan.contains("nanosleep") {
                return;
            }
            if asleep() && !wchan.contains(|c: char| c.is_ascii_alphabetic()) {
                let before = read("schedstat");
                std::thread::sleep(Duration::from_millis(100));
                if asleep() && read("schedstat") == before {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "sleep never slept: {:?}",
                read("stat")
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_spinners_cpu_time_grows_and_a_sleeper_records_no_wait() {
        let proc = Path::new("/proc");
        let mut own = RunDelaySampler::new(proc);
        own.sample(&[std::process::id()]);
        assert!(own.threads_tracked() >= 1, "schedstat unreadable here");

        let spawn = |prog: &str, args: &[&str]| Command::new(prog).args(args).spawn().unwrap();
        let mut children = Reaped(vec![]);
        children.0.push(spawn("sh", &["-c", "while :; do :; done"]));
        children.0.push(spawn("sleep", &["30"]));
        let (spinner, sleeper) = (children.0[0].id(), children.0[1].id());
        wait_until_asleep(sleeper);

        let mut spinning = RunDelaySampler::new(proc);
        let mut sleeping = RunDelaySampler::new(proc);
        spinning.sample(&[spinner]);
        sleeping.sample(&[sleeper]);
        assert_eq!(spinning.threads_tracked(), 1);
        assert_eq!(sleeping.threads_tracked(), 1);
        // Every ~100 ms until the spinner's CPU time shows (bounded).
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last_on_cpu = 0;
        for n in 1.. {
            std::thread::sleep(Duration::from_millis(100));
            spinning.sample(&[spinner]);
            sleeping.sample(&[sleeper]);
            assert!(spinning.total_on_cpu_ns() >= last_on_cpu);
            last_on_cpu = spinning.total_on_cpu_ns();
            assert_eq!(spinning.intervals_recorded(), spinning.histogram().len());
            assert!(spinning.intervals_recorded() <= n);
            if n >= 3 && last_on_cpu > 0 {
                break;
            }
            assert!(Instant::now() < deadline, "the spinner never ran");
        }
        assert_eq!(sleeping.intervals_recorded(), 0);
        assert_eq!(sleeping.total_on_cpu_ns(), 0);
        assert_eq!(sleeping.total_run_delay_ns(), 0);
        assert_eq!(sleeping.threads_tracked(), 1);

        // Once killed and reaped, both are gone: skipped, not an error.
        drop(children);
        spinning.sample(&[spinner, sleeper]);
        assert_eq!(spinning.threads_tracked(), 0);
    }
}
