//! The HTML report as a user sees it: a page that opens offline, says the
//! verdict in words, marks failures and interruptions, and never shows a
//! missing value as 0.

use std::path::PathBuf;

use tickpack_report::bench::{
    BenchResult, BenchSettings, CoreUse, CpuUse, ForeignLoad, Ladder, Power, PowerSourceKind,
    QosLimits, Step, Tco, TcoInputs, TcoSavings, TcoSide, WattsSource, BENCH_SCHEMA,
};
use tickpack_report::comparison::{Comparison, DensityRatio, Separation, Spread, VariantSummary};
use tickpack_report::qos::{Verdict, RULES};
use tickpack_report::system::SystemInfo;
use tickpack_report::{
    encode_histogram, html, new_histogram, record, CommandCounts, Measurements, Outages,
    Percentiles, PlayersHistograms, SnapshotCounts,
};
use tickpack_testkit::results::bench_settings;

/// A step whose latencies centre on `base_us`, with a tail 6x longer.
fn step(index: u32, servers: u32, base_us: u64, busy: f64, fail: bool) -> Step {
    let mut h = new_histogram();
    for i in 0..20_000u64 {
        let v = if i % 100 == 0 {
            base_us * 6 + i % 997
        } else {
            base_us + (i * 7919) % (base_us / 2)
        };
        record(&mut h, v);
    }
    let mut small = new_histogram();
    for v in [100, 200, 300, 900] {
        record(&mut small, v);
    }
    let p = Percentiles::from_histogram(&h);
    let hist = encode_histogram(&h);
    let small_p = Percentiles::from_histogram(&small);
    Step {
        tiles: servers / 3,
        verdict: if fail { Verdict::Fail } else { Verdict::Pass },
        failures: if fail {
            vec!["p99 transaction latency 61.2 ms > 50 ms".into()]
        } else {
            vec![]
        },
        duration_s: 30.0,
        measured: Measurements {
            transaction_latency_us: p,
            rtt_us: small_p,
            server_frame_us: small_p,
            tick_lateness_us: small_p,
            snapshot_jitter_us: small_p,
            snapshots: SnapshotCounts {
                expected: 100_000,
                received: 99_990,
                lost: 10,
            },
            commands: CommandCounts {
                sent: 20_000,
                reflected: 20_000,
                lost: 0,
            },
            outages: Default::default(),
            reconnects: 0,
            server_ping_us: None,
        },
        cpu: CpuUse {
            servers_busy_percent: busy,
            machine_busy_percent: busy * 0.8,
            per_cpu_percent: vec![busy; 4],
            steal_percent: vec![0.0; 4],
            load_generator_cpu_s: 3.5,
            servers_own_percent: Some(busy * 2.0),
            foreign_percent: None,
        },
        power: Some(Power {
            watts: 60.0 + busy,
            source: PowerSourceKind::Modeled,
        }),
        histograms: PlayersHistograms {
            transaction_latency_us: hist,
            rtt_us: encode_histogram(&small),
            server_frame_us: encode_histogram(&small),
            tick_lateness_us: encode_histogram(&small),
            snapshot_jitter_us: encode_histogram(&small),
            server_ping_us: String::new(),
            query_latency_us: String::new(),
            run_delay_us: String::new(),
        },
        ..Step::passed(index, servers, servers * 10)
    }
}

/// Two ladders of three steps; the kernel's ladder fails at its third step.
fn sample() -> BenchResult {
    let tickpack = Ladder {
        label: "netns/bridge, placement spread".into(),
        backend: "netns".into(),
        net: Some("bridge".into()),
        placement: "spread".into(),
        steps: vec![
            step(0, 3, 4_000, 20.0, false),
            step(1, 6, 5_000, 45.0, false),
            step(2, 9, 7_000, 70.0, false),
        ],
        max_servers: Some(9),
        recommended_servers: Some(9),
        stopped: "step 4 (12 servers) failed QoS".into(),
        limit_found: Some(true),
        repetition: None,
        game: None,
        load: None,
    };
    let kernel = Ladder {
        label: "netns/bridge, kernel scheduling".into(),
        backend: "netns".into(),
        net: Some("bridge".into()),
        placement: "kernel".into(),
        steps: vec![
            step(0, 3, 4_500, 25.0, false),
            step(1, 6, 9_000, 60.0, false),
            step(2, 9, 40_000, 88.0, true),
        ],
        max_servers: Some(6),
        recommended_servers: Some(6),
        stopped: "QoS failed at 9 servers".into(),
        limit_found: None,
        repetition: None,
        game: None,
        load: None,
    };
    BenchResult {
        schema: BENCH_SCHEMA.into(),
        tickpack_version: "0.1.0-test".into(),
        system: SystemInfo {
            cpu_model: "AMD EPYC 7B13".into(),
            logical_cpus: 8,
            kernel: "6.1.0-test".into(),
            unix_time: 1_735_689_600,
        },
        settings: BenchSettings {
            cost: "arena".into(),
            step_duration_s: 30.0,
            warmup_s: 5.0,
            max_steps: 3,
            confirm_failures: true,
            qos: QosLimits {
                p99_relative_to_baseline: 3.0,
                p99_tick_lateness_us: 2_000,
                ..bench_settings().qos
            },
            compare: "placement".into(),
            ..bench_settings()
        },
        cores: CoreUse {
            total: 8,
            load_generator: vec![0, 1],
            servers: vec![2, 3, 4, 5, 6, 7],
        },
        ladders: vec![tickpack, kernel],
        servers_per_core: Some(1.5),
        servers_per_core_spread: None,
        limit_estimate: None,
        limit_found: None,
        recommended_servers: Some(9),
        max_servers: Some(9),
        comparison_ratio: Some(1.5),
        comparison: None,
        consolidation_ratio: Some(9.0),
        before_servers: Some(1),
        tco: Some(Tco {
            inputs: TcoInputs {
                before_watts: 65.0,
                after_watts: 130.0,
                ratio: 9.0,
                machines: 900,
                price_per_kwh: 0.25,
                currency_rate: 1.0,
                hours_per_year: 8760.0,
            },
            before: TcoSide {
                machines: 900,
                watts_each: 65.0,
                annual_kwh: 512_460.0,
                annual_cost: 128_115.0,
            },
            after: TcoSide {
                machines: 100,
                watts_each: 130.0,
                annual_kwh: 113_880.0,
                annual_cost: 28_470.0,
            },
            savings: TcoSavings {
                machines: 800,
                annual_kwh: 398_580.0,
                annual: 99_645.0,
                percent: 77.8,
            },
            watts_source: WattsSource::Source(PowerSourceKind::Modeled),
            currency: Some("EUR".into()),
        }),
        complete: true,
        started_unix: 1_735_689_600,
        finished_unix: Some(1_735_690_500),
        machine_speed: None,
    }
}

