//! Each curve shape on the virtual clock: the joins and leaves follow the
//! curve and the seed. No sockets, no sleeping: a timeline is a value.

use std::time::Duration;

use proptest::prelude::*;
use tickpack_curve::churn::{MIN_GAP, MIN_SESSION};
use tickpack_curve::{Change, Churn, Curve, Envelope, Point, Rounds, Span, Timeline};

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Sample times every `every` seconds over the step.
fn samples(t: &Timeline, every: f64) -> impl Iterator<Item = Duration> + '_ {
    let n = (t.step_len.as_secs_f64() / every) as u64;
    (0..n).map(move |i| secs(i as f64 * every))
}

/// Whether `t` is within a microsecond of a change of the wanted count
/// (where the envelope's line and its rounded count may be read on
/// either side).
fn near_a_change(tl: &Timeline, t: Duration) -> bool {
    tl.wanted
        .iter()
        .any(|(from, _)| from.abs_diff(t) < Duration::from_micros(1))
}

/// Every span of every seat sorted, apart, not empty and within the step;
/// a seat never present and waiting at once.
fn assert_well_formed(tl: &Timeline, seats: u16) {
    assert_eq!(tl.seats.len(), usize::from(seats));
    assert_eq!(tl.waiting.len(), usize::from(seats));
    for (s, (present, waiting)) in tl.seats.iter().zip(&tl.waiting).enumerate() {
        let mut all: Vec<(Span, bool)> = present
            .iter()
            .map(|x| (*x, true))
            .chain(waiting.iter().map(|x| (*x, false)))
            .collect();
        all.sort_by_key(|(x, _)| x.from);
        for (x, _) in &all {
            assert!(x.from < x.until, "seat {s}: empty span {x:?}");
            assert!(x.until <= tl.step_len, "seat {s}: {x:?} past the step");
        }
        for w in all.windows(2) {
            assert!(
                w[0].0.until <= w[1].0.from,
                "seat {s}: {:?} overlaps {:?}",
                w[0],
                w[1]
            );
        }
        for list in [present, waiting] {
            assert!(
                list.windows(2).all(|w| w[0].until <= w[1].from),
                "seat {s}: unsorted"
            );
        }
    }
}

#[test]
fn a_steady_curve_keeps_every_seat_the_whole_step() {
    let tl = Curve::steady().timeline(1, 0, 12, secs(30.0));
    assert_well_formed(&tl, 12);
    assert!(tl.seats.iter().all(|s| s
        == &[Span {
            from: Duration::ZERO,
            until: secs(30.0)
        }]));
    assert!(tl.events().is_empty());
    assert!(tl.map_changes().is_empty());
    assert_eq!(tl.peak(), 12);
}

#[test]
fn an_evening_is_followed_within_rounding_and_peaks_with_every_player() {
    let curve = Curve {
        envelope: Envelope::evening(),
        ..Curve::default()
    };
    let seats = 16;
    let tl = curve.timeline(1, 0, seats, secs(90.0));
    assert_well_formed(&tl, seats);
    for t in samples(&tl, 0.1) {
        let share = curve.envelope.share_at(t.as_secs_f64() / 90.0);
        let wanted = tl.wanted_at(t);
        if !near_a_change(&tl, t) {
            assert!(
                (f64::from(wanted) - f64::from(seats) * share).abs() <= 0.5 + 1e-9,
                "{t:?}: wanted {wanted}, share {share}"
            );
        }
        assert_eq!(
            tl.present_at(t),
            wanted,
            "{t:?}: no churn, every wanted player"
        );
    }
    // 25 % at 06:00, every player at 21:00 (62.5 % of the step).
    assert_eq!(tl.present_at(Duration::ZERO), 4);
    assert_eq!(tl.present_at(secs(90.0 * 0.625)), 16);
    assert_eq!(tl.peak(), 16);
    // The players leave in the order opposite to their joins: seat 0 is
    // never left empty.
    assert_eq!(
        tl.seats[0],
        [Span {
            from: Duration::ZERO,
            until: secs(90.0)
        }]
    );
    // Joins before the peak, leaves after it.
    for e in tl.events() {
        match e.change {
            Change::Join => assert!(e.at <= secs(56.25), "{e:?}"),
            Change::Leave => assert!(e.at >= secs(56.25), "{e:?}"),
        }
    }
}

