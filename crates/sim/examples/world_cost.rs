//! Wall time of the game world per tick for each cost profile.
//!
//! 12 entities (8 humans with scripted inputs, 4 bots) on the default map at
//! 100 Hz; each tick is one `World::step` plus `World::visible_to` for all 12
//! (what building snapshots costs). Run in release mode:
//!
//! ```text
//! cargo run --release -p tickpack-sim --example world_cost [-- TICKS]
//! ```

use std::time::{Duration, Instant};

use tickpack_sim::world::script::scripted_human;
use tickpack_sim::world::{CostProfile, World, WorldConfig};

const TICK_US: u64 = 10_000;
const HUMANS: u16 = 8;
const BOTS: u16 = 4;

fn main() {
    let ticks: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("TICKS must be a number"))
        .unwrap_or(2000);
    println!(
        "{} humans + {} bots, 100 Hz, {ticks} ticks; per tick: step + visible_to x {}",
        HUMANS,
        BOTS,
        HUMANS + BOTS
    );
    println!(
        "{:<10} {:>8} {:>7} {:>8} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}",
        "profile",
        "substeps",
        "samples",
        "navrays",
        "work/tick",
        "step us",
        "vis us",
        "tick us",
        "p50 us",
        "p99 us",
        "%core"
    );
    for (name, cost) in [
        ("light", CostProfile::light()),
        ("reference", CostProfile::reference()),
        ("heavy", CostProfile::heavy()),
        ("scaled(2)", CostProfile::scaled(2.0)),
    ] {
        let mut w = World::new(WorldConfig {
            cost,
            ..WorldConfig::default()
        });
        for id in 0..HUMANS + BOTS {
            w.add_player(id, id >= HUMANS);
        }
        let mut out = Vec::new();
        let mut step_time = Duration::ZERO;
        let mut vis_time = Duration::ZERO;
        let mut per_tick = Vec::with_capacity(ticks as usize);
        // Warm up (spread players out of the spawns) before measuring.
        let warmup = 200;
        for tick in 0..warmup + ticks {
            for id in 0..HUMANS {
                w.set_input(id, scripted_human(tick, id));
            }
            let t0 = Instant::now();
            w.step(TICK_US);
            let t1 = Instant::now();
            for id in 0..HUMANS + BOTS {
                w.visible_to(id, &mut out);
                std::hint::black_box(&out);
            }
            let t2 = Instant::now();
            if tick >= warmup {
                step_time += t1 - t0;
                vis_time += t2 - t1;
                per_tick.push(t2 - t0);
            }
        }
        let e = w.cost();
        per_tick.sort();
        let n = ticks as f64;
        let step_us = step_time.as_secs_f64() * 1e6 / n;
        let vis_us = vis_time.as_secs_f64() * 1e6 / n;
        let pct = |q: usize| per_tick[(per_tick.len() * q / 100).min(per_tick.len() - 1)];
        let c = w.counters();
        println!(
            "{:<10} {:>8} {:>7} {:>8} {:>10.0} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>5.1}%",
            name,
            e.physics_substeps,
            e.visibility_samples,
            e.bot_nav_rays,
            c.work_units as f64 / (warmup + ticks) as f64,
            step_us,
            vis_us,
            step_us + vis_us,
            pct(50).as_secs_f64() * 1e6,
            pct(99).as_secs_f64() * 1e6,
            (step_us + vis_us) / 100.0,
        );
        eprintln!(
            "           shots {} hits {} kills {} respawns {}",
            c.shots, c.hits, c.kills, c.respawns
        );
    }
}