fn page(r: BenchResult) -> String {
    html::render(&[("result.json".into(), r)])
}

#[test]
fn page_opens_offline() {
    let p = html::render(&[("a".into(), sample()), ("b".into(), sample())]);
    for banned in [
        "http://", "https://", "<script", "<link", "src=", "url(", "@import",
    ] {
        assert!(!p.contains(banned), "page contains {banned:?}");
    }
    assert!(p.starts_with("<!DOCTYPE html>"));
    assert!(p.contains("<style>"));
    assert!(p.trim_end().ends_with("</html>"));
}

#[test]
fn each_chart_is_one_inline_svg() {
    let p = page(sample());
    // Latency, one per judged limit (tick lateness, server frame, loss),
    // CPU, power, latency distribution.
    assert_eq!(p.matches("<svg").count(), 7);
    assert_eq!(p.matches("<figure>").count(), 7);
    // Two variants: their p99 side by side, first; one ladder: p50, p99
    // and p99.9 of that ladder.
    assert!(p.contains("p99 transaction latency vs servers"));
    assert!(p.find("p99 transaction latency vs servers") < p.find("CPU busy (server cores)"));
    let mut one = sample();
    one.ladders.truncate(1);
    assert!(page(one).contains("Transaction latency vs servers"));
    assert!(p.contains("CPU busy (server cores) vs servers"));
    assert!(p.contains("Latency distribution per step: netns/bridge, placement spread"));
    // The QoS limit and the headroom target are drawn as dashed lines.
    assert!(p.contains("QoS limit: p99 ≤ 50 ms"));
    assert!(p.contains("headroom target 75 %"));
    // One distribution curve per step of the first ladder.
    for s in ["3 servers", "6 servers", "9 servers"] {
        assert!(p.contains(&format!(">{s}</text>")), "no legend entry {s}");
    }
}

#[test]
fn verdict_is_said_in_words_at_the_top() {
    let p = page(sample());
    let verdict = &p[p.find("class=\"verdict\"").unwrap()..p.find("<h3>Run</h3>").unwrap()];
    assert!(verdict.contains("Recommended density: <strong>9 servers</strong>"));
    assert!(verdict.contains("maximum density: <strong>9 servers</strong>"));
    assert!(verdict.contains("(3 tiles of 3)"));
    assert!(verdict.contains("75 %"));
    assert!(verdict.contains("Consolidation ratio: <strong>9.00:1</strong>"));
    assert!(verdict.contains(
        "tickpack's placement (netns/bridge, placement spread) fits <strong>1.50x</strong> \
         the servers the kernel's scheduling (netns/bridge, kernel scheduling) fits at the same QoS"
    ));
    // The header: version, date, system, cores, settings, QoS limits.
    for s in [
        "0.1.0-test",
        "2025-01-01 00:00:00 UTC",
        "(took 15 min 00 s)",
        "AMD EPYC 7B13, 8 logical CPUs, kernel 6.1.0-test",
        "load generator: 0-1 (2); servers: 2-7 (6)",
        "tiles of 3 servers; 10 players and 2 bots per server; 64 Hz tick; cost profile arena",
        "30 s measured after 5 s warm-up",
        "p99 transaction latency &le; 50 ms",
        "p99 tick lateness &le; 2 ms",
        "snapshots lost &le; 0.1 %",
        "p99 server frame &le; 50 % of the tick interval (7.81 ms at 64 Hz)",
        "complete",
    ] {
        assert!(p.contains(s), "header lacks {s:?}");
    }
    assert!(!p.contains("Interrupted"));
}

#[test]
fn failing_steps_are_marked_in_charts_and_tables() {
    let p = page(sample());
    // The failing step's row, and the row under it with what it missed.
    assert_eq!(p.matches("<tr class=\"fail\">").count(), 2);
    let rows = &p[p.find("<tr class=\"fail\">").unwrap()..];
    let (row, why) = rows.split_once("</tr>").unwrap();
    let why = &why[..why.find("</tr>").unwrap()];
    assert!(why.contains("class=\"failures\""), "{why}");
    assert!(why.contains("p99 transaction latency 61.2 ms &gt; 50 ms"));
    assert!(row.contains("FAIL"));
    assert!(row.contains(">9<"), "failing row is not the 9-server step");
    // The failed step's points are red in the latency, CPU and power charts.
    assert!(p.matches("class=\"failed-point\"").count() >= 3);
    assert!(p.contains(">failed step</text>"));
    // Recommended and max steps are tagged in the table.
    assert!(p.contains("badge tag\">recommended"));
}

#[test]
fn modeled_power_says_so() {
    let p = page(sample());
    assert!(p.contains("Power vs servers (modeled, not measured)"));
    assert!(p.contains("watts (modeled)"));
    assert!(p.contains("Watts (modeled)"));
    assert!(p.contains("Watts after: <strong>modeled</strong>"));
    assert!(p.contains("99,645"), "annual savings missing");
    assert!(p.contains("77.8 %"));
}

#[test]
fn interrupted_run_is_shown_as_such() {
    let mut r = sample();
    r.complete = false;
    r.finished_unix = None;
    r.ladders[1].steps.truncate(1);
    let p = page(r);
    assert!(p.contains("Interrupted run: this result is incomplete."));
    assert!(p.contains("shows the 4 steps that did"));
    assert!(p.contains("did not finish: interrupted, incomplete"));
}

