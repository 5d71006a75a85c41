//! The comparison that opens a page of two or more results: a table with
//! one column per result (the game first among the settings, so results of
//! different games are told apart), then one chart shared by all of them.

use std::fmt::Write as _;

use crate::bench::BenchResult;

use super::charts::{failed, headroom_limit, ladder_color, Figure};
use super::svg::{Chart, Point, Series};

use super::format::{
    cpu_list, esc, fmt_ms, fmt_num, fmt_ratio, max_density, or_na, recommended_step, servers, utc,
    NA,
};

/// The comparison table: one column per result.
pub(super) fn comparison(out: &mut String, results: &[(String, BenchResult)]) {
    out.push_str(
        "<h2>Comparison</h2>\n<div class=\"scroll\"><table class=\"comparison\">\n<tr><th></th>",
    );
    for (i, (label, _)) in results.iter().enumerate() {
        w!(
            out,
            "<th><a href=\"#result-{}\">{}</a></th>",
            i + 1,
            esc(label)
        );
    }
    out.push_str("</tr>\n");
    let row = |out: &mut String, name: &str, cell: &dyn Fn(&BenchResult) -> String| {
        w!(out, "<tr><th>{name}</th>");
        for (_, r) in results {
            w!(out, "<td>{}</td>", cell(r));
        }
        out.push_str("</tr>\n");
    };
    row(out, "Machine speed (calibration tick)", &|r| {
        r.machine_speed
            .as_ref()
            .and_then(|m| Some((m.median_tick_us()?, m.range_us()?, m.unstable())))
            .map_or(NA.into(), |(t, (lo, hi), unstable)| {
                format!(
                    "{t:.0} µs ({lo:.0}-{hi:.0}){}",
                    if unstable { ", unstable" } else { "" }
                )
            })
    });
    row(out, "<strong>Servers per server core</strong>", &|r| {
        crate::headline::Headline::of(r).map_or(NA.into(), |h| {
            format!("<strong>{}</strong>", esc(&h.per_core_words()))
        })
    });
    row(out, "Run", &|r| {
        if r.complete {
            "complete".into()
        } else {
            "<strong>interrupted (incomplete)</strong>".into()
        }
    });
    row(out, "Started", &|r| utc(r.started_unix));
    row(out, "tickpack", &|r| or_na(&r.tickpack_version));
    row(out, "CPU", &|r| {
        format!(
            "{}, {} logical CPUs",
            or_na(&r.system.cpu_model),
            r.system.logical_cpus
        )
    });
    row(out, "Kernel", &|r| or_na(&r.system.kernel));
    row(out, "Cores: load generator / servers", &|r| {
        format!(
            "{} / {}",
            cpu_list(&r.cores.load_generator),
            cpu_list(&r.cores.servers)
        )
    });
    row(out, "Game", &|r| {
        let mut games: Vec<&str> = Vec::new();
        for l in &r.ladders {
            let g = l.game_name(&r.settings);
            if !games.contains(&g) {
                games.push(g);
            }
        }
        if r.ladders.iter().any(|l| l.game.is_some()) && games.len() > 1 {
            format!("{} (one per ladder)", esc(&games.join(", ")))
        } else {
            super::run::game_words(&r.settings)
        }
    });
    row(out, "Tile, players, tick", &|r| {
        format!(
            "{} servers per tile, {}, {} Hz{}",
            r.settings.tile_servers,
            esc(&crate::words::load_per_server(&r.settings)),
            r.settings.tick_hz,
            super::run::cost_profile(&r.settings)
                .map_or(String::new(), |c| format!(", cost {}", esc(c)))
        )
    });
    row(out, "Ladders", &|r| {
        if r.ladders.is_empty() {
            return NA.into();
        }
        r.ladders
            .iter()
            .map(|l| esc(&l.label))
            .collect::<Vec<_>>()
            .join("<br>")
    });
    row(out, "<strong>Recommended density</strong>", &|r| {
        format!("<strong>{}</strong>", servers(r.recommended_servers))
    });
    row(out, "Maximum density", &max_density);
    row(out, "Headroom target", &|r| {
        format!(
            "{} % server-core busy",
            fmt_num(r.settings.headroom_target * 100.0)
        )
    });
    row(
        out,
        "Consolidation ratio",
        &|r| match r.consolidation_ratio {
            Some(c) if c < 1.0 => {
                "<span class=\"na\">none: fewer servers per machine than before</span>".into()
            }
            Some(c) => fmt_ratio(c),
            None => NA.into(),
        },
    );
    row(out, "Comparison ratio", &|r| match (
        &r.comparison,
        r.comparison_ratio,
        r.settings.compare.as_str(),
    ) {
        (Some(c), _, _) if !c.ratios.is_empty() => c
            .ratios
            .iter()
            .map(|x| {
                format!(
                    "{} / {}: {} (range {}, {} repetitions)",
                    esc(&x.numerator_name),
                    esc(&x.denominator_name),
                    x.ratio.median.map_or(NA.into(), fmt_ratio),
                    esc(&x.ratio.range_words(2)),
                    x.ratio.found()
                )
            })
            .collect::<Vec<_>>()
            .join("<br>"),
        (_, Some(v), c) => format!("{} ({})", fmt_ratio(v), esc(c)),
        (_, None, _) => NA.into(),
    });
    row(
        out,
        "p99 transaction latency at the recommended density",
        &|r| {
            recommended_step(r)
                .filter(|s| super::format::measured_latency(s))
                .map_or(NA.into(), |s| {
                    format!("{} ms", fmt_ms(s.transaction_latency_us.p99))
                })
        },
    );
    row(out, "Watts at the recommended density", &|r| {
        recommended_step(r)
            .and_then(|s| s.power.as_ref())
            .map_or(NA.into(), |p| {
                format!("{} W ({})", fmt_num(p.watts), p.source)
            })
    });
    row(out, "Annual savings", &|r| {
        r.tco.as_ref().map_or(NA.into(), |t| {
            format!(
                "{}{} ({} %), {} kWh",
                fmt_num(t.savings.annual),
                t.currency
                    .as_deref()
                    .map_or(String::new(), |c| format!(" {}", esc(c))),
                fmt_num(t.savings.percent),
                fmt_num(t.savings.annual_kwh)
            )
        })
    });
    out.push_str("</table></div>\n");
    // Two results: how much of their difference the machines explain.
    if let [(la, a), (lb, b)] = results {
        if let Some(words) = crate::machine::compare_results(la, a, lb, b).get(2) {
            w!(out, "<p class=\"machine-speed\">{}</p>\n", esc(words));
        }
    }
    out.push_str("<div class=\"charts\">\n");
    super::section::figure(out, shared_chart(results));
    out.push_str("</div>\n");
}

