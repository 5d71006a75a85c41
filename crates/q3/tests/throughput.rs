//! How fast a session decodes the captured snapshots and encodes usercmd
//! packets (players run hundreds of sessions per core). Prints figures,
//! asserts nothing about time. Run:
//! `cargo test --release -p tickpack-q3 --test throughput -- --ignored --nocapture`

mod fixture_data;

use fixture_data::{capture_config, captured};
use std::time::Instant;
use tickpack_q3::{Client, UserCmd};

#[test]
#[ignore = "prints figures; run explicitly"]
fn snapshot_decode_and_usercmd_encode_throughput() {
    let d = captured();
    let mut primed = Client::new(capture_config());
    let mut ev = Vec::new();
    for x in &d[..7] {
        primed.handle(x, &mut ev).unwrap();
    }
    let snaps = &d[7..16];
    let bytes: usize = snaps.iter().map(Vec::len).sum();
    let rounds = 20_000;
    let t = Instant::now();
    for _ in 0..rounds {
        let mut c = primed.clone();
        for x in snaps {
            ev.clear();
            c.handle(x, &mut ev).unwrap();
        }
    }
    let clone_t = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(primed.clone());
    }
    let clone_cost = clone_t.elapsed();
    let per =
        (t.elapsed().saturating_sub(clone_cost)).as_secs_f64() / (rounds * snaps.len()) as f64;
    println!(
        "snapshot decode: {:.2} us per snapshot ({} B avg), {:.0} snapshots/s per core",
        per * 1e6,
        bytes / snaps.len(),
        1.0 / per
    );
    let cmds: Vec<UserCmd> = (0..2)
        .map(|i| UserCmd {
            server_time: 2000 + i,
            angles: [0, 100 * i, 0],
            forwardmove: 127,
            ..UserCmd::default()
        })
        .collect();
    let mut c = primed.clone();
    let n = 200_000;
    let t = Instant::now();
    let mut total = 0;
    let mut out = Vec::new();
    for _ in 0..n {
        assert!(c.usercmd_packet_into(&cmds, &mut out));
        total += out.len();
    }
    let per = t.elapsed().as_secs_f64() / n as f64;
    println!(
        "usercmd packet encode: {:.2} us per packet ({} B), {:.0} packets/s per core",
        per * 1e6,
        total / n,
        1.0 / per
    );
}