#[test]
fn strings_from_the_file_are_escaped() {
    let mut r = sample();
    r.ladders[0].label = "<script>alert('x')</script> & \"co\"".into();
    r.system.cpu_model = "<b>CPU</b>".into();
    r.ladders[1].steps[2].failures = vec!["<img src=x>".into()];
    let p = html::render(&[("<i>label</i>".into(), r)]);
    assert!(!p.contains("<script"));
    assert!(!p.contains("<b>CPU"));
    assert!(!p.contains("<i>label"));
    assert!(!p.contains("<img"));
    assert!(p.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;co&quot;"));
    assert!(p.contains("&lt;b&gt;CPU&lt;/b&gt;"));
    assert!(p.contains("&lt;i&gt;label&lt;/i&gt;"));
}

#[test]
fn missing_values_are_not_reached_or_na_never_zero() {
    let mut r = sample();
    r.recommended_servers = None;
    r.max_servers = None;
    r.comparison_ratio = None;
    r.consolidation_ratio = None;
    r.tco = None;
    for l in &mut r.ladders {
        l.recommended_servers = None;
        l.max_servers = None;
        l.net = None;
        for s in &mut l.steps {
            s.power = None;
        }
    }
    let p = page(r);
    assert!(p.contains("Recommended density: <strong><span class=\"na\">not reached</span>"));
    assert!(p.contains("maximum density: <strong><span class=\"na\">not reached</span>"));
    assert!(p.contains("Consolidation ratio: <span class=\"na\">n/a</span>"));
    assert!(p.contains("Comparison ratio (placement): <span class=\"na\">n/a</span>"));
    assert!(p.contains("No cost figures: no step was recommended"));
    assert!(p.contains("no power source"));
    assert!(!p.contains("0 servers<"), "a missing density shows as 0");
    assert!(!p.contains(">0x<"));
    // No power: six charts, no power chart.
    assert_eq!(p.matches("<svg").count(), 6);
    // No result at all: a page that says so.
    let empty = html::render(&[]);
    assert!(empty.contains("No results to show") && !empty.contains("<svg"));
}

#[test]
fn two_results_get_a_comparison_table() {
    let mut b = sample();
    b.recommended_servers = Some(6);
    b.system.cpu_model = "Intel Xeon E-2388G".into();
    let p = html::render(&[("before.json".into(), sample()), ("after.json".into(), b)]);
    let table = &p[p.find("<h2>Comparison</h2>").expect("no comparison")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("before.json") && table.contains("after.json"));
    assert!(table.contains("AMD EPYC 7B13") && table.contains("Intel Xeon E-2388G"));
    assert!(
        table.contains("<strong>9 servers</strong>")
            && table.contains("<strong>6 servers</strong>")
    );
    // Seven charts per result and one shared by both.
    assert_eq!(p.matches("<svg").count(), 15);
    assert!(page(sample()).find("<h2>Comparison</h2>").is_none());
}

#[test]
fn unreadable_histogram_is_named_not_fatal() {
    let mut r = sample();
    r.ladders[0].steps[1].histograms.transaction_latency_us = "not base64!".into();
    let p = page(r);
    assert!(p.contains("step 1: histogram unreadable"));
    assert_eq!(p.matches("<svg").count(), 7);
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tp-html-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn render_file_names_the_file_and_what_is_wrong() {
    let dir = temp_dir("files");
    let good = dir.join("result.json");
    std::fs::write(&good, serde_json::to_string(&sample()).unwrap()).unwrap();
    let p = html::render_file(std::slice::from_ref(&good)).unwrap();
    assert!(p.contains(&good.display().to_string()));
    assert!(p.contains("1.50x"));

    let probe = dir.join("probe.json");
    std::fs::write(&probe, r#"{"schema": "tickpack.probe/1", "targets": []}"#).unwrap();
    let e = html::render_file(&[good.clone(), probe.clone()])
        .unwrap_err()
        .to_string();
    assert!(e.contains(&probe.display().to_string()), "{e}");
    assert!(e.contains("\"tickpack.probe/1\""), "{e}");
    assert!(e.contains(BENCH_SCHEMA), "{e}");
    assert!(e.contains("tickpack.players/1"), "{e}");

    let players = dir.join("players.json");
    std::fs::write(
        &players,
        r#"{"schema": "tickpack.players/1", "players": 4}"#,
    )
    .unwrap();
    let e = html::render_file(&[good.clone(), players.clone()])
        .unwrap_err()
        .to_string();
    assert!(e.contains(&players.display().to_string()), "{e}");
    assert!(
        e.contains("says it is \"tickpack.players/1\" but does not match"),
        "{e}"
    );

    let not_json = dir.join("notes.txt");
    std::fs::write(&not_json, "hello").unwrap();
    let e = html::render_file(std::slice::from_ref(&not_json))
        .unwrap_err()
        .to_string();
    assert!(e.contains("notes.txt") && e.contains("is not JSON"), "{e}");

    let missing = dir.join("missing.json");
    let e = html::render_file(&[missing]).unwrap_err().to_string();
    assert!(
        e.contains("cannot read") && e.contains("missing.json"),
        "{e}"
    );

    let no_schema = dir.join("other.json");
    std::fs::write(&no_schema, "[1, 2]").unwrap();
    let e = html::render_file(&[no_schema]).unwrap_err().to_string();
    assert!(
        e.contains("other.json") && e.contains("no \"schema\" field"),
        "{e}"
    );

    let broken = dir.join("broken.json");
    std::fs::write(
        &broken,
        format!(r#"{{"schema": "{BENCH_SCHEMA}", "ladders": []}}"#),
    )
    .unwrap();
    let e = html::render_file(&[broken]).unwrap_err().to_string();
    assert!(
        e.contains("broken.json") && e.contains("does not match"),
        "{e}"
    );

    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes a sample page where `TICKPACK_HTML_SAMPLE` says, to look at it in a
/// browser: `TICKPACK_HTML_SAMPLE=/tmp/tickpack-report-sample.html cargo test`.
#[test]
fn sample_page() {
    let mut b = sample();
    b.complete = false;
    b.finished_unix = None;
    b.ladders[1].steps.truncate(2);
    b.comparison_ratio = None;
    b.ladders[0].steps[2].verdict = Verdict::Fail;
    b.ladders[0].steps[2].failures = vec!["p99 tick lateness 2.4 ms > 2 ms".into()];
    let p = html::render(&[
        ("bench-2025-01-01/result.json".into(), sample()),
        ("bench-interrupted/result.json".into(), b),
    ]);
    if let Some(path) = std::env::var_os("TICKPACK_HTML_SAMPLE") {
        std::fs::write(path, &p).unwrap();
    }
    assert!(p.len() > 10_000);
}

#[test]
fn consolidation_ratio_names_its_baseline_not_one_server_per_machine() {
    let mut r = sample();
    r.consolidation_ratio = Some(1.5);
    r.before_servers = Some(6);
    let p = page(r.clone());
    assert!(
        !p.contains("one server per machine"),
        "wrong baseline named"
    );
    assert!(
        p.contains(
            "Consolidation ratio: <strong>1.50:1</strong> (9 servers per machine at the \
             recommended density on this machine / 6 per machine before (--before-servers))"
        ),
        "the baseline --before-servers is said"
    );
    // Results written before the baseline was recorded say it is missing.
    r.before_servers = None;
    let p = page(r);
    assert!(!p.contains("one server per machine"));
    assert!(
        p.contains("Consolidation ratio: <strong>1.50x</strong> (its baseline was not recorded)")
    );
}

/// The first ladder of `sample()`, interrupted after `passed` passing steps,
/// as the bench writes it (the top-level maximum is left unset).
fn interrupted_after(passed: usize, stopped: &str) -> BenchResult {
    let mut r = sample();
    r.complete = false;
    r.finished_unix = None;
    r.max_servers = None;
    r.recommended_servers = None;
    r.consolidation_ratio = None;
    r.comparison_ratio = None;
    r.tco = None;
    r.ladders.truncate(1);
    let l = &mut r.ladders[0];
    l.steps.truncate(passed);
    l.max_servers = l.steps.last().map(|s| s.servers);
    l.recommended_servers = l.max_servers;
    l.stopped = stopped.into();
    l.limit_found = None;
    r
}

#[test]
fn an_interrupted_ladder_does_not_claim_a_maximum_density() {
    // "interrupted" is what results written before this fix say.
    for stopped in [
        "interrupted",
        "interrupted before its limit: at least 3 servers passed",
    ] {
        let r = interrupted_after(1, stopped);
        assert!(r.ladders[0].interrupted_before_limit());
        assert_eq!(
            r.ladders[0].max_density_words(),
            "at least 3 servers (interrupted before a step failed)"
        );
        let p = page(r);
        let verdict = &p[p.find("class=\"verdict\"").unwrap()..p.find("<h3>Run</h3>").unwrap()];
        assert!(
            verdict.contains("Maximum: at least 3 servers</strong>: no step failed, so the ladder did not find its limit (the run was interrupted); <strong>3 servers</strong> met every QoS limit"),
            "{verdict}"
        );
        assert!(
            verdict.contains("maximum density: <strong><span class=\"na\">at least 3 servers (interrupted before a step failed)"),
            "{verdict}"
        );
        assert!(!verdict.contains("before the first failure"), "{verdict}");
        assert!(!verdict.contains("no step met the QoS limits"), "{verdict}");
        assert!(!p.contains("<td class=\"num\">3 servers</td><td>interrupted"));
    }
    // A ladder that found its limit before it was interrupted keeps it.
    let mut r = sample();
    r.ladders[1].stopped = "interrupted after step 3 (9 servers) failed QoS".into();
    assert!(!r.ladders[1].interrupted_before_limit());
    assert_eq!(r.ladders[1].max_density_words(), "6 servers");
    r.complete = false;
    let p = page(r);
    assert!(p.contains("Maximum: 9 servers"));
}

/// A `result.json` written before verdicts and power sources were typed.
fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/result-v1.json")
}

#[test]
fn a_result_written_before_typed_verdicts_reads_and_writes_the_same_json() {
    let text = std::fs::read_to_string(fixture_path()).unwrap();
    let before: serde_json::Value = serde_json::from_str(&text).unwrap();
    let r = html::read_result(&fixture_path()).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap(), before);
    // The fixture holds every verdict and power source.
    let steps: Vec<&Step> = r.ladders.iter().flat_map(|l| &l.steps).collect();
    assert!(steps.iter().any(|s| s.verdict == Verdict::Fail));
    let sources: Vec<PowerSourceKind> = steps
        .iter()
        .filter_map(|s| Some(s.power.as_ref()?.source))
        .collect();
    for k in [
        PowerSourceKind::Rapl,
        PowerSourceKind::Ipmi,
        PowerSourceKind::Command,
        PowerSourceKind::Modeled,
    ] {
        assert!(sources.contains(&k), "{k} missing from the fixture");
    }
}

#[test]
fn the_limits_list_is_the_verdicts_rule_table_with_the_outage_rule() {
    let p = page(sample());
    let run = &p[p.find("<h3>Run</h3>").unwrap()..p.find("<h3>Ladders</h3>").unwrap()];
    // Every rule but the query and the two run-delay rules, which this
    // sample's limits leave unset.
    assert_eq!(run.matches("<li>").count(), RULES.len() - 3, "{run}");
    assert!(
        run.contains("<li>no outage (200 ms or more without snapshots for a player)</li>"),
        "{run}"
    );
    assert!(run.contains("<li>every player connects</li>"), "{run}");
}

#[test]
fn a_steps_outages_and_reconnects_are_shown_beside_its_loss() {
    let mut r = sample();
    let st = &mut r.ladders[0].steps[1];
    st.measured.outages = Outages {
        count: 2,
        total_us: 450_000,
        longest_us: 250_000,
    };
    st.measured.reconnects = 3;
    let p = page(r);
    let table = &p[p.find("<h3>Steps</h3>").unwrap()..];
    assert!(
        table.contains("<th class=\"num\" rowspan=\"2\">Out&shy;ages</th>"),
        "{table}"
    );
    assert!(
        table.contains("<th class=\"num\" rowspan=\"2\">Re&shy;con&shy;nects</th>"),
        "{table}"
    );
    assert!(
        table.contains("<td class=\"num\">2 (longest 250 ms)</td><td class=\"num\">3</td>"),
        "{table}"
    );
}

#[test]
fn watts_sources_keep_the_words_results_have_always_stored() {
    for (w, text) in [
        (WattsSource::Given, "given"),
        (WattsSource::Source(PowerSourceKind::Modeled), "modeled"),
        (
            WattsSource::Source(PowerSourceKind::Rapl),
            "measured (rapl)",
        ),
        (
            WattsSource::Source(PowerSourceKind::Ipmi),
            "measured (ipmi)",
        ),
        (
            WattsSource::Source(PowerSourceKind::Command),
            "measured (command)",
        ),
    ] {
        let json = serde_json::to_string(&w).unwrap();
        assert_eq!(json, format!("\"{text}\""));
        assert_eq!(serde_json::from_str::<WattsSource>(&json).unwrap(), w);
    }
    assert!(serde_json::from_str::<WattsSource>("\"measured (modeled)\"").is_err());
}

#[test]
fn steps_show_their_query_latency_only_when_probed() {
    let plain = page(sample());
    assert!(
        !plain.contains("Query latency p99"),
        "no --probe, no column"
    );
    let mut r = sample();
    r.settings.qos.p99_query_us = Some(40_000);
    let st = &mut r.ladders[0].steps[1];
    let mut h = new_histogram();
    for v in [900, 1_200, 12_345] {
        record(&mut h, v);
    }
    st.query_latency_us = Some(Percentiles::from_histogram(&h));
    st.queries = Some(tickpack_report::probe::QueryCounts {
        sent: 4,
        answered: 3,
        lost: 1,
        ..Default::default()
    });
    let p = page(r);
    assert!(p.contains("Query latency p99, ms (not transaction latency)"));
    assert!(p.contains(">12.4 (3 of 4 answered)<"), "the probed step");
    // The steps of that ladder without figures say n/a, never 0.
    let table = &p[p.find("Query latency p99").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("n/a").count(), 2, "{table}");
    // With its limit set, the query rule is listed among the limits.
    assert!(p.contains("p99 query latency (not transaction latency) &le; 40 ms"));
}

/// The sample's two ladders run `reps` times (maxima `spread` and
/// `kernel` per repetition), with the comparison the bench records.
fn repeated(spread: &[u32], kernel: &[u32], separation: Separation) -> BenchResult {
    let mut r = sample();
    let (a, b) = (r.ladders[0].clone(), r.ladders[1].clone());
    r.ladders.clear();
    for (i, (x, y)) in spread.iter().zip(kernel).enumerate() {
        let rep = Some(i as u32 + 1);
        r.ladders.push(Ladder {
            repetition: rep,
            max_servers: Some(*x),
            ..a.clone()
        });
        r.ladders.push(Ladder {
            repetition: rep,
            max_servers: Some(*y),
            ..b.clone()
        });
    }
    let of = |v: &[u32]| Spread::of(v.iter().map(|x| Some(f64::from(*x))).collect());
    r.comparison = Some(Comparison {
        kind: "placement".into(),
        repetitions: spread.len() as u32,
        repetitions_finished: spread.len() as u32,
        variants: vec![
            VariantSummary {
                label: a.label.clone(),
                name: "tickpack's placement (spread)".into(),
                max_servers: of(spread),
                recommended_servers: of(spread),
            },
            VariantSummary {
                label: b.label.clone(),
                name: "the kernel's scheduling (none)".into(),
                max_servers: of(kernel),
                recommended_servers: of(kernel),
            },
        ],
        ratios: vec![DensityRatio {
            numerator: a.label.clone(),
            denominator: b.label.clone(),
            numerator_name: "tickpack's placement (spread)".into(),
            denominator_name: "the kernel's scheduling (none)".into(),
            ratio: Spread::of(
                spread
                    .iter()
                    .zip(kernel)
                    .map(|(x, y)| Some(f64::from(*x) / f64::from(*y)))
                    .collect(),
            ),
            separation,
        }],
    });
    r
}

#[test]
fn a_repeated_comparison_heads_the_page_with_its_ratio_and_range() {
    let p = page(repeated(
        &[9, 6, 9],
        &[6, 9, 9],
        Separation::CannotTellApart,
    ));
    let verdict = &p[p.find("class=\"verdict\"").unwrap()..p.find("<h3>Run</h3>").unwrap()];
    assert!(verdict.contains(
        "<strong>tickpack&#39;s placement (spread) reaches 1.00x the density of the kernel&#39;s \
         scheduling (none), range 0.67-1.50 over 3 repetitions</strong>"
    ));
    // Overlapping ranges: no winner named.
    assert!(verdict.contains("cannot be told apart on this machine (maximum density 6-9 vs 6-9 servers: the ranges overlap)"));
    assert!(!verdict.contains("fits more") && !verdict.contains("fits fewer"));
    assert!(
        !verdict.contains("Comparison ratio"),
        "the old single ratio is not repeated"
    );
    assert!(verdict.contains("the lower median over 3 of 3 repetitions"));
    // The variants' medians and ranges, and the maximum of each repetition.
    let table = &p[p.find("<h3>Variants over 3 repetitions</h3>").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<td class=\"num\"><strong>9</strong></td><td class=\"num\">6-9</td>"));
    assert!(table.contains("<td>9, 6, 9</td>") && table.contains("<td>6, 9, 9</td>"));
    // Steps tables and the ladders table name the repetition.
    assert!(p.contains("netns/bridge, kernel scheduling, repetition 3</h4>"));
    assert!(p.contains("<th class=\"num\">Repetition</th>"));
}

#[test]
fn separated_ranges_name_the_denser_variant() {
    let p = page(repeated(&[9, 9], &[3, 6], Separation::Higher));
    assert!(p.contains(
        "tickpack&#39;s placement (spread) fits more servers than the kernel&#39;s scheduling \
         (none) on this machine (maximum density 9 vs 3-6 servers: the ranges do not overlap)"
    ));
}

#[test]
fn repetitions_are_drawn_as_one_line_per_variant_with_a_band() {
    let p = page(repeated(
        &[9, 6, 9],
        &[6, 9, 9],
        Separation::CannotTellApart,
    ));
    // p99, three limits, CPU, power, distribution: still seven charts,
    // not seven per ladder.
    assert_eq!(p.matches("<svg").count(), 7);
    let latency = &p[p.find("<svg").unwrap()..];
    let latency = &latency[..latency.find("</svg>").unwrap()];
    assert!(latency.contains("p99 transaction latency vs servers"));
    // One band and one line per variant in the latency chart.
    assert_eq!(latency.matches("class=\"band\"").count(), 2);
    assert!(latency.contains("(median; range"));
    assert!(latency.contains("FAIL in 3 of 3"));
    assert!(p.contains("the shaded band is their range"));
}

#[test]
fn a_step_shows_its_steal_and_the_attempts_set_aside_for_it() {
    let mut r = sample();
    let st = &mut r.ladders[0].steps[0];
    st.cpu.steal_percent = vec![18.24, 0.0, 0.0, 0.0];
    st.disturbed_attempts =
        vec!["steal 31.0% of CPU 0 (the hypervisor ran other guests): fail".into()];
    let p = page(r);
    assert!(
        p.contains("steal 18.2% of CPU 0 (the hypervisor ran other guests)"),
        "the standing attempt's steal"
    );
    assert!(
        p.contains("run again, the machine disturbed: steal 31.0% of CPU 0"),
        "the attempt set aside"
    );
}

#[test]
fn a_step_shows_its_foreign_load_and_that_it_stood_disturbed() {
    let mut r = sample();
    // Older steps without the figure read n/a beside one that has it.
    let st = &mut r.ladders[0].steps[1];
    st.cpu.foreign_percent = Some(ForeignLoad::of_cores(&[0.0, 37.25], &[1]));
    st.disturbed_attempts =
        vec!["foreign 41.0% of CPU 1 (processes other than the servers and tickpack): fail".into()];
    st.disturbed = Some(
        "foreign 37.2% of CPU 1 (processes other than the servers and tickpack), more than 5%"
            .into(),
    );
    let p = page(r);
    assert!(p.contains("Foreign load, % of a server core"), "the column");
    assert!(
        p.contains(">37.2<") || p.contains(">37.3<"),
        "the step's worst core"
    );
    assert!(
        p.contains("run again, the machine disturbed: foreign 41.0% of CPU 1"),
        "the attempt set aside"
    );
    assert!(
        p.contains("disturbed, the reruns ran out: foreign 37.2% of CPU 1"),
        "the attempt that stands"
    );
    // Without the figure anywhere there is no column.
    assert!(!page(sample()).contains("Foreign load"));
}

/// A game tickpack cannot play: the page lists only the limits that judged
/// it, names the player rules as not applicable, and shows each step's
/// run delay.
#[test]
fn a_game_without_players_shows_its_run_delay_and_the_rules_that_did_not_apply() {
    let mut r = sample();
    r.settings.players_per_server = 0;
    r.settings.qos = tickpack_report::qos::default_limits_without_players(
        tickpack_report::bench::TickRate::new(60).unwrap(),
    );
    r.settings.tick_hz = tickpack_report::bench::TickRate::new(60).unwrap();
    for l in &mut r.ladders {
        for s in &mut l.steps {
            s.players = 0;
            s.run_delay_us = Some(Percentiles {
                p99: 2_345,
                count: 40,
                ..Default::default()
            });
        }
    }
    let p = page(r);
    assert!(p.contains("Run delay p99, ms"), "a run delay column");
    assert!(p.contains("2.35"), "each step's run delay p99");
    assert!(
        p.contains("p99 run delay &le; 4.17 ms"),
        "the run delay limit"
    );
    let na = &p[p.find("<dt>not applicable</dt>").expect("an n/a list")..];
    let na = &na[..na.find("</dd>").unwrap()];
    for rule in [
        "p99 transaction latency",
        "snapshots lost",
        "p99 tick lateness",
    ] {
        assert!(na.contains(rule), "{rule} is n/a: {na}");
    }
    let judged = &p[p.find("<dt>QoS limits</dt>").unwrap()..];
    let judged = &judged[..judged.find("</dd>").unwrap()];
    assert!(
        !judged.contains("p99 transaction latency &le;") && !judged.contains("snapshots lost"),
        "only the limits that judged: {judged}"
    );
}

/// A bug: the report's Game row said "the reference server (tickpack's
/// own)" for every game but OpenArena, so a Nexuiz run read as the
/// reference server's.
#[test]
fn report_names_a_defined_game_not_the_reference_server() {
    let mut r = sample();
    r.settings.game = "nexuiz".into();
    r.settings.game_settings.bots = Some(8);
    r.settings.game_settings.tick_hz = tickpack_report::bench::TickRate::new(60);
    r.settings
        .game_settings
        .variables
        .insert("map".into(), "<ruiner>".into());
    let html = page(r);
    let row = html
        .lines()
        .find(|l| l.contains("<dt>Game</dt>"))
        .expect("a Game row");
    assert!(row.contains("nexuiz (from its definition)"), "{row}");
    assert!(
        row.contains("bots 8") && row.contains("map &lt;ruiner&gt;"),
        "{row}"
    );
    assert!(!row.contains("reference server"), "{row}");
}

/// The servers' own CPU (schedstat) stands beside the cores' busy share,
/// which counts whatever ran there.
#[test]
fn the_servers_own_cpu_is_shown_beside_the_cores_busy_share() {
    let html = page(sample());
    assert!(
        html.contains("Servers' CPU, % of a core (cores busy)"),
        "header"
    );
    assert!(html.contains(" (busy "), "a step's busy share");
}

/// The `<svg>` whose title is `title`.
fn svg_titled<'a>(page: &'a str, title: &str) -> Option<&'a str> {
    let at = page.find(&format!("<title>{title}</title>"))?;
    let start = page[..at].rfind("<svg")?;
    let end = at + page[at..].find("</svg>")?;
    Some(&page[start..end])
}