/// One chart for every result: the server cores' busy share against
/// servers per server core, one line per ladder of each result, failed
/// steps in red, with each result's headroom target. Per server core, so
/// results from machines of different sizes share an axis; busy share,
/// because every game has it (a game without players has no transaction
/// latency).
fn shared_chart(results: &[(String, BenchResult)]) -> Figure {
    let mut c = Chart::new(
        "All results: CPU busy vs servers per server core",
        "servers per server core",
        "server cores busy (%)",
    );
    c.y_max = Some(100.0);
    let mut colour = 0;
    for (i, (label, r)) in results.iter().enumerate() {
        let cores = r.cores.servers.len().max(1) as f64;
        for ladder in &r.ladders {
            let name = if r.ladders.len() > 1 {
                format!("{}: {label}, {}", i + 1, ladder.label)
            } else {
                format!("{}: {label} ({})", i + 1, ladder.game_name(&r.settings))
            };
            let mut s = Series::new(name, ladder_color(colour));
            colour += 1;
            s.points = ladder
                .steps
                .iter()
                .map(|st| Point {
                    x: f64::from(st.servers) / cores,
                    y: st.cpu.servers_busy_percent,
                    failed: failed(st),
                    tip: format!(
                        "{label}: {}, {} servers on {} server cores, {} % busy{}",
                        ladder.label,
                        st.servers,
                        r.cores.servers.len(),
                        fmt_num(st.cpu.servers_busy_percent),
                        if failed(st) {
                            format!(" - FAIL: {}", st.failures.join("; "))
                        } else {
                            String::new()
                        }
                    ),
                })
                .collect();
            c.series.push(s);
        }
        let target = headroom_limit(r);
        if !c.limits.iter().any(|l| (l.y - target.y).abs() < 1e-9) {
            c.limits.push(target);
        }
    }
    Figure {
        chart: c,
        caption: "Every result on one axis: how busy the server cores were at each step, \
                  against the servers each server core held (so machines of different sizes \
                  compare). A line that rises more slowly packs more servers per core; red \
                  dots: failed steps (hover for why); dashed: the headroom target."
            .into(),
        empty: "No result has a finished step: nothing to compare on one chart.".into(),
    }
}
