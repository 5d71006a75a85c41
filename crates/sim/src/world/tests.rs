//! World tests against a virtual clock: every test just calls `step` with a
//! tick length.

use super::physics::{GRAVITY, HULL_HALF_WIDTH, JUMP_SPEED, MAX_SPEED};
use super::*;

const TICK_US: u64 = 10_000;

/// The reference profile cut to a tenth (4 sub-steps, 8 samples, 3 rays):
/// every code path, at a price debug builds can afford for 1000 ticks.
fn test_cost() -> CostProfile {
    CostProfile::reference().with_scale(0.1)
}

fn custom(boxes: Vec<Aabb>) -> WorldConfig {
    let spawn = |x: f32| Spawn {
        pos: V3::new(x, 2.0, 0.0),
        yaw: 0.0,
    };
    WorldConfig {
        map: MapKind::Custom(MapSpec {
            size: [40.0, 40.0],
            boxes,
            spawns: [vec![spawn(2.0), spawn(4.0)], vec![spawn(36.0), spawn(38.0)]],
        }),
        ..WorldConfig::default()
    }
}

fn wall(x0: f32, y0: f32, x1: f32, y1: f32) -> Aabb {
    Aabb::new([x0, y0, 0.0], [x1, y1, 4.0])
}

fn pos(w: &World, id: u16) -> V3 {
    V3::from_array(w.entity(id).unwrap().pos)
}

fn forward(yaw: f32) -> Input {
    Input {
        forward: 1.0,
        yaw,
        ..Input::default()
    }
}

/// Humans 0..8 with scripted inputs, bots 8..12, on the default map.
fn twelve(cost: CostProfile, seed: u64) -> World {
    let mut w = World::new(WorldConfig {
        cost,
        seed,
        ..WorldConfig::default()
    });
    for id in 0..12 {
        assert!(w.add_player(id, id >= 8));
    }
    w
}

/// A scripted human (see [`script::scripted_human`]) that also crouches
/// for 200 ticks in every 1000.
fn scripted(tick: u64, id: u16) -> Input {
    let mut input = script::scripted_human(tick, id);
    if (tick / 200 + u64::from(id)) % 5 == 4 {
        input.buttons |= buttons::CROUCH;
    }
    input
}

fn run_scripted(w: &mut World, ticks: u64, with_snapshots: bool) {
    let mut out = Vec::new();
    for tick in 0..ticks {
        for id in 0..8 {
            w.set_input(id, scripted(tick, id));
        }
        w.step(TICK_US);
        if with_snapshots {
            for id in 0..12 {
                w.visible_to(id, &mut out);
            }
        }
    }
}

#[test]
fn player_pushed_forward_stops_at_a_wall_and_never_enters_it() {
    let mut w = World::new(custom(vec![wall(20.0, 0.0, 21.0, 40.0)]));
    w.add_player(0, false);
    w.place(0, [10.0, 20.0, 0.0], 0.0, 0.0);
    let limit = 20.0 - HULL_HALF_WIDTH;
    for _ in 0..500 {
        w.set_input(0, forward(0.0));
        w.step(TICK_US);
        let p = pos(&w, 0);
        assert!(p.x <= limit, "player entered the wall: x = {}", p.x);
    }
    let s = w.entity(0).unwrap();
    assert!(
        s.pos[0] > limit - 0.01,
        "player stopped short of the wall at x = {}",
        s.pos[0]
    );
    assert!(
        s.vel[0].abs() < 1e-3,
        "still pushing into the wall: vx = {}",
        s.vel[0]
    );
    assert!(
        (s.pos[1] - 20.0).abs() < 1e-3,
        "drifted sideways: y = {}",
        s.pos[1]
    );
}