/// The value of attribute `name` in the first element at `from` in `svg`.
fn attr(svg: &str, from: usize, name: &str) -> f64 {
    let rest = &svg[from..];
    let v = &rest[rest.find(&format!(" {name}=\"")).unwrap() + name.len() + 3..];
    v[..v.find('"').unwrap()].parse().unwrap()
}

/// A bug: a step that failed on tick lateness had no chart of it, so on
/// the latency and CPU charts it looked better than the passing steps. Now
/// each judged limit has a chart with its line, and the failing step sits
/// above it there.
#[test]
fn a_step_that_failed_on_tick_lateness_is_drawn_above_its_limit() {
    let mut r = sample();
    let st = &mut r.ladders[1].steps[2];
    st.failures = vec!["p99 tick lateness 2.40 ms > 2.00 ms".into()];
    // Good transactions, low CPU: the other charts flatter this step.
    st.measured.transaction_latency_us.p99 = 4_000;
    st.cpu.servers_busy_percent = 10.0;
    st.measured.tick_lateness_us = Percentiles {
        p99: 2_400,
        count: 500,
        ..Default::default()
    };
    let p = page(r);
    let chart = svg_titled(&p, "p99 tick lateness vs servers").expect("a tick lateness chart");
    assert!(chart.contains("QoS limit: ≤ 2 ms"), "{chart}");
    let line = chart.find("class=\"limit\"").expect("the limit line");
    let limit_y = attr(chart, line, "y1");
    let dot = chart
        .find("class=\"failed-point\"")
        .expect("the failed step");
    assert!(chart[dot..].contains("p99 tick lateness 2.4 ms"), "{chart}");
    // SVG y grows downwards: above the line is a smaller y.
    assert!(attr(chart, dot, "cy") < limit_y, "{chart}");
    // The frame and loss limits were judged too, each with a chart.
    for title in ["p99 server frame vs servers", "Loss vs servers"] {
        let c = svg_titled(&p, title).unwrap_or_else(|| panic!("no {title}"));
        assert!(c.contains("class=\"limit\""), "{title} has its limit line");
    }
    // Query latency and run delay were not judged: no chart of them.
    assert!(svg_titled(&p, "p99 query latency vs servers").is_none());
    assert!(svg_titled(&p, "p99 run delay vs servers").is_none());
}

