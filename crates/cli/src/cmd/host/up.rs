//! `tickpack host up`: starts the instances and supervises them in the
//! foreground, printing events and serving metrics, until told to stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tickpack_host::supervisor::Supervisor;
use tickpack_sys::text::{escape, EXCERPT};

use super::args::UpArgs;
use super::config::fleet_config;
use super::failure::host_failure;
use super::metrics::metric_families;
use crate::exit::{fail, Code, Failure};

/// Runs `host up` until the host is down.
pub fn up(u: UpArgs) -> Result<(), Failure> {
    let cfg = fleet_config(&u)?;
    // Under sudo: root given up here, before anything starts.
    crate::cmd::sudo::give_up_root(&cfg.run_dir, None)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let metrics = u
        .metrics
        .map(tickpack_server::metrics::Endpoint::serve)
        .transpose()
        .map_err(|e| Failure {
            code: Code::Config,
            error: e.into(),
        })?;
    let exe = std::env::current_exe().context("finding the tickpack binary")?;
    let t0 = Instant::now();
    let mut sup = Supervisor::start_with_policy(cfg, exe, Some(tickpack_guard::policy()))
        .map_err(host_failure)?;
    let st = sup.status();
    eprintln!(
        "tickpack host {} up: {} instances ({}{}), placement {}, reserved CPUs {:?}, started in {} ms; run dir {}",
        st.name,
        st.instances.len(),
        st.backend,
        st.net.as_deref().map(|n| format!(", {n}")).unwrap_or_default(),
        st.placement,
        st.reserved_cpus,
        t0.elapsed().as_millis(),
        sup.config().run_dir.display()
    );
    for i in &st.instances {
        println!("instance {} at {} on CPUs {:?}", i.id, i.address, i.cpus);
    }
    let mut next_metrics = Instant::now();
    let mut events_seen = 0;
    loop {
        let down = sup.poll();
        let (events, seen) = sup.events_since(events_seen);
        events_seen = seen;
        for e in events {
            eprintln!("tickpack host: {}", escape(&e.to_string(), EXCERPT));
        }
        if down || stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(m) = &metrics {
            if Instant::now() >= next_metrics {
                next_metrics = Instant::now() + Duration::from_secs(1);
                m.publish(&metric_families(&sup.status()));
            }
        }
        // The host's driver: woken by an exit, a check's answer, a control
        // request or Ctrl-C, or its own next deadline; within a second.
        let metrics_due = metrics
            .as_ref()
            .map(|_| next_metrics.saturating_duration_since(Instant::now()));
        sup.wait(
            metrics_due
                .unwrap_or(Duration::from_secs(1))
                .min(Duration::from_secs(1)),
        );
    }
    eprintln!("tickpack host: stopping instances and removing what was created");
    let logs = sup.config().run_dir.join("logs");
    let problems = sup.shutdown();
    if !problems.is_empty() {
        return Err(fail(
            Code::Isolation,
            format!("could not remove everything: {}", problems.join("; ")),
        ));
    }
    if let Some(kept) = kept_logs(&logs) {
        eprintln!("tickpack host: {kept}");
    }
    Ok(())
}

/// What a host taken down leaves on purpose, in words: its instances'
/// logs, where they are and how to remove them; `None` when it left none.
pub(super) fn kept_logs(logs: &std::path::Path) -> Option<String> {
    let n = std::fs::read_dir(logs).ok()?.flatten().count();
    let dir = logs.parent()?;
    (n > 0).then(|| {
        format!(
            "kept {n} log file{} in {} for you to read; everything else it made is gone (rm -r {} removes them)",
            if n == 1 { "" } else { "s" },
            logs.display(),
            dir.display()
        )
    })
}