#[test]
fn one_substep_at_10_hz_cannot_tunnel_through_a_5_cm_wall() {
    let mut cfg = custom(vec![Aabb::new([20.0, 0.0, 0.0], [20.05, 40.0, 4.0])]);
    cfg.cost = CostProfile::light();
    let mut w = World::new(cfg);
    w.add_player(0, false);
    // Diagonal run: slides along the wall after reaching it.
    w.place(0, [14.0, 10.0, 0.0], 0.5, 0.0);
    for _ in 0..60 {
        w.set_input(0, forward(0.5));
        w.step(100_000);
        assert!(
            pos(&w, 0).x <= 20.0 - HULL_HALF_WIDTH,
            "tunneled: {:?}",
            pos(&w, 0)
        );
    }
    let p = pos(&w, 0);
    assert!(p.y > 20.0, "did not slide along the wall: {p:?}");
}

#[test]
fn player_walks_along_a_wall_it_touches_at_full_speed() {
    let mut w = World::new(custom(vec![wall(0.0, 20.0, 40.0, 21.0)]));
    w.add_player(0, false);
    w.place(0, [5.0, 20.0 - HULL_HALF_WIDTH - 0.001, 0.0], 0.0, 0.0);
    for _ in 0..200 {
        w.set_input(0, forward(0.0));
        w.step(TICK_US);
    }
    let s = w.entity(0).unwrap();
    assert!(
        (s.vel[0] - MAX_SPEED).abs() < 0.01,
        "snagged on the wall: vx = {}",
        s.vel[0]
    );
}

#[test]
fn gravity_brings_a_jumping_player_back_to_the_ground() {
    let mut w = World::new(custom(vec![]));
    w.add_player(0, false);
    w.place(0, [10.0, 10.0, 0.0], 0.0, 0.0);
    w.step(TICK_US);
    assert!(w.entity(0).unwrap().flags & entity_flags::ON_GROUND != 0);

    w.set_input(
        0,
        Input {
            buttons: buttons::JUMP,
            ..Input::default()
        },
    );
    let mut top = 0.0f32;
    let mut landed_after = None;
    // Hold JUMP the whole time: one press, one jump.
    for tick in 1..=200 {
        w.step(TICK_US);
        let s = w.entity(0).unwrap();
        top = top.max(s.pos[2]);
        if landed_after.is_none() && tick > 5 && s.flags & entity_flags::ON_GROUND != 0 {
            landed_after = Some(tick);
        }
        if let Some(t) = landed_after {
            assert!(
                s.pos[2] < 0.01,
                "bounced after landing at tick {t}: z = {}",
                s.pos[2]
            );
        }
    }
    let expect = JUMP_SPEED * JUMP_SPEED / (2.0 * GRAVITY);
    assert!(
        (top - expect).abs() < 0.05,
        "jump height {top}, expected about {expect}"
    );
    let air_ticks = landed_after.expect("never landed");
    let expect_ticks = (2.0 * JUMP_SPEED / GRAVITY * 100.0) as i32;
    assert!(
        (air_ticks - expect_ticks).abs() <= 3,
        "in the air {air_ticks} ticks"
    );
}

#[test]
fn walking_into_a_low_step_climbs_it_and_a_crate_blocks() {
    let step = Aabb::new([15.0, 0.0, 0.0], [40.0, 20.0, 0.4]);
    let crate_ = Aabb::new([15.0, 20.0, 0.0], [40.0, 40.0, 0.9]);
    let mut w = World::new(custom(vec![step, crate_]));
    w.add_player(0, false);
    w.add_player(2, false);
    w.place(0, [10.0, 10.0, 0.0], 0.0, 0.0);
    w.place(2, [10.0, 30.0, 0.0], 0.0, 0.0);
    for _ in 0..200 {
        w.set_input(0, forward(0.0));
        w.set_input(2, forward(0.0));
        w.step(TICK_US);
    }
    let on_step = pos(&w, 0);
    assert!(
        on_step.x > 20.0 && (on_step.z - 0.4).abs() < 0.01,
        "did not climb: {on_step:?}"
    );
    let blocked = pos(&w, 2);
    assert!(
        blocked.x <= 15.0 - HULL_HALF_WIDTH,
        "walked onto a 0.9 m crate: {blocked:?}"
    );
}

