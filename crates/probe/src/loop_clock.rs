//! What both probe loops ([`crate::run`] for the query layer's protocols,
//! [`crate::gamedig`] for gamedig's) share about time: how long an
//! interrupted run waits for the replies in flight, and the CPU time the
//! loop's thread spent.

/// After an interruption, replies to the queries in flight are awaited this
/// long at most (then those queries are not counted).
pub(crate) const INTERRUPT_DRAIN_US: u64 = 200_000;

/// User + system CPU time of the calling thread, from
/// `getrusage(RUSAGE_THREAD)`, ns (0 if the call fails).
pub(crate) fn thread_rusage_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the valid, writable `ru`.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}
