//! Plain-text tables for the terminal summaries.

use tickpack_report::Percentiles;

/// Header for [`row_ms`] rows.
pub fn header(label_width: usize) -> String {
    format!(
        "{:<label_width$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "", "p50", "p90", "p99", "p99.9", "max", "count"
    )
}

/// One row of percentiles given in microseconds, shown in milliseconds.
pub fn row_ms(label: &str, label_width: usize, p: &Percentiles) -> String {
    let ms = |v: u64| format!("{:.3}", v as f64 / 1000.0);
    format!(
        "{:<label_width$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        label,
        ms(p.p50),
        ms(p.p90),
        ms(p.p99),
        ms(p.p999),
        ms(p.max),
        p.count
    )
}