#[test]
fn crouched_player_stays_crouched_under_a_low_ceiling() {
    let ceiling = Aabb::new([12.0, 0.0, 1.2], [20.0, 40.0, 4.0]);
    let mut w = World::new(custom(vec![ceiling]));
    w.add_player(0, false);
    w.place(0, [10.0, 10.0, 0.0], 0.0, 0.0);
    let crouch_fwd = Input {
        buttons: buttons::CROUCH,
        ..forward(0.0)
    };
    for _ in 0..300 {
        w.set_input(0, crouch_fwd);
        w.step(TICK_US);
    }
    assert!(
        pos(&w, 0).x > 13.0,
        "crouched player did not get under: {:?}",
        pos(&w, 0)
    );
    w.set_input(0, Input::default());
    w.step(TICK_US);
    let s = w.entity(0).unwrap();
    assert!(
        s.flags & entity_flags::CROUCHING != 0,
        "stood up into the ceiling"
    );
}

#[test]
fn bot_facing_a_visible_enemy_fires_and_hits() {
    let mut w = World::new(custom(vec![]));
    w.add_player(0, true);
    w.add_player(1, false);
    w.place(0, [10.0, 20.0, 0.0], 0.0, 0.0);
    w.place(1, [20.0, 20.0, 0.0], std::f32::consts::PI, 0.0);
    let mut first_shot = None;
    for tick in 1..=300u64 {
        w.step(TICK_US);
        if first_shot.is_none() && w.counters().shots > 0 {
            first_shot = Some(tick);
        }
        if w.counters().hits > 0 {
            break;
        }
    }
    let first = first_shot.expect("bot never fired");
    assert!(
        first >= 25,
        "bot fired before its reaction time, at tick {first}"
    );
    assert!(
        w.counters().hits > 0,
        "bot fired {} shots, none hit",
        w.counters().shots
    );
    assert!(w.entity(1).unwrap().health < MAX_HEALTH);
}

#[test]
fn bots_ignore_teammates() {
    let mut w = World::new(custom(vec![]));
    w.add_player(0, true);
    w.add_player(2, false);
    w.place(0, [10.0, 20.0, 0.0], 0.0, 0.0);
    w.place(2, [20.0, 20.0, 0.0], 0.0, 0.0);
    for _ in 0..100 {
        w.step(TICK_US);
    }
    assert_eq!(w.counters().shots, 0);
    assert_eq!(w.entity(2).unwrap().health, MAX_HEALTH);
}

#[test]
fn target_behind_a_wall_is_not_visible() {
    let mut w = World::new(custom(vec![wall(19.0, 10.0, 21.0, 30.0)]));
    for id in [0, 1, 3] {
        w.add_player(id, false);
    }
    w.place(0, [10.0, 20.0, 0.0], 0.0, 0.0);
    w.place(1, [30.0, 20.0, 0.0], 0.0, 0.0);
    w.place(3, [10.0, 25.0, 0.0], 0.0, 0.0);
    w.step(TICK_US);
    let mut out = Vec::new();
    w.visible_to(0, &mut out);
    let ids: Vec<u16> = out.iter().map(|e| e.id).collect();
    assert_eq!(ids, [0, 3], "viewer first, then only the unblocked player");

    // Step out of the wall's shadow: now in sight.
    w.place(1, [22.0, 36.0, 0.0], 0.0, 0.0);
    w.step(TICK_US);
    w.visible_to(0, &mut out);
    assert!(out.iter().any(|e| e.id == 1));

    // Beyond the view distance: gone again.
    let mut cfg = custom(vec![]);
    cfg.view_distance = 15.0;
    let mut w = World::new(cfg);
    w.add_player(0, false);
    w.add_player(1, false);
    w.place(0, [5.0, 20.0, 0.0], 0.0, 0.0);
    w.place(1, [30.0, 20.0, 0.0], 0.0, 0.0);
    w.visible_to(0, &mut out);
    assert_eq!(out.len(), 1);
    w.visible_to(99, &mut out);
    assert!(out.is_empty());
}

