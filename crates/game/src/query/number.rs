//! The one rule for reading a number out of a query answer.
//!
//! Servers write their counts as text (`\clients\8`, `\sv_maxclients\16`),
//! and what they write is not ours to trust: padding, a sign, a value too
//! big for the field. Every count any protocol here reads goes through
//! [`count`], so two readers of the same answer cannot disagree (before
//! this layer one reader took `clients` as a `u8` untrimmed and another as
//! a `u32` trimmed).

/// Reads a count: white space around it is ignored, then an optional sign
/// and decimal digits. A value above `u32::MAX` is `u32::MAX`, a negative
/// one 0 (saturating, never wrapping). Anything else (empty, `1.5`, `8a`,
/// `0x10`) is `None`. Never panics, whatever the text.
pub fn count(text: &str) -> Option<u32> {
    let t = text.trim();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if negative {
        return Some(0);
    }
    Some(digits.bytes().fold(0u32, |n, b| {
        n.saturating_mul(10).saturating_add(u32::from(b - b'0'))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_trimmed_and_saturate() {
        assert_eq!(count("8"), Some(8));
        assert_eq!(count(" 12\t"), Some(12));
        assert_eq!(count("+3"), Some(3));
        assert_eq!(count("300"), Some(300), "more than a u8 holds");
        assert_eq!(count("4294967295"), Some(u32::MAX));
        assert_eq!(count("99999999999999999999999"), Some(u32::MAX));
        assert_eq!(count("-1"), Some(0));
        assert_eq!(count("007"), Some(7));
    }

    #[test]
    fn what_is_not_a_count_is_none() {
        for t in ["", " ", "-", "+", "1.5", "8a", "0x10", "٣", "1 2"] {
            assert_eq!(count(t), None, "{t:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_without_a_panic(t in "\\PC{0,40}") {
            let _ = count(&t);
        }

        #[test]
        fn a_u32_written_any_way_reads_back(n in proptest::num::u32::ANY, pad in 0usize..3) {
            let text = format!("{}{n}{}", " ".repeat(pad), "\t".repeat(pad));
            proptest::prop_assert_eq!(count(&text), Some(n));
        }
    }
}