/// Query latency and run delay get a chart with their line where judged.
#[test]
fn query_and_run_delay_are_charted_where_they_were_judged() {
    let mut r = sample();
    r.settings.qos.p99_query_us = Some(30_000);
    r.settings.qos.p99_run_delay_us = Some(4_000);
    for l in &mut r.ladders {
        for s in &mut l.steps {
            let p = Percentiles {
                p99: 1_500 + 100 * u64::from(s.index),
                count: 40,
                ..Default::default()
            };
            s.query_latency_us = Some(p);
            s.run_delay_us = Some(p);
        }
    }
    let p = page(r);
    let q = svg_titled(&p, "p99 query latency vs servers").expect("a query chart");
    assert!(q.contains("QoS limit: ≤ 30 ms"), "{q}");
    let d = svg_titled(&p, "p99 run delay vs servers").expect("a run delay chart");
    assert!(d.contains("QoS limit: ≤ 4 ms"), "{d}");
}

/// A bug: OpenArena's list of QoS limits named tick lateness and frame
/// time, which its servers never report, so no step was ever judged on
/// them. Only the limits that judged a step are listed; the others are
/// named apart as not judged, and get no chart.
#[test]
fn openarena_lists_only_the_limits_that_judged_it() {
    let mut r = sample();
    r.settings.game = "openarena".into();
    for l in &mut r.ladders {
        for s in &mut l.steps {
            s.measured.tick_lateness_us = Percentiles::default();
            s.measured.server_frame_us = Percentiles::default();
        }
    }
    let p = page(r);
    let limits = &p[p.find("<dt>QoS limits</dt>").unwrap()..];
    let limits = &limits[..limits.find("</dd>").unwrap()];
    assert!(!limits.contains("tick lateness"), "{limits}");
    assert!(!limits.contains("server frame"), "{limits}");
    assert!(
        limits.contains("p99 transaction latency &le; 50 ms"),
        "{limits}"
    );
    assert!(limits.contains("snapshots lost &le; 0.1 %"), "{limits}");
    let unjudged = &p[p.find("<dt>not judged</dt>").expect("a not-judged list")..];
    let unjudged = &unjudged[..unjudged.find("</dd>").unwrap()];
    assert!(
        unjudged.contains("<li>p99 tick lateness</li>")
            && unjudged.contains("<li>p99 server frame</li>"),
        "{unjudged}"
    );
    assert_eq!(unjudged.matches("<li>").count(), 2, "{unjudged}");
    assert!(svg_titled(&p, "p99 tick lateness vs servers").is_none());
    assert!(svg_titled(&p, "p99 server frame vs servers").is_none());
    // The reference server reports both: nothing is set apart.
    assert!(!page(sample()).contains("<dt>not judged</dt>"));
}

