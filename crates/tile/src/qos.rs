//! A member's QoS limits: its game's defaults (the rule table's, in
//! `tickpack_report::qos`), then what `[member.qos]` sets. Each member is
//! judged on its own limits in every window.

use tickpack_game::{GameDef, PlayerProtocol, QueryProtocol, TickRate};
use tickpack_report::bench::QosLimits;
use tickpack_report::qos::{default_limits, default_limits_without_players};

use crate::file::QosFile;

/// The limits a game is judged on by default at `tick`, as `tickpack
/// bench` judges it alone: p99 transaction latency within one snapshot
/// interval + 5 ms (a snapshot a tick, or the definition's
/// `snapshot_hz`), a quarter tick of lateness, 0.1 % loss, half a tick of
/// frame; a server without emulated players (a game tickpack cannot
/// play, bots only, an idle lobby) is judged on its run delay and, when
/// it answers a query, on that query's p99.
pub fn game_limits(def: &GameDef, tick: TickRate, with_players: bool) -> QosLimits {
    let mut qos = default_limits(tick);
    let snapshot_hz = def
        .players
        .snapshot_hz
        .and_then(TickRate::new)
        .map_or(tick, |h| h.min(tick));
    if snapshot_hz < tick {
        qos.p99_transaction_us = default_limits(snapshot_hz).p99_transaction_us;
    }
    if !with_players {
        let judged = default_limits_without_players(tick);
        qos.p99_run_delay_us = judged.p99_run_delay_us;
        qos.p99_query_us = match def.query.protocol {
            QueryProtocol::Q3 | QueryProtocol::A2s | QueryProtocol::Gamedig => judged.p99_query_us,
            _ => None,
        };
    }
    qos
}

/// Whether a member's servers are judged on players' figures: the game
/// has emulated players (or a load command that may write them) and the
/// member is not idle.
pub(crate) fn judged_on_players(def: &GameDef, idle: bool) -> bool {
    !idle && def.players.protocol != PlayerProtocol::None
}

/// `[member.qos] join_ms`: the longest a join may take, if set.
pub(crate) fn max_join(f: &QosFile) -> Result<Option<std::time::Duration>, (&'static str, String)> {
    match f.join_ms {
        None => Ok(None),
        Some(v) if v.is_finite() && v > 0.0 && v <= 60_000.0 => {
            Ok(Some(std::time::Duration::from_secs_f64(v / 1000.0)))
        }
        Some(v) => Err((
            "join_ms",
            format!("join_ms {v}: expected more than 0 and at most 60000 ms"),
        )),
    }
}

/// `[member.qos]` over `base`; a refusal names its key.
pub(crate) fn apply(base: QosLimits, f: &QosFile) -> Result<QosLimits, (&'static str, String)> {
    let mut q = base;
    let ms = |key: &'static str, v: f64| -> Result<u64, (&'static str, String)> {
        if v.is_finite() && v > 0.0 && v <= 60_000.0 {
            Ok(((v * 1000.0).round() as u64).max(1))
        } else {
            Err((
                key,
                format!("{key} {v}: expected more than 0 and at most 60000 ms"),
            ))
        }
    };
    if let Some(v) = f.p99_ms {
        q.p99_transaction_us = ms("p99_ms", v)?;
    }
    if let Some(v) = f.tick_lateness_ms {
        q.p99_tick_lateness_us = ms("tick_lateness_ms", v)?;
    }
    if let Some(v) = f.query_p99_ms {
        q.p99_query_us = Some(ms("query_p99_ms", v)?);
    }
    if let Some(v) = f.run_delay_ms {
        q.p99_run_delay_us = Some(ms("run_delay_ms", v)?);
    }
    if let Some(v) = f.relative {
        if !(v.is_finite() && v >= 1.0) {
            return Err((
                "relative",
                format!("relative {v}: expected 1 or more (a multiple of the one-tile step's p99)"),
            ));
        }
        q.p99_relative_to_baseline = v;
    }
    if let Some(v) = f.loss_percent {
        if !(0.0..=100.0).contains(&v) {
            return Err((
                "loss_percent",
                format!("loss_percent {v}: expected 0..=100"),
            ));
        }
        q.max_snapshot_loss = v / 100.0;
    }
    if let Some(v) = f.frame_budget {
        if !(v.is_finite() && v > 0.0 && v <= 100.0) {
            return Err((
                "frame_budget",
                format!("frame_budget {v}: expected more than 0 (a share of the tick)"),
            ));
        }
        q.p99_frame_budget = v;
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_game_gets_the_limits_the_bench_judges_it_on_alone() {
        let (tw, _) = tickpack_game::registry::find("teeworlds").unwrap();
        let q = game_limits(&tw, tw.tick(), true);
        assert_eq!(q.p99_transaction_us, 45_000, "a snapshot every 40 ms + 5");
        assert_eq!(q.p99_run_delay_us, None);
        let (nx, _) = tickpack_game::registry::find("nexuiz").unwrap();
        let q = game_limits(&nx, nx.tick(), false);
        assert_eq!(q.p99_run_delay_us, Some(16_666 / 4));
        assert_eq!(q.p99_query_us, Some(2 * 16_666 + 5_000));
        let (r, _) = tickpack_game::registry::find("reference").unwrap();
        let q = game_limits(&r, r.tick(), false);
        assert_eq!(q.p99_query_us, None, "tickpack's stats are no game query");
        assert_eq!(q.p99_run_delay_us, Some(2_500));
    }
}