#[test]
fn points_are_followed_with_their_jumps() {
    let pts = vec![
        Point {
            at: 0.0,
            share: 0.5,
        },
        Point {
            at: 0.5,
            share: 0.5,
        },
        Point {
            at: 0.5,
            share: 1.0,
        },
        Point {
            at: 1.0,
            share: 0.0,
        },
    ];
    let curve = Curve {
        envelope: Envelope::Points(pts),
        ..Curve::default()
    };
    curve.check().unwrap();
    let tl = curve.timeline(3, 9, 10, secs(20.0));
    assert_well_formed(&tl, 10);
    assert_eq!(tl.present_at(secs(9.99)), 5);
    assert_eq!(tl.present_at(secs(10.0)), 10, "the jump at half the step");
    assert_eq!(tl.present_at(secs(19.99)), 0);
    for t in samples(&tl, 0.05) {
        assert_eq!(tl.present_at(t), tl.wanted_at(t));
    }
}

fn churning(envelope: Envelope) -> Curve {
    Curve {
        envelope,
        churn: Some(Churn::default()),
        ..Curve::default()
    }
}

#[test]
fn churn_replaces_a_leaver_after_the_gap_and_keeps_the_count_wanted() {
    let curve = churning(Envelope::evening());
    let c = Churn::default();
    let (gap, seats, len) = (c.gap_s(), 16u16, secs(90.0));
    let mut leaves = 0;
    for server in 0..20 {
        let tl = curve.timeline(5, server, seats, len);
        assert_well_formed(&tl, seats);
        for t in samples(&tl, 0.05) {
            let (p, w, want) = (tl.present_at(t), tl.waiting_at(t), tl.wanted_at(t));
            assert_eq!(p + w, want, "server {server} at {t:?}: {p} + {w} waiting");
        }
        for (s, waiting) in tl.waiting.iter().enumerate() {
            for x in waiting {
                // A wait is the gap, unless the step cut it or the
                // envelope took the seat away.
                let cut = x.from.is_zero() || x.until == len;
                let taken = !tl.seats[s].iter().any(|p| p.from == x.until);
                if !cut && !taken {
                    assert!(
                        (x.len().as_secs_f64() - gap).abs() < 1e-6,
                        "seat {s}: waited {:?}",
                        x.len()
                    );
                }
                assert!(x.len().as_secs_f64() <= gap + 1e-6);
            }
        }
        // Sessions that started and ended within the step last at least
        // the floor.
        for x in tl.seats.iter().flatten() {
            if !x.from.is_zero()
                && x.until < len
                && tl.waiting.iter().flatten().any(|w| w.from == x.until)
            {
                assert!(x.len() >= MIN_SESSION - Duration::from_micros(1), "{x:?}");
            }
        }
        leaves += tl
            .events()
            .iter()
            .filter(|e| e.change == Change::Leave)
            .count();
    }
    // 16 seats, a median session of 29 s and a 90 s step: players leave.
    assert!(leaves > 100, "{leaves} leaves over 20 servers");
    assert!(MIN_GAP.as_secs_f64() <= gap);
}

#[test]
fn churn_alone_keeps_every_seat_taken_but_for_the_gaps() {
    let curve = churning(Envelope::Steady);
    let tl = curve.timeline(11, 0, 8, secs(60.0));
    assert_well_formed(&tl, 8);
    for t in samples(&tl, 0.01) {
        assert_eq!(tl.present_at(t) + tl.waiting_at(t), 8, "{t:?}");
    }
    // Each seat's players follow one another: every leave that is not the
    // step's end is followed by a join on that seat one gap later.
    let gap = secs(Churn::default().gap_s());
    for spans in &tl.seats {
        for w in spans.windows(2) {
            let apart = w[1].from - w[0].until;
            assert!(apart.abs_diff(gap) < Duration::from_micros(1), "{w:?}");
        }
    }
}