/// A bug: comparing the results of two games showed no Game row, so the
/// columns read as two runs of one game. Now the table names each game
/// and one chart draws every result on one axis.
#[test]
fn comparing_two_games_shows_a_game_row_and_one_shared_chart() {
    let mut oa = sample();
    oa.settings.game = "openarena".into();
    oa.settings.game_settings.description = Some("OpenArena (the real ioquake3 server)".into());
    oa.cores.servers = vec![2, 3, 4];
    let mut reference = sample();
    reference.settings.game_settings.description =
        Some("the reference server (tickpack's own)".into());
    let p = html::render(&[("ref.json".into(), reference), ("oa.json".into(), oa)]);
    let comparison = &p[p.find("<h2>Comparison</h2>").unwrap()..p.find("<section").unwrap()];
    let row = comparison
        .lines()
        .find(|l| l.starts_with("<tr><th>Game</th>"))
        .expect("a Game row");
    assert!(row.contains("the reference server"), "{row}");
    assert!(
        row.contains("OpenArena (the real ioquake3 server)"),
        "{row}"
    );
    assert_eq!(comparison.matches("<svg").count(), 1, "one shared chart");
    let chart = svg_titled(
        comparison,
        "All results: CPU busy vs servers per server core",
    )
    .expect("the shared chart");
    for legend in [
        "1: ref.json, netns/bridge, placement spread",
        "2: oa.json, netns/bridge, kernel scheduling",
    ] {
        assert!(chart.contains(&format!(">{legend}</text>")), "{legend}");
    }
    // Per server core: 9 servers on 3 server cores are drawn at 3, with
    // the step's servers and cores in its tooltip.
    assert!(chart.contains("9 servers on 3 server cores"), "{chart}");
    assert!(
        chart.contains("class=\"failed-point\""),
        "failed steps are red"
    );
}

