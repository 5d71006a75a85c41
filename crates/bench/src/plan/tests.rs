//! The plan's checks that need no root and no installed game.

use super::*;

fn request(games: &[&str]) -> Request {
    Request {
        games: games.iter().map(|g| g.to_string()).collect(),
        host_name: "bn".into(),
        net: "veth".into(),
        confirm_failures: true,
        max_steal: 5.0,
        max_foreign: 5.0,
        headroom: 75.0,
        qos: QosFlags {
            relative: 1.5,
            loss_percent: 0.1,
            frame_budget: 0.5,
            ..Default::default()
        },
        before: before::BeforeFlags {
            currency_rate: 1.0,
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn the_default_tile_is_one_server_on_one_or_two_server_cores_and_grows_with_them() {
    // bench_default_tile_of_3_failed_on_a_small_machine.
    let tiles: Vec<u32> = [1, 2, 3, 4, 7, 8, 16, 39, 40, 255]
        .into_iter()
        .map(default_tile_servers)
        .collect();
    assert_eq!(tiles, [1, 1, 2, 2, 4, 4, 8, 20, 20, 20]);
    assert_eq!(default_tile_servers(0), 1);
}

#[test]
fn the_default_game_and_the_compared_pair_come_from_the_registry() {
    let names = tickpack_game::registry::names();
    let plan = request(&[]).plan().expect("the first built-in game runs");
    assert_eq!(plan.game.name(), names[0]);
    let pair = game::default_pair();
    assert_eq!(pair.len(), 2);
    for g in &pair {
        let (def, _) = tickpack_game::registry::find(g).unwrap();
        assert_ne!(def.players.protocol, tickpack_game::PlayerProtocol::None);
    }
}

#[test]
fn cost_is_the_games_cost_variable_or_a_clear_error() {
    let with_cost = tickpack_game::registry::built_in()
        .into_iter()
        .find(|(d, _)| d.variables.contains_key("cost"))
        .expect("a built-in game with a cost variable")
        .0;
    let mut r = request(&[&with_cost.name]);
    r.cost = Some("heavy".into());
    let plan = r.plan().expect("cost is its variable");
    assert_eq!(plan.settings.cost, "heavy");
    let without = tickpack_game::registry::built_in()
        .into_iter()
        .find(|(d, _)| !d.variables.contains_key("cost"))
        .expect("a built-in game without a cost variable")
        .0;
    let mut r = request(&[&without.name]);
    r.cost = Some("heavy".into());
    let e = r.plan().expect_err("no cost variable");
    assert!(
        e.to_string().contains("has none") && !e.to_string().contains('\n'),
        "{e}"
    );
}

#[test]
fn nothing_to_load_the_servers_is_refused_as_idle() {
    let mut r = request(&[]);
    r.players_per_server = Some(0);
    assert!(matches!(r.plan(), Err(PlanError::Idle(_))));
    r.allow_idle = true;
    assert!(r.plan().is_ok());
}

#[test]
fn cost_flags_without_the_rest_name_the_missing_ones() {
    let f = before::BeforeFlags {
        watts: Some(300.0),
        currency_rate: 1.0,
        ..Default::default()
    };
    let e = before::before(&f).unwrap_err().to_string();
    assert!(
        e.contains("--before-servers") && e.contains("--machines"),
        "{e}"
    );
    assert_eq!(before::before(&before::BeforeFlags::default()), Ok(None));
}

#[test]
fn three_ladders_by_default_one_with_quick_and_what_repeat_says() {
    // The headline is a median with its range, so one ladder is no default.
    assert_eq!(request(&[]).plan().unwrap().repeat, crate::DEFAULT_REPEAT);
    assert_eq!(crate::DEFAULT_REPEAT, 3);
    let quick = Request {
        quick: true,
        ..request(&[])
    };
    assert_eq!(quick.plan().unwrap().repeat, 1);
    let five = Request {
        repeat: Some(5),
        ..quick
    };
    assert_eq!(five.plan().unwrap().repeat, 5);
}
