//! `tickpack host status`: a running host's status, as JSON or as the
//! terminal table (everything an instance controls escaped).

use tickpack_host::status::{query_status, HostStatus};
use tickpack_sys::text::{escape, EXCERPT, SHORT};

use super::args::StatusArgs;
use super::failure::control_failure;
use super::run_dir::run_dir;
use crate::exit::Failure;

/// Prints a running host's status.
pub fn status(s: StatusArgs) -> Result<(), Failure> {
    let dir = run_dir(&s.name, &s.run_dir)?;
    let st = query_status(&dir).map_err(control_failure)?;
    if s.json {
        println!("{}", serde_json::to_string_pretty(&st)?);
        return Ok(());
    }
    print_status(&st);
    Ok(())
}

/// One line of a text built in memory (writing to a String cannot fail).
macro_rules! put {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Prints the `host status` table.
pub fn print_status(st: &HostStatus) {
    print!("{}", status_text(st));
}

/// The `host status` table. Everything an instance controls (the map its
/// query answer names, its exit and log excerpts in events) is escaped and
/// cut ([`escape`]): a forged answer cannot add rows or drive the terminal.
pub fn status_text(st: &HostStatus) -> String {
    let mut out = String::new();
    put!(
        out,
        "host {} ({}{}), placement {}, supervisor pid {}, up {:.0} s",
        escape(&st.name, SHORT),
        st.backend,
        st.net
            .as_deref()
            .map(|n| format!(", {n}"))
            .unwrap_or_default(),
        st.placement,
        st.supervisor_pid,
        st.uptime_s
    );
    put!(
        out,
        "{:>4} {:<22} {:>8} {:<8} {:<12} {:>8} {:>6} {:>12} {:>8} {:>8} {:>11} {:>4}  map",
        "id",
        "address",
        "pid",
        "cpus",
        "state",
        "restarts",
        "cpu%",
        "tick p99 us",
        "players",
        "bots",
        "mem MiB",
        "oom",
    );
    for i in &st.instances {
        let cpus = i
            .cpus
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        put!(
            out,
            "{:>4} {:<22} {:>8} {:<8} {:<12} {:>8} {:>6} {:>12} {:>8} {:>8} {:>11} {:>4}  {}",
            i.id,
            escape(&i.address, SHORT),
            opt(i.pid.map(|p| p.to_string())),
            cpus,
            format!("{:?}", i.state).to_lowercase(),
            i.restarts,
            opt(i.cpu_percent.map(|c| format!("{c:.1}"))),
            opt(i.tick_p99_us.map(|t| t.to_string())),
            opt(i.players.map(|p| p.to_string())),
            bots_cell(i.bots, i.bots_asked),
            // Used/limit; "-" where not sampled or unlimited.
            format!(
                "{}/{}",
                opt(i.memory_bytes.map(|b| (b >> 20).to_string())),
                opt(i.memory_limit_bytes.map(|b| (b >> 20).to_string()))
            ),
            i.oom_kills,
            i.map.as_deref().map_or("-".into(), |m| escape(m, SHORT)),
        );
        if let Some(q) = &i.query_latency_us {
            put!(
                out,
                "{:>4} query round trip: p50 {} us, p99 {} us, max {} us ({} replies)",
                "",
                q.p50,
                q.p99,
                q.max,
                q.count
            );
        }
        if let Some(why) = &i.last_exit {
            put!(out, "{:>4} last exit: {}", "", escape(why, EXCERPT));
        }
    }
    if let Some(g) = &st.guard {
        print_guard(&mut out, g);
    }
    if !st.events.is_empty() {
        put!(out, "events:");
        for e in st.events.iter().rev().take(10).rev() {
            put!(out, "  {}", escape(&e.to_string(), EXCERPT));
        }
    }
    out
}

/// The guard's lines of `host status`.
fn print_guard(out: &mut String, g: &tickpack_host::guard::GuardStatus) {
    let opt = |v: Option<f64>, unit: &str| v.map_or("-".into(), |v| format!("{v:.1}{unit}"));
    put!(out,
        "batch: control {}, quota {}, CPUs {:?}, batch CPU {}, PSI some avg10 {}{}, steal {}, throttled {} times ({} ms)",
        g.control,
        g.quota_cores
            .map_or("unlimited".into(), |q| format!("{q:.2} cores")),
        g.cpus,
        opt(g.batch_cpu_percent, "%"),
        opt(g.psi_some_avg10, "%"),
        g.psi_unavailable
            .as_deref()
            .map(|w| format!(" (unavailable: {w})"))
            .unwrap_or_default(),
        opt(g.steal.map(|s| s * 100.0), "%"),
        g.nr_throttled,
        g.throttled_ms,
    );
    if let Some(b) = g.baseline_slack {
        put!(
            out,
            "  servers' own slack (batch at zero): {:.0}%{}",
            b * 100.0,
            if b < tickpack_guard::Tuning::default().grow_above {
                " (below the growth band: the batch is judged on what it costs them)"
            } else {
                ""
            }
        );
    }
    if let Some(why) = &g.cgroup_pressure_unavailable {
        put!(out, "  batch cgroup pressure: unavailable ({why})");
    }
    for b in &g.batch {
        put!(
            out,
            "  {} pid {} {} restarts {}{}",
            escape(&b.command, EXCERPT),
            b.pid.map_or("-".into(), |p| p.to_string()),
            b.state,
            b.restarts,
            b.last_exit
                .as_deref()
                .map(|w| format!(", last exit: {}", escape(w, EXCERPT)))
                .unwrap_or_default()
        );
    }
    if !g.last.is_empty() {
        let counts: Vec<String> = g
            .decisions
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        put!(out, "guard decisions ({}), last:", counts.join(", "));
        for d in &g.last {
            put!(
                out,
                "  [{:8.2}s] {:?} -> {:.2} cores on {:?}: {}",
                d.at_ms as f64 / 1000.0,
                d.action,
                d.allowance.quota_cores,
                d.allowance.cpus,
                escape(&d.reason, EXCERPT)
            );
        }
    }
}

/// The bots column: those the query says joined "of" those asked ("3 of
/// 4"), or whichever is known ("4": asked, the query does not say), or
/// "-".
fn bots_cell(seen: Option<u8>, asked: Option<u16>) -> String {
    match (seen, asked) {
        (Some(s), Some(a)) => format!("{s} of {a}"),
        (None, Some(a)) => a.to_string(),
        (Some(s), None) => s.to_string(),
        (None, None) => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickpack_host::status::{InstanceState, InstanceStatus, STATUS_SCHEMA};

    /// A host's status with one running instance: its map, players, memory,
    /// OOM kills, last exit and events as given.
    fn one_instance(
        map: Option<String>,
        memory: (Option<u64>, Option<u64>, u64),
        last_exit: &str,
        events: Vec<tickpack_host::event::Event>,
    ) -> HostStatus {
        HostStatus {
            schema: STATUS_SCHEMA.into(),
            name: "h".into(),
            backend: "netns".into(),
            net: Some("bridge".into()),
            placement: "spread".into(),
            reserved_cpus: vec![0],
            supervisor_pid: 1,
            uptime_s: 1.0,
            instances: vec![InstanceStatus {
                id: 1,
                address: "198.18.0.3:27015".into(),
                pid: Some(42),
                cpus: vec![1],
                state: InstanceState::Running,
                restarts: 0,
                cpu_percent: None,
                tick_p99_us: None,
                frame_p99_us: None,
                players: Some(1),
                bots: Some(0),
                bots_asked: None,
                map,
                query_latency_us: None,
                memory_bytes: memory.0,
                memory_limit_bytes: memory.1,
                oom_kills: memory.2,
                last_exit: Some(last_exit.into()),
                console: None,
            }],
            events,
            guard: None,
        }
    }

    /// Regression: a query answer whose map name held a newline and
    /// terminal escapes printed a fake row and raw escapes in `host status`.
    #[test]
    fn status_escapes_a_forged_map_name() {
        let forged = "dm1\n   2 10.6.6.6:27015     666 0        running             0    0.0          1        0     0  x\x1b[2J\x1b]0;owned\x07";
        let st = one_instance(
            Some(forged.into()),
            (None, None, 0),
            &format!("exited with code 1; last output: {forged}"),
            vec![tickpack_host::event::Event {
                at_s: 1.0,
                kind: tickpack_host::event::EventKind::Placement {
                    warning: format!("instance 1 said {forged}"),
                },
            }],
        );
        let text = status_text(&st);
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text}");
        // Header, column names, one row, its last exit, "events:", one event.
        assert_eq!(text.lines().count(), 6, "no forged row: {text}");
        assert!(text.contains("dm1\\n"), "{text}");
        let row = text.lines().nth(2).unwrap();
        assert!(row.chars().count() < 200, "the map is cut: {row}");
    }

    /// Regression: the README promised memory and OOM kill columns that
    /// `host status` did not print.
    #[test]
    fn status_shows_memory_and_oom_kills() {
        let st = one_instance(
            None,
            (Some(12 << 20), Some(1 << 30), 3),
            "killed by the OOM killer",
            vec![],
        );
        let text = status_text(&st);
        let mut lines = text.lines().skip(1);
        let head = lines.next().unwrap();
        assert!(head.contains("mem MiB") && head.contains("oom"), "{text}");
        let row = lines.next().unwrap();
        assert!(row.contains("12/1024") && row.contains(" 3 "), "{row}");
        assert!(
            text.contains("last exit: killed by the OOM killer"),
            "{text}"
        );
    }

    /// Issue 41: `host status` showed `bots -` when 4 bots were asked (the
    /// game's query did not count them): the bots each instance was given
    /// are shown, beside those its query reports.
    #[test]
    fn status_showed_no_bots_when_4_were_asked() {
        let mut st = one_instance(None, (None, None, 0), "-", vec![]);
        st.instances[0].bots = None;
        st.instances[0].bots_asked = Some(4);
        let text = status_text(&st);
        let head: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        let row: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
        let at = head.iter().position(|h| *h == "bots").unwrap();
        // "tick p99 us" is three words in the heading, one in the row.
        assert_eq!(row[at - 2], "4", "{text}");
        assert_eq!(bots_cell(Some(3), Some(4)), "3 of 4");
        assert_eq!(bots_cell(None, None), "-");
    }
}
