//! How numbers read in every format (the HTML report, the terminal, the
//! rule table's limits): milliseconds, counts with separators, short
//! decimals. Below every module that prints a figure.

/// Microseconds as milliseconds with three significant-ish digits.
pub(crate) fn fmt_ms(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    if ms < 1.0 {
        format!("{ms:.3}")
    } else if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 100.0 {
        format!("{ms:.1}")
    } else {
        fmt_int(ms.round() as u64)
    }
}

/// A number with at most two decimals, trailing zeros dropped; "n/a" when
/// not finite.
pub(crate) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v.abs() >= 1000.0 {
        let s = fmt_int(v.abs().round() as u64);
        return if v < 0.0 { format!("-{s}") } else { s };
    }
    let s = if v != 0.0 && v.abs() < 0.1 {
        format!("{v:.3}")
    } else {
        format!("{v:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A quantile (0..1) as a percentile label: 0.999 -> "99.9".
pub(crate) fn fmt_quantile(q: f64) -> String {
    let s = format!("{:.4}", q * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// An integer with thousands separators.
pub(crate) fn fmt_int(v: u64) -> String {
    let d = v.to_string();
    let lead = (d.len() - 1) % 3 + 1;
    let mut o = String::with_capacity(d.len() + d.len() / 3);
    o.push_str(&d[..lead]);
    for group in d.as_bytes()[lead..].chunks(3) {
        o.push(',');
        o.extend(group.iter().map(|&b| char::from(b)));
    }
    o
}
