//! The machine recorded with a result is the machine, not the CPUs the
//! bench pinned itself to (its own test binary: pinning is per process).

/// Regression: a default run's report read "AMD EPYC, 1 logical CPUs" on a
/// 2-CPU machine: the bench pins itself to the load generator's CPUs before
/// any work, and the count came from the process's affinity.
#[test]
fn the_logical_cpus_were_only_those_the_bench_was_pinned_to() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .expect("a Linux machine lists its online CPUs");
    let online = tickpack_sys::parse_cpu_list(&online, None)
        .expect("a CPU list")
        .len();
    tickpack_bench::pin::pin_process(&[0]).expect("pin this test process to CPU 0");
    let system = tickpack_report::system::SystemInfo::collect();
    assert_eq!(
        system.logical_cpus, online,
        "pinned to CPU 0, the result must still say the machine has {online} CPUs"
    );
}