#[test]
fn rounds_change_the_map_every_n_rounds() {
    let rounds = Rounds::default();
    let curve = Curve {
        rounds: Some(rounds),
        ..Curve::default()
    };
    let len = secs(300.0);
    for server in 0..10 {
        let tl = curve.timeline(2, server, 12, len);
        let starts: Vec<f64> = tl.rounds.iter().map(|r| r.start.as_secs_f64()).collect();
        for w in starts.windows(2) {
            assert!((w[1] - w[0] - rounds.cycle_s()).abs() < 1e-6, "{starts:?}");
        }
        let changes: Vec<f64> = tl.map_changes().iter().map(Duration::as_secs_f64).collect();
        assert!(changes.len() >= 4, "{changes:?}");
        for w in changes.windows(2) {
            assert!(
                (w[1] - w[0] - rounds.map_period_s()).abs() < 1e-6,
                "{changes:?}"
            );
        }
        // Between two map changes, MAP_EVERY - 1 rounds on the same map.
        let between = tl
            .rounds
            .iter()
            .filter(|r| r.start.as_secs_f64() > changes[0] && r.start.as_secs_f64() < changes[1])
            .count();
        assert_eq!(between as u32, rounds.map_every - 1);
        // Freeze then play, 15 s / 8 after each start.
        for r in &tl.rounds {
            let freeze = (r.play_from - r.start).as_secs_f64();
            assert!((freeze - 15.0 / 8.0).abs() < 1e-6 || r.play_from == len);
        }
        // Players stay through rounds and map changes.
        assert!(tl.events().is_empty());
    }
}

#[test]
fn each_server_has_its_own_phase_unless_aligned() {
    let curve = Curve {
        envelope: Envelope::evening(),
        rounds: Some(Rounds::default()),
        churn: Some(Churn::default()),
        aligned: false,
    };
    let len = curve.natural_len().unwrap();
    let a = curve.timeline(1, 0, 12, len);
    let b = curve.timeline(1, 1, 12, len);
    assert_ne!(a.map_changes(), b.map_changes());
    assert_ne!(a.events(), b.events());
    // The envelope is the host's: the same on every server.
    assert_eq!(a.wanted, b.wanted);

    let aligned = Curve {
        aligned: true,
        ..curve
    };
    let a = aligned.timeline(1, 0, 12, len);
    let b = aligned.timeline(1, 1, 12, len);
    assert_eq!(a, b);
    assert!(!a.map_changes().is_empty());
}

#[test]
fn the_same_seed_gives_the_same_timeline_and_another_seed_another() {
    let curve = Curve {
        envelope: Envelope::evening(),
        rounds: Some(Rounds::default()),
        churn: Some(Churn::default()),
        aligned: false,
    };
    let len = secs(90.0);
    assert_eq!(
        curve.timeline(42, 3, 12, len),
        curve.timeline(42, 3, 12, len)
    );
    let (a, b) = (
        curve.timeline(42, 3, 12, len),
        curve.timeline(43, 3, 12, len),
    );
    assert_ne!(a.events(), b.events());
    assert_ne!(a.map_changes(), b.map_changes());
}

#[test]
fn adding_churn_does_not_move_the_rounds() {
    let rounds = Curve {
        rounds: Some(Rounds::default()),
        ..Curve::default()
    };
    let both = Curve {
        churn: Some(Churn::default()),
        ..rounds.clone()
    };
    let len = secs(90.0);
    assert_eq!(
        rounds.timeline(7, 1, 12, len).rounds,
        both.timeline(7, 1, 12, len).rounds
    );
}