#[test]
fn a_head_peeking_over_cover_is_seen_with_samples_and_missed_without() {
    // A 1.5 m wall hides the chest of a standing player but not the head.
    let cover = Aabb::new([19.0, 10.0, 0.0], [21.0, 30.0, 1.5]);
    let see = |samples: u32| {
        let mut cfg = custom(vec![cover]);
        cfg.cost.visibility_samples = samples;
        let mut w = World::new(cfg);
        w.add_player(0, false);
        w.add_player(1, false);
        w.place(0, [10.0, 20.0, 0.0], 0.0, 0.0);
        w.place(1, [22.0, 20.0, 0.0], 0.0, 0.0);
        let mut out = Vec::new();
        w.visible_to(0, &mut out);
        out.len() == 2
    };
    assert!(!see(1));
    assert!(see(2));
}

#[test]
fn shots_kill_and_the_victim_respawns_after_the_delay() {
    let mut cfg = custom(vec![]);
    cfg.respawn_delay_us = 1_000_000;
    let mut w = World::new(cfg);
    w.add_player(0, false);
    w.add_player(1, false);
    w.place(0, [10.0, 20.0, 0.0], 0.0, 0.0);
    w.place(1, [20.0, 20.0, 0.0], 0.0, 0.0);
    // Aim at the chest.
    let pitch = (1.2f32 - physics::STAND_EYE).atan2(10.0);
    let fire = Input {
        yaw: 0.0,
        pitch,
        buttons: buttons::FIRE,
        ..Input::default()
    };
    let mut ticks = 0;
    while w.counters().kills == 0 {
        w.set_input(0, fire);
        w.step(TICK_US);
        ticks += 1;
        assert!(ticks < 200, "no kill after {} shots", w.counters().shots);
    }
    assert_eq!(w.counters().hits, 4, "30 damage a body shot: four to kill");
    assert_eq!(w.stats(0).unwrap().kills, 1);
    assert_eq!(w.stats(1).unwrap().deaths, 1);
    assert_eq!(w.entity(1).unwrap().health, 0);
    let shots = w.counters().shots;
    w.set_input(0, fire);
    w.step(TICK_US * 20);
    assert_eq!(w.counters().hits, 4, "a dead player was hit");
    assert!(w.counters().shots > shots);

    w.set_input(0, Input::default());
    for _ in 0..70 {
        w.step(TICK_US);
    }
    assert_eq!(w.entity(1).unwrap().health, 0, "respawned early");
    for _ in 0..20 {
        w.step(TICK_US);
    }
    let back = w.entity(1).unwrap();
    assert_eq!(back.health, MAX_HEALTH, "not respawned after the delay");
    assert!(
        back.pos[0] > 30.0,
        "respawned away from team 1's spawns: {:?}",
        back.pos
    );
    assert_eq!(w.counters().respawns, 1);
}

#[test]
fn same_seed_and_inputs_give_identical_worlds_after_1000_steps() {
    let mut a = twelve(test_cost(), 7);
    let mut b = twelve(test_cost(), 7);
    run_scripted(&mut a, 1000, true);
    run_scripted(&mut b, 1000, true);
    let sa: Vec<EntityState> = a.entities().collect();
    let sb: Vec<EntityState> = b.entities().collect();
    assert_eq!(sa, sb);
    assert_eq!(a.counters(), b.counters());
    let c = a.counters();
    assert!(
        c.shots > 100 && c.hits > 0,
        "too quiet to prove anything: {c:?}"
    );

    let mut other = twelve(test_cost(), 8);
    run_scripted(&mut other, 1000, false);
    let so: Vec<EntityState> = other.entities().collect();
    assert_ne!(sa, so, "the seed changed nothing");
}

#[test]
fn heavy_profile_does_measurably_more_work_than_light() {
    let work = |cost| {
        let mut w = twelve(cost, 3);
        run_scripted(&mut w, 100, true);
        w.counters().work_units
    };
    let light = work(CostProfile::light());
    let reference = work(CostProfile::reference());
    let heavy = work(CostProfile::heavy());
    assert!(
        reference > 3 * light,
        "light {light}, reference {reference}"
    );
    assert!(
        heavy > 3 * reference,
        "reference {reference}, heavy {heavy}"
    );
    let doubled = work(CostProfile::scaled(2.0));
    assert!(
        doubled as f64 > 1.6 * reference as f64,
        "scaled(2) {doubled} vs {reference}"
    );
}

