//! Idle time per CPU, for the guard's start allowance (a share of the
//! server cores' measured idle): `/proc/stat`'s text parsed by
//! [`tickpack_sys::cpu_idle_total`].

/// Cumulative (idle, total) jiffies per CPU, indexed by CPU number.
pub fn proc_stat_idle(text: &str) -> Vec<(u64, u64)> {
    tickpack_sys::cpu_idle_total(text)
}