#[test]
fn the_headline_is_servers_per_server_core_first_in_the_verdict() {
    let mut r = sample();
    r.settings.project_cores = Some(64);
    let p = page(r);
    let verdict = &p[p.find("class=\"verdict\"").unwrap()..p.find("<h3>Run</h3>").unwrap()];
    // 9 recommended servers on 6 server cores (2 of 8 kept for the load generator).
    let head = verdict.find("1.50 servers per server core").expect(verdict);
    assert!(head < verdict.find("Recommended density").unwrap(), "first");
    assert!(verdict.contains("this machine, on 6 server cores: 9 servers"));
    assert!(verdict.contains("projected, on 64 server cores: 96 servers"));
    assert!(verdict.contains("the load generator&#39;s 2 cores of 8 excluded"));
    assert!(verdict.contains("at most 75 % of the server cores busy"));
    // Two results: the comparison table opens with it.
    let p = html::render(&[("a".into(), sample()), ("b".into(), sample())]);
    let table = &p[p.find("class=\"comparison\"").unwrap()..];
    let row = table.find("Servers per server core").unwrap();
    assert!(row < table.find(">Run<").unwrap());
}

#[test]
fn a_ladder_that_never_failed_says_at_least_and_never_before_the_first_failure() {
    let mut r = sample();
    r.ladders[0].limit_found = Some(false);
    r.ladders[0].stopped = "reached the last step (9 servers) without a QoS failure".into();
    r.limit_found = Some(false);
    let p = page(r);
    let verdict = &p[p.find("class=\"verdict\"").unwrap()..p.find("<h3>Run</h3>").unwrap()];
    assert!(
        verdict.contains("at least 1.50 servers per server core"),
        "{verdict}"
    );
    assert!(verdict.contains("on 6 server cores: at least 9 servers"));
    assert!(verdict.contains("Recommended density: <strong>at least 9 servers</strong>"));
    assert!(verdict.contains("Maximum: at least 9 servers</strong>"));
    assert!(verdict.contains("raise it to find the limit"));
    assert!(!verdict.contains("before the first failure"), "{verdict}");
}

