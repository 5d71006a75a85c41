#[test]
fn the_message_code_table_is_what_the_engines_construction_builds() {
    assert_eq!(MsgCoder::adaptive_codes(), MSG_CODES);
}

use super::*;

fn encode_all(syms: &[u8]) -> (Vec<u8>, usize) {
    let c = MsgCoder::get();
    let mut sink = BitSink {
        bytes: Vec::new(),
        bit: 0,
    };
    for &s in syms {
        let (bits, len) = c.code(s);
        for i in 0..len {
            sink.put((bits >> i) & 1 == 1);
        }
    }
    (sink.bytes, sink.bit)
}

#[test]
fn every_symbol_round_trips_through_the_fixed_coder() {
    let syms: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    let (bytes, end) = encode_all(&syms);
    let c = MsgCoder::get();
    let mut bit = 0;
    for &s in &syms {
        let (got, next) = c.decode(&bytes, bit, end).unwrap();
        assert_eq!(got, s);
        bit = next;
    }
    assert_eq!(bit, end);
}

#[test]
fn the_fixed_codes_are_a_prefix_code_with_short_codes_for_frequent_bytes() {
    let c = MsgCoder::get();
    // 0 is by far the most frequent byte.
    let (_, l0) = c.code(0);
    assert!(l0 <= 3, "{l0}");
    for s in 0..=255u8 {
        let (_, l) = c.code(s);
        assert!(l >= l0 && l > 0);
    }
    // Kraft sum of a full tree (plus the NYT leaf) is at most 1.
    let kraft: f64 = (0..=255u8).map(|s| 0.5f64.powi(c.code(s).1 as i32)).sum();
    assert!(kraft <= 1.0 && kraft > 0.99, "{kraft}");
}

#[test]
fn one_lookup_always_ends_at_a_leaf_and_only_one_window_is_the_nyt_leaf() {
    let c = MsgCoder::get();
    let nyt: Vec<usize> = (0..1usize << TABLE_BITS)
        .filter(|&w| c.lookup(w as u64).0.is_none())
        .collect();
    assert_eq!(nyt.len(), 1, "{nyt:?}");
    assert_eq!(c.lookup(nyt[0] as u64).1, MAX_CODE_BITS);
    for s in 0..=255u8 {
        let (bits, len) = c.code(s);
        assert!(len <= MAX_CODE_BITS);
        // Whatever follows a code, the lookup finds that code.
        for rest in [0u64, u64::MAX] {
            let w = bits | rest.checked_shl(len).unwrap_or(0);
            assert_eq!(c.lookup(w), (Some(s), len));
        }
    }
}

#[test]
fn a_code_cut_short_is_an_overrun() {
    let (bytes, end) = encode_all(&[200]);
    assert_eq!(
        MsgCoder::get().decode(&bytes, 0, end - 1),
        Err(Q3Error::Overrun)
    );
}

#[test]
fn compress_then_decompress_gives_back_the_input() {
    let mut inputs: Vec<Vec<u8>> = vec![
        b"\xff\xff\xff\xffconnect \"\\challenge\\1234\\qport\\5\\protocol\\71\\name\\UnnamedPlayer\"".to_vec(),
        (0..=255u8).collect(),
        vec![7; 3000],
    ];
    inputs.push((0..5000u32).map(|i| (i * 7919 % 251) as u8).collect());
    for input in inputs {
        let off = 12.min(input.len());
        let c = compress(&input, off);
        assert_eq!(&c[..off], &input[..off]);
        let d = decompress(&c, off, 65536).unwrap();
        assert_eq!(d, input);
    }
}

#[test]
fn compressing_text_makes_it_shorter() {
    let text = "\\name\\UnnamedPlayer\\rate\\25000\\snaps\\20\\model\\sarge\\headmodel\\sarge\\handicap\\100\\color1\\4\\color2\\5\\sex\\male\\protocol\\71\\qport\\1234\\challenge\\-12345678";
    let c = compress(text.as_bytes(), 0);
    assert!(c.len() < text.len(), "{} >= {}", c.len(), text.len());
}

#[test]
fn decompress_of_truncated_input_is_an_error_not_a_panic() {
    let c = compress(b"hello hello hello hello", 0);
    for cut in 0..c.len() {
        let _ = decompress(&c[..cut], 0, 65536);
    }
    assert_eq!(
        decompress(&c[..c.len() - 3], 0, 65536),
        Err(Q3Error::Overrun)
    );
}
