//! The run's facts: version, dates, system, cores, settings and the QoS
//! limits.

use std::fmt::Write as _;

use crate::bench::{BenchResult, BenchSettings};

use super::format::{cpu_list, fmt_duration, fmt_num, or_na, system, utc, NA};
use super::limits;

pub(super) fn run_facts(out: &mut String, r: &BenchResult) {
    let s = &r.settings;
    out.push_str("<h3>Run</h3>\n<dl class=\"facts\">\n");
    w!(
        out,
        "<dt>tickpack</dt><dd>{}</dd>\n",
        or_na(&r.tickpack_version)
    );
    w!(out, "<dt>Started</dt><dd>{}</dd>\n", utc(r.started_unix));
    let finished = match (r.complete, r.finished_unix) {
        (_, Some(f)) if f >= r.started_unix && r.started_unix > 0 => {
            format!("{} (took {})", utc(f), fmt_duration(f - r.started_unix))
        }
        (_, Some(f)) => utc(f),
        (false, None) => "<strong>did not finish: interrupted, incomplete</strong>".into(),
        (true, None) => NA.into(),
    };
    w!(out, "<dt>Finished</dt><dd>{finished}</dd>\n");
    w!(
        out,
        "<dt>Status</dt><dd>{}</dd>\n",
        if r.complete {
            "complete"
        } else {
            "<strong>interrupted (incomplete)</strong>"
        }
    );
    w!(out, "<dt>System</dt><dd>{}</dd>\n", system(&r.system));
    w!(
        out,
        "<dt>Cores</dt><dd>{} in total; load generator: {}; servers: {}</dd>\n",
        r.cores.total,
        cpu_list(&r.cores.load_generator),
        cpu_list(&r.cores.servers)
    );
    if let Some(t) = &s.tile {
        tile_facts(out, s, t);
    } else {
        one_game_facts(out, s);
    }
    w!(
        out,
        "<dt>Steps</dt><dd>{} s measured after {} s warm-up; at most {} steps, {} past the \
         first failure</dd>\n",
        fmt_num(s.step_duration_s),
        fmt_num(s.warmup_s),
        s.max_steps,
        s.steps_past_failure
    );
    w!(
        out,
        "<dt>Headroom target</dt><dd>{} % server-core busy</dd>\n",
        fmt_num(s.headroom_target * 100.0)
    );
    w!(out, "<dt>Compare</dt><dd>{}</dd>\n", or_na(&s.compare));
    if s.tile.is_none() {
        limits::qos_limits(out, r);
    }
    out.push_str("</dl>\n");
}

/// A tile run's members, each with its load, curve and own limits: the
/// run's one-game settings do not apply to it.
fn tile_facts(out: &mut String, s: &BenchSettings, t: &crate::tile::TileSettings) {
    use super::format::esc;
    w!(
        out,
        "<dt>Tile</dt><dd>{} ({}): {}; judged in {} s windows, each member on its own limits; \
         time compressed: {}</dd>\n",
        esc(&t.name),
        esc(&t.file),
        crate::words::servers(s.tile_servers),
        fmt_num(t.window_s),
        esc(&t.compression)
    );
    out.push_str("<dt>Members</dt><dd><ul>");
    for m in &t.members {
        let load = if m.idle {
            "idle lobby".to_string()
        } else if m.players > 0 {
            format!("{} players", m.players)
        } else {
            format!("{} bots", m.bots)
        };
        let mut limits = vec![];
        if m.players > 0 {
            limits.push(format!(
                "p99 transaction ≤ {} ms",
                fmt_num(m.qos.p99_transaction_us as f64 / 1000.0)
            ));
            limits.push(format!("joins within {} ms", m.max_join_ms));
        }
        if let Some(rd) = m.qos.p99_run_delay_us {
            limits.push(format!(
                "p99 run delay ≤ {} ms",
                fmt_num(rd as f64 / 1000.0)
            ));
        }
        if let Some(q) = m.qos.p99_query_us {
            limits.push(format!("p99 query ≤ {} ms", fmt_num(q as f64 / 1000.0)));
        }
        w!(
            out,
            "<li><strong>{}</strong> ({}): {} a tile, {load} at {} Hz; {}; limits: {}</li>",
            esc(&m.name),
            esc(&m.game),
            m.count,
            m.tick_hz,
            esc(&m.curve),
            esc(&limits.join(", "))
        );
    }
    out.push_str("</ul></dd>\n");
}

/// A one-game run's game and servers.
fn one_game_facts(out: &mut String, s: &BenchSettings) {
    let game = game_words(s);
    w!(out, "<dt>Game</dt><dd>{game}</dd>\n");
    w!(
        out,
        "<dt>Servers</dt><dd>tiles of {}; {}; {} Hz tick{}</dd>\n",
        crate::words::servers(s.tile_servers),
        super::format::esc(&crate::words::load_per_server(s)),
        s.tick_hz,
        cost_profile(s).map_or(String::new(), |c| format!(
            "; cost profile {}",
            super::format::esc(c)
        ))
    );
}

/// The servers' cost profile when their game has one (a `cost`
/// variable, as the run recorded its variables); `None` for a game
/// without. A result from before the variables were recorded says
/// "default" for every game: shown only when set otherwise.
pub(super) fn cost_profile(s: &BenchSettings) -> Option<&str> {
    let vars = &s.game_settings.variables;
    match vars.get("cost") {
        Some(c) => Some(c),
        None if vars.is_empty() && !s.cost.is_empty() && s.cost != "default" => Some(&s.cost),
        None => None,
    }
}

/// The game a run's settings name, in words (HTML, escaped): its name,
/// what its definition says it is (as the bench recorded it; results from
/// before it was say "from its definition"), and its recorded settings.
pub(super) fn game_words(s: &BenchSettings) -> String {
    let settings = s.game_settings.lines().join(", ");
    let what = match &s.game_settings.description {
        Some(d) => format!("{}: {d}", s.game),
        None => format!("{} (from its definition)", s.game),
    };
    if settings.is_empty() {
        super::format::esc(&what)
    } else {
        super::format::esc(&format!("{what}; {settings}"))
    }
}