#[test]
fn no_cost_figures_say_what_to_pass_and_a_ratio_below_one_is_explained() {
    let mut r = sample();
    r.tco = None;
    r.consolidation_ratio = None;
    r.before_servers = None;
    let p = page(r.clone());
    assert!(p.contains("Consolidation ratio: not computed"));
    assert!(p.contains(
        "--before-servers N --before-watts W --machines N --price-per-kwh P --currency CODE"
    ));
    assert!(!p.contains("(n/a)"));
    // 9 servers here where 18 ran before: no consolidation, said in words.
    r.consolidation_ratio = Some(0.5);
    r.before_servers = Some(18);
    let p = page(r);
    let verdict = &p[p.find("class=\"verdict\"").unwrap()..p.find("<h3>Run</h3>").unwrap()];
    assert!(verdict.contains("<strong>No consolidation</strong>: this machine holds 9 servers"));
    assert!(
        verdict.contains("2.00 of these machines for each of today"),
        "{verdict}"
    );
    assert!(
        !verdict.contains("0.50:1") && !verdict.contains("0.5x"),
        "{verdict}"
    );
    assert!(p.contains("would need more machines than today"));
    assert!(p.contains("tickpack tco --ratio 0.5"));
}

#[test]
fn cost_figures_name_their_currency_and_where_each_number_came_from() {
    let p = page(sample());
    assert!(p.contains("Annual cost (EUR)"));
    assert!(p.contains("99,645 EUR"));
    assert!(p.contains("(given, <code>--before-watts</code>)"));
    assert!(p.contains("130 W each after (modeled at the recommended step)"));
}

/// A players-less run as issue 31 found it: transaction latency nobody
/// measured.
fn without_players() -> BenchResult {
    let mut r = sample();
    r.settings.players_per_server = 0;
    r.settings.qos = tickpack_report::qos::default_limits_without_players(
        tickpack_report::bench::TickRate::new(60).unwrap(),
    );
    // A game with no query protocol: no query limit, no query ran.
    r.settings.qos.p99_query_us = None;
    r.settings.tick_hz = tickpack_report::bench::TickRate::new(60).unwrap();
    for l in &mut r.ladders {
        for s in &mut l.steps {
            s.players = 0;
            s.measured.transaction_latency_us = Percentiles::default();
            s.histograms.transaction_latency_us = String::new();
            s.query_latency_us = None;
            s.run_delay_us = Some(Percentiles {
                p99: 2_345,
                count: 40,
                ..Default::default()
            });
        }
    }
    r
}

/// Issue 31: the report of a players-less run showed `0.000` in the
/// transaction-latency cells (the terminal said n/a), "histogram
/// unreadable (failed to fill whole buffer)" for every step, and said the
/// steps were judged on query latency when no query ran.
#[test]
fn a_players_less_report_showed_0_000_and_unreadable_histograms() {
    let p = page(without_players());
    let steps = &p[p.find("<h3>Steps</h3>").unwrap()..];
    let rows = steps
        .lines()
        .filter(|l| l.starts_with("<tr") && l.contains("class=\"badge"));
    for row in rows {
        assert!(!row.contains(">0.000<"), "a 0.000 nobody measured: {row}");
        assert!(row.contains("n/a"), "{row}");
    }
    assert!(
        !p.contains("unreadable"),
        "no histogram to read is not unreadable"
    );
    assert!(p.contains("No players: no transaction latency was measured"));
    let na = &p[p.find("<dt>not applicable</dt>").expect("an n/a list")..];
    let na = &na[..na.find("<ul>").unwrap()];
    assert!(na.contains("judged on p99 run delay"), "{na}");
    assert!(!na.contains("query"), "no query ran: {na}");
}

/// Issue 31: an idle ladder's page said "no step failed, so the ladder did
/// not find its limit (it stopped at the last step)": it stopped because
/// its servers were idle, and found no density.
#[test]
fn an_idle_ladder_was_said_to_have_stopped_at_its_last_step() {
    let mut r = without_players();
    r.recommended_servers = None;
    r.max_servers = None;
    for l in &mut r.ladders {
        l.steps.truncate(1);
        l.steps[0].verdict = Verdict::Idle;
        l.steps[0].failures = vec!["the servers were idle: 0.00% of a core each".into()];
        l.max_servers = None;
        l.recommended_servers = None;
        l.limit_found = Some(false);
    }
    let p = page(r);
    assert!(p.contains("none, the servers were idle"), "the headline");
    assert!(p.contains("<strong>Maximum: none</strong>"), "the maximum");
    assert!(!p.contains("did not find its"), "no talk of a last step");
}

/// Issue 31: a step left standing DISTURBED (its reruns ran out) still
/// decided the headline, and the headline did not say so.
#[test]
fn a_disturbed_deciding_step_was_not_said_in_the_headline() {
    let mut r = sample();
    let rec = r.recommended_servers.expect("the sample recommends");
    let l = &mut r.ladders[0];
    let st = l.steps.iter_mut().find(|s| s.servers == rec).unwrap();
    st.disturbed = Some("foreign 12.6% of CPU 1, more than 5%".into());
    let h = tickpack_report::headline::Headline::of(&r).unwrap();
    let words = h.disturbed_words().expect("said");
    assert!(
        words.starts_with("DISTURBED") && words.contains("12.6%"),
        "{words}"
    );
    let p = page(r);
    let top = &p[..p.find("<h3>Steps</h3>").unwrap_or(p.len())];
    assert!(top.contains("DISTURBED"), "the headline says it");
    assert!(tickpack_report::headline::Headline::of(&sample())
        .unwrap()
        .disturbed_words()
        .is_none());
}

/// The steps table fits a 1280-pixel window: a fixed layout over the page's
/// width, cells that wrap, and a bounded number of columns.
#[test]
fn the_steps_table_fits_the_page_width() {
    let p = page(sample());
    let css = p.split("</style>").next().unwrap();
    assert!(css.contains("table.steps { width: 100%; table-layout: fixed;"));
    assert!(css.contains("max-width: 1200px"));
    // The steps table's header row: at most 15 headings over two rows
    // (the three latency percentiles sit under one heading).
    let table = &p[p.find("<table class=\"steps\">").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    let head = &table[..table.find("</tr>").unwrap()];
    assert!(head.matches("<th").count() <= 15, "{head}");
}

/// A step's servers' own CPU may read above its cores' busy share (their
/// kernel work on other cores, their sum in % of one core): the table
/// says so under it and in the column's title, so no one takes it for an
/// error.
#[test]
fn servers_cpu_above_the_busy_share_is_explained() {
    let mut r = sample();
    r.ladders[0].steps[0].cpu.servers_busy_percent = 47.0;
    r.ladders[0].steps[0].cpu.servers_own_percent = Some(49.8);
    let p = page(r);
    assert!(
        p.contains("49.8 (busy 47)"),
        "the servers' own, then the busy share"
    );
    assert!(p.contains("title=\"The servers' own CPU"));
    assert!(p.contains("it can read above the busy share"));
}