#[test]
fn the_compression_is_said_in_words() {
    let curve = Curve {
        envelope: Envelope::evening(),
        rounds: Some(Rounds::default()),
        churn: Some(Churn::default()),
        aligned: false,
    };
    assert_eq!(
        curve.compression(secs(90.0)).to_string(),
        "a day in 90 s (960x), rounds 8x, sessions 20x"
    );
    assert_eq!(Curve::steady().compression(secs(6.0)).to_string(), "none");
    assert_eq!(
        Curve { aligned: true, ..curve.clone() }.to_string(),
        "evening, peak 2x the mean; rounds of 15 s after a 1.9 s freeze, a map change every 4; churn Weibull 0.5 x 60 s, gap 1.5 s; aligned"
    );
    assert_eq!(Curve::steady().to_string(), "steady");
    // A day, or a map cycle and a round, whichever is longer.
    assert_eq!(curve.natural_len(), Some(secs(90.0)));
    assert_eq!(Curve::steady().natural_len(), None);
}

fn envelope() -> impl Strategy<Value = Envelope> {
    prop_oneof![
        Just(Envelope::Steady),
        (1.0f64..=3.0).prop_map(|r| Envelope::Evening { peak_to_mean: r }),
        prop::collection::vec((0.0f64..=1.0, 0.0f64..=1.0), 1..12).prop_map(|mut v| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v.dedup_by(|a, b| a.0 == b.0);
            Envelope::Points(
                v.into_iter()
                    .map(|(at, share)| Point { at, share })
                    .collect(),
            )
        }),
    ]
}

fn curve() -> impl Strategy<Value = Curve> {
    let rounds = prop::option::of((1u64..300, 0u64..30, 1u32..10, 1.0f64..50.0).prop_map(
        |(round, freeze, map_every, compress)| Rounds {
            round: Duration::from_secs(round),
            freeze: Duration::from_secs(freeze),
            map_every,
            compress,
        },
    ));
    let churn = prop::option::of(
        (0.3f64..3.0, 10u64..3600, 0u64..120, 1.0f64..100.0).prop_map(
            |(shape, scale, gap, compress)| Churn {
                shape,
                scale: Duration::from_secs(scale),
                gap: Duration::from_secs(gap),
                compress,
            },
        ),
    );
    (envelope(), rounds, churn, any::<bool>()).prop_map(|(envelope, rounds, churn, aligned)| {
        Curve {
            envelope,
            rounds,
            churn,
            aligned,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn no_timeline_exceeds_its_seats_or_leaves_the_step(
        curve in curve(),
        seed in any::<u64>(),
        server in 0u64..1000,
        seats in 0u16..40,
        len_ms in 1u64..200_000,
    ) {
        prop_assert!(curve.check().is_ok(), "{:?}", curve.check());
        let len = Duration::from_millis(len_ms);
        let tl = curve.timeline(seed, server, seats, len);
        assert_well_formed(&tl, seats);
        // At every moment something changes, and just before it.
        let mut at: Vec<Duration> = tl.seats.iter().chain(&tl.waiting).flatten()
            .flat_map(|s| [s.from, s.until]).collect();
        at.extend(tl.wanted.iter().map(|w| w.0));
        for t in at.iter().flat_map(|&t| [t, t.saturating_sub(Duration::from_nanos(1))]) {
            if t >= len { continue; }
            let (p, w) = (tl.present_at(t), tl.waiting_at(t));
            prop_assert!(p <= seats);
            prop_assert_eq!(p + w, tl.wanted_at(t), "at {:?}", t);
        }
        for r in &tl.rounds {
            prop_assert!(r.start < len && r.start <= r.play_from && r.play_from <= len);
        }
        for e in tl.events() {
            prop_assert!(e.at < len && e.seat < seats);
        }
        prop_assert_eq!(&tl, &curve.timeline(seed, server, seats, len));
    }
}