#[test]
fn every_player_stays_inside_the_map_and_out_of_boxes() {
    let mut w = twelve(test_cost(), 11);
    for tick in 0..1500 {
        for id in 0..8 {
            w.set_input(id, scripted(tick, id));
        }
        w.step(TICK_US);
        for e in w.entities() {
            let p = V3::from_array(e.pos);
            let crouching = e.flags & entity_flags::CROUCHING != 0;
            assert!(
                w.map().hull_fits(p, crouching),
                "tick {tick}: entity {} inside a box at {p:?}",
                e.id
            );
        }
    }
}

#[test]
fn hostile_inputs_are_sanitized() {
    let mut w = World::new(custom(vec![]));
    w.add_player(0, false);
    w.place(0, [10.0, 10.0, 0.0], 0.0, 0.0);
    let bad = [
        Input {
            forward: f32::NAN,
            right: f32::INFINITY,
            yaw: f32::NAN,
            pitch: f32::NEG_INFINITY,
            buttons: u32::MAX,
        },
        Input {
            forward: 1e30,
            right: -1e30,
            yaw: 1e30,
            pitch: 1e30,
            buttons: 0,
        },
    ];
    for input in bad.iter().cycle().take(400) {
        assert!(w.set_input(0, *input));
        w.step(TICK_US);
        let s = w.entity(0).unwrap();
        assert!(s.pos.iter().chain(&s.vel).all(|v| v.is_finite()), "{s:?}");
        assert!(s.yaw.is_finite() && s.pitch.abs() <= MAX_PITCH);
        assert!(V3::from_array(s.vel).flat().len() <= MAX_SPEED * 1.42);
    }
}

#[test]
fn players_join_and_leave_by_id_within_capacity() {
    let mut cfg = custom(vec![]);
    cfg.max_entities = 2;
    let mut w = World::new(cfg);
    assert!(w.add_player(5, false));
    assert!(!w.add_player(5, true), "duplicate id accepted");
    assert!(w.add_player(2, true));
    assert!(!w.add_player(9, false), "over capacity");
    assert!(!w.set_input(2, Input::default()), "bots take no commands");
    assert_eq!(w.entities().map(|e| e.id).collect::<Vec<_>>(), [2, 5]);
    assert_eq!(
        w.entity(2).unwrap().flags & entity_flags::BOT,
        entity_flags::BOT
    );
    assert!(w.remove_player(5));
    assert!(!w.remove_player(5));
    assert!(w.entity(5).is_none());
    assert!(w.add_player(9, false));
}

#[test]
fn cost_profiles_scale_and_validate() {
    let r = CostProfile::reference().effective();
    let d = CostProfile::scaled(2.0).effective();
    assert_eq!(d.physics_substeps, 2 * r.physics_substeps);
    assert_eq!(d.visibility_samples, 2 * r.visibility_samples);
    let tiny = CostProfile::scaled(0.001).effective();
    assert_eq!((tiny.physics_substeps, tiny.visibility_samples), (1, 1));
    assert!(CostProfile::heavy().validate().is_ok());
    assert!(CostProfile::scaled(f32::NAN).validate().is_err());
    assert!(CostProfile::scaled(0.0).validate().is_err());
    let err = CostProfile::scaled(1e6).validate().unwrap_err();
    assert!(err.to_string().contains("physics_substeps"), "{err}");

    assert_eq!("light".parse(), Ok(CostProfile::light()));
    assert_eq!("default".parse(), Ok(CostProfile::reference()));
    assert_eq!("1.5".parse(), Ok(CostProfile::scaled(1.5)));
    assert_eq!("heavy*2".parse(), Ok(CostProfile::heavy().with_scale(2.0)));
    for bad in ["medium", "-1", "0", "heavy*x", "NaN", "light*1e9"] {
        let err = bad.parse::<CostProfile>().unwrap_err();
        assert!(!err.to_string().is_empty(), "{bad}");
    }
    let msg = "medium".parse::<CostProfile>().unwrap_err().to_string();
    assert!(msg.contains("medium") && msg.contains("reference"), "{msg}");
}
