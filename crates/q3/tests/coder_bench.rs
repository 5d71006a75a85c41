//! The message coder's speed against its peer in the same run: the same
//! messages written and read by `msg::Writer` / `msg::Reader` (word at a
//! time, Huffman by table) and by the plain coder in `reference/` (one bit
//! at a time, Huffman by walking the tree, as the engine does). Prints
//! ratios, asserts nothing about time (`scripts/bench-q3.sh` runs it):
//! `cargo test --release -p tickpack-q3 --test coder_bench -- --ignored --nocapture`

mod reference;

use reference::prev::{PrevReader, PrevWriter};
use reference::{RefReader, RefWriter, Tree};
use std::hint::black_box;
use std::time::Instant;
use tickpack_q3::msg::{Reader, Writer};

/// Messages shaped like snapshots: mostly 1-bit flags, zeros and small
/// values, some 8/16/32-bit fields and full-range words (xorshift, fixed
/// seed).
fn messages(count: usize, fields: usize) -> Vec<Vec<(i32, u32)>> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..count)
        .map(|_| {
            (0..fields)
                .map(|_| {
                    let r = next();
                    match r % 10 {
                        0..=4 => ((r >> 8) as i32 & 1, 1),
                        5 => (0, 8),
                        6 => ((r >> 8) as i32 % 64, 8),
                        7 => ((r >> 8) as i32 % 4096 - 2048, 16),
                        8 => ((r >> 8) as i32 % 8192, 13),
                        _ => ((r >> 16) as i32, 32),
                    }
                })
                .collect()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds per call of `f` over `reps` calls.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_secs_f64() / reps as f64
}

#[test]
#[ignore = "prints figures; run explicitly"]
fn message_coder_against_the_plain_coder() {
    let tree = Tree::new();
    let msgs = messages(200, 150);
    let encoded: Vec<Vec<u8>> = msgs
        .iter()
        .map(|m| {
            let mut w = Writer::new();
            for &(v, b) in m {
                w.write_bits(v, b);
            }
            w.into_bytes()
        })
        .collect();
    let bytes = encoded.iter().map(Vec::len).sum::<usize>() / encoded.len();
    let mut buf = Vec::new();
    let encode_new = |buf: &mut Vec<u8>| {
        for m in &msgs {
            let mut w = Writer::reuse(std::mem::take(buf));
            for &(v, b) in m {
                w.write_bits(v, b);
            }
            *buf = w.into_bytes();
            black_box(&buf);
        }
    };
    let encode_old = || {
        for m in &msgs {
            let mut w = RefWriter::new(&tree, false);
            for &(v, b) in m {
                w.write_bits(v, b);
            }
            black_box(w.into_bytes());
        }
    };
    let encode_prev = || {
        for m in &msgs {
            let mut w = PrevWriter::default();
            for &(v, b) in m {
                w.write_bits(v, b);
            }
            black_box(w.into_bytes());
        }
    };
    let decode_prev = || {
        for (m, e) in msgs.iter().zip(&encoded) {
            let mut r = PrevReader::new(e);
            for &(_, b) in m {
                black_box(r.read_bits(b).unwrap());
            }
        }
    };
    let decode_new = || {
        for (m, e) in msgs.iter().zip(&encoded) {
            let mut r = Reader::new(e);
            for &(_, b) in m {
                black_box(r.read_bits(b).unwrap());
            }
        }
    };
    let decode_old = || {
        for (m, e) in msgs.iter().zip(&encoded) {
            let mut r = RefReader::new(&tree, e, false);
            for &(_, b) in m {
                black_box(r.read_bits(b).unwrap());
            }
        }
    };
    // Per round, each coder in turn; seconds per message.
    let mut t: [Vec<f64>; 6] = Default::default();
    let per_msg = msgs.len() as f64;
    for _ in 0..7 {
        t[0].push(time(20, || encode_new(&mut buf)) / per_msg);
        t[1].push(time(20, encode_prev) / per_msg);
        t[2].push(time(5, encode_old) / per_msg);
        t[3].push(time(20, decode_new) / per_msg);
        t[4].push(time(20, decode_prev) / per_msg);
        t[5].push(time(5, decode_old) / per_msg);
    }
    let [en, ep, eo, dn, dp, dold] = t.map(median);
    println!(
        "messages: {} of {} fields, {bytes} B average; in the same run, median of 7 rounds:",
        msgs.len(),
        msgs[0].len()
    );
    println!("  old = the plain coder (bit at a time, Huffman tree walked, as the engine does)");
    println!("  prev = the coder before this one (bytes written a byte's worth at a time, codes by table, raw bits read one at a time)");
    for (what, new, prev, old) in [("encode", en, ep, eo), ("decode", dn, dp, dold)] {
        println!(
            "huffman {what}: new/old = {:.1}x, new/prev = {:.1}x (speed; new {:.2} us, prev {:.2} us, old {:.2} us per message)",
            old / new,
            prev / new,
            new * 1e6,
            prev * 1e6,
            old * 1e6
        );
    }
}
